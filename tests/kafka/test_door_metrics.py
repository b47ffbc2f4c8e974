"""The Prometheus endpoint counts what Kafka clients do through the Kafka door as it counts the
gRPC door's requests: bytes and records in, bytes out per topic, and each request's count and
times under Kafka's request names (a consumer's Fetch as ``FetchConsumer``); and, as Kafka's
``ErrorsPerSec``, each error code in the door's answers."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from datetime import timedelta

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.produce.v8.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.types import TopicName
from kio.static.primitive import Records, i16, i32, i32Timedelta

from bench.kafka import kafka_leader
from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from tests.integration.helpers import metric_value, metrics_url, node_metric_total, scrape_metrics
from tests.kafka.conftest import call, fetch_request, running_cluster, wait_for
from tests.kafka.test_confluent_kafka import create_topic
from tests.storage_helpers import make_batch

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


def test_error_codes_in_kafka_answers_are_counted(metered: LocalCluster) -> None:
    """A produce to a partition that does not exist and a fetch past a log's end: each answer's
    error code counted on the node that answered, under the request's name."""
    bootstrap = metered.kafka_bootstrap_servers
    create_topic(bootstrap, "door-errors", partitions=1)
    leader = kafka_leader(metered, "door-errors")
    node = next(n for n in metered.nodes if n.kafka_address == leader)

    def errors(request: str, error: str) -> float:
        samples = scrape_metrics(metrics_url(node))
        return metric_value(
            samples, "kafka_network_requestmetrics_errors_total", request=request, error=error
        )

    produced_before = errors("Produce", "UNKNOWN_TOPIC_OR_PARTITION")
    fetched_before = errors("FetchConsumer", "OFFSET_OUT_OF_RANGE")
    answer = call(
        leader,
        ProduceRequest(
            acks=i16(1),
            timeout=i32Timedelta.parse(timedelta(seconds=10)),
            topic_data=(
                TopicProduceData(
                    name=TopicName("door-errors"),
                    partition_data=(
                        PartitionProduceData(index=i32(0), records=Records(make_batch(2))),
                        PartitionProduceData(index=i32(7), records=Records(make_batch(2))),
                    ),
                ),
            ),
        ),
    )
    codes = [int(p.error_code) for p in answer.responses[0].partition_responses]
    assert codes == [0, 3]  # partition 7 does not exist: UNKNOWN_TOPIC_OR_PARTITION
    fetched = call(leader, fetch_request("door-errors", 1_000_000))
    assert int(fetched.responses[0].partitions[0].error_code) == 1  # OFFSET_OUT_OF_RANGE
    assert errors("Produce", "UNKNOWN_TOPIC_OR_PARTITION") == produced_before + 1
    assert errors("FetchConsumer", "OFFSET_OUT_OF_RANGE") == fetched_before + 1
    assert errors("Produce", "NONE") == 0  # the partition appended is no error


def test_api_versions_errors_are_counted(metered: LocalCluster) -> None:
    """ApiVersions' own refusals count too: a version above the door's (answered in v0 with
    UNSUPPORTED_VERSION, as Kafka does) and a v3 whose client software name is not valid
    (INVALID_REQUEST)."""
    node = metered.nodes[0]
    assert node.kafka_address is not None

    def errors(error: str) -> float:
        samples = scrape_metrics(metrics_url(node))
        return metric_value(
            samples, "kafka_network_requestmetrics_errors_total", request="ApiVersions", error=error
        )

    unsupported_before = errors("UNSUPPORTED_VERSION")
    invalid_before = errors("INVALID_REQUEST")
    answer = call(
        node.kafka_address,
        ApiVersionsRequest(client_software_name="-not valid-", client_software_version="1.0"),
    )
    assert int(answer.error_code) == 42  # INVALID_REQUEST, with the list still sent
    assert answer.api_keys
    host, port = node.kafka_address.rsplit(":", 1)
    header = struct.pack(">hhih", 18, 99, 5, 3) + b"raw"  # ApiVersions v99, header v1
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(struct.pack(">i", len(header)) + header)
        f = s.makefile("rb")
        (size,) = struct.unpack(">i", f.read(4))
        frame = f.read(size)
    correlation_id, error_code = struct.unpack_from(">ih", frame)
    assert (correlation_id, error_code) == (5, 35)  # UNSUPPORTED_VERSION, in the v0 format
    assert errors("UNSUPPORTED_VERSION") == unsupported_before + 1
    assert errors("INVALID_REQUEST") == invalid_before + 1
