"""Adding partitions to a topic (CreatePartitions) against a real cluster: through the Admin
client and ``odradek topics alter --partitions``, under a running producer, and its bad
inputs."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading

from odradek import Admin, NewTopic, Producer, TopicPartition
from odradek.admin import NewPartitions
from odradek.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    ReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)
from tests.integration.helpers import consume_all, wait_for, wait_for_full_isr


def _cli(cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "odradek", "--bootstrap-server", cluster.bootstrap_servers, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_adding_partitions_under_a_running_producer_loses_nothing(make_cluster):
    cluster = make_cluster()
    admin = Admin(cluster.bootstrap_servers)
    assert admin.create_topics([NewTopic("grow", 2, 3)])["grow"] is None
    wait_for_full_isr(admin, "grow", 2)
    sent: list[bytes] = []
    futures = []
    stop = threading.Event()
    grown = threading.Event()
    learned = threading.Event()

    with Producer(cluster.bootstrap_servers, metadata_max_age_ms=200, linger_ms=1) as producer:

        def produce() -> None:
            i = 0
            while not stop.is_set():
                value = f"v{i}".encode()
                key = f"k{i}".encode()
                futures.append(producer.send("grow", value, key=key))
                sent.append(value)
                i += 1
                if grown.is_set() and len(producer.partitions_for("grow")) == 6:
                    learned.set()
                stop.wait(0.002)

        thread = threading.Thread(target=produce)
        thread.start()
        try:
            wait_for(lambda: len(sent) > 200, "records sent before the change")
            assert admin.create_partitions({"grow": NewPartitions(6)})["grow"] is None
            grown.set()
            wait_for(learned.is_set, "the producer to learn the new partitions")
            count = len(sent)
            wait_for(lambda: len(sent) > count + 300, "records sent after the change")
        finally:
            stop.set()
            thread.join(timeout=60)
        producer.flush(timeout=60)
    metas = [f.result(timeout=0) for f in futures]
    assert {m.partition for m in metas} >= {2, 3, 4, 5}, "nothing went to the new partitions"
    wait_for_full_isr(admin, "grow", 6)
    described = admin.describe_topics(["grow"])["grow"]
    assert all(len(p.replicas) == 3 and p.leader >= 0 for p in described.partitions)
    stored = consume_all(cluster.bootstrap_servers, "grow", 6)
    values = [v for records in stored.values() for _, v in records]
    assert sorted(values) == sorted(sent)
    admin.close()


def test_topics_alter_partitions_from_the_command_line_and_bad_inputs(make_cluster):
    cluster = make_cluster()
    with Admin(cluster.bootstrap_servers) as admin:
        assert admin.create_topics([NewTopic("alt", 1, 2)])["alt"] is None
        # validate_only changes nothing
        assert admin.create_partitions({"alt": NewPartitions(3)}, validate_only=True)["alt"] is None
        assert len(admin.describe_topics(["alt"])["alt"].partitions) == 1
        results = admin.create_partitions(
            {
                "missing": NewPartitions(2),
                "alt": NewPartitions(3, [[1, 1], [2, 0]]),
            }
        )
        assert isinstance(results["missing"], UnknownTopicOrPartitionError)
        assert isinstance(results["alt"], InvalidReplicaAssignmentError)
        bad_broker = admin.create_partitions({"alt": NewPartitions(2, [[1, 9]])})["alt"]
        assert isinstance(bad_broker, InvalidReplicaAssignmentError)
        assert "[9]" in bad_broker.message

    r = _cli(cluster, "topics", "alter", "alt", "--partitions", "3")
    assert r.returncode == 0, r.stderr
    assert "now has 3 partitions" in r.stdout
    r = _cli(cluster, "topics", "alter", "alt", "--partitions", "2")
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1
    assert "INVALID_PARTITIONS" in r.stderr and "2 would not be an increase" in r.stderr
    r = _cli(cluster, "topics", "alter", "alt", "--partitions", "3")
    assert r.returncode == 1 and "Topic already has 3 partition(s)." in r.stderr
    # an explicit placement lists every partition; the last one places the new partition
    r = _cli(
        cluster,
        "topics",
        "alter",
        "alt",
        "--partitions",
        "4",
        "--replica-assignment",
        "0:1,1:2,2:0,2:1",
    )
    assert r.returncode == 0, r.stderr
    with Admin(cluster.bootstrap_servers) as admin:
        wait_for_full_isr(admin, "alt", 4, rf=2)
        described = admin.describe_topics(["alt"])["alt"]
        assert described.partitions[3].replicas == (2, 1)
        assert described.partitions[3].leader == 2
        too_many = admin.create_partitions({"alt": NewPartitions(5, [[0, 1, 2]])})["alt"]
        assert isinstance(too_many, InvalidReplicaAssignmentError)
        assert isinstance(
            admin.create_partitions({"alt": NewPartitions(1)})["alt"], InvalidPartitionsError
        )
    r = _cli(cluster, "topics", "alter", "alt", "--partitions", "0")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    r = _cli(cluster, "topics", "alter", "alt", "--replica-assignment", "1:2")
    assert r.returncode == 2 and "--replica-assignment needs --partitions" in r.stderr
    r = _cli(cluster, "topics", "alter", "nope", "--partitions", "3")
    assert r.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in r.stderr
    # a replication factor above the live brokers cannot be placed
    with Admin(cluster.bootstrap_servers) as admin:
        assert admin.create_topics([NewTopic("wide", 1, 3)])["wide"] is None
        cluster.node(2).kill()

        # placement counts the registered brokers: node 2 leaves the metadata once fenced
        # (broker.session.timeout.ms), but ZooKeeper only when its session ends
        def refused() -> bool:
            error = admin.create_partitions({"wide": NewPartitions(2)}, validate_only=True)
            return isinstance(error["wide"], InvalidReplicationFactorError)

        wait_for(refused, "node 2's registration to go")
        error = admin.create_partitions({"wide": NewPartitions(2)})["wide"]
        assert isinstance(error, InvalidReplicationFactorError)


def test_adding_partitions_during_a_reassignment_of_the_topic_is_refused(make_cluster):
    # node 2 is frozen below for longer than broker.session.timeout.ms: not to be fenced
    cluster = make_cluster(broker_session_timeout_ms="60000")
    tp = TopicPartition("moving", 0)
    with Admin(cluster.bootstrap_servers) as admin:
        assert admin.create_topics([NewTopic("moving", assignments={0: [0]})])["moving"] is None
        wait_for_full_isr(admin, "moving", 1, rf=1)
        # node 2 frozen: the replica being added cannot catch up, the move stays in progress
        cluster.node(2).signal(signal.SIGSTOP)
        try:
            assert admin.alter_partition_reassignments({tp: [0, 2]}) == {tp: None}
            assert tp in admin.list_partition_reassignments()
            error = admin.create_partitions({"moving": NewPartitions(2)})["moving"]
            assert isinstance(error, ReassignmentInProgressError)
            assert error.message.endswith("A partition reassignment is in progress.")
            assert admin.alter_partition_reassignments({tp: None}) == {tp: None}
            wait_for(lambda: not admin.list_partition_reassignments(), "the cancellation")
        finally:
            cluster.node(2).signal(signal.SIGCONT)
        assert admin.create_partitions({"moving": NewPartitions(2)})["moving"] is None
        wait_for_full_isr(admin, "moving", 2, rf=1)
        assert admin.describe_topics(["moving"])["moving"].partitions[0].replicas == (0,)
