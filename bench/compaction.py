"""Compaction benchmark: cleaning throughput against a raw read of the same bytes in the same
run, and the cleaner's peak memory against its configured dedupe buffer.

For each value size it writes a compacted log that was never cleaned — every key updated about
``--updates`` times, one record in a hundred a tombstone, batches of about 16 KiB — commits it
and runs the cleaner until the whole log is clean (one pass when the keys fit the buffer). It
prints:

* cleaning throughput: MiB of dirty log cleaned per second of passes (reading the dirty
  section twice, filtering every record, writing and fsyncing the survivors, swapping), as a
  ratio to a raw ``os.pread`` of the same segment files in chunks of the cleaner's I/O buffer;
* peak memory: the largest amount of Python-allocated memory (``tracemalloc``: the offset map's
  table, buffers, batches, every object) during a separate cleaning run of the same log,
  against ``dedupe_buffer_bytes``; what is above it is the fixed overhead (I/O buffers, a few
  batches). Page cache and the segments' mmapped indexes are not the cleaner's memory and are
  not counted; ``tracemalloc`` slows Python down, hence the separate run.

It ends with one JSON line holding every figure. Timings are the best of ``--repeat`` runs,
each on a fresh copy of the log, since the machine is shared and noisy.

    python -m bench.compaction [--dirty-mib 128] [--values 100,1000,10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
import time
import tracemalloc
from pathlib import Path

from odradek.clock import SystemClock
from odradek.records import Record, build_batch
from storage import Log, LogConfig
from storage.config import CleanerConfig
from storage.log_cleaner import LogCleaner

BATCH_BYTES = 16 * 1024
TP = ("bench", 0)
MIB = 1024 * 1024


def log_config(segment_bytes: int) -> LogConfig:
    # file_delete_delay_ms keeps its default (60 s): replaced segments are removed later, as
    # in Kafka, not by the pass.
    return LogConfig(
        cleanup_policy="compact",
        segment_bytes=segment_bytes,
        max_message_bytes=min(segment_bytes, 4 * MIB),
    )


def write_log(directory: Path, total: int, value_bytes: int, updates: int, segment: int) -> int:
    """A never-cleaned compacted log of about ``total`` bytes; returns its number of keys."""
    rng = random.Random(1)
    per_batch = max(1, BATCH_BYTES // (value_bytes + 30))
    records = max(per_batch, total // (value_bytes + 30))
    keys = max(1, records // updates)
    value = rng.randbytes(value_bytes)
    log = Log.open(directory / "bench-0", log_config(segment), SystemClock())
    now = 1_700_000_000_000
    while log.size < total:
        batch = [
            Record(
                b"key-%09d" % rng.randrange(keys),
                None if rng.random() < 0.01 else value,
                timestamp=now,
            )
            for _ in range(per_batch)
        ]
        log.append_as_leader(build_batch(batch), leader_epoch=0)
    log.roll()
    log.flush()
    log.close()
    return keys


def open_copy(origin: Path, scratch: Path, name: str, segment: int) -> Log:
    root = scratch / name
    shutil.copytree(origin, root)
    log = Log.open(root / "bench-0", log_config(segment), SystemClock(), had_clean_shutdown=True)
    log.update_high_watermark(log.log_end_offset)
    return log


def raw_read(log: Log, chunk: int) -> tuple[float, int]:
    """Seconds to pread every non-active segment file in ``chunk``-byte reads, and the bytes."""
    total = 0
    start = time.perf_counter()
    for segment in log.segments()[:-1]:
        fd = os.open(segment.log.path, os.O_RDONLY)
        try:
            position = 0
            while True:
                data = os.pread(fd, chunk, position)
                if not data:
                    break
                position += len(data)
        finally:
            os.close(fd)
        total += position
    return time.perf_counter() - start, total


def clean_fully(log: Log, cleaner: LogCleaner) -> int:
    passes = 0
    while True:
        stats = cleaner.clean_log(TP, log)
        assert stats is not None, "a pass failed"
        passes += 1
        if stats.end_offset == log.log_end_offset:
            return passes


def bench_value_size(
    args: argparse.Namespace, value_bytes: int, scratch: Path
) -> dict[str, object]:
    segment = args.segment_mib * MIB
    config = CleanerConfig(
        dedupe_buffer_bytes=args.dedupe_mib * MIB, io_buffer_bytes=args.io_buffer_kib * 1024
    )
    origin = scratch / f"origin-{value_bytes}"
    keys = write_log(origin, args.dirty_mib * MIB, value_bytes, args.updates, segment)
    best_raw = best_clean = float("inf")
    dirty_bytes = kept_bytes = passes = 0
    for run in range(args.repeat):
        log = open_copy(origin, scratch, f"run-{value_bytes}-{run}", segment)
        raw, dirty_bytes = raw_read(log, config.io_buffer_bytes)
        best_raw = min(best_raw, raw)
        cleaner = LogCleaner([log.dir.parent], config, SystemClock())
        cleaner.allocate_offset_map()  # once per cleaner, at startup, as Kafka does
        start = time.perf_counter()
        passes = clean_fully(log, cleaner)
        best_clean = min(best_clean, time.perf_counter() - start)
        kept_bytes = log.size
        log.close()
        shutil.rmtree(log.dir.parent)

    log = open_copy(origin, scratch, f"memory-{value_bytes}", segment)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        cleaner = LogCleaner([log.dir.parent], config, SystemClock())
        clean_fully(log, cleaner)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    log.close()
    shutil.rmtree(log.dir.parent)
    shutil.rmtree(origin)
    return {
        "value_bytes": value_bytes,
        "keys": keys,
        "dirty_bytes": dirty_bytes,
        "kept_bytes": kept_bytes,
        "passes": passes,
        "raw_read_mib_s": round(dirty_bytes / best_raw / MIB, 1),
        "clean_mib_s": round(dirty_bytes / best_clean / MIB, 1),
        "ratio": round(best_raw / best_clean, 3),
        "peak_bytes": peak,
        "dedupe_buffer_bytes": config.dedupe_buffer_bytes,
        "overhead_bytes": peak - config.dedupe_buffer_bytes,
    }


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dirty-mib", type=int, default=128, help="log size per value size")
    parser.add_argument("--values", default="100,1000,10000", help="value sizes, bytes")
    parser.add_argument("--updates", type=int, default=10, help="records per key")
    parser.add_argument("--segment-mib", type=int, default=64, help="segment_bytes")
    parser.add_argument("--dedupe-mib", type=int, default=128, help="dedupe_buffer_bytes")
    parser.add_argument("--io-buffer-kib", type=int, default=512, help="io_buffer_bytes")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per value size")
    parser.add_argument("--dir", type=Path, default=None, help="scratch directory")
    args = parser.parse_args(argv)

    scratch = Path(tempfile.mkdtemp(prefix="odradek-bench-compaction-", dir=args.dir))
    try:
        results = [
            bench_value_size(args, int(v), scratch) for v in args.values.split(",") if v.strip()
        ]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    for r in results:
        print(
            f"values of {r['value_bytes']} bytes, {r['keys']} keys, {r['dirty_bytes']} dirty "
            f"bytes -> {r['kept_bytes']} in {r['passes']} pass(es): cleaned "
            f"{r['clean_mib_s']} MiB/s vs raw pread {r['raw_read_mib_s']} MiB/s -> ratio "
            f"{r['ratio']}; peak memory {r['peak_bytes']} bytes for a "
            f"{r['dedupe_buffer_bytes']}-byte buffer (overhead {r['overhead_bytes']})"
        )
    figures: dict[str, object] = {
        "dirty_mib": args.dirty_mib,
        "updates_per_key": args.updates,
        "io_buffer_bytes": args.io_buffer_kib * 1024,
        "results": results,
        "min_ratio": min(float(str(r["ratio"])) for r in results),
        "max_overhead_bytes": max(int(str(r["overhead_bytes"])) for r in results),
    }
    print(json.dumps(figures, sort_keys=True))
    return figures


if __name__ == "__main__":
    main()
