"""The storage benchmark still runs and reports every figure (it asserts no speed)."""

from __future__ import annotations

import json

from bench.storage import main


def test_storage_benchmark_prints_its_figures_as_one_json_line(tmp_path, capsys):
    figures = main(
        [
            "--total-mib",
            "2",
            "--recovery-mib",
            "4",
            "--segment-mib",
            "1",
            "--repeat",
            "1",
            "--dir",
            str(tmp_path),
        ]
    )
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == figures
    for key in (
        "append_ratio",
        "read_ratio",
        "clean_stop_recovery_bytes_read",
        "unclean_stop_recovery_bytes_read",
        "unclean_stop_bound_bytes",
    ):
        assert key in figures
    assert figures["clean_stop_recovery_bytes_read"] == 0
    read = figures["unclean_stop_recovery_bytes_read"]
    bound = figures["unclean_stop_bound_bytes"]
    assert isinstance(read, int) and isinstance(bound, int)
    assert 0 < read <= bound
    assert list(tmp_path.iterdir()) == []
