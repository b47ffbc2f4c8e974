"""``odradek topics|produce|consume|cluster|node`` against in-process gRPC nodes
(tests/unit/sdk/fake_cluster.py): output, exit codes, and one-line errors."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.cli import main
from odradek.client.types import TopicPartition
from odradek.partitioner import partition_for_key
from odradek.records import Record, build_batch
from tests.unit.sdk.fake_cluster import FakeCluster, running_cluster

WORKTREE = Path(__file__).resolve().parents[3]
T0 = TopicPartition("t", 0)


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    yield from running_cluster(3)


def run(capsys, monkeypatch, argv: list[str], stdin: bytes = b"") -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    # main() defaults GRPC_VERBOSITY for client commands: undo that after the test.
    monkeypatch.setenv("GRPC_VERBOSITY", os.environ.get("GRPC_VERBOSITY", "ERROR"))
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def cli(capsys, monkeypatch, cluster):
    """Run ``odradek --bootstrap-server <fake cluster> ARGV...``."""

    def invoke(*argv: str, stdin: bytes = b"") -> tuple[int, str, str]:
        return run(capsys, monkeypatch, ["--bootstrap-server", cluster.bootstrap, *argv], stdin)

    return invoke


def one_error_line(err: str, prefix: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(prefix), err
    return lines[0]


# --- usage errors: one line, exit 2 -------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["topics"], "odradek topics: error: the following arguments are required: ACTION"),
        (
            ["topics", "create"],
            "odradek topics create: error: the following arguments are required: NAME",
        ),
        (
            ["topics", "create", "t", "--partitions", "0"],
            "argument --partitions: must be positive: 0",
        ),
        (["topics", "create", "t", "--config", "novalue"], "expected KEY=VALUE, got 'novalue'"),
        (["topics", "create", "t", "--replica-assignment", "1:x"], "broker ids must be integers"),
        (
            ["topics", "create", "t", "--partitions", "2", "--replica-assignment", "1:2"],
            "cannot be combined",
        ),
        (["topics", "alter", "t"], "nothing to change"),
        (
            ["topics", "alter", "t", "--config", "a=1", "--delete-config", "a"],
            "both set and deleted",
        ),
        (["produce", "t", "--acks", "2"], "argument --acks: invalid choice: '2'"),
        (["consume", "t", "--offset", "5"], "--offset N needs --partition"),
        (["consume", "t", "--offset", "soon"], "argument --offset: not an integer: 'soon'"),
        (["consume", "t", "--from-beginning", "--timestamp", "5"], "not allowed with argument"),
        (["cluster"], "the following arguments are required: ACTION"),
        (["--bootstrap-server", "host-without-port", "topics", "list"], "not a HOST:PORT address"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(capsys, monkeypatch, cluster, argv, message):
    if "--bootstrap-server" not in argv:
        argv = ["--bootstrap-server", cluster.bootstrap, *argv]
    code, out, err = run(capsys, monkeypatch, argv)
    assert code == 2
    line = one_error_line(err, "odradek")
    assert message in line and line.endswith("(see --help)")
    assert out == ""


def test_a_bad_bootstrap_environment_variable_is_a_usage_error(capsys, monkeypatch):
    monkeypatch.setenv("ODRADEK_BOOTSTRAP_SERVERS", "a:b")
    code, _, err = run(capsys, monkeypatch, ["topics", "list"])
    assert code == 2
    assert "not a HOST:PORT address: 'a:b'" in one_error_line(err, "odradek: error:")


def test_node_help_parses(capsys, monkeypatch):
    code, out, err = run(capsys, monkeypatch, ["node", "--help"])
    assert code == 0 and err == ""
    assert out.startswith("usage: odradek node")
    assert "odradek node start --help" in " ".join(out.split())


# --- operation errors: one line, exit 1 ---------------------------------------------------------


def test_an_unreachable_cluster_is_one_line(capsys, monkeypatch):
    code, out, err = run(
        capsys, monkeypatch, ["--bootstrap-server", "127.0.0.1:1", "topics", "list"]
    )
    assert code == 1 and out == ""
    line = one_error_line(err, "odradek topics list: error: NETWORK_EXCEPTION: ")
    assert "127.0.0.1:1" in line


def test_create_an_existing_topic(cli, cluster):
    cluster.create_topic("t", 1)
    code, out, err = cli("topics", "create", "t", "--partitions", "1", "--replication-factor", "1")
    assert code == 1 and out == ""
    one_error_line(err, "odradek topics create: error: TOPIC_ALREADY_EXISTS: topic 't': ")
    code, _, err = cli("topics", "create", "t", "--partitions", "1", "--if-not-exists")
    assert (code, err) == (0, "")


def test_create_with_too_many_replicas(cli):
    code, _, err = cli("topics", "create", "t", "--partitions", "1", "--replication-factor", "9")
    assert code == 1
    one_error_line(err, "odradek topics create: error: INVALID_REPLICATION_FACTOR: ")


def test_describe_delete_and_alter_a_missing_topic(cli):
    for argv, prog in [
        (["topics", "describe", "nope"], "odradek topics describe"),
        (["topics", "delete", "nope"], "odradek topics delete"),
        (["topics", "alter", "nope", "--config", "retention.ms=1"], "odradek topics alter"),
        (["produce", "nope"], "odradek produce"),
        (["consume", "nope"], "odradek consume"),
    ]:
        code, _, err = cli(*argv)
        assert code == 1, argv
        line = one_error_line(err, f"{prog}: error: UNKNOWN_TOPIC_OR_PARTITION: ")
        assert "'nope'" in line
    assert cli("topics", "delete", "nope", "--if-exists")[0] == 0


def test_an_unknown_config_is_refused(cli, cluster):
    cluster.create_topic("t", 1)
    code, _, err = cli("topics", "alter", "t", "--config", "colour=blue")
    assert code == 1
    one_error_line(
        err, "odradek topics alter: error: INVALID_CONFIG: topic 't': Unknown topic config"
    )


def test_a_line_without_the_key_separator(cli, cluster):
    cluster.create_topic("t", 1)
    code, _, err = cli("produce", "t", "--key-separator", ":", stdin=b"a:1\nb:2\nnothing\nc:3\n")
    assert code == 1
    one_error_line(err, "odradek produce: error: INVALID_INPUT: line 3 has no key separator ':'")
    assert [(r.key, r.value) for r in cluster.records(T0)] == [(b"a", b"1"), (b"b", b"2")]


def test_produce_reports_delivery_failures(cli, cluster):
    cluster.create_topic("t", 1)
    cluster.fail("Produce", 10, tp=T0, times=5)  # MESSAGE_TOO_LARGE, not retriable
    code, _, err = cli("produce", "t", "--linger-ms", "0", stdin=b"x\n")
    assert code == 1
    line = one_error_line(err, "odradek produce: error: MESSAGE_TOO_LARGE: ")
    assert line.endswith("(1 of 1 records not delivered)")


def test_produce_and_consume_a_partition_that_does_not_exist(cli, cluster):
    cluster.create_topic("t", 2)
    for argv in (["produce", "t", "--partition", "2"], ["consume", "t", "--partition", "5"]):
        code, _, err = cli(*argv)
        assert code == 1
        assert "has no partition" in one_error_line(err, f"odradek {argv[0]}: error: UNKNOWN_TOPIC")


# --- topics -------------------------------------------------------------------------------------


def test_topics_lifecycle(cli, cluster):
    code, out, err = cli(
        "topics",
        "create",
        "events",
        "--partitions",
        "3",
        "--replication-factor",
        "2",
        "--config",
        "cleanup.policy=compact",
    )
    assert (code, out, err) == (0, "Created topic events.\n", "")
    assert len(cluster.topics["events"]) == 3
    cluster.create_topic("audit", 1)
    assert cli("topics", "list")[1] == "audit\nevents\n"

    code, out, _ = cli("topics", "describe", "events")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == (
        f"Topic: events\tTopicId: {cluster.topic_ids['events']}\tPartitionCount: 3\t"
        "ReplicationFactor: 2\tConfigs: cleanup.policy=compact"
    )
    assert (
        lines[1]
        == "\tTopic: events\tPartition: 0\tLeader: 1\tLeaderEpoch: 0\tReplicas: 1,2\tIsr: 1,2"
    )
    assert len(lines) == 4

    code, out, _ = cli(
        "topics",
        "alter",
        "events",
        "--config",
        "retention.ms=5",
        "--delete-config",
        "cleanup.policy",
    )
    assert (code, out) == (0, "Altered the configs of topic events.\n")
    assert cluster.configs["events"] == {"retention.ms": "5"}

    code, out, _ = cli("topics", "describe")
    assert [line for line in out.splitlines() if line.startswith("Topic:")] == [
        f"Topic: audit\tTopicId: {cluster.topic_ids['audit']}\tPartitionCount: 1\t"
        "ReplicationFactor: 1\tConfigs: ",
        f"Topic: events\tTopicId: {cluster.topic_ids['events']}\tPartitionCount: 3\t"
        "ReplicationFactor: 2\tConfigs: retention.ms=5",
    ]
    assert cli("topics", "delete", "events") == (0, "Deleted topic events.\n", "")
    assert "events" not in cluster.topics


def test_create_with_a_replica_assignment(cli, cluster):
    assert cli("topics", "create", "placed", "--replica-assignment", "3:1,1:2")[0] == 0
    assert [p.replicas for p in cluster.topics["placed"]] == [[3, 1], [1, 2]]


def test_bootstrap_server_after_the_command_and_from_the_environment(capsys, monkeypatch, cluster):
    cluster.create_topic("t", 1)
    code, out, _ = run(
        capsys, monkeypatch, ["topics", "list", "--bootstrap-server", cluster.bootstrap]
    )
    assert (code, out) == (0, "t\n")
    monkeypatch.setenv("ODRADEK_BOOTSTRAP_SERVERS", f"127.0.0.1:1,{cluster.bootstrap}")
    code, out, _ = run(capsys, monkeypatch, ["topics", "list"])
    assert (code, out) == (0, "t\n")


# --- produce and consume ------------------------------------------------------------------------


def test_produce_lines_with_keys_to_kafkas_partitions(cli, cluster):
    cluster.create_topic("t", 3)
    lines = b"".join(b"user-%d|event %d\n" % (i, i) for i in range(30))
    code, out, err = cli("produce", "t", "--key-separator", "|", "--acks", "1", stdin=lines)
    assert (code, out, err) == (0, "", "")
    stored = {
        r.key: (p, r.value) for p in range(3) for r in cluster.records(TopicPartition("t", p))
    }
    assert len(stored) == 30
    for key, (partition, value) in stored.items():
        assert key is not None and partition == partition_for_key(key, 3)
        assert value == b"event " + key.split(b"-")[1]
    assert {req.acks for _, req in cluster.calls_of("Produce")} == {1}


def test_produce_without_keys_keeps_line_order_in_one_partition(cli, cluster):
    cluster.create_topic("t", 2)
    code, _, _ = cli(
        "produce", "t", "--partition", "1", "--compression", "gzip", stdin=b"a\r\nb\n\nc"
    )
    assert code == 0
    assert [(r.key, r.value) for r in cluster.records(TopicPartition("t", 1))] == [
        (None, b"a"),
        (None, b"b"),
        (None, b""),
        (None, b"c"),
    ]


def append(cluster, tp, *values, ts=1000, key=b"k"):
    cluster.append(
        tp, build_batch([Record(key, v, timestamp=ts + i) for i, v in enumerate(values)])
    )


def test_consume_from_the_beginning_up_to_the_end(cli, cluster):
    cluster.create_topic("t", 2)
    append(cluster, T0, b"a", b"b")
    append(cluster, TopicPartition("t", 1), b"\xff")
    code, out, err = cli("consume", "t", "--print-key", "--print-offset", "--print-partition")
    assert code == 0
    assert sorted(out.splitlines()) == [
        "Partition:0\tOffset:0\tk\ta",
        "Partition:0\tOffset:1\tk\tb",
        "Partition:1\tOffset:0\tk\t\\xff",
    ]
    assert err == "Processed a total of 3 messages\n"


def test_consume_from_an_offset_a_timestamp_or_the_end(cli, cluster):
    cluster.create_topic("t", 1)
    append(cluster, T0, b"a", b"b", b"c", ts=1000)
    assert cli("consume", "t", "--partition", "0", "--offset", "1")[1] == "b\nc\n"
    assert (
        cli("consume", "t", "--timestamp", "1002", "--print-timestamp")[1] == "CreateTime:1002\tc\n"
    )
    assert cli("consume", "t", "--timestamp", "99999")[1] == ""
    assert cli("consume", "t", "--offset", "latest")[1] == ""
    assert cli("consume", "t", "--max-messages", "2")[1] == "a\nb\n"
    assert cli("consume", "t", "--from-beginning", "--max-messages", "1")[1] == "a\n"


def test_consume_follow_waits_for_new_records(cli, cluster):
    cluster.create_topic("t", 1)
    append(cluster, T0, b"old")
    timer = threading.Timer(0.3, append, (cluster, T0, b"new"))
    timer.start()
    try:
        code, out, _ = cli("consume", "t", "--follow", "--max-messages", "2")
    finally:
        timer.join()
    assert (code, out) == (0, "old\nnew\n")


def test_consume_follow_stops_after_the_poll_in_progress_on_ctrl_c(cli, cluster, monkeypatch):
    from odradek.consumer import Consumer

    cluster.create_topic("t", 1)
    append(cluster, T0, b"only")
    real_poll = Consumer.poll
    polls = []

    def poll_and_press_ctrl_c(self, timeout_ms=0):
        polls.append(timeout_ms)
        if len(polls) == 2:
            os.kill(os.getpid(), signal.SIGINT)  # handled: the loop ends after this poll
        return real_poll(self, timeout_ms=2000 if len(polls) == 1 else 10)

    monkeypatch.setattr(Consumer, "poll", poll_and_press_ctrl_c)
    # whatever handler was there before (Python's, or one a library such as PySpark installed
    # earlier in this process) is put back afterwards
    before = signal.getsignal(signal.SIGINT)
    code, out, err = cli("consume", "t", "--follow")
    assert (code, out, err) == (130, "only\n", "Processed a total of 1 messages\n")
    assert len(polls) == 2
    assert signal.getsignal(signal.SIGINT) is before  # restored


def test_consume_ends_with_130_when_interrupted_outright(cli, cluster, monkeypatch):
    from odradek.consumer import Consumer

    cluster.create_topic("t", 1)
    append(cluster, T0, b"never printed")

    def interrupted(self, timeout_ms=0):
        raise KeyboardInterrupt

    monkeypatch.setattr(Consumer, "poll", interrupted)
    code, out, err = cli("consume", "t")
    assert (code, out, err) == (130, "", "Processed a total of 0 messages\n")


# --- cluster describe ---------------------------------------------------------------------------


def test_cluster_describe_marks_unhealthy_partitions(cli, cluster):
    cluster.create_topic("t", 3, 2)
    cluster.partition(TopicPartition("t", 1)).isr = [2]
    cluster.partition(TopicPartition("t", 2)).leader = -1
    code, out, err = cli("cluster", "describe")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[:3] == ["Cluster id: fake-cluster-id", "Controller: 1", "Brokers (3):"]
    assert lines[3].split() == ["ID", "ADDRESS", "RACK", "ROLE"]
    assert lines[4].split() == ["1", cluster.address(1), "-", "controller"]
    assert lines[7] == "Partitions (3):"
    assert [line.split() for line in lines[8:12]] == [
        ["TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "STATUS"],
        ["t", "0", "1", "0", "1,2", "1,2", "ok"],
        ["t", "1", "2", "0", "2,3", "2", "under-replicated"],
        ["t", "2", "none", "0", "3,1", "3,1", "offline"],
    ]
    assert lines[12] == "3 brokers, 1 topic, 3 partitions: 1 under-replicated, 1 offline"


# --- real processes -----------------------------------------------------------------------------


def _odradek(*argv: str, **kwargs) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(WORKTREE))
    env.pop("GRPC_VERBOSITY", None)
    return subprocess.Popen(
        [sys.executable, "-m", "odradek", *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def test_a_failing_command_prints_one_line_and_no_traceback():
    proc = _odradek("--bootstrap-server", "127.0.0.1:1", "cluster", "describe")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and out == ""
    lines = [line for line in err.splitlines() if not line.startswith(("I0", "I1", "W0", "E0"))]
    assert len(lines) == 1 and lines[0].startswith(
        "odradek cluster describe: error: NETWORK_EXCEPTION"
    )


def test_ctrl_c_ends_consume_follow_cleanly(cluster):
    cluster.create_topic("t", 1)
    append(cluster, T0, b"first")
    proc = _odradek("--bootstrap-server", cluster.bootstrap, "consume", "t", "--follow")
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "first\n"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert out == ""
    assert "Traceback" not in err and "Processed a total of 1 messages" in err


def test_produce_reads_lines_in_chunks_without_waiting_for_more():
    # A line written into a pipe is handed on at once (a producer behind `tail -f` must not
    # wait for a full chunk); a fast pipe's lines come in large chunks (the bulk path).
    import os

    from odradek.cli.produce import _chunks

    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "rb") as reader, os.fdopen(write_fd, "wb", buffering=0) as writer:
        chunks = _chunks(reader, 1 << 20)
        writer.write(b"first\r\n")
        assert next(chunks) == [b"first"]
        writer.write(b"a\nb\nc")
        assert next(chunks) == [b"a", b"b"]
        writer.write(b"d\n")
        assert next(chunks) == [b"cd"]
        writer.write(b"last without newline")
        writer.close()
        assert list(chunks) == [[b"last without newline"]]
