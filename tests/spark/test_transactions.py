"""Transactions through the Spark source: ``kafka.isolation.level=read_committed`` batch and
streaming reads return committed records only (never an aborted transaction's, never a
transaction marker) and stop at the last stable offset while a transaction is open; the
default read_uncommitted reads everything up to the high watermark."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

import odradek
from tests.spark.test_streaming import output, stream, to_parquet

pytestmark = pytest.mark.spark


def transactional(servers: str) -> odradek.Producer:
    # a long transaction timeout: the open transaction must stay open while Spark reads
    # (the default 60 s passed on a loaded machine, and the coordinator aborted it)
    producer = odradek.Producer(
        servers,
        transactional_id=f"spark-{uuid.uuid4().hex[:8]}",
        transaction_timeout_ms=600_000,
        linger_ms=1,
    )
    producer.init_transactions(timeout=60)
    return producer


def send_transaction(producer: odradek.Producer, topic: str, values: list[bytes]) -> None:
    producer.begin_transaction()
    for value in values:
        producer.send(topic, value, partition=0)
    producer.flush()


def batch_values(spark, servers: str, topic: str, **options: str) -> list[bytes]:
    r = spark.read.format("odradek").option("kafka.bootstrap.servers", servers)
    r = r.option("subscribe", topic)
    for k, v in options.items():
        r = r.option(k, v)
    return sorted(bytes(row.value) for row in r.load().select("value").collect())


def test_read_committed_reads_committed_records_below_the_last_stable_offset(
    spark, spark_cluster, new_topic, tmp_path: Path
):
    servers = spark_cluster.bootstrap_servers
    topic = new_topic(1)
    committed = [b"c0", b"c1", b"c2"]
    aborted = [b"a0", b"a1"]
    pending = [b"p0", b"p1"]
    first, second = transactional(servers), transactional(servers)
    try:
        send_transaction(first, topic, committed[:2])
        first.commit_transaction()
        send_transaction(first, topic, aborted)
        first.abort_transaction()
        # an open transaction (second producer), then a committed one after it (first)
        send_transaction(second, topic, pending)
        send_transaction(first, topic, committed[2:])
        first.commit_transaction()

        # read_uncommitted (the default): up to the high watermark, aborted and open included
        assert batch_values(spark, servers, topic) == sorted(committed + aborted + pending)
        # read_committed: below the last stable offset (the open transaction's first offset)
        assert batch_values(
            spark, servers, topic, **{"kafka.isolation.level": "read_committed"}
        ) == sorted(committed[:2])

        df = stream(spark, servers, topic, **{"kafka.isolation.level": "read_committed"})
        query = to_parquet(df, tmp_path, "q").trigger(availableNow=True).start()
        query.awaitTermination()
        assert [v for _, _, v in output(spark, tmp_path, "q")] == committed[:2]

        second.commit_transaction()
        # the last stable offset moved past both transactions: the rest, once, from the
        # checkpoint; the aborted records and the markers never
        query = to_parquet(df, tmp_path, "q").trigger(availableNow=True).start()
        query.awaitTermination()
        assert sorted(v for _, _, v in output(spark, tmp_path, "q")) == sorted(committed + pending)
        assert batch_values(
            spark, servers, topic, **{"kafka.isolation.level": "read_committed"}
        ) == sorted(committed + pending)
    finally:
        first.close()
        second.close()
