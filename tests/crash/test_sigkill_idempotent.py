"""Crash test of the idempotent producer's broker side, with real processes.

A writer appends an idempotent producer's batches and is killed at random points (by the
parent's SIGKILL, by its own SIGKILL right after an append, or after a clean shutdown right
after an append): each time the answer to its last append may be lost. The next writer reopens
the log (recovery, producer snapshots) and sends again the batch whose answer was not seen, as a
client would. At the end the log holds every batch exactly once, in order, with contiguous
offsets, and a batch that was sent again after it had been written was answered with its
original offsets.
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
from odradek.records import read_batches
from storage import LogManager
from tests.crash.idempotent_writer import CONFIG, PRODUCER_ID, batch_specs, value_of

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 14
MAX_ROUNDS = 60


def _run_writer(
    log_dir: Path, seed: int, start: int, max_appends: int, kill_ms: int
) -> list[list[int]]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    args = [str(log_dir), str(seed), str(start), str(max_appends), str(kill_ms)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.crash.idempotent_writer", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=60)
    assert proc.returncode in (-signal.SIGKILL, 0), f"writer failed: {err}"
    # a line cut by the kill was not answered
    lines = [line for line in out.splitlines(keepends=True) if line.endswith("\n")]
    return [[int(x) for x in line.split()[1:]] for line in lines]


@pytest.mark.crash
def test_batches_sent_again_after_a_crash_are_stored_once(tmp_path: Path) -> None:
    seed = int.from_bytes(os.urandom(4), "big") % 2**31
    print(f"idempotent crash test seed {seed}")
    rng = random.Random(seed)
    log_dir = tmp_path / "logs"
    next_batch = 0
    # batch index -> (first offset, last offset) as first answered
    answered: dict[int, tuple[int, int]] = {}
    duplicates = 0
    # ROUNDS kills, and more (up to MAX_ROUNDS) until a resent batch was recognised: on a loaded
    # machine a writer may be killed before it writes anything for many rounds in a row
    for round_ in range(MAX_ROUNDS):
        if round_ >= ROUNDS and duplicates > 0:
            break
        acks = _run_writer(log_dir, seed, next_batch, rng.randint(1, 150), rng.randint(5, 400))
        context = f"seed {seed} round {round_}"
        for index, first, last, dup in acks:
            assert index not in answered, f"{context}: batch {index} answered twice"
            answered[index] = (first, last)
            duplicates += dup
        if acks:
            next_batch = acks[-1][0] + 1
    specs = batch_specs(seed, next_batch + 1)

    manager = LogManager([log_dir], CONFIG, ManualClock())
    try:
        log = manager.get_log("idem", 0)
        assert log is not None
        stored = []
        offset = 0
        while offset < log.log_end_offset:
            batches = list(read_batches(log.read(offset, 1 << 30).records))
            stored.extend(batches)
            offset = batches[-1].last_offset + 1
        context = f"seed {seed}"
        # exactly the batches 0..n-1 (n = next_batch, or one more if the last unanswered one
        # was written), each once, in order, offsets contiguous
        assert len(stored) in (next_batch, next_batch + 1), context
        expected_offset = 0
        for index, batch in enumerate(stored):
            seq, count = specs[index]
            assert batch.producer_id == PRODUCER_ID, context
            assert (batch.base_sequence, batch.records_count) == (seq, count), (context, index)
            assert batch.base_offset == expected_offset, (context, index)
            assert [r.value for r in batch.records()] == [value_of(index, i) for i in range(count)]
            if index in answered:
                assert answered[index] == (batch.base_offset, batch.last_offset), (context, index)
            expected_offset = batch.last_offset + 1
        assert log.log_end_offset == expected_offset
        print(f"{len(stored)} batches, {duplicates} answered as duplicates")
        # the writers' lost answers were sent again and recognised
        assert duplicates > 0, context
    finally:
        manager.shutdown()
