"""``odradek groups`` and ``odradek consume --group`` against a real cluster, with the Admin
methods under them (docs/groups.md)."""

from __future__ import annotations

import pytest

from odradek import Admin, Consumer, NewTopic, Producer, TopicPartition
from odradek.cli import main
from odradek.errors import GroupIdNotFoundError, NonEmptyGroupError
from tests.integration.helpers import wait_for

TOPIC = "clicks"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(list(args))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out.splitlines(), captured.err


def test_groups_commands(make_cluster, capsys):
    cluster = make_cluster(
        3, offsets_topic_num_partitions="3", group_consumer_heartbeat_interval_ms="200"
    )
    bootstrap = cluster.bootstrap_servers
    admin = Admin(bootstrap)
    assert admin.create_topics([NewTopic(TOPIC, 2, 3)], timeout_ms=30000)[TOPIC] is None
    with Producer(bootstrap, acks=-1) as producer:
        for i in range(10):
            producer.send(TOPIC, f"v{i}".encode(), partition=i % 2)
        producer.flush()

    # consume --group reads everything from the start and commits on exit
    code, lines, err = run(
        capsys,
        "consume",
        TOPIC,
        "--group",
        "g1",
        "--from-beginning",
        "--bootstrap-server",
        bootstrap,
    )
    assert code == 0
    assert sorted(lines) == sorted(f"v{i}" for i in range(10))
    assert "Processed a total of 10 messages" in err
    committed = admin.list_consumer_group_offsets("g1")
    assert committed[TopicPartition(TOPIC, 0)].offset == 5
    assert committed[TopicPartition(TOPIC, 1)].offset == 5

    code, lines, _ = run(capsys, "groups", "list", "--bootstrap-server", bootstrap)
    assert code == 0 and "g1" in lines

    # an active member: describe shows it; reset and delete are refused
    member = Consumer(bootstrap, group_id="g1", client_id="reader")
    member.subscribe([TOPIC])
    wait_for(lambda: (member.poll(timeout_ms=100), len(member.assignment()) == 2)[1], "assigned")
    with Producer(bootstrap, acks=-1) as producer:
        producer.send(TOPIC, b"late", partition=0)
        producer.flush()
    code, lines, _ = run(capsys, "groups", "describe", "g1", "--bootstrap-server", bootstrap)
    assert code == 0
    assert lines[0].split() == [
        "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
        "CONSUMER-ID", "HOST", "CLIENT-ID",
    ]  # fmt: skip
    row0 = lines[1].split()
    assert row0[:6] == ["g1", TOPIC, "0", "5", "6", "1"]
    assert row0[8] == "reader"
    code, lines, _ = run(
        capsys, "groups", "describe", "g1", "--state", "--bootstrap-server", bootstrap
    )
    # kafka-consumer-groups.sh's columns (DescribeConsumerGroupTest, testDescribeState...)
    assert lines[0].split() == [
        "GROUP",
        "COORDINATOR",
        "(ID)",
        "ASSIGNMENT-STRATEGY",
        "STATE",
        "#MEMBERS",
    ]
    coordinator = admin.describe_consumer_groups(["g1"])["g1"]
    assert lines[1].split()[1:3] == [coordinator.coordinator, f"({coordinator.coordinator_id})"]
    assert coordinator.coordinator_id >= 0
    assert lines[1].split()[4:] == ["Stable", "1"]
    code, _, err = run(capsys, "groups", "delete", "g1", "--bootstrap-server", bootstrap)
    assert code == 1 and NonEmptyGroupError.name in err
    code, _, err = run(
        capsys, "groups", "reset-offsets", "g1", "--topic", TOPIC, "--to-earliest",
        "--bootstrap-server", bootstrap,
    )  # fmt: skip
    assert code == 1 and "inactive" in err
    member.close()  # commits and leaves
    wait_for(lambda: admin.describe_consumer_groups(["g1"])["g1"].state == "Empty", "empty")

    # reset: a dry run changes nothing; --execute commits the clamped plan
    code, lines, _ = run(
        capsys, "groups", "reset-offsets", "g1", "--topic", f"{TOPIC}:0", "--shift-by", "-2",
        "--bootstrap-server", bootstrap,
    )  # fmt: skip
    committed_0 = admin.list_consumer_group_offsets("g1")[TopicPartition(TOPIC, 0)].offset
    assert committed_0 in (5, 6)  # the member may or may not have read "late" before closing
    assert code == 0 and lines[1].split() == ["g1", TOPIC, "0", str(committed_0 - 2)]
    assert "dry run" in lines[-1]
    assert admin.list_consumer_group_offsets("g1")[TopicPartition(TOPIC, 0)].offset == committed_0
    code, lines, _ = run(
        capsys, "groups", "reset-offsets", "g1", "--topic", TOPIC, "--to-offset", "100",
        "--execute", "--bootstrap-server", bootstrap,
    )  # fmt: skip
    assert code == 0
    offsets = admin.list_consumer_group_offsets("g1")
    assert offsets[TopicPartition(TOPIC, 0)].offset == 6  # clamped to the end
    assert offsets[TopicPartition(TOPIC, 1)].offset == 5
    code, lines, _ = run(
        capsys, "groups", "reset-offsets", "g1", "--topic", TOPIC, "--to-earliest", "--execute",
        "--bootstrap-server", bootstrap,
    )  # fmt: skip
    assert {
        tp.partition: om.offset for tp, om in admin.list_consumer_group_offsets("g1").items()
    } == {0: 0, 1: 0}

    code, lines, _ = run(capsys, "groups", "delete", "g1", "--bootstrap-server", bootstrap)
    assert code == 0 and "successful" in lines[0]
    code, _, err = run(capsys, "groups", "describe", "g1", "--bootstrap-server", bootstrap)
    assert code == 1 and GroupIdNotFoundError.name in err

    # iteration, and pause/resume of one partition
    with Consumer(bootstrap, group_id="g2", auto_offset_reset="earliest") as reader:
        reader.subscribe([TOPIC])
        got = []
        for record in reader:
            got.append(record.value)
            if len(got) == 10:
                break
        assert set(got) <= {f"v{i}".encode() for i in range(10)} | {b"late"}
        p0 = TopicPartition(TOPIC, 0)
        reader.pause(p0)
        assert reader.paused() == {p0}
        with Producer(bootstrap, acks=-1) as producer:
            for value, partition in ((b"p0", 0), (b"p1", 1)):
                producer.send(TOPIC, value, partition=partition)
            producer.flush()
        seen: list[int] = []

        def poll_some() -> list[int]:
            seen.extend(r.partition for r in reader.poll(timeout_ms=200))
            return seen

        wait_for(poll_some, "the record of the partition not paused")
        assert set(seen) == {1}  # nothing of the paused partition
        reader.resume(p0)
        wait_for(lambda: [r for r in reader.poll(timeout_ms=200) if r.partition == 0], "p0")
    admin.close()
