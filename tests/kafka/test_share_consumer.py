"""Share groups end to end (KIP-932) with confluent-kafka's ``ShareConsumer`` (librdkafka 2.16's
share consumer) against a real three-node cluster: membership (ShareGroupHeartbeat), records
acquired and acknowledged (ShareFetch / ShareAcknowledge) in both acknowledgement modes,
several consumers sharing one partition, RELEASE redelivering, REJECT never, and a consumer
that dies holding records."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, ShareConsumer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from tests.kafka.conftest import running_cluster, wait_for
from tests.kafka.test_confluent_kafka import create_topic, produce, unique

EXPLICIT = {"share.acknowledgement.mode": "explicit"}
CLIENT_WAIT_S = 180.0
"""A deadline for waits on librdkafka (its share consumer heartbeats every 5 s); not a timing
assertion."""


@pytest.fixture(scope="module")
def share_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    """Three nodes whose share groups may lock records for as little as a second."""
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "share-consumers",
        overrides={
            "default.replication.factor": "3",
            "group.share.min.record.lock.duration.ms": "1000",
        },
    ) as cluster:
        yield cluster


def set_group_configs(bootstrap: str, group: str, **configs: str) -> None:
    """Sets ``group``'s configs (IncrementalAlterConfigs on the GROUP resource)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(
        ResourceType.GROUP,
        group,
        incremental_configs=[
            ConfigEntry(name.replace("_", "."), value, incremental_operation=AlterConfigOpType.SET)
            for name, value in configs.items()
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def share_consumer(bootstrap: str, group: str, topic: str, **config: Any) -> ShareConsumer:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **config})
    consumer.subscribe([topic])
    return consumer


def poll_until(consumer: ShareConsumer, count: int, what: str) -> list[Any]:
    """Polls until ``count`` records came (explicit mode: the caller acknowledges them)."""
    got: list[Any] = []

    def enough() -> bool | None:
        got.extend(consumer.poll(0.5))
        return len(got) >= count or None

    wait_for(enough, what, CLIENT_WAIT_S)
    return got


def values_of(messages: Any) -> list[str]:
    out = []
    for m in messages:
        assert m.error() is None, m.error()
        out.append(m.value().decode())
    return out


def test_four_share_consumers_on_one_partition_each_get_records_and_none_twice(
    share_cluster: LocalCluster,
) -> None:
    bootstrap = share_cluster.kafka_bootstrap_servers
    topic, group = unique("queue"), unique("workers")
    create_topic(bootstrap, topic, partitions=1)
    set_group_configs(bootstrap, group, share_auto_offset_reset="earliest")
    count = 400
    # small batches (a share consumer acquires whole batches) and small polls, as a work queue
    produce(
        bootstrap,
        topic,
        [{"value": f"job-{i}".encode()} for i in range(count)],
        **{"batch.num.messages": 4},
    )
    consumers = [
        share_consumer(bootstrap, group, topic, **{"max.poll.records": 8}) for _ in range(4)
    ]
    got: list[Counter[str]] = [Counter() for _ in consumers]
    try:

        def all_read() -> bool | None:
            for c, seen in zip(consumers, got, strict=True):
                # implicit acknowledgement: this poll accepts what the previous one returned
                seen.update(values_of(c.poll(0.2)))
            return sum(sum(s.values()) for s in got) >= count or None

        wait_for(all_read, f"the four share consumers to read {count} records", CLIENT_WAIT_S)
    finally:
        for c in consumers:
            c.close()
    total = sum(got, Counter())
    assert set(total) == {f"job-{i}" for i in range(count)}
    assert max(total.values()) == 1, [v for v, n in total.items() if n > 1][:10]
    assert all(sum(s.values()) > 0 for s in got), [sum(s.values()) for s in got]


def test_release_redelivers_and_reject_never(share_cluster: LocalCluster) -> None:
    bootstrap = share_cluster.kafka_bootstrap_servers
    topic, group = unique("queue"), unique("explicit")
    create_topic(bootstrap, topic, partitions=1)
    set_group_configs(bootstrap, group, share_auto_offset_reset="earliest")
    produce(bootstrap, topic, [{"value": f"r{i}".encode()} for i in range(6)])
    consumer = share_consumer(bootstrap, group, topic, **EXPLICIT)
    try:
        first = poll_until(consumer, 6, "the consumer to acquire the six records")
        assert sorted(values_of(first)) == [f"r{i}" for i in range(6)]
        assert {m.delivery_count() for m in first} == {1}
        kinds = {"r1": AcknowledgeType.RELEASE, "r2": AcknowledgeType.REJECT}
        for m in first:
            consumer.acknowledge(m, kinds.get(m.value().decode(), AcknowledgeType.ACCEPT))
        consumer.commit_sync(30)
        again = poll_until(consumer, 1, "the released record to come back")
        assert [(m.value().decode(), m.delivery_count()) for m in again] == [("r1", 2)]
        for m in again:
            consumer.acknowledge(m, AcknowledgeType.ACCEPT)
        consumer.commit_sync(30)
        # nothing else comes: r2 was rejected, the rest accepted
        assert list(consumer.poll(3.0)) == []
    finally:
        consumer.close()


HOLDER = """
import sys
from confluent_kafka import ShareConsumer
bootstrap, group, topic, wanted = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                          "share.acknowledgement.mode": "explicit"})
consumer.subscribe([topic])
held = []
while len(held) < wanted:
    held.extend(m.value().decode() for m in consumer.poll(0.5) if m.error() is None)
print(" ".join(held), flush=True)
sys.stdin.read()  # holds the records, unacknowledged, until killed
"""


def test_records_a_killed_consumer_held_reach_another_after_the_lock_duration(
    share_cluster: LocalCluster,
) -> None:
    bootstrap = share_cluster.kafka_bootstrap_servers
    topic, group = unique("queue"), unique("dies")
    create_topic(bootstrap, topic, partitions=1)
    set_group_configs(
        bootstrap, group, share_auto_offset_reset="earliest", share_record_lock_duration_ms="2000"
    )
    produce(bootstrap, topic, [{"value": f"h{i}".encode()} for i in range(5)])
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, bootstrap, group, topic, "5"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        try:
            assert holder.stdout is not None
            held = holder.stdout.readline().split()
            assert sorted(held) == [f"h{i}" for i in range(5)]
        finally:
            holder.kill()  # SIGKILL: the five records stay acquired by a member that is gone
    other = share_consumer(bootstrap, group, topic, **EXPLICIT)
    try:
        got = poll_until(other, 5, "the dead consumer's records to reach another member")
        assert sorted((m.value().decode(), m.delivery_count()) for m in got) == [
            (f"h{i}", 2) for i in range(5)
        ]
        for m in got:
            other.acknowledge(m, AcknowledgeType.ACCEPT)
        other.commit_sync(30)
    finally:
        other.close()
