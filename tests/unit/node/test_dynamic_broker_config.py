"""A node's config with the dynamic broker configs over it (node/dynamic_broker_config.py):
the per-broker value over the cluster-wide one over server.properties, a topic's own override
over all of them, and the listeners told only of a real change."""

from __future__ import annotations

from pathlib import Path

from node.config import NodeConfig
from node.dynamic_broker_config import DynamicBrokerConfig
from storage.config import LogConfig


def config() -> DynamicBrokerConfig:
    static = NodeConfig(
        node_id=3,
        log_dirs=(Path("/tmp/unused"),),
        zookeeper_connect="127.0.0.1:1",
        log=LogConfig(retention_ms=10_000, segment_bytes=1 << 20),
    )
    return DynamicBrokerConfig(static)


def test_the_levels_in_kafkas_order():
    c = config()
    calls: list[int] = []
    c.listeners.append(lambda: calls.append(c.log.retention_ms))
    assert c.topic_config({}).retention_ms == 10_000
    assert c.update(default={"log.retention.ms": "5000", "min.insync.replicas": "2"})
    assert (c.log.retention_ms, c.log.min_insync_replicas) == (5_000, 2)
    assert c.update(own={"log.retention.ms": "7000"})
    assert c.log.retention_ms == 7_000
    assert c.topic_config({"retention.ms": "1"}).retention_ms == 1  # the topic's own wins
    assert c.topic_config({}).segment_bytes == 1 << 20  # server.properties under them
    assert not c.update(own={"log.retention.ms": "7000"})  # no change, no listener call
    assert c.update(own={})
    assert c.log.retention_ms == 5_000
    assert calls == [5_000, 7_000, 5_000]
    assert c.dynamic == {"log.retention.ms": "5000", "min.insync.replicas": "2"}


def test_a_stored_value_that_does_not_apply_is_skipped_the_rest_applies():
    c = config()
    c.update(default={"log.retention.ms": "soon", "log.segment.bytes": "2048"})
    assert (c.log.retention_ms, c.log.segment_bytes) == (10_000, 2048)


def test_the_replica_settings_are_the_static_ones():
    c = config()
    assert (c.node_id, c.replica_lag_time_max_ms) == (3, c.static.replica_lag_time_max_ms)
    c.update(default={"log.cleaner.threads": "2"})
    assert c.cleaner_threads == 2


def test_cleaner_threads_is_the_static_value_unless_set_dynamically():
    static = NodeConfig(
        node_id=3,
        log_dirs=(Path("/tmp/unused"),),
        zookeeper_connect="127.0.0.1:1",
        log_cleaner_threads=2,
    )
    c = DynamicBrokerConfig(static)
    assert c.cleaner_threads == 2
    c.update(default={"log.cleaner.threads": "4"})
    assert c.cleaner_threads == 4
    c.update(default={}, own={"log.cleaner.threads": "3"})
    assert c.cleaner_threads == 3
    c.update(own={})
    assert c.cleaner_threads == 2
