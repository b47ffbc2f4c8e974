"""The transaction coordinator's decisions: Kafka's ``TransactionMetadata`` state machine and
``TransactionCoordinator``'s request handling, as pure functions over frozen values.

A transactional id's :class:`TxnMetadata` moves through Kafka's states (the number is what
``__transaction_state`` stores, :class:`~odradek.txn_records.TransactionStatus`)::

    Empty(0) --AddPartitions/AddOffsets--> Ongoing(1) --EndTxn(commit)--> PrepareCommit(2)
       ^                                     |  \\--EndTxn(abort)---------> PrepareAbort(3)
       |                                     |                                  |
       |           InitProducerId while Ongoing: PrepareEpochFence(7) --> PrepareAbort(3)
       |                                                                        |
       +--InitProducerId-- CompleteCommit(4) <--markers written-- PrepareCommit |
       +--InitProducerId-- CompleteAbort(5)  <--markers written---------------- +

Every change is decided in two steps, as Kafka's ``prepareTransitionTo`` /
``completeTransitionTo``: a *prepare* function checks the request against the metadata and
answers either a :class:`Refuse` (a Kafka error code, nothing written) or a
:class:`Transition`: the metadata with its ``pending`` state set (so a concurrent request for
the same id is answered CONCURRENT_TRANSACTIONS) and the *target* metadata, whose log value the
coordinator appends to ``__transaction_state``. Once the append is replicated the coordinator
:func:`complete_transition` (the target becomes the metadata); if it fails,
:func:`abort_transition` clears the pending state (an epoch fence that failed keeps its bumped
epoch, never returned to a client: Kafka's ``hasFailedEpochFence``).

Time is an input (``now_ms``); producer ids come from a callable. No I/O, no locks: the
coordinator serialises the calls for one transactional id.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from odradek.errors import (
    ConcurrentTransactionsError,
    InvalidProducerIdMappingError,
    InvalidRequestError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    ProducerFencedError,
)
from odradek.txn_records import TransactionLogValue, TransactionStatus

__all__ = [
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "Refuse",
    "Transition",
    "TxnMetadata",
    "abort_transition",
    "complete_transition",
    "expired_transactional_ids",
    "metadata_from_log",
    "prepare_add_partitions",
    "prepare_complete",
    "prepare_end_txn",
    "prepare_init_producer_id",
    "prepare_timeout_abort",
    "timed_out",
]

S = TransactionStatus
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
EPOCH_MAX = 32767
Partition = tuple[str, int]

_VALID_PREVIOUS: dict[TransactionStatus, frozenset[TransactionStatus]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
"""Kafka's ``TransactionState.validPreviousStates``."""


def epoch_exhausted(epoch: int) -> bool:
    """Kafka's ``isEpochExhausted``: the coordinator keeps the last epoch for fencing."""
    return epoch >= EPOCH_MAX - 1


@dataclass(frozen=True, slots=True)
class TxnMetadata:
    """One transactional id's state (Kafka's ``TransactionMetadata``)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionStatus
    partitions: frozenset[Partition] = frozenset()
    start_ms: int = -1
    """When the transaction began (its first partition added); -1 when none is open."""
    last_update_ms: int = -1
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    """The epoch before the last bump (KIP-360: a retried InitProducerId is recognised)."""
    pending: TransactionStatus | None = None
    """The state a write in flight moves it to (not stored)."""
    failed_epoch_fence: bool = False
    """An epoch fence whose write failed: its bump is not repeated (not stored)."""

    @property
    def ongoing(self) -> bool:
        """A transaction is open or completing (Kafka's ``hasPendingTransaction``)."""
        return self.state in (S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT)

    def log_value(self) -> TransactionLogValue:
        """What ``__transaction_state`` stores for this metadata."""
        return TransactionLogValue(
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            transaction_timeout_ms=self.timeout_ms,
            status=self.state,
            partitions=tuple(sorted(self.partitions)),
            last_update_timestamp_ms=self.last_update_ms,
            start_timestamp_ms=self.start_ms,
        )


def metadata_from_log(transactional_id: str, value: TransactionLogValue) -> TxnMetadata:
    """The metadata a coordinator loads from a stored value (Kafka's ``readTxnRecordValue``;
    the last epoch is not stored by version 0 values)."""
    return TxnMetadata(
        transactional_id=transactional_id,
        producer_id=value.producer_id,
        producer_epoch=value.producer_epoch,
        timeout_ms=value.transaction_timeout_ms,
        state=value.status,
        partitions=frozenset(value.partitions),
        start_ms=value.start_timestamp_ms,
        last_update_ms=value.last_update_timestamp_ms,
    )


@dataclass(frozen=True, slots=True)
class Refuse:
    """Answer with this Kafka error code (0: success without a write), nothing written."""

    error_code: int
    message: str = ""


@dataclass(frozen=True, slots=True)
class Transition:
    """Write ``target.log_value()``; ``current`` is the metadata meanwhile (its ``pending``
    set). ``fence``: an InitProducerId that found a transaction open: the coordinator aborts
    it (:func:`prepare_end_txn` from the fence) and answers CONCURRENT_TRANSACTIONS."""

    current: TxnMetadata
    target: TxnMetadata
    fence: bool = False


Decision = Refuse | Transition


def _prepare(
    meta: TxnMetadata,
    state: TransactionStatus,
    now_ms: int,
    **changes: Any,
) -> Transition:
    if meta.pending is not None:
        raise AssertionError(f"{meta.transactional_id}: a transition is already pending")
    if meta.state not in _VALID_PREVIOUS[state]:
        raise AssertionError(f"{meta.transactional_id}: {meta.state.name} -> {state.name}")
    target = dataclasses.replace(meta, state=state, last_update_ms=now_ms, pending=None, **changes)
    if state is not S.DEAD and target.producer_epoch < 0:
        raise AssertionError(f"{meta.transactional_id}: epoch {target.producer_epoch}")
    return Transition(dataclasses.replace(meta, pending=state), target)


def complete_transition(meta: TxnMetadata, transition: Transition) -> TxnMetadata:
    """The metadata once ``transition``'s write is replicated (Kafka's
    ``completeTransitionTo``). Raises ``AssertionError`` for a transition that does not follow
    from ``meta`` (a programming error, fatal in Kafka)."""
    target = transition.target
    if meta.pending is not target.state:
        raise AssertionError(f"{meta.transactional_id}: completing {target.state.name}")
    failed_fence = meta.failed_epoch_fence and target.state is not S.COMPLETE_ABORT
    if target.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
        failed_fence = False
    return dataclasses.replace(target, pending=None, failed_epoch_fence=failed_fence)


def abort_transition(meta: TxnMetadata, transition: Transition) -> TxnMetadata:
    """The metadata after ``transition``'s write failed: no longer pending. A failed epoch
    fence keeps the bumped epoch (never answered to a client) and is not bumped again."""
    if transition.fence or (
        transition.target.state is S.PREPARE_ABORT
        and transition.target.producer_epoch > meta.producer_epoch
    ):
        return dataclasses.replace(
            meta,
            pending=None,
            producer_epoch=transition.target.producer_epoch,
            last_producer_epoch=NO_PRODUCER_EPOCH,
            failed_epoch_fence=True,
        )
    return dataclasses.replace(meta, pending=None)


# -- InitProducerId ----------------------------------------------------------------------------


def prepare_init_producer_id(
    meta: TxnMetadata | None,
    transactional_id: str,
    timeout_ms: int,
    *,
    max_timeout_ms: int,
    expected: tuple[int, int] | None,
    new_producer_id: Callable[[], int],
    now_ms: int,
) -> Decision:
    """InitProducerId with a transactional id (Kafka's ``handleInitProducerId`` and
    ``prepareInitProducerIdTransit``). ``meta`` ``None``: an id never seen (a producer id is
    allocated, epoch -1 until the bump to 0). ``expected``: KIP-360's (producer id, epoch) of
    a producer recovering, else ``None``."""
    if not transactional_id:
        return Refuse(InvalidRequestError.code, "the transactional id must not be empty")
    if not 1 <= timeout_ms <= max_timeout_ms:
        return Refuse(
            InvalidTransactionTimeoutError.code,
            f"transaction.timeout.ms {timeout_ms} is not in [1, {max_timeout_ms}] "
            "(transaction.max.timeout.ms)",
        )
    if meta is None:
        meta = TxnMetadata(
            transactional_id,
            new_producer_id(),
            NO_PRODUCER_EPOCH,
            timeout_ms,
            S.EMPTY,
            last_update_ms=now_ms,
        )
    if meta.pending is not None:
        return Refuse(ConcurrentTransactionsError.code, "a state change is in progress")
    if expected is not None and not (
        meta.producer_epoch == NO_PRODUCER_EPOCH
        or expected[0] == meta.producer_id
        or (expected[0] == meta.last_producer_id and epoch_exhausted(expected[1]))
    ):
        return Refuse(ProducerFencedError.code, "another producer has this transactional id")
    if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
        return Refuse(ConcurrentTransactionsError.code, "the last transaction is completing")
    if meta.state is S.ONGOING:
        return _prepare_epoch_fence(meta, now_ms)
    if meta.state not in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
        raise AssertionError(f"{transactional_id}: InitProducerId in {meta.state.name}")
    if epoch_exhausted(meta.producer_epoch) and (
        expected is None or expected[1] == meta.producer_epoch
    ):
        # a new producer id (Kafka's prepareProducerIdRotation)
        return _prepare(
            meta,
            S.EMPTY,
            now_ms,
            producer_id=new_producer_id(),
            last_producer_id=meta.producer_id,
            producer_epoch=0,
            last_producer_epoch=meta.producer_epoch if expected is not None else -1,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            start_ms=-1,
        )
    bumped = meta.producer_epoch + 1
    if expected is None:
        epoch, last = bumped, NO_PRODUCER_EPOCH
    elif meta.producer_epoch == NO_PRODUCER_EPOCH or expected[1] == meta.producer_epoch:
        epoch, last = bumped, meta.producer_epoch
    elif expected[1] == meta.last_producer_epoch:
        epoch, last = meta.producer_epoch, meta.last_producer_epoch  # a retry of a success
    else:
        return Refuse(ProducerFencedError.code, "the producer's epoch is not the current one")
    return _prepare(
        meta,
        S.EMPTY,
        now_ms,
        producer_epoch=epoch,
        last_producer_epoch=last,
        last_producer_id=meta.producer_id,
        timeout_ms=timeout_ms,
        partitions=frozenset(),
        start_ms=-1,
    )


def _prepare_epoch_fence(meta: TxnMetadata, now_ms: int) -> Transition:
    """The open transaction is aborted under a bumped epoch that no client is given (Kafka's
    ``prepareFenceProducerEpoch`` then ``endTransaction`` from the coordinator): the abort is
    the write; the old producer's next request is PRODUCER_FENCED."""
    if meta.producer_epoch >= EPOCH_MAX:
        raise AssertionError(f"{meta.transactional_id}: cannot fence epoch {meta.producer_epoch}")
    epoch = meta.producer_epoch if meta.failed_epoch_fence else meta.producer_epoch + 1
    fenced = dataclasses.replace(
        meta, producer_epoch=epoch, last_producer_epoch=NO_PRODUCER_EPOCH, pending=None
    )
    transition = _prepare(fenced, S.PREPARE_ABORT, now_ms)
    current = dataclasses.replace(meta, pending=S.PREPARE_ABORT)
    return Transition(current, transition.target, fence=True)


# -- AddPartitionsToTxn, AddOffsetsToTxn --------------------------------------------------------


def prepare_add_partitions(
    meta: TxnMetadata | None,
    producer_id: int,
    producer_epoch: int,
    partitions: Iterable[Partition],
    now_ms: int,
) -> Decision:
    """AddPartitionsToTxn (and AddOffsetsToTxn, whose partition is the group's
    ``__consumer_offsets`` partition): Kafka's ``handleAddPartitionsToTransaction``."""
    wanted = frozenset(partitions)
    if meta is None or meta.producer_id != producer_id:
        return Refuse(
            InvalidProducerIdMappingError.code,
            "the producer id is not this transactional id's",
        )
    if meta.producer_epoch != producer_epoch:
        return Refuse(ProducerFencedError.code, "the producer's epoch is not the current one")
    if meta.pending is not None or meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
        return Refuse(ConcurrentTransactionsError.code, "the last transaction is completing")
    if meta.state is S.ONGOING and wanted <= meta.partitions:
        return Refuse(0)
    start = (
        now_ms if meta.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT) else meta.start_ms
    )
    return _prepare(meta, S.ONGOING, now_ms, partitions=meta.partitions | wanted, start_ms=start)


# -- EndTxn ------------------------------------------------------------------------------------


def prepare_end_txn(
    meta: TxnMetadata | None,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    now_ms: int,
) -> Decision:
    """EndTxn from a client (Kafka's ``endTransaction`` with ``isFromClient``): the epoch must
    be the current one; a retry of a completed end answers success."""
    if meta is None or meta.producer_id != producer_id:
        return Refuse(
            InvalidProducerIdMappingError.code,
            "the producer id is not this transactional id's",
        )
    if producer_epoch != meta.producer_epoch:
        return Refuse(ProducerFencedError.code, "the producer's epoch is not the current one")
    if meta.pending is not None:
        return Refuse(ConcurrentTransactionsError.code, "a state change is in progress")
    state = meta.state
    wrong = Refuse(
        InvalidTxnStateError.code,
        f"{'commit' if commit else 'abort'} of a transaction in state {state.kafka_name}",
    )
    if state is S.ONGOING:
        return _prepare(meta, S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, now_ms)
    if state is S.COMPLETE_COMMIT:
        return Refuse(0) if commit else wrong
    if state is S.COMPLETE_ABORT:
        return wrong if commit else Refuse(0)
    if state is S.PREPARE_COMMIT:
        return Refuse(ConcurrentTransactionsError.code) if commit else wrong
    if state is S.PREPARE_ABORT:
        return wrong if commit else Refuse(ConcurrentTransactionsError.code)
    if state is S.EMPTY:
        return wrong
    raise AssertionError(f"{meta.transactional_id}: EndTxn in {state.name}")


def prepare_complete(meta: TxnMetadata, now_ms: int) -> Transition:
    """Every marker written: PrepareCommit → CompleteCommit, PrepareAbort → CompleteAbort
    (Kafka's ``prepareComplete``); the transaction's partitions are cleared."""
    if meta.state is S.PREPARE_COMMIT:
        state = S.COMPLETE_COMMIT
    elif meta.state is S.PREPARE_ABORT:
        state = S.COMPLETE_ABORT
    else:
        raise AssertionError(f"{meta.transactional_id}: markers complete in {meta.state.name}")
    return _prepare(meta, state, now_ms, partitions=frozenset())


# -- timers --------------------------------------------------------------------------------------


def timed_out(metas: Iterable[TxnMetadata], now_ms: int) -> list[TxnMetadata]:
    """The open transactions past their ``transaction.timeout.ms``, not already changing
    (Kafka's ``timedOutTransactions``)."""
    return [
        m
        for m in metas
        if m.state is S.ONGOING and m.pending is None and m.start_ms + m.timeout_ms < now_ms
    ]


def prepare_timeout_abort(meta: TxnMetadata, now_ms: int) -> Transition:
    """The coordinator's abort of a timed-out transaction: the epoch is bumped (the producer's
    next request is PRODUCER_FENCED; Kafka's ``abortTimedOutTransactions``)."""
    return _prepare_epoch_fence(meta, now_ms)


def expired_transactional_ids(
    metas: Iterable[TxnMetadata], now_ms: int, expiration_ms: int
) -> list[TxnMetadata]:
    """Ids idle for ``transactional.id.expiration.ms`` with no transaction open (Kafka's
    states with ``isExpirationAllowed``: Empty, CompleteCommit, CompleteAbort): the coordinator
    writes their tombstones."""
    return [
        m
        for m in metas
        if m.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
        and m.pending is None
        and m.last_update_ms + expiration_ms <= now_ms
    ]
