"""Operating transactions, against a real three-node cluster: odradek's ``Admin``
(``list_transactions`` asking every node, with its state, producer id and duration filters;
``describe_transactions`` at the id's coordinator) and ``odradek transactions list|describe``
(kafka-transactions.sh's columns) show an open transaction made by confluent-kafka's
transactional producer; an unknown id is one line of error; ``describe_producers`` (the Admin
service's DescribeProducers, at the leader or a node given) shows its producer with the open
transaction's first offset, and after the commit none open and the marker's coordinator
epoch; ``odradek transactions find-hanging`` finds a transaction written with raw frames on a
cluster without KIP-890's verification (no AddPartitionsToTxn: no coordinator will end it), and
not an Ongoing one; ``odradek transactions abort --start-offset`` ends it (its ABORT marker
written at the leader, the last stable offset catches up)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from kio.schema.init_producer_id.v1.request import InitProducerIdRequest
from kio.schema.types import TransactionalId
from kio.static.primitive import i32Timedelta

import odradek
from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from odradek.cli import main
from odradek.errors import OdradekError
from tests.kafka.conftest import call, running_cluster, wait_for
from tests.kafka.test_confluent_kafka import create_topic
from tests.kafka.test_transactions import (
    _coordinator_of,
    _read_committed_end,
    _txn_produce,
    transaction_state,
    transactional,
)


@pytest.fixture(scope="module")
def txn_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    """Three nodes with small internal topics (fast creation)."""
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "txn-tools-cluster",
        overrides={
            "default.replication.factor": "3",
            "num.partitions": "1",
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.num.partitions": "3",
        },
    ) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def unverified_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    """Three nodes without KIP-890's verification: a transactional produce to a partition not
    in the producer's transaction is written (and hangs)."""
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "txn-hanging-cluster",
        overrides={
            "default.replication.factor": "3",
            "num.partitions": "1",
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.num.partitions": "3",
            "transaction.partition.verification.enable": "false",
        },
    ) as cluster:
        yield cluster


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_an_open_transaction_is_listed_and_described(
    txn_cluster: LocalCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    kafka = txn_cluster.kafka_bootstrap_servers
    grpc = txn_cluster.bootstrap_servers
    topic = unique("ops")
    create_topic(kafka, topic, partitions=1)
    tid = unique("app")
    producer = transactional(kafka, tid)
    producer.begin_transaction()
    producer.produce(topic, value=b"x", partition=0)
    producer.flush(30)
    wait_for(lambda: transaction_state(txn_cluster, tid) == "Ongoing", "the id Ongoing")

    with odradek.Admin(grpc) as admin:
        (listing,) = [t for t in admin.list_transactions() if t.transactional_id == tid]
        assert listing.state == "Ongoing" and listing.producer_id >= 0
        node_ids = {n.node_id for n in admin.describe_cluster().brokers}
        assert listing.coordinator_id in node_ids

        def ids(**filters: object) -> set[str]:
            return {t.transactional_id for t in admin.list_transactions(**filters)}  # type: ignore[arg-type]

        assert tid in ids(states=["Ongoing"])
        assert tid not in ids(states=["CompleteCommit", "Empty"])
        assert tid in ids(producer_ids=[listing.producer_id])
        assert tid not in ids(producer_ids=[listing.producer_id + 1])
        assert tid in ids(duration_ms=0)
        assert tid not in ids(duration_ms=3_600_000)  # not open an hour
        with pytest.raises(ValueError, match="Opening"):
            admin.list_transactions(states=["Opening"])

        described = admin.describe_transactions([tid])[tid]
        assert described.state == "Ongoing"
        assert described.producer_id == listing.producer_id
        assert described.coordinator_id == listing.coordinator_id
        assert described.topic_partitions == {odradek.TopicPartition(topic, 0)}
        assert described.transaction_start_time_ms is not None
        assert described.transaction_timeout_ms > 0
        with pytest.raises(OdradekError) as raised:
            admin.describe_transactions([unique("nobody")])
        assert raised.value.name == "TRANSACTIONAL_ID_NOT_FOUND"

        tp = odradek.TopicPartition(topic, 0)
        (open_,) = admin.describe_producers([tp])[tp].active_producers
        assert (open_.producer_id, open_.producer_epoch) == (
            listing.producer_id,
            described.producer_epoch,
        )
        assert open_.current_transaction_start_offset == 0
        leader = admin.describe_topics([topic])[topic].partitions[0].leader
        assert admin.describe_producers([tp], broker_id=leader)[tp].active_producers == (open_,)
        with pytest.raises(OdradekError) as raised:
            admin.describe_producers([odradek.TopicPartition(unique("missing"), 0)])
        assert raised.value.name == "UNKNOWN_TOPIC_OR_PARTITION"

    code, lines, _ = run(capsys, "transactions", "--bootstrap-server", grpc, "list")
    assert code == 0
    assert lines[0].split() == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    row = [line.split() for line in lines[1:] if line.split()[0] == tid]
    assert row == [[tid, str(listing.coordinator_id), str(listing.producer_id), "Ongoing"]]
    code, lines, _ = run(
        capsys, "transactions", "--bootstrap-server", grpc, "list", "--state", "CompleteCommit"
    )
    assert code == 0 and all(line.split()[0] != tid for line in lines[1:])

    code, lines, _ = run(
        capsys, "transactions", "--bootstrap-server", grpc, "describe", "--transactional-id", tid
    )
    assert code == 0
    assert lines[0].split() == [
        "CoordinatorId",
        "TransactionalId",
        "ProducerId",
        "ProducerEpoch",
        "TransactionState",
        "TransactionTimeoutMs",
        "CurrentTransactionStartTimeMs",
        "TransactionDurationMs",
        "TopicPartitions",
    ]
    cells = lines[1].split()
    assert cells[:5] == [
        str(listing.coordinator_id),
        tid,
        str(listing.producer_id),
        str(described.producer_epoch),
        "Ongoing",
    ]
    assert cells[6] == str(described.transaction_start_time_ms) and int(cells[7]) >= 0
    assert cells[8] == f"{topic}-0"

    code, lines, err = run(
        capsys,
        "transactions",
        "--bootstrap-server",
        grpc,
        "describe",
        "--transactional-id",
        "nobody-here",
    )
    assert code == 1 and lines == []
    assert err.count("\n") == 1
    assert err.startswith("odradek transactions describe: error: TRANSACTIONAL_ID_NOT_FOUND")

    producer.commit_transaction(60)
    wait_for(lambda: transaction_state(txn_cluster, tid) == "CompleteCommit", "the commit")
    with odradek.Admin(grpc) as admin:
        assert admin.describe_transactions([tid])[tid].state == "CompleteCommit"
        tp = odradek.TopicPartition(topic, 0)
        (done,) = admin.describe_producers([tp])[tp].active_producers
        assert done.current_transaction_start_offset is None
        assert done.coordinator_epoch is not None  # of the COMMIT marker


def test_find_hanging_finds_a_transaction_no_coordinator_will_end(
    unverified_cluster: LocalCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = unverified_cluster
    kafka, grpc = cluster.kafka_bootstrap_servers, cluster.bootstrap_servers
    hung, fine = unique("hung"), unique("fine")
    create_topic(kafka, hung, partitions=1)
    create_topic(kafka, fine, partitions=1)
    # a transaction the coordinator knows: Ongoing with its partition, not hanging
    producer = transactional(kafka, unique("app"))
    producer.begin_transaction()
    producer.produce(fine, value=b"x", partition=0)
    producer.flush(30)
    # raw frames: InitProducerId, then a transactional batch without AddPartitionsToTxn
    tid = unique("raw")
    init = call(
        _coordinator_of(cluster, tid),
        InitProducerIdRequest(
            transactional_id=TransactionalId(tid),
            transaction_timeout=i32Timedelta.parse(timedelta(seconds=60)),
        ),
    )
    assert init.error_code == 0
    pid, epoch = int(init.producer_id), int(init.producer_epoch)
    assert _txn_produce(cluster, hung, tid, pid, epoch, 0) == 0  # written: verification is off
    assert _read_committed_end(cluster, hung) == 0  # held back for good
    assert transaction_state(cluster, tid) == "Empty"  # the coordinator has no transaction

    with odradek.Admin(grpc) as admin:
        leader = admin.describe_topics([hung])[hung].partitions[0].leader
    expected = [hung, "0", str(pid), str(epoch), "-1", "0"]
    for where in (
        ["--broker-id", str(leader)],
        ["--topic", hung],
        ["--topic", hung, "--partition", "0"],
    ):
        code, lines, err = run(
            capsys,
            "transactions",
            "--bootstrap-server",
            grpc,
            "find-hanging",
            *where,
            "--max-transaction-timeout",
            "0",
        )
        assert code == 0, err
        assert lines[0].split() == [
            "Topic",
            "Partition",
            "ProducerId",
            "ProducerEpoch",
            "CoordinatorEpoch",
            "StartOffset",
            "LastTimestamp",
            "Duration(min)",
        ]
        assert [line.split()[:6] for line in lines[1:]] == [expected], where
    # the Ongoing transaction is not hanging, even with no age required
    code, lines, _ = run(
        capsys,
        "transactions",
        "--bootstrap-server",
        grpc,
        "find-hanging",
        "--topic",
        fine,
        "--max-transaction-timeout",
        "0",
    )
    assert code == 0 and lines[1:] == []
    code, lines, err = run(capsys, "transactions", "--bootstrap-server", grpc, "find-hanging")
    assert code == 1 and err.count("\n") == 1 and "--broker-id or --topic" in err
    # abort ends it: the ABORT marker (offset 1) lets the last stable offset catch up
    code, lines, err = run(
        capsys,
        "transactions",
        "--bootstrap-server",
        grpc,
        "abort",
        "--topic",
        hung,
        "--partition",
        "0",
        "--start-offset",
        "0",
    )
    assert (code, lines, err) == (0, [], "")
    assert wait_for(lambda: _read_committed_end(cluster, hung) == 2, "the LSO past the abort")
    code, lines, _ = run(
        capsys,
        "transactions",
        "--bootstrap-server",
        grpc,
        "find-hanging",
        "--topic",
        hung,
        "--max-transaction-timeout",
        "0",
    )
    assert code == 0 and lines[1:] == []
    with odradek.Admin(grpc) as admin:
        tp = odradek.TopicPartition(hung, 0)
        (aborted,) = admin.describe_producers([tp])[tp].active_producers
        assert aborted.current_transaction_start_offset is None
    code, _, err = run(
        capsys,
        "transactions",
        "--bootstrap-server",
        grpc,
        "abort",
        "--topic",
        hung,
        "--partition",
        "0",
        "--start-offset",
        "0",
    )
    assert code == 1 and err.count("\n") == 1 and "starts at offset 0" in err
    producer.abort_transaction(60)
