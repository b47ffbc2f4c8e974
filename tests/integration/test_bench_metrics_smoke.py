"""The metrics benchmark still runs end to end and reports every figure (it asserts no speed)."""

from __future__ import annotations

import json
from typing import Any

from bench.metrics import main


def test_metrics_benchmark_prints_its_figures_as_one_json_line(tmp_path, capsys):
    figures: dict[str, Any] = main(
        ["--batches", "12", "--inflight", "2", "--repeat", "2", "--dir", str(tmp_path)]
    )
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == figures
    for key in ("plain_records_per_s", "metered_records_per_s", "metrics_ratio"):
        assert figures[key] > 0, key
    assert len(figures["metrics_ratio_rounds"]) == 2
    assert figures["scrapes"] >= 2  # at least one scrape in each metered run
