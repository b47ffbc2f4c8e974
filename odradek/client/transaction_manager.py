"""The transactional producer's state machine: Kafka's ``TransactionManager`` without its I/O.

States and transitions are Kafka's (``TransactionManager.State.isTransitionValid``)::

    UNINITIALIZED ──init──▶ INITIALIZING ──▶ READY ──begin──▶ IN_TRANSACTION
                                               ▲               │  commit / abort
                                               └── completed ──┤  COMMITTING_TRANSACTION
                                                               │  ABORTING_TRANSACTION
    any ──(an error the transaction survives)──▶ ABORTABLE_ERROR ──abort──▶ ABORTING_TRANSACTION
    any ──(an error the producer does not survive)──▶ FATAL_ERROR (final: close the producer)

* A partition a record is sent to during a transaction is *new* until AddPartitionsToTxn adds
  it; its batches are sent only once it is added (:meth:`TransactionManager.is_send_allowed`).
* :func:`classify` sorts a transactional call's error as Kafka's handlers do: look the
  coordinator up again (``NOT_COORDINATOR``, ``COORDINATOR_NOT_AVAILABLE``, a network error),
  retry (``COORDINATOR_LOAD_IN_PROGRESS``, ``CONCURRENT_TRANSACTIONS``, other retriable codes),
  abortable (``TOPIC_AUTHORIZATION_FAILED``, ``GROUP_AUTHORIZATION_FAILED``, and
  ``UNKNOWN_PRODUCER_ID`` / ``INVALID_PRODUCER_ID_MAPPING``, which also need the epoch bumped on
  abort, KIP-360) or fatal (``PRODUCER_FENCED`` and ``INVALID_PRODUCER_EPOCH`` — raised as
  :class:`~odradek.errors.ProducerFencedError` —, ``TRANSACTIONAL_ID_AUTHORIZATION_FAILED``,
  ``INVALID_TXN_STATE``, anything unexpected).
* A batch that fails for good during a transaction makes the transaction abortable, unless its
  error is fatal (:meth:`TransactionManager.batch_failed`, Kafka's ``handleFailedBatch``).
* In an error state or while aborting nothing more is sent: the batches not yet sent fail
  (:attr:`~TransactionManager.is_aborting`, Kafka's sender aborting the undrained batches).
* An abortable error makes :meth:`~TransactionManager.begin_commit` raise
  :class:`~odradek.client.errors.TransactionAbortableError` (the cause chained); only an abort
  leaves the state. A fatal error makes every transactional call raise it again.

No I/O, no clock. Thread-safe: the user's threads and the producer's I/O thread share it (one
lock around each method).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterable

from odradek.client.errors import NetworkError, TransactionAbortableError, TransactionStateError
from odradek.client.types import TopicPartition
from odradek.errors import (
    ClusterAuthorizationFailedError,
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidTxnStateError,
    NotCoordinatorError,
    OdradekError,
    OperationNotAttemptedError,
    ProducerFencedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    UnknownProducerIdError,
)

__all__ = [
    "ABORTABLE",
    "FATAL",
    "LOOKUP",
    "RETRY",
    "State",
    "TransactionManager",
    "as_fatal",
    "classify",
]

RETRY, LOOKUP, ABORTABLE, FATAL = "retry", "lookup-coordinator", "abortable", "fatal"


class State(enum.Enum):
    UNINITIALIZED = "Uninitialized"
    INITIALIZING = "Initializing"
    READY = "Ready"
    IN_TRANSACTION = "InTransaction"
    COMMITTING_TRANSACTION = "CommittingTransaction"
    ABORTING_TRANSACTION = "AbortingTransaction"
    ABORTABLE_ERROR = "AbortableError"
    FATAL_ERROR = "FatalError"


S = State
_VALID_FROM: dict[State, frozenset[State]] = {
    S.INITIALIZING: frozenset({S.UNINITIALIZED, S.INITIALIZING, S.ABORTING_TRANSACTION}),
    S.READY: frozenset({S.INITIALIZING, S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION}),
    S.IN_TRANSACTION: frozenset({S.READY}),
    S.COMMITTING_TRANSACTION: frozenset({S.IN_TRANSACTION}),
    S.ABORTING_TRANSACTION: frozenset({S.IN_TRANSACTION, S.ABORTABLE_ERROR}),
    S.ABORTABLE_ERROR: frozenset({S.IN_TRANSACTION, S.COMMITTING_TRANSACTION, S.ABORTABLE_ERROR}),
}
"""Kafka's ``isTransitionValid``: the states each state may be entered from (FATAL_ERROR from
any; INITIALIZING from ABORTING_TRANSACTION to bump the epoch after an abort, and again from
itself when an ``init_transactions`` that timed out is called again)."""

_FATAL_TYPES = (
    ProducerFencedError,
    InvalidProducerEpochError,
    TransactionalIdAuthorizationFailedError,
    ClusterAuthorizationFailedError,
    InvalidTxnStateError,
)


def as_fatal(error: OdradekError) -> OdradekError:
    """The error a fatal ``error`` is raised as: an epoch refused is the producer fenced (as
    Kafka's producer raises ``ProducerFencedException`` for ``INVALID_PRODUCER_EPOCH``)."""
    if isinstance(error, InvalidProducerEpochError):
        fenced = ProducerFencedError(
            "there is a newer producer with the same transactional id which fences this one: "
            f"{error.message}"
        )
        fenced.__cause__ = error
        return fenced
    return error


def classify(error: OdradekError, *, init: bool = False) -> str:
    """What a transactional call (``init``: InitProducerId) does with ``error``: ``LOOKUP``
    (find the coordinator again, then retry), ``RETRY``, ``ABORTABLE`` or ``FATAL``."""
    if isinstance(error, NotCoordinatorError | CoordinatorNotAvailableError | NetworkError):
        return LOOKUP
    if isinstance(error, ConcurrentTransactionsError | CoordinatorLoadInProgressError):
        return RETRY
    if isinstance(error, _FATAL_TYPES):
        return FATAL
    if isinstance(error, UnknownProducerIdError | InvalidProducerIdMappingError):
        return FATAL if init else ABORTABLE
    if isinstance(
        error,
        TopicAuthorizationFailedError | GroupAuthorizationFailedError | OperationNotAttemptedError,
    ):
        return ABORTABLE
    if error.retriable:
        return RETRY
    return FATAL


class TransactionManager:
    """One transactional producer's state, its transaction's partitions and its last error."""

    def __init__(self, transactional_id: str, transaction_timeout_ms: int) -> None:
        if not transactional_id:
            raise ValueError("transactional_id must not be empty")
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self._lock = threading.Lock()
        self._state = State.UNINITIALIZED
        self._last_error: OdradekError | None = None
        self._in_transaction: set[TopicPartition] = set()
        self._new: set[TopicPartition] = set()
        self._offsets_added = False
        self.epoch_bump_required = False
        """An abort must be followed by InitProducerId with the current id and epoch (KIP-360):
        a leader lost this producer's sequence state, or a batch numbered in this epoch was
        never stored (its partition's sequences have a gap that only a new epoch closes)."""

    # -- what the producer asks -----------------------------------------------------------

    @property
    def state(self) -> State:
        return self._state

    @property
    def last_error(self) -> OdradekError | None:
        return self._last_error

    @property
    def has_error(self) -> bool:
        return self._state in (S.ABORTABLE_ERROR, S.FATAL_ERROR)

    @property
    def is_ready(self) -> bool:
        return self._state is S.READY

    @property
    def transaction_started(self) -> bool:
        """Whether the coordinator knows of the transaction (a partition or offsets added):
        only then does ending it need EndTxn."""
        with self._lock:
            return bool(self._in_transaction) or self._offsets_added

    def is_send_allowed(self, tp: TopicPartition) -> bool:
        """Whether batches of ``tp`` may be sent: it was added to the transaction, which is
        neither failed nor being aborted."""
        return tp in self._in_transaction and self._state in (
            S.IN_TRANSACTION,
            S.COMMITTING_TRANSACTION,
        )

    @property
    def is_aborting(self) -> bool:
        """Being aborted, or failed: the batches not yet sent are to fail (Kafka's sender
        aborts the undrained batches then)."""
        return self._state in (S.ABORTING_TRANSACTION, S.ABORTABLE_ERROR, S.FATAL_ERROR)

    def pending_partitions(self) -> list[TopicPartition]:
        """The partitions to add with AddPartitionsToTxn (none while in an error state)."""
        with self._lock:
            if self._state not in (S.IN_TRANSACTION, S.COMMITTING_TRANSACTION):
                return []
            return sorted(self._new)

    @property
    def partitions(self) -> frozenset[TopicPartition]:
        with self._lock:
            return frozenset(self._in_transaction)

    # -- the user's calls -----------------------------------------------------------------

    def begin_init(self) -> None:
        """``init_transactions``: UNINITIALIZED (or after an abort that needs an epoch bump)
        to INITIALIZING. Raises the fatal error, or :class:`TransactionStateError`."""
        with self._lock:
            self._transition(S.INITIALIZING)

    def initialized(self) -> None:
        """InitProducerId answered: READY, a new epoch with nothing in the transaction."""
        with self._lock:
            self._transition(S.READY)
            self.epoch_bump_required = False
            self._clear()

    def begin_transaction(self) -> None:
        with self._lock:
            self._transition(S.IN_TRANSACTION)

    def check_send(self) -> None:
        """A record may be sent: raises :class:`TransactionStateError` outside a transaction,
        :class:`TransactionAbortableError` in an abortable error, the fatal error."""
        with self._lock:
            if self._state is S.IN_TRANSACTION:
                return
            self._raise_if_error()
            raise TransactionStateError(
                f"cannot send a record in state {self._state.value}: call begin_transaction() first"
            )

    def maybe_add_partition(self, tp: TopicPartition) -> None:
        """A batch of ``tp`` was opened: the partition joins the transaction (sent with the
        next AddPartitionsToTxn) unless it is in it already."""
        with self._lock:
            if tp not in self._in_transaction:
                self._new.add(tp)

    def begin_commit(self) -> None:
        """IN_TRANSACTION to COMMITTING_TRANSACTION; raises
        :class:`TransactionAbortableError` after an abortable error (abort instead), the fatal
        error, or :class:`TransactionStateError`."""
        with self._lock:
            self._raise_if_error()
            self._transition(S.COMMITTING_TRANSACTION)

    def check_committable(self) -> None:
        """After the flush of a commit: raises :class:`TransactionAbortableError` if a batch
        failed meanwhile, the fatal error."""
        with self._lock:
            self._raise_if_error()

    def begin_abort(self) -> None:
        """IN_TRANSACTION or ABORTABLE_ERROR to ABORTING_TRANSACTION; raises the fatal error or
        :class:`TransactionStateError`."""
        with self._lock:
            self._transition(S.ABORTING_TRANSACTION)

    def offsets_added(self) -> None:
        with self._lock:
            self._offsets_added = True

    def completed(self) -> None:
        """EndTxn answered (or none was needed): READY, nothing in the transaction."""
        with self._lock:
            self._transition(S.READY)
            self._clear()

    # -- what the calls answer ------------------------------------------------------------

    def partitions_added(self, tps: Iterable[TopicPartition]) -> None:
        with self._lock:
            for tp in tps:
                self._new.discard(tp)
                self._in_transaction.add(tp)

    def error(self, error: OdradekError, verdict: str) -> OdradekError:
        """A call failed with ``error`` classified ``verdict`` (ABORTABLE or FATAL): the state
        moves to ABORTABLE_ERROR or FATAL_ERROR; returns the error to raise."""
        with self._lock:
            if verdict == FATAL:
                return self._fatal(error)
            return self._abortable(error)

    def batch_failed(self, error: OdradekError) -> None:
        """A batch of the transaction failed for good (Kafka's ``handleFailedBatch``): a
        fencing or authorization error is fatal, any other makes the transaction abortable."""
        with self._lock:
            if isinstance(error, _FATAL_TYPES):
                self._fatal(error)
                return
            if self._state in (S.IN_TRANSACTION, S.COMMITTING_TRANSACTION, S.ABORTABLE_ERROR):
                self._abortable(error)

    def require_epoch_bump(self) -> None:
        with self._lock:
            self.epoch_bump_required = True

    # -- internals (the lock is held) -----------------------------------------------------

    def _clear(self) -> None:
        self._in_transaction.clear()
        self._new.clear()
        self._offsets_added = False
        self._last_error = None

    def _raise_if_error(self) -> None:
        if self._state is S.FATAL_ERROR:
            assert self._last_error is not None
            raise self._last_error
        if self._state is S.ABORTABLE_ERROR:
            raise TransactionAbortableError(
                "the transaction cannot be committed: it must be aborted "
                f"(abort_transaction()) after {self._last_error}"
            ) from self._last_error

    def _transition(self, target: State) -> None:
        if self._state is S.FATAL_ERROR:
            assert self._last_error is not None
            raise self._last_error
        allowed = _VALID_FROM[target]
        if self._state not in allowed:
            if self._state is S.ABORTABLE_ERROR:
                self._raise_if_error()
            raise TransactionStateError(
                f"transactional id {self.transactional_id!r}: cannot go from "
                f"{self._state.value} to {target.value}"
            )
        self._state = target

    def _abortable(self, error: OdradekError) -> OdradekError:
        if self._state is S.FATAL_ERROR:
            assert self._last_error is not None
            return self._last_error
        if isinstance(error, UnknownProducerIdError | InvalidProducerIdMappingError):
            self.epoch_bump_required = True
        if self._state is not S.ABORTABLE_ERROR:
            self._last_error = error
        self._state = S.ABORTABLE_ERROR
        return error

    def _fatal(self, error: OdradekError) -> OdradekError:
        if self._state is S.FATAL_ERROR:
            assert self._last_error is not None
            return self._last_error
        raised = as_fatal(error)
        self._last_error = raised
        self._state = S.FATAL_ERROR
        return raised
