"""Batch reads and writes of the odradek data source, real Spark against a real cluster."""

from __future__ import annotations

import os
import time

import pytest
from pyspark.errors import PySparkException
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from tests.integration.helpers import consume_all, wait_for
from tests.spark.conftest import produce

pytestmark = pytest.mark.spark


def reader(spark, servers, **options):
    r = spark.read.format("odradek").option("kafka.bootstrap.servers", servers)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def rows(df, *columns):
    return sorted(tuple(r) for r in df.select(*columns).collect())


def test_exact_offset_ranges_from_json(spark, spark_cluster, new_topic):
    servers = spark_cluster.bootstrap_servers
    topic = new_topic(2)
    sent = produce(servers, topic, [(i % 2, None, f"v{i}".encode()) for i in range(40)])
    df = reader(
        spark,
        servers,
        subscribe=topic,
        startingOffsets=f'{{"{topic}": {{"0": 3, "1": -2}}}}',
        endingOffsets=f'{{"{topic}": {{"0": 10, "1": -1}}}}',
    )
    got = rows(df, "partition", "offset", "value", "topic")
    want = sorted((p, o, v, topic) for p, o, _, v in sent if (p == 0 and 3 <= o < 10) or p == 1)
    assert got == want
    assert len(got) == 7 + 20


def test_reads_by_timestamp(spark, spark_cluster, new_topic):
    servers = spark_cluster.bootstrap_servers
    topic = new_topic(1)
    base = 1_700_000_000_000
    produce(
        servers,
        topic,
        [(0, None, f"v{i}".encode()) for i in range(20)],
        timestamps=[base + 1000 * i for i in range(20)],
    )
    df = reader(
        spark,
        servers,
        subscribe=topic,
        startingTimestamp=str(base + 4500),
        endingOffsetsByTimestamp=f'{{"{topic}": {{"0": {base + 12000}}}}}',
    )
    got = df.select("offset", "timestamp", "timestampType").collect()
    assert [r.offset for r in got] == list(range(5, 12))
    assert [int(r.timestamp.timestamp() * 1000) for r in got] == [
        base + 1000 * i for i in range(5, 12)
    ]
    assert {r.timestampType for r in got} == {0}
    late = reader(
        spark,
        servers,
        subscribe=topic,
        startingTimestamp=str(base + 10**9),
        startingOffsetsByTimestampStrategy="latest",
    )
    assert late.count() == 0


def test_headers_and_min_partitions_slicing(spark, spark_cluster, new_topic):
    servers = spark_cluster.bootstrap_servers
    topic = new_topic(2)
    values = [(i % 2, f"k{i}".encode(), f"v{i}".encode()) for i in range(100)]
    headers = [[("n", str(i).encode()), ("none", None)] if i % 3 else [] for i in range(100)]
    sent = produce(servers, topic, values, headers=headers)
    df = reader(spark, servers, subscribe=topic, includeHeaders="true", minPartitions="7")
    assert df.rdd.getNumPartitions() >= 7
    got = df.select("partition", "offset", "key", "value", "headers").collect()
    assert len(got) == 100
    by_key = {r.key: r for r in got}
    for i, (p, o, k, v) in enumerate(sent):
        r = by_key[k]
        assert (r.partition, r.offset, r.value) == (p, o, v)
        want = [(h, hv) for h, hv in headers[i]] or None
        assert (None if r.headers is None else [(h.key, h.value) for h in r.headers]) == want
    capped = reader(spark, servers, subscribe=topic, maxRecordsPerPartition="10")
    assert capped.rdd.getNumPartitions() == 10
    assert capped.count() == 100


def test_subscribe_pattern_and_assign(spark, spark_cluster, new_topic):
    servers = spark_cluster.bootstrap_servers
    first = new_topic(2, prefix="pat")
    second = new_topic(1, prefix="pat")
    produce(servers, first, [(i % 2, None, b"a") for i in range(6)])
    produce(servers, second, [(0, None, b"b") for _ in range(3)])
    pattern = reader(spark, servers, subscribePattern=f"({first}|{second})")
    assert pattern.count() == 9
    assigned = reader(spark, servers, assign=f'{{"{first}": [1], "{second}": [0]}}')
    assert rows(assigned, "topic", "partition") == sorted([(first, 1)] * 3 + [(second, 0)] * 3)


def test_write_then_read_back_byte_for_byte(spark, spark_cluster, new_topic):
    servers = spark_cluster.bootstrap_servers
    topic = new_topic(3)
    data = [
        (
            os.urandom(i % 17) if i % 5 else None,
            os.urandom(50 + i),
            [("a", os.urandom(3)), ("b", None)] if i % 2 else [],
            i % 3,
        )
        for i in range(60)
    ]
    schema = StructType(
        [
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
            StructField(
                "headers",
                ArrayType(
                    StructType(
                        [StructField("key", StringType()), StructField("value", BinaryType())]
                    )
                ),
            ),
            StructField("partition", IntegerType()),
        ]
    )
    df = spark.createDataFrame(data, schema)
    (
        df.write.format("odradek")
        .option("kafka.bootstrap.servers", servers)
        .option("topic", topic)
        .mode("append")
        .save()
    )
    back = reader(spark, servers, subscribe=topic, includeHeaders="true")
    got = sorted(
        (
            (r.partition, r.key, r.value, [(h.key, h.value) for h in r.headers or []])
            for r in back.collect()
        ),
        key=repr,
    )
    want = sorted(((p, k, v, list(h)) for k, v, h, p in data), key=repr)
    assert got == want
    # A topic column with string keys and values works too (Spark's sink takes both).
    other = new_topic(1)
    texts = spark.createDataFrame(
        [(other, "k1", "hello"), (other, None, "world")], "topic string, key string, value string"
    )
    texts.write.format("odradek").option("kafka.bootstrap.servers", servers).mode("append").save()
    got_texts = reader(spark, servers, subscribe=other).select("key", "value").collect()
    assert {tuple(r) for r in got_texts} == {(b"k1", b"hello"), (None, b"world")}


def test_a_failed_write_fails_the_task(spark, spark_cluster, new_topic):
    servers = spark_cluster.bootstrap_servers
    topic = new_topic(1)

    def write(df):
        (
            df.write.format("odradek")
            .option("kafka.bootstrap.servers", servers)
            .option("topic", topic)
            .mode("append")
            .save()
        )

    # A record the producer cannot deliver: its future fails, and so does the task.
    too_big = spark.createDataFrame([(b"small",), (b"x" * (2 << 20),)], "value binary")
    with pytest.raises(PySparkException, match="not acknowledged"):
        write(too_big)
    with pytest.raises(PySparkException, match="partition 5"):
        write(spark.createDataFrame([(b"v", 5)], "value binary, partition int"))


def load_error(spark, **options):
    r = spark.read.format("odradek")
    for k, v in options.items():
        r = r.option(k, v)
    with pytest.raises(PySparkException) as info:
        r.load()
    return str(info.value)


def test_invalid_options_fail_at_load(spark, spark_cluster, new_topic):
    servers = spark_cluster.bootstrap_servers
    topic = new_topic(1)
    text = load_error(spark, **{"kafka.bootstrap.servers": servers, "subscribe": "no-such-topic"})
    assert "'no-such-topic'" in text and "'subscribe'" in text
    text = load_error(
        spark, **{"kafka.bootstrap.servers": servers, "assign": '{"no-such-topic": [0]}'}
    )
    assert "'no-such-topic'" in text and "'assign'" in text
    text = load_error(
        spark,
        **{
            "kafka.bootstrap.servers": servers,
            "subscribe": topic,
            "startingOffsets": '{"' + topic + '": {"0": 1',
        },
    )
    assert "'startingOffsets'" in text and "not valid JSON" in text
    text = load_error(
        spark,
        **{"kafka.bootstrap.servers": servers, "subscribe": topic, "assign": f'{{"{topic}": [0]}}'},
    )
    assert "'subscribe'" in text and "'assign'" in text
    text = load_error(spark, subscribe=topic)
    assert "bootstrap.servers" in text
    with pytest.raises(PySparkException, match="'topic' option"):
        spark.createDataFrame([(b"v",)], "value binary").write.format("odradek").option(
            "kafka.bootstrap.servers", servers
        ).mode("append").save()
    # overwrite is refused, as by Spark's Kafka sink, and writes nothing
    with pytest.raises(PySparkException, match="save mode 'overwrite' is not supported"):
        spark.createDataFrame([(b"v",)], "value binary").write.format("odradek").option(
            "kafka.bootstrap.servers", servers
        ).option("topic", topic).mode("overwrite").save()
    read = spark.read.format("odradek").option("kafka.bootstrap.servers", servers)
    assert read.option("subscribe", topic).load().count() == 0


def test_reads_cross_compaction_gaps(spark, spark_cluster, new_topic):
    servers = spark_cluster.bootstrap_servers
    topic = new_topic(
        1, cleanup_policy="compact", segment_ms="100", min_cleanable_dirty_ratio="0.01"
    )
    for round_ in range(3):  # each round lands in a new segment (segment.ms rolls them)
        produce(
            servers,
            topic,
            [(0, f"k{i % 5}".encode(), f"r{round_}-{i}".encode()) for i in range(20)],
        )
        time.sleep(0.2)  # let segment.ms pass so that the next append rolls the segment
    produce(servers, topic, [(0, b"last", b"roll")])

    # Fully compacted, the three rolled segments keep the last record of each key (round 2's
    # i = 15..19 at offsets 55..59); the active segment keeps the roll record. Waiting for
    # exactly that (not for any gap) keeps a later cleaner pass from racing the reads.
    remaining = [(40 + i, f"r2-{i}".encode()) for i in range(15, 20)] + [(60, b"roll")]
    wait_for(
        lambda: consume_all(servers, topic, 1)[0] == remaining,
        "the cleaner to compact the topic",
        60,
    )
    got = reader(spark, servers, subscribe=topic).select("offset", "value").collect()
    assert [(r.offset, r.value) for r in got] == remaining
    gap = 30  # compacted away, between the log start (0) and the first record left (55)
    from_gap = reader(
        spark, servers, subscribe=topic, startingOffsets=f'{{"{topic}": {{"0": {gap}}}}}'
    )
    assert [(r.offset, r.value) for r in from_gap.select("offset", "value").collect()] == [
        (o, v) for o, v in remaining if o >= gap
    ]
