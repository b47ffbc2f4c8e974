"""IncrementalAlterConfigs' operations and DescribeConfigs' view of topic configs (pure)."""

import pytest

from node.admin.config_ops import (
    apply_incremental_ops,
    broker_synonym,
    check_incremental_ops,
    describe_topic_configs,
    topic_config_names,
)
from node.admin.requests import AlterConfigOp, AlterConfigOpType, ConfigSource, ConfigType
from odradek.errors import InvalidConfigError, InvalidRequestError
from storage.config import LogConfig

SET, DELETE, APPEND, SUBTRACT = (
    AlterConfigOpType.SET,
    AlterConfigOpType.DELETE,
    AlterConfigOpType.APPEND,
    AlterConfigOpType.SUBTRACT,
)
KNOWN = topic_config_names()
DEFAULTS = LogConfig().to_kafka()


def apply(current, *ops):
    return apply_incremental_ops(current, ops, DEFAULTS, KNOWN)


def test_set_and_delete_change_only_the_named_overrides():
    current = {"retention.ms": "1000", "segment.bytes": "2048"}
    out = apply(
        current,
        AlterConfigOp("retention.ms", SET, "5000"),
        AlterConfigOp("segment.bytes", DELETE),
        AlterConfigOp("min.insync.replicas", SET, "2"),
    )
    assert out == {"retention.ms": "5000", "min.insync.replicas": "2"}
    assert current == {"retention.ms": "1000", "segment.bytes": "2048"}  # not mutated
    # deleting an override the topic does not have is no error (Kafka: Properties.remove)
    assert apply({}, AlterConfigOp("retention.ms", DELETE)) == {}


def test_append_starts_from_the_default_and_adds_only_new_values():
    assert DEFAULTS["cleanup.policy"] == "delete"
    out = apply({}, AlterConfigOp("cleanup.policy", APPEND, "compact,delete"))
    assert out == {"cleanup.policy": "delete,compact"}
    again = apply(out, AlterConfigOp("cleanup.policy", APPEND, "compact"))
    assert again == {"cleanup.policy": "delete,compact"}


def test_subtract_removes_values_from_the_override_or_the_default():
    assert apply(
        {"cleanup.policy": "compact,delete"}, AlterConfigOp("cleanup.policy", SUBTRACT, "delete")
    ) == {"cleanup.policy": "compact"}
    assert apply({}, AlterConfigOp("cleanup.policy", SUBTRACT, "delete")) == {"cleanup.policy": ""}


@pytest.mark.parametrize("op", [APPEND, SUBTRACT])
def test_list_operations_need_a_list_config(op):
    with pytest.raises(InvalidConfigError, match=r"not allowed for config key: retention\.ms"):
        apply({}, AlterConfigOp("retention.ms", op, "1"))


@pytest.mark.parametrize("op", [DELETE, APPEND, SUBTRACT])
def test_an_unknown_name_is_invalid_config(op):
    with pytest.raises(InvalidConfigError, match=r"Unknown config name: no\.such"):
        apply({}, AlterConfigOp("no.such", op, "x"))
    # SET leaves the unknown name for the validation of the whole (LogConfig.from_kafka)
    assert apply({}, AlterConfigOp("no.such", SET, "x")) == {"no.such": "x"}


def test_preprocessing_refuses_duplicates_and_missing_values():
    with pytest.raises(InvalidRequestError, match="duplicate config keys"):
        check_incremental_ops(
            [AlterConfigOp("retention.ms", SET, "1"), AlterConfigOp("retention.ms", DELETE)]
        )
    with pytest.raises(InvalidRequestError, match=r"Null value not supported for : retention\.ms"):
        check_incremental_ops([AlterConfigOp("retention.ms", SET, None)])
    check_incremental_ops([AlterConfigOp("retention.ms", DELETE, None)])


def test_broker_synonyms_are_kafkas_names():
    assert broker_synonym("retention.ms") == "log.retention.ms"
    assert broker_synonym("segment.ms") == "log.roll.ms"
    assert broker_synonym("max.message.bytes") == "message.max.bytes"
    assert broker_synonym("min.insync.replicas") == "min.insync.replicas"


def test_describe_gives_each_config_its_source_and_synonyms():
    node = LogConfig(retention_ms=3_600_000, segment_bytes=1 << 20)
    entries = {e.name: e for e in describe_topic_configs({"segment.bytes": "4096"}, node)}
    assert set(entries) == set(DEFAULTS)
    segment = entries["segment.bytes"]
    assert (segment.value, segment.config_source) == ("4096", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert [(s.name, s.value, s.source) for s in segment.synonyms] == [
        ("segment.bytes", "4096", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("log.segment.bytes", str(1 << 20), ConfigSource.STATIC_BROKER_CONFIG),
        ("log.segment.bytes", DEFAULTS["segment.bytes"], ConfigSource.DEFAULT_CONFIG),
    ]
    assert not segment.is_default
    retention = entries["retention.ms"]
    assert (retention.value, retention.config_source) == (
        "3600000",
        ConfigSource.STATIC_BROKER_CONFIG,
    )
    assert retention.is_default  # no override: the gRPC API's is_default
    flush = entries["flush.ms"]
    assert flush.config_source is ConfigSource.DEFAULT_CONFIG
    assert [s.source for s in flush.synonyms] == [ConfigSource.DEFAULT_CONFIG]
    assert not any(e.read_only or e.is_sensitive for e in entries.values())
    types = {n: e.config_type for n, e in entries.items()}
    assert types["cleanup.policy"] is ConfigType.LIST
    assert types["segment.bytes"] is ConfigType.INT
    assert types["retention.ms"] is ConfigType.LONG
    assert types["unclean.leader.election.enable"] is ConfigType.BOOLEAN
    assert types["min.cleanable.dirty.ratio"] is ConfigType.DOUBLE
    assert types["message.timestamp.type"] is ConfigType.STRING


def test_describe_only_the_asked_keys_without_synonyms():
    entries = describe_topic_configs(
        {}, LogConfig(), ["retention.ms", "no.such", "retention.ms"], include_synonyms=False
    )
    assert [(e.name, e.synonyms) for e in entries] == [("retention.ms", ())]


def test_compression_type_is_described_with_kafkas_broker_synonym():
    # Kafka's broker config of the same name (not log.compression.type), STRING; the levels INT
    described = {
        c.name: c
        for c in describe_topic_configs(
            {"compression.type": "gzip"}, LogConfig(compression_type="zstd")
        )
    }
    entry = described["compression.type"]
    assert (entry.value, entry.config_source) == ("gzip", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert [(s.name, s.value, s.source) for s in entry.synonyms] == [
        ("compression.type", "gzip", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("compression.type", "zstd", ConfigSource.STATIC_BROKER_CONFIG),
        ("compression.type", "producer", ConfigSource.DEFAULT_CONFIG),
    ]
    assert entry.config_type is ConfigType.STRING
    level = described["compression.gzip.level"]
    assert (level.value, level.config_source) == ("-1", ConfigSource.DEFAULT_CONFIG)
    assert level.config_type is ConfigType.INT
