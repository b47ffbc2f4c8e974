"""The pure parts of a node's metrics and its JSON log lines."""

from __future__ import annotations

import json
import logging
import sys

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from node.apis.records import StartedProduce
from node.core.requests import ProducePartition, ProduceResult
from node.grpc_door.metrics_interceptor import request_name
from node.log_format import JsonFormatter
from node.metrics.request_metrics import RequestMetrics, record_count
from odradek.records import Record, build_batch
from storage.flush_stats import FLUSH_BUCKETS_MS, LogFlushStats


def test_records_are_counted_from_the_batch_headers():
    one = build_batch([Record(None, b"a"), Record(None, b"b"), Record(None, b"c")])
    two = build_batch([Record(None, b"d")])
    assert record_count(one) == 3
    assert record_count(one + two) == 4
    assert record_count(b"") == 0
    assert record_count(one + two[:30]) == 3  # a torn tail counts nothing


def test_request_names_are_kafkas():
    assert request_name("/odradek.v1.Broker/Produce") == "Produce"
    assert request_name("/odradek.v1.Broker/Fetch") == "FetchConsumer"
    assert request_name("/odradek.v1.Replication/Fetch") == "FetchFollower"
    assert request_name("/odradek.v1.Replication/FetchSession") == "FetchFollower"
    assert request_name("/odradek.v1.Admin/CreateTopics") == "CreateTopics"


def test_flush_durations_fall_into_buckets():
    stats = LogFlushStats()
    for ms in (0, 1, 2, 3, 100_000):
        stats.record(ms)
    snap = stats.snapshot()
    assert snap.count == 5 and snap.sum_ms == 100_006
    assert len(snap.bucket_counts) == len(FLUSH_BUCKETS_MS) + 1
    assert snap.bucket_counts[0] == 2  # 0 and 1 are <= 1 ms
    assert snap.bucket_counts[1] == 1  # 2
    assert snap.bucket_counts[2] == 1  # 3 is <= 5
    assert snap.bucket_counts[-1] == 1  # past the last bound


def test_a_json_log_line_is_one_object():
    record = logging.LogRecord("node.server", logging.INFO, "f.py", 1, "node %d up", (3,), None)
    record.created = 1_767_268_800.5  # 2026-01-01T12:00:00.5Z
    line = JsonFormatter(node_id=3).format(record)
    assert "\n" not in line
    assert json.loads(line) == {
        "ts": "2026-01-01T12:00:00.500Z",
        "level": "INFO",
        "logger": "node.server",
        "thread": record.threadName,
        "message": "node 3 up",
        "node_id": 3,
    }
    try:
        raise ValueError("boom")
    except ValueError:
        failed = logging.LogRecord("x", logging.ERROR, "f.py", 1, "bad\nline", (), sys.exc_info())
    parsed = json.loads(JsonFormatter().format(failed))
    assert parsed["message"] == "bad\nline" and "ValueError: boom" in parsed["exc"]
    assert "node_id" not in parsed


def test_request_times_split_into_local_and_remote_and_traffic_counts_per_topic():
    metrics = RequestMetrics()
    metrics.observe("Produce", 30, 20)  # 20 ms waiting for the ISR, 10 ms local
    metrics.observe("Produce", 3, 0)
    batch = build_batch([Record(None, b"x"), Record(None, b"y")])
    started = StartedProduce(
        [ProducePartition("t", 0, batch), ProducePartition("t", 1, batch)],
        [ProduceResult("t", 1, 29)],  # refused: not counted
        None,
        metrics,
    )
    started.finish([ProduceResult("t", 0)])
    started.finish([ProduceResult("t", 0)])  # counted once
    registry = CollectorRegistry(auto_describe=False)
    registry.register(metrics)
    samples = {
        (s.name, s.labels.get("request", s.labels.get("topic")), s.labels.get("le")): s.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        for s in family.samples
    }
    assert samples[("kafka_network_requestmetrics_requests_total", "Produce", None)] == 2
    assert samples[("kafka_network_requestmetrics_totaltimems_sum", "Produce", None)] == 33
    assert samples[("kafka_network_requestmetrics_remotetimems_sum", "Produce", None)] == 20
    assert samples[("kafka_network_requestmetrics_localtimems_sum", "Produce", None)] == 13
    assert samples[("kafka_network_requestmetrics_totaltimems_bucket", "Produce", "5")] == 1
    assert samples[("kafka_network_requestmetrics_totaltimems_bucket", "Produce", "+Inf")] == 2
    assert samples[("kafka_server_brokertopicmetrics_bytesin_total", "t", None)] == len(batch)
    assert samples[("kafka_server_brokertopicmetrics_messagesin_total", "t", None)] == 2
