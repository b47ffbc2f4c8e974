"""kafkajs (npm, on Debian's nodejs) against a real odradek cluster's Kafka listeners: its admin
client creates a topic and reads its offsets, its idempotent producer sends gzip batches with
keys and headers; confluent-kafka reads them back; its consumer, in a consumer group, reads
them too and commits."""

from __future__ import annotations

import json
import subprocess
import uuid

from confluent_kafka import TopicPartition

from tests.kafka.conftest import JS_CLIENTS, require
from tests.kafka.test_confluent_kafka import consume


def test_kafkajs_creates_a_topic_and_produces(bootstrap):
    if not (JS_CLIENTS / "node_modules" / "kafkajs").is_dir():
        raise RuntimeError("kafkajs is not installed: run bash scripts/setup.sh")
    topic = f"js-{uuid.uuid4().hex[:6]}"
    result = subprocess.run(
        [require("node"), str(JS_CLIENTS / "produce.js"), bootstrap, topic, "100"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    out = json.loads(result.stdout)
    assert out["watermarks"] == [{"partition": 0, "offset": "100", "high": "100", "low": "0"}]
    got = consume(bootstrap, [TopicPartition(topic, 0, 0)], 100)
    assert [(m.key(), m.value()) for m in got] == [
        (f"k{i}".encode(), f"v{i}".encode()) for i in range(100)
    ]
    assert got[7].headers() == [("h", b"x7")]


def test_kafkajs_consumer_group_reads_and_commits(bootstrap):
    """kafkajs' consumer always joins a group (the classic protocol): it reads what its producer
    wrote, from the beginning, and its group's commits cover every record."""
    if not (JS_CLIENTS / "node_modules" / "kafkajs").is_dir():
        raise RuntimeError("kafkajs is not installed: run bash scripts/setup.sh")
    topic = f"js-group-{uuid.uuid4().hex[:6]}"
    produced = subprocess.run(
        [require("node"), str(JS_CLIENTS / "produce.js"), bootstrap, topic, "50"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert produced.returncode == 0, produced.stderr.decode(errors="replace")
    group = f"js-{uuid.uuid4().hex[:6]}"
    result = subprocess.run(
        [require("node"), str(JS_CLIENTS / "consume.js"), bootstrap, topic, group, "50"],
        capture_output=True,
        timeout=150,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    out = json.loads(result.stdout)
    assert [(r["key"], r["value"], r["h"]) for r in out["read"]] == [
        (f"k{i}", f"v{i}", f"x{i}") for i in range(50)
    ]
    assert [r["offset"] for r in out["read"]] == [str(i) for i in range(50)]
    [committed] = out["committed"]
    assert committed["partitions"] == [{"partition": 0, "offset": "50", "metadata": None}]
