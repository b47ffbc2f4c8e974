"""Compaction of a transactional log agrees with an oracle of committed writes.

Transactional producers write keyed records and commit or abort, plain writes interleave, the
log rolls, is cleaned (up to its last stable offset) and reopened, time passes. After every
step, a read_committed consumer of the log below its last stable offset — Kafka's algorithm:
the aborted transactions of ``collect_aborted_transactions`` name the producers whose batches
to skip from each one's first offset until its ABORT marker — sees, key by key, exactly the
latest value the oracle says was committed there: aborted writes never show and never hide an
older value, committed ones win by offset. Markers never outlive ``delete.retention.ms`` past
the last data of their transaction by more than the passes it takes, and every ``.txnindex``
entry names a transaction whose marker is in its segment; a reopen rebuilds the same entries.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.clock import ManualClock
from odradek.records import (
    ControlRecordType,
    EndTransactionMarker,
    Record,
    build_batch,
    end_txn_marker_of,
    read_batches,
)
from storage import Log, LogConfig
from storage.config import CleanerConfig
from storage.log_cleaner import LogCleaner
from storage.transaction_index import AbortedTxn
from tests.unit.storage.txn_helpers import raw

PIDS = (21, 22, 23)
KEYS = 6
RETENTION = 1_000


class Oracle:
    """Every write by offset, and what each producer's open transaction wrote."""

    def __init__(self) -> None:
        self.committed: dict[int, tuple[bytes, bytes]] = {}  # offset -> (key, value)
        self.pending: dict[int, dict[int, tuple[bytes, bytes]]] = {}  # pid -> its open writes

    def table(self, below: int) -> dict[bytes, bytes]:
        out: dict[bytes, bytes] = {}
        for offset in sorted(self.committed):
            if offset < below:
                key, value = self.committed[offset]
                out[key] = value
        return out


def read_committed(log: Log, below: int) -> dict[bytes, bytes]:
    """The table a read_committed consumer builds from the log's start up to ``below``."""
    aborted = sorted(log.collect_aborted_transactions(0, below), key=lambda a: a.first_offset)
    skipping: set[int] = set()
    out: dict[bytes, bytes] = {}
    for batch in read_batches(raw(log)):
        if batch.base_offset >= below:
            break
        while aborted and aborted[0].first_offset <= batch.last_offset:
            skipping.add(aborted.pop(0).producer_id)
        if batch.is_control:
            if batch.records_count:
                marker = end_txn_marker_of(batch)
                if marker is not None and marker.control_type is ControlRecordType.ABORT:
                    skipping.discard(batch.producer_id)
            continue
        if batch.is_transactional and batch.producer_id in skipping:
            continue
        for r in batch.records():
            assert r.offset is not None and r.key is not None and r.value is not None
            if r.offset < below:
                out[r.key] = r.value
    return out


def _next_sequence(log: Log, pid: int) -> int:
    """The sequence the producer's next batch takes: after its last one, or 0 when the log
    forgot it (expired) or knows only a marker of it (Kafka expects 0 after that too)."""
    entry = log.producer_state().get(pid)
    return entry.last_seq + 1 if entry is not None else 0


def _index(log: Log) -> list[tuple[int, AbortedTxn]]:
    segments = log.segments()
    out = []
    for i, segment in enumerate(segments):
        upper = segments[i + 1].base_offset if i + 1 < len(segments) else log.log_end_offset
        for entry in segment.txn_index:
            assert segment.base_offset <= entry.last_offset < upper
            out.append((segment.base_offset, entry))
    return out


ops = st.lists(
    st.one_of(
        st.tuples(st.just("txn"), st.sampled_from(PIDS), st.integers(0, KEYS - 1)),
        st.tuples(st.just("txn"), st.sampled_from(PIDS), st.integers(0, KEYS - 1)),
        st.tuples(st.just("plain"), st.just(0), st.integers(0, KEYS - 1)),
        st.tuples(st.sampled_from(["commit", "abort"]), st.sampled_from(PIDS), st.just(0)),
        st.tuples(st.just("roll"), st.just(0), st.just(0)),
        st.tuples(st.just("clean"), st.just(0), st.just(0)),
        st.tuples(st.just("advance"), st.just(0), st.sampled_from([1, RETENTION, 3 * RETENTION])),
        st.tuples(st.just("reopen"), st.just(0), st.just(0)),
    ),
    min_size=1,
    max_size=50,
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=ops, segment_bytes=st.integers(250, 1200), end_with_abort=st.booleans())
def test_read_committed_after_compaction_matches_the_oracle(
    ops: list[tuple[str, int, int]], segment_bytes: int, end_with_abort: bool
) -> None:
    clock = ManualClock(wall_ms=1_700_000_000_000)
    tmp = Path(tempfile.mkdtemp())
    directory = tmp / "t-0"
    config = LogConfig(
        cleanup_policy="compact",
        segment_bytes=segment_bytes,
        file_delete_delay_ms=0,
        delete_retention_ms=RETENTION,
        producer_id_expiration_ms=2 * RETENTION,
    )
    cleaner = LogCleaner([tmp], CleanerConfig(dedupe_buffer_bytes=1 << 14), clock)
    log = Log.open(directory, config, clock)
    oracle = Oracle()
    tag = 0
    try:
        ending = [("abort" if end_with_abort else "commit", pid, 0) for pid in PIDS]
        for op, pid, arg in [*ops, *ending, ("clean", 0, 0), ("clean", 0, 0)]:
            tag += 1
            if op in ("txn", "plain"):
                key, value = f"k{arg}".encode(), f"{op}-{pid}-{tag}".encode()
                if op == "txn":
                    batch = build_batch(
                        [Record(key, value, timestamp=clock.wall_ms())],
                        producer_id=pid,
                        producer_epoch=0,
                        base_sequence=_next_sequence(log, pid),
                        is_transactional=True,
                    )
                else:
                    batch = build_batch([Record(key, value, timestamp=clock.wall_ms())])
                info = log.append_as_leader(batch, 0)
                if op == "txn":
                    oracle.pending.setdefault(pid, {})[info.first_offset] = (key, value)
                else:
                    oracle.committed[info.first_offset] = (key, value)
            elif op in ("commit", "abort"):
                control = ControlRecordType.COMMIT if op == "commit" else ControlRecordType.ABORT
                log.append_transaction_marker(pid, 0, EndTransactionMarker(control, 0), 0)
                writes = oracle.pending.pop(pid, {})
                if op == "commit":
                    oracle.committed.update(writes)
            elif op == "roll":
                log.roll()
            elif op == "clean":
                log.roll()
                log.update_high_watermark(log.log_end_offset)
                cleaner.clean_log(("t", 0), log)
            elif op == "advance":
                clock.advance(arg)
            elif op == "reopen":
                before = _index(log)
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
                assert _index(log) == before
            log.update_high_watermark(log.log_end_offset)
            lso = log.last_stable_offset()
            open_firsts = [min(w) for w in oracle.pending.values() if w]
            assert lso == min([*open_firsts, log.log_end_offset])
            assert read_committed(log, lso) == oracle.table(lso)
            _index(log)
        # every transaction is over and two passes ran: no aborted data is left anywhere
        assert log.last_stable_offset() == log.log_end_offset
        for stored in read_batches(raw(log)):
            if stored.is_transactional and not stored.is_control:
                for r in stored.records():
                    assert r.offset in oracle.committed, "aborted data outlived two passes"
    finally:
        log.close()
        shutil.rmtree(tmp)
