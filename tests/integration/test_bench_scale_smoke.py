"""The scale benchmark still runs end to end and reports every figure (it asserts no speed)."""

from __future__ import annotations

import json
from typing import Any

from bench.scale import main


def test_scale_benchmark_prints_its_figures_as_one_json_line(tmp_path, capsys):
    figures: dict[str, Any] = main(["--sizes", "6,12", "--nodes", "2", "--dir", str(tmp_path)])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == figures
    assert figures["skipped"] == {}
    for key in ("creation_s", "restart_s", "failover_s"):
        assert set(figures[key]) == {"6", "12"}, key
        assert all(v > 0 for v in figures[key].values()), key
        assert figures[key[:-2] + "_ratio"]["6"] == 1.0, key
