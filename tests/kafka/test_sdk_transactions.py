"""odradek's SDK transactional producer over gRPC, against a real three-node cluster: its
committed records are read by read_committed consumers (odradek's SDK consumer and
confluent-kafka's through the Kafka listeners) and its aborted ones are not (a read_uncommitted
consumer sees both); a second producer with the same transactional id fences the first (its
commit raises ProducerFencedError, its records are never read committed); a record refused for
good makes the transaction abortable, and the producer goes on after the abort; a
consume-transform-produce loop commits each step's output; an open transaction holds
read_committed readers (and their end offsets: lag, as the CLI shows it) back at the last stable
offset."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

import odradek
from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from odradek.cli import main
from odradek.client.errors import TransactionAbortableError, TransactionStateError
from odradek.errors import MessageTooLargeError, ProducerFencedError
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


def sdk_read_all(
    cluster: LocalCluster, topic: str, isolation: str, expect: int | None = None
) -> list[bytes | None]:
    """Every record of partition 0 read by odradek's consumer with ``isolation_level``
    ``isolation`` (until ``expect`` are read, else until 3 s pass with nothing new)."""
    tp = odradek.TopicPartition(topic, 0)
    values: list[bytes | None] = []
    with odradek.Consumer(
        cluster.bootstrap_servers,
        isolation_level=isolation,  # type: ignore[arg-type]
        fetch_max_wait_ms=200,
    ) as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        quiet_until = time.monotonic() + 3  # noqa: TID251
        deadline = time.monotonic() + 60  # noqa: TID251
        while time.monotonic() < deadline:  # noqa: TID251
            if expect is not None and len(values) >= expect:
                break
            if expect is None and time.monotonic() > quiet_until:  # noqa: TID251
                break
            records = consumer.poll(timeout_ms=200)
            if records:
                values.extend(r.value for r in records)
                quiet_until = time.monotonic() + 3  # noqa: TID251
    return values


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
    # odradek's own consumer, over gRPC
    assert sdk_read_all(txn_cluster, topic, "read_committed", expect=6) == committed
    assert sdk_read_all(txn_cluster, topic, "read_committed") == committed
    assert sdk_read_all(txn_cluster, topic, "read_uncommitted", expect=9) == uncommitted


def test_an_open_transaction_holds_read_committed_readers_back(txn_cluster: LocalCluster) -> None:
    topic = unique("sdk-lso")
    create_topic(txn_cluster.kafka_bootstrap_servers, topic, partitions=1)
    tp = odradek.TopicPartition(topic, 0)
    with sdk_producer(txn_cluster, unique("sdk-app")) as producer:
        producer.begin_transaction()
        producer.send(topic, b"pending", partition=0)
        producer.flush(30)
        assert sdk_read_all(txn_cluster, topic, "read_committed") == []
        assert sdk_read_all(txn_cluster, topic, "read_uncommitted", expect=1) == [b"pending"]
        with (
            odradek.Consumer(
                txn_cluster.bootstrap_servers, isolation_level="read_committed"
            ) as committed,
            odradek.Consumer(txn_cluster.bootstrap_servers) as uncommitted,
        ):
            committed.assign([tp])
            uncommitted.assign([tp])
            assert committed.end_offsets([tp]) == {tp: 0}  # the last stable offset
            assert uncommitted.end_offsets([tp]) == {tp: 1}  # the high watermark
            producer.commit_transaction(timeout=60)
            # the commit marker at offset 1: both ends after it
            assert wait_for(lambda: committed.end_offsets([tp]) == {tp: 2}, "the LSO moved")
            assert uncommitted.end_offsets([tp]) == {tp: 2}
    assert sdk_read_all(txn_cluster, topic, "read_committed", expect=1) == [b"pending"]


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
    assert sdk_read_all(txn_cluster, topic, "read_committed") == [b"winner"]
    assert wait_for(
        lambda: transaction_state(txn_cluster, transactional_id) == "CompleteCommit", "commit"
    )


def test_the_cli_measures_read_committed_lag_to_the_last_stable_offset(
    txn_cluster: LocalCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = unique("sdk-lag")
    group = unique("sdk-lag-group")
    create_topic(txn_cluster.kafka_bootstrap_servers, topic, partitions=1)
    tp = odradek.TopicPartition(topic, 0)
    bootstrap = txn_cluster.bootstrap_servers
    with sdk_producer(txn_cluster, unique("sdk-app")) as producer:
        producer.begin_transaction()
        for i in range(3):
            producer.send(topic, f"done-{i}".encode(), partition=0)
        producer.commit_transaction(timeout=60)  # offsets 0-2, its marker 3
        with odradek.Consumer(bootstrap, group_id=group) as consumer:
            consumer.commit({tp: odradek.OffsetAndMetadata(1)})
        producer.begin_transaction()
        producer.send(topic, b"open", partition=0)  # offset 4, its transaction open
        producer.flush(30)

        def describe(*extra: str) -> list[str]:
            code = main(["groups", "describe", group, "--bootstrap-server", bootstrap, *extra])
            out = capsys.readouterr().out.splitlines()
            assert code == 0, out
            return out[1].split()[:6]

        assert describe() == [group, topic, "0", "1", "5", "4"]
        assert describe("--isolation-level", "read_committed") == [group, topic, "0", "1", "4", "3"]
        code = main(
            [
                "consume",
                topic,
                "--isolation-level",
                "read_committed",
                "--bootstrap-server",
                bootstrap,
            ]
        )
        assert code == 0
        assert capsys.readouterr().out.splitlines() == [f"done-{i}" for i in range(3)]
        producer.abort_transaction(timeout=60)


def test_a_consume_transform_produce_loop(txn_cluster: LocalCluster) -> None:
    """Each step reads a batch of input, writes its transformation and the consumer's next
    offset in one transaction (send_offsets_to_transaction: TxnOffsetCommit at the group's
    coordinator) and commits it; a step that fails is aborted, its offsets with it, and done
    again: the output holds each input's transformation exactly once and the group's committed
    offset is the input's end."""
    kafka = txn_cluster.kafka_bootstrap_servers
    source, sink = unique("sdk-in"), unique("sdk-out")
    create_topic(kafka, source, partitions=1)
    create_topic(kafka, sink, partitions=1)
    bootstrap = txn_cluster.bootstrap_servers
    with odradek.Producer(bootstrap) as plain:
        plain.send_many(source, [f"in-{i}".encode() for i in range(6)], partition=0).result(30)
    group = unique("sdk-ctp")
    with (
        sdk_producer(txn_cluster, unique("sdk-ctp-app")) as producer,
        odradek.Consumer(
            bootstrap,
            group_id=group,
            isolation_level="read_committed",
            auto_offset_reset="earliest",
            max_poll_records=2,
            enable_auto_commit=False,
        ) as consumer,
    ):
        tp = odradek.TopicPartition(source, 0)
        consumer.assign([tp])
        failed_once = False
        done = 0
        while done < 6:
            records = consumer.poll(timeout_ms=500)
            if not records:
                continue
            producer.begin_transaction()
            for r in records:
                producer.send(sink, (r.value or b"").replace(b"in", b"out"), partition=0)
            producer.send_offsets_to_transaction(
                {tp: records[-1].offset + 1}, consumer.group_metadata()
            )
            if records[0].offset == 2 and not failed_once:
                failed_once = True  # the step fails: abort it and read its input again
                producer.flush(30)  # its output stored, to be skipped by read_committed
                producer.abort_transaction(timeout=60)
                kept = consumer.committed([tp]).get(tp)
                assert kept is None or kept.offset == 2  # the aborted step's offset is not kept
                consumer.seek(tp, records[0].offset)
                continue
            producer.commit_transaction(timeout=60)
            done = records[-1].offset + 1

        def committed() -> int | None:
            found = consumer.committed([tp]).get(tp)
            return None if found is None or found.offset != 6 else found.offset

        assert wait_for(committed, "the offsets committed with the last transaction") == 6
    expected = [f"out-{i}".encode() for i in range(6)]
    assert sdk_read_all(txn_cluster, sink, "read_committed", expect=6) == expected
    assert sdk_read_all(txn_cluster, sink, "read_committed") == expected
    assert read_all(kafka, sink, "read_committed", expect=6) == expected
    assert len(sdk_read_all(txn_cluster, sink, "read_uncommitted", expect=8)) == 8


def test_a_failed_record_makes_the_transaction_abortable(txn_cluster: LocalCluster) -> None:
    """A record the leader refuses for good (larger than the topic's max.message.bytes) fails
    its future, and the transaction can then only be aborted: commit raises
    TransactionAbortableError naming the cause; after the abort the producer goes on."""
    kafka = txn_cluster.kafka_bootstrap_servers
    topic = unique("sdk-abortable")
    create_topic(kafka, topic, partitions=1, **{"max.message.bytes": "2000"})
    with sdk_producer(txn_cluster, unique("sdk-app")) as producer:
        producer.begin_transaction()
        kept = producer.send(topic, b"before", partition=0)
        kept.result(timeout=30)  # its own batch, stored in the transaction
        too_large = producer.send(topic, b"x" * 10_000, partition=0)
        assert isinstance(too_large.exception(timeout=30), MessageTooLargeError)
        with pytest.raises(TransactionAbortableError) as refused:
            producer.commit_transaction(timeout=60)
        assert isinstance(refused.value.__cause__, MessageTooLargeError)
        producer.abort_transaction(timeout=60)
        producer.begin_transaction()
        producer.send(topic, b"after", partition=0)
        producer.commit_transaction(timeout=60)
    assert sdk_read_all(txn_cluster, topic, "read_committed", expect=1) == [b"after"]
    assert read_all(kafka, topic, "read_committed") == [b"after"]
