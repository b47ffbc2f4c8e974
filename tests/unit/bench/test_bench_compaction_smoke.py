"""The compaction benchmark still runs and reports every figure (it asserts no speed)."""

from __future__ import annotations

import json

from bench.compaction import main


def test_compaction_benchmark_prints_its_figures_as_one_json_line(tmp_path, capsys):
    figures = main(
        [
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
        ]
    )
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == figures
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
