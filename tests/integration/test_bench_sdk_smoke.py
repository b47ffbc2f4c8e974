"""The SDK benchmark still runs end to end and reports every figure (it asserts no speed)."""

from __future__ import annotations

import json

from bench.sdk import main


def test_sdk_benchmark_prints_its_figures_as_one_json_line(tmp_path, capsys):
    figures = main(
        [
            "--records",
            "20000",
            "--repeat",
            "1",
            "--latency-s",
            "0.5",
            "--rss-records",
            "20000",
            "--no-spark",
            "--dir",
            str(tmp_path),
        ]
    )
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == figures
    for key in (
        "rf1_baseline_records_per_s",
        "rf1_send_records_per_s",
        "rf1_send_ratio",
        "rf1_bulk_ratio",
        "rf1_send_callback_records_per_s",
        "rf1_callback_ratio",
        "rf1_add_done_callback_ratio",
        "rf1_half_load_p99_ms",
        "rf3_send_ratio",
        "rf3_bulk_ratio",
        "rf3_idempotence_ratio",
        "rf3_half_load_p99_ms",
        "consumer_ratio",
        "rss_peak_mib",
    ):
        value = figures[key]
        assert isinstance(value, int | float), key
        assert value > 0, key
