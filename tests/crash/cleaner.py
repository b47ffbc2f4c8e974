"""A cleaning process for the crash tests: compacts a log, pass after pass, until it is killed.

Usage: ``python -m tests.crash.cleaner LOG_ROOT SEED ROUND``. Opens ``LOG_ROOT/table-0``
(recovering it and finishing or abandoning a swap the previous kill interrupted), prints
``READY``, then forever: appends the planned records (:func:`planned`: the record at every
offset is a function of the seed and the offset, so the parent knows what any offset holds),
rolls, commits, runs one cleaning pass, prints ``PASS <end offset> <groups>`` and moves its
clock on, so that tombstones reach their delete horizon a few passes later.

Small segments, indexes and dedupe buffer: a pass swaps many groups and rarely covers the whole
dirty section, so a kill at a random moment lands in every step of the protocol.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from odradek.clock import ManualClock
from storage import Log, LogConfig
from storage.config import CleanerConfig
from storage.log_cleaner import LogCleaner
from tests.unit.storage.compaction_helpers import keyed_batch

CONFIG = LogConfig(
    cleanup_policy="compact",
    segment_bytes=6 * 1024,
    segment_index_bytes=4096,
    index_interval_bytes=512,
    delete_retention_ms=5_000,
    file_delete_delay_ms=0,
)
CLEANER = CleanerConfig(dedupe_buffer_bytes=4096, io_buffer_bytes=4096)
KEYS = 300
INITIAL_RECORDS = 2_000
RECORDS_PER_CYCLE = 40
CODECS = ("none", "none", "gzip", "lz4", "zstd", "snappy")
WALL_START = 1_700_000_000_000


def planned(seed: int, offset: int) -> tuple[bytes, bytes | None]:
    """The record written at ``offset``: a key among ``KEYS``, a tombstone one time in eight."""
    rng = random.Random(seed * 1_000_003 + offset)
    key = f"key-{rng.randrange(KEYS):04d}".encode()
    if rng.random() < 0.125:
        return key, None
    return key, f"{offset}:".encode() + rng.randbytes(rng.randint(1, 120))


def append_planned(log: Log, seed: int, upto: int, clock: ManualClock) -> None:
    while log.log_end_offset < upto:
        first = log.log_end_offset
        rng = random.Random(seed + first)
        count = min(upto - first, rng.randint(1, 6))
        pairs = [planned(seed, first + i) for i in range(count)]
        log.append_as_leader(
            keyed_batch(pairs, clock.wall_ms(), rng.choice(CODECS)), leader_epoch=0
        )


def main() -> None:
    root, seed, round_ = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    clock = ManualClock(wall_ms=WALL_START + round_ * 1_000_000)
    log = Log.open(root / "table-0", CONFIG, clock, recovery_point=0)
    log.update_high_watermark(log.log_end_offset)
    cleaner = LogCleaner([root], CLEANER, clock)
    print("READY", flush=True)
    append_planned(log, seed, INITIAL_RECORDS, clock)
    while True:
        append_planned(log, seed, log.log_end_offset + RECORDS_PER_CYCLE, clock)
        log.roll()
        log.update_high_watermark(log.log_end_offset)
        stats = cleaner.clean_log(("table", 0), log)
        assert stats is not None, "a pass failed"
        print(f"PASS {stats.end_offset} {stats.groups}", flush=True)
        clock.advance(2_000)


if __name__ == "__main__":
    main()
