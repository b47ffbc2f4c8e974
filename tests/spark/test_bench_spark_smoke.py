"""The Spark benchmark still runs end to end and reports every figure (it asserts no speed)."""

from __future__ import annotations

import json

import pytest

from bench.spark import main

pytestmark = pytest.mark.spark


def test_spark_benchmark_prints_its_figures_as_one_json_line(spark, tmp_path, capsys):
    figures = main(["--records", "3000", "--partitions", "2", "--dir", str(tmp_path)], spark=spark)
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == figures
    for key in (
        "produce_records_per_s",
        "consumer_records_per_s",
        "connector_batch_records_per_s",
        "connector_stream_records_per_s",
        "connector_stream_4_triggers_records_per_s",
        "connector_ratio",
        "stream_ratio",
        "stream_4_triggers_ratio",
        "spark_job_s",
    ):
        value = figures[key]
        assert isinstance(value, int | float), key
        assert value > 0, key
