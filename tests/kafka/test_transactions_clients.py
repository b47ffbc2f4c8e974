"""Kafka's transactions through the Kafka door with the transactional producers of the other
Kafka clients none of us wrote — kafka-python, aiokafka and kafkajs — against a real three-node
cluster (confluent-kafka's has tests/kafka/test_transactions.py): each commits a transaction,
aborts one and commits another; a read_committed consumer (confluent-kafka) reads the committed
records and not the aborted ones, a read_uncommitted one reads both, and each client's own
read_committed consumer (kafkajs's in a group) reads the committed ones only. A second
kafka-python or aiokafka producer with the same transactional.id fences the first: its open
transaction is aborted and its commit refused; kafkajs's likewise (tests/kafka/js/fence.js).
aiokafka and kafkajs speak versions older than KIP-588's PRODUCER_FENCED and are told
INVALID_PRODUCER_EPOCH (raw frames check each API's old and new versions). kafka-python's and
aiokafka's send_offsets_to_transaction (AddOffsetsToTxn, TxnOffsetCommit): the offsets of a
committed transaction become the group's, those of an aborted one do not."""

from __future__ import annotations

import asyncio
import json
import subprocess
from datetime import timedelta
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from aiokafka.errors import InvalidProducerEpoch, ProducerFenced
from aiokafka.structs import OffsetAndMetadata as AioOffset
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaPythonTopicPartition
from kafka.errors import InvalidProducerEpochError, ProducerFencedError
from kafka.errors import KafkaError as KafkaPythonError
from kafka.structs import OffsetAndMetadata as KafkaPythonOffset
from kio.schema.add_offsets_to_txn.v1.request import AddOffsetsToTxnRequest as AddOffsetsV1
from kio.schema.add_offsets_to_txn.v2.request import AddOffsetsToTxnRequest as AddOffsetsV2
from kio.schema.add_partitions_to_txn.v1 import request as add_partitions_v1
from kio.schema.add_partitions_to_txn.v2 import request as add_partitions_v2
from kio.schema.end_txn.v1.request import EndTxnRequest as EndTxnV1
from kio.schema.end_txn.v2.request import EndTxnRequest as EndTxnV2
from kio.schema.init_producer_id.v3.request import InitProducerIdRequest as InitProducerIdV3
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest as InitProducerIdV4
from kio.schema.types import GroupId, ProducerId, TopicName, TransactionalId
from kio.static.primitive import i16, i32, i32Timedelta

from deploy.local.cluster import LocalCluster
from tests.kafka.conftest import JS_CLIENTS, call, require
from tests.kafka.test_confluent_kafka import create_topic
from tests.kafka.test_transactions import (
    _producers_closed,
    listed,
    read_all,
    transactional,
    txn_cluster,
    unique,
)

# test_transactions' fixtures: the module's cluster, and its producers destroyed after each test
__all__ = ["_producers_closed", "txn_cluster"]

COUNT = 5
COMMITTED = [f"committed-{i}".encode() for i in range(COUNT)] + [
    f"last-{i}".encode() for i in range(COUNT)
]
ABORTED = [f"aborted-{i}".encode() for i in range(COUNT)]


def assert_read_as_committed(bootstrap: str, topic: str) -> None:
    assert read_all(bootstrap, topic, "read_committed", expect=len(COMMITTED)) == COMMITTED
    assert read_all(bootstrap, topic, "read_committed") == COMMITTED  # nothing else comes
    uncommitted = read_all(bootstrap, topic, "read_uncommitted", expect=3 * COUNT)
    assert sorted(uncommitted) == sorted(COMMITTED + ABORTED)


def test_kafka_python_commits_and_aborts(txn_cluster: LocalCluster) -> None:
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic = unique("kp-txn")
    create_topic(bootstrap, topic, partitions=1)
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=unique("kp"))
    try:
        producer.init_transactions()
        for name, commit in (("committed", True), ("aborted", False), ("last", True)):
            producer.begin_transaction()
            futures = [
                producer.send(topic, value=f"{name}-{i}".encode(), partition=0)
                for i in range(COUNT)
            ]
            producer.flush(60)
            assert all(f.get(timeout=60).offset >= 0 for f in futures)
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close(timeout=30)
    assert_read_as_committed(bootstrap, topic)
    # kafka-python's own read_committed consumer drops the aborted batches too
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, isolation_level="read_committed"
    )
    try:
        consumer.assign([KafkaPythonTopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        got: list[bytes] = []
        while len(got) < len(COMMITTED):
            batch = consumer.poll(timeout_ms=10_000)
            assert batch, f"no records after {got}"
            got.extend(r.value for records in batch.values() for r in records)
    finally:
        consumer.close()
    assert got == COMMITTED


async def _aiokafka_read_committed(bootstrap: str, topic: str) -> list[bytes]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, isolation_level="read_committed"
    )
    await consumer.start()
    try:
        tp = AioTopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        got: list[bytes] = []
        while len(got) < len(COMMITTED):
            batch = await consumer.getmany(tp, timeout_ms=10_000)
            assert batch, f"no records after {got}"
            got.extend(r.value for r in batch[tp] if r.value is not None)
        return got
    finally:
        await consumer.stop()


async def _aiokafka_transactions(bootstrap: str, topic: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=unique("aio"))
    await producer.start()
    try:
        for name, commit in (("committed", True), ("aborted", False), ("last", True)):
            await producer.begin_transaction()
            for i in range(COUNT):
                await producer.send_and_wait(topic, f"{name}-{i}".encode(), partition=0)
            if commit:
                await producer.commit_transaction()
            else:
                await producer.abort_transaction()
    finally:
        await producer.stop()


def test_aiokafka_commits_and_aborts(txn_cluster: LocalCluster) -> None:
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic = unique("aio-txn")
    create_topic(bootstrap, topic, partitions=1)
    asyncio.run(asyncio.wait_for(_aiokafka_transactions(bootstrap, topic), 120))
    assert_read_as_committed(bootstrap, topic)
    # aiokafka's own read_committed consumer drops the aborted batches too
    got = asyncio.run(asyncio.wait_for(_aiokafka_read_committed(bootstrap, topic), 120))
    assert got == COMMITTED


def test_kafkajs_commits_and_aborts(txn_cluster: LocalCluster) -> None:
    if not (JS_CLIENTS / "node_modules" / "kafkajs").is_dir():
        raise RuntimeError("kafkajs is not installed: run bash scripts/setup.sh")
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic = unique("js-txn")
    create_topic(bootstrap, topic, partitions=1)
    result = subprocess.run(
        [
            require("node"),
            str(JS_CLIENTS / "transaction.js"),
            bootstrap,
            topic,
            unique("js"),
            str(COUNT),
        ],
        capture_output=True,
        timeout=150,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert json.loads(result.stdout) == {"ok": True}
    assert_read_as_committed(bootstrap, topic)
    # kafkajs's consumer (a group member; read_committed is its default) drops them too
    consumed = subprocess.run(
        [
            require("node"),
            str(JS_CLIENTS / "consume.js"),
            bootstrap,
            topic,
            unique("js-reader"),
            str(len(COMMITTED)),
        ],
        capture_output=True,
        timeout=150,
        check=False,
    )
    assert consumed.returncode == 0, consumed.stderr.decode(errors="replace")
    read = json.loads(consumed.stdout)["read"]
    assert [r["value"].encode() for r in read] == COMMITTED


def test_kafka_python_is_fenced_by_a_second_producer(txn_cluster: LocalCluster) -> None:
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic = unique("kp-fence")
    create_topic(bootstrap, topic, partitions=1)
    tid = unique("kp")
    first = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
    second = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
    try:
        first.init_transactions()
        first.begin_transaction()
        first.send(topic, value=b"zombie", partition=0).get(timeout=60)
        second.init_transactions()  # aborts the first's transaction
        second.begin_transaction()
        second.send(topic, value=b"winner", partition=0).get(timeout=60)
        second.commit_transaction()
        with pytest.raises(KafkaPythonError) as fenced:
            first.commit_transaction()
        assert isinstance(fenced.value, ProducerFencedError | InvalidProducerEpochError), repr(
            fenced.value
        )
    finally:
        first.close(timeout=30)
        second.close(timeout=30)
    assert read_all(bootstrap, topic, "read_committed", expect=1) == [b"winner"]
    assert read_all(bootstrap, topic, "read_committed") == [b"winner"]


async def _aiokafka_fenced(bootstrap: str, topic: str) -> BaseException:
    tid = unique("aio")
    first = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
    second = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
    await first.start()
    try:
        await first.begin_transaction()
        await first.send_and_wait(topic, b"zombie", partition=0)
        await second.start()  # InitProducerId: aborts the first's transaction
        try:
            async with second.transaction():
                await second.send_and_wait(topic, b"winner", partition=0)
        finally:
            await second.stop()
        try:
            await first.commit_transaction()
        except Exception as e:
            return e
        raise AssertionError("the fenced producer committed")
    finally:
        await first.stop()


def test_aiokafka_is_fenced_by_a_second_producer(txn_cluster: LocalCluster) -> None:
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic = unique("aio-fence")
    create_topic(bootstrap, topic, partitions=1)
    error = asyncio.run(asyncio.wait_for(_aiokafka_fenced(bootstrap, topic), 120))
    assert isinstance(error, ProducerFenced | InvalidProducerEpoch), repr(error)
    assert read_all(bootstrap, topic, "read_committed", expect=1) == [b"winner"]
    assert read_all(bootstrap, topic, "read_committed") == [b"winner"]


def transaction_producer_id(cluster: LocalCluster, tid: str) -> int:
    return listed(cluster)[tid][0]


def _end_txn(version: int, tid: str, producer_id: int, epoch: int) -> Any:
    cls = EndTxnV1 if version == 1 else EndTxnV2
    return cls(
        transactional_id=TransactionalId(tid),
        producer_id=ProducerId(producer_id),
        producer_epoch=i16(epoch),
        committed=True,
    )


def test_older_request_versions_are_told_invalid_producer_epoch(txn_cluster: LocalCluster) -> None:
    """KIP-588's PRODUCER_FENCED only for the versions that know it (InitProducerId v4+,
    AddPartitionsToTxn, AddOffsetsToTxn and EndTxn v2+); older ones get INVALID_PRODUCER_EPOCH,
    as Kafka's KafkaApis translates it: aiokafka (EndTxn v0, AddPartitionsToTxn v0) knows no
    code 90, and a fenced aiokafka producer's commit failed with UnknownError."""
    bootstrap = txn_cluster.kafka_bootstrap_servers
    tid = unique("old")
    create_topic(bootstrap, tid, partitions=1)
    transactional(bootstrap, tid)  # epoch 0
    transactional(bootstrap, tid)  # epoch 1: the first is fenced
    producer_id = transaction_producer_id(txn_cluster, tid)
    coordinator = next(
        node.kafka_address
        for node in txn_cluster.nodes
        if call(node.kafka_address, _end_txn(2, tid, producer_id, 0)).error_code != 16
    )
    assert call(coordinator, _end_txn(1, tid, producer_id, 0)).error_code == 47
    assert call(coordinator, _end_txn(2, tid, producer_id, 0)).error_code == 90
    for module, code in ((add_partitions_v1, 47), (add_partitions_v2, 90)):
        answer = call(
            coordinator,
            module.AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=TransactionalId(tid),
                v3_and_below_producer_id=ProducerId(producer_id),
                v3_and_below_producer_epoch=i16(0),
                v3_and_below_topics=(
                    module.AddPartitionsToTxnTopic(name=TopicName(tid), partitions=(i32(0),)),
                ),
            ),
        )
        [topic] = answer.results_by_topic_v3_and_below
        assert [int(p.partition_error_code) for p in topic.results_by_partition] == [code]
    for add_offsets, code in ((AddOffsetsV1, 47), (AddOffsetsV2, 90)):
        answer = call(
            coordinator,
            add_offsets(
                transactional_id=TransactionalId(tid),
                producer_id=ProducerId(producer_id),
                producer_epoch=i16(0),
                group_id=GroupId("g"),
            ),
        )
        assert answer.error_code == code
    for init, code in ((InitProducerIdV3, 47), (InitProducerIdV4, 90)):
        answer = call(
            coordinator,
            init(
                transactional_id=TransactionalId(tid),
                transaction_timeout=i32Timedelta.parse(timedelta(seconds=60)),
                producer_id=ProducerId(producer_id),
                producer_epoch=i16(0),
            ),
        )
        assert answer.error_code == code


def test_kafkajs_is_fenced_by_a_second_producer(txn_cluster: LocalCluster) -> None:
    """kafkajs (EndTxn v0-v1) knows INVALID_PRODUCER_EPOCH and not PRODUCER_FENCED."""
    if not (JS_CLIENTS / "node_modules" / "kafkajs").is_dir():
        raise RuntimeError("kafkajs is not installed: run bash scripts/setup.sh")
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic = unique("js-fence")
    create_topic(bootstrap, topic, partitions=1)
    result = subprocess.run(
        [require("node"), str(JS_CLIENTS / "fence.js"), bootstrap, topic, unique("js")],
        capture_output=True,
        timeout=150,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert json.loads(result.stdout) == {"first_commit": "INVALID_PRODUCER_EPOCH"}
    assert read_all(bootstrap, topic, "read_committed", expect=1) == [b"winner"]
    assert read_all(bootstrap, topic, "read_committed") == [b"winner"]


def committed_offset(bootstrap: str, group: str, topic: str) -> int:
    """``group``'s committed offset of ``topic`` partition 0 (confluent-kafka), -1001: none."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        [tp] = consumer.committed([ConfluentTopicPartition(topic, 0)], timeout=30)
        return int(tp.offset)
    finally:
        consumer.close()


def test_kafka_python_sends_offsets_to_its_transaction(txn_cluster: LocalCluster) -> None:
    """TxnOffsetCommit: offsets sent in a committed transaction are the group's, in an aborted
    one are not."""
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic = unique("kp-offsets")
    create_topic(bootstrap, topic, partitions=1)
    group = unique("kp-group")
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=unique("kp"))
    try:
        producer.init_transactions()
        for offset, commit in ((5, True), (9, False)):
            producer.begin_transaction()
            producer.send(topic, value=b"x", partition=0).get(timeout=60)
            producer.send_offsets_to_transaction(
                {KafkaPythonTopicPartition(topic, 0): KafkaPythonOffset(offset, "", -1)}, group
            )
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close(timeout=30)
    assert committed_offset(bootstrap, group, topic) == 5


async def _aiokafka_offsets(bootstrap: str, topic: str, group: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=unique("aio"))
    await producer.start()
    try:
        for offset, commit in ((5, True), (9, False)):
            await producer.begin_transaction()
            await producer.send_and_wait(topic, b"x", partition=0)
            await producer.send_offsets_to_transaction(
                {AioTopicPartition(topic, 0): AioOffset(offset, "")}, group
            )
            if commit:
                await producer.commit_transaction()
            else:
                await producer.abort_transaction()
    finally:
        await producer.stop()


def test_aiokafka_sends_offsets_to_its_transaction(txn_cluster: LocalCluster) -> None:
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic = unique("aio-offsets")
    create_topic(bootstrap, topic, partitions=1)
    group = unique("aio-group")
    asyncio.run(asyncio.wait_for(_aiokafka_offsets(bootstrap, topic, group), 120))
    assert committed_offset(bootstrap, group, topic) == 5
