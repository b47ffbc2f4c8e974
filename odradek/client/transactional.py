"""The transactional producer's methods: what :class:`odradek.Producer`'s ``init_transactions``,
``begin_transaction``, ``send_offsets_to_transaction``, ``commit_transaction`` and
``abort_transaction`` do, as Kafka's ``KafkaProducer`` over its ``TransactionManager``:

* ``init_transactions``: InitProducerId with the transactional id at its coordinator (found with
  FindCoordinator ``key_type`` 1): the id's producer id and a new epoch, which fences any older
  producer of the same id and completes (aborts) a transaction it left open. Every partition's
  sequence numbers start again at 0 in the new epoch.
* ``begin_transaction``: local only (the coordinator learns of the transaction with the first
  AddPartitionsToTxn, which the I/O thread sends before the first batch of each partition).
* ``send_offsets_to_transaction``: AddOffsetsToTxn, then the group coordinator's TxnOffsetCommit
  (the offsets pending until the transaction's marker).
* ``commit_transaction``: flush (every batch of the transaction acknowledged), then EndTxn
  (commit) if the coordinator knows the transaction. A batch that failed makes the commit raise
  :class:`~odradek.client.errors.TransactionAbortableError`: abort instead.
* ``abort_transaction``: the batches not yet sent fail with
  :class:`~odradek.client.errors.TransactionAbortedError`, the ones in flight are waited for, then
  EndTxn (abort); when a batch numbered in this epoch was never stored (it failed, or was
  dropped unsent after a retriable error) or a leader lost the producer's sequences,
  InitProducerId with the current id and epoch then bumps the epoch (KIP-360), so that every
  partition's sequences start again at 0.

Errors: a fencing (:class:`~odradek.errors.ProducerFencedError`) or authorization error is fatal
(every later call raises it again: close the producer); a ``TimeoutError`` (``max_block_ms``, or
the call's ``timeout``) leaves the call to be made again. Thread-safe, but the calls of one
transaction are meant to come from one thread, in order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from odradek.client.accumulator import RecordAccumulator
from odradek.client.errors import TransactionAbortedError
from odradek.client.idempotence import IdempotenceState
from odradek.client.producer_id import ProducerIdAndEpoch
from odradek.client.transaction_manager import FATAL, State, TransactionManager, classify
from odradek.client.transactions import TransactionCoordinatorClient
from odradek.client.types import TopicPartition
from odradek.clock import Clock
from odradek.errors import OdradekError

__all__ = ["ConsumerGroupMetadata", "ProducerTransactions"]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadata:
    """What a transactional producer needs of a consumer's group to commit its offsets in a
    transaction (Kafka's ``ConsumerGroupMetadata``): ``Consumer.group_metadata()``."""

    group_id: str
    generation_id: int = -1
    """The member's epoch (KIP-848) or generation; -1: not checked."""
    member_id: str = ""
    group_instance_id: str | None = None


class ProducerTransactions:
    """The transactional calls of one producer, over its state machine, coordinator client,
    idempotence state and accumulator; ``flush`` is the producer's."""

    def __init__(
        self,
        manager: TransactionManager,
        client: TransactionCoordinatorClient,
        idempotence: IdempotenceState,
        accumulator: RecordAccumulator,
        flush: Callable[[float | None], None],
        clock: Clock,
        *,
        max_block_ms: int,
    ) -> None:
        self.manager = manager
        self._client = client
        self._idempotence = idempotence
        self._accumulator = accumulator
        self._flush = flush
        self._clock = clock
        self._max_block_ms = max_block_ms

    def _deadline(self, timeout: float | None) -> int:
        wait_ms = self._max_block_ms if timeout is None else round(timeout * 1000)
        return self._clock.monotonic_ms() + wait_ms

    def _left_s(self, deadline_ms: int) -> float:
        return max(deadline_ms - self._clock.monotonic_ms(), 0) / 1000

    def _ids(self) -> ProducerIdAndEpoch:
        return ProducerIdAndEpoch(self._idempotence.producer_id, self._idempotence.epoch)

    def _failed(self, error: OdradekError) -> OdradekError:
        """A call's error that is not retried: the transaction abortable or the producer
        fenced; returns what to raise."""
        return self.manager.error(error, classify(error))

    def init_transactions(self, timeout: float | None = None) -> None:
        """See the module docstring. Raises ``TimeoutError`` (call it again), or the fatal
        error (``TransactionalIdAuthorizationFailedError``, ``ProducerFencedError``, …)."""
        self.manager.begin_init()
        self._init(None, self._deadline(timeout))

    def _init(self, current: ProducerIdAndEpoch | None, deadline_ms: int) -> None:
        try:
            ids = self._client.init_producer_id(
                self.manager.transaction_timeout_ms, current, deadline_ms=deadline_ms
            )
        except OdradekError as exc:
            raise self.manager.error(exc, FATAL) from None
        self._idempotence.set_id(ids)  # sequences from 0 in the new epoch
        self.manager.initialized()

    def begin_transaction(self) -> None:
        self.manager.begin_transaction()

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int],
        group: ConsumerGroupMetadata,
        timeout: float | None = None,
    ) -> None:
        """The consumer's positions (the next offset to read, per partition) committed with
        the transaction: AddOffsetsToTxn (:meth:`TransactionCoordinatorClient.add_offsets`),
        then TxnOffsetCommit at the group's coordinator (pending there until the transaction's
        marker, KIP-447's member checks with ``group``'s generation and member id). Raises
        :class:`~odradek.client.errors.TransactionAbortableError` (abort), the fatal error,
        ``TimeoutError``."""
        self.manager.check_send()
        if not offsets:
            return
        deadline = self._deadline(timeout)
        try:
            self._client.add_offsets(self._ids(), group.group_id, deadline_ms=deadline)
            self.manager.offsets_added()
            self._client.txn_offset_commit(
                self._ids(),
                group.group_id,
                group.member_id,
                group.generation_id,
                group.group_instance_id,
                offsets,
                deadline_ms=deadline,
            )
        except OdradekError as exc:
            raise self._failed(exc) from None

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Raises :class:`~odradek.client.errors.TransactionAbortableError` (abort), the fatal
        error, ``TimeoutError`` (call it again)."""
        deadline = self._deadline(timeout)
        if self.manager.state is not State.COMMITTING_TRANSACTION:  # not a retried commit
            self.manager.begin_commit()
        self._flush(self._left_s(deadline))
        self.manager.check_committable()
        if self.manager.transaction_started:
            try:
                self._client.end_txn(self._ids(), True, deadline_ms=deadline)
            except OdradekError as exc:
                raise self._failed(exc) from None
        self.manager.completed()

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Raises the fatal error, ``TimeoutError`` (call it again)."""
        deadline = self._deadline(timeout)
        if self.manager.state is not State.ABORTING_TRANSACTION:  # not a retried abort
            self.manager.begin_abort()
        if self._accumulator.undrained_sequenced():
            self.manager.require_epoch_bump()  # their sequences will never be stored
        self._accumulator.abort_undrained(
            TransactionAbortedError("the transaction was aborted before the record was sent")
        )
        self._flush(self._left_s(deadline))  # the batches in flight
        if self.manager.transaction_started:
            try:
                self._client.end_txn(self._ids(), False, deadline_ms=deadline)
            except OdradekError as exc:
                raise self._failed(exc) from None
        if self.manager.epoch_bump_required:
            self.manager.begin_init()
            self._init(self._ids(), deadline)
            return
        self.manager.completed()
