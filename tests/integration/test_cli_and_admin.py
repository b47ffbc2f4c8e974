"""The command line and the Admin client against a real cluster."""

from __future__ import annotations

import subprocess
import sys

from odradek import Admin, ConfigChange, NewTopic, TopicPartition
from odradek.errors import InvalidConfigError, TopicAlreadyExistsError
from tests.integration.helpers import partition_state, wait_for, wait_for_full_isr


def _cli(cluster, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "odradek", "--bootstrap-server", cluster.bootstrap_servers, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_topics_produce_consume_and_cluster_describe_from_the_command_line(make_cluster):
    # the broker's topic defaults (Kafka's num.partitions, default.replication.factor) apply
    # to a topic created without a count, whichever node serves the request
    # (and DescribeConfigs reports the broker's defaults, such as its min.insync.replicas)
    cluster = make_cluster(
        num_partitions="2", default_replication_factor="3", min_insync_replicas="2"
    )
    r = _cli(cluster, "topics", "create", "defaults")
    assert r.returncode == 0, r.stderr
    r = _cli(cluster, "topics", "describe", "defaults")
    assert "PartitionCount: 2\tReplicationFactor: 3" in r.stdout, r.stdout
    with Admin(cluster.bootstrap_servers) as admin:
        entry = admin.describe_configs(["defaults"])["defaults"]["min.insync.replicas"]
    assert (entry.value, entry.is_default) == ("2", True)
    r = _cli(
        cluster,
        "topics",
        "create",
        "cli",
        "--partitions",
        "2",
        "--replication-factor",
        "3",
        "--config",
        "min.insync.replicas=2",
    )
    assert r.returncode == 0, r.stderr
    r = _cli(cluster, "topics", "create", "cli", "--partitions", "1", "--replication-factor", "3")
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "TOPIC_ALREADY_EXISTS" in r.stderr
    assert "cli" in _cli(cluster, "topics", "list").stdout.split()
    admin = Admin(cluster.bootstrap_servers)
    wait_for_full_isr(admin, "cli", 2)
    r = _cli(cluster, "produce", "cli", "--key-separator", ":", stdin="a:1\nb:2\nc:3\n")
    assert r.returncode == 0, r.stderr
    r = _cli(cluster, "consume", "cli", "--from-beginning", "--print-key", "--max-messages", "3")
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.split("\n")[:-1]) == sorted(["a\t1", "b\t2", "c\t3"]) or sorted(
        line.replace(":", "\t") for line in r.stdout.splitlines()
    ) == ["a\t1", "b\t2", "c\t3"]
    r = _cli(cluster, "topics", "describe", "cli")
    assert r.returncode == 0 and "min.insync.replicas=2" in r.stdout.replace(" ", "")
    cluster.node(2).kill()
    wait_for(
        lambda: all(2 not in p.isr for p in admin.describe_topics(["cli"])["cli"].partitions),
        "node 2 out of every ISR",
    )
    r = _cli(cluster, "cluster", "describe")
    assert r.returncode == 0, r.stderr
    assert "under-replicated" in r.stdout
    r = _cli(cluster, "topics", "delete", "no-such-topic")
    assert r.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in r.stderr
    admin.close()


def test_admin_configs_elections_reassignment_and_deletion(make_cluster):
    cluster = make_cluster()
    admin = Admin(cluster.bootstrap_servers)
    assert admin.create_topics([NewTopic("adm", assignments={0: [0, 1, 2]})]) == {"adm": None}
    result = admin.create_topics([NewTopic("adm", 1, 3)])
    assert isinstance(result["adm"], TopicAlreadyExistsError)
    wait_for_full_isr(admin, "adm")
    assert admin.alter_configs({"adm": ConfigChange(set={"retention.ms": "60000"})}) == {
        "adm": None
    }
    entries = admin.describe_configs(["adm"])["adm"]
    assert entries["retention.ms"].value == "60000" and not entries["retention.ms"].is_default
    # Kafka's spelling of values and names, in answers and in errors
    assert entries["message.timestamp.type"].value == "CreateTime"
    bad = admin.alter_configs({"adm": ConfigChange(set={"min.insync.replicas": "0"})})["adm"]
    assert isinstance(bad, InvalidConfigError)
    assert bad.message.endswith(
        "invalid value '0' for topic config 'min.insync.replicas': must be at least 1"
    )
    # move leadership away from the preferred replica, then elect it back
    cluster.node(0).stop()
    wait_for(lambda: partition_state(admin, "adm").leader not in (-1, 0), "a new leader")
    cluster.node(0).start()
    wait_for_full_isr(admin, "adm")
    results = admin.elect_leaders([TopicPartition("adm", 0)])
    assert results[TopicPartition("adm", 0)] is None
    wait_for(lambda: partition_state(admin, "adm").leader == 0, "the preferred leader back")
    # reassign to two replicas
    assert admin.alter_partition_reassignments({TopicPartition("adm", 0): [1, 2]}) == {
        TopicPartition("adm", 0): None
    }
    wait_for(lambda: partition_state(admin, "adm").replicas == (1, 2), "the reassignment")
    assert admin.delete_topics(["adm"]) == {"adm": None}
    wait_for(lambda: "adm" not in admin.list_topics(), "the deletion")
    admin.close()
