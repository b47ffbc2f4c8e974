"""Option parsing of the Spark connector: Spark's Kafka names, defaults and errors."""

from __future__ import annotations

import pytest

from odradek.client.types import TopicPartition
from odradek.spark.options import (
    OdradekSparkOptionError,
    parse_read_options,
    parse_write_options,
)

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "events"}


def read(streaming: bool | None = False, **extra: str):
    options = {**BASE, **{k.lower(): v for k, v in extra.items()}}
    return parse_read_options(options, streaming=streaming)


def error(streaming: bool | None = False, drop: tuple[str, ...] = (), **extra: str):
    options = {**BASE, **{k.lower(): v for k, v in extra.items()}}
    for key in drop:
        options.pop(key)
    with pytest.raises(OdradekSparkOptionError) as info:
        parse_read_options(options, streaming=streaming)
    return info.value


def test_defaults_follow_spark_batch_earliest_to_latest_streaming_from_latest():
    batch = read()
    assert batch.bootstrap_servers == "127.0.0.1:9092"
    assert batch.subscription.topics == ("events",)
    assert batch.starting.kind == "earliest"
    assert batch.ending is not None and batch.ending.kind == "latest"
    assert batch.fail_on_data_loss and not batch.include_headers
    stream = read(streaming=True)
    assert stream.starting.kind == "latest"
    assert stream.ending is None


def test_odradek_servers_name_is_accepted_and_servers_are_required():
    opts = parse_read_options(
        {"odradek.bootstrap.servers": "h1:1,h2:2", "subscribe": "a"}, streaming=False
    )
    assert opts.bootstrap_servers == "h1:1,h2:2"
    assert "odradek.bootstrap.servers" in str(error(drop=("kafka.bootstrap.servers",)))


def test_json_offsets_with_special_values():
    opts = read(
        startingOffsets='{"events": {"0": 5, "1": -2}}', endingOffsets='{"events": {"0": -1}}'
    )
    assert opts.starting.kind == "offsets"
    assert opts.starting.offsets == {
        TopicPartition("events", 0): 5,
        TopicPartition("events", 1): -2,
    }
    assert opts.ending is not None and opts.ending.offsets == {TopicPartition("events", 0): -1}


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("startingOffsets", '{"events": {"0": 5'),
        ("startingOffsets", "[1, 2]"),
        ("startingOffsets", "somewhere"),
        ("startingOffsets", '{"events": {"x": 5}}'),
        ("startingOffsets", '{"events": {"0": -3}}'),
        ("endingOffsets", '{"events": {"0": "5"}}'),
        ("startingOffsetsByTimestamp", '{"events": {"0": -1}}'),
        ("startingTimestamp", "yesterday"),
        ("minPartitions", "0"),
        ("maxOffsetsPerTrigger", "many"),
        ("failOnDataLoss", "maybe"),
        ("includeHeaders", "yes"),
        ("startingOffsetsByTimestampStrategy", "closest"),
    ],
)
def test_malformed_values_name_their_option(option, value):
    assert f"'{option}'" in str(error(**{option: value}))
    assert error(**{option: value}).option == option


def test_offsets_for_partitions_not_read_are_refused():
    e = error(startingOffsets='{"other": {"0": 1}}')
    assert "'startingOffsets'" in str(e) and "other-0" in str(e)


def test_exactly_one_subscription_option():
    e = error(assign='{"events": [0]}')
    assert "subscribe" in str(e) and "assign" in str(e)
    e = error(drop=("subscribe",))
    assert "'subscribe', 'subscribePattern' and 'assign'" in str(e)
    assert "'subscribePattern'" in str(error(drop=("subscribe",), subscribePattern="(unclosed"))
    assert "'assign'" in str(error(drop=("subscribe",), assign='{"events": "0"}'))


def test_assign_and_pattern():
    opts = parse_read_options(
        {"kafka.bootstrap.servers": "h:1", "assign": '{"a": [0, 2], "b": [1]}'}, streaming=False
    )
    assert opts.subscription.partitions == (
        TopicPartition("a", 0),
        TopicPartition("a", 2),
        TopicPartition("b", 1),
    )
    pattern = parse_read_options(
        {"kafka.bootstrap.servers": "h:1", "subscribepattern": "ev.*"}, streaming=True
    ).subscription
    assert pattern.matches("events") and not pattern.matches("my-events")


def test_batch_and_streaming_restrictions_of_spark():
    assert "'startingOffsets'" in str(error(startingOffsets="latest"))
    assert "'startingOffsets'" in str(error(startingOffsets='{"events": {"0": -1}}'))
    assert "'endingOffsets'" in str(error(endingOffsets="earliest"))
    assert "'endingOffsets'" in str(error(streaming=True, endingOffsets="latest"))
    # schema() does not know the mode: it checks only what both modes share.
    assert read(streaming=None, startingOffsets="latest").starting.kind == "latest"


def test_timestamp_precedence_is_sparks():
    opts = read(
        startingTimestamp="1000",
        startingOffsetsByTimestamp='{"events": {"0": 5}}',
        startingOffsets="earliest",
        endingOffsetsByTimestamp='{"events": {"0": 2000}}',
    )
    assert (opts.starting.kind, opts.starting.timestamp) == ("timestamp", 1000)
    assert opts.ending is not None and opts.ending.kind == "timestamps"
    assert opts.ending.timestamps == {TopicPartition("events", 0): 2000}


def test_write_options():
    opts = parse_write_options(
        {"kafka.bootstrap.servers": "h:1", "topic": "out", "kafka.acks": "all"}
    )
    assert (opts.topic, opts.acks) == ("out", -1)
    assert parse_write_options({"odradek.bootstrap.servers": "h:1", "kafka.acks": "1"}).acks == 1
    with pytest.raises(OdradekSparkOptionError, match=r"'kafka\.acks'"):
        parse_write_options({"kafka.bootstrap.servers": "h:1", "kafka.acks": "2"})
    with pytest.raises(OdradekSparkOptionError, match=r"'kafka\.compression\.type'"):
        parse_write_options({"kafka.bootstrap.servers": "h:1", "kafka.compression.type": "x"})


def test_min_offsets_per_trigger_and_max_trigger_delay():
    opts = read(streaming=True, minOffsetsPerTrigger="100", maxTriggerDelay="30s")
    assert (opts.min_offsets_per_trigger, opts.max_trigger_delay_ms) == (100, 30_000)
    assert read(streaming=True).max_trigger_delay_ms == 15 * 60_000  # Spark's default
    assert read(streaming=True, maxTriggerDelay="250").max_trigger_delay_ms == 250
    assert read(streaming=True, maxTriggerDelay="2min").max_trigger_delay_ms == 120_000
    assert error(streaming=True, maxTriggerDelay="5 minutes").option == "maxTriggerDelay"
    e = error(streaming=True, minOffsetsPerTrigger="100", maxOffsetsPerTrigger="10")
    assert e.option == "minOffsetsPerTrigger" and "higher than" in str(e)


def test_group_options_for_commits() -> None:
    assert read(streaming=True).commit_group_id is None
    assert read(streaming=True, **{"kafka.group.id": "g"}).commit_group_id is None
    opts = read(streaming=True, commitOffsetsToGroup="true", **{"kafka.group.id": "lag-view"})
    assert opts.commit_group_id == "lag-view"
    generated = read(streaming=True, commitOffsetsToGroup="true", groupIdPrefix="q1")
    assert generated.commit_group_id is not None and generated.commit_group_id.startswith("q1-")
    default = read(streaming=True, commitOffsetsToGroup="true").commit_group_id
    assert default is not None and default.startswith("spark-kafka-source-")
    with pytest.raises(OdradekSparkOptionError) as info:
        read(streaming=False, commitOffsetsToGroup="true")
    assert info.value.option == "commitOffsetsToGroup"
    with pytest.raises(OdradekSparkOptionError):
        read(streaming=True, **{"kafka.group.id": " "})


def test_isolation_level_spelt_as_sparks_kafka_source() -> None:
    def level(value: str, streaming: bool = False) -> str:
        options = {**BASE, "kafka.isolation.level": value}
        return parse_read_options(options, streaming=streaming).isolation_level

    assert read().isolation_level == "read_uncommitted"
    assert level("READ_COMMITTED", streaming=True) == "read_committed"
    assert level("read_uncommitted") == "read_uncommitted"
    with pytest.raises(OdradekSparkOptionError) as info:
        level("serializable")
    assert info.value.option == "kafka.isolation.level" and "'serializable'" in str(info.value)
