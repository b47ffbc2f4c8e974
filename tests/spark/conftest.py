"""Fixtures of the Spark suite: one local Spark session and one 3-node cluster for all tests.

A SparkSession takes seconds to start and a cluster several more, so both are session-scoped;
tests isolate themselves with topics of their own (:func:`new_topic`). Workers run the venv's
Python (``PYSPARK_PYTHON`` must be set before the session starts) and import ``odradek`` from
this checkout (``PYTHONPATH``).
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from bench.spark import start_session
from deploy.local.cluster import ROOT, LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from odradek import Admin, NewTopic, Producer
from tests.integration.helpers import wait_for_full_isr

_topics = itertools.count()


@pytest.fixture(scope="session")
def spark_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    """Three node processes on the session's ZooKeeper under a chroot of their own; killed at
    the end."""
    cluster = LocalCluster(
        tmp_path_factory.mktemp("spark-cluster"),
        3,
        zookeeper=zookeeper,
        chroot="/spark",
        # the transaction log made on the first transactional producer's start: small, fast
        overrides={"transaction.state.log.num.partitions": "3"},
    )
    cluster.start()
    try:
        yield cluster
    finally:
        for node in cluster.nodes:
            node.kill()


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A local[2] SparkSession with the ``odradek`` source registered. Its JVM's output is in
    ``spark-jvm*/jvm.log`` under pytest's base temporary directory (and in the captured
    stderr of the test that runs when it prints); a launch that fails says why
    (:class:`bench.spark.SparkLaunchError`)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # Spark binds its driver to the host name's address, or to the first non-loopback
    # interface when that resolves to loopback: tests stay on loopback (job subprocesses
    # inherit this too).
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    path = os.environ.get("PYTHONPATH", "")
    if str(ROOT) not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), path) if p)
    import odradek.spark

    session = start_session(SESSION_CONF, tmp_path_factory.mktemp("spark-jvm") / "jvm.log")
    session.sparkContext.setLogLevel("ERROR")
    odradek.spark.register(session)
    try:
        yield session
    finally:
        session.stop()


SESSION_CONF = {
    "spark.master": "local[2]",
    "spark.app.name": "odradek-tests",
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "1g",
    "spark.sql.session.timeZone": "UTC",
}


@pytest.fixture
def new_topic(spark_cluster: LocalCluster) -> Callable[..., str]:
    """Create a topic with a name of its own (replication factor 3) and wait for its ISR."""

    def make(partitions: int = 1, prefix: str = "t", **configs: str) -> str:
        name = f"{prefix}{next(_topics)}"
        with Admin(spark_cluster.bootstrap_servers) as admin:
            topic_configs = {k.replace("_", "."): v for k, v in configs.items()}
            result = admin.create_topics([NewTopic(name, partitions, 3, configs=topic_configs)])
            assert result[name] is None, result
            wait_for_full_isr(admin, name, partitions)
        return name

    return make


def checkpoint_dir(tmp_path: Path, name: str) -> str:
    return str(tmp_path / name)


Produced = list[tuple[int, int, bytes | None, bytes | None]]
"""(partition, offset, key, value) of records produced."""


def produce(
    servers: str,
    topic: str,
    values: Sequence[tuple[int, bytes | None, bytes | None]],
    *,
    timestamps: Sequence[int] | None = None,
    headers: Sequence[Sequence[tuple[str, bytes | None]]] | None = None,
) -> Produced:
    """Send ``(partition, key, value)`` records and wait for every acknowledgement."""
    with Producer(servers, linger_ms=1) as producer:
        futures = [
            producer.send(
                topic,
                value,
                key=key,
                partition=partition,
                timestamp_ms=None if timestamps is None else timestamps[i],
                headers=() if headers is None else headers[i],
            )
            for i, (partition, key, value) in enumerate(values)
        ]
        producer.flush()
        metas = [f.result() for f in futures]
    return [(m.partition, m.offset, v[1], v[2]) for m, v in zip(metas, values, strict=True)]
