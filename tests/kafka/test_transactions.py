"""Kafka's transactions through the Kafka door, with confluent-kafka (librdkafka) as the client,
against a real three-node cluster: a transactional producer's committed records are read by a
read_committed consumer and its aborted ones are not (a read_uncommitted consumer sees both);
a second producer with the same transactional.id fences the first; a transaction left open past
its transaction.timeout.ms is aborted by the coordinator and its producer told; the coordinator
answers DescribeTransactions and ListTransactions (confluent-kafka's admin client); a
consume-transform-produce loop commits its consumer's offsets in its transactions
(send_offsets_to_transaction), pending and unstable until the commit; DeleteGroups deletes a
transaction's pending offsets, and a plain commit written after a transaction's offset is kept
at its COMMIT (issue 32)."""

from __future__ import annotations

import gc
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kio.schema.add_partitions_to_txn.v3.request import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
)
from kio.schema.end_txn.v3.request import EndTxnRequest
from kio.schema.find_coordinator.v2.request import FindCoordinatorRequest
from kio.schema.init_producer_id.v1.request import InitProducerIdRequest
from kio.schema.list_offsets.v5.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kio.schema.list_transactions.v0.request import ListTransactionsRequest
from kio.schema.offset_fetch.v7.request import OffsetFetchRequest, OffsetFetchRequestTopic
from kio.schema.produce.v8.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.types import BrokerId, GroupId, ProducerId, TopicName, TransactionalId
from kio.static.primitive import Records, i8, i16, i32, i32Timedelta, i64

from bench.kafka import kafka_leader
from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from odradek.records import Record, build_batch
from tests.kafka.conftest import call, running_cluster, wait_for
from tests.kafka.test_confluent_kafka import create_topic


@pytest.fixture(scope="module")
def txn_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    """Three nodes with small internal topics (fast creation) and a 1 s abort scan."""
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "txn-cluster",
        overrides={
            "default.replication.factor": "3",
            "num.partitions": "1",
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.num.partitions": "3",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        },
    ) as cluster:
        yield cluster


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


_PRODUCERS: list[Producer] = []
"""The producers of the running test: destroyed at its end, while the cluster still runs (left
to the garbage collector, they would go on reconnecting to nodes already stopped)."""


@pytest.fixture(autouse=True)
def _producers_closed() -> Iterator[None]:
    yield
    _PRODUCERS.clear()
    gc.collect()


def transactional(bootstrap: str, transactional_id: str, **extra: Any) -> Producer:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, **extra}
    )
    _PRODUCERS.append(producer)
    producer.init_transactions(60)
    return producer


def read_all(bootstrap: str, topic: str, isolation: str, expect: int | None = None) -> list[bytes]:
    """Every record of partition 0 (until ``expect`` are read, else until 3 s pass with
    nothing new) with ``isolation.level`` ``isolation``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("reader"),
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    quiet_until = time.monotonic() + 3  # noqa: TID251
    deadline = time.monotonic() + 60  # noqa: TID251
    try:
        while time.monotonic() < deadline:  # noqa: TID251
            if expect is not None and len(values) >= expect:
                break
            if expect is None and time.monotonic() > quiet_until:  # noqa: TID251
                break
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(error)
            values.append(msg.value() or b"")
            quiet_until = time.monotonic() + 3  # noqa: TID251
    finally:
        consumer.close()
    return values


def listed(cluster: LocalCluster) -> dict[str, tuple[int, str]]:
    """Every node's ListTransactions (each lists the ids of the shards it leads)."""
    out: dict[str, tuple[int, str]] = {}
    for node in cluster.nodes:
        answer = call(
            node.kafka_address, ListTransactionsRequest(state_filters=(), producer_id_filters=())
        )
        assert answer.error_code == 0
        out.update(
            {
                str(t.transactional_id): (int(t.producer_id), str(t.transaction_state))
                for t in answer.transaction_states
            }
        )
    return out


def transaction_state(cluster: LocalCluster, transactional_id: str) -> str | None:
    found = listed(cluster).get(transactional_id)
    return None if found is None else found[1]


def test_committed_records_are_read_and_aborted_ones_are_not(txn_cluster: LocalCluster) -> None:
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic = unique("txn")
    create_topic(bootstrap, topic, partitions=1)
    producer = transactional(bootstrap, unique("app"))
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, value=f"committed-{i}".encode(), partition=0)
    producer.commit_transaction(60)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=f"aborted-{i}".encode(), partition=0)
    producer.flush(30)
    producer.abort_transaction(60)
    producer.begin_transaction()
    producer.produce(topic, value=b"committed-last", partition=0)
    producer.commit_transaction(60)

    committed = read_all(bootstrap, topic, "read_committed", expect=6)
    assert committed == [f"committed-{i}".encode() for i in range(5)] + [b"committed-last"]
    assert read_all(bootstrap, topic, "read_committed") == committed  # nothing else comes
    uncommitted = read_all(bootstrap, topic, "read_uncommitted", expect=9)
    assert [v for v in uncommitted if v.startswith(b"aborted")] == [
        f"aborted-{i}".encode() for i in range(3)
    ]


def test_an_open_transaction_holds_read_committed_readers_back(txn_cluster: LocalCluster) -> None:
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic = unique("lso")
    create_topic(bootstrap, topic, partitions=1)
    producer = transactional(bootstrap, unique("app"))
    producer.begin_transaction()
    producer.produce(topic, value=b"pending", partition=0)
    producer.flush(30)
    assert read_all(bootstrap, topic, "read_committed") == []
    assert read_all(bootstrap, topic, "read_uncommitted", expect=1) == [b"pending"]
    producer.commit_transaction(60)
    assert read_all(bootstrap, topic, "read_committed", expect=1) == [b"pending"]


def test_a_second_producer_fences_the_first(txn_cluster: LocalCluster) -> None:
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic = unique("fence")
    create_topic(bootstrap, topic, partitions=1)
    transactional_id = unique("app")
    first = transactional(bootstrap, transactional_id)
    first.begin_transaction()
    first.produce(topic, value=b"zombie", partition=0)
    first.flush(30)
    second = transactional(bootstrap, transactional_id)  # aborts the first's transaction
    second.begin_transaction()
    second.produce(topic, value=b"winner", partition=0)
    second.commit_transaction(60)
    with pytest.raises(KafkaException) as fenced:
        first.commit_transaction(30)
    error = fenced.value.args[0]
    assert error.fatal() or error.code() in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
    ), error
    assert read_all(bootstrap, topic, "read_committed", expect=1) == [b"winner"]
    assert read_all(bootstrap, topic, "read_committed") == [b"winner"]


def test_a_transaction_past_its_timeout_is_aborted(txn_cluster: LocalCluster) -> None:
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic = unique("timeout")
    create_topic(bootstrap, topic, partitions=1)
    tid = unique("app")
    producer = transactional(bootstrap, tid, **{"transaction.timeout.ms": 2000})
    producer.begin_transaction()
    producer.produce(topic, value=b"too-slow", partition=0)
    producer.flush(30)
    time.sleep(4)  # past the timeout: the coordinator's 1 s scan aborts it
    with pytest.raises(KafkaException) as told:
        producer.commit_transaction(30)
    assert told.value.args[0].code() in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
        KafkaError.INVALID_TXN_STATE,
    ), told.value.args[0]
    assert read_all(bootstrap, topic, "read_committed") == []


def test_the_coordinator_lists_and_describes_transactions(txn_cluster: LocalCluster) -> None:
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic = unique("listed")
    create_topic(bootstrap, topic, partitions=1)
    tid = unique("app")
    producer = transactional(bootstrap, tid)
    producer.begin_transaction()
    producer.produce(topic, value=b"x", partition=0)
    producer.flush(30)
    producer_id, state = wait_for(lambda: listed(txn_cluster).get(tid), "the id listed")
    assert state == "Ongoing" and producer_id >= 0
    producer.commit_transaction(60)
    assert wait_for(lambda: transaction_state(txn_cluster, tid) == "CompleteCommit", "commit")


def _coordinator_of(cluster: LocalCluster, transactional_id: str) -> str:
    def found() -> str | None:
        answer = call(
            cluster.nodes[0].kafka_address,
            FindCoordinatorRequest(key=transactional_id, key_type=i8(1)),
        )
        return f"{answer.host}:{answer.port}" if answer.error_code == 0 else None

    return wait_for(found, "the transaction coordinator")


def _txn_produce(
    cluster: LocalCluster, topic: str, tid: str, pid: int, epoch: int, seq: int
) -> int:
    batch = build_batch(
        [Record(None, f"seq-{seq}".encode())],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )
    answer = call(
        kafka_leader(cluster, topic),
        ProduceRequest(
            transactional_id=TransactionalId(tid),
            acks=i16(-1),
            timeout=i32Timedelta.parse(timedelta(seconds=30)),
            topic_data=(
                TopicProduceData(
                    name=TopicName(topic),
                    partition_data=(PartitionProduceData(index=i32(0), records=Records(batch)),),
                ),
            ),
        ),
    )
    return int(answer.responses[0].partition_responses[0].error_code)


def _read_committed_end(cluster: LocalCluster, topic: str) -> int:
    """ListOffsets LATEST with isolation read_committed: the last stable offset."""
    answer = call(
        kafka_leader(cluster, topic),
        ListOffsetsRequest(
            replica_id=BrokerId(-1),
            isolation_level=i8(1),
            topics=(
                ListOffsetsTopic(
                    name=TopicName(topic),
                    partitions=(
                        ListOffsetsPartition(
                            partition_index=i32(0), current_leader_epoch=i32(-1), timestamp=i64(-1)
                        ),
                    ),
                ),
            ),
        ),
    )
    (partition,) = answer.topics[0].partitions
    assert partition.error_code == 0
    return int(partition.offset)


def test_a_late_produce_cannot_open_a_hanging_transaction(txn_cluster: LocalCluster) -> None:
    """KIP-890's verification: a transactional produce to a partition that is not in the
    producer's open transaction (here: after its commit) is refused INVALID_TXN_STATE, so it
    never opens a transaction nobody will end (the last stable offset keeps up)."""
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic = unique("late")
    create_topic(bootstrap, topic, partitions=1)
    tid = unique("raw")
    coordinator = _coordinator_of(txn_cluster, tid)
    init = call(
        coordinator,
        InitProducerIdRequest(
            transactional_id=TransactionalId(tid),
            transaction_timeout=i32Timedelta.parse(timedelta(seconds=60)),
        ),
    )
    assert init.error_code == 0
    pid, epoch = int(init.producer_id), int(init.producer_epoch)
    # a partition never added: refused before anything is written
    assert _txn_produce(txn_cluster, topic, tid, pid, epoch, 0) == 48  # INVALID_TXN_STATE
    added = call(
        coordinator,
        AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=TransactionalId(tid),
            v3_and_below_producer_id=ProducerId(pid),
            v3_and_below_producer_epoch=i16(epoch),
            v3_and_below_topics=(
                AddPartitionsToTxnTopic(name=TopicName(topic), partitions=(i32(0),)),
            ),
        ),
    )
    assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
    assert _txn_produce(txn_cluster, topic, tid, pid, epoch, 0) == 0
    assert _read_committed_end(txn_cluster, topic) == 0  # held back by the open transaction
    ended = call(
        coordinator,
        EndTxnRequest(
            transactional_id=TransactionalId(tid),
            producer_id=ProducerId(pid),
            producer_epoch=i16(epoch),
            committed=True,
        ),
    )
    assert ended.error_code == 0
    wait_for(lambda: _read_committed_end(txn_cluster, topic) == 2 or None, "the commit marker")
    # the late (or retried) produce of the ended transaction: refused, nothing held back
    assert _txn_produce(txn_cluster, topic, tid, pid, epoch, 1) == 48
    assert _read_committed_end(txn_cluster, topic) == 2


# -- offsets in transactions (TxnOffsetCommit) ------------------------------------------------


def _etl_consumer(bootstrap: str, group: str, topic: str, protocol: str) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    return consumer


def _consume(consumer: Consumer, count: int) -> list[Any]:
    """The next ``count`` records (fails after 90 s)."""
    out: list[Any] = []
    deadline = time.monotonic() + 90  # noqa: TID251
    while len(out) < count:
        assert time.monotonic() < deadline, f"read {len(out)} of {count} records"  # noqa: TID251
        for msg in consumer.consume(count - len(out), 0.5):
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(error)
            out.append(msg)
    return out


def _committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    """The group's committed offsets of ``topic`` (librdkafka's OffsetFetch, require_stable
    as a read_committed consumer sends it)."""
    reader = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    try:
        found = reader.committed([TopicPartition(topic, p) for p in range(partitions)], 60)
    finally:
        reader.close()
    return [tp.offset for tp in found]


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_consume_transform_produce_commits_each_input_once(
    txn_cluster: LocalCluster, protocol: str
) -> None:
    """Exactly-once consume-transform-produce: each transaction writes its output and the
    consumer's positions (send_offsets_to_transaction: TxnOffsetCommit v3, with the member's
    id and generation, or KIP-848 member epoch, checked by the coordinator); after the loop the
    group's committed offsets are the input's end and the output holds every input record
    once; an aborted transaction's output and offsets are not committed."""
    bootstrap = txn_cluster.kafka_bootstrap_servers
    source, sink, group = unique("in"), unique("out"), unique("etl")
    create_topic(bootstrap, source, partitions=2)
    create_topic(bootstrap, sink, partitions=1)
    plain = Producer({"bootstrap.servers": bootstrap})
    for i in range(20):
        plain.produce(source, value=f"v{i}".encode(), partition=i % 2)
    plain.flush(30)

    consumer = _etl_consumer(bootstrap, group, source, protocol)
    producer = transactional(bootstrap, unique("etl-app"))
    done = 0
    try:
        while done < 20:
            batch = _consume(consumer, min(7, 20 - done))
            producer.begin_transaction()
            for msg in batch:
                producer.produce(sink, value=b"t-" + (msg.value() or b""), partition=0)
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()),
                consumer.consumer_group_metadata(),
                60,
            )
            producer.commit_transaction(60)
            done += len(batch)
        assert _committed(bootstrap, group, source, 2) == [10, 10]

        for i in range(20, 24):
            plain.produce(source, value=f"v{i}".encode(), partition=i % 2)
        plain.flush(30)
        batch = _consume(consumer, 4)
        producer.begin_transaction()
        for msg in batch:
            producer.produce(sink, value=b"aborted-" + (msg.value() or b""), partition=0)
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 60
        )
        producer.abort_transaction(60)
    finally:
        consumer.close()

    assert _committed(bootstrap, group, source, 2) == [10, 10]  # not the aborted 12, 12
    output = read_all(bootstrap, sink, "read_committed", expect=20)
    assert sorted(output) == sorted(f"t-v{i}".encode() for i in range(20))
    assert read_all(bootstrap, sink, "read_committed") == output  # nothing else comes


def _group_coordinator(cluster: LocalCluster, group: str) -> str:
    def found() -> str | None:
        answer = call(
            cluster.nodes[0].kafka_address, FindCoordinatorRequest(key=group, key_type=i8(0))
        )
        return f"{answer.host}:{answer.port}" if answer.error_code == 0 else None

    return wait_for(found, "the group coordinator")


def _fetch_offset(cluster: LocalCluster, group: str, topic: str, stable: bool) -> tuple[int, int]:
    """OffsetFetch v7 of ``topic``-0 at the group's coordinator: (error code, offset)."""
    answer = call(
        _group_coordinator(cluster, group),
        OffsetFetchRequest(
            group_id=GroupId(group),
            topics=(OffsetFetchRequestTopic(name=TopicName(topic), partition_indexes=(i32(0),)),),
            require_stable=stable,
        ),
    )
    assert answer.error_code == 0
    (partition,) = answer.topics[0].partitions
    return int(partition.error_code), int(partition.committed_offset)


def test_pending_offsets_are_unstable_until_the_commit(txn_cluster: LocalCluster) -> None:
    """KIP-447: while a transaction holds a group's offset, OffsetFetch with require_stable
    answers UNSTABLE_OFFSET_COMMIT (88) for it, and without it the last committed offset; the
    COMMIT marker (written after EndTxn is answered) makes the transaction's offset the
    committed one."""
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic, group = unique("stable"), unique("simple")
    create_topic(bootstrap, topic, partitions=1)
    metadata = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        producer = transactional(bootstrap, unique("app"))
        producer.begin_transaction()
        producer.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 5)], metadata.consumer_group_metadata(), 60
        )
        producer.commit_transaction(60)  # answered once PrepareCommit is written
        wait_for(
            lambda: _fetch_offset(txn_cluster, group, topic, stable=True) == (0, 5),
            "the COMMIT marker",
        )

        producer.begin_transaction()
        producer.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 9)], metadata.consumer_group_metadata(), 60
        )
        assert _fetch_offset(txn_cluster, group, topic, stable=True) == (88, -1)
        assert _fetch_offset(txn_cluster, group, topic, stable=False) == (0, 5)
        producer.commit_transaction(60)
        wait_for(
            lambda: _fetch_offset(txn_cluster, group, topic, stable=True) == (0, 9),
            "the COMMIT marker",
        )
    finally:
        metadata.close()


def _plain_commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    """A simple consumer's OffsetCommit of ``topic``-0 (no member, no transaction)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        (answer,) = consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
        assert answer.error is None, answer.error
    finally:
        consumer.close()


def test_delete_groups_deletes_a_transactions_pending_offsets(txn_cluster: LocalCluster) -> None:
    """DeleteGroups of a group without members while a transaction holds an offset of it
    (issue 32): the group is deleted, pending offsets included (Kafka's deleteAllOffsets), so
    the transaction's COMMIT does not bring the offset back. Before, the COMMIT made it the
    deleted group's offset again (5). The producer's next transaction can add offsets only once
    the first is complete, with every marker written. So once that next transaction is aborted
    and its marker is in, the first COMMIT's marker has been applied too."""
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic, group = unique("deleted"), unique("deleted-group")
    create_topic(bootstrap, topic, partitions=1)
    _plain_commit(bootstrap, group, topic, 3)
    metadata = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        producer = transactional(bootstrap, unique("app"))
        producer.begin_transaction()
        producer.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 5)], metadata.consumer_group_metadata(), 60
        )
        assert _fetch_offset(txn_cluster, group, topic, stable=True) == (88, -1)
        admin.delete_consumer_groups([group])[group].result(timeout=60)
        producer.commit_transaction(60)

        producer.begin_transaction()
        producer.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 7)], metadata.consumer_group_metadata(), 60
        )
        producer.abort_transaction(60)
        wait_for(
            lambda: _fetch_offset(txn_cluster, group, topic, stable=True)[0] != 88,
            "the ABORT marker",
        )
        assert _fetch_offset(txn_cluster, group, topic, stable=True) == (0, -1)
    finally:
        metadata.close()


def test_a_plain_commit_after_the_transactions_offset_is_kept_at_its_commit(
    txn_cluster: LocalCluster,
) -> None:
    """A consumer's plain OffsetCommit written after a transaction's offset of the same
    partition is the one kept when the transaction commits (issue 32; Kafka's
    replayEndTransactionMarker keeps the later record of __consumer_offsets). Before, the
    COMMIT marker made the transaction's 10 the committed offset."""
    bootstrap = txn_cluster.kafka_bootstrap_servers
    topic, group = unique("later"), unique("later-group")
    create_topic(bootstrap, topic, partitions=1)
    metadata = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        producer = transactional(bootstrap, unique("app"))
        producer.begin_transaction()
        producer.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 10)], metadata.consumer_group_metadata(), 60
        )
        _plain_commit(bootstrap, group, topic, 15)
        producer.commit_transaction(60)
        wait_for(
            lambda: _fetch_offset(txn_cluster, group, topic, stable=True)[0] != 88,
            "the COMMIT marker",
        )
        assert _fetch_offset(txn_cluster, group, topic, stable=True) == (0, 15)
    finally:
        metadata.close()
