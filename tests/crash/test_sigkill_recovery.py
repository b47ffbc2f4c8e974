"""Crash tests with real processes: a writer killed with SIGKILL at random moments.

After each kill the parent may also damage the unflushed tail of the active segment, as a
power loss could (a torn tail, appended garbage, a flipped byte), then reopens the log and
checks: every flushed record is still there, every record before the damage is still there,
the records form exactly the writer's sequence from offset 0 (nothing invalid, nothing
reordered), every batch passes its CRC, and the indexes pass their sanity checks.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from odradek.clock import ManualClock
from storage import LogManager
from storage.file_records import FileRecords
from tests.crash.writer import CONFIG
from tests.storage_helpers import all_records, value_for

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 12


def _run_writer_until_killed(log_dir: Path, seed: int, acks_wanted: int) -> list[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.crash.writer", str(log_dir), str(seed)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if len(lines) >= acks_wanted:
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, f"writer died on its own: {err}"
    assert lines, f"the writer acknowledged nothing: {err}"
    return lines


# Kafka's batch v2 leaves two fields outside its CRC-32C: the base offset (bytes 0-7) and the
# partition leader epoch (bytes 12-15). A flipped bit there yields a batch that every reader of
# the format, Kafka's included, must take as valid (an offset that jumps ahead by 2**k is
# indistinguishable from a compaction gap), so the flips below land on CRC-covered bytes, the
# length, the magic or the CRC itself.
_OUTSIDE_CRC = (range(8), range(12, 16))
_FIRST_COVERED = 21  # attributes: the first byte the CRC covers


def _covered(position: int, starts: list[int]) -> int:
    """``position`` moved, if it falls in a field outside the CRC, to its batch's attributes."""
    start = max((s for s in starts if s <= position), default=None)
    if start is not None and any(position - start in field for field in _OUTSIDE_CRC):
        return start + _FIRST_COVERED
    return position


def _damage(
    segment_file: Path, protected: int, starts: list[int], rng: random.Random
) -> tuple[str, int]:
    """Damage bytes at or after ``protected``; returns (kind, first damaged position)."""
    size = segment_file.stat().st_size
    if size <= protected:
        return "none", size
    position = rng.randint(protected, size - 1)
    kind = rng.choice(["tear", "garbage", "flip", "none"])
    if kind == "tear":
        with open(segment_file, "r+b") as f:
            f.truncate(position)
    elif kind == "garbage":
        with open(segment_file, "ab") as f:
            f.write(rng.randbytes(rng.randint(1, 200)))
        position = size
    elif kind == "flip":
        position = _covered(position, starts)
        with open(segment_file, "r+b") as f:
            f.seek(position)
            byte = f.read(1)[0]
            f.seek(position)
            f.write(bytes([byte ^ (1 << rng.randint(0, 7))]))
    else:
        position = size
    return kind, position


@pytest.mark.crash
def test_sigkill_then_damage_loses_nothing_flushed_or_before_the_damage(tmp_path):
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    seed = rng.randint(0, 2**31)
    print(f"crash test seed {seed}")
    rng = random.Random(seed)
    log_dir = tmp_path / "logs"
    for round_ in range(ROUNDS):
        lines = _run_writer_until_killed(log_dir, seed + round_, rng.randint(1, 400))
        _, last_acked, recovery_point, flushed_base, flushed_size = lines[-1].split()
        last_acked_offset = int(last_acked)
        flushed_offset = int(recovery_point)
        partition_dir = log_dir / "crash-0"
        segment_files = sorted(partition_dir.glob("*.log"))
        active_file = segment_files[-1]
        active_base = int(active_file.name[:20])
        protected = int(flushed_size) if active_base == int(flushed_base) else 0
        # the batches of the active segment as they were, to know what precedes the damage
        before = FileRecords(active_file)
        headers = list(before.batch_headers())
        ends = [(pos + b.size_in_bytes, b.last_offset) for pos, b in headers]
        before.close_handler()
        kind, damaged_at = _damage(active_file, protected, [pos for pos, _ in headers], rng)
        intact_last = max(
            [last for end, last in ends if end <= damaged_at], default=active_base - 1
        )

        manager = LogManager([log_dir], CONFIG, ManualClock())
        log = manager.get_log("crash", 0)
        assert log is not None
        context = f"seed {seed} round {round_} damage {kind}@{damaged_at}"
        assert log.log_end_offset >= flushed_offset, context
        assert log.log_end_offset >= intact_last + 1, context
        if kind == "none":
            # a killed process loses nothing that reached the page cache
            assert log.log_end_offset >= last_acked_offset + 1, context
        records = all_records(log)
        offsets = [o for o, _ in records]
        first_wrong = next((i for i, o in enumerate(offsets) if o != i), len(offsets))
        assert first_wrong == len(offsets) == log.log_end_offset, (
            f"{context}: {len(offsets)} records, LEO {log.log_end_offset}, "
            f"first wrong offset at index {first_wrong}"
        )
        for offset, value in records:
            assert value is not None and value.startswith(value_for(offset, 300)[: len(value)])
        for segment in log.segments():
            segment.offset_index.sanity_check()
            segment.time_index.sanity_check()
        manager.checkpoint_recovery_points()
        # leave it as a crash would (no clean-shutdown marker) for the next writer
        for segment in log.segments():
            segment.close_handlers()
        manager._release_locks()
