"""The Kafka door benchmark still runs end to end and reports every figure (it asserts no speed,
and no fuzz finding: those are the benchmark's report, and tests/kafka/test_fuzz.py's job)."""

from __future__ import annotations

import json

from bench.kafka import main


def test_kafka_benchmark_prints_its_figures_as_one_json_line(tmp_path, capsys):
    figures = main(
        [
            "--records",
            "5000",
            "--repeat",
            "1",
            "--grpc-batches",
            "10",
            "--latency-s",
            "0.5",
            "--idle",
            "50",
            "--fuzz-frames",
            "300",
            "--seed",
            "7",
            "--dir",
            str(tmp_path),
        ]
    )
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == figures
    for key in (
        "rf3_produce_records_per_s",
        "rf3_produce_ratio",
        "rf1_produce_records_per_s",
        "rf1_produce_ratio",
        "grpc_rf3_records_per_s",
        "wide_rf3_produce_records_per_s",
        "wide_rf3_produce_ratio",
        "wide_rf1_produce_records_per_s",
        "wide_rf1_produce_ratio",
        "consume_records_per_s",
        "consume_ratio",
        "consume_tuned_records_per_s",
        "consume_tuned_ratio",
        "sdk_consume_records_per_s",
        "sdk_consume_ratio",
        "raw_fetch_records_per_s",
        "kcat_consume_records_per_s",
        "kcat_consume_ratio",
        "mock_produce_records_per_s",
        "mock_consume_records_per_s",
        "produce_over_mock",
        "consume_over_mock",
        "half_load_p50_ms",
        "half_load_p99_ms",
        "idle_produce_records_per_s",
        "idle_ratio",
        "fuzz_frames_per_s",
    ):
        value = figures[key]
        assert isinstance(value, int | float), key
        assert value > 0, key
    # sampled every 100 ms: a run this short may see none in flight
    for key in (
        "librdkafka_in_flight_one_partition",
        "librdkafka_in_flight_wide",
        "leader_cores_confluent_consume",
        "leader_cores_kcat_consume",
        "leader_cores_raw_consume",
    ):
        value = figures[key]
        assert isinstance(value, int | float) and value >= 0, key
    assert figures["fuzz_frames"] == 300
    outcomes = figures["fuzz_outcomes"]
    assert isinstance(outcomes, dict) and sum(outcomes.values()) == 300
    assert figures["idle_still_open"] == 50
    idle_rounds = figures["idle_ratio_rounds"]
    assert isinstance(idle_rounds, list) and len(idle_rounds) == 5
    assert figures["nodes_running"] == 3
    assert figures["fuzz_well_behaved_missing"] == 0


def test_produce_only_reports_the_producer_against_grpc_alone(tmp_path, capsys):
    figures = main(
        [
            *("--records", "5000", "--repeat", "1", "--grpc-batches", "10"),
            *("--produce-only", "--dir", str(tmp_path)),
        ]
    )
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == figures
    for key in ("rf3_produce_ratio", "rf1_produce_ratio", "grpc_rf3_records_per_s"):
        assert isinstance(figures[key], int | float), key
    assert "wide_rf3_produce_ratio" not in figures and "fuzz_frames" not in figures
