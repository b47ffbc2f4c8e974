"""kafka-python 3 against a real odradek cluster's Kafka listeners: its producer sends with every
codec it has and every acks setting, its consumer reads by assign (its admin client has tests of
its own with the admin APIs)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from tests.kafka.test_confluent_kafka import create_topic


def test_kafka_python_produces_and_consumes_with_every_codec(kafka_cluster, bootstrap):
    topic = f"kp-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, partitions=2)
    for codec in (None, "gzip", "snappy", "lz4", "zstd"):
        producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec, acks="all")
        futures = [
            producer.send(
                topic, key=f"{codec}".encode(), value=f"{codec}-{i}".encode(), partition=0
            )
            for i in range(100)
        ]
        producer.flush(60)
        assert all(f.get(timeout=60).offset >= 0 for f in futures)
        producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    got: list[Any] = []
    while len(got) < 500:
        batch = consumer.poll(timeout_ms=10_000)
        assert batch, f"no records after {len(got)}"
        for records in batch.values():
            got.extend(records)
    consumer.close()
    assert [r.offset for r in got] == list(range(500))
    assert got[0].value == b"None-0" and got[-1].value == b"zstd-99"


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_kafka_python_acks(bootstrap, acks):
    # the topic is created by the producer's Metadata request (auto.create.topics.enable)
    topic = f"kp-acks-{uuid.uuid4().hex[:6]}"
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=acks)
    for i in range(20):
        producer.send(topic, value=f"{i}".encode(), partition=0)
    producer.flush(60)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    got: list[Any] = []
    while len(got) < 20:
        batch = consumer.poll(timeout_ms=10_000)
        assert batch
        for records in batch.values():
            got.extend(records)
    consumer.close()
    assert [r.value for r in got] == [f"{i}".encode() for i in range(20)]
