"""The transaction coordinator's state machine (node.transaction.txn_state) against a model,
over random interleavings of InitProducerId (new producers fencing old ones), AddPartitions,
EndTxn, markers completing, timeouts, writes that fail and coordinator failovers (the state
reloaded from what ``__transaction_state`` holds).

The driver plays the coordinator: each prepared transition is either written (the target
appended to a log, then completed) or fails (aborted), as the coordinator's append would. The
model is what clients may rely on: the newest producer's epoch is the only one accepted, epochs
only grow, a committed transaction ends CompleteCommit unless it was fenced first, an open
transaction's partitions are exactly those added, and a reload from the log equals the state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from node.transaction import txn_state as ts
from odradek.errors import ConcurrentTransactionsError, ProducerFencedError
from odradek.txn_records import TransactionStatus as S
from odradek.txn_records import decode_txn_value, encode_txn_value

TID = "app"
MAX_TIMEOUT = 900_000


@dataclass
class _Producer:
    producer_id: int
    epoch: int


@dataclass
class _Model:
    current: _Producer | None = None
    issued: list[tuple[int, int]] = field(default_factory=list)
    """Every (producer id, epoch) given to a client, in order."""
    open_partitions: set[tuple[str, int]] = field(default_factory=set)
    ending: bool | None = None
    """The open transaction's end the client asked for (True commit), if any."""


class CoordinatorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.meta: ts.TxnMetadata | None = None
        self.log: list[bytes | None] = []
        """The values written for TID, in order (the last is what a reload reads)."""
        self.now = 1_000
        self.next_pid = 100
        self.model = _Model()
        self.pending: ts.Transition | None = None

    def _new_pid(self) -> int:
        self.next_pid += 1
        return self.next_pid

    def _write(self, transition: ts.Transition, succeed: bool) -> bool:
        assert self.meta is not None or transition.current.pending is not None
        self.meta = transition.current
        if not succeed:
            self.meta = ts.abort_transition(self.meta, transition)
            return False
        self.log.append(encode_txn_value(transition.target.log_value()))
        self.meta = ts.complete_transition(self.meta, transition)
        return True

    # -- rules -------------------------------------------------------------------------------

    @rule(succeed=st.booleans(), timeout=st.sampled_from([1_000, 60_000, MAX_TIMEOUT + 1]))
    def init_producer_id(self, succeed: bool, timeout: int) -> None:
        decision = ts.prepare_init_producer_id(
            self.meta,
            TID,
            timeout,
            max_timeout_ms=MAX_TIMEOUT,
            expected=None,
            new_producer_id=self._new_pid,
            now_ms=self.now,
        )
        if isinstance(decision, ts.Refuse):
            assert timeout > MAX_TIMEOUT or decision.error_code == ConcurrentTransactionsError.code
            return
        if decision.fence:
            # the open transaction is aborted first; the client is told to retry. The old
            # producer is fenced even if the write fails (its epoch is bumped in memory)
            self.model.current = None
            if self._write(decision, succeed):
                self.model.ending = False
                self._finish_markers()
            return
        if self._write(decision, succeed):
            assert self.meta is not None
            issued = (self.meta.producer_id, self.meta.producer_epoch)
            assert all(issued > old or issued[0] != old[0] for old in self.model.issued)
            assert issued not in self.model.issued
            self.model.issued.append(issued)
            self.model.current = _Producer(*issued)
            self.model.open_partitions = set()
            self.model.ending = None

    @rule(
        partitions=st.sets(st.tuples(st.sampled_from("xyz"), st.integers(0, 2)), min_size=1),
        stale=st.booleans(),
        succeed=st.booleans(),
    )
    def add_partitions(self, partitions: set[tuple[str, int]], stale: bool, succeed: bool) -> None:
        if self.model.current is None or self.meta is None:
            return
        epoch = self.model.current.epoch - (1 if stale else 0)
        decision = ts.prepare_add_partitions(
            self.meta, self.model.current.producer_id, epoch, partitions, self.now
        )
        if stale:
            assert isinstance(decision, ts.Refuse)
            assert decision.error_code == ProducerFencedError.code
            return
        if isinstance(decision, ts.Refuse):
            if decision.error_code == 0:
                assert partitions <= self.model.open_partitions
            else:
                assert self.model.ending is not None  # completing: CONCURRENT_TRANSACTIONS
            return
        if self._write(decision, succeed):
            self.model.open_partitions |= partitions

    @rule(commit=st.booleans(), succeed=st.booleans())
    def end_txn(self, commit: bool, succeed: bool) -> None:
        if self.model.current is None or self.meta is None:
            return
        decision = ts.prepare_end_txn(
            self.meta, self.model.current.producer_id, self.model.current.epoch, commit, self.now
        )
        if isinstance(decision, ts.Refuse):
            return
        assert self.model.open_partitions and self.model.ending is None
        if self._write(decision, succeed):
            self.model.ending = commit

    @precondition(
        lambda self: (
            self.meta is not None and self.meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT)
        )
    )
    @rule()
    def markers_written(self) -> None:
        self._finish_markers()

    def _finish_markers(self) -> None:
        assert self.meta is not None
        done = ts.prepare_complete(self.meta, self.now)
        self._write(done, True)
        assert self.meta.state is (S.COMPLETE_COMMIT if self.model.ending else S.COMPLETE_ABORT)
        assert not self.meta.partitions
        self.model.open_partitions = set()
        self.model.ending = None

    @rule(ms=st.integers(1, 120_000))
    def time_passes(self, ms: int) -> None:
        self.now += ms
        assert self.meta is None or self.meta.pending is None
        for meta in ts.timed_out([self.meta] if self.meta else [], self.now):
            if self._write(ts.prepare_timeout_abort(meta, self.now), True):
                self.model.current = None  # the producer's epoch is fenced
                self.model.ending = False
                self._finish_markers()

    @rule()
    def failover(self) -> None:
        """A new coordinator loads the last value written."""
        if not self.log:
            self.meta = None
            return
        value = decode_txn_value(self.log[-1])
        assert value is not None
        self.meta = ts.metadata_from_log(TID, value)
        if self.meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            # the new coordinator finishes what was decided
            self.model.ending = self.meta.state is S.PREPARE_COMMIT
            self._finish_markers()

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def nothing_is_left_pending(self) -> None:
        assert self.meta is None or self.meta.pending is None

    @invariant()
    def partitions_only_while_open(self) -> None:
        if self.meta is None:
            return
        if self.meta.state is S.ONGOING:
            assert self.meta.partitions == frozenset(self.model.open_partitions)
        elif self.meta.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            assert not self.meta.partitions

    @invariant()
    def the_log_holds_the_state(self) -> None:
        if self.meta is None or not self.log:
            return
        value = decode_txn_value(self.log[-1])
        if self.meta.failed_epoch_fence:  # bumped in memory only, never given to a client
            assert value is not None and value.producer_epoch == self.meta.producer_epoch - 1
            return
        assert value == self.meta.log_value()

    @rule()
    def a_fenced_producer_is_refused(self) -> None:
        if self.meta is None or self.model.current is not None or not self.model.issued:
            return
        old_pid, old_epoch = self.model.issued[-1]
        for decision in (
            ts.prepare_add_partitions(self.meta, old_pid, old_epoch, [("x", 0)], self.now),
            ts.prepare_end_txn(self.meta, old_pid, old_epoch, True, self.now),
        ):
            if (old_pid, old_epoch) != (self.meta.producer_id, self.meta.producer_epoch):
                assert isinstance(decision, ts.Refuse) and decision.error_code != 0

    @invariant()
    def only_the_newest_producer_is_current(self) -> None:
        if self.model.current is not None and self.meta is not None:
            assert (self.meta.producer_id, self.meta.producer_epoch) == (
                self.model.current.producer_id,
                self.model.current.epoch,
            )


TestCoordinatorMachine = CoordinatorMachine.TestCase
TestCoordinatorMachine.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)


def test_an_exhausted_epoch_rotates_the_producer_id() -> None:
    meta = ts.TxnMetadata(TID, 5, 32766, 60_000, S.COMPLETE_COMMIT)
    decision = ts.prepare_init_producer_id(
        meta,
        TID,
        60_000,
        max_timeout_ms=MAX_TIMEOUT,
        expected=None,
        new_producer_id=lambda: 6,
        now_ms=1,
    )
    assert isinstance(decision, ts.Transition)
    assert (decision.target.producer_id, decision.target.producer_epoch) == (6, 0)


def test_a_retried_init_with_the_previous_epoch_is_recognised() -> None:
    meta = ts.TxnMetadata(TID, 5, 4, 60_000, S.EMPTY, last_producer_epoch=3)
    decision = ts.prepare_init_producer_id(
        meta,
        TID,
        60_000,
        max_timeout_ms=MAX_TIMEOUT,
        expected=(5, 3),
        new_producer_id=lambda: 9,
        now_ms=1,
    )
    assert isinstance(decision, ts.Transition) and decision.target.producer_epoch == 4
    fenced = ts.prepare_init_producer_id(
        meta,
        TID,
        60_000,
        max_timeout_ms=MAX_TIMEOUT,
        expected=(5, 1),
        new_producer_id=lambda: 9,
        now_ms=1,
    )
    assert isinstance(fenced, ts.Refuse) and fenced.error_code == ProducerFencedError.code


def test_a_failed_epoch_fence_is_not_bumped_again() -> None:
    meta = ts.TxnMetadata(TID, 5, 2, 60_000, S.ONGOING, frozenset({("t", 0)}), start_ms=0)
    first = ts.prepare_timeout_abort(meta, 100_000)
    assert first.target.producer_epoch == 3
    after = ts.abort_transition(first.current, first)
    assert after.producer_epoch == 3 and after.failed_epoch_fence and after.pending is None
    second = ts.prepare_timeout_abort(after, 100_001)
    assert second.target.producer_epoch == 3
