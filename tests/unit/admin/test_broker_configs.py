"""Dynamic broker configs (node/admin/broker_configs.py): Kafka's validation of a BROKER
resource's configs, the effective topic defaults, and DescribeConfigs' sources and synonyms."""

from __future__ import annotations

import pytest

from node.admin.broker_configs import (
    DYNAMIC_LOG_CONFIGS,
    describe_broker_configs,
    dynamic_broker_config_names,
    effective_log_defaults,
    validate_broker_configs,
)
from node.admin.requests import ConfigSource, ConfigType
from odradek.errors import InvalidRequestError
from storage.config import LogConfig

STATIC = frozenset({"log.dirs", "num.partitions", "zookeeper.connect"})


def check(props: dict[str, str], threads: int = 1) -> None:
    validate_broker_configs(
        props, static_names=STATIC, base=LogConfig(), current_cleaner_threads=threads
    )


def test_the_topic_defaults_are_dynamic_under_their_broker_names():
    names = dynamic_broker_config_names()
    for name in (
        "log.retention.ms",
        "log.retention.bytes",
        "log.segment.bytes",
        "log.roll.ms",
        "min.insync.replicas",
        "log.cleanup.policy",
        "message.max.bytes",
        "log.cleaner.threads",
    ):
        assert name in names
    assert DYNAMIC_LOG_CONFIGS["log.roll.ms"] == "segment.ms"
    assert "log.dirs" not in names and "log.retention.hours" not in names


def test_valid_dynamic_configs_pass():
    check({"log.retention.ms": "1", "min.insync.replicas": "2", "log.cleaner.threads": "2"})


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"log.dirs": "/x"}, "Cannot update these configs dynamically: Set(log.dirs)"),
        (
            {"num.partitions": "3", "log.dirs": "/x", "log.retention.ms": "1"},
            "Cannot update these configs dynamically: Set(log.dirs, num.partitions)",
        ),
        ({"log.retention.mss": "1"}, "Unknown broker config name: log.retention.mss"),
        ({"log.retention.ms": "soon"}, "log.retention.ms"),
        ({"min.insync.replicas": "0"}, "min.insync.replicas"),
        (
            {"log.cleaner.threads": "x"},
            "Invalid value x for configuration log.cleaner.threads: Not a number of type INT",
        ),
        ({"log.cleaner.threads": "0"}, "Log cleaner threads should be at least 1"),
        (
            {"log.cleaner.threads": "3"},
            "Log cleaner threads cannot be increased to more than double the current value 1",
        ),
        (
            {"log.cleaner.io.buffer.load.factor": "1.5"},
            "log.cleaner.io.buffer.load.factor",
        ),
    ],
)
def test_kafkas_refusals_are_invalid_request(props, message):
    with pytest.raises(InvalidRequestError) as raised:
        check(props)
    assert message in raised.value.message


def test_cleaner_threads_may_not_drop_below_half_the_current_value():
    check({"log.cleaner.threads": "2"}, threads=4)
    with pytest.raises(InvalidRequestError, match="reduced to less than half the current value 5"):
        check({"log.cleaner.threads": "1"}, threads=5)


def test_effective_defaults_lay_the_dynamic_values_over_the_static_ones_skipping_bad_ones():
    static = LogConfig(retention_ms=10_000, segment_bytes=1 << 20)
    out = effective_log_defaults(
        static,
        {
            "log.retention.ms": "5",
            "min.insync.replicas": "not-a-number",
            "log.cleaner.threads": "2",
        },
    )
    assert (out.retention_ms, out.segment_bytes, out.min_insync_replicas) == (5, 1 << 20, 1)


def test_a_broker_describes_every_dynamic_config_with_the_most_specific_source_first():
    entries = {
        e.name: e
        for e in describe_broker_configs(
            static_log=LogConfig(retention_bytes=1000),
            static_other={"num.partitions": ("3", ConfigType.INT)},
            default={"log.retention.ms": "5", "log.retention.bytes": "7"},
            broker={"log.retention.ms": "9"},
            keys=None,
            include_synonyms=True,
        )
    }
    ms = entries["log.retention.ms"]
    assert (ms.value, ms.config_source, ms.read_only) == (
        "9",
        ConfigSource.DYNAMIC_BROKER_CONFIG,
        False,
    )
    assert [s.source for s in ms.synonyms] == [
        ConfigSource.DYNAMIC_BROKER_CONFIG,
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        ConfigSource.DEFAULT_CONFIG,
    ]
    size = entries["log.retention.bytes"]
    assert [(s.value, s.source) for s in size.synonyms] == [
        ("7", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("1000", ConfigSource.STATIC_BROKER_CONFIG),
        ("-1", ConfigSource.DEFAULT_CONFIG),
    ]
    assert size.config_type is ConfigType.LONG
    assert entries["log.cleaner.threads"].config_source is ConfigSource.DEFAULT_CONFIG
    assert entries["num.partitions"].read_only


def test_the_default_resource_describes_only_what_is_set_at_the_default_level():
    entries = describe_broker_configs(
        static_log=LogConfig(),
        static_other={"num.partitions": ("3", ConfigType.INT)},
        default={"log.retention.ms": "5"},
        broker=None,
        keys=None,
        include_synonyms=False,
    )
    assert [(e.name, e.value, e.config_source) for e in entries] == [
        ("log.retention.ms", "5", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    ]
