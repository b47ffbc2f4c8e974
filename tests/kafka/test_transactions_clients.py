"""Kafka's transactions through the Kafka door with the transactional producers of the other
Kafka clients none of us wrote — kafka-python, aiokafka and kafkajs — against a real three-node
cluster (confluent-kafka's has tests/kafka/test_transactions.py): each commits a transaction,
aborts one and commits another; a read_committed consumer (confluent-kafka) reads the committed
records and not the aborted ones, a read_uncommitted one reads both."""

from __future__ import annotations

import asyncio
import json
import subprocess

from aiokafka import AIOKafkaProducer
from kafka import KafkaProducer

from deploy.local.cluster import LocalCluster
from tests.kafka.conftest import JS_CLIENTS, require
from tests.kafka.test_confluent_kafka import create_topic
from tests.kafka.test_transactions import read_all, txn_cluster, unique

__all__ = ["txn_cluster"]  # the module's cluster, shared with test_transactions' fixture

COUNT = 5
COMMITTED = [f"committed-{i}".encode() for i in range(COUNT)] + [
    f"last-{i}".encode() for i in range(COUNT)
]
ABORTED = [f"aborted-{i}".encode() for i in range(COUNT)]


def assert_read_as_committed(bootstrap: str, topic: str) -> None:
    assert read_all(bootstrap, topic, "read_committed", expect=len(COMMITTED)) == COMMITTED
    assert read_all(bootstrap, topic, "read_committed") == COMMITTED  # nothing else comes
    uncommitted = read_all(bootstrap, topic, "read_uncommitted", expect=3 * COUNT)
    assert sorted(uncommitted) == sorted(COMMITTED + ABORTED)


def test_kafka_python_commits_and_aborts(txn_cluster: LocalCluster) -> None:
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic = unique("kp-txn")
    create_topic(bootstrap, topic, partitions=1)
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=unique("kp"))
    try:
        producer.init_transactions()
        for name, commit in (("committed", True), ("aborted", False), ("last", True)):
            producer.begin_transaction()
            futures = [
                producer.send(topic, value=f"{name}-{i}".encode(), partition=0)
                for i in range(COUNT)
            ]
            producer.flush(60)
            assert all(f.get(timeout=60).offset >= 0 for f in futures)
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close(timeout=30)
    assert_read_as_committed(bootstrap, topic)


async def _aiokafka_transactions(bootstrap: str, topic: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=unique("aio"))
    await producer.start()
    try:
        for name, commit in (("committed", True), ("aborted", False), ("last", True)):
            await producer.begin_transaction()
            for i in range(COUNT):
                await producer.send_and_wait(topic, f"{name}-{i}".encode(), partition=0)
            if commit:
                await producer.commit_transaction()
            else:
                await producer.abort_transaction()
    finally:
        await producer.stop()


def test_aiokafka_commits_and_aborts(txn_cluster: LocalCluster) -> None:
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic = unique("aio-txn")
    create_topic(bootstrap, topic, partitions=1)
    asyncio.run(asyncio.wait_for(_aiokafka_transactions(bootstrap, topic), 120))
    assert_read_as_committed(bootstrap, topic)


def test_kafkajs_commits_and_aborts(txn_cluster: LocalCluster) -> None:
    if not (JS_CLIENTS / "node_modules" / "kafkajs").is_dir():
        raise RuntimeError("kafkajs is not installed: run bash scripts/setup.sh")
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic = unique("js-txn")
    create_topic(bootstrap, topic, partitions=1)
    result = subprocess.run(
        [
            require("node"),
            str(JS_CLIENTS / "transaction.js"),
            bootstrap,
            topic,
            unique("js"),
            str(COUNT),
        ],
        capture_output=True,
        timeout=150,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert json.loads(result.stdout) == {"ok": True}
    assert_read_as_committed(bootstrap, topic)
