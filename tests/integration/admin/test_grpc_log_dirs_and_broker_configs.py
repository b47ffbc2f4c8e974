"""DescribeLogDirs and broker DescribeConfigs over gRPC, through the SDK, against real node
processes on a real ZooKeeper: each node answers for itself (the SDK asks every broker), sizes
grow with produced bytes, and a ``server.properties`` override shows as STATIC_BROKER_CONFIG."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from deploy.local.cluster import LocalCluster
from odradek import Admin, ConfigEntry, NewTopic, Producer, TopicPartition
from odradek.errors import BrokerNotAvailableError
from tests.integration.helpers import wait_for, wait_for_full_isr


def _sizes(admin: Admin, topic: str) -> dict[int, dict[TopicPartition, int]]:
    out: dict[int, dict[TopicPartition, int]] = {}
    for broker, dirs in admin.describe_log_dirs().items():
        for d in dirs.values():
            assert d.error is None
            for tp, info in d.replica_infos.items():
                if tp.topic == topic:
                    assert (info.offset_lag, info.is_future) == (0, False)
                    out.setdefault(broker, {})[tp] = info.size
    return out


def test_log_dirs_per_broker_grow_with_produced_bytes(
    make_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = make_cluster(3)
    with Admin(cluster.bootstrap_servers) as admin:
        assert admin.create_topics([NewTopic("sized", 2, 2)], timeout_ms=30_000) == {"sized": None}
        wait_for_full_isr(admin, "sized", partitions=2, rf=2)
        before = _sizes(admin, "sized")
        # every replica is reported by the broker that hosts it, and only there
        described = admin.describe_topics(["sized"])["sized"]
        hosts = {
            (b, TopicPartition("sized", p.partition))
            for p in described.partitions
            for b in p.replicas
        }
        assert {(b, tp) for b, tps in before.items() for tp in tps} == hosts
        assert sorted(admin.describe_log_dirs([1])) == [1]
        with Producer(cluster.bootstrap_servers, acks=-1) as producer:
            for i in range(200):
                producer.send("sized", b"v" * 1000, key=b"k%d" % i, partition=0)
            producer.flush()
        tp0 = TopicPartition("sized", 0)

        def grown() -> dict[int, dict[TopicPartition, int]] | None:
            after = _sizes(admin, "sized")
            ok = all(after[b][tp0] > 200_000 for b, tps in before.items() if tp0 in tps)
            return after if ok else None

        after = wait_for(grown, "partition 0's replicas to hold the produced bytes")
        for b, tps in before.items():
            if tp0 in tps:
                assert after[b][tp0] > before[b][tp0]
        with pytest.raises(BrokerNotAvailableError, match="broker 7"):
            admin.describe_log_dirs([7])


def test_broker_configs_mark_server_properties_overrides(
    make_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = make_cluster(2, log_retention_ms="3600000")
    with Admin(cluster.bootstrap_servers) as admin:
        # every broker, once the answering node's metadata knows both (a CI run asked before
        # the controller's first UpdateMetadata reached it, and got broker 0 alone)
        def both() -> dict[int, dict[str, ConfigEntry]] | None:
            found = admin.describe_broker_configs()
            return found if len(found) == 2 else None

        configs = wait_for(both, "both brokers' configs")
        assert sorted(configs) == [0, 1]
        for entries in configs.values():
            retention = entries["log.retention.ms"]
            assert (retention.value, retention.source) == ("3600000", "STATIC_BROKER_CONFIG")
            assert not retention.read_only  # a dynamic broker config (KIP-226)
            assert entries["num.partitions"].read_only
            assert entries["log.segment.bytes"].source == "DEFAULT_CONFIG"
        # the topic call keeps its shape and now says where values come from
        assert admin.create_topics([NewTopic("c", 1, 1, configs={"segment.ms": "5000"})]) == {
            "c": None
        }
        topic = admin.describe_configs(["c"])["c"]
        assert (topic["segment.ms"].is_default, topic["segment.ms"].source) == (
            False,
            "DYNAMIC_TOPIC_CONFIG",
        )
        assert topic["retention.ms"].source == "STATIC_BROKER_CONFIG"
        assert topic["retention.ms"].value == "3600000"
        with pytest.raises(BrokerNotAvailableError):
            admin.describe_broker_configs([9])
