"""Transactional producers against a log that rolls, moves its high watermark, is truncated,
crashes (its unflushed tail torn) and is reopened: the producer state, the ``.txnindex`` and the
last stable offset always equal what a dumb model computes from the batches in the log.

The model is the list of batches the log holds, in order. From it alone:

* each producer's open transaction begins at its first transactional batch after its last
  marker; a marker ends it (a marker with none open ends nothing);
* each ABORT that ends a transaction is an aborted entry (producer, first offset, marker
  offset, last stable offset: the oldest first offset of another producer's open transaction
  at that point, else the marker's offset + 1), in the ``.txnindex`` of the segment holding
  the marker;
* the first unstable offset is the oldest first offset of the open transactions and of those
  completed by a marker at or above the high watermark; the last stable offset is that if
  below the high watermark, else the high watermark;
* ``collect_aborted_transactions(start, upper)`` lists exactly the aborted entries with
  ``last >= start`` and ``first < upper``;
* a non-transactional batch of a producer with an open transaction is refused
  (INVALID_TXN_STATE) and writes nothing.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.clock import ManualClock
from odradek.errors import InvalidTxnStateError
from odradek.records import (
    ControlRecordType,
    EndTransactionMarker,
    Record,
    build_batch,
    read_batches,
)
from storage import Log, LogConfig
from storage.transaction_index import AbortedTxn

TS = 1_700_000_000_000
PIDS = (11, 12, 13)


@dataclass(frozen=True)
class Stored:
    """A batch in the log: ``kind`` is plain (no producer), data, txn, commit or abort."""

    kind: str
    pid: int
    first: int
    last: int


def expected(batches: list[Stored], hw: int) -> tuple[dict[int, int], list[AbortedTxn], int | None]:
    """(open transactions by producer, aborted entries in log order, first unstable offset)."""
    open_: dict[int, int] = {}
    completed: list[tuple[int, int]] = []  # (first offset, marker offset)
    aborted: list[AbortedTxn] = []
    for b in batches:
        if b.kind == "txn":
            open_.setdefault(b.pid, b.first)
        elif b.kind in ("commit", "abort") and b.pid in open_:
            first = open_.pop(b.pid)
            completed.append((first, b.last))
            if b.kind == "abort":
                lso = min(open_.values(), default=b.last + 1)
                aborted.append(AbortedTxn(b.pid, first, b.last, lso))
    unstable = list(open_.values()) + [first for first, last in completed if last >= hw]
    return open_, aborted, min(unstable, default=None)


def _data(pid: int, seq: int, count: int, transactional: bool) -> bytes:
    records = [Record(b"k", f"{pid}-{seq + i}".encode(), timestamp=TS) for i in range(count)]
    return build_batch(
        records,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        is_transactional=transactional,
    )


def _stored(log: Log) -> list[Stored]:
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        batches = list(read_batches(log.read(offset, 1 << 20).records))
        for b in batches:
            if b.producer_id < 0:
                kind = "plain"
            elif b.is_control:
                kind = "abort" if b.records()[0].key == b"\x00\x00\x00\x00" else "commit"
            else:
                kind = "txn" if b.is_transactional else "data"
            out.append(Stored(kind, b.producer_id, b.base_offset, b.last_offset))
        offset = batches[-1].last_offset + 1
    return out


def check(log: Log, model: list[Stored]) -> None:
    assert _stored(log) == model
    hw = log.high_watermark
    open_, aborted, first_unstable = expected(model, hw)
    state = log.producer_state()
    assert {
        pid: e.current_txn_first_offset
        for pid, e in state.items()
        if e.current_txn_first_offset >= 0
    } == open_
    in_index = []
    for segment in log.segments():
        for entry in segment.txn_index:
            assert log.segments()[0].base_offset <= segment.base_offset <= entry.last_offset
            following = [s for s in log.segments() if s.base_offset > segment.base_offset]
            assert not following or entry.last_offset < following[0].base_offset
            in_index.append(entry)
    assert in_index == aborted
    assert log.first_unstable_offset() == first_unstable
    lso = first_unstable if first_unstable is not None and first_unstable < hw else hw
    assert log.last_stable_offset() == lso
    leo = log.log_end_offset
    for start, upper in ((0, leo), (leo // 3, leo // 2 + 1), (leo // 2, leo)):
        want = [a for a in aborted if a.last_offset >= start and a.first_offset < upper]
        assert log.collect_aborted_transactions(start, upper) == want


ops = st.lists(
    st.one_of(
        st.tuples(st.just("txn"), st.sampled_from(PIDS), st.integers(1, 3)),
        st.tuples(st.just("data"), st.sampled_from(PIDS), st.integers(1, 3)),
        st.tuples(st.just("plain"), st.just(0), st.integers(1, 3)),
        st.tuples(st.sampled_from(["commit", "abort"]), st.sampled_from(PIDS), st.just(0)),
        st.tuples(st.just("hw"), st.just(0), st.integers(0, 100)),
        st.tuples(st.just("roll"), st.just(0), st.just(0)),
        st.tuples(st.just("flush"), st.just(0), st.just(0)),
        st.tuples(st.just("truncate"), st.just(0), st.integers(0, 100)),
        st.tuples(st.just("reopen"), st.just(0), st.integers(0, 1)),
        st.tuples(st.just("crash"), st.just(0), st.integers(0, 200)),
    ),
    min_size=1,
    max_size=60,
)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=ops, segment_bytes=st.integers(300, 1500))
def test_transactions_match_the_model(ops: list[tuple[str, int, int]], segment_bytes: int) -> None:
    clock = ManualClock(wall_ms=TS)
    tmp = Path(tempfile.mkdtemp())
    directory = tmp / "p-0"
    config = LogConfig(segment_bytes=segment_bytes, file_delete_delay_ms=0)
    log = Log.open(directory, config, clock)
    model: list[Stored] = []
    try:
        for op, pid, arg in ops:
            sequences: dict[int, int] = {}
            for b in model:
                if b.kind in ("data", "txn"):
                    sequences[b.pid] = sequences.get(b.pid, 0) + b.last - b.first + 1
            open_ = expected(model, log.high_watermark)[0]
            leo = log.log_end_offset
            if op in ("txn", "data"):
                batch = _data(pid, sequences.get(pid, 0), arg, op == "txn")
                if op == "data" and pid in open_:
                    try:
                        log.append_as_leader(batch, 0)
                    except InvalidTxnStateError:
                        assert log.log_end_offset == leo
                    else:
                        raise AssertionError("a non-transactional batch joined a transaction")
                else:
                    info = log.append_as_leader(batch, 0)
                    model.append(Stored(op, pid, info.first_offset, info.last_offset))
            elif op == "plain":
                records = [Record(b"p", b"plain", timestamp=TS)] * arg
                info = log.append_as_leader(build_batch(records), 0)
                model.append(Stored("plain", -1, info.first_offset, info.last_offset))
            elif op in ("commit", "abort"):
                control = ControlRecordType.COMMIT if op == "commit" else ControlRecordType.ABORT
                info = log.append_transaction_marker(pid, 0, EndTransactionMarker(control, 0), 0)
                model.append(Stored(op, pid, info.first_offset, info.last_offset))
            elif op == "hw":
                hw = log.high_watermark + (leo - log.high_watermark) * arg // 100
                log.maybe_increment_high_watermark(hw)
            elif op == "roll":
                log.roll()
            elif op == "flush":
                log.flush()
            elif op == "truncate":
                target = leo * arg // 100
                log.truncate_to(target)
                model = [b for b in model if b.last < target]
            elif op == "reopen" and arg:
                hw = log.high_watermark
                log.flush()
                log.close()
                log = Log.open(
                    directory,
                    config,
                    clock,
                    recovery_point=log.log_end_offset,
                    had_clean_shutdown=True,
                    high_watermark=hw,
                )
            elif op in ("reopen", "crash"):
                # killed: nothing flushed, nothing closed; "crash" also tears the active
                # segment's unflushed tail by up to ``arg`` bytes
                hw, rp = log.high_watermark, log.recovery_point
                active = log.active_segment
                for segment in log.segments():
                    segment.close_handlers()
                if op == "crash" and active.size:
                    flushed = 0 if rp <= active.base_offset else None
                    path = active.log.path
                    size = path.stat().st_size
                    if flushed == 0:
                        with open(path, "r+b") as f:
                            f.truncate(max(0, size - arg))
                log = Log.open(directory, config, clock, recovery_point=rp, high_watermark=hw)
                model = [b for b in model if b.last < log.log_end_offset]
            check(log, model)
    finally:
        log.close()
        shutil.rmtree(tmp)
