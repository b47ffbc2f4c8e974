"""A group member's liveness and leaving on a real cluster (issue 27, items 1-3), after
Kafka's PlaintextConsumerTest: a member busy between polls for longer than the session timeout
keeps its partitions (heartbeats go out from its heartbeat thread) and no record is read twice;
past ``max_poll_interval_ms`` it leaves by itself and joins again at its next poll
(testMaxPollIntervalMs); ``close`` and ``unsubscribe`` call ``on_partitions_revoked``; a commit
naming a missing topic retries until its deadline, raises its own error, and leaves the
membership alone."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from odradek import Admin, Consumer, NewTopic, Producer, TopicPartition
from odradek.errors import UnknownTopicOrPartitionError, UnsupportedAssignorError
from tests.integration.helpers import wait_for

TOPIC = "work"
PARTITIONS = 4
SESSION_TIMEOUT_MS = 4_000
SETTINGS = {
    "offsets_topic_num_partitions": "1",
    "offsets_topic_replication_factor": "1",
    "group_consumer_session_timeout_ms": str(SESSION_TIMEOUT_MS),
    "group_consumer_heartbeat_interval_ms": "300",
}


class Listener:
    def __init__(self) -> None:
        self.events: list[tuple[str, frozenset[int]]] = []

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.events.append(("assigned", frozenset(p.partition for p in assigned)))

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.events.append(("revoked", frozenset(p.partition for p in revoked)))

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.events.append(("lost", frozenset(p.partition for p in lost)))

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.events]


def _setup(make_cluster, records_per_partition: int = 10) -> str:
    cluster = make_cluster(1, **SETTINGS)
    bootstrap: str = cluster.bootstrap_servers
    with Admin(bootstrap) as admin:
        created = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)], timeout_ms=30_000)
        assert created[TOPIC] is None
    with Producer(bootstrap) as producer:
        for p in range(PARTITIONS):
            for i in range(records_per_partition):
                producer.send(TOPIC, f"{p}-{i}".encode(), partition=p)
        producer.flush()
    return bootstrap


def _member(bootstrap: str, group: str, **config: object) -> Consumer:
    return Consumer(bootstrap, group_id=group, auto_offset_reset="earliest", **config)  # type: ignore[arg-type]


def _all_partitions(consumer: Consumer, seen: Counter[str]) -> bool:
    for r in consumer.poll(timeout_ms=100):
        assert r.value is not None
        seen[r.value.decode()] += 1
    return len(consumer.assignment()) == PARTITIONS


def test_a_member_busy_past_the_session_timeout_keeps_its_partitions(make_cluster) -> None:
    bootstrap = _setup(make_cluster)
    seen: Counter[str] = Counter()
    busy, listener = _member(bootstrap, "busy"), Listener()
    other = _member(bootstrap, "busy")
    try:
        busy.subscribe([TOPIC], listener)
        wait_for(lambda: _all_partitions(busy, seen) and len(seen) == 40, "every record read")
        epoch = busy._group.member_epoch if busy._group else 0
        # the busy member works on its batch for 1.5 session timeouts without polling, while
        # another member joins and polls
        other.subscribe([TOPIC])
        until = time.monotonic() + 1.5 * SESSION_TIMEOUT_MS / 1000  # noqa: TID251 (the work)
        while time.monotonic() < until:  # noqa: TID251
            for r in other.poll(timeout_ms=100):
                assert r.value is not None
                seen[r.value.decode()] += 1
        assert "lost" not in listener.kinds(), "the busy member was fenced"
        assert busy._group is not None and busy._group.member_epoch >= epoch
        # back from its work: it commits and hands over half, which the other reads from there
        wait_for(
            lambda: (
                busy.poll(timeout_ms=50),
                other.poll(timeout_ms=50),
                len(busy.assignment()) == len(other.assignment()) == PARTITIONS // 2,
            )[2],
            "the partitions shared",
        )
        assert listener.kinds() == ["assigned", "revoked"]
        assert all(n == 1 for n in seen.values()), f"read twice: {seen.most_common(3)}"
    finally:
        other.close()
        busy.close()


def test_past_max_poll_interval_a_member_leaves_and_joins_at_its_next_poll(make_cluster) -> None:
    bootstrap = _setup(make_cluster)
    seen: Counter[str] = Counter()
    consumer, listener = _member(bootstrap, "slow", max_poll_interval_ms=2_000), Listener()
    watcher = Admin(bootstrap)
    try:
        consumer.subscribe([TOPIC], listener)
        wait_for(lambda: _all_partitions(consumer, seen), "the partitions assigned")
        # no poll: the member leaves by itself, and the group is empty
        wait_for(
            lambda: not watcher.describe_consumer_groups(["slow"])["slow"].members,
            "the member to leave",
        )
        assert listener.kinds() == ["assigned"]
        consumer.poll(timeout_ms=0)
        assert listener.events[-1] == ("lost", frozenset(range(PARTITIONS)))
        wait_for(lambda: _all_partitions(consumer, seen), "the partitions assigned again")
        assert listener.kinds() == ["assigned", "lost", "assigned"]
    finally:
        watcher.close()
        consumer.close()


def test_close_and_unsubscribe_call_on_partitions_revoked(make_cluster) -> None:
    bootstrap = _setup(make_cluster)
    seen: Counter[str] = Counter()
    committed_in_callback: list[int] = []

    class Committing(Listener):
        def __init__(self, consumer: Consumer) -> None:
            super().__init__()
            self.consumer = consumer

        def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
            super().on_partitions_revoked(revoked)
            self.consumer.commit()  # where applications commit and flush
            committed_in_callback.append(len(revoked))

    first = _member(bootstrap, "leaving", enable_auto_commit=False)
    listener = Committing(first)
    first.subscribe([TOPIC], listener)
    wait_for(lambda: _all_partitions(first, seen) and len(seen) == 40, "every record read")
    first.unsubscribe()
    assert listener.events[-1] == ("revoked", frozenset(range(PARTITIONS)))
    assert first.assignment() == set()

    second = _member(bootstrap, "leaving", enable_auto_commit=False)
    listener2 = Committing(second)
    second.subscribe([TOPIC], listener2)
    wait_for(lambda: _all_partitions(second, seen), "the partitions assigned")
    second.close()
    first.close()
    assert listener2.events == [
        ("assigned", frozenset(range(PARTITIONS))),
        ("revoked", frozenset(range(PARTITIONS))),
    ]
    assert committed_in_callback == [PARTITIONS, PARTITIONS]
    assert all(n == 1 for n in seen.values()), "the commit in the callback was lost"


def test_a_commit_naming_a_missing_topic_raises_its_own_error(make_cluster) -> None:
    bootstrap = _setup(make_cluster)
    seen: Counter[str] = Counter()
    consumer, listener = _member(bootstrap, "committer", enable_auto_commit=False), Listener()
    try:
        consumer.subscribe([TOPIC], listener)
        wait_for(lambda: _all_partitions(consumer, seen), "the partitions assigned")
        with pytest.raises(UnknownTopicOrPartitionError):
            consumer.commit(
                {TopicPartition("missing", 0): 1}, timeout_ms=int(1.5 * SESSION_TIMEOUT_MS)
            )
        consumer.poll(timeout_ms=100)
        assert listener.kinds() == ["assigned"], "the membership suffered"
        assert len(consumer.assignment()) == PARTITIONS
        consumer.commit({TopicPartition(TOPIC, 0): 3})
        assert consumer.committed([TopicPartition(TOPIC, 0)])[TopicPartition(TOPIC, 0)] is not None
    finally:
        consumer.close()


def test_the_server_side_assignor_is_chosen_by_the_consumer(make_cluster) -> None:
    # Kafka's group.remote.assignor
    bootstrap = _setup(make_cluster)
    seen: Counter[str] = Counter()
    with (
        _member(bootstrap, "ranged", group_remote_assignor="range") as consumer,
        Admin(bootstrap) as admin,
    ):
        consumer.subscribe([TOPIC])
        wait_for(lambda: _all_partitions(consumer, seen), "the partitions assigned")
        assert admin.describe_consumer_groups(["ranged"])["ranged"].assignor == "range"
    with _member(bootstrap, "odd", group_remote_assignor="no-such-assignor") as consumer:
        consumer.subscribe([TOPIC])
        with pytest.raises(UnsupportedAssignorError):
            for _ in range(100):
                consumer.poll(timeout_ms=100)
