"""Kafka's classic consumer group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) against a
real three-node cluster, with the clients that speak it: kafka-python's KafkaConsumer and
confluent-kafka (librdkafka, ``group.protocol=classic``, the default). Members run on threads of
their own (each polls as an application does) or, to be SIGKILLed, in a subprocess. Conditions are
polled with a deadline; nothing sleeps to synchronise.

The tests that commit offsets need the OffsetCommit / OffsetFetch handlers of the Kafka door
(``handlers/groups.py``): without them the commit fails and so does the test."""

from __future__ import annotations

import asyncio
import datetime
import io
import itertools
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import ConsumerGroupState, ConsumerGroupType
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka.admin import AdminClient
from kafka import ConsumerRebalanceListener, KafkaAdminClient, KafkaConsumer
from kio.schema.find_coordinator.v1.request import FindCoordinatorRequest
from kio.schema.heartbeat.v3.request import HeartbeatRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.sync_group.v3.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.schema.types import GroupId
from kio.serial import entity_writer
from kio.static.primitive import i8, i32, i32Timedelta

from bench import kafka_fuzz as fuzz
from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from tests.kafka.conftest import running_cluster, wait_for
from tests.kafka.test_confluent_kafka import create_topic

PARTITIONS = 6


@pytest.fixture(scope="module")
def kafka_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    """Three nodes; classic groups' first rebalance waits half a second for more members."""
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "classic-groups",
        overrides={
            "default.replication.factor": "3",
            "num.partitions": "3",
            "group.initial.rebalance.delay.ms": "500",
        },
    ) as cluster:
        yield cluster


def produce(bootstrap: str, topic: str, per_partition: int, start: int = 0) -> None:
    producer = ConfluentProducer({"bootstrap.servers": bootstrap, "acks": "all"})
    for p in range(PARTITIONS):
        for i in range(start, start + per_partition):
            producer.produce(topic, value=f"{p}-{i}".encode(), partition=p)
    assert producer.flush(60) == 0


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, member: PythonMember) -> None:
        self.member = member

    def on_partitions_revoked(self, revoked: Any) -> None:
        if revoked:
            self.member.revocations += 1

    def on_partitions_assigned(self, assigned: Any) -> None:
        pass


class PythonMember(threading.Thread):
    """A kafka-python KafkaConsumer polling on its own thread."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        group: str,
        commit: bool = False,
        instance_id: str | None = None,
    ) -> None:
        super().__init__(daemon=True)
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            group_instance_id=instance_id,
            client_id=f"kp-{uuid.uuid4().hex[:4]}",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            heartbeat_interval_ms=500,
            session_timeout_ms=10_000,
        )
        self.revocations = 0
        self.consumer.subscribe([topic], listener=_Listener(self))
        self.commit = commit
        self.lock = threading.Lock()
        self.read: list[tuple[int, int]] = []
        self.assigned: frozenset[int] = frozenset()
        self.stopping = threading.Event()
        self.errors: list[BaseException] = []

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                batch = self.consumer.poll(timeout_ms=200)
                with self.lock:
                    for records in batch.values():
                        self.read += [(r.partition, r.offset) for r in records]
                    self.assigned = frozenset(tp.partition for tp in self.consumer.assignment())
                if batch and self.commit:
                    self.consumer.commit()
        except BaseException as e:  # reported by the test
            self.errors.append(e)

    def partitions(self) -> frozenset[int]:
        with self.lock:
            return self.assigned

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)
        self.consumer.close()
        assert not self.errors, self.errors


def split(members: list[Any]) -> bool:
    """Every member has partitions, none shared, all covered."""
    sets = [m.partitions() for m in members]
    return (
        all(sets)
        and sum(len(s) for s in sets) == PARTITIONS
        and frozenset().union(*sets) == frozenset(range(PARTITIONS))
    )


def test_kafka_python_group_of_three_splits_a_topic(kafka_cluster, bootstrap):
    topic = f"classic-kp-{uuid.uuid4().hex[:6]}"
    group = f"g-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    produce(bootstrap, topic, 5)
    members = [PythonMember(bootstrap, topic, group) for _ in range(3)]
    for m in members:
        m.start()
    try:
        wait_for(lambda: split(members), "three members splitting six partitions")
        first = [m.partitions() for m in members]
        wait_for(
            lambda: {p for m in members for p, _ in m.read} == set(range(PARTITIONS)),
            "every partition read",
        )
        # the split held while they read (heartbeats, no rebalance)
        assert [m.partitions() for m in members] == first
        # a member leaves (LeaveGroup): the two others take its partitions
        members[0].stop()
        wait_for(lambda: split(members[1:]), "two members splitting six partitions")
    finally:
        for m in members[1:]:
            m.stop()


def test_kafka_python_commit_close_restart_resumes(kafka_cluster, bootstrap):
    """Needs OffsetCommit / OffsetFetch over the Kafka door."""
    topic = f"classic-commit-{uuid.uuid4().hex[:6]}"
    group = f"g-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    produce(bootstrap, topic, 10)
    members = [PythonMember(bootstrap, topic, group, commit=True) for _ in range(3)]
    for m in members:
        m.start()
    wait_for(lambda: split(members), "three members splitting six partitions")
    wait_for(
        lambda: len({r for m in members for r in m.read}) == PARTITIONS * 10,
        "sixty records read",
    )
    for m in members:
        m.stop()
    produce(bootstrap, topic, 3, start=10)
    again = PythonMember(bootstrap, topic, group, commit=True)
    again.start()
    try:
        wait_for(lambda: len(again.read) >= PARTITIONS * 3, "the new records read")
        # it resumed at the committed offsets: only the records produced after
        assert sorted(again.read) == sorted(
            (p, o) for p in range(PARTITIONS) for o in range(10, 13)
        )
    finally:
        again.stop()


class ConfluentMember(threading.Thread):
    """A confluent-kafka Consumer (classic protocol, cooperative-sticky) on its own thread,
    recording what each callback revoked."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        super().__init__(daemon=True)
        self.consumer = ConfluentConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": "classic",
                "partition.assignment.strategy": "cooperative-sticky",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10_000,
                "heartbeat.interval.ms": 500,
            }
        )
        self.topic = topic
        self.lock = threading.Lock()
        self.assigned: frozenset[int] = frozenset()
        self.revoked: list[frozenset[int]] = []
        self.stopping = threading.Event()
        self.errors: list[BaseException] = []

    def _on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        with self.lock:
            self.revoked.append(frozenset(p.partition for p in partitions))

    def run(self) -> None:
        try:
            self.consumer.subscribe([self.topic], on_revoke=self._on_revoke)
            while not self.stopping.is_set():
                self.consumer.poll(0.2)
                with self.lock:
                    self.assigned = frozenset(p.partition for p in self.consumer.assignment())
        except BaseException as e:
            self.errors.append(e)

    def partitions(self) -> frozenset[int]:
        with self.lock:
            return self.assigned

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)
        self.consumer.close()
        assert not self.errors, self.errors


def test_confluent_cooperative_sticky_fourth_member_moves_only_its_partitions(
    kafka_cluster, bootstrap
):
    topic = f"classic-coop-{uuid.uuid4().hex[:6]}"
    group = f"g-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    members = [ConfluentMember(bootstrap, topic, group) for _ in range(3)]
    for m in members:
        m.start()
    try:
        wait_for(
            lambda: split(members) and all(len(m.partitions()) == 2 for m in members),
            "three members with two partitions each",
        )
        before = [m.partitions() for m in members]
        for m in members:
            with m.lock:
                m.revoked.clear()
        fourth = ConfluentMember(bootstrap, topic, group)
        fourth.start()
        members.append(fourth)
        wait_for(lambda: split(members), "four members splitting six partitions")
        after = [m.partitions() for m in members[:3]]
        for old, new, m in zip(before, after, members[:3], strict=True):
            revoked = frozenset().union(*m.revoked) if m.revoked else frozenset()
            # only what moved was revoked; what stayed was never given up
            assert revoked == old - new, (old, new, m.revoked)
            assert new <= old
            assert revoked <= fourth.partitions()
        assert fourth.partitions() == frozenset(range(PARTITIONS)) - frozenset().union(*after)
    finally:
        for m in members:
            m.stop()


_KILLED_MEMBER = """
import sys, uuid
from kafka import KafkaConsumer
consumer = KafkaConsumer(sys.argv[2], bootstrap_servers=sys.argv[1], group_id=sys.argv[3],
    enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=500,
    auto_offset_reset="earliest")
last = None
while True:
    consumer.poll(timeout_ms=200)
    now = sorted(tp.partition for tp in consumer.assignment())
    if now != last:
        print("assigned", *now, flush=True)
        last = now
"""


def test_sigkilled_members_partitions_move_after_its_session_timeout(kafka_cluster, bootstrap):
    topic = f"classic-kill-{uuid.uuid4().hex[:6]}"
    group = f"g-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_MEMBER, bootstrap, topic, group],
        stdout=subprocess.PIPE,
        text=True,
    )
    survivor = PythonMember(bootstrap, topic, group)
    seen: list[str] = []

    def read_lines() -> None:
        assert proc.stdout is not None
        seen.extend(line.strip() for line in proc.stdout)

    reader = threading.Thread(target=read_lines, daemon=True)
    reader.start()
    survivor.start()
    try:
        wait_for(
            lambda: (
                bool(seen)
                and seen[-1] != "assigned"
                and len(seen[-1].split()) - 1 + len(survivor.partitions()) == PARTITIONS
                and bool(survivor.partitions())
            ),
            "the two members splitting the partitions",
        )
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        # no LeaveGroup: the coordinator removes it once its session (6 s) expires
        wait_for(
            lambda: survivor.partitions() == frozenset(range(PARTITIONS)),
            "the survivor owning every partition",
        )
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
        reader.join(10)
        assert proc.stdout is not None
        proc.stdout.close()
        survivor.stop()


def test_static_member_restarted_within_its_session_gets_its_partitions_back(
    kafka_cluster, bootstrap
):
    """KIP-345: a member with a group.instance.id closes (no LeaveGroup: it is static) and
    comes back under a new member id before its session expires: same partitions, and the
    other member sees no rebalance."""
    topic = f"classic-static-{uuid.uuid4().hex[:6]}"
    group = f"g-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    a = PythonMember(bootstrap, topic, group, instance_id="static-a")
    b = PythonMember(bootstrap, topic, group, instance_id="static-b")
    a.start()
    b.start()
    restarted: PythonMember | None = None
    try:
        wait_for(lambda: split([a, b]), "two static members splitting the partitions")
        owned = a.partitions()
        revocations = b.revocations
        a.stop()
        restarted = PythonMember(bootstrap, topic, group, instance_id="static-a")
        restarted.start()
        wait_for(lambda: bool(restarted.partitions()), "the restarted member's partitions")
        assert restarted.partitions() == owned
        assert b.revocations == revocations  # b went on without a rebalance
    finally:
        b.stop()
        if restarted is not None:
            restarted.stop()


def test_describe_and_list_show_a_classic_group(kafka_cluster, bootstrap):
    """DescribeGroups and ListGroups (kafka-python's admin client) show the classic group's
    state, protocol type and assignor, and its members' client ids and hosts (needs the door's
    DescribeGroups / ListGroups to read the coordinator's classic fields)."""
    topic = f"classic-describe-{uuid.uuid4().hex[:6]}"
    group = f"g-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    members = [PythonMember(bootstrap, topic, group) for _ in range(2)]
    for m in members:
        m.start()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        wait_for(lambda: split(members), "two members splitting the partitions")
        described = admin.describe_groups([group])[group]
        assert (described["group_state"], described["protocol_type"]) == ("Stable", "consumer")
        assert described["protocol_data"] in ("range", "roundrobin", "sticky")
        client_ids = {m.consumer.config["client_id"] for m in members}
        assert {d["client_id"] for d in described["members"]} == client_ids
        assert {d["client_host"] for d in described["members"]} == {"/127.0.0.1"}
        # the leader's assignment as each member got it (kafka-python decodes the bytes)
        assigned = [
            p
            for d in described["members"]
            for t in d["member_assignment"]["assigned_partitions"]
            for p in t["partitions"]
        ]
        assert sorted(assigned) == list(range(PARTITIONS))
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed[group]["group_state"] == "Stable"
        assert listed[group]["protocol_type"] == "consumer"
    finally:
        admin.close()
        for m in members:
            m.stop()


def test_a_classic_group_left_empty_is_still_a_consumer_group(kafka_cluster, bootstrap):
    """Once its last member closed, a classic group keeps its protocol type (Kafka's
    initNextGeneration clears only the protocol): librdkafka's AdminClient lists and describes
    it as an empty consumer group, not a simple one (protocol type "")."""
    topic = f"classic-emptied-{uuid.uuid4().hex[:6]}"
    group = f"g-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    produce(bootstrap, topic, per_partition=1)
    consumer = ConfluentConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        wait_for(lambda: consumer.poll(0.2) is not None, "a record through the classic group")
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()  # LeaveGroup: the group is left Empty
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def listed_empty() -> Any:
        listing = admin.list_consumer_groups().result(timeout=60)
        mine = [g for g in listing.valid if g.group_id == group]
        return mine[0] if mine and mine[0].state == ConsumerGroupState.EMPTY else None

    listed = wait_for(listed_empty, "the group listed Empty")
    assert listed.type == ConsumerGroupType.CLASSIC
    assert listed.is_simple_consumer_group is False
    described = admin.describe_consumer_groups([group])[group].result(timeout=60)
    assert (described.state, described.members) == (ConsumerGroupState.EMPTY, [])
    assert described.is_simple_consumer_group is False


async def _aiokafka_pair(bootstrap: str, topic: str, group: str) -> list[frozenset[int]]:
    consumers = [
        AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            heartbeat_interval_ms=500,
        )
        for _ in range(2)
    ]
    for c in consumers:
        await c.start()
    try:
        for _ in range(600):  # each getmany waits up to 0.1 s: a 60 s deadline
            await asyncio.gather(*(c.getmany(timeout_ms=100) for c in consumers))
            sets = [frozenset(tp.partition for tp in c.assignment()) for c in consumers]
            if all(sets) and sum(map(len, sets)) == PARTITIONS:
                return sets
        raise AssertionError("the two aiokafka members never split the partitions")
    finally:
        for c in consumers:
            await c.stop()


def test_aiokafka_group_of_two_splits_a_topic(kafka_cluster, bootstrap):
    topic = f"classic-aio-{uuid.uuid4().hex[:6]}"
    group = f"g-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    sets = asyncio.run(asyncio.wait_for(_aiokafka_pair(bootstrap, topic, group), 120))
    assert frozenset().union(*sets) == frozenset(range(PARTITIONS))


# -- bad input over raw frames ------------------------------------------------------------------

_ids = itertools.count(random.randrange(1 << 20))


def _call(address: str, key: int, version: int, request: Any) -> Any:
    out = io.BytesIO()
    entity_writer(type(request))(out, request)
    cid = next(_ids)
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=60) as s:
        s.sendall(fuzz.frame(fuzz.header(key, version, cid) + out.getvalue()))
        f = s.makefile("rb")
        (size,) = struct.unpack(">i", f.read(4))
        got, value = fuzz.decode_response(key, version, f.read(size))
    assert got == cid
    return value


def _coordinator(cluster: LocalCluster, group: str) -> str:
    address = next(n.kafka_address for n in cluster.nodes if n.process and n.process.poll() is None)
    found: list[Any] = []

    def ready() -> bool:
        r = _call(address, 10, 1, FindCoordinatorRequest(key=group, key_type=i8(0)))
        found[:] = [r]
        return int(r.error_code) == 0

    wait_for(ready, "the group's coordinator")
    return f"{found[0].host}:{found[0].port}"


def _join(
    address: str, group: str, member_id: str, protocols: tuple[str, ...], metadata: bytes = b""
) -> Any:
    return _call(
        address,
        11,
        5,
        JoinGroupRequest(
            group_id=GroupId(group),
            session_timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=10_000)),
            rebalance_timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=10_000)),
            member_id=member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocols=tuple(JoinGroupRequestProtocol(name=p, metadata=metadata) for p in protocols),
        ),
    )


def _heartbeat(address: str, group: str, member_id: str, generation: int) -> int:
    r = _call(
        address,
        12,
        3,
        HeartbeatRequest(
            group_id=GroupId(group),
            generation_id=i32(generation),
            member_id=member_id,
            group_instance_id=None,
        ),
    )
    return int(r.error_code)


def test_bad_input_gets_kafkas_error_codes(kafka_cluster):
    group = f"raw-{uuid.uuid4().hex[:6]}"
    address = _coordinator(kafka_cluster, group)
    first = _join(address, group, "", ("range",))
    assert int(first.error_code) == 79  # MEMBER_ID_REQUIRED
    member = first.member_id
    assert member
    joined = _join(address, group, member, ("range",))
    assert int(joined.error_code) == 0
    assert joined.leader == member and joined.protocol_name == "range"
    generation = int(joined.generation_id)
    synced = _call(
        address,
        14,
        3,
        SyncGroupRequest(
            group_id=GroupId(group),
            generation_id=i32(generation),
            member_id=member,
            group_instance_id=None,
            assignments=(),
        ),
    )
    assert int(synced.error_code) == 0

    assert _heartbeat(address, group, member, generation) == 0
    assert _heartbeat(address, group, "nobody", generation) == 25  # UNKNOWN_MEMBER_ID
    assert _heartbeat(address, group, member, generation - 1) == 22  # ILLEGAL_GENERATION
    # a member whose protocols the group does not support
    other = _join(address, group, "", ("roundrobin",))
    assert int(other.error_code) == 23  # INCONSISTENT_GROUP_PROTOCOL
    # the group is unaffected
    assert _heartbeat(address, group, member, generation) == 0


def _sync(address: str, group: str, member_id: str, generation: int, assignment: bytes) -> int:
    r = _call(
        address,
        14,
        3,
        SyncGroupRequest(
            group_id=GroupId(group),
            generation_id=i32(generation),
            member_id=member_id,
            group_instance_id=None,
            assignments=(SyncGroupRequestAssignment(member_id=member_id, assignment=assignment),),
        ),
    )
    return int(r.error_code)


def test_an_empty_group_id_and_oversized_metadata_get_typed_errors(kafka_cluster):
    """An empty group id is INVALID_GROUP_ID; a member whose metadata makes the group's record
    larger than __consumer_offsets takes (max.message.bytes, 1 MiB) joins, but its group cannot
    be stored: the SyncGroup gets an error code, nothing crashes, and another group on the same
    coordinator goes on. (A group id longer than a Kafka string cannot even be framed: the door
    closes such a frame, tests/kafka/test_fuzz.py.)"""
    assert int(_join(_coordinator(kafka_cluster, "x"), "", "", ("range",)).error_code) == 24
    healthy = f"ok-{uuid.uuid4().hex[:6]}"
    address = _coordinator(kafka_cluster, healthy)
    # a second group on the same coordinator node
    big = next(
        g
        for g in (f"big-{uuid.uuid4().hex[:6]}" for _ in range(1000))
        if _coordinator(kafka_cluster, g) == address
    )
    first = _join(address, healthy, "", ("range",))
    member = first.member_id
    joined = _join(address, healthy, member, ("range",))
    assert int(joined.error_code) == 0
    generation = int(joined.generation_id)
    assert _sync(address, healthy, member, generation, b"A") == 0

    metadata = bytes(2 * 1024 * 1024)
    pending = _join(address, big, "", ("range",), metadata)
    assert int(pending.error_code) == 79  # MEMBER_ID_REQUIRED
    joined_big = _join(address, big, pending.member_id, ("range",), metadata)
    assert int(joined_big.error_code) == 0
    code = _sync(address, big, pending.member_id, int(joined_big.generation_id), b"B")
    # Kafka's coordinator cannot store such a group either: UNKNOWN_SERVER_ERROR (its
    # normalized MESSAGE_TOO_LARGE), or the append's own code
    assert code in (-1, 10, 18), code
    # the coordinator and the other group go on
    assert _heartbeat(address, healthy, member, generation) == 0
    assert all(node.running for node in kafka_cluster.nodes)


def test_coordinator_failover_keeps_the_group(kafka_cluster, bootstrap):
    """The coordinator's node is SIGKILLed: the new coordinator loads the group from its
    GroupMetadata record, so it answers the members' heartbeats in the same generation, and
    the members keep their partitions without a rebalance. Last in the module: it leaves one
    node down."""
    topic = f"classic-failover-{uuid.uuid4().hex[:6]}"
    group = f"g-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    members = [PythonMember(bootstrap, topic, group) for _ in range(2)]
    for m in members:
        m.start()
    try:
        wait_for(lambda: split(members), "two members splitting the partitions")
        before = [m.partitions() for m in members]
        revocations = [m.revocations for m in members]
        # kafka-python keeps its member id and generation here (no public accessor)
        generations = [
            (
                m.consumer._coordinator._generation.member_id,
                m.consumer._coordinator._generation.generation_id,
            )
            for m in members
        ]
        address = _coordinator(kafka_cluster, group)
        (node,) = [n for n in kafka_cluster.nodes if n.kafka_address == address]
        node.kill()
        codes: list[int] = []

        def known_to_the_new_coordinator() -> bool:
            try:
                new = _coordinator(kafka_cluster, group)
                codes[:] = [_heartbeat(new, group, mid, gen) for mid, gen in generations]
            except OSError:
                return False
            assert not set(codes) & {22, 25}, codes  # the group was not forgotten
            return codes == [0, 0]

        wait_for(
            known_to_the_new_coordinator, "the new coordinator answering the members' heartbeats"
        )
        assert [m.partitions() for m in members] == before
        assert [m.revocations for m in members] == revocations
        assert [m.consumer._coordinator._generation.generation_id for m in members] == [
            gen for _, gen in generations
        ]
    finally:
        for m in members:
            m.stop()
