"""Crash test of the log's transactions, with real processes.

A writer appends transactional producers' batches, plain batches and COMMIT / ABORT markers and
is killed at random points (by a timer's SIGKILL, or its own after its appends, or after a clean
shutdown). Each next writer opens the log — recovery from the checkpoints and producer snapshots
that survived — and checks that the producer state's open transactions, every ``.txnindex``
entry and the first unstable offset equal what the batches in the log alone say, before it
appends more. The last check is made here, on a log opened with a manual clock.
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
from tests.crash.transactional_writer import CONFIG, TOPIC
from tests.unit.storage.txn_helpers import expected_transactions, transaction_mismatches

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 12


def _run_writer(log_dir: Path, seed: int, max_appends: int, kill_ms: int) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    args = [str(log_dir), str(seed), str(max_appends), str(kill_ms)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.crash.transactional_writer", *args],
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
    checks = [line for line in out.splitlines() if line.startswith("CHECK ")]
    assert checks, f"the writer died before its check: {err}"
    return checks[0].removeprefix("CHECK ")


@pytest.mark.crash
def test_recovered_transactions_equal_what_the_log_says(tmp_path: Path) -> None:
    seed = int.from_bytes(os.urandom(4), "big") % 2**31
    print(f"transactions crash test seed {seed}")
    rng = random.Random(seed)
    log_dir = tmp_path / "logs"
    for round_ in range(ROUNDS):
        check = _run_writer(
            log_dir, rng.randrange(2**31), rng.randint(20, 400), rng.randint(5, 300)
        )
        assert check == "ok", f"seed {seed} round {round_}: {check}"
    manager = LogManager([log_dir], CONFIG, ManualClock())
    try:
        log = manager.get_log(TOPIC, 0)
        assert log is not None
        assert transaction_mismatches(log) == [], f"seed {seed}"
        _, aborted, _ = expected_transactions(log)
        print(f"{log.log_end_offset} offsets, {len(aborted)} aborted transactions")
    finally:
        manager.shutdown()
