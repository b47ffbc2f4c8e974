"""A node stopped with SIGTERM while Kafka clients are connected to its Kafka listener: the door
stops accepting, stops reading, answers every request it had already handled, then closes its
connections (Kafka's ``SocketServer.stopProcessingRequests``), and the process exits 0 with
nothing in its log about tasks destroyed while pending, a closed event loop or a traceback."""

from __future__ import annotations

import io
import socket
import struct
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, BinaryIO

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kio.schema.produce.v8.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.request_header.v1.header import RequestHeader
from kio.schema.types import TopicName
from kio.serial import entity_writer
from kio.static.primitive import Records, i16, i32, i32Timedelta

from bench.kafka_fuzz import decode_response
from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from tests.integration.helpers import metric_value, metrics_url, scrape_metrics
from tests.kafka.conftest import fetch_request, running_cluster, wait_for
from tests.storage_helpers import make_batch

TOPIC = "door-shutdown"
RECORDS = 20
FETCH_KEY, FETCH_VERSION = 1, 11
PRODUCE_KEY, PRODUCE_VERSION = 0, 8
STOP_TIMEOUT_S = 60.0
"""How long the test waits for the node to exit after SIGTERM before it SIGKILLs it."""


@pytest.fixture
def node_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    """One node: it leads every partition, so every request of the test reaches it. Its
    controlled shutdown has nothing to move; a short backoff keeps its retries short."""
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "door-shutdown",
        nodes=1,
        overrides={
            "metrics.port": "0",
            "default.replication.factor": "1",
            "controlled.shutdown.retry.backoff.ms": "100",
        },
    ) as cluster:
        yield cluster


def frame(request: Any, correlation_id: int) -> bytes:
    """``request`` (not flexible) as a size-prefixed frame with a v1 header."""
    out = io.BytesIO()
    entity_writer(RequestHeader)(
        out,
        RequestHeader(
            request_api_key=i16(int(request.__api_key__)),
            request_api_version=i16(int(request.__version__)),
            correlation_id=i32(correlation_id),
            client_id="shutdown-test",
        ),
    )
    entity_writer(type(request))(out, request)
    payload = out.getvalue()
    return struct.pack(">i", len(payload)) + payload


def read_answer(answers: BinaryIO, key: int, version: int) -> tuple[int, Any]:
    """The next answer on a connection (``answers``: its ``makefile("rb")``)."""
    head = answers.read(4)
    assert len(head) == 4, f"the connection closed with {len(head)} bytes of a next answer"
    (size,) = struct.unpack(">i", head)
    return decode_response(key, version, answers.read(size))


def messages_in(cluster: LocalCluster) -> float:
    samples = scrape_metrics(metrics_url(cluster.nodes[0]))
    return metric_value(samples, "kafka_server_brokertopicmetrics_messagesin_total", topic=TOPIC)


def fetches_waiting(cluster: LocalCluster) -> float:
    samples = scrape_metrics(metrics_url(cluster.nodes[0]))
    return metric_value(
        samples, "kafka_server_delayedoperationpurgatory_purgatorysize", delayedOperation="Fetch"
    )


def test_sigterm_answers_what_was_handled_and_closes_the_connections(node_cluster):
    cluster = node_cluster
    node = cluster.nodes[0]
    bootstrap = cluster.kafka_bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)], operation_timeout=30)[TOPIC].result(60)

    # a raw connection first, so that the only fetch waiting is its own: a long poll (a minute,
    # for more bytes than will come) and, pipelined behind it, an acks=1 produce, which the door
    # handles (appends) while the fetch waits, and answers after it
    host, port = node.kafka_address.rsplit(":", 1)
    raw = socket.create_connection((host, int(port)), timeout=STOP_TIMEOUT_S)
    long_poll = fetch_request(TOPIC, 0, max_wait_ms=60_000, min_bytes=64 * 1024 * 1024)
    raw.sendall(frame(long_poll, 1))
    wait_for(lambda: fetches_waiting(cluster) == 1, "the raw connection's fetch waiting")
    produce = ProduceRequest(
        transactional_id=None,
        acks=i16(1),
        timeout=i32Timedelta.parse(timedelta(seconds=30)),
        topic_data=(
            TopicProduceData(
                name=TopicName(TOPIC),
                partition_data=(
                    PartitionProduceData(index=i32(0), records=Records(make_batch(1))),
                ),
            ),
        ),
    )
    raw.sendall(frame(produce, 2))
    wait_for(lambda: messages_in(cluster) == 1, "the pipelined produce appended")

    # librdkafka's producer (idle, connected) and consumer (long-polling for what comes next)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0})
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "door-shutdown",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 30_000,
        }
    )
    try:
        for i in range(RECORDS):
            producer.produce(TOPIC, f"record {i}".encode(), partition=0)
        assert producer.flush(60) == 0
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        read: list[Any] = []

        def all_read() -> bool:
            read.extend(m for m in consumer.consume(RECORDS, timeout=0.2) if m.error() is None)
            return len(read) >= 1 + RECORDS

        wait_for(all_read, "the records read back")
        # the consumer's next fetch long-polls beside the raw connection's
        wait_for(lambda: fetches_waiting(cluster) == 2, "the consumer's fetch waiting")

        returncode = node.stop(timeout_s=STOP_TIMEOUT_S)

        # what was handled is answered, in order, then the connection is closed
        answers = raw.makefile("rb")
        cid, fetched = read_answer(answers, FETCH_KEY, FETCH_VERSION)
        assert cid == 1 and int(fetched.error_code) == 0
        assert [int(p.error_code) for t in fetched.responses for p in t.partitions] == [0]
        cid, produced = read_answer(answers, PRODUCE_KEY, PRODUCE_VERSION)
        assert cid == 2
        (answer,) = [p for t in produced.responses for p in t.partition_responses]
        assert int(answer.error_code) == 0 and int(answer.base_offset) == 0
        assert answers.read(1) == b""
    finally:
        raw.close()
        consumer.close()
        producer.flush(0)
    log = node.log_path.read_text()
    assert returncode == 0, node.tail(80)
    for sign in ("Task was destroyed", "Event loop is closed", "Traceback"):
        assert sign not in log, node.tail(80)
    assert f"node {node.node_id} stopped" in log
