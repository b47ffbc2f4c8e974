"""odradek's own ``ShareConsumer`` (gRPC) against a real three-node cluster: two SDK share
consumers sharing a partition read every record once; RELEASE redelivers with delivery count 2
and REJECT never; a group of one SDK consumer and one confluent-kafka ``ShareConsumer`` (the
Kafka door) reads every record exactly once between them; close leaves the group and releases
what it held; a leader change (NOT_LEADER_OR_FOLLOWER) and a share session the leader lost
(SHARE_SESSION_NOT_FOUND) are followed without the application noticing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import ShareConsumer as KafkaShareConsumer

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from odradek import AcknowledgeType, Admin, ShareConsumer, ShareConsumerRecord, TopicPartition
from odradek.client.connection import ConnectionPool, call
from odradek.v1 import odradek_pb2 as pb
from tests.kafka.conftest import running_cluster, wait_for
from tests.kafka.test_confluent_kafka import create_topic, produce, unique
from tests.kafka.test_share_consumer import set_group_configs, values_of

CLIENT_WAIT_S = 180.0
"""A deadline for waits on the consumers (librdkafka heartbeats every 5 s); not a timing
assertion."""


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "sdk-share-consumers",
        overrides={
            "default.replication.factor": "3",
            # a lock longer than any wait here: only a release hands a held record on
            "group.share.max.record.lock.duration.ms": "600000",
        },
    ) as running:
        yield running


def queue(cluster: LocalCluster, name: str, group: str, count: int, prefix: str) -> str:
    """A one-partition topic holding ``count`` records in batches of four, read by ``group``
    from the earliest offset."""
    bootstrap = cluster.kafka_bootstrap_servers
    topic = unique(name)
    create_topic(bootstrap, topic, partitions=1)
    set_group_configs(bootstrap, group, share_auto_offset_reset="earliest")
    produce(
        bootstrap,
        topic,
        [{"value": f"{prefix}{i}".encode()} for i in range(count)],
        **{"batch.num.messages": 4},
    )
    return topic


def sdk_consumer(cluster: LocalCluster, group: str, topic: str, **config: Any) -> ShareConsumer:
    consumer = ShareConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group, **config)
    consumer.subscribe([topic])
    return consumer


def poll_until(consumer: ShareConsumer, count: int, what: str) -> list[ShareConsumerRecord]:
    got: list[ShareConsumerRecord] = []

    def enough() -> bool | None:
        got.extend(consumer.poll(timeout_ms=500))
        return len(got) >= count or None

    wait_for(enough, what, CLIENT_WAIT_S)
    return got


def decoded(records: list[ShareConsumerRecord]) -> list[str]:
    return [r.value.decode() for r in records if r.value is not None]


def describe(cluster: LocalCluster, group: str) -> pb.DescribedGroup:
    pool = ConnectionPool()
    try:
        address = cluster.bootstrap_servers.split(",")[0]
        coordinator = call(
            pool.broker(address).FindCoordinator,
            pb.FindCoordinatorRequest(group_ids=[group]),
            address=address,
            timeout_ms=30_000,
        ).coordinators[0]
        at = f"{coordinator.host}:{coordinator.port}"
        (described,) = call(
            pool.broker(at).ShareGroupDescribe,
            pb.ShareGroupDescribeRequest(group_ids=[group]),
            address=at,
            timeout_ms=30_000,
        ).groups
        return described
    finally:
        pool.close()


def test_two_sdk_share_consumers_read_every_record_once_between_them(
    cluster: LocalCluster,
) -> None:
    group = unique("sdk-workers")
    count = 400
    topic = queue(cluster, "sdk-queue", group, count, "job-")
    consumers = [sdk_consumer(cluster, group, topic, max_poll_records=8) for _ in range(2)]
    got: list[Counter[str]] = [Counter() for _ in consumers]
    try:

        def all_read() -> bool | None:
            for c, seen in zip(consumers, got, strict=True):
                # implicit acknowledgement: this poll accepts what the previous one returned
                records = c.poll(timeout_ms=200)
                assert all(r.delivery_count == 1 for r in records), records
                seen.update(decoded(records))
            return sum(sum(s.values()) for s in got) >= count or None

        wait_for(all_read, f"the two share consumers to read {count} records", CLIENT_WAIT_S)
    finally:
        for c in consumers:
            c.close()  # accepts the last poll's records
    total = sum(got, Counter())
    assert set(total) == {f"job-{i}" for i in range(count)}
    assert max(total.values()) == 1, [v for v, n in total.items() if n > 1][:10]
    assert all(sum(s.values()) > 0 for s in got), [sum(s.values()) for s in got]
    # every record was accepted: a new member of the group gets none of them
    with sdk_consumer(cluster, group, topic) as late:
        wait_for(lambda: late.assignment() or None, "the late member's assignment", CLIENT_WAIT_S)
        assert late.poll(timeout_ms=3_000) == []


def test_release_redelivers_with_delivery_count_two_and_reject_never(
    cluster: LocalCluster,
) -> None:
    group = unique("sdk-explicit")
    topic = queue(cluster, "sdk-release", group, 6, "r")
    with sdk_consumer(cluster, group, topic, acknowledgement_mode="explicit") as consumer:
        first = poll_until(consumer, 6, "the consumer to acquire the six records")
        assert sorted(decoded(first)) == [f"r{i}" for i in range(6)]
        assert {r.delivery_count for r in first} == {1}
        kinds = {"r1": AcknowledgeType.RELEASE, "r2": AcknowledgeType.REJECT}
        for r in first:
            consumer.acknowledge(r, kinds.get(decoded([r])[0], AcknowledgeType.ACCEPT))
        outcomes = consumer.commit_sync()
        assert outcomes and all(e is None for e in outcomes.values()), outcomes
        again = poll_until(consumer, 1, "the released record to come back")
        assert [(r.value, r.delivery_count) for r in again] == [(b"r1", 2)]
        with pytest.raises(ValueError):
            consumer.acknowledge(first[0])  # acknowledged already
        consumer.acknowledge(again[0], AcknowledgeType.ACCEPT)
        called: list[tuple[dict[TopicPartition, Any], Exception | None]] = []
        outcome = consumer.commit_async(lambda o, e: called.append((dict(o), e))).result(60)
        tp = TopicPartition(topic, 0)
        assert outcome == {tp: None}
        wait_for(lambda: called or None, "the commit callback", CLIENT_WAIT_S)
        assert called == [({tp: None}, None)]
        # nothing else comes: r2 was rejected, the rest accepted
        assert consumer.poll(timeout_ms=3_000) == []


def test_an_sdk_and_a_confluent_kafka_share_consumer_read_every_record_exactly_once(
    cluster: LocalCluster,
) -> None:
    group = unique("mixed")
    count = 400
    topic = queue(cluster, "mixed-queue", group, count, "m")
    ours = sdk_consumer(cluster, group, topic, max_poll_records=8)
    theirs = KafkaShareConsumer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "group.id": group,
            "max.poll.records": 8,
        }
    )
    theirs.subscribe([topic])
    got_ours: Counter[str] = Counter()
    got_theirs: Counter[str] = Counter()
    try:

        def all_read() -> bool | None:
            got_ours.update(decoded(ours.poll(timeout_ms=100)))
            got_theirs.update(values_of(theirs.poll(0.1)))
            return sum(got_ours.values()) + sum(got_theirs.values()) >= count or None

        wait_for(all_read, f"the two share consumers to read {count} records", CLIENT_WAIT_S)
    finally:
        ours.close()
        theirs.close()
    total = got_ours + got_theirs
    assert set(total) == {f"m{i}" for i in range(count)}
    assert max(total.values()) == 1, [v for v, n in total.items() if n > 1][:10]
    assert sum(got_ours.values()) > 0
    assert sum(got_theirs.values()) > 0


def test_close_leaves_the_group_and_releases_the_records_it_held(cluster: LocalCluster) -> None:
    group = unique("sdk-close")
    topic = queue(cluster, "sdk-close", group, 5, "h")
    set_group_configs(
        cluster.kafka_bootstrap_servers, group, share_record_lock_duration_ms="600000"
    )
    holder = sdk_consumer(cluster, group, topic, acknowledgement_mode="explicit")
    try:
        held = poll_until(holder, 5, "the holder to acquire the five records")
        member = holder.member_id
        assert [m.member_id for m in describe(cluster, group).members] == [member]
    finally:
        holder.close()  # its share session closed: the records are released, not locked on
    assert held and describe(cluster, group).members == []
    with sdk_consumer(cluster, group, topic, acknowledgement_mode="explicit") as other:
        got = poll_until(other, 5, "the released records to reach another member")
        assert sorted((r.value, r.delivery_count) for r in got) == [
            (f"h{i}".encode(), 2) for i in range(5)
        ]
        for r in got:
            other.acknowledge(r)
        other.commit_sync()


def test_a_leader_change_moves_the_share_session_to_the_new_leader(cluster: LocalCluster) -> None:
    group = unique("sdk-moves")
    topic = queue(cluster, "sdk-moves", group, 10, "a")
    tp = TopicPartition(topic, 0)
    with Admin(cluster.bootstrap_servers) as admin, sdk_consumer(cluster, group, topic) as c:
        assert sorted(decoded(poll_until(c, 10, "the first ten records"))) == sorted(
            f"a{i}" for i in range(10)
        )
        c.commit_sync()
        before = admin.cluster_metadata().partition(tp)
        assert before is not None
        others = [r for r in before.replicas if r != before.leader]
        # the same replicas, another one preferred: the preferred election moves the leader
        assert admin.alter_partition_reassignments({tp: [*others, before.leader]})[tp] is None

        def moved() -> bool | None:
            admin.elect_leaders([tp])
            now = admin.cluster_metadata().partition(tp)
            return (now is not None and now.leader == others[0]) or None

        wait_for(moved, "the preferred replica to lead", CLIENT_WAIT_S)
        produce(
            cluster.kafka_bootstrap_servers, topic, [{"value": f"b{i}".encode()} for i in range(10)]
        )
        # the old leader answers NOT_LEADER_OR_FOLLOWER; the consumer fetches from the new one
        # (whose share partition starts over: the a-records may come again)
        seen: set[str] = set()

        def all_b() -> bool | None:
            seen.update(decoded(c.poll(timeout_ms=500)))
            return {f"b{i}" for i in range(10)} <= seen or None

        wait_for(all_b, "the records produced after the move", CLIENT_WAIT_S)


def test_a_share_session_the_leader_lost_is_opened_again(cluster: LocalCluster) -> None:
    group = unique("sdk-session")
    topic = queue(cluster, "sdk-session", group, 5, "s")
    with sdk_consumer(cluster, group, topic) as c:
        assert len(poll_until(c, 5, "the first five records")) == 5
        c.commit_sync()
        # the member's share session closed behind its back (epoch -1 on every node): its
        # next ShareFetch is SHARE_SESSION_NOT_FOUND and it opens a new one
        pool = ConnectionPool()
        try:
            closed = [
                call(
                    pool.broker(address).ShareAcknowledge,
                    pb.ShareAcknowledgeRequest(
                        group_id=group, member_id=c.member_id, share_session_epoch=-1
                    ),
                    address=address,
                    timeout_ms=30_000,
                ).error_code
                for address in cluster.bootstrap_servers.split(",")
            ]
        finally:
            pool.close()
        assert closed.count(0) == 1, closed
        produce(
            cluster.kafka_bootstrap_servers, topic, [{"value": f"t{i}".encode()} for i in range(5)]
        )
        assert sorted(decoded(poll_until(c, 5, "the records after the session was lost"))) == [
            f"t{i}" for i in range(5)
        ]
