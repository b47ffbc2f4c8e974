"""deploy/compose/tls.yaml over compose.yaml, run as its header tells an operator to, on
certificates of scripts/dev-certs.sh: the nodes serve only mutual TLS (their containers' health
checks too), reach ZooKeeper over TLS, and own their znodes (zookeeper.set.acl); a TLS client
with a certificate produces and consumes through the replicated cluster.

Its services bind ODRADEK_COMPOSE_HOST 127.0.0.21, apart from test_compose.py's 127.0.0.20, the
fault suite's 127.0.0.1x and a developer's cluster on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from deploy.local.cluster import ROOT
from odradek import Admin, Consumer, NewTopic, Producer, TopicPartition
from tests.integration.helpers import wait_for, wait_for_full_isr

HOST = "127.0.0.21"
BOOTSTRAP = ",".join(f"{HOST}:{port}" for port in (9092, 9093, 9094))
PROJECT = "odradek-compose-tls-test"
FILES = [ROOT / "deploy" / "compose" / "compose.yaml", ROOT / "deploy" / "compose" / "tls.yaml"]


def _compose(certs: Path, *args: str) -> subprocess.CompletedProcess[str]:
    executable = shutil.which("docker-compose")
    if executable is None:
        pytest.fail(
            "no docker-compose; run `bash scripts/docker-setup.sh` (as root: installs it)",
            pytrace=False,
        )
    files = [arg for f in FILES for arg in ("-f", str(f))]
    return subprocess.run(
        [executable, "-p", PROJECT, *files, *args],
        env=dict(os.environ, ODRADEK_COMPOSE_HOST=HOST, ODRADEK_COMPOSE_CERTS=str(certs)),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _certificates(directory: Path) -> Path:
    """As the file's header says: dev-certs.sh (with the compose host in the names), then the
    keystores made readable by the containers' users."""
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "dev-certs.sh"), str(directory), "3", HOST],
        check=True,
        capture_output=True,
    )
    directory.chmod(0o755)
    for pem in directory.glob("*.pem"):
        pem.chmod(0o644)
    return directory


def _security(certs: Path, user: str) -> dict[str, Any]:
    return {
        "security_protocol": "SSL",
        "ssl_cafile": str(certs / "ca.crt"),
        "ssl_certfile": str(certs / f"{user}.pem"),
    }


def _healthy(certs: Path) -> bool:
    """Every container's own health check (the node image's speaks TLS) says healthy."""
    ids = _compose(certs, "ps", "-q").stdout.split()
    if len(ids) != 4:
        return False
    states = subprocess.run(
        ["docker", "inspect", "--format", "{{json .State.Health.Status}}", *ids],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    return [json.loads(s) for s in states] == ["healthy"] * 4


def test_the_compose_tls_file_runs_a_mutual_tls_cluster_with_secure_zookeeper(
    docker_engine: None, tmp_path: Path
) -> None:
    certs = _certificates(tmp_path / "certs")
    _compose(certs, "down", "-v")  # what a crashed earlier run left
    try:
        up = _compose(certs, "up", "-d")
        assert up.returncode == 0, up.stdout + up.stderr
        with Admin(BOOTSTRAP, **_security(certs, "admin")) as admin:
            wait_for(
                lambda: len(admin.describe_cluster().brokers) == 3, "three brokers registered", 120
            )
            assert admin.create_topics([NewTopic("orders", num_partitions=2)]) == {"orders": None}
            wait_for_full_isr(admin, "orders", partitions=2, rf=3)
        with Producer(BOOTSTRAP, acks=-1, **_security(certs, "client")) as producer:
            futures = [producer.send("orders", f"order {i}".encode()) for i in range(40)]
            producer.flush(timeout=60)
        assert all(f.result().offset >= 0 for f in futures)
        read: list[bytes] = []
        tps = [TopicPartition("orders", p) for p in range(2)]
        with Consumer(
            BOOTSTRAP, auto_offset_reset="earliest", **_security(certs, "client")
        ) as consumer:
            consumer.assign(tps)

            def all_read() -> bool:
                read.extend(r.value or b"" for r in consumer.poll(timeout_ms=500))
                return len(read) >= 40

            wait_for(all_read, "the 40 records read back")
        assert sorted(read) == sorted(f"order {i}".encode() for i in range(40))
        wait_for(lambda: _healthy(certs), "every container healthy (TLS health checks)", 120)

        # no plaintext: a client without TLS gets no answer from a node
        with (
            grpc.insecure_channel(f"{HOST}:9092") as channel,
            pytest.raises(grpc.RpcError),
        ):
            health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=3
            )
        # ZooKeeper's plaintext port: the nodes' znodes are theirs (x509), read-only here
        outsider = KazooClient(hosts=f"{HOST}:2181/odradek", timeout=5)
        outsider.start(timeout=10)
        try:
            acls, _ = outsider.get_acls("/brokers/topics/orders")
            assert {acl.id.id for acl in acls if acl.id.scheme == "x509"} == {
                "CN=odradek,OU=Brokers"
            }
            with pytest.raises(NoAuthError):
                outsider.set("/brokers/topics/orders", b"{}")
        finally:
            outsider.stop()
            outsider.close()
    finally:
        _compose(certs, "down", "-v", "--timeout", "60")
