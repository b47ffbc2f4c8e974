"""The coordinator's partition rule and settings."""

from __future__ import annotations

import pytest

from node.config import config_from_properties
from node.group_coordinator import java_string_hash, partition_for
from node.group_coordinator_config import GroupCoordinatorConfig
from odradek.errors import InvalidConfigError


def test_java_string_hash() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    # a character outside the BMP is two UTF-16 code units, as in Java
    assert java_string_hash("\U0001f600") == 31 * 0xD83D + 0xDE00
    assert java_string_hash("polygenelubricants") == -(2**31)


def test_partition_for_is_kafkas_utils_abs_modulo() -> None:
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) is 0
    negative = "a" * 7  # overflows to a negative hash
    assert java_string_hash(negative) < 0
    assert partition_for(negative, 50) == abs(java_string_hash(negative)) % 50


def test_settings_from_properties() -> None:
    config = config_from_properties(
        {
            "node.id": "1",
            "log.dirs": "/tmp/x",
            "zookeeper.connect": "z:2181",
            "offsets.topic.num.partitions": "4",
            "group.consumer.session.timeout.ms": "6000",
        }
    )
    assert config.group_coordinator.offsets_topic_num_partitions == 4
    assert config.group_coordinator.group_consumer_session_timeout_ms == 6000
    assert config.group_coordinator.offsets_retention_minutes == 10080
    with pytest.raises(InvalidConfigError):
        GroupCoordinatorConfig(offsets_commit_timeout_ms=0)
