"""The pure parts of a node's metrics and its JSON log lines."""

from __future__ import annotations

import json
import logging
import sys

from node.log_format import JsonFormatter
from node.metrics import record_count, request_name
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
