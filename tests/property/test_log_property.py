"""A log appended, truncated, rolled, flushed, closed and reopened behaves as a Python list.

The oracle is a list of batches ``(first_offset, values)``; truncation removes whole batches
(from the one containing the target), reopening after a clean stop scans nothing, reopening
after an unclean stop recovers everything that was written (a killed process loses nothing
that reached the page cache).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.clock import ManualClock
from odradek.records import Record, build_batch, read_batches
from storage import Log, LogConfig

Op = tuple[str, int, int]

ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 6), st.integers(0, 4)),
        st.tuples(st.just("truncate"), st.integers(0, 100), st.just(0)),
        st.tuples(st.just("roll"), st.just(0), st.just(0)),
        st.tuples(st.just("flush"), st.just(0), st.just(0)),
        st.tuples(st.just("reopen"), st.integers(0, 1), st.just(0)),
        st.tuples(st.just("read"), st.integers(0, 100), st.integers(1, 3000)),
    ),
    min_size=1,
    max_size=40,
)

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def _values(log: Log) -> list[tuple[int, bytes | None]]:
    out: list[tuple[int, bytes | None]] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        batches = list(read_batches(log.read(offset, 1 << 16).records))
        assert batches, f"no batch readable at {offset} below the LEO {log.log_end_offset}"
        for batch in batches:
            batch.validate()
            out.extend((r.offset, r.value) for r in batch.records() if r.offset >= offset)  # type: ignore[misc, operator]
            offset = batch.next_offset
    return out


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    ops=ops,
    segment_bytes=st.integers(300, 3000),
    index_interval=st.integers(0, 500),
    index_bytes=st.sampled_from([64, 120, 4096]),
)
def test_log_matches_a_list(
    ops: list[Op], segment_bytes: int, index_interval: int, index_bytes: int
) -> None:
    config = LogConfig(
        segment_bytes=segment_bytes,
        index_interval_bytes=index_interval,
        segment_index_bytes=index_bytes,
    )
    clock = ManualClock()
    root = Path(tempfile.mkdtemp())
    try:
        directory = root / "t-0"
        log = Log.open(directory, config, clock)
        model: list[tuple[int, list[bytes]]] = []  # (first offset, values) per batch
        counter = 0

        def leo() -> int:
            return model[-1][0] + len(model[-1][1]) if model else 0

        for op, a, b in ops:
            if op == "append":
                values = [f"v{counter + i}".encode() * (1 + (counter + i) % 7) for i in range(a)]
                counter += a
                batch = build_batch(
                    [Record(b"k", v, timestamp=clock.wall_ms() + i) for i, v in enumerate(values)],
                    compression=CODECS[b],
                )
                info = log.append_as_leader(batch, leader_epoch=1)
                assert info.first_offset == leo()
                model.append((info.first_offset, values))
                clock.advance(1)
            elif op == "truncate":
                target = a * leo() // 100
                log.truncate_to(target)
                model = [m for m in model if m[0] + len(m[1]) - 1 < target]
            elif op == "roll":
                log.roll()
            elif op == "flush":
                log.flush()
                assert log.recovery_point == log.log_end_offset
            elif op == "reopen":
                recovery_point = log.recovery_point
                if a:
                    log.flush()
                    log.close()
                else:
                    for segment in log.segments():  # killed: nothing trimmed or written
                        segment.close_handlers()
                log = Log.open(
                    directory,
                    config,
                    clock,
                    recovery_point=log.recovery_point if a else recovery_point,
                    had_clean_shutdown=bool(a),
                )
                if a:
                    assert log.recovery_bytes_read == 0
            elif op == "read" and leo() > 0:
                target = a * (leo() - 1) // 100
                fetched = log.read(target, b)
                batches = list(read_batches(fetched.records))
                assert batches and batches[0].base_offset <= target <= batches[0].last_offset
            assert log.log_end_offset == leo()
            for segment in log.segments():
                segment.offset_index.sanity_check()
        expected = [(first + i, v) for first, vs in model for i, v in enumerate(vs)]
        assert _values(log) == expected
        log.close()
    finally:
        shutil.rmtree(root)
