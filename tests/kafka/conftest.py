"""A real three-node cluster serving Kafka's wire protocol, shared by a module's tests, and the
Kafka clients none of us wrote: confluent-kafka (librdkafka), kafka-python, aiokafka, Debian's
kcat and kafkajs (npm). A missing client fails the test loudly: ``bash scripts/setup.sh``
installs them all."""

from __future__ import annotations

import contextlib
import io
import itertools
import random
import shutil
import socket
import ssl
import struct
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kazoo.client import KazooClient
from kio.schema.fetch.v11.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.metadata.v1.request import MetadataRequest
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.types import BrokerId, TopicName
from kio.serial import entity_writer
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

from bench.kafka_fuzz import decode_response
from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from tests.integration import helpers

T = TypeVar("T")

JS_CLIENTS = Path(__file__).parent / "js"
_chroots = itertools.count()


def require(executable: str) -> str:
    path = shutil.which(executable)
    if path is None:
        raise RuntimeError(f"{executable} is not installed: run bash scripts/setup.sh")
    return path


def wait_for(condition: Callable[[], T | None], what: str, timeout_s: float = 90.0) -> T:
    """:func:`tests.integration.helpers.wait_for` with the longer wait real clients' rebalances
    need: polls ``condition`` until it returns something truthy, or fails naming ``what``."""
    return helpers.wait_for(condition, what, timeout_s)


@contextlib.contextmanager
def running_cluster(
    tmp_path_factory: pytest.TempPathFactory,
    zookeeper: ZooKeeperServer,
    name: str,
    nodes: int = 3,
    overrides: dict[str, str] | None = None,
) -> Iterator[LocalCluster]:
    """``nodes`` nodes, each with a gRPC listener and a PLAINTEXT Kafka listener, under a
    ZooKeeper chroot of their own; every node's log tail printed if the block fails, every
    node killed at the end."""
    cluster = LocalCluster(
        tmp_path_factory.mktemp(name),
        nodes,
        zookeeper=zookeeper,
        chroot=f"/{name}{next(_chroots)}",
        kafka_ports=[0] * nodes,
        overrides=overrides or {},
    )
    cluster.start()
    try:
        with node_logs_on_failure(cluster):
            wait_until_metadata_complete(cluster)
            yield cluster
    finally:
        for node in cluster.nodes:
            node.kill()


def call(address: str, request: Any, tls: ssl.SSLContext | None = None) -> Any:
    """One request on a fresh connection (over TLS with ``tls``, checking the node's certificate
    against the address's host name); the kio answer."""
    key, version = int(request.__api_key__), int(request.__version__)
    cid, answer = _call(address, request, tls)
    got, value = decode_response(key, version, answer)
    assert got == cid
    return value


def call_bytes(address: str, request: Any, tls: ssl.SSLContext | None = None) -> bytes:
    """:func:`call`'s answer undecoded: the response header and body (for answers kio cannot
    read, such as DescribeTransactions' -1 start time)."""
    return _call(address, request, tls)[1]


def _call(address: str, request: Any, tls: ssl.SSLContext | None) -> tuple[int, bytes]:
    key, version = int(request.__api_key__), int(request.__version__)
    cid = random.randrange(1 << 30)
    out = io.BytesIO()
    header = RequestHeaderV2 if request.__flexible__ else RequestHeaderV1
    entity_writer(header)(
        out,
        header(
            request_api_key=i16(key),
            request_api_version=i16(version),
            correlation_id=i32(cid),
            client_id="raw",
        ),
    )
    entity_writer(type(request))(out, request)
    payload = out.getvalue()
    host, port = address.rsplit(":", 1)
    with contextlib.ExitStack() as stack:
        s = stack.enter_context(socket.create_connection((host, int(port)), timeout=30))
        if tls is not None:
            s = stack.enter_context(tls.wrap_socket(s, server_hostname=host))
        s.sendall(struct.pack(">i", len(payload)) + payload)
        f = s.makefile("rb")
        (size,) = struct.unpack(">i", f.read(4))
        return cid, f.read(size)


def fetch_request(topic: str, offset: int, max_wait_ms: int = 0, min_bytes: int = 0) -> Any:
    """A consumer's Fetch v11 of ``topic`` partition 0 from ``offset`` (1 MiB at most)."""
    return FetchRequest(
        replica_id=BrokerId(-1),
        max_wait=i32Timedelta.parse(timedelta(milliseconds=max_wait_ms)),
        min_bytes=i32(min_bytes),
        max_bytes=i32(50 * 1024 * 1024),
        isolation_level=i8(0),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(
            FetchTopic(
                topic=TopicName(topic),
                partitions=(
                    FetchPartition(
                        partition=i32(0),
                        current_leader_epoch=i32(-1),
                        fetch_offset=i64(offset),
                        log_start_offset=i64(-1),
                        partition_max_bytes=i32(1024 * 1024),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


def wait_until_metadata_complete(cluster: LocalCluster) -> None:
    """Until every node's Metadata names every node and the controller. A node prints that it
    is listening before the controller's first UpdateMetadata reaches it, and until then it
    answers, as a Kafka broker does, with no controller: librdkafka's admin client, told so,
    waits for a change that its one refresh may never see (a CI run's CreateTopics timed out
    after 60 s that way)."""
    expected = {node.node_id for node in cluster.nodes}
    for node in cluster.nodes:

        def complete(address: str = node.kafka_address) -> bool:
            answer = call(address, MetadataRequest(topics=()))
            brokers = {int(b.node_id) for b in answer.brokers}
            return brokers == expected and int(answer.controller_id) in expected

        wait_for(complete, f"node {node.node_id}'s metadata naming every node and the controller")


@contextlib.contextmanager
def node_logs_on_failure(cluster: LocalCluster, lines: int = 80) -> Iterator[None]:
    """Every node's log tail printed if the block fails (a test of a module's shared cluster
    fails outside :func:`running_cluster`'s own block)."""
    try:
        yield
    except BaseException:
        for node in cluster.nodes:
            print(f"--- node {node.node_id} log tail ---\n{node.tail(lines)}")
        raise


@pytest.fixture(scope="module")
def kafka_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    """Three nodes; topics created by a Kafka client get three replicas unless the client says
    otherwise."""
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "kafka-cluster",
        overrides={"default.replication.factor": "3", "num.partitions": "3"},
    ) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def zk_connect_module(zookeeper: ZooKeeperServer, request: pytest.FixtureRequest) -> str:
    """A connect string with a chroot of the module's own (for in-process nodes)."""
    chroot = f"/kafka-module{next(_chroots)}"
    client = KazooClient(hosts=zookeeper.connect_string, timeout=10)
    client.start(timeout=15)
    try:
        client.ensure_path(chroot)
    finally:
        client.stop()
        client.close()
    return zookeeper.connect_string + chroot


@pytest.fixture(scope="module")
def bootstrap(kafka_cluster: LocalCluster) -> str:
    return kafka_cluster.kafka_bootstrap_servers
