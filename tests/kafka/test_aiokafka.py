"""aiokafka against a real odradek cluster's Kafka listeners: produce (with and without
idempotence, every codec it has) and consume by assign."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition


async def _round_trip(bootstrap: str, topic: str) -> list[Any]:
    for codec, idempotent in (
        (None, True),
        ("gzip", False),
        ("snappy", True),
        ("lz4", True),
        ("zstd", False),
    ):
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, compression_type=codec, enable_idempotence=idempotent
        )
        await producer.start()
        try:
            for i in range(50):
                await producer.send_and_wait(topic, f"{codec}-{i}".encode(), key=b"k", partition=0)
        finally:
            await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        got: list[Any] = []
        while len(got) < 250:
            batch = await consumer.getmany(tp, timeout_ms=10_000)
            assert batch, f"no records after {len(got)}"
            got.extend(batch[tp])
        return got
    finally:
        await consumer.stop()


def test_aiokafka_produces_and_consumes(bootstrap):
    topic = f"aio-{uuid.uuid4().hex[:6]}"
    got = asyncio.run(asyncio.wait_for(_round_trip(bootstrap, topic), 120))
    assert [r.offset for r in got] == list(range(250))
    assert got[0].value == b"None-0" and got[-1].value == b"zstd-49"
