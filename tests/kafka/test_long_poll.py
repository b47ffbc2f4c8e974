"""Fetch's long poll through the Kafka door, as Kafka's ``DelayedFetch``: a fetch short of
``min_bytes`` waits up to ``max_wait_ms`` and is answered as soon as the high watermark brings
enough; it waits on the door's loop, holding no request thread, so consumers idling in long polls
never starve produce requests or replication (a real cluster of 8 request threads per node, 16
idle librdkafka consumers)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition

from bench.kafka import kafka_leader
from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from tests.integration.helpers import wait_for
from tests.kafka.conftest import call, fetch_request, node_logs_on_failure, running_cluster
from tests.kafka.test_confluent_kafka import create_topic

THREADS = 8
"""``num.request.handler.threads`` of every node (Kafka's default; odradek's is 64)."""
IDLE_CONSUMERS = 16
"""Twice the threads: long polls holding a thread each would take them all."""


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "long-poll",
        overrides={"num.request.handler.threads": str(THREADS)},
    ) as c:
        yield c


def fetch(address: str, topic: str, offset: int, max_wait_ms: int, min_bytes: int) -> Any:
    """One Fetch v11 of ``topic`` partition 0 from ``offset``; (seconds taken, partition)."""
    started = time.perf_counter()
    answer = call(address, fetch_request(topic, offset, max_wait_ms, min_bytes))
    (t,) = answer.responses
    (p,) = t.partitions
    assert int(answer.error_code) == 0 and int(p.error_code) == 0, answer
    return time.perf_counter() - started, p


def produce(bootstrap: str, topic: str, value: bytes) -> float:
    """One record with acks=all (idempotent); seconds until it is acknowledged."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    producer.list_topics(topic, timeout=30)  # connected, metadata known: not what is timed
    failures: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    started = time.perf_counter()
    producer.produce(topic, value, partition=0, on_delivery=delivered)
    assert producer.flush(60) == 0 and not failures, failures
    return time.perf_counter() - started


def test_a_fetch_waits_for_min_bytes_up_to_max_wait_and_no_longer(cluster):
    bootstrap = cluster.kafka_bootstrap_servers
    with node_logs_on_failure(cluster):
        create_topic(bootstrap, "long-poll", partitions=1)
        produce(bootstrap, "long-poll", b"first")  # the partition replicating: offset 0
        leader = kafka_leader(cluster, "long-poll")

        # nothing arrives: answered empty once max_wait_ms has passed, not before
        took, p = fetch(leader, "long-poll", 1, max_wait_ms=700, min_bytes=1)
        assert 0.6 <= took < 5, took
        assert int(p.high_watermark) == 1 and not p.records

        # min_bytes 0 asks for no wait at all (Kafka's fetchMessages: bytes >= min_bytes)
        took, p = fetch(leader, "long-poll", 1, max_wait_ms=20_000, min_bytes=0)
        assert took < 5 and not p.records, took

        # a record arrives while the fetch waits: answered when it is replicated, with it
        produced: list[float | BaseException] = []

        def later() -> None:
            try:
                produced.append(produce(bootstrap, "long-poll", b"arrived"))
            except BaseException as e:
                produced.append(e)

        timer = threading.Timer(0.8, later)
        timer.start()
        try:
            took, p = fetch(leader, "long-poll", 1, max_wait_ms=20_000, min_bytes=1)
        finally:
            timer.join()
        assert len(produced) == 1 and isinstance(produced[0], float), produced
        assert 0.6 <= took < 10, (took, produced)
        assert int(p.high_watermark) == 2 and b"arrived" in bytes(p.records)

        # min_bytes above what there is: the fetch waits all of max_wait_ms, then answers what
        # there is
        took, p = fetch(leader, "long-poll", 0, max_wait_ms=900, min_bytes=10 * 1024 * 1024)
        assert 0.8 <= took < 5, took
        assert b"first" in bytes(p.records) and b"arrived" in bytes(p.records)

        # enough already there: answered at once whatever max_wait_ms says
        took, p = fetch(leader, "long-poll", 0, max_wait_ms=20_000, min_bytes=1)
        assert took < 5 and b"first" in bytes(p.records)


def test_idle_long_polls_hold_no_request_thread(cluster):
    """Twice as many librdkafka consumers as request threads sit in 20 s long polls on the
    partition's leader; an acks=all produce to it is still acknowledged at once (its request
    and the followers' replication get threads), and every consumer gets the record."""
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(bootstrap, "idle-polls", partitions=1)
    stop = threading.Event()
    got: list[bytes] = []
    errors: list[str] = []
    polling: set[int] = set()

    def consume(i: int) -> None:
        def stats(text: str) -> None:
            # librdkafka's own view: past its offset lookup (fetching) with a request in
            # flight to a broker, which at the end of the partition is a long poll
            report = json.loads(text)
            partition = report["topics"].get("idle-polls", {}).get("partitions", {}).get("0", {})
            in_flight = any(b["waitresp_cnt"] > 0 for b in report["brokers"].values())
            if partition.get("fetch_state") == "active" and in_flight:
                polling.add(i)

        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"idle-{i}",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 20_000,
                "socket.timeout.ms": 60_000,
                "statistics.interval.ms": 100,
                "stats_cb": stats,
            }
        )
        try:
            consumer.assign([TopicPartition("idle-polls", 0, OFFSET_END)])
            while not stop.is_set():
                msg = consumer.poll(0.2)
                if msg is None:
                    continue
                if msg.error() is not None:
                    errors.append(str(msg.error()))
                else:
                    got.append(msg.value() or b"")
                    return
        finally:
            consumer.close()

    consumers = [threading.Thread(target=consume, args=(i,)) for i in range(IDLE_CONSUMERS)]
    for t in consumers:
        t.start()
    with node_logs_on_failure(cluster):
        try:
            wait_for(lambda: len(polling) == IDLE_CONSUMERS, "every consumer in a long poll", 60)
            took = produce(bootstrap, "idle-polls", b"through")
            assert took < 5, f"an acks=all produce took {took:.1f} s beside the long polls"
            wait_for(lambda: len(got) == IDLE_CONSUMERS, "every consumer getting the record", 30)
        finally:
            stop.set()
            for t in consumers:
                t.join(timeout=60)
    assert got == [b"through"] * IDLE_CONSUMERS and not errors, errors
