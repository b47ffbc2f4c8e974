"""Consumer groups through the SDK on a real cluster (docs/groups.md): members share a
twelve-partition topic, a joining member moves only the partitions it takes, a killed member's
partitions move from its last commit, the coordinator's node can die, a static member comes
back to its partitions without a rebalance."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import grpc

from odradek import Admin, Consumer, NewTopic, Producer, TopicPartition
from odradek.client.group import GroupClient
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.integration.helpers import wait_for

TOPIC = "orders"
PARTITIONS = 12
ROOT = Path(__file__).resolve().parents[2]
SETTINGS = {
    "offsets_topic_num_partitions": "3",
    "group_consumer_session_timeout_ms": "4000",
    "group_consumer_heartbeat_interval_ms": "200",
}


def _setup(make_cluster, per_partition: int):
    cluster = make_cluster(3, **SETTINGS)
    bootstrap = cluster.bootstrap_servers
    admin = Admin(bootstrap)
    assert admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)], timeout_ms=30000)[TOPIC] is None
    _produce(bootstrap, per_partition, "a")
    return cluster, bootstrap


def _produce(bootstrap: str, per_partition: int, tag: str) -> set[str]:
    values = set()
    with Producer(bootstrap, acks=-1) as producer:
        for p in range(PARTITIONS):
            for i in range(per_partition):
                value = f"{tag}-{p}-{i}"
                values.add(value)
                producer.send(TOPIC, value.encode(), partition=p)
        producer.flush()
    return values


def _describe(bootstrap: str, group: str) -> pb.DescribedGroup:
    client = Consumer(bootstrap)
    try:
        gc = GroupClient(
            group,
            client._pool,
            client._metadata,
            client._clock,
            request_timeout_ms=10000,
            retry_backoff_ms=100,
        )

        def ask() -> pb.DescribedGroup | None:
            address = gc.coordinator()
            response = pb_grpc.BrokerStub(grpc.insecure_channel(address)).ConsumerGroupDescribe(
                pb.ConsumerGroupDescribeRequest(group_ids=[group]), timeout=10
            )
            (g,) = response.groups
            if g.error_code:
                gc.forget_coordinator()
                return None
            return g

        return wait_for(ask, f"a description of {group}")
    finally:
        client.close()


def _coordinator_id(bootstrap: str, group: str) -> int:
    # (node id,): node 0 is a coordinator too, and wait_for waits for a truthy answer
    def find() -> tuple[int] | None:
        for address in bootstrap.split(","):
            channel = grpc.insecure_channel(address)
            try:
                response = pb_grpc.BrokerStub(channel).FindCoordinator(
                    pb.FindCoordinatorRequest(group_ids=[group]), timeout=10
                )
            except grpc.RpcError as e:
                seen.append(f"{address}: {e.code()}")
                continue
            finally:
                channel.close()
            (c,) = response.coordinators
            if c.error_code == 0:
                return (c.node_id,)
            seen.append(f"{address}: {c.error_code} {c.error_message}")
        return None

    seen: list[str] = []
    try:
        return wait_for(find, f"the coordinator of {group}", 120)[0]
    except AssertionError:
        raise AssertionError(f"no coordinator for {group}: {seen[-6:]}") from None


def _stable(bootstrap: str, group: str, members: int) -> pb.DescribedGroup | None:
    g = _describe(bootstrap, group)
    if g.group_state == "Stable" and len(g.members) == members:
        return g
    return None


def _owned(consumer: Consumer) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


def test_members_share_the_topic_and_a_joiner_moves_only_what_it_takes(make_cluster):
    _, bootstrap = _setup(make_cluster, 20)
    group = "sharing"
    members = [
        Consumer(bootstrap, group_id=group, enable_auto_commit=False, auto_offset_reset="earliest")
        for _ in range(3)
    ]
    seen: Counter[str] = Counter()
    opened = list(members)  # every consumer made here, closed at the end

    def poll_all(consumers: list[Consumer]) -> dict[int, set[int]]:
        """One poll of each; commit after processing. Partitions that returned records."""
        got: dict[int, set[int]] = {}
        for i, c in enumerate(consumers):
            records = c.poll(timeout_ms=100)
            for r in records:
                assert r.value is not None
                seen[r.value.decode()] += 1
                got.setdefault(i, set()).add(r.partition)
            if records:
                c.commit()
        return got

    try:
        for m in members:
            m.subscribe([TOPIC])
        expected = {f"a-{p}-{i}" for p in range(PARTITIONS) for i in range(20)}
        wait_for(
            lambda: (poll_all(members), set(seen) == expected)[1], "every record consumed", 120
        )
        # Stable at the coordinator, and taken by every member (a member takes its partitions
        # once their committed offsets are known, a poll or two after the coordinator's answer)
        wait_for(
            lambda: (
                (poll_all(members), _stable(bootstrap, group, 3))[1]
                and sorted(len(_owned(m)) for m in members) == [4, 4, 4]
            ),
            "a stable group",
        )
        assert set().union(*(_owned(m) for m in members)) == set(range(PARTITIONS))
        assert all(n == 1 for n in seen.values()), "a record was read twice"
        committed = members[0].committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
        assert all(om is not None and om.offset == 20 for om in committed.values())

        # a fourth joins while records keep coming: the partitions that do not move keep
        # being fetched (records of them arrive before the group is stable again)
        before = [_owned(m) for m in members]
        fourth = Consumer(
            bootstrap, group_id=group, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        opened.append(fourth)
        fourth.subscribe([TOPIC])
        everyone = [*members, fourth]
        delivered_while_rebalancing: set[int] = set()
        _produce(bootstrap, 5, "b")
        stable = None
        while stable is None or sorted(len(_owned(m)) for m in everyone) != [3, 3, 3, 3]:
            got = poll_all(everyone)
            for i in range(3):
                delivered_while_rebalancing |= got.get(i, set()) & _owned(members[i]) & before[i]
            stable = _stable(bootstrap, group, 4)
        after = [_owned(m) for m in members]
        kept = set().union(*(b & a for b, a in zip(before, after, strict=True)))
        assert sorted(len(_owned(m)) for m in everyone) == [3, 3, 3, 3]
        assert len(kept) == 9  # each old member kept three of its four
        assert delivered_while_rebalancing & kept, "kept partitions stopped during the rebalance"
        expected |= {f"b-{p}-{i}" for p in range(PARTITIONS) for i in range(5)}
        wait_for(
            lambda: (poll_all(everyone), set(seen) == expected)[1], "every record consumed", 120
        )
        assert all(n == 1 for n in seen.values()), "a record was read twice"
    finally:
        for m in opened:
            m.close()


def _spawn(
    bootstrap: str, group: str, out: Path, instance: str | None = None
) -> subprocess.Popen[bytes]:
    args = [
        sys.executable,
        "-m",
        "tests.integration.group_member",
        bootstrap,
        group,
        TOPIC,
        str(out),
    ]
    if instance is not None:
        args.append(instance)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(args, cwd=ROOT, env=env)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _processed(path: Path) -> list[str]:
    return [line.split(" ", 2)[2] for line in _lines(path) if line[0].isdigit()]


def test_a_killed_member_s_partitions_move_from_its_last_commit(make_cluster, tmp_path):
    _, bootstrap = _setup(make_cluster, 30)
    group = "crashing"
    outs = [tmp_path / f"m{i}.txt" for i in range(3)]
    procs = [_spawn(bootstrap, group, out) for out in outs]
    try:
        expected = {f"a-{p}-{i}" for p in range(PARTITIONS) for i in range(30)}
        wait_for(
            lambda: set().union(*(_processed(o) for o in outs)) == expected,
            "the members to process everything",
            120,
        )
        wait_for(lambda: _stable(bootstrap, group, 3), "a stable group of three")
        victim = procs[0]
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        more = _produce(bootstrap, 10, "b")
        # after the session timeout the two others own all twelve and process the rest
        wait_for(lambda: _stable(bootstrap, group, 2), "the group without the killed member", 60)
        wait_for(
            lambda: set().union(*(_processed(o) for o in outs)) >= expected | more,
            "the survivors to process the new records",
            120,
        )
        # nothing skipped, and nothing read twice: the victim committed after each batch
        counts = Counter(v for o in outs for v in _processed(o))
        assert set(counts) == expected | more
        assert all(n == 1 for n in counts.values())
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_the_group_survives_its_coordinator_s_node(make_cluster):
    cluster, bootstrap = _setup(make_cluster, 10)
    group = "failover"
    consumer = Consumer(bootstrap, group_id=group, enable_auto_commit=False)
    consumer.subscribe([TOPIC])
    try:
        wait_for(lambda: (consumer.poll(timeout_ms=100), len(_owned(consumer)) == 12)[1], "all 12")
        offsets = {TopicPartition(TOPIC, p): 3 + p for p in range(PARTITIONS)}
        consumer.commit(offsets)
        node = _coordinator_id(bootstrap, group)
        cluster.node(node).kill()
        after = consumer.committed(list(offsets), timeout_ms=120_000)
        assert {tp: om.offset for tp, om in after.items() if om} == offsets
        # a new leader for the group's partition may wait for the killed node's ZooKeeper
        # session to expire (and a new controller, if it was the controller)
        wait_for(
            lambda: (consumer.poll(timeout_ms=100), _stable(bootstrap, group, 1))[1],
            "the group stable on its new coordinator",
            120,
        )
        consumer.commit({TopicPartition(TOPIC, 0): 7})
        assert consumer.committed([TopicPartition(TOPIC, 0)])[TopicPartition(TOPIC, 0)].offset == 7  # type: ignore[union-attr]
    finally:
        consumer.close()


def test_a_restarted_static_member_gets_its_partitions_back_without_a_rebalance(
    make_cluster, tmp_path
):
    _, bootstrap = _setup(make_cluster, 5)
    group = "static"
    outs = [tmp_path / "s0.txt", tmp_path / "s1.txt"]
    procs = [_spawn(bootstrap, group, o, f"instance-{i}") for i, o in enumerate(outs)]
    try:
        first = wait_for(lambda: _stable(bootstrap, group, 2), "a stable group of two", 60)
        assignment = {
            m.instance_id: {p for t in m.assignment for p in t.partitions} for m in first.members
        }
        procs[0].send_signal(signal.SIGTERM)  # a clean stop: it leaves with epoch -2
        assert procs[0].wait(timeout=60) == 0
        procs[0] = _spawn(bootstrap, group, outs[0], "instance-0")
        again = wait_for(
            lambda: (
                g
                if (g := _stable(bootstrap, group, 2)) is not None
                and {m.member_id for m in g.members} != {m.member_id for m in first.members}
                else None
            ),
            "the restarted static member back in the group",
            60,
        )
        assert again.group_epoch == first.group_epoch  # no rebalance
        assert {
            m.instance_id: {p for t in m.assignment for p in t.partitions} for m in again.members
        } == assignment
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_pattern_subscription_picks_up_topics_created_later(make_cluster):
    cluster = make_cluster(3, **SETTINGS)
    bootstrap = cluster.bootstrap_servers
    admin = Admin(bootstrap)
    assert admin.create_topics([NewTopic("metrics-a", 2, 3)], timeout_ms=30000)["metrics-a"] is None
    assert admin.create_topics([NewTopic("other", 2, 3)], timeout_ms=30000)["other"] is None
    consumer = Consumer(
        bootstrap, group_id="patterned", enable_auto_commit=False, auto_offset_reset="earliest"
    )
    seen: set[tuple[str, bytes]] = set()

    def poll() -> bool:
        for r in consumer.poll(timeout_ms=100):
            assert r.value is not None
            seen.add((r.topic, r.value))
        return True

    try:
        consumer.subscribe(pattern=r"metrics-.*")
        wait_for(lambda: poll() and len(consumer.assignment()) == 2, "metrics-a's partitions")
        assert consumer.subscription() == {"metrics-a"}
        # the pattern went to the coordinator (SubscribedTopicRegex), which resolves it
        (member,) = admin.describe_consumer_groups(["patterned"])["patterned"].members
        assert member.subscribed_topic_regex == "metrics-.*"
        assert member.subscribed_topics == ()
        # a topic created after subscribe() that matches: assigned and read; "other" never
        assert (
            admin.create_topics([NewTopic("metrics-b", 3, 3)], timeout_ms=30000)["metrics-b"]
            is None
        )
        with Producer(bootstrap, acks=-1) as producer:
            for topic in ("metrics-a", "metrics-b", "other"):
                producer.send(topic, topic.encode(), partition=1)
            producer.flush()
        wait_for(
            lambda: poll() and {("metrics-a", b"metrics-a"), ("metrics-b", b"metrics-b")} <= seen,
            "records of the new topic",
            60,
        )
        assert consumer.subscription() == {"metrics-a", "metrics-b"}
        assert {tp.topic for tp in consumer.assignment()} == {"metrics-a", "metrics-b"}
        assert len(consumer.assignment()) == 5
        assert all(topic != "other" for topic, _ in seen)
    finally:
        consumer.close()
