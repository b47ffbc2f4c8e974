"""The transaction coordinator's metrics through the real Prometheus endpoint of a three-node
cluster, driven by confluent-kafka's transactional producer: an open transaction is counted
Ongoing on its coordinator, a commit and an abort each once completed with their markers'
latency observed, and a transaction past its timeout counted as timed out and aborted; every
node serves Kafka's partition load times."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from tests.integration.helpers import metrics_url, node_metric_total, scrape_metrics
from tests.kafka.conftest import running_cluster, wait_for
from tests.kafka.test_confluent_kafka import create_topic
from tests.kafka.test_transactions import _producers_closed, transactional, unique

__all__ = ["_producers_closed"]  # test_transactions' producers destroyed after each test

P = "kafka_coordinator_transaction_"
COMPLETED = P + "transactioncoordinator_completedtransactions_total"
LATENCY = P + "transactionmarkerchannelmanager_markerlatencyms_count"
OPEN = P + "transactionstatemanager_opentransactions"
TIMED_OUT = P + "transactioncoordinator_timedouttransactions_total"
LOAD_TIME = "kafka_server_transaction_coordinator_metrics_partition_load_time"


@pytest.fixture(scope="module")
def metered_txn_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    """Three nodes serving metrics, with small internal topics and a 1 s abort scan."""
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "txn-metrics",
        overrides={
            "metrics.port": "0",
            "default.replication.factor": "3",
            "num.partitions": "1",
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.num.partitions": "3",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        },
    ) as cluster:
        yield cluster


def total(cluster: LocalCluster, name: str, **labels: str) -> float:
    return node_metric_total(cluster, (n.node_id for n in cluster.nodes), name, **labels)


def test_transactions_are_counted(metered_txn_cluster: LocalCluster) -> None:
    cluster = metered_txn_cluster
    bootstrap = cluster.kafka_bootstrap_servers
    topic = unique("metered")
    create_topic(bootstrap, topic, partitions=1)
    producer = transactional(bootstrap, unique("app"))
    assert total(cluster, OPEN, state="Ongoing") == 0
    producer.begin_transaction()
    producer.produce(topic, value=b"committed", partition=0)
    producer.flush(30)
    assert total(cluster, OPEN, state="Ongoing") == 1  # its partition added before the produce
    producer.commit_transaction(60)
    # EndTxn is answered once PrepareCommit is written: the completion follows the markers
    wait_for(lambda: total(cluster, COMPLETED, result="commit") == 1, "the commit counted")
    assert total(cluster, LATENCY) == 1
    producer.begin_transaction()
    producer.produce(topic, value=b"aborted", partition=0)
    producer.flush(30)
    producer.abort_transaction(60)
    wait_for(lambda: total(cluster, COMPLETED, result="abort") == 1, "the abort counted")
    assert total(cluster, LATENCY) == 2
    assert total(cluster, COMPLETED, result="commit") == 1
    assert total(cluster, OPEN, state="Ongoing") == 0
    assert total(cluster, TIMED_OUT) == 0

    slow = transactional(bootstrap, unique("slow"), **{"transaction.timeout.ms": 2000})
    slow.begin_transaction()
    slow.produce(topic, value=b"too-slow", partition=0)
    slow.flush(30)
    wait_for(lambda: total(cluster, TIMED_OUT) == 1, "the timed-out transaction counted")
    wait_for(lambda: total(cluster, COMPLETED, result="abort") == 2, "its abort completed")
    assert total(cluster, OPEN, state="Ongoing") == 0
    assert total(cluster, P + "transactionmarkerchannelmanager_pendingtransactions") == 0
    # Kafka's partition load times (NaN on a node with no load in the last 30 s)
    for node in cluster.nodes:
        names = {name for name, _ in scrape_metrics(metrics_url(node))}
        for stat in ("max", "avg"):
            assert f"{LOAD_TIME}_{stat}" in names
