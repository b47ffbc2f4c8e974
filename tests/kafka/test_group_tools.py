"""A classic group made by real Kafka clients (kafka-python's KafkaConsumer, JoinGroup/SyncGroup
through the Kafka door) beside a KIP-848 group (odradek's Consumer, ConsumerGroupHeartbeat over
gRPC), both seen through the SDK's Admin and through the ``odradek groups`` command in a
subprocess, as kafka-consumer-groups.sh shows them: the type (classic / consumer), the protocol
type, the assignor, the members' client ids, hosts and assignments. Conditions are polled with a
deadline; nothing sleeps to synchronise."""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator

import pytest
from kafka import KafkaConsumer
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from odradek import Admin, Consumer, TopicPartition
from odradek.client.group_admin import ConsumerGroupDescription
from tests.integration.helpers import wait_for
from tests.kafka.conftest import running_cluster
from tests.kafka.test_confluent_kafka import create_topic

PARTITIONS = 4


@pytest.fixture(scope="module")
def kafka_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    """Three nodes; a classic group's first rebalance waits half a second for more members
    (so both members usually join the first generation)."""
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "group-tools",
        overrides={
            "default.replication.factor": "3",
            "num.partitions": "3",
            "group.initial.rebalance.delay.ms": "500",
        },
    ) as cluster:
        yield cluster


class ClassicMember(threading.Thread):
    """A kafka-python KafkaConsumer (the classic protocol, round-robin assignor) polling on its
    own thread, as an application does."""

    def __init__(self, bootstrap: str, topic: str, group: str, client_id: str) -> None:
        super().__init__(daemon=True)
        self.consumer = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=client_id,
            partition_assignment_strategy=[RoundRobinPartitionAssignor],
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            heartbeat_interval_ms=500,
            session_timeout_ms=10_000,
        )
        self.stopping = threading.Event()
        self.errors: list[BaseException] = []

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                self.consumer.poll(timeout_ms=200)
        except BaseException as e:  # reported by stop()
            self.errors.append(e)

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)
        self.consumer.close()
        assert not self.errors, self.errors


def odradek_cli(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "odradek", *args, "--bootstrap-server", bootstrap],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def rows(result: subprocess.CompletedProcess[str]) -> list[list[str]]:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return [line.split() for line in result.stdout.splitlines() if line.strip()]


def test_a_classic_group_beside_a_consumer_group_through_admin_and_cli(
    kafka_cluster: LocalCluster,
) -> None:
    grpc = kafka_cluster.bootstrap_servers
    kafka = kafka_cluster.kafka_bootstrap_servers
    suffix = uuid.uuid4().hex[:6]
    topic, classic, kip848 = f"tools-{suffix}", f"classic-{suffix}", f"kip848-{suffix}"
    create_topic(kafka, topic, partitions=PARTITIONS)
    everything = {TopicPartition(topic, p) for p in range(PARTITIONS)}
    client_ids = {"tools-kp-1", "tools-kp-2"}
    members = [ClassicMember(kafka, topic, classic, c) for c in sorted(client_ids)]
    for m in members:
        m.start()
    reader = Consumer(grpc, group_id=kip848, client_id="sdk-reader")
    admin = Admin(grpc)
    try:
        reader.subscribe([topic])

        def both_stable() -> dict[str, ConsumerGroupDescription] | None:
            reader.poll(timeout_ms=100)
            found = admin.describe_consumer_groups([classic, kip848])
            c, k = found[classic], found[kip848]
            settled = (
                c.state == "Stable"
                and len(c.members) == 2
                and all(len(m.assignment) == 2 for m in c.members)
                and k.state == "Stable"
                and len(k.members) == 1
                and k.members[0].assignment == everything
            )
            return found if settled else None

        found = wait_for(both_stable, "the classic group and the KIP-848 group stable")

        # --- the SDK's Admin ------------------------------------------------------------------
        d = found[classic]
        assert (d.type, d.group_type, d.protocol_type, d.protocol) == (
            "classic",
            "classic",
            "consumer",
            "roundrobin",
        )
        assert d.assignor == d.partition_assignor == "roundrobin"
        assert not d.is_simple_consumer_group
        assert {m.client_id for m in d.members} == client_ids
        assert all("127.0.0.1" in m.host for m in d.members), [m.host for m in d.members]
        assert set().union(*(m.assignment for m in d.members)) == everything
        k = found[kip848]
        assert (k.type, k.protocol_type, k.protocol) == ("consumer", "consumer", "")
        assert k.members[0].client_id == "sdk-reader"
        assert "127.0.0.1" in k.members[0].host

        listed = {g.group_id: g for g in admin.list_consumer_groups()}
        assert (listed[classic].type, listed[classic].protocol_type) == ("classic", "consumer")
        assert listed[classic].state == "Stable"
        assert (listed[kip848].type, listed[kip848].protocol_type) == ("consumer", "consumer")
        only_classic = {g.group_id for g in admin.list_consumer_groups(types=["CLASSIC"])}
        assert classic in only_classic and kip848 not in only_classic
        with pytest.raises(ValueError, match="share"):
            admin.list_consumer_groups(types=["share"])

        # --- odradek groups (kafka-consumer-groups.sh's columns) ----------------------------
        table = rows(odradek_cli(grpc, "groups", "list", "--type", "--protocol", "--state"))
        assert table[0] == ["GROUP", "TYPE", "PROTOCOL", "STATE"]
        assert [classic, "classic", "consumer", "Stable"] in table
        assert [kip848, "consumer", "consumer", "Stable"] in table
        table = rows(odradek_cli(grpc, "groups", "list", "--type", "classic"))
        assert table[0] == ["GROUP", "TYPE"]
        assert [classic, "classic"] in table and all(r[0] != kip848 for r in table)

        table = rows(odradek_cli(grpc, "groups", "describe", classic, "--state"))
        header = ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
        assert table[0] == header
        assert table[1][0] == classic and table[1][3:] == ["roundrobin", "Stable", "2"]
        assert table[1][1:3] == [d.coordinator, f"({d.coordinator_id})"]

        table = rows(odradek_cli(grpc, "groups", "describe", classic, "--members", "--verbose"))
        assert table[0] == [
            "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
            "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT",
        ]  # fmt: skip
        by_member = {described.member_id: described for described in d.members}
        assert {r[1] for r in table[1:]} == set(by_member)
        for r in table[1:]:
            one = by_member[r[1]]
            assignment = ",".join(str(tp.partition) for tp in sorted(one.assignment))
            cells = [classic, one.member_id, one.host, one.client_id, "2"]
            assert r == [*cells, "-", f"{topic}:{assignment}", "-", "-"]

        table = rows(odradek_cli(grpc, "groups", "describe", kip848, "--members", "--verbose"))
        member = k.members[0]
        everything_cell = f"{topic}:{','.join(str(p) for p in range(PARTITIONS))}"
        cells = [kip848, member.member_id, member.host, "sdk-reader", "4"]
        epochs = [str(member.member_epoch), str(k.assignment_epoch)]
        assert table[1] == [*cells, epochs[0], everything_cell, epochs[1], everything_cell, "true"]
        assert member.upgraded is True  # the SDK's member speaks KIP-848

        # bad input: one line, a Kafka error name or the valid values
        missing = odradek_cli(grpc, "groups", "describe", f"nosuch-{suffix}", "--members")
        assert missing.returncode == 1
        assert missing.stderr.strip().count("\n") == 0 and "GROUP_ID_NOT_FOUND" in missing.stderr
        bad = odradek_cli(grpc, "groups", "list", "--type", "share")
        assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
        assert "valid: classic, consumer" in bad.stderr
    finally:
        reader.close()
        admin.close()
        for m in members:
            m.stop()
