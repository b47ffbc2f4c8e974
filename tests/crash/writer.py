"""A writer process for the crash tests: appends to a log until it is killed.

Usage: ``python -m tests.crash.writer LOG_DIR SEED``. Opens the log directory with a
``LogManager`` (recovering it after the previous kill), then appends batches forever. After
each append it prints one line, flushed at once::

    ACK <last offset> <recovery point> <active segment base> <active segment size at flush>

The last two fields describe the active segment as of the last flush, so the parent knows which
bytes were fsynced and may tear only what was not.
"""

from __future__ import annotations

import random
import sys

from odradek.clock import SystemClock
from odradek.records import Record, build_batch
from storage import LogConfig, LogManager
from tests.storage_helpers import value_for

CONFIG = LogConfig(segment_bytes=48 * 1024, index_interval_bytes=1024, flush_messages=97)
CODECS = ("none", "none", "gzip", "lz4", "zstd", "snappy")


def main() -> None:
    log_dir, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    manager = LogManager([log_dir], CONFIG, SystemClock())
    log = manager.get_or_create_log("crash", 0)
    flushed_base, flushed_size = log.active_segment.base_offset, log.active_segment.size
    last_rp = log.recovery_point
    appends = 0
    while True:
        first = log.log_end_offset
        count = rng.randint(1, 30)
        batch = build_batch(
            [
                Record(
                    f"k{first + i}".encode(),
                    value_for(first + i, rng.randint(1, 300)),
                    timestamp=1_000 + first + i,
                )
                for i in range(count)
            ],
            compression=rng.choice(CODECS),
        )
        info = log.append_as_leader(batch, leader_epoch=1)
        if log.recovery_point != last_rp:
            last_rp = log.recovery_point
            active = log.active_segment
            flushed_base = active.base_offset
            # the flush covered everything up to the LEO, i.e. the whole active segment
            flushed_size = active.size if log.recovery_point == log.log_end_offset else 0
        appends += 1
        if appends % 50 == 0:
            manager.checkpoint_recovery_points()
        print(f"ACK {info.last_offset} {last_rp} {flushed_base} {flushed_size}", flush=True)


if __name__ == "__main__":
    main()
