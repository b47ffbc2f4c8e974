"""odradek's SDK transactional producer over gRPC, against a real three-node cluster: its
committed records are read by read_committed consumers (odradek's SDK consumer and
confluent-kafka's through the Kafka listeners) and its aborted ones are not (a read_uncommitted
consumer sees both); a second producer with the same transactional id fences the first (its
commit raises ProducerFencedError, its records are never read committed); a
consume-transform-produce loop commits each step's output."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

import odradek
from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from odradek.client.errors import TransactionStateError
from odradek.errors import ProducerFencedError
from tests.kafka.conftest import running_cluster, wait_for
from tests.kafka.test_confluent_kafka import create_topic
from tests.kafka.test_transactions import read_all, transaction_state


@pytest.fixture(scope="module")
def txn_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    """Three nodes with small internal topics (fast creation)."""
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "sdk-txn-cluster",
        overrides={
            "default.replication.factor": "3",
            "num.partitions": "1",
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.num.partitions": "3",
        },
    ) as cluster:
        yield cluster


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def sdk_producer(cluster: LocalCluster, transactional_id: str) -> odradek.Producer:
    producer = odradek.Producer(cluster.bootstrap_servers, transactional_id=transactional_id)
    producer.init_transactions(timeout=60)
    return producer


def test_committed_records_are_read_and_aborted_ones_are_not(txn_cluster: LocalCluster) -> None:
    kafka = txn_cluster.kafka_bootstrap_servers
    topic = unique("sdk-txn")
    create_topic(kafka, topic, partitions=1)
    with sdk_producer(txn_cluster, unique("sdk-app")) as producer:
        producer.begin_transaction()
        futures = [producer.send(topic, f"committed-{i}".encode(), partition=0) for i in range(5)]
        producer.commit_transaction(timeout=60)
        assert [f.result().offset for f in futures] == [0, 1, 2, 3, 4]
        producer.begin_transaction()
        for i in range(3):
            producer.send(topic, f"aborted-{i}".encode(), partition=0)
        producer.flush(30)
        producer.abort_transaction(timeout=60)
        producer.begin_transaction()
        producer.send(topic, b"committed-last", partition=0)
        producer.commit_transaction(timeout=60)

    committed = [f"committed-{i}".encode() for i in range(5)] + [b"committed-last"]
    assert read_all(kafka, topic, "read_committed", expect=6) == committed
    assert read_all(kafka, topic, "read_committed") == committed  # nothing else comes
    uncommitted = read_all(kafka, topic, "read_uncommitted", expect=9)
    assert [v for v in uncommitted if v.startswith(b"aborted")] == [
        f"aborted-{i}".encode() for i in range(3)
    ]


def test_sending_outside_a_transaction_is_refused(txn_cluster: LocalCluster) -> None:
    topic = unique("sdk-outside")
    create_topic(txn_cluster.kafka_bootstrap_servers, topic, partitions=1)
    with sdk_producer(txn_cluster, unique("sdk-app")) as producer:
        with pytest.raises(TransactionStateError):
            producer.send(topic, b"x", partition=0)
        producer.begin_transaction()
        with pytest.raises(TransactionStateError):
            producer.begin_transaction()
        producer.commit_transaction(timeout=60)  # nothing sent: no EndTxn needed


def test_a_second_producer_fences_the_first(txn_cluster: LocalCluster) -> None:
    kafka = txn_cluster.kafka_bootstrap_servers
    topic = unique("sdk-fence")
    create_topic(kafka, topic, partitions=1)
    transactional_id = unique("sdk-app")
    first = sdk_producer(txn_cluster, transactional_id)
    try:
        first.begin_transaction()
        first.send(topic, b"zombie", partition=0)
        first.flush(30)
        with sdk_producer(txn_cluster, transactional_id) as second:  # aborts the first's
            second.begin_transaction()
            second.send(topic, b"winner", partition=0)
            second.commit_transaction(timeout=60)
        with pytest.raises(ProducerFencedError):
            first.commit_transaction(timeout=30)
        with pytest.raises(ProducerFencedError):  # fatal: every later call raises it
            first.begin_transaction()
    finally:
        first.close()
    assert read_all(kafka, topic, "read_committed", expect=1) == [b"winner"]
    assert read_all(kafka, topic, "read_committed") == [b"winner"]
    assert wait_for(
        lambda: transaction_state(txn_cluster, transactional_id) == "CompleteCommit", "commit"
    )
