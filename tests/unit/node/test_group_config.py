"""Group configs (node/coordinator/group_config.py, Kafka 4's GroupConfig): Kafka's
validation with the broker's bounds, the lenient read of stored overrides, and the per-group
lookup (GroupConfigManager)."""

from __future__ import annotations

import pytest

from node.coordinator.group_config import (
    GROUP_CONFIG_NAMES,
    group_config,
    group_config_defaults,
    validate_group_config,
)
from node.coordinator.group_config_manager import GroupConfigManager
from node.coordinator.group_coordinator_config import GroupCoordinatorConfig
from odradek.errors import InvalidConfigError

BROKER = GroupCoordinatorConfig()


def test_kafka_4s_group_config_names():
    assert {
        "consumer.session.timeout.ms",
        "consumer.heartbeat.interval.ms",
        "share.auto.offset.reset",
        "share.record.lock.duration.ms",
        "share.isolation.level",
        "share.session.timeout.ms",
        "share.heartbeat.interval.ms",
        "streams.session.timeout.ms",
        "streams.heartbeat.interval.ms",
        "streams.num.standby.replicas",
    } == GROUP_CONFIG_NAMES


def test_defaults_come_from_the_broker():
    broker = GroupCoordinatorConfig(group_consumer_session_timeout_ms=50_000)
    defaults = group_config_defaults(broker)
    assert defaults["consumer.session.timeout.ms"] == "50000"
    assert defaults["share.auto.offset.reset"] == "latest"
    assert defaults["share.isolation.level"] == "read_uncommitted"


def test_valid_overrides_make_the_groups_config():
    c = validate_group_config(
        {
            "consumer.session.timeout.ms": "50000",
            "consumer.heartbeat.interval.ms": "6000",
            "share.auto.offset.reset": "by_duration:PT1H30M",
            "share.isolation.level": "READ_COMMITTED",
        },
        BROKER,
    )
    assert (c.consumer_session_timeout_ms, c.consumer_heartbeat_interval_ms) == (50_000, 6_000)
    assert c.share_isolation_level == "read_committed"
    assert c.share_record_lock_duration_ms == 30_000


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"consumer.session.timeout": "1"}, "Unknown group config name: consumer.session.timeout"),
        (
            {"consumer.session.timeout.ms": "ten"},
            "Invalid value ten for configuration consumer.session.timeout.ms: "
            "Not a number of type INT",
        ),
        (
            {"consumer.session.timeout.ms": "0"},
            "Invalid value 0 for configuration consumer.session.timeout.ms: "
            "Value must be at least 1",
        ),
        (
            {"consumer.session.timeout.ms": "44999"},
            "consumer.session.timeout.ms must be greater than or equal to "
            "group.consumer.min.session.timeout.ms",
        ),
        (
            {"consumer.session.timeout.ms": "60001"},
            "consumer.session.timeout.ms must be less than or equal to "
            "group.consumer.max.session.timeout.ms",
        ),
        (
            {"consumer.heartbeat.interval.ms": "4999"},
            "consumer.heartbeat.interval.ms must be greater than or equal to "
            "group.consumer.min.heartbeat.interval.ms",
        ),
        (
            {"share.record.lock.duration.ms": "999"},
            "Value must be at least 1000",
        ),
        (
            {"share.record.lock.duration.ms": "14999"},
            "share.record.lock.duration.ms must be greater than or equal to "
            "group.share.min.record.lock.duration.ms",
        ),
        ({"share.isolation.level": "serializable"}, "share.isolation.level"),
        ({"share.auto.offset.reset": "middle"}, "share.auto.offset.reset"),
        ({"share.auto.offset.reset": "by_duration:1h"}, "by_duration"),
        (
            {"streams.num.standby.replicas": "3"},
            "streams.num.standby.replicas must be less than or equal to "
            "group.streams.max.standby.replicas",
        ),
    ],
)
def test_kafkas_refusals_are_invalid_config(overrides, message):
    with pytest.raises(InvalidConfigError) as raised:
        validate_group_config(overrides, BROKER)
    assert message in raised.value.message


def test_a_session_timeout_must_exceed_the_heartbeat_interval():
    broker = GroupCoordinatorConfig(
        group_consumer_min_session_timeout_ms=1000, group_consumer_min_heartbeat_interval_ms=500
    )
    validate_group_config(
        {"consumer.session.timeout.ms": "2000", "consumer.heartbeat.interval.ms": "1000"}, broker
    )
    with pytest.raises(InvalidConfigError, match=r"must be greater than consumer\.heartbeat"):
        validate_group_config(
            {"consumer.session.timeout.ms": "2000", "consumer.heartbeat.interval.ms": "2000"},
            broker,
        )


def test_stored_overrides_are_read_leniently():
    c = group_config(
        {"consumer.session.timeout.ms": "ten", "consumer.heartbeat.interval.ms": "7000", "x": "1"},
        BROKER,
    )
    assert (c.consumer_session_timeout_ms, c.consumer_heartbeat_interval_ms) == (45_000, 7_000)


def test_the_manager_answers_each_group_its_own_config():
    manager = GroupConfigManager(BROKER)
    manager.update("a", {"consumer.heartbeat.interval.ms": "7000"})
    assert manager.group_config("a").consumer_heartbeat_interval_ms == 7000
    assert manager.group_config("b").consumer_heartbeat_interval_ms == 5000
    manager.retain({"b"})
    assert manager.group_config("a").consumer_heartbeat_interval_ms == 5000
    manager.update("b", {"consumer.session.timeout.ms": "50000"})
    manager.update("b", None)
    assert manager.overrides("b") == {}
