"""Leader election and ISR removal (Kafka's ``PartitionLeaderElectionAlgorithms`` and
``Election``, and ``ReplicaStateMachine``'s removal of an offline replica from the ISR).

Plain functions over a partition's assignment (preference order), its ISR and the set of live
brokers. "Live" here means registered and not in controlled shutdown, as Kafka's
``isReplicaOnline`` has it. Each returns the partition's new leader and ISR, or ``None`` when
it cannot elect (the caller leaves the partition as it is). Every change a caller writes also
bumps the leader epoch by one; that is the caller's business, not these functions'.

| election            | leader                                         | new ISR              |
|---------------------|------------------------------------------------|----------------------|
| offline             | first replica live and in the ISR              | ISR ∩ live           |
| offline, unclean    | else the first live replica (data may be lost) | [leader], RECOVERING |
| preferred           | the first replica, if live and in the ISR      | unchanged            |
| reassignment        | first target replica live and in the ISR       | unchanged            |
| controlled shutdown | first replica live, in the ISR, not stopping   | ISR minus stopping   |

Pure; thread-safe.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from controller.zk_data import NO_LEADER

__all__ = [
    "Election",
    "offline_leader",
    "preferred_leader",
    "reassignment_leader",
    "controlled_shutdown_leader",
    "remove_replica_from_isr",
]


@dataclass(frozen=True, slots=True)
class Election:
    """The outcome of an election: the new leader and ISR. ``unclean`` is set when the leader
    was not in the ISR (its log may lack acknowledged records; the leader recovery state is
    RECOVERING)."""

    leader: int
    isr: tuple[int, ...]
    unclean: bool = False


def offline_leader(
    assignment: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    unclean: bool,
) -> Election | None:
    """Elect a leader for a partition whose leader is gone.

    The first replica in assignment order that is live and in the ISR leads; the ISR keeps its
    live members. With none, and ``unclean``, the first live replica leads alone. Otherwise
    ``None``: no election (the partition keeps leader -1 until an ISR member returns).
    """
    for replica in assignment:
        if replica in live and replica in isr:
            return Election(replica, tuple(r for r in isr if r in live))
    if unclean:
        for replica in assignment:
            if replica in live:
                return Election(replica, (replica,), unclean=True)
    return None


def preferred_leader(
    assignment: Sequence[int], isr: Sequence[int], live: Collection[int]
) -> Election | None:
    """The preferred replica (the first assigned) leads if it is live and in the ISR."""
    if assignment and assignment[0] in live and assignment[0] in isr:
        return Election(assignment[0], tuple(isr))
    return None


def reassignment_leader(
    target_replicas: Sequence[int], isr: Sequence[int], live: Collection[int]
) -> Election | None:
    """The first target replica that is live and in the ISR leads; the ISR is unchanged."""
    for replica in target_replicas:
        if replica in live and replica in isr:
            return Election(replica, tuple(isr))
    return None


def controlled_shutdown_leader(
    assignment: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    shutting_down: Collection[int],
) -> Election | None:
    """Move leadership off brokers in controlled shutdown.

    The first assigned replica that is live, in the ISR and not shutting down leads; the ISR
    loses the shutting-down brokers. ``None`` when no such replica exists (the leader stays).
    """
    for replica in assignment:
        if replica in live and replica in isr and replica not in shutting_down:
            return Election(replica, tuple(r for r in isr if r not in shutting_down))
    return None


def remove_replica_from_isr(
    leader: int, isr: Sequence[int], replica: int
) -> tuple[int, tuple[int, ...]] | None:
    """``(leader, isr)`` once ``replica`` has gone offline; ``None`` if it is not in the ISR.

    The last ISR member stays in the ISR (it holds every acknowledged record; with unclean
    election disabled only it may lead again). If the replica was the leader the partition
    is left without one (leader -1).
    """
    if replica not in isr:
        return None
    new_isr = tuple(isr) if len(isr) == 1 else tuple(r for r in isr if r != replica)
    return (NO_LEADER if replica == leader else leader), new_isr
