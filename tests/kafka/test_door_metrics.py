"""The Prometheus endpoint counts what Kafka clients do through the Kafka door as it counts the
gRPC door's requests: bytes and records in, bytes out per topic, and each request's count and
times under Kafka's request names (a consumer's Fetch as ``FetchConsumer``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from tests.integration.helpers import node_metric_total
from tests.kafka.conftest import running_cluster, wait_for
from tests.kafka.test_confluent_kafka import create_topic

RECORDS = 100


@pytest.fixture(scope="module")
def metered(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory, zookeeper, "door-metrics", nodes=3, overrides={"metrics.port": "0"}
    ) as cluster:
        yield cluster


def total(cluster: LocalCluster, name: str, **labels: str) -> float:
    return node_metric_total(cluster, (n.node_id for n in cluster.nodes), name, **labels)


def test_kafka_clients_traffic_is_counted(metered: LocalCluster) -> None:
    bootstrap = metered.kafka_bootstrap_servers
    create_topic(bootstrap, "door-metered", partitions=3)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(RECORDS):
        producer.produce("door-metered", b"x" * 100, key=str(i).encode(), partition=i % 3)
    assert producer.flush(60) == 0

    # records in: exactly what was appended, on the leaders; bytes in: the batches' bytes
    assert (
        total(metered, "kafka_server_brokertopicmetrics_messagesin_total", topic="door-metered")
        == RECORDS
    )
    bytes_in = total(metered, "kafka_server_brokertopicmetrics_bytesin_total", topic="door-metered")
    assert bytes_in > RECORDS * 100
    for request in ("ApiVersions", "Metadata", "InitProducerId", "Produce"):
        assert total(metered, "kafka_network_requestmetrics_requests_total", request=request) > 0
    assert total(metered, "kafka_network_requestmetrics_totaltimems_count", request="Produce") > 0

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "door-metrics"})
    consumer.assign([TopicPartition("door-metered", p, 0) for p in range(3)])
    read = 0
    try:

        def all_read() -> bool:
            nonlocal read
            read += len(consumer.consume(num_messages=RECORDS, timeout=0.2))
            return read >= RECORDS

        wait_for(all_read, "the records read back", 60)
    finally:
        consumer.close()
    # bytes out: every batch was sent to the consumer at least once
    wait_for(
        lambda: (
            total(metered, "kafka_server_brokertopicmetrics_bytesout_total", topic="door-metered")
            >= bytes_in
        ),
        "the consumer's fetches counted as bytes out",
    )
    fetches = total(metered, "kafka_network_requestmetrics_requests_total", request="FetchConsumer")
    assert fetches > 0
    # its long polls at the end waited in purgatory: remote time
    assert (
        total(metered, "kafka_network_requestmetrics_remotetimems_sum", request="FetchConsumer") > 0
    )
