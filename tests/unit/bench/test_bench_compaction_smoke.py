"""The compaction benchmark still runs and reports every figure (it asserts no speed).

It runs in a process of its own: its peak-memory figure is ``tracemalloc``'s, which counts
every thread's allocations, and threads that earlier tests left behind in the test process
(clients winding down) would otherwise be counted as the cleaner's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_compaction_benchmark_prints_its_figures_as_one_json_line(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.compaction",
            "--dirty-mib",
            "1",
            "--values",
            "100,2000",
            "--segment-mib",
            "1",
            "--dedupe-mib",
            "1",
            "--io-buffer-kib",
            "64",
            "--repeat",
            "1",
            "--dir",
            str(tmp_path),
        ],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    results = figures["results"]
    assert isinstance(results, list) and len(results) == 2
    for r in results:
        for key in ("raw_read_mib_s", "clean_mib_s", "ratio", "peak_bytes", "overhead_bytes"):
            assert key in r
        assert r["kept_bytes"] < r["dirty_bytes"]  # every key was updated about 10 times
        assert r["dedupe_buffer_bytes"] == 1 << 20
        # the buffer plus a fixed overhead: a few I/O buffers and batches
        assert 0 < r["peak_bytes"] <= r["dedupe_buffer_bytes"] + 8 * 64 * 1024 + 256 * 1024
    assert list(tmp_path.iterdir()) == []
