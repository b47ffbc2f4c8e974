"""Adding partitions to a topic (Kafka's ``AdminZkClient.createPartitions`` and
``ZkAdminManager.createPartitions``) and the controller's side of it (Kafka's
``PartitionModificationsHandler``).

An Admin node plans the new partitions with :func:`plan_new_partitions` and writes the grown
partition map into ``/brokers/topics/<t>`` (one conditional set, checked against the version it
read); the active controller, watching that znode, finds the partitions it does not know with
:func:`added_partitions` and starts them as it starts a new topic's (leader = first live
replica, ISR = live replicas).

Kafka's rules, messages as Kafka words them:

- the count only grows: fewer partitions, or as many, is INVALID_PARTITIONS;
- without an explicit assignment the new partitions are placed by the same rack-aware round
  robin as a new topic's (:func:`controller.assignment.assign_replicas`), with partition 0's
  replication factor, starting at partition id = the current count and at the position of the
  first broker whose id is >= partition 0's first replica, so they continue the existing spread;
- an explicit assignment gives one broker list per *new* partition, each with partition 0's
  replication factor, no broker twice, every broker registered; otherwise
  INVALID_REPLICA_ASSIGNMENT.

**Scale.** ZooKeeper refuses a request larger than its ``jute.maxbuffer`` (1 MiB - 1 by default)
and drops the connection that sent it. Three rules keep every write under it:

- a CreateTopics or CreatePartitions asks for at most :data:`MAX_PARTITIONS_PER_REQUEST` new
  partitions in total (Kafka's controller has the same cap, ``MAX_PARTITIONS_PER_BATCH``, and
  the same POLICY_VIOLATION "Excessively large number of partitions per request.");
- a topic's assignment znode (``/brokers/topics/<t>``: one znode holding every partition, as in
  Kafka) may not grow beyond :data:`MAX_TOPIC_ZNODE_BYTES` (POLICY_VIOLATION naming the size);
- the controller writes many partition states, or deletes a topic's znodes, in fenced multis of
  bounded size (:func:`chunks`), in an order a controller taking over half-way can finish.

Pure functions; thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import TypeVar

from controller.assignment import assign_replicas
from odradek.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    PolicyViolationError,
)

__all__ = [
    "JUTE_MAXBUFFER",
    "MAX_MULTI_BYTES",
    "MAX_MULTI_OPS",
    "MAX_PARTITIONS_PER_REQUEST",
    "MAX_TOPIC_ZNODE_BYTES",
    "added_partitions",
    "check_partitions_per_request",
    "check_topic_znode_size",
    "chunks",
    "op_bytes",
    "plan_new_partitions",
]

T = TypeVar("T")

JUTE_MAXBUFFER = 0xFFFFF
"""ZooKeeper's default ``jute.maxbuffer``: the largest request (and znode) it accepts."""

MAX_PARTITIONS_PER_REQUEST = 10_000
"""New partitions one CreateTopics or CreatePartitions may ask for (Kafka's
``MAX_PARTITIONS_PER_BATCH``). A 10,000-partition topic's assignment znode is about 200 KB at
replication factor 3; its creation takes the controller a few seconds (bench/scale.py)."""

MAX_TOPIC_ZNODE_BYTES = JUTE_MAXBUFFER - 64 * 1024
"""The largest topic assignment znode written, leaving room for the rest of its multi."""

MAX_MULTI_BYTES = 256 * 1024
"""The controller's multis stay under this many bytes of paths and data (a quarter of
``jute.maxbuffer``: the server also counts per-operation headers)."""

MAX_MULTI_OPS = 2_000
"""... and under this many operations."""


def plan_new_partitions(
    topic: str,
    existing: Mapping[int, Sequence[int]],
    count: int,
    brokers: Sequence[tuple[int, str | None]],
    explicit: Sequence[Sequence[int]] | None = None,
) -> dict[int, list[int]]:
    """The replica lists of the partitions ``existing.size .. count - 1`` of ``topic``.

    ``existing`` is the topic's current partition → replicas map, ``brokers`` the registered
    brokers as ``(id, rack or None)``, ``explicit`` the optional per-new-partition broker lists.
    Raises ``InvalidPartitionsError`` when ``count`` is not above the current count (or the
    current map has no partition 0), ``InvalidReplicaAssignmentError`` for a bad explicit
    assignment, and what :func:`assign_replicas` raises (e.g. ``InvalidReplicationFactorError``
    when fewer brokers are registered than the topic's replication factor).
    """
    current = len(existing)
    if count < current:
        raise InvalidPartitionsError(
            f"The topic {topic} currently has {current} partition(s); {count} would not be an "
            "increase."
        )
    if count == current:
        raise InvalidPartitionsError(f"Topic already has {current} partition(s).")
    partition0 = existing.get(0)
    if not partition0:
        raise InvalidPartitionsError(
            f"Unexpected existing replica assignment for topic '{topic}', partition id 0 is "
            f"missing. Assignment: {dict(existing)}"
        )
    rf = len(partition0)
    to_add = count - current
    if explicit is not None and len(explicit) > 0:
        if len(explicit) != to_add:
            raise InvalidReplicaAssignmentError(
                f"Increasing the number of partitions by {to_add} but {len(explicit)} "
                "assignments provided."
            )
        return _validate_explicit(explicit, current, rf, {b for b, _ in brokers})
    ordered = sorted(brokers)
    start = next((i for i, (b, _) in enumerate(ordered) if b >= partition0[0]), 0)
    return assign_replicas(to_add, rf, ordered, start_index=start, start_partition_id=current)


def _validate_explicit(
    explicit: Sequence[Sequence[int]], first_id: int, rf: int, registered: Collection[int]
) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for i, replicas in enumerate(explicit):
        partition = first_id + i
        brokers = list(replicas)
        if not brokers:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment for partition {partition} is an empty "
                "replica list."
            )
        if len(set(brokers)) != len(brokers):
            raise InvalidReplicaAssignmentError(
                f"Duplicate brokers not allowed in replica assignment: {brokers} for partition "
                f"{partition}."
            )
        unknown = sorted(set(brokers) - set(registered))
        if unknown:
            raise InvalidReplicaAssignmentError(
                f"Unknown broker(s) in replica assignment: {unknown} for partition {partition}."
            )
        if len(brokers) != rf:
            raise InvalidReplicaAssignmentError(
                f"Inconsistent replication factor between partitions, partition 0 has {rf} "
                f"while partition {partition} has {len(brokers)}."
            )
        out[partition] = brokers
    return out


def added_partitions(
    known: Collection[int], in_zookeeper: Mapping[int, Sequence[int]]
) -> list[int]:
    """Partition ids the topic znode holds and the controller does not know, sorted."""
    return sorted(set(in_zookeeper) - set(known))


def check_partitions_per_request(total: int) -> None:
    """Raises ``PolicyViolationError`` (Kafka's message) for more than
    :data:`MAX_PARTITIONS_PER_REQUEST` new partitions in one request."""
    if total > MAX_PARTITIONS_PER_REQUEST:
        raise PolicyViolationError(
            "Excessively large number of partitions per request. "
            f"({total} requested; at most {MAX_PARTITIONS_PER_REQUEST} per request)"
        )


def check_topic_znode_size(topic: str, encoded: bytes, partitions: int) -> None:
    """Raises ``PolicyViolationError`` when a topic's assignment znode would be larger than
    :data:`MAX_TOPIC_ZNODE_BYTES` (ZooKeeper would refuse it and drop the connection)."""
    if len(encoded) > MAX_TOPIC_ZNODE_BYTES:
        raise PolicyViolationError(
            f"The assignment of topic '{topic}' with {partitions} partitions would take "
            f"{len(encoded)} bytes in ZooKeeper, more than the {MAX_TOPIC_ZNODE_BYTES} a topic "
            f"znode may hold (jute.maxbuffer is {JUTE_MAXBUFFER})."
        )


def op_bytes(path: str, data_length: int = 0) -> int:
    """What one create/delete/set of ``path`` adds to a multi request, roughly (path, data and
    the per-operation header)."""
    return len(path.encode()) + data_length + 32


def chunks(
    items: Iterable[T],
    size: Callable[[T], int],
    ops: Callable[[T], int] = lambda _item: 1,
    max_bytes: int = MAX_MULTI_BYTES,
    max_ops: int = MAX_MULTI_OPS,
) -> Iterator[list[T]]:
    """``items`` in order, cut into consecutive lists of at most ``max_bytes`` (by ``size``) and
    ``max_ops`` (by ``ops``); an item larger than the bound alone makes a list of its own."""
    current: list[T] = []
    current_bytes = current_ops = 0
    for item in items:
        item_bytes, item_ops = size(item), ops(item)
        if current and (current_bytes + item_bytes > max_bytes or current_ops + item_ops > max_ops):
            yield current
            current, current_bytes, current_ops = [], 0, 0
        current.append(item)
        current_bytes += item_bytes
        current_ops += item_ops
    if current:
        yield current
