"""The README's first command: ``python -m deploy.local.cluster demo`` and ``stop``.

Run as a user runs them (``scripts/cluster.sh`` adds only the installation), on free ports so
that a cluster a developer has running on the default ports does not interfere.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from deploy.local.cluster import ROOT
from deploy.local.zookeeper import free_port
from odradek import Consumer, TopicPartition


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deploy.local.cluster", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=240,
        check=False,
    )


def _demo(
    directory: Path, ports: list[int], zookeeper_port: int, kafka_ports: list[int] | None = None
) -> tuple[str, ...]:
    """The arguments of a demo in ``directory`` on the given ports (Kafka's: free ones)."""
    kafka_ports = kafka_ports or [free_port() for _ in range(3)]
    return (
        "demo",
        "--dir",
        str(directory),
        "--ports",
        ",".join(map(str, ports)),
        "--kafka-ports",
        ",".join(map(str, kafka_ports)),
        "--zookeeper-port",
        str(zookeeper_port),
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a child that has exited but was not reaped still answers kill(0): look at its state
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _wait_dead(pids: list[int], timeout_s: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout_s  # noqa: TID251  (a harness, not the broker)
    while time.monotonic() < deadline:  # noqa: TID251
        alive = [p for p in pids if _alive(p)]
        if not alive:
            return []
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def test_demo_starts_a_working_cluster_that_stop_stops_and_a_restart_keeps_the_data(tmp_path):
    directory = tmp_path / "cluster"
    ports = [free_port() for _ in range(3)]
    kafka_ports = [free_port() for _ in range(3)]
    demo = _demo(directory, ports, free_port(), kafka_ports)
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
    pids: list[int] = []
    # a state file left by a cluster that died long ago, whose pid another process now has
    # (as after a reboot): the demo must neither refuse to start nor touch that process
    stranger = subprocess.Popen(["sleep", "300"])
    directory.mkdir()
    _write_stale_state(directory, stranger.pid)
    try:
        first = _run(*demo)
        assert first.returncode == 0, first.stdout + first.stderr
        assert "already running" not in first.stdout
        state = json.loads((directory / "cluster.json").read_text())
        pids = state["pids"]
        assert len(pids) == 4  # ZooKeeper and three nodes
        assert _cluster_processes(directory) == set(pids)
        assert state["bootstrap"] == bootstrap
        # the six keyed records came back, and every partition of the topic is in sync
        out = first.stdout.splitlines()
        consumed = sorted(line.split("\t", 1)[1] for line in out if line.startswith("Offset:"))
        assert consumed == [f"user{i}\thello {i}" for i in range(6)]
        assert "3 brokers, 1 topic, 3 partitions: 0 under-replicated, 0 offline" in first.stdout
        # Kafka clients use the same cluster: kcat sees the brokers on their Kafka ports and
        # reads the six records; confluent-kafka adds one and reads all seven
        for i, port in enumerate(kafka_ports):
            assert f"broker {i} at 127.0.0.1:{port}" in first.stdout
        kcat_lines = [line for line in out if line[:1].isdigit() and " user" in line]
        assert sorted(line.split(" ", 1)[1] for line in kcat_lines) == [
            f"user{i} hello {i}" for i in range(6)
        ]
        assert "confluent-kafka produced 1 record to demo" in first.stdout
        assert "confluent-kafka read all 7 records of demo:" in first.stdout
        # it says how to stop it, the way it was started (here: this module, this directory)
        assert (
            f"  stop it:  python -m deploy.local.cluster stop --dir {directory}\n" in first.stdout
        )

        # a second demo while the first runs refuses, and leaves it running
        again = _run(*demo)
        assert again.returncode == 1
        assert "already running" in again.stdout
        assert all(_alive(p) for p in pids)
        # with a node gone, it says which, and how to bring it back
        os.kill(pids[3], signal.SIGKILL)
        assert _wait_dead([pids[3]]) == []
        again = _run(*demo)
        assert again.returncode == 1
        assert "node 2 is not running: stop the cluster and start it again" in again.stdout
        assert all(_alive(p) for p in pids[:3])

        stopped = _run("stop", "--dir", str(directory))
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        # stop returns once every process has exited, ZooKeeper included: its port is free
        assert [p for p in pids if _alive(p)] == []
        assert not (directory / "cluster.json").exists()

        # started again on the same directory (by scripts/cluster.sh's command), the first
        # run's records are still there, and are not appended again
        second = _run(*demo, "--stop-command", "bash scripts/cluster.sh stop")
        assert second.returncode == 0, second.stdout + second.stderr
        pids = json.loads((directory / "cluster.json").read_text())["pids"]
        assert "Created topic" not in second.stdout  # the topic survived the restart
        assert "$ odradek produce" not in second.stdout
        assert "already has its records (7): not producing them again" in second.stdout
        assert "confluent-kafka produced" not in second.stdout
        assert "confluent-kafka read all 7 records of demo:" in second.stdout
        assert "  stop it:  bash scripts/cluster.sh stop\n" in second.stdout
        again = _run(*demo, "--stop-command", "bash scripts/cluster.sh stop")
        assert again.returncode == 1
        assert "stop it with: bash scripts/cluster.sh stop" in again.stdout
        consume = subprocess.run(
            [
                sys.executable,
                "-m",
                "odradek",
                "--bootstrap-server",
                bootstrap,
                "consume",
                "demo",
                "--from-beginning",
                "--print-offset",
                "--max-messages",
                "7",
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
            check=False,
        )
        assert consume.returncode == 0, consume.stderr
        values = sorted(line.split("\t")[-1] for line in consume.stdout.splitlines())
        assert values == sorted([*(f"hello {i}" for i in range(6)), "hello from confluent-kafka"])
        with Consumer(bootstrap) as consumer:
            ends = consumer.end_offsets([TopicPartition("demo", p) for p in range(3)])
        # seven records in all (six from odradek's CLI, one from confluent-kafka): the second
        # demo added none
        assert sum(ends.values()) == 7
    finally:
        if (directory / "cluster.json").exists():
            _run("stop", "--dir", str(directory))
        stranger_survived = stranger.poll() is None
        stranger.kill()
        stranger.wait()
    assert _wait_dead(pids) == []
    assert stranger_survived


def _write_stale_state(directory: Path, pid: int) -> None:
    """A demo's state file naming ``pid`` for all four processes, with the command lines the
    demo's own processes had."""
    java = "java\0-Xmx256m\0org.apache.zookeeper.server.quorum.QuorumPeerMain\0"
    node = f"python\0-m\0node.main\0start\0--log-dirs\0{directory}/node-0/data\0"
    (directory / "cluster.json").write_text(
        json.dumps({"pids": [pid] * 4, "cmdlines": [java] + [node] * 3, "bootstrap": "x:1"})
    )


def test_stop_leaves_alone_a_process_that_reuses_a_recorded_pid(tmp_path):
    stranger = subprocess.Popen(["sleep", "300"])
    try:
        _write_stale_state(tmp_path, stranger.pid)
        r = _run("stop", "--dir", str(tmp_path))
        assert r.returncode == 0, r.stderr
        assert (
            r.stdout == f"the cluster in {tmp_path} was not running (its state file is removed)\n"
        )
        assert not (tmp_path / "cluster.json").exists()
        assert stranger.poll() is None  # not signalled
    finally:
        stranger.kill()
        stranger.wait()


def test_a_demo_that_cannot_start_says_why_in_one_line_and_leaves_nothing_running(tmp_path):
    ports = [free_port() for _ in range(3)]
    zk_port = free_port()
    with socket.socket() as busy:  # node 1's port is taken
        busy.bind(("127.0.0.1", ports[1]))
        busy.listen()
        r = _run(*_demo(tmp_path / "cluster", ports, zk_port))
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    first, second = r.stderr.splitlines()
    assert first.startswith("demo: the cluster did not start: node 1 exited with 1")
    assert f"127.0.0.1:{ports[1]}" in first  # the node's own reason: the address it could not bind
    assert second == f"demo: logs are under {tmp_path / 'cluster'}"
    assert not (tmp_path / "cluster" / "cluster.json").exists()
    # ZooKeeper and node 0 had started; they were stopped again
    assert _cluster_processes(tmp_path) == set()
    for port in (ports[0], zk_port):
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0, f"port {port} still answers"


def _cluster_processes(directory: Path) -> set[int]:
    """Pids of the running processes whose command line names ``directory`` (ZooKeeper's and
    the nodes' name their directories under it)."""
    out = subprocess.run(
        ["pgrep", "-f", str(directory)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return {int(p) for p in out.split()}


def test_a_demo_whose_zookeeper_port_is_taken_does_not_use_what_listens_there(tmp_path):
    # something that answers ZooKeeper's `ruok` on the port (as a ZooKeeper already running
    # there would): the demo must not take it for the one it was starting
    ports = [free_port() for _ in range(3)]
    with socket.socket() as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        other.bind(("127.0.0.1", 0))
        other.listen()
        zk_port = other.getsockname()[1]
        stop = threading.Event()

        def answer() -> None:
            other.settimeout(0.1)
            while not stop.is_set():
                try:
                    conn, _ = other.accept()
                except TimeoutError:
                    continue
                with conn:
                    conn.recv(16)
                    conn.sendall(b"imok")

        responder = threading.Thread(target=answer, daemon=True)
        responder.start()
        try:
            r = _run(*_demo(tmp_path / "cluster", ports, zk_port))
        finally:
            stop.set()
            responder.join()
    assert r.returncode == 1, r.stdout
    assert r.stderr.splitlines()[0] == (
        f"demo: the cluster did not start: cannot start ZooKeeper on 127.0.0.1:{zk_port}: "
        "the port is in use"
    )
    assert "Traceback" not in r.stderr
    assert _cluster_processes(tmp_path) == set()
    assert not (tmp_path / "cluster" / "cluster.json").exists()
