"""Debian's kcat (librdkafka 2.0) against a real odradek cluster's Kafka listeners: ``kcat -L``,
produce with every codec, consume from the beginning, from the end and from a timestamp, and two
balanced consumers (``kcat -G``) in a classic consumer group."""

from __future__ import annotations

import subprocess
import threading
import time
import uuid

import pytest
from kafka import KafkaAdminClient

from tests.integration.helpers import wait_for
from tests.kafka.conftest import require
from tests.kafka.test_confluent_kafka import create_topic


def kcat(*args: str, stdin: bytes | None = None, timeout: float = 60) -> str:
    result = subprocess.run(
        [require("kcat"), *args],
        input=stdin,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return result.stdout.decode()


def test_kcat_lists_brokers_and_topics(kafka_cluster, bootstrap):
    topic = f"kcat-l-{uuid.uuid4().hex[:6]}"
    # a produce to a missing topic creates it (auto.create.topics.enable)
    kcat("-b", bootstrap, "-P", "-t", topic, stdin=b"x\n")
    listing = kcat("-b", bootstrap, "-L", "-t", topic)
    assert "3 brokers:" in listing
    for node in kafka_cluster.nodes:
        assert f"broker {node.node_id} at {node.kafka_address}" in listing
    assert f'topic "{topic}" with 3 partitions' in listing


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kcat_produces_with_each_codec_and_reads_it_back(bootstrap, codec):
    topic = f"kcat-{codec}-{uuid.uuid4().hex[:6]}"
    lines = [f"{codec}-{i}" for i in range(200)]
    kcat(
        "-b",
        bootstrap,
        "-P",
        "-t",
        topic,
        "-p",
        "0",
        "-z",
        codec,
        stdin="\n".join(lines).encode() + b"\n",
    )
    out = kcat("-b", bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q")
    assert out.splitlines() == lines


def test_kcat_consumes_from_the_end_and_from_a_timestamp(bootstrap):
    topic = f"kcat-pos-{uuid.uuid4().hex[:6]}"
    kcat("-b", bootstrap, "-P", "-t", topic, "-p", "0", stdin=b"a\nb\nc\n")
    time.sleep(0.05)
    since = int(time.time() * 1000)  # noqa: TID251
    time.sleep(0.05)
    kcat("-b", bootstrap, "-P", "-t", topic, "-p", "0", stdin=b"d\ne\n")
    last_two = kcat("-b", bootstrap, "-C", "-t", topic, "-p", "0", "-o", "-2", "-e", "-q")
    assert last_two.splitlines() == ["d", "e"]
    by_time = kcat("-b", bootstrap, "-C", "-t", topic, "-p", "0", "-o", f"s@{since}", "-e", "-q")
    assert by_time.splitlines() == ["d", "e"]


def test_two_kcat_balanced_consumers_split_a_topic_and_commit(kafka_cluster, bootstrap):
    """``kcat -G``: librdkafka 2.0's classic consumer group (JoinGroup, SyncGroup, Heartbeat,
    OffsetFetch, OffsetCommit, LeaveGroup). Two members read every record once between them,
    each from its own partitions; once they have left, the group's commits hold: a member of
    the same group started again finds nothing to read."""
    topic = f"kcat-g-{uuid.uuid4().hex[:6]}"
    group = f"kcat-group-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, partitions=4)
    members = [
        subprocess.Popen(
            [
                *(require("kcat"), "-b", bootstrap, "-G", group, topic, "-q", "-u"),
                *("-f", "%p %s\\n", "-o", "beginning"),
                *("-X", "auto.commit.interval.ms=200"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(2)
    ]
    seen: list[list[str]] = [[], []]

    def read(i: int) -> None:
        stdout = members[i].stdout
        assert stdout is not None
        for line in stdout:
            seen[i].append(line.strip())

    readers = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(2)]
    for r in readers:
        r.start()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:

        def two_members_stable() -> bool:
            described = admin.describe_groups([group])[group]
            return described["group_state"] == "Stable" and len(described["members"]) == 2

        wait_for(two_members_stable, "two kcat members in a Stable group", timeout_s=90)
        for p in range(4):
            lines = "".join(f"r-{p}-{i}\n" for i in range(50))
            kcat("-b", bootstrap, "-P", "-t", topic, "-p", str(p), stdin=lines.encode())
        wait_for(lambda: len(seen[0]) + len(seen[1]) >= 200, "every record read", timeout_s=90)

        def committed() -> int:
            offsets = admin.list_group_offsets(group).get(group, {})
            return sum(o.offset for o in offsets.values())

        wait_for(lambda: committed() == 200, "the members' commits of every record", timeout_s=30)
    finally:
        admin.close()
        for m in members:
            m.terminate()  # SIGTERM: kcat closes its consumer (commit, LeaveGroup)
        for m in members:
            m.wait(30)
        for r in readers:
            r.join(10)
        for m in members:
            assert m.stdout is not None
            m.stdout.close()
    values = sorted(line.split(" ", 1)[1] for member in seen for line in member)
    assert values == sorted(f"r-{p}-{i}" for p in range(4) for i in range(50))  # each once
    owned = [{line.split(" ", 1)[0] for line in member} for member in seen]
    assert all(owned) and not owned[0] & owned[1], owned  # each member its own partitions
    # kcat's -o in a group forces that start; without it a member starts at the group's commits
    again = kcat("-b", bootstrap, "-G", group, topic, "-q", "-e", timeout=90)
    assert again == ""
