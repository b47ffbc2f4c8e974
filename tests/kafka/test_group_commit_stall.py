"""One slow ``__consumer_offsets`` partition does not stall the group coordinator, against a
real three-node cluster with librdkafka KIP-848 members (``group.protocol=consumer``).

The follower of one ``__consumer_offsets`` partition is stopped (SIGSTOP), so an acks=-1 write
to that partition waits for it (the ISR keeps it: ``replica.fetch.silence.max.ms`` off and a
long ``replica.lag.time.max.ms``: an ISR change that has not happened yet). Fifty members of a
group coordinated there commit at once, while a group on another partition of the same
coordinator, whose replicas leave out the stopped node, keeps committing for two session
timeouts. Its commits are answered while the fifty wait (before, the fifty commits, each
waiting up to ``offsets.commit.timeout.ms`` under the shard's lock one after the other, and the
members' heartbeats queued behind them took the node's request threads); no held commit is
answered as stored while the follower is stopped; and no member of either group expires (the
held group's heartbeats are processed at once, their answers waiting at most
``offsets.commit.timeout.ms``, shorter than the session). Once the follower resumes, the held
group commits and reads its commits back, each member still with its partition."""

from __future__ import annotations

import signal
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from node.coordinator.group_coordinator import partition_for
from odradek.clock import SystemClock
from tests.kafka.conftest import running_cluster, wait_for

OFFSETS = "__consumer_offsets"
HELD_MEMBERS = 50
OTHER_MEMBERS = 3
SESSION_MS = 15_000


@pytest.fixture(scope="module")
def kafka_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    """Three nodes; ``__consumer_offsets`` with two replicas (so a partition can be found whose
    replicas leave out the stopped node); a stopped follower stays in the ISR (no silence rule,
    long lag time, long ZooKeeper session); Kafka's ``offsets.commit.timeout.ms`` (5 s)."""
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "commit-stall",
        overrides={
            "default.replication.factor": "3",
            "offsets.topic.replication.factor": "2",
            "replica.fetch.silence.max.ms": "0",
            # nor the controller's heartbeat fencing (its own tests: test_broker_liveness.py)
            "broker.session.timeout.ms": "0",
            "replica.lag.time.max.ms": "120000",
            "zookeeper.session.timeout.ms": "120000",
            "group.consumer.session.timeout.ms": str(SESSION_MS),
            "group.consumer.heartbeat.interval.ms": "1000",
        },
    ) as cluster:
        yield cluster


def _group_on(partition: int, partitions: int) -> str:
    while True:
        group = f"stall-{uuid.uuid4().hex[:8]}"
        if partition_for(group, partitions) == partition:
            return group


def _member(bootstrap: str, group: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            # a request to the stopped node (a coordinator lookup after an answer of
            # COORDINATOR_NOT_AVAILABLE) fails fast and goes to another node
            "socket.timeout.ms": 2000,
        }
    )


class _Poller(threading.Thread):
    """Polls every member, as applications do, until stopped."""

    def __init__(self, members: list[Consumer]) -> None:
        super().__init__(daemon=True)
        self.members = members
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            for m in self.members:
                m.poll(0)
            self.stopping.wait(0.05)


class _Commits:
    """Commits on threads of their own, answers recorded in the order they came."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.answered: list[tuple[str, int, Any]] = []
        self.threads: list[threading.Thread] = []

    def start(self, name: str, index: int, member: Consumer, offsets: list[TopicPartition]) -> None:
        def run() -> None:
            try:
                answer: Any = member.commit(offsets=offsets, asynchronous=False)
                error = next((tp.error for tp in answer if tp.error is not None), None)
            except Exception as e:
                error = e
            with self.lock:
                self.answered.append((name, index, error))

        thread = threading.Thread(target=run, daemon=True)
        self.threads.append(thread)
        thread.start()

    def of(self, name: str) -> list[tuple[str, int, Any]]:
        with self.lock:
            return [a for a in self.answered if a[0] == name]


def _owned(member: Consumer, topic: str) -> list[int]:
    return sorted(tp.partition for tp in member.assignment() if tp.topic == topic)


def test_fifty_commits_held_on_one_partition_stall_nothing_else(kafka_cluster, bootstrap):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    held_topic, other_topic = f"held-{uuid.uuid4().hex[:6]}", f"other-{uuid.uuid4().hex[:6]}"
    for future in admin.create_topics(
        [NewTopic(held_topic, HELD_MEMBERS, 3), NewTopic(other_topic, OTHER_MEMBERS, 3)]
    ).values():
        future.result(60)
    # FindCoordinator creates __consumer_offsets: a first member does
    probe = _member(bootstrap, "stall-probe")
    probe.subscribe([other_topic])

    def offsets_topic() -> Any:
        probe.poll(0.1)
        topic = admin.list_topics(OFFSETS, timeout=10).topics.get(OFFSETS)
        if topic is None or topic.error is not None or not topic.partitions:
            return None
        if any(p.leader < 0 for p in topic.partitions.values()):
            return None
        return topic

    partitions = wait_for(offsets_topic, f"{OFFSETS} created with leaders").partitions
    probe.close()
    count = len(partitions)
    # P: led by L, followed by F; Q: led by L too, its replicas leave out F
    held, other = next(
        (p, q)
        for p in partitions.values()
        for q in partitions.values()
        if len(p.replicas) == 2
        and q.leader == p.leader
        and q.id != p.id
        and next(r for r in p.replicas if r != p.leader) not in q.replicas
    )
    follower = next(r for r in held.replicas if r != held.leader)
    held_group, other_group = _group_on(held.id, count), _group_on(other.id, count)

    members = {
        "held": [_member(bootstrap, held_group) for _ in range(HELD_MEMBERS)],
        "other": [_member(bootstrap, other_group) for _ in range(OTHER_MEMBERS)],
    }
    topics = {"held": held_topic, "other": other_topic}
    for name, group in members.items():
        for m in group:
            m.subscribe([topics[name]])
    poller = _Poller([m for group in members.values() for m in group])
    poller.start()
    commits = _Commits()
    stopped = False
    try:

        def everyone_owns_one() -> bool:
            return all(
                len(_owned(m, topics[name])) == 1 for name, group in members.items() for m in group
            )

        wait_for(everyone_owns_one, "each member owning one partition", timeout_s=240)
        before = {
            name: [(m.memberid(), _owned(m, topics[name])) for m in group]
            for name, group in members.items()
        }

        def commit_all(name: str, offset: int) -> None:
            for i, m in enumerate(members[name]):
                tps = [TopicPartition(topics[name], p, offset) for p in _owned(m, topics[name])]
                commits.start(name, i, m, tps)

        commit_all("held", 1)
        commit_all("other", 1)
        wait_for(lambda: len(commits.answered) == HELD_MEMBERS + OTHER_MEMBERS, "first commits")
        assert all(error is None for *_, error in commits.answered), commits.answered

        kafka_cluster.node(follower).signal(signal.SIGSTOP)
        stopped = True
        commits = _Commits()
        commit_all("held", 2)
        # the other group commits, round after round, for two session timeouts: each round is
        # answered, and no held commit is answered as stored, while the follower is stopped
        clock = SystemClock()
        hold_until = clock.monotonic_ms() + 2 * SESSION_MS
        offset = 2
        while True:
            answered = len(commits.of("other"))
            commit_all("other", offset)

            def round_answered(n: int = answered) -> bool:
                return len(commits.of("other")) == n + OTHER_MEMBERS

            wait_for(round_answered, f"the other group's commits of offset {offset}")
            if offset == 2:  # the first round came before any answer to the held commits
                assert commits.of("held") == [], commits.of("held")
            stored = [a for a in commits.of("held") if a[2] is None]
            assert stored == [], "a commit answered before its replicas had it"
            offset += 1
            if clock.monotonic_ms() >= hold_until:
                break
        failed = [a for a in commits.of("other") if a[2] is not None]
        assert failed == [], "the other group's commits failed while the held ones waited"

        kafka_cluster.node(follower).signal(signal.SIGCONT)
        stopped = False
        wait_for(lambda: len(commits.of("held")) == HELD_MEMBERS, "the held commits answered")

        # the held group commits again, and reads its commits back
        def stored_again() -> bool:
            again = _Commits()
            for i, m in enumerate(members["held"]):
                tps = [TopicPartition(held_topic, p, 3) for p in _owned(m, held_topic)]
                again.start("held", i, m, tps)
            for thread in again.threads:
                thread.join(60)
            last_errors[:] = [a for a in again.answered if a[2] is not None]
            return not last_errors

        last_errors: list[Any] = []
        try:
            wait_for(stored_again, "the held group's commits stored once the follower resumed")
        except AssertionError:
            raise AssertionError(f"{last_errors[:5]} held: {commits.of('held')[:5]}") from None
        # nobody expired: each member kept its id and its partition, and the coordinator
        # removed no member of either group
        after = {
            name: [(m.memberid(), _owned(m, topics[name])) for m in group]
            for name, group in members.items()
        }
        assert after == before
        coordinator_log = kafka_cluster.node(held.leader).log_path.read_text(errors="replace")
        for group_id in (held_group, other_group):
            assert f"of group {group_id} expired" not in coordinator_log
        for name, group in members.items():
            fetched = group[0].committed(
                [TopicPartition(topics[name], p) for p in _owned(group[0], topics[name])],
                timeout=30,
            )
            assert [tp.offset for tp in fetched] == [3 if name == "held" else offset - 1]
    finally:
        if stopped:
            kafka_cluster.node(follower).signal(signal.SIGCONT)
        poller.stopping.set()
        poller.join(30)
        for group in members.values():
            for m in group:
                m.close()
