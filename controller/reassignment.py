"""Partition reassignment as values (Kafka's ``ReplicaAssignment``, KIP-455).

A partition being reassigned from its original replicas (ORS) to target replicas (TRS) carries
the full set RS = TRS + ORS (targets first, no duplicates), with AR = RS - ORS being added and
RR = RS - TRS being removed. The controller's steps, after Kafka's ``onPartitionReassignment``:

A. while some target replica is not in the ISR: write RS/AR/RR to the topic znode, bump the
   leader epoch so every replica of RS learns the new replica set, start the adding replicas
   (they fetch from the leader and the leader adds them to the ISR through AlterPartition);
B. once every target replica is in the ISR: keep the leader if it is a live target replica,
   else elect one from TRS ∩ ISR (leader epoch + 1 either way, the ISR loses RR), stop and
   delete the removed replicas, write RS = TRS with AR = RR = [].

A new reassignment of a partition already being reassigned starts again from the *original*
replicas; replicas of the old full set that the new one drops are stopped. Cancelling is a
reassignment back to the original replicas.

Pure; thread-safe.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from controller.election import Election, reassignment_leader
from controller.zk_data import LeaderIsrAndControllerEpoch
from odradek.errors import InvalidReplicaAssignmentError

__all__ = [
    "ReplicaAssignment",
    "validate_target_replicas",
    "completed_reassignment_leader",
]


def _distinct(replicas: Sequence[int]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(replicas))


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """A partition's replicas (RS, in preference order) and its ongoing reassignment."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        """ORS: the replicas before the reassignment."""
        return tuple(r for r in self.replicas if r not in self.adding_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """TRS: the replicas once the reassignment completes."""
        return tuple(r for r in self.replicas if r not in self.removing_replicas)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    def reassign_to(self, target: Sequence[int]) -> ReplicaAssignment:
        """The assignment while moving from the original replicas to ``target``."""
        origin = self.origin_replicas
        full = _distinct([*target, *origin])
        return ReplicaAssignment(
            replicas=full,
            adding_replicas=tuple(r for r in full if r not in origin),
            removing_replicas=tuple(r for r in full if r not in target),
        )

    def cancel(self) -> ReplicaAssignment:
        """The assignment that reverts an ongoing reassignment to the original replicas."""
        return self.reassign_to(self.origin_replicas)

    def completed(self) -> ReplicaAssignment:
        """RS = TRS, AR = RR = []."""
        return ReplicaAssignment(self.target_replicas)

    def is_reassignment_complete(self, isr: Collection[int]) -> bool:
        """Whether every target replica is in the ISR (trivially so when not reassigning)."""
        return not self.is_being_reassigned or all(r in isr for r in self.target_replicas)


def validate_target_replicas(target: Sequence[int], brokers: Collection[int]) -> None:
    """A reassignment target must be non-empty, without duplicates, on registered brokers.

    Raises ``InvalidReplicaAssignmentError`` (Kafka's checks in
    ``KafkaController.validateReplicas``).
    """
    if not target:
        raise InvalidReplicaAssignmentError(
            "Empty replica list specified in partition reassignment."
        )
    if len(set(target)) != len(target):
        raise InvalidReplicaAssignmentError(
            f"Duplicate replica ids in partition reassignment replica list: {list(target)}"
        )
    if any(r < 0 for r in target):
        raise InvalidReplicaAssignmentError(f"Invalid broker id in replica list: {list(target)}")
    missing = sorted(r for r in target if r not in brokers)
    if missing:
        raise InvalidReplicaAssignmentError(
            f"Replica assignment has brokers that are not alive. Replica list: {list(target)}, "
            f"live broker list: {sorted(brokers)}"
        )


def completed_reassignment_leader(
    target: Sequence[int], state: LeaderIsrAndControllerEpoch, live: Collection[int]
) -> Election | None:
    """Leader and ISR once a reassignment completes (steps B3 and B4), or ``None`` if no
    target replica can lead yet.

    The current leader stays if it is a live target replica; otherwise the first target
    replica live and in the ISR leads. The ISR keeps only target replicas.
    """
    new_isr = tuple(r for r in state.isr if r in target)
    if state.leader in target and state.leader in live:
        return Election(state.leader, new_isr)
    elected = reassignment_leader(target, new_isr, live)
    return None if elected is None else Election(elected.leader, new_isr)
