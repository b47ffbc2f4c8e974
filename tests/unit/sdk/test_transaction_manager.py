"""The transactional producer's state machine (odradek.client.transaction_manager), as Kafka's
TransactionManager: its transitions, the partitions of a transaction (sent only once added),
abortable and fatal errors, and how each transactional call's error is sorted."""

from __future__ import annotations

import pytest

from odradek import TopicPartition
from odradek.client.errors import NetworkError, TransactionAbortableError, TransactionStateError
from odradek.client.transaction_manager import (
    ABORTABLE,
    FATAL,
    LOOKUP,
    RETRY,
    State,
    TransactionManager,
    classify,
)
from odradek.errors import (
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidTxnStateError,
    NotCoordinatorError,
    NotEnoughReplicasError,
    OdradekError,
    ProducerFencedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    UnknownProducerIdError,
    UnknownServerError,
)

A = TopicPartition("a", 0)
B = TopicPartition("b", 1)


def aborting(manager: TransactionManager) -> bool:
    return manager.is_aborting  # read afresh, as state()


def state(manager: TransactionManager) -> State:
    return manager.state  # read afresh (mypy would keep an earlier comparison's narrowing)


def ready() -> TransactionManager:
    manager = TransactionManager("app", 60_000)
    manager.begin_init()
    manager.initialized()
    return manager


def in_transaction() -> TransactionManager:
    manager = ready()
    manager.begin_transaction()
    return manager


def test_nothing_transactional_before_init() -> None:
    manager = TransactionManager("app", 60_000)
    assert state(manager) is State.UNINITIALIZED
    with pytest.raises(TransactionStateError):
        manager.begin_transaction()
    with pytest.raises(TransactionStateError):
        manager.check_send()
    with pytest.raises(TransactionStateError):
        manager.begin_commit()


def test_an_empty_transactional_id_is_refused() -> None:
    with pytest.raises(ValueError):
        TransactionManager("", 60_000)


def test_init_that_timed_out_may_be_called_again() -> None:
    manager = TransactionManager("app", 60_000)
    manager.begin_init()
    manager.begin_init()
    manager.initialized()
    assert manager.is_ready


def test_a_transaction_commits_and_the_next_starts_empty() -> None:
    manager = in_transaction()
    manager.check_send()
    assert manager.partitions == frozenset()
    manager.maybe_add_partition(A)
    manager.maybe_add_partition(A)
    manager.maybe_add_partition(B)
    assert manager.pending_partitions() == [A, B]
    assert not manager.is_send_allowed(A)  # its batches wait for AddPartitionsToTxn
    manager.partitions_added([A, B])
    assert manager.pending_partitions() == []
    assert manager.is_send_allowed(A) and manager.is_send_allowed(B)
    assert manager.transaction_started
    manager.maybe_add_partition(A)  # already in the transaction
    assert manager.pending_partitions() == []
    manager.begin_commit()
    assert state(manager) is State.COMMITTING_TRANSACTION
    with pytest.raises(TransactionStateError):
        manager.check_send()  # no record joins a transaction being committed
    manager.completed()
    assert manager.is_ready
    assert manager.partitions == frozenset()
    manager.begin_transaction()
    assert not manager.is_send_allowed(A)  # each transaction adds its partitions again


def test_begin_twice_is_refused() -> None:
    manager = in_transaction()
    with pytest.raises(TransactionStateError):
        manager.begin_transaction()


def test_offsets_alone_start_the_transaction() -> None:
    manager = in_transaction()
    manager.offsets_added()
    assert manager.transaction_started


def test_a_failed_batch_makes_the_transaction_abortable() -> None:
    manager = in_transaction()
    manager.maybe_add_partition(A)
    manager.partitions_added([A])
    assert manager.is_send_allowed(A)
    cause = NotEnoughReplicasError("a-0")
    manager.batch_failed(cause)
    assert state(manager) is State.ABORTABLE_ERROR
    assert not manager.is_send_allowed(A)  # nothing more is sent
    assert aborting(manager)  # what is queued fails
    assert manager.last_error is cause
    assert manager.pending_partitions() == []  # nothing more is added
    with pytest.raises(TransactionAbortableError) as refused:
        manager.begin_commit()
    assert refused.value.__cause__ is cause
    with pytest.raises(TransactionAbortableError):
        manager.check_send()
    manager.batch_failed(UnknownServerError("later"))  # the first error is kept
    assert manager.last_error is cause
    manager.begin_abort()
    assert state(manager) is State.ABORTING_TRANSACTION
    manager.completed()
    assert manager.is_ready
    assert not manager.epoch_bump_required
    manager.begin_transaction()
    manager.check_send()  # the error is forgotten


def test_a_batch_failing_during_the_commit_flush_makes_it_abortable() -> None:
    manager = in_transaction()
    manager.begin_commit()
    manager.batch_failed(NotEnoughReplicasError("a-0"))
    with pytest.raises(TransactionAbortableError):
        manager.check_committable()
    manager.begin_abort()
    manager.completed()
    assert manager.is_ready


@pytest.mark.parametrize(
    "error",
    [
        InvalidProducerEpochError("a-0"),
        ProducerFencedError("a-0"),
        TransactionalIdAuthorizationFailedError("app"),
        InvalidTxnStateError("app"),
    ],
)
def test_a_fencing_or_authorization_error_is_fatal(error: OdradekError) -> None:
    manager = in_transaction()
    manager.batch_failed(error)
    assert state(manager) is State.FATAL_ERROR
    expected = ProducerFencedError if isinstance(error, InvalidProducerEpochError) else type(error)
    for call in (
        manager.begin_commit,
        manager.begin_abort,
        manager.begin_transaction,
        manager.check_send,
        manager.begin_init,
    ):
        with pytest.raises(expected):
            call()
    manager.batch_failed(NotEnoughReplicasError("a-0"))  # fatal is final
    assert state(manager) is State.FATAL_ERROR


def test_an_unknown_producer_id_needs_an_epoch_bump_on_abort() -> None:
    manager = in_transaction()
    error = manager.error(UnknownProducerIdError("a-0"), ABORTABLE)
    assert isinstance(error, UnknownProducerIdError)
    assert manager.epoch_bump_required
    manager.begin_abort()
    manager.begin_init()  # InitProducerId with the current id and epoch
    manager.initialized()
    assert manager.is_ready and not manager.epoch_bump_required


def test_a_fatal_call_error_is_raised_as_fenced() -> None:
    manager = in_transaction()
    raised = manager.error(InvalidProducerEpochError("app"), FATAL)
    assert isinstance(raised, ProducerFencedError)
    assert isinstance(raised.__cause__, InvalidProducerEpochError)


def test_commit_and_abort_only_from_a_transaction() -> None:
    manager = ready()
    with pytest.raises(TransactionStateError):
        manager.begin_commit()
    with pytest.raises(TransactionStateError):
        manager.begin_abort()


@pytest.mark.parametrize(
    ("error", "verdict"),
    [
        (NotCoordinatorError(), LOOKUP),
        (CoordinatorNotAvailableError(), LOOKUP),
        (NetworkError(), LOOKUP),
        (ConcurrentTransactionsError(), RETRY),
        (CoordinatorLoadInProgressError(), RETRY),
        (NotEnoughReplicasError(), RETRY),
        (ProducerFencedError(), FATAL),
        (InvalidProducerEpochError(), FATAL),
        (TransactionalIdAuthorizationFailedError(), FATAL),
        (InvalidTxnStateError(), FATAL),
        (TopicAuthorizationFailedError(), ABORTABLE),
        (GroupAuthorizationFailedError(), ABORTABLE),
        (UnknownProducerIdError(), ABORTABLE),
        (InvalidProducerIdMappingError(), ABORTABLE),
        (UnknownServerError(), FATAL),
    ],
)
def test_call_errors_are_sorted_as_kafka_does(error: OdradekError, verdict: str) -> None:
    assert classify(error) == verdict


def test_init_producer_id_cannot_abort_its_way_out() -> None:
    assert classify(InvalidProducerIdMappingError(), init=True) == FATAL
