"""The cluster benchmark still runs end to end and reports every figure (it asserts no speed)."""

from __future__ import annotations

import json

from bench.cluster import main


def test_cluster_benchmark_prints_its_figures_as_one_json_line(tmp_path, capsys):
    figures = main(["--batches", "12", "--inflight", "2", "--repeat", "2", "--dir", str(tmp_path)])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == figures
    for key in (
        "echo_produce_records_per_s",
        "rf1_acks1_records_per_s",
        "rf3_acksall_records_per_s",
        "rf3_acksall_p99_ms",
        "consume_records_per_s",
        "rf1_ratio",
        "rf3_ratio",
        "consume_ratio",
    ):
        value = figures[key]
        assert isinstance(value, int | float), key
        assert value > 0, key
