"""A local odradek cluster on loopback: a real ZooKeeper and node processes.

``LocalCluster`` is what the integration tests, the benchmarks and the README's first command
use. Each node is a separate ``python -m node.main start`` process with its own log directory
and a fixed port (kept across restarts), so tests can SIGKILL, stop and restart nodes as an
operator would.

Command line (the README's first command runs ``demo``)::

    python -m deploy.local.cluster demo [--dir DIR] [--ports P,P,P] [--zookeeper-port P] [--tls]
        start ZooKeeper and three nodes (ports 2181 and 9092-9094 unless given), create a
        topic, produce (only into a topic never written to: a demo started again on the same
        data does not append its records again), consume, describe; leave it running. A failed
        start leaves nothing running. [--stop-command TEXT] is how its messages name the way
        to stop it (scripts/cluster.sh gives 'bash scripts/cluster.sh stop'). With --tls the
        nodes serve mutual TLS, between them too, on certificates
        scripts/dev-certs.sh makes in DIR/certs (docs/security.md); the commands it prints
        take --command-config DIR/certs/admin.properties.
    python -m deploy.local.cluster stop [--dir DIR]
        stop the cluster started in DIR
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deploy.local.zookeeper import ZooKeeperServer, ZooKeeperTls, free_port
from odradek.errors import OdradekError

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DIR = ROOT / ".cluster"


class NodeProcess:
    """One node as a child process. Not thread-safe."""

    def __init__(
        self,
        node_id: int,
        directory: Path,
        zookeeper_connect: str,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        kafka_port: int | None = None,
        overrides: dict[str, str] | None = None,
        python: str = sys.executable,
    ) -> None:
        """``kafka_port``: also serve Kafka's wire protocol there (0: any free port)."""
        self.node_id = node_id
        self.directory = directory
        self.zookeeper_connect = zookeeper_connect
        self.host = host
        self.port = port if port is not None else free_port(host)
        self.kafka_port = (
            None if kafka_port is None else kafka_port if kafka_port else free_port(host)
        )
        self.overrides = dict(overrides or {})
        self.python = python
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def kafka_address(self) -> str:
        """Where Kafka clients reach this node (``kafka_port`` must have been given)."""
        if self.kafka_port is None:
            raise ValueError(f"node {self.node_id} serves no Kafka listener")
        return f"{self.host}:{self.kafka_port}"

    @property
    def log_path(self) -> Path:
        return self.directory / "node.log"

    def command(self) -> list[str]:
        cmd = [
            self.python,
            "-m",
            "node.main",
            "start",
            "--node-id",
            str(self.node_id),
            "--listen",
            self.address,
            "--log-dirs",
            str(self.directory / "data"),
            "--zookeeper",
            self.zookeeper_connect,
        ]
        if self.kafka_port is not None:
            cmd += ["--kafka-listen", self.kafka_address]
        for key, value in sorted(self.overrides.items()):
            cmd += ["--override", f"{key}={value}"]
        return cmd

    def start(self, timeout_s: float = 60.0) -> None:
        """Starts the node and waits until it prints that it is listening."""
        self.directory.mkdir(parents=True, exist_ok=True)
        out = self.log_path.open("ab")
        start_at = out.tell()  # the log is appended to across restarts: look only past here
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
        self.process = subprocess.Popen(
            self.command(),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
        out.close()
        deadline = time.monotonic() + timeout_s  # noqa: TID251  (a harness, not the broker)
        marker = f"odradek node {self.node_id} listening on".encode()
        while time.monotonic() < deadline:  # noqa: TID251
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"node {self.node_id} exited with {self.process.returncode}:\n" + self.tail()
                )
            with self.log_path.open("rb") as f:
                f.seek(start_at)
                if marker in f.read():
                    return
            time.sleep(0.05)
        raise TimeoutError(f"node {self.node_id} did not start:\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, sig)

    def kill(self) -> None:
        """SIGKILL: no controlled shutdown, no flush, no checkpoint."""
        if self.process is not None:
            self.signal(signal.SIGKILL)
            self.process.wait()

    def stop(self, timeout_s: float = 60.0) -> int | None:
        """SIGTERM (a controlled shutdown) and wait; SIGKILL after ``timeout_s``."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode


class LocalCluster:
    """ZooKeeper plus ``size`` nodes under ``directory``. Not thread-safe."""

    def __init__(
        self,
        directory: Path,
        size: int = 3,
        *,
        zookeeper: ZooKeeperServer | None = None,
        chroot: str = "/odradek",
        overrides: dict[str, str] | None = None,
        ports: Sequence[int] | None = None,
        zookeeper_port: int | None = None,
        zookeeper_tls: ZooKeeperTls | None = None,
        kafka_ports: Sequence[int] | None = None,
    ) -> None:
        """``kafka_ports``: each node also serves Kafka's wire protocol on its port there (0:
        any free port). ``zookeeper_tls``: the ZooKeeper (the cluster's own, or
        ``zookeeper``'s, which must have been made with it) serves TLS and the nodes connect to
        its TLS port; their ``zookeeper.ssl.*`` settings come with ``overrides``."""
        self.directory = Path(directory)
        self._own_zookeeper = zookeeper is None
        self.zookeeper = zookeeper or ZooKeeperServer(
            self.directory / "zookeeper", port=zookeeper_port, tls=zookeeper_tls
        )
        self.zookeeper_over_tls = zookeeper_tls is not None
        self.chroot = chroot
        defaults = {
            "zookeeper.session.timeout.ms": "6000",
            "replica.lag.time.max.ms": "10000",
        }
        defaults.update(overrides or {})
        self.nodes = [
            NodeProcess(
                node_id,
                self.directory / f"node-{node_id}",
                self._zookeeper_connect(),
                port=None if ports is None else ports[node_id],
                kafka_port=None if kafka_ports is None else kafka_ports[node_id],
                overrides=defaults,
            )
            for node_id in range(size)
        ]
        for node in self.nodes:
            node.zookeeper_connect = self._zookeeper_connect()

    def _zookeeper_connect(self) -> str:
        if self.zookeeper_over_tls:
            return self.zookeeper.secure_connect_string + self.chroot
        return self.zookeeper.connect_string + self.chroot

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.address for n in self.nodes)

    @property
    def kafka_bootstrap_servers(self) -> str:
        """The nodes' Kafka listeners, for Kafka clients (``kafka_ports`` must have been given)."""
        return ",".join(n.kafka_address for n in self.nodes)

    def node(self, node_id: int) -> NodeProcess:
        return self.nodes[node_id]

    def start(self) -> None:
        """Starts ZooKeeper (if the cluster owns it) and every node. If any of them fails to
        start, what did start is stopped again before the error propagates: a failed start
        leaves no process behind."""
        try:
            if self._own_zookeeper:
                self.zookeeper.start()
            for node in self.nodes:
                node.zookeeper_connect = self._zookeeper_connect()
                node.start()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        if self._own_zookeeper:
            self.zookeeper.stop()

    def kill_all(self) -> None:
        for node in self.nodes:
            node.kill()
        if self._own_zookeeper:
            self.zookeeper.stop()

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- the README's demo ----------------------------------------------------------------------
STATE_FILE = "cluster.json"
DEMO_PORTS = (9092, 9093, 9094)
DEMO_KAFKA_PORTS = (19092, 19093, 19094)
"""Where the demo's nodes serve Kafka's wire protocol (Redpanda's quickstart uses 19092 for its
external Kafka port too); 9092-9094 stay odradek's gRPC ports, as before."""
DEMO_ZK_PORT = 2181
DEMO_CONSOLE_PORT = 8080


def tls_overrides(directory: Path, *, zookeeper: bool = False) -> dict[str, str]:
    """Makes development certificates in ``directory/certs`` (once) and returns the node
    settings that turn the nodes' one listener into mutual TLS; with ``zookeeper``, also TLS
    to ZooKeeper with the shared ZooKeeper client certificate and ``zookeeper.set.acl``."""
    certs = directory / "certs"
    if not (certs / "zk-client.pem").exists():
        subprocess.run(
            ["bash", str(ROOT / "scripts" / "dev-certs.sh"), str(certs), "3"],
            check=True,
            capture_output=True,
        )
    return {
        # the one listener of listen.address is named PLAINTEXT: map it to SSL
        "listener.security.protocol.map": "PLAINTEXT:SSL",
        "ssl.keystore.location": str(certs / "node-1.pem"),
        "ssl.truststore.location": str(certs / "ca.crt"),
        "ssl.client.auth": "required",
        **(zookeeper_tls_overrides(certs) if zookeeper else {}),
    }


def zookeeper_tls_overrides(certs: Path) -> dict[str, str]:
    """The node settings for TLS to ZooKeeper and secure znode ACLs, with the certificates of
    scripts/dev-certs.sh in ``certs``."""
    return {
        "zookeeper.ssl.client.enable": "true",
        "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
        "zookeeper.ssl.keystore.location": str(certs / "zk-client.pem"),
        "zookeeper.ssl.truststore.location": str(certs / "ca.crt"),
        "zookeeper.set.acl": "true",
    }


def zookeeper_tls(certs: Path, port: int | None = None) -> ZooKeeperTls:
    """ZooKeeper's TLS port on the certificates of scripts/dev-certs.sh in ``certs``."""
    return ZooKeeperTls(certs / "zookeeper.pem", certs / "ca.crt", port)


def _run_cli(
    args: list[str], bootstrap: str, stdin: str | None = None, command_config: Path | None = None
) -> str:
    config = ["--command-config", str(command_config)] if command_config else []
    cmd = [sys.executable, "-m", "odradek", "--bootstrap-server", bootstrap, *config, *args]
    print("$ odradek " + " ".join(args), flush=True)
    result = subprocess.run(cmd, input=stdin, capture_output=True, text=True, cwd=ROOT, check=False)
    sys.stdout.write(result.stdout)
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        raise SystemExit(f"demo: `odradek {' '.join(args)}` failed ({result.returncode})")
    return result.stdout


def _wait_until_every_node_knows_the_cluster(
    cluster: LocalCluster, command_config: Path | None, timeout_s: float = 60.0
) -> None:
    """Until each node's metadata names every node and a controller. A node says it listens
    before the controller's first UpdateMetadata reaches it, and until then it answers, as a
    ZooKeeper-mode Kafka broker does, with no controller and no topics: a demo started again on
    its data listed no topic and then failed to find the one it had just been told exists."""
    from odradek import Admin
    from odradek.client.security import from_kafka_properties, parse_properties

    security: dict[str, Any] = (
        from_kafka_properties(parse_properties(command_config.read_text()))
        if command_config is not None
        else {}
    )
    expected = {node.node_id for node in cluster.nodes}
    deadline = time.monotonic() + timeout_s  # noqa: TID251  (a harness, not the broker)
    for node in cluster.nodes:
        with Admin(bootstrap_servers=node.address, **security) as admin:
            while True:
                try:
                    described = admin.describe_cluster()
                    if {
                        b.node_id for b in described.brokers
                    } == expected and described.controller_id in expected:
                        break
                except OdradekError:
                    pass  # not serving yet: asked again below
                if time.monotonic() > deadline:  # noqa: TID251
                    raise TimeoutError(
                        f"node {node.node_id} did not learn the cluster in {timeout_s:.0f} s"
                    )
                time.sleep(0.2)


def demo(
    directory: Path,
    ports: Sequence[int] = DEMO_PORTS,
    zookeeper_port: int = DEMO_ZK_PORT,
    stop_command: str | None = None,
    *,
    tls: bool = False,
    kafka_ports: Sequence[int] | None = DEMO_KAFKA_PORTS,
    console_port: int = DEMO_CONSOLE_PORT,
) -> int:
    """The README's demo; ``stop_command`` is how its messages name the way to stop it (by
    default this module's ``stop --dir DIRECTORY``; scripts/cluster.sh names itself).
    ``kafka_ports``: the nodes also serve Kafka's wire protocol there (not with ``tls``), and
    the demo shows kcat and confluent-kafka using it."""
    stop_command = stop_command or f"python -m deploy.local.cluster stop --dir {directory}"
    state = directory / STATE_FILE
    if state.exists():
        info = json.loads(state.read_text())
        alive = _running(info)
        if alive:
            print(f"a cluster is already running from {directory} (pids {alive});")
            names = ["ZooKeeper", *(f"node {i}" for i in range(len(info["pids"]) - 1))]
            down = [name for pid, name in zip(info["pids"], names, strict=True) if pid not in alive]
            if down:
                print(
                    f"{' and '.join(down)} {'is' if len(down) == 1 else 'are'} not running: "
                    "stop the cluster and start it again to bring back every process"
                )
            print(f"stop it with: {stop_command}")
            return 1
    directory.mkdir(parents=True, exist_ok=True)
    overrides = tls_overrides(directory, zookeeper=True) if tls else None
    command_config = directory / "certs" / "admin.properties" if tls else None
    kafka_ports = None if tls else kafka_ports
    cluster = LocalCluster(
        directory,
        3,
        ports=ports,
        zookeeper_port=zookeeper_port,
        overrides=overrides,
        zookeeper_tls=zookeeper_tls(directory / "certs") if tls else None,
        kafka_ports=kafka_ports,
    )
    secure = (
        f" (TLS on {cluster.zookeeper.secure_connect_string}, znodes with secure ACLs)"
        if tls
        else ""
    )
    kafka = f", Kafka's protocol on {cluster.kafka_bootstrap_servers}" if kafka_ports else ""
    print(
        f"starting ZooKeeper on 127.0.0.1:{zookeeper_port}{secure} and 3 nodes on "
        f"{cluster.bootstrap_servers} (gRPC){kafka}"
    )
    try:
        cluster.start()
    except (OSError, RuntimeError, TimeoutError) as e:
        # LocalCluster.start has already stopped whatever did start
        message = str(e).splitlines() or [type(e).__name__]
        # a node's own one-line error, if its log has one, says why better than its exit code
        reason = next((line for line in reversed(message) if ": error: " in line), None)
        summary = message[0].rstrip(":") + (f" ({reason})" if reason else "")
        print(f"demo: the cluster did not start: {summary}", file=sys.stderr)
        print(f"demo: logs are under {directory}", file=sys.stderr)
        return 1
    started = [cluster.zookeeper.pid] + [n.process.pid for n in cluster.nodes if n.process]
    pids = [pid for pid in started if pid is not None]  # all of them, once start returned
    # each pid with its command line: after a reboot the pid may belong to another process
    cmdlines = [_cmdline(pid) for pid in pids]
    state.write_text(
        json.dumps({"pids": pids, "cmdlines": cmdlines, "bootstrap": cluster.bootstrap_servers})
    )
    bootstrap = cluster.bootstrap_servers

    try:
        _wait_until_every_node_knows_the_cluster(cluster, command_config)
    except TimeoutError as e:
        print(f"demo: {e}", file=sys.stderr)
        print(f"demo: logs are under {directory}; stop it with: {stop_command}", file=sys.stderr)
        return 1

    cli = functools.partial(_run_cli, command_config=command_config)
    topics = cli(["topics", "list"], bootstrap)
    if "demo" not in topics.split():
        cli(
            [
                "topics",
                "create",
                "demo",
                "--partitions",
                "3",
                "--replication-factor",
                "3",
                "--config",
                "min.insync.replicas=2",
                # a node just started may list no topics yet while ZooKeeper has it (a demo
                # started again on its data), and a create retried on the next node after the
                # first dropped its connection finds its own topic: either way it is there
                "--if-not-exists",
            ],
            bootstrap,
        )
    # the records once: a demo started again on the same data shows the ones it has
    offsets = cli(["get-offsets", "--topic", "demo", "--time", "latest"], bootstrap)
    written = sum(int(line.rsplit(":", 1)[1]) for line in offsets.split() if line.count(":") == 2)
    if written:
        print(f"the topic demo already has its records ({written}): not producing them again")
    else:
        lines = "".join(f"user{i}:hello {i}\n" for i in range(6))
        cli(["produce", "demo", "--key-separator", ":", "--acks", "-1"], bootstrap, lines)
    cli(
        [
            "consume",
            "demo",
            "--from-beginning",
            "--print-key",
            "--print-offset",
            "--max-messages",
            "6",
        ],
        bootstrap,
    )
    cli(["cluster", "describe"], bootstrap)
    if kafka_ports:
        _kafka_clients(cluster.kafka_bootstrap_servers, produce=not written)
    console_url = start_console(directory, bootstrap, console_port, command_config, state)
    print()
    print(f"the cluster is running (data in {directory}).")
    config = f" --command-config {command_config}" if command_config else ""
    print(f"  use it:   .venv/bin/odradek --bootstrap-server {bootstrap}{config} topics list")
    if kafka_ports:
        print(f"  or any Kafka client: kcat -b {cluster.kafka_bootstrap_servers} -L")
    if console_url:
        print(f"  console:  {console_url}")
    print(f"  stop it:  {stop_command}")
    print("  starting it again keeps the data.")
    return 0


_CONFLUENT_KAFKA = """
import sys
from confluent_kafka import Consumer, Producer, TopicPartition

bootstrap, produce = sys.argv[1], sys.argv[2] == "yes"
if produce:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    producer.produce("demo", key=b"librdkafka", value=b"hello from confluent-kafka")
    assert producer.flush(30) == 0, "not delivered"
    print("confluent-kafka produced 1 record to demo (idempotent, acks=all)")
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "demo-reader"})
consumer.assign([TopicPartition("demo", p, 0) for p in range(3)])
low_high = [consumer.get_watermark_offsets(TopicPartition("demo", p), timeout=30) for p in range(3)]
wanted = sum(high - low for low, high in low_high)
read = []
while len(read) < wanted:
    msg = consumer.poll(10)
    if msg is None:
        sys.exit(f"confluent-kafka read {len(read)} of {wanted} records")
    if msg.error() is None:
        read.append(msg)
consumer.close()
print(f"confluent-kafka read all {wanted} records of demo:")
for msg in sorted(read, key=lambda m: (m.partition(), m.offset())):
    print(f"  {msg.partition()}:{msg.offset()} {msg.key()!r} {msg.value()!r}")
"""


def _kafka_clients(kafka_bootstrap: str, *, produce: bool) -> None:
    """kcat and confluent-kafka on the Kafka listeners: the cluster as a Kafka client sees it,
    one record produced by librdkafka (the first time), and every record read back."""
    first = kafka_bootstrap.split(",")[0]
    for args in (
        ["-L", "-t", "demo"],
        ["-C", "-t", "demo", "-o", "beginning", "-e", "-q", "-f", "%p:%o %k %s\n"],
    ):
        print(f"$ kcat -b {first} {shlex.join(args)}", flush=True)
        result = subprocess.run(
            ["kcat", "-b", first, *args], capture_output=True, text=True, check=False
        )
        sys.stdout.write(result.stdout)
        if result.returncode != 0:
            sys.stderr.write(result.stderr)
            raise SystemExit(f"demo: kcat {' '.join(args)} failed ({result.returncode})")
    result = subprocess.run(
        [sys.executable, "-c", _CONFLUENT_KAFKA, kafka_bootstrap, "yes" if produce else "no"],
        capture_output=True,
        text=True,
        check=False,
    )
    sys.stdout.write(result.stdout)
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        raise SystemExit("demo: confluent-kafka could not use the Kafka listeners")


def start_console(
    directory: Path,
    bootstrap: str,
    port: int,
    command_config: Path | None,
    state: Path,
    timeout_s: float = 60.0,
) -> str | None:
    """Starts ``odradek console`` on 127.0.0.1:``port`` (0: any free port) in the background,
    its output in ``console.log``, records its pid in the demo's ``state`` file (``stop``
    stops it) and returns its URL; or says in one line why it did not start and returns None
    (the cluster runs on without it)."""
    log = directory / "console.log"
    command = [sys.executable, "-m", "odradek", "--bootstrap-server", bootstrap, "console"]
    command += ["--listen", f"127.0.0.1:{port}"]
    if command_config is not None:
        command += ["--command-config", str(command_config)]
    with log.open("w") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT
        )
    deadline = time.monotonic() + timeout_s  # noqa: TID251
    while time.monotonic() < deadline:  # noqa: TID251
        text = log.read_text()
        if "odradek console: http://" in text:
            url = text.split("odradek console: ", 1)[1].split()[0]
            info = json.loads(state.read_text())
            info["console"] = {"pid": process.pid, "cmdline": _cmdline(process.pid)}
            state.write_text(json.dumps(info))
            return url
        if process.poll() is not None:
            lines = text.strip().splitlines() or [f"exit code {process.returncode}"]
            print(f"demo: the console did not start: {lines[-1]}", file=sys.stderr)
            return None
        time.sleep(0.1)
    process.kill()
    process.wait()
    print(f"demo: the console did not start within {timeout_s:.0f} s (see {log})", file=sys.stderr)
    return None


def _stop_console(info: dict[str, Any]) -> None:
    console = info.get("console")
    if not console or not console.get("cmdline") or _cmdline(console["pid"]) != console["cmdline"]:
        return
    _signal(console["pid"], signal.SIGTERM)
    deadline = time.monotonic() + 10  # noqa: TID251
    while time.monotonic() < deadline and _cmdline(console["pid"]) == console["cmdline"]:  # noqa: TID251
        time.sleep(0.1)
    if _cmdline(console["pid"]) == console["cmdline"]:
        _signal(console["pid"], signal.SIGKILL)


def _cmdline(pid: int) -> str | None:
    """The command line of process ``pid`` as /proc has it (arguments NUL-separated), or None
    when no process has that pid (or it has exited and has no command line left)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.decode(errors="replace") or None


def _running(info: dict[str, Any]) -> list[int]:
    """The pids of a state file that still run the process the demo started: the same pid
    with the same command line. A pid reused by another process (the machine rebooted, the
    cluster died long ago) is not ours, and is neither reported as running nor signalled."""
    pids: list[int] = info["pids"]
    cmdlines: list[str | None] = info.get("cmdlines", [])
    if len(cmdlines) != len(pids):  # a state file written before the command lines were kept
        return [pid for pid in pids if _cmdline(pid) is not None]
    return [pid for pid, cmd in zip(pids, cmdlines, strict=True) if cmd and _cmdline(pid) == cmd]


def stop(directory: Path) -> int:
    state = directory / STATE_FILE
    if not state.exists():
        print(f"no cluster state in {directory}")
        return 1
    info = json.loads(state.read_text())
    _stop_console(info)
    zk_pid = info["pids"][0]
    ours = _running(info)
    if not ours:
        state.unlink()
        print(f"the cluster in {directory} was not running (its state file is removed)")
        return 0
    node_pids = [pid for pid in ours if pid != zk_pid]
    for pid in node_pids:  # nodes first: a controlled shutdown needs ZooKeeper
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60  # noqa: TID251
    while time.monotonic() < deadline and set(node_pids) & set(_running(info)):  # noqa: TID251
        time.sleep(0.1)
    for pid in _running(info):
        _signal(pid, signal.SIGKILL if pid != zk_pid else signal.SIGTERM)
    # ZooKeeper takes a moment to exit: wait for it, so that a start right after this returns
    # finds its port free
    deadline = time.monotonic() + 10  # noqa: TID251
    while time.monotonic() < deadline and _running(info):  # noqa: TID251
        time.sleep(0.1)
    for pid in _running(info):
        _signal(pid, signal.SIGKILL)
    state.unlink()
    print("stopped")
    return 0


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # it exited meanwhile
        os.kill(pid, sig)


def _three_ports(text: str) -> tuple[int, ...]:
    try:
        ports = tuple(int(p) for p in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of port numbers: {text!r}") from None
    if len(ports) != 3 or not all(0 < p < 65536 for p in ports):
        raise argparse.ArgumentTypeError(f"need three ports between 1 and 65535, got {text!r}")
    return ports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.local.cluster")
    parser.add_argument("command", choices=["demo", "stop"])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument(
        "--ports",
        type=_three_ports,
        default=DEMO_PORTS,
        help="demo: the nodes' ports, three comma-separated (default 9092,9093,9094)",
    )
    parser.add_argument(
        "--kafka-ports",
        type=_three_ports,
        default=DEMO_KAFKA_PORTS,
        help="demo: where the nodes serve Kafka's wire protocol, three comma-separated "
        "(default 19092,19093,19094)",
    )
    parser.add_argument(
        "--zookeeper-port", type=int, default=DEMO_ZK_PORT, help="demo: ZooKeeper's port"
    )
    parser.add_argument(
        "--stop-command",
        help="demo: the command its messages give for stopping the cluster "
        "(default: python -m deploy.local.cluster stop --dir DIR)",
    )
    parser.add_argument(
        "--tls",
        action="store_true",
        help="demo: mutual TLS on development certificates (scripts/dev-certs.sh)",
    )
    parser.add_argument(
        "--console-port",
        type=int,
        default=DEMO_CONSOLE_PORT,
        help="demo: the web console's port on 127.0.0.1 (default 8080; 0: any free port)",
    )
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo(
            args.dir.resolve(),
            args.ports,
            args.zookeeper_port,
            args.stop_command,
            tls=args.tls,
            kafka_ports=args.kafka_ports,
            console_port=args.console_port,
        )
    return stop(args.dir.resolve())


if __name__ == "__main__":
    sys.exit(main())
