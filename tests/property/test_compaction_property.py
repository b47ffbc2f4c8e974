"""A compacted log appended to, cleaned, rolled, truncated, reopened and aged on a clock agrees
with an oracle: a dict of the latest record of every key, with tombstone horizons.

After every step: every record in the log is the one written at its offset, the latest record
of every key that has a value is there, and the table (latest values, tombstones deleting)
equals the oracle's. After every cleaning pass that reached offset ``E``: below ``E`` no key
appears twice; every tombstone below ``E`` carries a delete horizon set by some pass
(``pass time + delete_retention_ms``) that has not passed yet; and a tombstone that was the
latest record of its key and disappeared had, before the pass, a horizon the pass had reached.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from odradek.clock import ManualClock
from storage import Log, LogConfig
from storage.config import CleanerConfig
from storage.log_cleaner import LogCleaner
from tests.unit.storage.compaction_helpers import Oracle, Stored, keyed_batch, read_log

TP = ("t", 0)
RETENTION = 1_000
CODECS = ["none", "none", "gzip", "lz4", "zstd", "snappy"]

record = st.tuples(st.integers(0, 11), st.booleans(), st.booleans())  # key, tombstone, big
append = st.tuples(
    st.just("append"), st.lists(record, min_size=1, max_size=4), st.sampled_from(CODECS)
)
# Many records at once, their keys, tombstones, sizes, batching and codecs drawn from a seed:
# enough distinct keys to fill the small maps below, which one-record appends rarely do.
burst = st.tuples(st.just("burst"), st.integers(1, 40), st.integers(0, 2**32))
advance = st.one_of(
    st.sampled_from([1, RETENTION // 2, RETENTION - 1, RETENTION]),
    st.integers(0, 2 * RETENTION),
)
# A burst, committed and cleaned, then time passes: cycles of these walk tombstones through
# their horizons, to the millisecond.
cycle = st.tuples(
    st.just("cycle"),
    st.tuples(st.integers(1, 12), st.integers(0, 2**32)),
    st.sampled_from([1, RETENTION - 1, RETENTION]),
)
ops = st.lists(
    st.one_of(
        append,
        append,
        burst,
        st.tuples(st.just("roll"), st.none(), st.none()),
        st.tuples(st.just("commit"), st.floats(0, 1), st.none()),
        st.tuples(st.just("commit"), st.just(1.0), st.none()),
        st.tuples(st.just("clean"), st.none(), st.none()),
        st.tuples(st.just("advance"), advance, st.none()),
        cycle,
        cycle,
        cycle,
        cycle,
        st.tuples(st.just("truncate"), st.floats(0, 1), st.none()),
        st.tuples(st.just("reopen"), st.booleans(), st.none()),
    ),
    min_size=8,
    max_size=50,
)


class Model:
    def __init__(self, root: Path, config: LogConfig, cleaner_config: CleanerConfig) -> None:
        self.root = root
        self.config = config
        self.cleaner_config = cleaner_config
        self.clock = ManualClock()
        self.log = Log.open(root / "t-0", config, self.clock)
        self.cleaner = LogCleaner([root], cleaner_config, self.clock)
        self.oracle = Oracle()
        self.pass_times: list[int] = []

    def append(self, pairs: list[tuple[bytes, bytes | None]], codec: str) -> None:
        batch = keyed_batch(pairs, self.clock.wall_ms(), codec)
        info = self.log.append_as_leader(batch, leader_epoch=0)
        self.oracle.append(info.first_offset, pairs)

    def burst(self, count: int, seed: int) -> None:
        rng = random.Random(seed)
        left = count
        while left:
            n = min(left, rng.randint(1, 5))
            left -= n
            pairs = [
                (
                    f"k{rng.randrange(12)}".encode(),
                    None if rng.random() < 0.2 else rng.randbytes(rng.choice([3, 40, 150])),
                )
                for _ in range(n)
            ]
            self.append(pairs, rng.choice(CODECS))

    def tombstones(self, records: list[Stored]) -> dict[int, int | None]:
        return {r.offset: r.horizon for r in records if r.value is None}

    def is_latest(self, offset: int) -> bool:
        key = self.oracle.written[offset][0]
        return self.oracle.latest[key] == offset

    def clean(self) -> int:
        """One pass, checked; returns where it ended."""
        before = self.tombstones(read_log(self.log))
        stats = self.cleaner.clean_log(TP, self.log)
        assert stats is not None
        now = self.clock.wall_ms()
        if stats.groups:
            self.pass_times.append(now)
        after_records = read_log(self.log)
        after = self.tombstones(after_records)
        end = stats.end_offset
        if stats.groups:
            event("a pass rewrote segments")
        if end < stats.first_uncleanable_offset:
            event("a pass ended early: the map was full")
        for offset, horizon in before.items():
            if offset not in after and self.is_latest(offset):
                event("a tombstone outlived its horizon and went")
                assert horizon is not None and now >= horizon, (
                    f"tombstone {offset} dropped at {now} with horizon {horizon}"
                )
        horizons = {t + RETENTION for t in self.pass_times}
        for offset, horizon in after.items():
            if offset < end and stats.groups:  # the pass rewrote every segment below its end
                assert horizon is not None and horizon > now, (offset, horizon, now)
            assert horizon is None or horizon in horizons
        below = [r.key for r in after_records if r.offset < end]
        assert len(below) == len(set(below)), "a key twice in the cleaned section"
        return end

    def truncate(self, fraction: float) -> None:
        # Followers truncate at or above the high watermark: the cleaner never saw that part.
        hw, leo = self.log.high_watermark, self.log.log_end_offset
        self.log.truncate_to(hw + int((leo - hw) * fraction))
        new_leo = self.log.log_end_offset
        written = {o: kv for o, kv in self.oracle.written.items() if o < new_leo}
        self.oracle = Oracle()
        for offset in sorted(written):
            self.oracle.append(offset, [written[offset]])

    def reopen(self, clean: bool) -> None:
        log = self.log
        hw, recovery_point = log.high_watermark, log.recovery_point
        if clean:
            log.flush()
            log.close()
            recovery_point = log.log_end_offset
        else:
            for segment in log.segments():
                segment.close_handlers()
        self.log = Log.open(
            self.root / "t-0",
            self.config,
            self.clock,
            recovery_point=recovery_point,
            had_clean_shutdown=clean,
            high_watermark=hw,
        )
        self.cleaner = LogCleaner([self.root], self.cleaner_config, self.clock)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
# A tombstone cleaned, then cleaned again one millisecond before its horizon: it must stay.
@example(
    ops=[("append", [(0, True, False)], "none"), ("cycle", (1, 5), 999), ("cycle", (1, 7), 0)],
    segment_bytes=1000,
    load_factor=0.9,
    min_lag=0,
)
@given(
    ops=ops,
    segment_bytes=st.integers(1000, 4000),
    load_factor=st.sampled_from([0.05, 0.2, 0.9]),
    min_lag=st.sampled_from([0, 0, 500]),
)
def test_compacted_log_matches_the_oracle(ops, segment_bytes, load_factor, min_lag):
    config = LogConfig(
        cleanup_policy="compact",
        segment_bytes=segment_bytes,
        segment_index_bytes=4096,
        index_interval_bytes=100,
        delete_retention_ms=RETENTION,
        min_compaction_lag_ms=min_lag,
        file_delete_delay_ms=0,
    )
    cleaner_config = CleanerConfig(dedupe_buffer_bytes=1024, dedupe_buffer_load_factor=load_factor)
    root = Path(tempfile.mkdtemp())
    try:
        m = Model(root, config, cleaner_config)
        for op, a, b in ops:
            if op == "burst":
                m.burst(a, b)
            elif op == "cycle":
                m.burst(*a)
                m.log.roll()
                m.log.update_high_watermark(m.log.log_end_offset)
                m.clean()
                m.clock.advance(b)
            elif op == "append":
                value = f"v{m.log.log_end_offset}".encode()
                pairs = [
                    (f"k{k}".encode(), None if dead else value * (1 + 30 * big))
                    for k, dead, big in a
                ]
                m.append(pairs, b)
            elif op == "roll":
                m.log.roll()
            elif op == "commit":
                hw, leo = m.log.high_watermark, m.log.log_end_offset
                m.log.maybe_increment_high_watermark(hw + round((leo - hw) * a))
            elif op == "clean":
                m.clean()
            elif op == "advance":
                m.clock.advance(a)
            elif op == "truncate":
                m.truncate(a)
            elif op == "reopen":
                m.reopen(a)
            m.oracle.check(m.log)
        # Whatever happened, enough passes leave every key once below the high watermark.
        m.log.roll()
        m.log.update_high_watermark(m.log.log_end_offset)
        m.clock.advance(10 * RETENTION)
        while m.clean() != m.log.log_end_offset:
            m.oracle.check(m.log)
        m.clock.advance(10 * RETENTION)
        m.log.append_as_leader(keyed_batch([(b"last", b"x")], m.clock.wall_ms()), leader_epoch=0)
        m.oracle.append(m.log.log_end_offset - 1, [(b"last", b"x")])
        m.log.roll()
        m.log.update_high_watermark(m.log.log_end_offset)
        if min_lag:
            m.clock.advance(min_lag)
        m.clean()
        records = m.oracle.check(m.log)
        keys = [r.key for r in records]
        assert len(keys) == len(set(keys))
        assert all(r.value is not None for r in records), "tombstones outlived their horizon"
        m.log.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
