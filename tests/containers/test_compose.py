"""The compose file, run as its header tells an operator to: ``deploy/compose/compose.yaml``
with Debian's ``docker-compose`` (which ``scripts/docker-setup.sh`` installs) on the images
``build-images.sh`` made.

Its services bind ODRADEK_COMPOSE_HOST, here 127.0.0.20, apart from the fault suite's 127.0.0.1x and
from a developer's cluster on 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.request

import pytest

from deploy.local.cluster import ROOT
from odradek import Admin, NewTopic, Producer
from tests.integration.helpers import consume_all, wait_for, wait_for_full_isr

HOST = "127.0.0.20"
BOOTSTRAP = ",".join(f"{HOST}:{port}" for port in (9092, 9093, 9094))
KAFKA_BOOTSTRAP = ",".join(f"{HOST}:{port}" for port in (19092, 19093, 19094))
PROJECT = "odradek-compose-test"
COMPOSE_FILE = ROOT / "deploy" / "compose" / "compose.yaml"
CONSOLE_FILE = ROOT / "deploy" / "compose" / "console.yaml"
"""The web console as a service beside the cluster (the opt-in second file its header names)."""
CONSOLE = f"http://{HOST}:8080"


def _compose(*args: str) -> subprocess.CompletedProcess[str]:
    executable = shutil.which("docker-compose")
    if executable is None:
        pytest.fail(
            "no docker-compose; run `bash scripts/docker-setup.sh` (as root: installs it)",
            pytrace=False,
        )
    return subprocess.run(
        [executable, "-p", PROJECT, "-f", str(COMPOSE_FILE), "-f", str(CONSOLE_FILE), *args],
        env=dict(os.environ, ODRADEK_COMPOSE_HOST=HOST),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _kcat(*args: str) -> str:
    executable = shutil.which("kcat")
    if executable is None:
        pytest.fail("no kcat; run `bash scripts/setup.sh` (installs Debian's)", pytrace=False)
    result = subprocess.run(
        [executable, "-b", KAFKA_BOOTSTRAP, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _page(path: str) -> str | None:
    """A console page's HTML, or None while the console does not answer yet."""
    try:
        with urllib.request.urlopen(CONSOLE + path, timeout=10) as response:
            return str(response.read().decode())
    except OSError:
        return None


def _up() -> None:
    up = _compose("up", "-d")
    assert up.returncode == 0, up.stdout + up.stderr
    with Admin(BOOTSTRAP) as admin:
        wait_for(
            lambda: len(admin.describe_cluster().brokers) == 3, "three brokers registered", 120
        )


def test_the_compose_file_runs_a_replicated_cluster_that_keeps_its_data_across_down_and_up(
    docker_engine: None,
) -> None:
    _compose("down", "-v")  # what a crashed earlier run left
    try:
        _up()
        with Admin(BOOTSTRAP) as admin:
            # the file's ODRADEK_DEFAULT_REPLICATION_FACTOR=3 applies to a topic created
            # without a replication factor
            assert admin.create_topics([NewTopic("orders", num_partitions=2)]) == {"orders": None}
            wait_for_full_isr(admin, "orders", partitions=2, rf=3)
            configs = admin.describe_configs(["orders"])["orders"]
        # the file's ODRADEK_MIN_INSYNC_REPLICAS
        assert configs["min.insync.replicas"].value == "2"
        with Producer(BOOTSTRAP, acks=-1) as producer:
            futures = [
                producer.send("orders", f"order {i}".encode(), key=f"customer {i % 7}".encode())
                for i in range(60)
            ]
            producer.flush(timeout=60)
        assert all(f.result().offset >= 0 for f in futures)
        before = consume_all(BOOTSTRAP, "orders", 2)
        assert sorted(v for records in before.values() for _, v in records) == sorted(
            f"order {i}".encode() for i in range(60)
        )
        # Kafka clients reach the same nodes on their advertised Kafka listeners
        listing = _kcat("-L", "-t", "orders")
        for node, port in zip((1, 2, 3), (19092, 19093, 19094), strict=True):
            assert f"broker {node} at {HOST}:{port}" in listing
        read = _kcat("-C", "-t", "orders", "-o", "beginning", "-e", "-q")
        assert sorted(read.splitlines()) == sorted(f"order {i}" for i in range(60))
        # the console service shows the cluster and the topic
        overview = wait_for(lambda: _page("/"), "the console's overview", 120)
        assert all(f"{HOST}:{port}" in overview for port in (9092, 9093, 9094))
        assert "orders" in (_page("/topics") or "")

        # `down` stops the containers (SIGTERM, as `docker stop` sends) and removes them but
        # keeps the named volumes: the next `up` finds the topic and its records
        down = _compose("down")
        assert down.returncode == 0, down.stdout + down.stderr
        assert _compose("ps", "-q").stdout.split() == []
        _up()
        with Admin(BOOTSTRAP) as admin:
            wait_for_full_isr(admin, "orders", partitions=2, rf=3)
        assert consume_all(BOOTSTRAP, "orders", 2) == before
    finally:
        _compose("down", "-v", "--timeout", "60")
