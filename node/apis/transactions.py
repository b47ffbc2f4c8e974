"""The transactional APIs, whatever the front door: each API's one function, holding its policy
in front of the transaction coordinator (:class:`~node.transaction.txn_coordinator.
TransactionCoordinator`), as Kafka's ``KafkaApis`` handlers:

==========================  ==========================================================  ======
API                         checks, in Kafka's order                                    codes
==========================  ==========================================================  ======
FindCoordinator (txn key)   DESCRIBE on the transactional id                            53
InitProducerId (txn id)     WRITE on the transactional id                               53
AddPartitionsToTxn          WRITE on the transactional id (every partition 53); WRITE   53, 29,
                            on each topic (29) and the topic and partition known (3):   3, 55
                            if any fails the others answer OPERATION_NOT_ATTEMPTED (55)
AddOffsetsToTxn             WRITE on the transactional id (53), READ on the group (30)  53, 30
EndTxn                      WRITE on the transactional id                               53
DescribeTransactions        DESCRIBE on each transactional id                           53
ListTransactions            the ids the caller may DESCRIBE                             —
==========================  ==========================================================  ======

Thread-safe (no state of its own). The calls block their thread while the coordinator's write
replicates.
"""

from __future__ import annotations

from collections.abc import Sequence

from node.coordinator.group_coordinator import OFFSETS_TOPIC, partition_for
from node.coordinator.group_requests import Coordinator
from node.core.metadata_cache import MetadataCache
from node.core.requests import InitProducerIdResult
from node.security.auth_helper import AuthHelper, Caller
from node.transaction.txn_coordinator import (
    DescribedTransaction,
    ListedTransaction,
    TransactionCoordinator,
)
from odradek.acl import AclOperation, ResourceType
from odradek.errors import (
    GroupAuthorizationFailedError,
    OperationNotAttemptedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from odradek.txn_records import TransactionStatus

__all__ = ["TransactionApis"]

TXN_DENIED = TransactionalIdAuthorizationFailedError.code
Partition = tuple[str, int]


class TransactionApis:
    """The transactional APIs over one coordinator. ``auth`` ``None``: everything allowed."""

    def __init__(
        self,
        coordinator: TransactionCoordinator,
        metadata: MetadataCache,
        auth: AuthHelper | None,
        offsets_partitions: int,
    ) -> None:
        self.coordinator = coordinator
        self._metadata = metadata
        self.auth = auth
        self._offsets_partitions = offsets_partitions

    def _allowed(self, caller: Caller, operation: AclOperation, transactional_id: str) -> bool:
        return self.auth is None or self.auth.allowed(
            caller, operation, ResourceType.TRANSACTIONAL_ID, transactional_id
        )

    def _denied(self, caller: Caller, operation: AclOperation, transactional_id: str) -> str:
        return (
            f"{caller.principal} may not {operation.kafka_name} transactional id "
            f"{transactional_id!r}"
        )

    def find_coordinator(
        self, caller: Caller, transactional_ids: Sequence[str], listener_name: str | None
    ) -> list[Coordinator]:
        allowed = [t for t in transactional_ids if self._allowed(caller, AclOperation.DESCRIBE, t)]
        found = {c.key: c for c in self.coordinator.find_coordinator(allowed, listener_name)}
        return [
            found[t]
            if t in found
            else Coordinator(
                t,
                error_code=TXN_DENIED,
                error_message=self._denied(caller, AclOperation.DESCRIBE, t),
            )
            for t in transactional_ids
        ]

    def init_producer_id(
        self,
        caller: Caller,
        transactional_id: str,
        timeout_ms: int,
        expected: tuple[int, int] | None = None,
    ) -> InitProducerIdResult:
        if not self._allowed(caller, AclOperation.WRITE, transactional_id):
            return InitProducerIdResult(
                TXN_DENIED, error_message=self._denied(caller, AclOperation.WRITE, transactional_id)
            )
        return self.coordinator.init_producer_id(transactional_id, timeout_ms, expected)

    def may_write(self, caller: Caller, transactional_id: str) -> bool:
        """A transactional produce's check (Kafka's ``handleProduceRequest``)."""
        return self._allowed(caller, AclOperation.WRITE, transactional_id)

    def add_partitions_to_txn(
        self,
        caller: Caller,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[Partition],
    ) -> dict[Partition, int]:
        """One error code per distinct partition."""
        wanted = list(dict.fromkeys(partitions))
        if not self._allowed(caller, AclOperation.WRITE, transactional_id):
            return dict.fromkeys(wanted, TXN_DENIED)
        ok = (
            dict.fromkeys((t for t, _ in wanted), True)
            if self.auth is None
            else self.auth.topics(caller, AclOperation.WRITE, (t for t, _ in wanted))
        )
        known = self._metadata.snapshot.partitions
        refused: dict[Partition, int] = {}
        for tp in wanted:
            if not ok[tp[0]]:
                refused[tp] = TopicAuthorizationFailedError.code
            elif tp not in known:
                refused[tp] = UnknownTopicOrPartitionError.code
        if refused:
            return {tp: refused.get(tp, OperationNotAttemptedError.code) for tp in wanted}
        code = self.coordinator.add_partitions(
            transactional_id, producer_id, producer_epoch, wanted
        )
        return dict.fromkeys(wanted, code)

    def add_offsets_to_txn(
        self,
        caller: Caller,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        group_id: str,
    ) -> int:
        """The group's ``__consumer_offsets`` partition joins the transaction (its offsets
        are then committed with TxnOffsetCommit at the group coordinator)."""
        if not self._allowed(caller, AclOperation.WRITE, transactional_id):
            return TXN_DENIED
        if self.auth is not None and not self.auth.allowed(
            caller, AclOperation.READ, ResourceType.GROUP, group_id
        ):
            return GroupAuthorizationFailedError.code
        count = sum(1 for t, _ in self._metadata.snapshot.partitions if t == OFFSETS_TOPIC)
        partition = partition_for(group_id, count or self._offsets_partitions)
        return self.coordinator.add_partitions(
            transactional_id, producer_id, producer_epoch, [(OFFSETS_TOPIC, partition)]
        )

    def end_txn(
        self,
        caller: Caller,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
    ) -> int:
        if not self._allowed(caller, AclOperation.WRITE, transactional_id):
            return TXN_DENIED
        return self.coordinator.end_txn(transactional_id, producer_id, producer_epoch, commit)

    def describe_transactions(
        self, caller: Caller, transactional_ids: Sequence[str]
    ) -> list[DescribedTransaction]:
        allowed = [t for t in transactional_ids if self._allowed(caller, AclOperation.DESCRIBE, t)]
        described = {d.transactional_id: d for d in self.coordinator.describe_transactions(allowed)}
        return [described.get(t) or DescribedTransaction(t, TXN_DENIED) for t in transactional_ids]

    def list_transactions(
        self,
        caller: Caller,
        states: Sequence[str] = (),
        producer_ids: Sequence[int] = (),
        min_duration_ms: int = -1,
    ) -> tuple[list[ListedTransaction], list[str]]:
        """The transactions the caller may DESCRIBE, and the state names asked for that Kafka
        does not know (answered back; when every name asked is unknown, none matches, as
        Kafka's ``listTransactionStates``)."""
        known = {s.kafka_name for s in TransactionStatus}
        unknown = [n for n in states if n not in known]
        if unknown and len(unknown) == len(states):
            return [], unknown
        listed = self.coordinator.list_transactions(
            [n for n in states if n in known], producer_ids, min_duration_ms
        )
        allowed = [
            t for t in listed if self._allowed(caller, AclOperation.DESCRIBE, t.transactional_id)
        ]
        return allowed, unknown
