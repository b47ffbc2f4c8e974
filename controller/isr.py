"""Validation of an ISR change a leader asks for (Kafka's ``KafkaController.processAlterPartition``
in ZooKeeper mode, with KIP-841's eligibility rule).

The leader proposes a new ISR for a partition, naming the leader epoch and partition epoch it
believes current. In order:

1. unknown partition (or one with no state yet)       → UNKNOWN_TOPIC_OR_PARTITION (3)
2. leader epoch older than the controller's           → FENCED_LEADER_EPOCH (74)
3. leader epoch newer than the controller's           → NOT_CONTROLLER (41): this controller
   is behind, as Kafka answers (the leader looks for the current controller)
4. the sender is not the partition's leader           → INVALID_REQUEST (42)
5. the proposal is exactly the current state          → accepted, nothing to write (idempotent
   retries; checked before the partition epoch, as Kafka does)
6. partition epoch differs from the current one       → INVALID_UPDATE_VERSION (95)
7. empty ISR, a duplicate, a member not assigned, or
   the leader missing from the proposed ISR            → INVALID_REQUEST (42)
8. a proposed member not live or in controlled
   shutdown                                            → INELIGIBLE_REPLICA (107)

Otherwise the change is accepted: same leader and leader epoch, the new ISR, this controller's
epoch; the partition epoch is whatever the conditional ZooKeeper write makes it. An accepted
change also ends a RECOVERING leader recovery state (the leader has an ISR again).

Pure; thread-safe.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from controller.zk_data import LEADER_RECOVERY_RECOVERED, LeaderIsrAndControllerEpoch
from odradek.errors import (
    FencedLeaderEpochError,
    IneligibleReplicaError,
    InvalidRequestError,
    InvalidUpdateVersionError,
    NotControllerError,
    OdradekError,
    UnknownTopicOrPartitionError,
)

__all__ = ["IsrChangeAccepted", "IsrChangeRejected", "validate_alter_partition"]


@dataclass(frozen=True, slots=True)
class IsrChangeAccepted:
    """The state to write (``write``) or, for a repeat of the current state, to answer with."""

    new_state: LeaderIsrAndControllerEpoch
    write: bool


@dataclass(frozen=True, slots=True)
class IsrChangeRejected:
    error: OdradekError

    @property
    def error_code(self) -> int:
        return self.error.code


def validate_alter_partition(
    *,
    broker_id: int,
    leader_epoch: int,
    new_isr: Sequence[int],
    partition_epoch: int,
    current: LeaderIsrAndControllerEpoch | None,
    replicas: Sequence[int],
    eligible_brokers: Collection[int],
    controller_epoch: int,
) -> IsrChangeAccepted | IsrChangeRejected:
    """Decide one AlterPartition item (see the module docstring for the rules).

    ``replicas`` is the partition's full replica set, ``eligible_brokers`` the brokers that are
    registered and not in controlled shutdown.
    """
    if current is None:
        return IsrChangeRejected(UnknownTopicOrPartitionError("no such partition"))
    if leader_epoch < current.leader_epoch:
        return IsrChangeRejected(
            FencedLeaderEpochError(
                f"leader epoch {leader_epoch} is older than the current {current.leader_epoch}"
            )
        )
    if leader_epoch > current.leader_epoch:
        return IsrChangeRejected(
            NotControllerError(
                f"leader epoch {leader_epoch} is newer than this controller's "
                f"{current.leader_epoch}"
            )
        )
    if broker_id != current.leader:
        return IsrChangeRejected(
            InvalidRequestError(f"broker {broker_id} is not the leader ({current.leader})")
        )
    if tuple(new_isr) == current.isr:
        return IsrChangeAccepted(current, write=False)
    if partition_epoch != current.partition_epoch:
        return IsrChangeRejected(
            InvalidUpdateVersionError(
                f"partition epoch {partition_epoch} is not the current {current.partition_epoch}"
            )
        )
    if not new_isr:
        return IsrChangeRejected(InvalidRequestError("the ISR cannot be empty"))
    if len(set(new_isr)) != len(new_isr):
        return IsrChangeRejected(InvalidRequestError(f"duplicate replicas in ISR {list(new_isr)}"))
    strangers = [r for r in new_isr if r not in replicas]
    if strangers:
        return IsrChangeRejected(
            InvalidRequestError(f"replicas {strangers} are not assigned to the partition")
        )
    if current.leader not in new_isr:
        return IsrChangeRejected(
            InvalidRequestError(f"the leader {current.leader} must stay in the ISR")
        )
    ineligible = [r for r in new_isr if r not in eligible_brokers]
    if ineligible:
        return IsrChangeRejected(
            IneligibleReplicaError(f"replicas {ineligible} are not live or are shutting down")
        )
    return IsrChangeAccepted(
        LeaderIsrAndControllerEpoch(
            leader=current.leader,
            leader_epoch=current.leader_epoch,
            isr=tuple(new_isr),
            controller_epoch=controller_epoch,
            partition_epoch=current.partition_epoch,
            leader_recovery_state=LEADER_RECOVERY_RECOVERED,
        ),
        write=True,
    )
