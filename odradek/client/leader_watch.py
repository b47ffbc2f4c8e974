"""How a producer notices a new partition leader promptly: the rules, as pure functions.

A leader that dies or hangs is replaced by the controller once its ZooKeeper session expires;
the producer must then learn of the new leader and send there. By Kafka's rules alone it would
learn late: a call to a hung leader waits out ``request_timeout_ms``, a batch retried after an
error waits out its exponential backoff (up to ``retry_backoff_max_ms``) even once the new
leader is known, and the metadata is refreshed only after a failure. The sender
(``odradek.client.sender``) applies these rules instead:

* **Watch while in trouble.** While a call has been outstanding longer than
  ``retry_backoff_max_ms`` (:func:`stuck_addresses`), or a batch waits out a retry backoff,
  the metadata is refreshed every ``2 * retry_backoff_ms`` (:func:`watch_due`).
* **Ask a healthy node.** A metadata request goes first to nodes without a stuck call
  (:func:`order_candidates`, as Kafka's ``leastLoadedNode`` avoids busy nodes): asking the
  hung leader would block the sender for ``request_timeout_ms``.
* **Write elsewhere meanwhile.** Partitions whose last attempt failed (and none succeeded
  since) or that have a stuck call are reported to the producer, whose sticky partitioner
  puts unkeyed records on the other partitions until they recover (:func:`unavailable`; Kafka's
  ``partitioner.availability.timeout.ms`` and adaptive partitioning, KIP-794, do the same):
  otherwise every unkeyed record would pile up behind the dead leader and writes to the
  healthy partitions would stall with it.
* **Go at once.** A batch waiting out its backoff is sent at once when the metadata shows its
  partition under a newer leader epoch (:func:`moved_partitions`; Kafka's KIP-951 skips the
  backoff the same way). A call still waiting on a leader that a newer leader epoch has
  replaced (:func:`deposed`) is cancelled and its batches sent to the new leader: the old one
  can no longer acknowledge them (with acks=-1 its high watermark cannot pass them once the
  other replicas follow the new leader), and an idempotent producer's retry is stored once.
  This is what a timeout of the call would do, only sooner.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from odradek.client.types import TopicPartition

if TYPE_CHECKING:  # metadata.py uses order_candidates
    from odradek.client.metadata import ClusterMetadata


def stuck_addresses(
    calls: Iterable[tuple[str, int]], *, now_ms: int, stuck_after_ms: int
) -> set[str]:
    """Addresses with a call (``(address, sent_ms)``) outstanding longer than
    ``stuck_after_ms``."""
    return {address for address, sent_ms in calls if now_ms - sent_ms > stuck_after_ms}


def unavailable(
    failing: Collection[TopicPartition],
    calls: Iterable[tuple[str, Iterable[TopicPartition]]],
    stuck: Collection[str],
) -> frozenset[TopicPartition]:
    """Partitions that cannot take records now: ``failing`` (their last attempt failed, none
    succeeded since) and those of calls (``(address, partitions)``) to a ``stuck`` address."""
    out = set(failing)
    for address, tps in calls:
        if address in stuck:
            out.update(tps)
    return frozenset(out)


def watch_due(*, in_trouble: bool, now_ms: int, last_watch_ms: int, interval_ms: int) -> bool:
    """Whether to ask for a metadata refresh now: in trouble (a stuck call, a batch backing
    off) and ``interval_ms`` since the last such request."""
    return in_trouble and now_ms - last_watch_ms >= interval_ms


def order_candidates(candidates: Sequence[str], avoid: Collection[str]) -> list[str]:
    """``candidates`` with the ``avoid`` ones moved last, the order otherwise kept."""
    return [a for a in candidates if a not in avoid] + [a for a in candidates if a in avoid]


def moved_partitions(
    before: ClusterMetadata, after: ClusterMetadata, tps: Iterable[TopicPartition]
) -> set[TopicPartition]:
    """Of ``tps``, those whose leader epoch is higher in ``after`` than in ``before``."""
    out = set()
    for tp in tps:
        old, new = before.partition(tp), after.partition(tp)
        if (
            new is not None
            and new.leader >= 0
            and (old is None or new.leader_epoch > old.leader_epoch)
        ):
            out.add(tp)
    return out


def deposed(node: int, sent_epochs: Mapping[TopicPartition, int], current: ClusterMetadata) -> bool:
    """Whether a call sent to ``node`` for partitions at ``sent_epochs`` (their leader epochs
    when sent) waits on a deposed leader: some partition now has a newer leader epoch under
    another node. An epoch of -1 (unknown when sent) never counts."""
    for tp, epoch in sent_epochs.items():
        part = current.partition(tp)
        if (
            part is not None
            and epoch >= 0
            and part.leader_epoch > epoch
            and part.leader >= 0
            and part.leader != node
        ):
            return True
    return False
