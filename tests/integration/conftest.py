"""Fixtures for tests against real node processes and the real ZooKeeper fixture."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer

_chroots = itertools.count()


@pytest.fixture
def make_cluster(
    tmp_path: Path, zookeeper: ZooKeeperServer, request: pytest.FixtureRequest
) -> Iterator[Callable[..., LocalCluster]]:
    """A factory of started clusters (nodes as processes, on the session's ZooKeeper under a
    chroot of their own); every node is stopped at the end, and its log printed on failure."""
    made: list[LocalCluster] = []

    def make(size: int = 3, **overrides: str) -> LocalCluster:
        name = f"/it{next(_chroots)}"
        cluster = LocalCluster(
            tmp_path / f"cluster{len(made)}",
            size,
            zookeeper=zookeeper,
            chroot=name,
            overrides={k.replace("_", "."): v for k, v in overrides.items()},
        )
        made.append(cluster)
        cluster.start()
        return cluster

    yield make
    failed = getattr(request.node, "rep_call", None)
    for cluster in made:
        for node in cluster.nodes:
            if failed is not None and failed.failed:
                print(f"--- node {node.node_id} log tail ---\n{node.tail(60)}")
            node.kill()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
    return report
