"""Kafka 4.0's online migration between the classic protocol and KIP-848, with real clients
against a real three-node cluster: librdkafka members (confluent-kafka) restarted one by one
from ``group.protocol=classic`` to ``consumer`` and back under a running producer, a group
mixing librdkafka KIP-848 and classic members with kafka-python's, and the refusals.

Every member records what it consumed and commits synchronously after each poll and when
partitions are revoked, so a partition's next owner starts where its last owner stopped: the
tests check every acknowledged record consumed exactly once. A SIGKILLed kafka-python member
prints what it read, then commits: what it read after its last commit landed is read again by its
successor (as Kafka promises), nothing else. Members run on threads of their own, or in a subprocess
to be SIGKILLed; conditions are polled with a deadline, nothing sleeps to synchronise."""

from __future__ import annotations

import functools
import signal
import subprocess
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import (
    ConsumerGroupType,
    KafkaError,
    KafkaException,
)
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka.admin import AdminClient
from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from kio.schema.types import GroupId

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from odradek import Admin as OdradekAdmin
from odradek import Consumer as OdradekConsumer
from tests.kafka.conftest import call, running_cluster, wait_for
from tests.kafka.test_classic_groups import PythonMember
from tests.kafka.test_confluent_kafka import create_topic
from tests.kafka.test_group_apis import coordinator_of

PARTITIONS = 6


@pytest.fixture(scope="module")
def kafka_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    """Three nodes; KIP-848 members heartbeat every half second, classic groups' first
    rebalance waits half a second for more members, a KIP-848 member's session is 10 s, and
    a consumer group has at most three members (a larger classic group cannot convert)."""
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "group-migration",
        overrides={
            "default.replication.factor": "3",
            "num.partitions": "3",
            "group.initial.rebalance.delay.ms": "500",
            "group.consumer.heartbeat.interval.ms": "500",
            "group.consumer.session.timeout.ms": "10000",
            "group.consumer.max.size": "3",
        },
    ) as cluster:
        yield cluster


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


class RunningProducer(threading.Thread):
    """An idempotent acks=all producer writing numbered records round the partitions until
    stopped; ``acked`` holds the (partition, offset) of every acknowledged record."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.producer = ConfluentProducer(
            {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True}
        )
        self.topic = topic
        self.acked: set[tuple[int, int]] = set()
        self.failed: list[str] = []
        self.stopping = threading.Event()
        self.lock = threading.Lock()

    def _delivered(self, err: Any, msg: Any) -> None:
        with self.lock:
            if err is not None:
                self.failed.append(str(err))
            else:
                self.acked.add((msg.partition(), msg.offset()))

    def run(self) -> None:
        n = 0
        while not self.stopping.wait(0.005):
            self.producer.produce(
                self.topic,
                value=str(n).encode(),
                partition=n % PARTITIONS,
                on_delivery=self._delivered,
            )
            n += 1
            self.producer.poll(0)
        assert self.producer.flush(60) == 0

    def more(self, n: int) -> Callable[[], bool]:
        """A condition: ``n`` more records acknowledged than now."""
        with self.lock:
            mark = len(self.acked) + n

        def reached() -> bool:
            with self.lock:
                return len(self.acked) >= mark

        return reached

    def stop(self) -> set[tuple[int, int]]:
        self.stopping.set()
        self.join(90)
        assert not self.failed, self.failed[:5]
        with self.lock:
            return set(self.acked)


class Member(threading.Thread):
    """A confluent-kafka consumer on its own thread: ``group.protocol`` classic (with
    ``assignor``) or consumer (KIP-848). It commits synchronously after every poll that returned
    records and in its revocation callback, and records what it read."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        group: str,
        protocol: str,
        assignor: str = "cooperative-sticky",
        instance_id: str | None = None,
    ) -> None:
        super().__init__(daemon=True)
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "client.id": f"{protocol}-{uuid.uuid4().hex[:4]}",
        }
        if protocol == "classic":
            config |= {
                "partition.assignment.strategy": assignor,
                "session.timeout.ms": 10_000,
                "heartbeat.interval.ms": 500,
            }
        if instance_id is not None:
            config["group.instance.id"] = instance_id
        self.protocol = protocol
        self.client_id = config["client.id"]
        self.consumer = ConfluentConsumer(config)
        self.topic = topic
        self.lock = threading.Lock()
        self.read: list[tuple[int, int]] = []
        self.assigned: frozenset[int] = frozenset()
        self.errors: list[str] = []
        self.commit_errors: list[str] = []
        self.warnings: list[str] = []
        self.stopping = threading.Event()

    def _commit(self) -> None:
        try:
            self.consumer.commit(asynchronous=False)
        except KafkaException as e:
            if e.args[0].code() != KafkaError._NO_OFFSET:
                self.commit_errors.append(str(e))

    def _on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        self._commit()

    def run(self) -> None:
        try:
            self.consumer.subscribe([self.topic], on_revoke=self._on_revoke)
            while not self.stopping.is_set():
                msgs = self.consumer.consume(500, 0.2)
                got: list[tuple[int, int]] = []
                for msg in msgs:
                    error = msg.error()
                    if error is not None:
                        if error.fatal() or error.code() == KafkaError._FATAL:
                            self.errors.append(str(error))
                        else:
                            self.warnings.append(str(error))
                        continue
                    partition, offset = msg.partition(), msg.offset()
                    assert partition is not None and offset is not None
                    got.append((partition, offset))
                if got:
                    self._commit()
                with self.lock:
                    self.read += got
                    self.assigned = frozenset(p.partition for p in self.consumer.assignment())
        except BaseException as e:  # reported by stop()
            self.errors.append(repr(e))

    def partitions(self) -> frozenset[int]:
        with self.lock:
            return self.assigned

    def stop(self) -> None:
        self.stopping.set()
        self.join(60)
        self.consumer.close()  # commits nothing more: the last poll's commit is done


def split(members: list[Any]) -> bool:
    sets = [m.partitions() for m in members]
    return (
        all(sets)
        and sum(len(s) for s in sets) == PARTITIONS
        and frozenset().union(*sets) == frozenset(range(PARTITIONS))
    )


def group_type(admin: AdminClient, group: str) -> Any:
    (future,) = admin.describe_consumer_groups([group], request_timeout=30).values()
    return future.result(timeout=60).type


def logged(cluster: LocalCluster, text: str) -> bool:
    """Whether a node's log has ``text`` (the coordinator logs why it refuses a conversion)."""
    return any(text in n.log_path.read_text(errors="replace") for n in cluster.nodes)


def gaps(acked: set[tuple[int, int]], reads: list[tuple[int, int]]) -> str:
    """Per partition: how many acknowledged records are unread and the first of them."""
    missing = sorted(acked - set(reads))
    out: dict[int, list[int]] = {}
    for p, o in missing:
        out.setdefault(p, []).append(o)
    return ", ".join(f"p{p}: {len(os)} from {os[0]}" for p, os in sorted(out.items()))


def is_type(admin: AdminClient, group: str, expected: Any) -> bool:
    return bool(group_type(admin, group) == expected)


def check_exactly_once(acked: set[tuple[int, int]], reads: list[tuple[int, int]]) -> None:
    counts = Counter(reads)
    twice = sorted(r for r, n in counts.items() if n > 1)
    assert not twice, f"{len(twice)} records read twice, e.g. {twice[:10]}"
    missing = sorted(acked - set(counts))
    assert not missing, f"{len(missing)} acknowledged records never read, e.g. {missing[:10]}"


def all_reads(members: list[Member]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for m in members:
        with m.lock:
            out += m.read
    return out


def roll(
    bootstrap: str,
    topic: str,
    group: str,
    start: str,
    to: str,
    assignor: str,
    admin: AdminClient,
) -> None:
    """Three ``start`` members, restarted one by one as ``to`` members while a producer runs:
    the group's type follows (the first ``consumer`` member converts a classic group, the last
    one leaving converts it back), and every acknowledged record is consumed exactly once."""
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    producer = RunningProducer(bootstrap, topic)
    producer.start()
    live = [Member(bootstrap, topic, group, start, assignor) for _ in range(3)]
    everyone = list(live)
    try:
        for m in live:
            m.start()
        wait_for(lambda: split(live), f"three {start} members splitting the partitions")
        kind = ConsumerGroupType.CONSUMER if start == "consumer" else ConsumerGroupType.CLASSIC
        assert group_type(admin, group) == kind
        for i in range(3):
            live[i].stop()
            others = live[:i] + live[i + 1 :]
            wait_for(functools.partial(split, others), "the others taking its partitions")
            new = Member(bootstrap, topic, group, to, assignor)
            everyone.append(new)
            live[i] = new
            new.start()
            wait_for(lambda: split(live), f"member {i} restarted as {to} with partitions")
            # KIP-848 members present: a consumer group; none: classic again
            expect = (
                ConsumerGroupType.CONSUMER
                if any(m.protocol == "consumer" for m in live)
                else ConsumerGroupType.CLASSIC
            )
            wait_for(functools.partial(is_type, admin, group, expect), f"the group's type {expect}")
            # records keep flowing to this step's members before the next restart
            wait_for(producer.more(100), "a hundred more records acknowledged")
        acked = producer.stop()
        try:
            wait_for(lambda: acked <= set(all_reads(everyone)), "every acknowledged record read")
        except AssertionError:
            print("unread:", gaps(acked, all_reads(everyone)))
            raise
    except BaseException:
        for m in everyone:
            print(
                m.protocol,
                m.is_alive(),
                sorted(m.partitions()),
                m.errors,
                m.warnings[-5:],
                m.commit_errors[-5:],
            )
        raise
    finally:
        if producer.is_alive():
            producer.stop()
        for m in live:
            if m.is_alive():
                m.stop()
    for m in everyone:
        assert not m.errors, (m.protocol, m.errors)
    check_exactly_once(acked, all_reads(everyone))


@pytest.fixture(scope="module")
def admin(bootstrap: str, kafka_cluster: LocalCluster) -> AdminClient:
    client = AdminClient({"bootstrap.servers": bootstrap})
    wait_for(
        lambda: len(client.list_topics(timeout=10).brokers) == len(kafka_cluster.nodes),
        "every node in the metadata",
    )
    return client


@pytest.fixture(autouse=True)
def _group_log_on_failure(kafka_cluster: LocalCluster) -> Iterator[None]:
    """Each node's group coordinator lines, printed when a test fails."""
    marks = [n.log_path.stat().st_size if n.log_path.exists() else 0 for n in kafka_cluster.nodes]
    yield
    for node, mark in zip(kafka_cluster.nodes, marks, strict=True):
        with node.log_path.open("rb") as f:
            f.seek(mark)
            lines = f.read().decode(errors="replace").splitlines()
        print(f"--- node {node.node_id}: group lines ---")
        print("\n".join(line for line in lines if "group" in line.lower())[-6000:])


def test_rolling_upgrade_range_under_a_running_producer(bootstrap, admin):
    roll(bootstrap, unique("up-range"), unique("g"), "classic", "consumer", "range", admin)


def test_rolling_downgrade_under_a_running_producer(bootstrap, admin):
    roll(bootstrap, unique("down"), unique("g"), "consumer", "classic", "cooperative-sticky", admin)


_KILLED_MEMBER = """
import sys
from kafka import KafkaConsumer
consumer = KafkaConsumer(sys.argv[2], bootstrap_servers=sys.argv[1], group_id=sys.argv[3],
    client_id="kafka-python-member", enable_auto_commit=False, session_timeout_ms=6000,
    heartbeat_interval_ms=500, auto_offset_reset="earliest")
while True:
    batch = consumer.poll(timeout_ms=200)
    got = [(r.partition, r.offset) for rs in batch.values() for r in rs]
    if got:
        print("read", " ".join(f"{p}:{o}" for p, o in got), flush=True)
        consumer.commit()  # raises if it fails: the batch then stays uncommitted
        print("committed", flush=True)
    print("assigned", *sorted(tp.partition for tp in consumer.assignment()), flush=True)
"""


def test_a_mixed_group_with_kafka_python_survives_its_sigkill(bootstrap, admin, kafka_cluster):
    """A librdkafka KIP-848 member, a librdkafka classic member and a kafka-python classic member
    (a subprocess) share a consumer group; kafka-python decodes the assignment the coordinator
    computed for it. SIGKILLed, its partitions move after its own session.timeout.ms (6 s), and
    the others resume from its last commits: every acknowledged record consumed once."""
    topic, group = unique("mixed"), unique("g")
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    producer = RunningProducer(bootstrap, topic)
    producer.start()
    kip848 = Member(bootstrap, topic, group, "consumer")
    kip848.start()
    wait_for(lambda: len(kip848.partitions()) == 6, "the KIP-848 member with every partition")
    classic = Member(bootstrap, topic, group, "classic", "range")
    classic.start()
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_MEMBER, bootstrap, topic, group],
        stdout=subprocess.PIPE,
        text=True,
    )
    lock = threading.Lock()
    killed_read: list[tuple[int, int]] = []
    """What the killed member read (processed) and committed."""
    uncommitted: list[tuple[int, int]] = []
    """What it read last, if it was killed before its commit returned."""
    killed_assigned: list[frozenset[int]] = [frozenset()]

    def read_lines() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            word, *rest = line.split()
            with lock:
                if word == "read":
                    uncommitted[:] = [(int(p), int(o)) for p, o in (x.split(":") for x in rest)]
                elif word == "committed":
                    killed_read.extend(uncommitted)
                    uncommitted.clear()
                elif word == "assigned":
                    killed_assigned[0] = frozenset(int(p) for p in rest)

    class Killed:
        def partitions(self) -> frozenset[int]:
            with lock:
                return killed_assigned[0]

    reader = threading.Thread(target=read_lines, daemon=True)
    reader.start()
    try:
        wait_for(
            lambda: split([kip848, classic, Killed()]),
            "three members of two protocols splitting the partitions",
        )
        assert group_type(admin, group) == ConsumerGroupType.CONSUMER
        (described,) = admin.describe_consumer_groups([group]).values()
        members = {m.client_id for m in described.result(timeout=60).members}
        assert {"kafka-python-member", classic.client_id, kip848.client_id} == members
        # which member speaks which protocol: ConsumerGroupDescribe v1's MemberType (KIP-1099)
        # on the wire, MemberDescription.upgraded through the SDK's Admin
        answer = call(
            coordinator_of(kafka_cluster, group),
            ConsumerGroupDescribeRequest(
                group_ids=(GroupId(group),), include_authorized_operations=False
            ),
        )
        (g,) = answer.groups
        assert {m.client_id: int(m.member_type) for m in g.members} == {
            "kafka-python-member": 0,
            classic.client_id: 0,
            kip848.client_id: 1,
        }
        with OdradekAdmin(kafka_cluster.bootstrap_servers) as sdk_admin:
            d = sdk_admin.describe_consumer_groups([group])[group]
        assert {m.client_id: m.upgraded for m in d.members} == {
            "kafka-python-member": False,
            classic.client_id: False,
            kip848.client_id: True,
        }
        wait_for(lambda: bool(killed_read), "the kafka-python member reading")
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        wait_for(lambda: split([kip848, classic]), "the survivors owning every partition")
        acked = producer.stop()
        try:
            wait_for(
                lambda: acked <= set(all_reads([kip848, classic]) + killed_read + uncommitted),
                "every acknowledged record read",
            )
        except AssertionError:
            print("unread:", gaps(acked, all_reads([kip848, classic]) + killed_read + uncommitted))
            for m in (kip848, classic):
                last: dict[int, int] = {}
                for p, o in all_reads([m]):
                    last[p] = max(o, last.get(p, -1))
                print(
                    m.protocol,
                    sorted(m.partitions()),
                    last,
                    m.errors,
                    m.warnings[-3:],
                    m.commit_errors[-3:],
                )
            raise
    finally:
        if producer.is_alive():
            producer.stop()
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
        reader.join(10)
        assert proc.stdout is not None
        proc.stdout.close()
        kip848.stop()
        classic.stop()
    assert not kip848.errors and not classic.errors, (kip848.errors, classic.errors)
    # what it read after its last commit may be read again by its successor (if the commit
    # did not land before the kill): Kafka's promise; nothing else twice, nothing skipped
    pending = set(uncommitted)
    survivors = [r for r in all_reads([kip848, classic]) if r not in pending]
    check_exactly_once(acked, survivors + killed_read + uncommitted)


def test_a_refused_upgrade_is_fatal_to_the_kip848_member_and_the_classic_group_goes_on(
    bootstrap, admin, kafka_cluster
):
    """A classic group larger than group.consumer.max.size (3 here) cannot become a consumer
    group: the KIP-848 joiner gets GROUP_ID_NOT_FOUND (fatal in librdkafka >= 2.15), and the
    four classic members go on, still a classic group."""
    topic, group = unique("refused"), unique("g")
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    members = [PythonMember(bootstrap, topic, group) for _ in range(4)]
    for m in members:
        m.start()
    joiner: Member | None = None
    try:
        wait_for(lambda: covered(members), "four classic members splitting the partitions")
        joiner = Member(bootstrap, topic, group, "consumer")
        joiner.start()
        wait_for(lambda: bool(joiner.errors), "the KIP-848 member's fatal error", 60)
        assert "The group id does not exist" in joiner.errors[0], joiner.errors
        assert logged(
            kafka_cluster,
            f"Cannot upgrade classic group {group} to consumer group "
            "because the group size exceeds the consumer group maximum size",
        )
        assert group_type(admin, group) == ConsumerGroupType.CLASSIC
        assert covered(members)
    finally:
        if joiner is not None:
            joiner.stop()  # closed: a fatal consumer's close returns at once
        for m in members:
            m.stop()


def test_librdkafkas_cooperative_sticky_group_is_not_upgraded_as_in_kafka_4(
    bootstrap, admin, kafka_cluster
):
    """librdkafka's cooperative-sticky assignor keeps its previous assignment in the assignment's
    user data; a consumer group could not give it back, so Kafka 4.0 (KAFKA-18134) refuses the
    upgrade with GROUP_ID_NOT_FOUND, fatal to the KIP-848 joiner; the classic members go on."""
    topic, group = unique("coop"), unique("g")
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    members = [Member(bootstrap, topic, group, "classic", "cooperative-sticky") for _ in range(2)]
    joiner: Member | None = None
    try:
        for m in members:
            m.start()
            wait_for(lambda: covered(members), "the members splitting the partitions")
        wait_for(lambda: split(members), "the members splitting the partitions")
        joiner = Member(bootstrap, topic, group, "consumer")
        joiner.start()
        wait_for(lambda: bool(joiner.errors), "the KIP-848 member's fatal error", 60)
        assert "The group id does not exist" in joiner.errors[0], joiner.errors
        assert logged(
            kafka_cluster,
            f"Cannot upgrade classic group {group} to consumer group "
            "because an unsupported custom assignor is in use",
        )
        assert group_type(admin, group) == ConsumerGroupType.CLASSIC
        assert split(members)
        assert not any(m.errors for m in members)
    finally:
        if joiner is not None:
            joiner.stop()  # closed: a fatal consumer's close returns at once
        for m in members:
            m.stop()


def test_an_sdk_member_joins_a_kafka_python_group_and_leaves_it_classic(
    bootstrap, admin, kafka_cluster
):
    """odradek's own Consumer (KIP-848 over gRPC) joins a classic kafka-python group: the group
    becomes a consumer group and the two split the partitions; the SDK member's close is the
    last KIP-848 leave: the group is classic again and kafka-python takes every partition."""
    topic, group = unique("sdk-mixed"), unique("g")
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    classic = PythonMember(bootstrap, topic, group)
    classic.start()
    sdk = OdradekConsumer(kafka_cluster.bootstrap_servers, group_id=group, enable_auto_commit=False)
    try:
        wait_for(lambda: len(classic.partitions()) == 6, "the classic member with every partition")
        sdk.subscribe([topic])

        def sdk_partitions() -> frozenset[int]:
            sdk.poll(timeout_ms=50)
            return frozenset(tp.partition for tp in sdk.assignment())

        class Sdk:
            def partitions(self) -> frozenset[int]:
                return sdk_partitions()

        wait_for(
            lambda: split([classic, Sdk()]),
            "the SDK member and kafka-python splitting the partitions",
        )
        assert group_type(admin, group) == ConsumerGroupType.CONSUMER
        sdk.close()
        wait_for(
            lambda: is_type(admin, group, ConsumerGroupType.CLASSIC), "the group classic again"
        )
        wait_for(lambda: len(classic.partitions()) == 6, "kafka-python with every partition")
    finally:
        sdk.close()
        classic.stop()


def covered(members: list[Any]) -> bool:
    """No partition shared, all covered (a member may have none: more members than needed)."""
    sets = [m.partitions() for m in members]
    return sum(len(s) for s in sets) == PARTITIONS and frozenset().union(*sets) == frozenset(
        range(PARTITIONS)
    )
