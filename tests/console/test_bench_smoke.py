"""The console benchmark still runs end to end on small numbers and reports every figure
(it asserts no speed)."""

from __future__ import annotations

import json

import pytest

from bench.console import main

pytestmark = pytest.mark.console


def test_console_benchmark_prints_its_figures_as_one_json_line(capsys):
    figures = main(
        [
            "--topics", "20", "--small", "200", "--big", "2000", "--latency-samples", "5",
            "--tail-rate", "500", "--tail-s", "2",
        ]
    )  # fmt: skip
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == figures
    for key in (
        "topics_page_s",
        "topics_sdk_s",
        "seek_small_ms",
        "seek_big_ms",
        "tail_p50_ms",
        "tail_p99_ms",
        "consumer_p50_ms",
        "rss_before_kib",
        "rss_peak_second_half_kib",
    ):
        assert figures[key] > 0, key
    assert figures["tail_received"] == figures["tail_sent"] > 0
