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

Pure functions; thread-safe.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from controller.assignment import assign_replicas
from odradek.errors import InvalidPartitionsError, InvalidReplicaAssignmentError

__all__ = ["added_partitions", "plan_new_partitions"]


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
