"""Storage benchmark: append, read and recovery, each against a baseline measured in the same run.

For 100-byte records in 16 KiB batches it prints:

* append throughput as a ratio to a raw sequential ``os.write`` of the same bytes;
* read throughput (``Log.read`` of 1 MiB fetches) as a ratio to a raw ``os.pread`` of the same
  byte ranges from the same file;
* the bytes recovery reads after a clean and after an unclean stop of a log holding
  ``--recovery-mib`` of data, beside the bytes after the recovery point and the segment size.

It ends with one JSON line holding every figure. Each timing is the best of ``--repeat``
alternating runs, since the machine is shared and noisy.

    python -m bench.storage [--total-mib 256] [--recovery-mib 1024] [--segment-mib 128]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from odradek.clock import SystemClock
from odradek.records import Record, build_batch
from storage import Log, LogConfig

RECORD_BYTES = 100
BATCH_BYTES = 16 * 1024
FETCH_BYTES = 1024 * 1024


def make_batch() -> bytes:
    """A client batch of 100-byte records, as close to 16 KiB as whole records allow."""
    records: list[Record] = []
    value = os.urandom(RECORD_BYTES)
    while True:
        candidate = [*records, Record(key=None, value=value, timestamp=1_700_000_000_000)]
        if len(build_batch(candidate)) > BATCH_BYTES:
            return build_batch(records)
        records = candidate


def bench_append(directory: Path, batch: bytes, count: int) -> tuple[float, float]:
    """Seconds for ``count`` raw writes and for ``count`` leader appends of ``batch``."""
    raw_path = directory / "raw.bin"
    fd = os.open(raw_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    start = time.perf_counter()
    for _ in range(count):
        os.write(fd, batch)
    raw = time.perf_counter() - start
    os.close(fd)
    raw_path.unlink()

    log_dir = directory / "append-0"
    log = Log.open(log_dir, LogConfig(), SystemClock())
    start = time.perf_counter()
    for _ in range(count):
        log.append_as_leader(batch, leader_epoch=0)
    appended = time.perf_counter() - start
    log.close()
    shutil.rmtree(log_dir)
    return raw, appended


def bench_read(directory: Path, batch: bytes, count: int, repeat: int) -> tuple[float, float, int]:
    """Best seconds to read the whole log in 1 MiB fetches: raw ``pread`` vs ``Log.read``."""
    log_dir = directory / "read-0"
    log = Log.open(log_dir, LogConfig(), SystemClock())
    for _ in range(count):
        log.append_as_leader(batch, leader_epoch=0)
    log.flush()
    # The fetch plan: each fetch starts at the first offset its predecessor did not complete.
    plan: list[int] = []
    ranges: list[tuple[int, int]] = []
    per_batch = log.log_end_offset // count
    offset = 0
    while offset < log.log_end_offset:
        info = log.read(offset, FETCH_BYTES)
        plan.append(offset)
        meta = info.fetch_offset_metadata
        ranges.append((meta.relative_position, len(info.records)))
        offset += (len(info.records) // len(batch)) * per_batch
    segment_file = log.active_segment.log.path
    total = sum(size for _, size in ranges)
    best_raw = best_log = float("inf")
    fd = os.open(segment_file, os.O_RDONLY)
    for _ in range(repeat):
        start = time.perf_counter()
        for position, size in ranges:
            os.pread(fd, size, position)
        best_raw = min(best_raw, time.perf_counter() - start)
        start = time.perf_counter()
        for offset in plan:
            log.read(offset, FETCH_BYTES)
        best_log = min(best_log, time.perf_counter() - start)
    os.close(fd)
    log.close()
    shutil.rmtree(log_dir)
    return best_raw, best_log, total


def bench_recovery(
    directory: Path, batch: bytes, total_bytes: int, segment_bytes: int
) -> dict[str, int]:
    """Bytes recovery reads after a clean and after an unclean stop."""
    log_dir = directory / "recovery-0"
    config = LogConfig(segment_bytes=segment_bytes)
    clock = SystemClock()
    log = Log.open(log_dir, config, clock)
    while log.size < total_bytes:
        log.append_as_leader(batch, leader_epoch=0)
    log.flush()
    leo = log.log_end_offset
    log.close()
    clean = Log.open(log_dir, config, clock, recovery_point=leo, had_clean_shutdown=True)
    clean_bytes = clean.recovery_bytes_read
    # Unflushed data on top, then a kill: files left untrimmed, no clean-shutdown marker.
    # A new segment a third full and flushed (the recovery point mid-segment), then another
    # third that was never flushed.
    clean.roll()
    third = segment_bytes // len(batch) // 3
    for _ in range(third):
        clean.append_as_leader(batch, leader_epoch=0)
    clean.flush()
    flushed_bytes = clean.size
    recovery_point = clean.recovery_point
    for _ in range(third):
        clean.append_as_leader(batch, leader_epoch=0)
    data_bytes = clean.size
    after_recovery_point = data_bytes - flushed_bytes
    for segment in clean.segments():
        segment.close_handlers()
    unclean = Log.open(log_dir, config, clock, recovery_point=recovery_point)
    figures = {
        "log_bytes": data_bytes,
        "segment_bytes": segment_bytes,
        "segments": unclean.num_segments,
        "clean_stop_recovery_bytes_read": clean_bytes,
        "unclean_stop_recovery_bytes_read": unclean.recovery_bytes_read,
        "unclean_stop_bytes_after_recovery_point": after_recovery_point,
        "unclean_stop_bound_bytes": after_recovery_point + segment_bytes,
    }
    unclean.close()
    shutil.rmtree(log_dir)
    return figures


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-mib", type=int, default=256, help="bytes appended and read")
    parser.add_argument("--recovery-mib", type=int, default=1024, help="log size for recovery")
    parser.add_argument("--segment-mib", type=int, default=128, help="segment size for recovery")
    parser.add_argument("--repeat", type=int, default=3, help="alternating runs per timing")
    parser.add_argument("--dir", type=Path, default=None, help="scratch directory")
    args = parser.parse_args(argv)

    batch = make_batch()
    count = args.total_mib * 1024 * 1024 // len(batch)
    scratch = Path(tempfile.mkdtemp(prefix="odradek-bench-", dir=args.dir))
    try:
        raw_append = log_append = float("inf")
        for _ in range(args.repeat):
            raw, appended = bench_append(scratch, batch, count)
            raw_append, log_append = min(raw_append, raw), min(log_append, appended)
        raw_read, log_read, read_bytes = bench_read(scratch, batch, count, args.repeat)
        recovery = bench_recovery(
            scratch, batch, args.recovery_mib * 1024 * 1024, args.segment_mib * 1024 * 1024
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    appended_bytes = count * len(batch)
    mib = 1024 * 1024
    figures: dict[str, object] = {
        "batch_bytes": len(batch),
        "appended_bytes": appended_bytes,
        "append_raw_mib_s": round(appended_bytes / raw_append / mib, 1),
        "append_log_mib_s": round(appended_bytes / log_append / mib, 1),
        "append_ratio": round(raw_append / log_append, 3),
        "read_bytes": read_bytes,
        "read_raw_mib_s": round(read_bytes / raw_read / mib, 1),
        "read_log_mib_s": round(read_bytes / log_read / mib, 1),
        "read_ratio": round(raw_read / log_read, 3),
        **recovery,
    }
    print(f"batch: {len(batch)} bytes of {RECORD_BYTES}-byte records")
    print(
        f"append: {figures['append_log_mib_s']} MiB/s vs raw os.write "
        f"{figures['append_raw_mib_s']} MiB/s -> ratio {figures['append_ratio']}"
    )
    print(
        f"read:   {figures['read_log_mib_s']} MiB/s vs raw os.pread "
        f"{figures['read_raw_mib_s']} MiB/s -> ratio {figures['read_ratio']}"
    )
    print(
        f"recovery of {recovery['log_bytes']} bytes in {recovery['segments']} segments: "
        f"clean stop read {recovery['clean_stop_recovery_bytes_read']} bytes; unclean stop "
        f"read {recovery['unclean_stop_recovery_bytes_read']} bytes (bytes after the recovery "
        f"point {recovery['unclean_stop_bytes_after_recovery_point']}, bound "
        f"{recovery['unclean_stop_bound_bytes']})"
    )
    print(json.dumps(figures, sort_keys=True))
    return figures


if __name__ == "__main__":
    main()
