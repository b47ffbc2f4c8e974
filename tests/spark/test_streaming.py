"""Streaming reads: triggers and limits, restarts from a checkpoint, a leader change, data loss."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException

from odradek import Admin, NewTopic, TopicPartition
from tests.integration.helpers import partition_state, wait_for, wait_for_full_isr
from tests.spark.conftest import produce

pytestmark = pytest.mark.spark


def stream(spark, servers, topic, **options):
    r = (
        spark.readStream.format("odradek")
        .option("kafka.bootstrap.servers", servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def to_parquet(df, tmp_path: Path, name: str):
    return (
        df.select("partition", "offset", "value")
        .writeStream.format("parquet")
        .option("path", str(tmp_path / name / "out"))
        .option("checkpointLocation", str(tmp_path / name / "checkpoint"))
    )


def output(spark, tmp_path: Path, name: str) -> list[tuple[int, int, bytes]]:
    path = tmp_path / name / "out"
    if not (path / "_spark_metadata").exists():
        return []
    return sorted(tuple(r) for r in spark.read.parquet(str(path)).collect())


def expected(sent, keep=lambda p, o: True):
    return sorted((p, o, v) for p, o, _, v in sent if keep(p, o))


def test_available_now_honours_max_offsets_per_trigger(spark, spark_cluster, new_topic, tmp_path):
    servers = spark_cluster.bootstrap_servers
    topic = new_topic(3)
    sent = produce(servers, topic, [(i % 3, None, f"v{i}".encode()) for i in range(30)])
    df = stream(spark, servers, topic, maxOffsetsPerTrigger="9")
    query = to_parquet(df, tmp_path, "q").trigger(availableNow=True).start()
    query.awaitTermination()
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sizes == [9, 9, 9, 3]
    assert output(spark, tmp_path, "q") == expected(sent)


def test_restart_from_checkpoint_after_a_stopped_query(spark, spark_cluster, new_topic, tmp_path):
    servers = spark_cluster.bootstrap_servers
    topic = new_topic(2)
    sent = produce(servers, topic, [(i % 2, None, f"a{i}".encode()) for i in range(60)])
    df = stream(spark, servers, topic, maxOffsetsPerTrigger="10")
    query = to_parquet(df, tmp_path, "q").trigger(processingTime="100 milliseconds").start()
    wait_for(
        lambda: sum(p["numInputRows"] for p in query.recentProgress) >= 20,
        "two micro-batches",
    )
    query.stop()  # mid-way: 60 records at 10 per trigger
    done = len(output(spark, tmp_path, "q"))
    assert 20 <= done < 60
    sent += produce(servers, topic, [(i % 2, None, f"b{i}".encode()) for i in range(30)])
    df = stream(spark, servers, topic, maxOffsetsPerTrigger="25")
    again = to_parquet(df, tmp_path, "q").trigger(availableNow=True).start()
    again.awaitTermination()
    assert output(spark, tmp_path, "q") == expected(sent)  # no duplicate, no gap


def test_a_leader_change_during_a_query(spark, spark_cluster, new_topic, tmp_path):
    servers = spark_cluster.bootstrap_servers
    topic = new_topic(1)
    sent = produce(servers, topic, [(0, None, f"a{i}".encode()) for i in range(100)])
    df = stream(spark, servers, topic, maxOffsetsPerTrigger="20")
    query = to_parquet(df, tmp_path, "q").trigger(processingTime="200 milliseconds").start()
    with Admin(servers) as admin:
        try:
            wait_for(lambda: sum(p["numInputRows"] for p in query.recentProgress) >= 20, "a batch")
            leader = partition_state(admin, topic).leader
            spark_cluster.node(leader).kill()
            wait_for(
                lambda: partition_state(admin, topic).leader not in (-1, leader), "a new leader"
            )
            sent += produce(servers, topic, [(0, None, f"b{i}".encode()) for i in range(100)])
            wait_for(lambda: len(output(spark, tmp_path, "q")) >= 200, "every record", 120)
            assert query.exception() is None
        finally:
            query.stop()
            node = spark_cluster.node(leader)
            if not node.running:
                node.start()
            wait_for_full_isr(admin, topic)
    assert output(spark, tmp_path, "q") == expected(sent)


def test_data_loss_is_detected_or_skipped(spark, spark_cluster, new_topic, tmp_path):
    servers = spark_cluster.bootstrap_servers
    topic = new_topic(1)
    sent = produce(servers, topic, [(0, None, f"a{i}".encode()) for i in range(20)])
    to_parquet(stream(spark, servers, topic), tmp_path, "q").trigger(
        availableNow=True
    ).start().awaitTermination()
    assert output(spark, tmp_path, "q") == expected(sent)
    sent += produce(servers, topic, [(0, None, f"b{i}".encode()) for i in range(20)])
    with Admin(servers) as admin:
        result = admin.delete_records({TopicPartition(topic, 0): 30})
    assert result[TopicPartition(topic, 0)] == 30
    failing = to_parquet(stream(spark, servers, topic), tmp_path, "q")
    query = failing.trigger(availableNow=True).start()
    with pytest.raises(StreamingQueryException) as info:
        query.awaitTermination()
    text = str(info.value)
    assert "failOnDataLoss" in text and f"{topic}-0" in text and "[20, 30)" in text
    skipping = to_parquet(stream(spark, servers, topic, failOnDataLoss="false"), tmp_path, "q")
    skipping.trigger(availableNow=True).start().awaitTermination()
    assert output(spark, tmp_path, "q") == expected(sent, lambda p, o: o < 20 or o >= 30)


def test_a_streaming_write_copies_every_record_once(spark, spark_cluster, new_topic, tmp_path):
    """A streaming write (odradek to odradek) copies every record once."""
    servers = spark_cluster.bootstrap_servers
    source = new_topic(2)
    sink = new_topic(1)
    sent = produce(
        servers, source, [(i % 2, f"k{i}".encode(), f"v{i}".encode()) for i in range(50)]
    )
    query = (
        stream(spark, servers, source)
        .selectExpr("key", "value")
        .writeStream.format("odradek")
        .option("kafka.bootstrap.servers", servers)
        .option("topic", sink)
        .option("checkpointLocation", str(tmp_path / "copy"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    back = (
        spark.read.format("odradek")
        .option("kafka.bootstrap.servers", servers)
        .option("subscribe", sink)
        .load()
        .select("key", "value")
        .collect()
    )
    assert sorted(tuple(r) for r in back) == sorted((k, v) for _, _, k, v in sent)


def test_new_topics_of_a_pattern_are_read_from_earliest(spark, spark_cluster, new_topic, tmp_path):
    servers = spark_cluster.bootstrap_servers
    first = new_topic(1, prefix="grow")
    produce(servers, first, [(0, None, f"a{i}".encode()) for i in range(5)])
    later = f"{first}-new"

    def run() -> None:
        df = (
            spark.readStream.format("odradek")
            .option("kafka.bootstrap.servers", servers)
            .option("subscribePattern", f"{first}(-new)?")
            .option("startingOffsets", "latest")  # the first run only; then the checkpoint
            .load()
        )
        to_parquet(df, tmp_path, "q").trigger(availableNow=True).start().awaitTermination()

    run()  # starts at the end: reads nothing, checkpoints the offsets
    assert output(spark, tmp_path, "q") == []
    more = produce(servers, first, [(0, None, f"b{i}".encode()) for i in range(3)])
    with Admin(servers) as admin:
        assert admin.create_topics([NewTopic(later, 2, 3)])[later] is None
        wait_for_full_isr(admin, later, 2)
    added = produce(servers, later, [(i % 2, None, f"c{i}".encode()) for i in range(6)])
    run()
    assert output(spark, tmp_path, "q") == expected(more + added)


def test_micro_batch_end_offsets_are_committed_to_the_group(
    spark, spark_cluster, new_topic, tmp_path
):
    servers = spark_cluster.bootstrap_servers
    topic = new_topic(3)
    produce(servers, topic, [(i % 3, None, f"v{i}".encode()) for i in range(30)])
    df = stream(
        spark,
        servers,
        topic,
        maxOffsetsPerTrigger="9",
        commitOffsetsToGroup="true",
        **{"kafka.group.id": "spark-lag"},
    )
    query = to_parquet(df, tmp_path, "g").trigger(availableNow=True).start()
    query.awaitTermination()
    tps = [TopicPartition(topic, p) for p in range(3)]
    with Admin(servers) as admin:

        def committed() -> dict[TopicPartition, int] | None:
            found = admin.list_consumer_group_offsets("spark-lag", tps)
            offsets = {tp: om.offset for tp, om in found.items()}
            return offsets if sum(offsets.values()) >= 27 else None

        # Spark commits a batch's end when it starts the next one: every batch but maybe the
        # last is committed, at batch boundaries (9, 18, 27 records)
        offsets = wait_for(committed, "commits")
        assert sum(offsets.values()) in (27, 30)
        assert all(o <= 10 for o in offsets.values())


def test_offsets_json_naming_a_missing_partition_is_refused(spark, spark_cluster, new_topic):
    servers = spark_cluster.bootstrap_servers
    topic = new_topic(2)
    starting = f'{{"{topic}": {{"0": 0, "1": 0, "7": 0}}}}'
    with pytest.raises(Exception, match="does not have"):
        spark.read.format("odradek").option("kafka.bootstrap.servers", servers).option(
            "subscribe", topic
        ).option("startingOffsets", starting).load().collect()
