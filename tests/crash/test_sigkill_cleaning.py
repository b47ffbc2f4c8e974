"""Crash tests of compaction: a cleaning process (``tests.crash.cleaner``) killed with SIGKILL
at random moments, round after round on the same log.

After each kill the log is reopened as a restarted broker would (unclean: full recovery, the
loader finishing or abandoning an interrupted swap) and must hold exactly the oracle's view:
every record is the one written at its offset, the latest record of every key with a value is
there, the table (latest values, tombstones deleting) is the oracle's, no ``.cleaned`` or
``.swap`` file is left, the indexes pass their checks, and below the last checkpointed pass end
no key appears twice (old segments coming back beside new ones would break that).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from odradek.clock import ManualClock
from storage import Log
from storage.checkpoint_file import OffsetCheckpointFile
from storage.log_cleaner import CLEANER_OFFSET_CHECKPOINT
from tests.crash.cleaner import CONFIG, planned
from tests.unit.storage.compaction_helpers import Oracle

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 14


def _run_cleaner_until_killed(
    root: Path, seed: int, round_: int, delay_s: float
) -> tuple[list[str], str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.crash.cleaner", str(root), str(seed), str(round_)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        assert ready.strip() == "READY", ready
        # Not a synchronisation: the moment of the kill is what is random.
        time.sleep(delay_s)
    finally:
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, f"the cleaner died on its own: {err}"
    return out.splitlines(), err


@pytest.mark.crash
def test_sigkill_during_cleaning_leaves_exactly_the_oracles_view(tmp_path):
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    seed = rng.randint(0, 2**31)
    print(f"compaction crash test seed {seed}")
    rng = random.Random(seed)
    root = tmp_path / "logs"
    root.mkdir()
    passes = 0
    for round_ in range(ROUNDS):
        lines, _ = _run_cleaner_until_killed(root, seed, round_, rng.uniform(0.05, 0.9))
        passes += sum(1 for line in lines if line.startswith("PASS"))
        context = f"seed {seed} round {round_}"

        log = Log.open(root / "table-0", CONFIG, ManualClock(), recovery_point=0)
        log.update_high_watermark(log.log_end_offset)
        oracle = Oracle()
        for offset in range(log.log_end_offset):
            oracle.append(offset, [planned(seed, offset)])
        records = oracle.check(log)
        leftovers = [p.name for p in log.dir.iterdir() if p.name.endswith((".cleaned", ".swap"))]
        assert leftovers == [], f"{context}: {leftovers}"
        for segment in log.segments():
            segment.offset_index.sanity_check()
            segment.time_index.sanity_check()
        cleaned_to = OffsetCheckpointFile(root / CLEANER_OFFSET_CHECKPOINT).read()
        end = cleaned_to.get(("table", 0), 0)
        below = [r.key for r in records if r.offset < end]
        assert len(below) == len(set(below)), f"{context}: a key twice below {end}"
        log.flush()
        log.close()
    # Most kills land in a pass, not before the first one (typically 100-300 passes in all).
    assert passes >= ROUNDS // 2, f"only {passes} passes completed: the kills came too early"
