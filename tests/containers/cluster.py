"""ZooKeeper and three odradek nodes as containers (testcontainers), and the faults done to them.

Every container uses host networking: ZooKeeper listens on 127.0.0.10:2181 and node N on
127.0.0.1N:9092 (gRPC) and, on a plaintext cluster, on 127.0.0.1N:19092 (Kafka's wire protocol,
the KAFKA listener of ``kafka.listen.address``), so the tests reach them on loopback and
iptables can single one out by address. Each node's data directory is bind-mounted from the
test's temporary directory, so the checker can read every replica's files with ``storage`` once
the node is stopped.

With :class:`ClusterTls` the same cluster runs on TLS (tests/containers/test_faults_tls.py):
every node's listener is mutual TLS (clients and the nodes between themselves), the nodes reach
ZooKeeper on its TLS port (127.0.0.10:2182) with their shared ZooKeeper certificate and create
their znodes with secure ACLs (``zookeeper.set.acl``), all on the certificates of
scripts/dev-certs.sh, mounted read-only at /etc/odradek/certs as deploy/compose/tls.yaml does.
The tests' own ZooKeeper reads stay on the plaintext port (the znodes are world-readable).

``ODRADEK_CONTAINERS_SUBNET`` moves every address to another loopback /24 (``127.0.3``: ZooKeeper
on 127.0.3.10, node N on 127.0.3.1N) and labels the containers apart, so that two runs of the
suite on one machine neither collide on addresses nor remove each other's containers (the
iptables chain is still one: run the partition scenarios alone).

The module must be imported after ``conftest`` has set ``TESTCONTAINERS_*`` (testcontainers
reads its configuration on import).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import docker  # type: ignore[import-untyped]
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from kazoo.client import KazooClient
from testcontainers.core.container import DockerContainer

from controller.zk_data import (
    BrokerIdsZNode,
    ControllerZNode,
    TopicPartition,
    TopicPartitionStateZNode,
)
from deploy.local.cluster import ROOT
from deploy.local.zookeeper import four_letter_word
from odradek.clock import SystemClock
from tests.integration.helpers import wait_for

IMAGE_TAG = os.environ.get("ODRADEK_IMAGE_TAG", "dev")
NODE_IMAGE = f"odradek-node:{IMAGE_TAG}"
ZOOKEEPER_IMAGE = f"odradek-zookeeper:{IMAGE_TAG}"
SUBNET = os.environ.get("ODRADEK_CONTAINERS_SUBNET", "127.0.0")
"""The first three bytes of the loopback addresses the containers listen on (module docstring)."""
ZOOKEEPER_HOST = f"{SUBNET}.10"
ZOOKEEPER_PORT = 2181
ZOOKEEPER_TLS_PORT = 2182
CERTS_MOUNT = "/etc/odradek/certs"
CHROOT = "/odradek"
NODE_PORT = 9092
KAFKA_PORT = 19092
"""Each node's Kafka listener, on its own address (127.0.0.1N): apart from the compose test's
127.0.0.20:19092-19094 and a developer's cluster on 127.0.0.1."""
NODE_UID = 1000  # the node image's user: it must own the bind-mounted data directory
SESSION_TIMEOUT_MS = 6_000
REPLICA_LAG_TIME_MAX_MS = 5_000
FAULT_CHAIN = "ODRADEK-FAULTS"
LABEL = {"org.odradek.suite": "containers" if SUBNET == "127.0.0" else f"containers-{SUBNET}"}

_clock = SystemClock()
T = TypeVar("T")


def now_s() -> float:
    """Monotonic seconds: the suite's one clock for deadlines and the history's timestamps."""
    return _clock.monotonic_ms() / 1000


@dataclass(frozen=True)
class ClusterTls:
    """Certificates of scripts/dev-certs.sh for a TLS container cluster, in ``directory``."""

    directory: Path

    @staticmethod
    def make(directory: Path, nodes: int = 3) -> ClusterTls:
        """Runs dev-certs.sh for ``nodes`` nodes on 127.0.0.11.. and ZooKeeper on
        127.0.0.10, and opens the files to the images' users (throwaway test certificates)."""
        hosts = [ZOOKEEPER_HOST, *(f"{SUBNET}.{10 + i}" for i in range(1, nodes + 1))]
        subprocess.run(
            ["bash", str(ROOT / "scripts" / "dev-certs.sh"), str(directory), str(nodes), *hosts],
            check=True,
            capture_output=True,
        )
        directory.chmod(0o755)
        for path in directory.iterdir():
            path.chmod(0o644)
        return ClusterTls(directory)

    def client_config(self, user: str = "client") -> dict[str, Any]:
        """The SDK's keywords for a client with ``<user>.pem`` (mutual TLS)."""
        return {
            "security_protocol": "SSL",
            "ssl_cafile": str(self.directory / "ca.crt"),
            "ssl_certfile": str(self.directory / f"{user}.pem"),
        }

    def channel_credentials(self) -> grpc.ChannelCredentials:
        pem = (self.directory / "client.pem").read_bytes()
        start = pem.index(b"-----BEGIN CERTIFICATE-----")
        return grpc.ssl_channel_credentials(
            (self.directory / "ca.crt").read_bytes(), pem[:start], pem[start:]
        )

    def zookeeper_env(self) -> dict[str, str]:
        return {
            "ZOO_SECURE_CLIENT_PORT": str(ZOOKEEPER_TLS_PORT),
            "ZOO_SSL_KEYSTORE_LOCATION": f"{CERTS_MOUNT}/zookeeper.pem",
            "ZOO_SSL_TRUSTSTORE_LOCATION": f"{CERTS_MOUNT}/ca.crt",
        }

    def node_env(self, node_id: int) -> dict[str, str]:
        """What deploy/compose/tls.yaml sets, for node ``node_id``."""
        return {
            "ODRADEK_ZOOKEEPER_CONNECT": f"{ZOOKEEPER_HOST}:{ZOOKEEPER_TLS_PORT}{CHROOT}",
            "ODRADEK_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:SSL",
            "ODRADEK_SSL_KEYSTORE_LOCATION": f"{CERTS_MOUNT}/node-{node_id}.pem",
            "ODRADEK_SSL_TRUSTSTORE_LOCATION": f"{CERTS_MOUNT}/ca.crt",
            "ODRADEK_SSL_CLIENT_AUTH": "required",
            "ODRADEK_ZOOKEEPER_SSL_CLIENT_ENABLE": "true",
            "ODRADEK_ZOOKEEPER_CLIENTCNXNSOCKET": "org.apache.zookeeper.ClientCnxnSocketNetty",
            "ODRADEK_ZOOKEEPER_SSL_KEYSTORE_LOCATION": f"{CERTS_MOUNT}/zk-client.pem",
            "ODRADEK_ZOOKEEPER_SSL_TRUSTSTORE_LOCATION": f"{CERTS_MOUNT}/ca.crt",
            "ODRADEK_ZOOKEEPER_SET_ACL": "true",
        }


@dataclass
class NodeContainer:
    """Node ``node_id`` on 127.0.0.1<id>:9092 with its data under ``directory``."""

    node_id: int
    directory: Path
    container: DockerContainer = field(repr=False)
    credentials: grpc.ChannelCredentials | None = field(default=None, repr=False)
    """For a TLS cluster: how to reach the node (a client certificate)."""

    @property
    def host(self) -> str:
        return f"{SUBNET}.{10 + self.node_id}"

    @property
    def address(self) -> str:
        return f"{self.host}:{NODE_PORT}"

    @property
    def kafka_address(self) -> str:
        """Where the node serves Kafka's wire protocol (a plaintext cluster's nodes only)."""
        return f"{self.host}:{KAFKA_PORT}"

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    def serving(self) -> bool:
        """Whether the node's gRPC health service answers SERVING (within 1 s)."""
        with (
            grpc.secure_channel(self.address, self.credentials)
            if self.credentials is not None
            else grpc.insecure_channel(self.address)
        ) as channel:
            try:
                response = health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(service=""), timeout=1.0
                )
            except grpc.RpcError:
                return False
        return bool(response.status == health_pb2.HealthCheckResponse.SERVING)

    def logs(self, lines: int = 60) -> str:
        out, err = self.container.get_logs()
        text = (out + err).decode(errors="replace")
        return "\n".join(text.splitlines()[-lines:])


class ContainerCluster:
    """ZooKeeper plus three nodes, each a container. Not thread-safe: the test thread owns it.

    ``start`` creates the containers; ``remove`` removes them whatever state they are in.
    """

    def __init__(self, directory: Path, size: int = 3, tls: ClusterTls | None = None) -> None:
        """``tls``: run the cluster on TLS (module docstring)."""
        self.directory = directory
        self.tls = tls
        self.zookeeper = (
            DockerContainer(ZOOKEEPER_IMAGE, network_mode="host", init=True, labels=LABEL)
            .with_env("ZOO_CLIENT_PORT", str(ZOOKEEPER_PORT))
            .with_env("ZOO_CLIENT_PORT_ADDRESS", ZOOKEEPER_HOST)
            .with_env("ZOO_TICK_TIME", "500")
        )
        credentials = None
        if tls is not None:
            for key, value in tls.zookeeper_env().items():
                self.zookeeper.with_env(key, value)
            self.zookeeper.with_volume_mapping(str(tls.directory), CERTS_MOUNT, "ro")
            credentials = tls.channel_credentials()
        self.nodes: dict[int, NodeContainer] = {}
        for node_id in range(1, size + 1):
            node_dir = directory / f"node-{node_id}"
            node_dir.mkdir(parents=True)
            os.chown(node_dir, NODE_UID, NODE_UID)
            container = (
                DockerContainer(NODE_IMAGE, network_mode="host", init=True, labels=LABEL)
                .with_env("ODRADEK_NODE_ID", str(node_id))
                .with_env("ODRADEK_LISTEN_ADDRESS", f"{SUBNET}.{10 + node_id}:{NODE_PORT}")
                .with_env("ODRADEK_ZOOKEEPER_CONNECT", self.zookeeper_connect + CHROOT)
                .with_env("ODRADEK_LOG_DIRS", "/var/lib/odradek/data")
                .with_env("ODRADEK_ZOOKEEPER_SESSION_TIMEOUT_MS", str(SESSION_TIMEOUT_MS))
                .with_env("ODRADEK_REPLICA_LAG_TIME_MAX_MS", str(REPLICA_LAG_TIME_MAX_MS))
                .with_env("PYTHONUNBUFFERED", "1")
                .with_volume_mapping(str(node_dir), "/var/lib/odradek", "rw")
            )
            if tls is not None:
                for key, value in tls.node_env(node_id).items():
                    container.with_env(key, value)
                container.with_volume_mapping(str(tls.directory), CERTS_MOUNT, "ro")
            else:
                # a TLS cluster gets no Kafka listener: ``kafka.listen.address``'s is PLAINTEXT,
                # a way around the mutual TLS the TLS scenarios assert
                container.with_env(
                    "ODRADEK_KAFKA_LISTEN_ADDRESS", f"{SUBNET}.{10 + node_id}:{KAFKA_PORT}"
                )
            self.nodes[node_id] = NodeContainer(node_id, node_dir, container, credentials)

    @property
    def zookeeper_connect(self) -> str:
        return f"{ZOOKEEPER_HOST}:{ZOOKEEPER_PORT}"

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.address for n in self.nodes.values())

    @property
    def kafka_bootstrap_servers(self) -> str:
        """The nodes' Kafka listeners, for Kafka clients (a plaintext cluster only)."""
        if self.tls is not None:
            raise ValueError("a TLS container cluster has no Kafka listeners")
        return ",".join(n.kafka_address for n in self.nodes.values())

    @property
    def client_config(self) -> dict[str, Any]:
        """The SDK's keywords to reach the cluster (mutual TLS on a TLS cluster, else none)."""
        return self.tls.client_config() if self.tls is not None else {}

    # -- life cycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Starts ZooKeeper, then every node; returns once all of them serve."""
        self.zookeeper.start()
        self.wait_zookeeper()
        for node in self.nodes.values():
            node.container.start()
        for node in self.nodes.values():
            self.wait_serving(node.node_id)

    def wait_zookeeper(self, timeout_s: float = 30.0) -> None:
        wait_for(
            lambda: four_letter_word(ZOOKEEPER_HOST, ZOOKEEPER_PORT, "ruok") == "imok",
            "ZooKeeper to answer ruok",
            timeout_s,
        )

    def wait_serving(self, node_id: int, timeout_s: float = 180.0) -> None:
        """Waits until node ``node_id`` serves: a starting node on a machine as loaded as the
        shared CI one may take over a minute."""
        node = self.nodes[node_id]

        def serving() -> bool:
            wrapped = node.container.get_wrapped_container()
            wrapped.reload()
            if wrapped.status == "exited":
                raise AssertionError(f"node {node_id} exited:\n{node.logs()}")
            return node.serving()

        wait_for(serving, f"node {node_id} to serve", timeout_s)

    def remove(self) -> None:
        """Removes every container (force: running, paused or stopped). Safe to call twice."""
        for container in [*(n.container for n in self.nodes.values()), self.zookeeper]:
            if container._container is not None:
                try:
                    container.stop()
                except Exception as exc:  # already gone: nothing to remove
                    print(f"removing a container: {exc!r}")

    def stop_nodes(self) -> None:
        """A controlled shutdown of every node, one at a time (as an operator stops them)."""
        for node in self.nodes.values():
            wrapped = node.container.get_wrapped_container()
            wrapped.reload()
            if wrapped.status == "paused":
                wrapped.unpause()
            if wrapped.status in ("running", "paused"):
                wrapped.stop(timeout=60)

    # -- faults on nodes ------------------------------------------------------------------

    def kill(self, node_id: int) -> None:
        """SIGKILL: no controlled shutdown, no flush."""
        self.nodes[node_id].container.get_wrapped_container().kill()

    def stop(self, node_id: int) -> None:
        """SIGTERM (a controlled shutdown), SIGKILL after 60 s."""
        self.nodes[node_id].container.get_wrapped_container().stop(timeout=60)

    def start_node(self, node_id: int) -> None:
        self.nodes[node_id].container.get_wrapped_container().start()
        self.wait_serving(node_id)

    def pause(self, node_id: int) -> None:
        """Freezes every process of the node: it keeps its sockets but never answers."""
        self.nodes[node_id].container.get_wrapped_container().pause()

    def unpause(self, node_id: int) -> None:
        self.nodes[node_id].container.get_wrapped_container().unpause()

    # -- faults on ZooKeeper --------------------------------------------------------------

    def pause_zookeeper(self) -> None:
        self.zookeeper.get_wrapped_container().pause()

    def unpause_zookeeper(self) -> None:
        self.zookeeper.get_wrapped_container().unpause()

    def stop_zookeeper(self) -> None:
        self.zookeeper.get_wrapped_container().stop(timeout=10)

    def start_zookeeper(self) -> None:
        """Starts the stopped container again: its data directory (the same layer) is kept."""
        self.zookeeper.get_wrapped_container().start()
        self.wait_zookeeper()

    # -- what ZooKeeper says --------------------------------------------------------------

    def _zk_read(self, read: Callable[[KazooClient], T]) -> T:
        client = KazooClient(hosts=self.zookeeper_connect + CHROOT, timeout=5)
        client.start(timeout=10)
        try:
            return read(client)
        finally:
            client.stop()
            client.close()

    def controller_id(self) -> int:
        """The active controller's node id, from ``/controller`` (-1 if there is none)."""

        def read(zk: KazooClient) -> int:
            if not zk.exists(ControllerZNode.path):
                return -1
            data, _ = zk.get(ControllerZNode.path)
            return ControllerZNode.decode(data)

        return self._zk_read(read)

    def registered_nodes(self) -> set[int]:
        """Nodes with a live ZooKeeper session (an ephemeral ``/brokers/ids/<id>``)."""
        return set(self.registrations())

    def registrations(self) -> dict[int, int]:
        """Registered node -> its broker epoch (the czxid of its ``/brokers/ids/<id>``): a node
        whose session expired registers again with a new epoch."""

        def read(zk: KazooClient) -> dict[int, int]:
            out = {}
            for child in zk.get_children(BrokerIdsZNode.path):
                stat = zk.exists(f"{BrokerIdsZNode.path}/{child}")
                if stat is not None:
                    out[int(child)] = int(stat.czxid)
            return out

        return self._zk_read(read)

    def partition_states(self, topic: str, partitions: int) -> dict[int, tuple[int, set[int]]]:
        """Partition -> (leader, ISR) as the controller last wrote them to ZooKeeper.

        This, not a node's metadata, is the truth to wait on: a node answering a metadata
        request may not have heard of the latest change yet (one that has just registered
        again after its session expired still shows the ISR from before).
        """

        def read(zk: KazooClient) -> dict[int, tuple[int, set[int]]]:
            out = {}
            for p in range(partitions):
                data, stat = zk.get(TopicPartitionStateZNode.path(TopicPartition(topic, p)))
                state = TopicPartitionStateZNode.decode(data, stat.version)
                out[p] = (state.leader, set(state.isr))
            return out

        return self._zk_read(read)


def remove_leftover_containers() -> None:
    """Removes containers a crashed earlier run of this suite left behind (there is no reaper
    here). Only this suite's: other testcontainers users may share the engine."""
    labels = ["org.testcontainers=true", *(f"{k}={v}" for k, v in LABEL.items())]
    client = docker.from_env()
    try:
        for container in client.containers.list(all=True, filters={"label": labels}):
            container.remove(force=True)
    finally:
        client.close()


class Partition:
    """Network partitions on loopback with iptables, in a chain of their own (``FAULT_CHAIN``)
    jumped to from OUTPUT; healing flushes the chain.

    A host-networked container's loopback traffic leaves from 127.0.0.1, not from its own
    address, so what a node sends is matched by its cgroup (``-m cgroup --path``) and what is
    sent to it by its address.
    """

    def __init__(self) -> None:
        self._iptables("-N", FAULT_CHAIN, check=False)
        self._iptables("-F", FAULT_CHAIN)
        if self._iptables("-C", "OUTPUT", "-j", FAULT_CHAIN, check=False) != 0:
            self._iptables("-I", "OUTPUT", "1", "-j", FAULT_CHAIN)

    @staticmethod
    def _iptables(*args: str, check: bool = True) -> int:
        result = subprocess.run(["iptables", "-w", *args], capture_output=True, text=True)
        if check and result.returncode != 0:
            raise RuntimeError(f"iptables {' '.join(args)}: {result.stderr.strip()}")
        return result.returncode

    def isolate(self, node: NodeContainer) -> None:
        """Drops everything the node sends and everything sent to it."""
        wrapped = node.container.get_wrapped_container()
        wrapped.reload()
        cgroup = container_cgroup(int(wrapped.attrs["State"]["Pid"]))
        self._iptables("-A", FAULT_CHAIN, "-m", "cgroup", "--path", cgroup, "-j", "DROP")
        self._iptables("-A", FAULT_CHAIN, "-d", f"{node.host}/32", "-j", "DROP")

    def heal(self) -> None:
        self._iptables("-F", FAULT_CHAIN)

    def remove(self) -> None:
        """Unhooks and deletes the chain (a flush first, so nothing stays dropped)."""
        self._iptables("-F", FAULT_CHAIN, check=False)
        while self._iptables("-D", "OUTPUT", "-j", FAULT_CHAIN, check=False) == 0:
            pass
        self._iptables("-X", FAULT_CHAIN, check=False)


def container_cgroup(pid: int) -> str:
    """The container's path in the cgroup v2 hierarchy, which ``-m cgroup --path`` matches.

    Read from ``/proc/<pid>/cgroup`` of its main process (the ``0::`` line), since where the
    runtime puts containers depends on the machine (``/docker/<id>`` with the cgroupfs driver,
    ``/system.slice/docker-<id>.scope`` with systemd's).
    """
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            path = line[3:]
            if path in ("", "/"):
                break
            return path
    raise RuntimeError(
        f"process {pid} has no cgroup v2 path of its own; iptables cannot single out its traffic"
    )
