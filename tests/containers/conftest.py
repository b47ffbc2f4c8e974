"""Fixtures of the container fault suite: the Docker engine, a fresh cluster per scenario, the
iptables chain, and the table of results printed at the end of the run.

testcontainers reads its configuration when it is imported, so the environment is set first:
no reaper (its image cannot be pulled here; leftovers are removed by label instead) and the
engine reached directly (these machines have ``/.dockerenv``, which would otherwise make it
assume Docker-in-Docker).
"""

from __future__ import annotations

import os

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
os.environ.setdefault("TESTCONTAINERS_CONNECTION_MODE", "docker_host")

from collections.abc import Iterator
from pathlib import Path

import docker  # type: ignore[import-untyped]
import pytest

from tests.containers.checker import Row, table
from tests.containers.cluster import (
    NODE_IMAGE,
    ZOOKEEPER_IMAGE,
    ClusterTls,
    ContainerCluster,
    Partition,
    remove_leftover_containers,
)

SETUP_HINT = "run `bash scripts/docker-setup.sh` (as root: installs Docker, builds the images)"
TABLE_FILE = Path(__file__).resolve().parents[2] / ".artifacts" / "containers-table.md"

_verdicts: list[Row] = []


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[None]:
    """A Docker engine with the suite's images; fails (never skips) naming the fix. Removes
    containers earlier runs left behind, before and after the session."""
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:
        pytest.fail(f"no Docker engine answers ({exc}); {SETUP_HINT}", pytrace=False)
    try:
        missing = []
        for image in (NODE_IMAGE, ZOOKEEPER_IMAGE):
            try:
                client.images.get(image)
            except docker.errors.ImageNotFound:
                missing.append(image)
        if missing:
            pytest.fail(f"missing images {', '.join(missing)}; {SETUP_HINT}", pytrace=False)
    finally:
        client.close()
    remove_leftover_containers()
    try:
        yield
    finally:
        remove_leftover_containers()


@pytest.fixture
def partition() -> Iterator[Partition]:
    """The iptables fault chain, removed after the test whatever happened."""
    faults = Partition()
    try:
        yield faults
    finally:
        faults.remove()


@pytest.fixture
def cluster(
    docker_engine: None, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[ContainerCluster]:
    """ZooKeeper and three nodes, started; removed after the test even when it fails (with
    the tail of each node's log printed on failure)."""
    yield from _started(ContainerCluster(tmp_path), request)


@pytest.fixture
def tls_cluster(
    docker_engine: None, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[ContainerCluster]:
    """The same cluster on TLS: mutual TLS on the nodes' listeners, ZooKeeper over TLS, secure
    znode ACLs (``ClusterTls``), on fresh dev-certs.sh certificates."""
    tls = ClusterTls.make(tmp_path / "certs")
    yield from _started(ContainerCluster(tmp_path, tls=tls), request)


def _started(made: ContainerCluster, request: pytest.FixtureRequest) -> Iterator[ContainerCluster]:
    try:
        made.start()
        yield made
    finally:
        report = getattr(request.node, "rep_call", None)
        if report is None or report.failed:
            for node in made.nodes.values():
                try:
                    print(f"--- node {node.node_id} log tail ---\n{node.logs()}")
                except Exception as exc:  # never started: nothing to show
                    print(f"--- node {node.node_id}: no log ({exc!r})")
        made.remove()


@pytest.fixture
def verdicts() -> list[Row]:
    """Where a scenario records its verdict for the closing table."""
    return _verdicts


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Prints every scenario's row (also written to ``.artifacts/containers-table.md``)."""
    if not _verdicts:
        return
    text = table(_verdicts)
    terminalreporter.section("container fault scenarios")
    terminalreporter.write_line(text)
    TABLE_FILE.parent.mkdir(exist_ok=True)
    TABLE_FILE.write_text(text + "\n")
