"""``odradek transactions find-hanging``: transactions a partition holds open that no
coordinator will end, as ``kafka-transactions.sh find-hanging`` finds them.

A hanging transaction keeps a partition's last stable offset (and every read_committed reader)
back for good: a transactional batch written without its partition in the producer's
transaction (before KIP-890's verification, or with it off), or one whose coordinator moved
on. Kafka's rule, kept here:

1. the candidates: each partition's active producers (DescribeProducers: at the node
   ``--broker-id`` for every partition it hosts, or at the leaders of ``--topic`` [and
   ``--partition``]) with a transaction open (a current transaction start offset) whose last
   batch is older than ``--max-transaction-timeout`` minutes (default 15: the largest
   ``transaction.max.timeout.ms`` a coordinator allows, after which it would have aborted);
2. ListTransactions with the candidates' producer ids: a producer id no coordinator lists is
   hanging;
3. DescribeTransactions of each id listed: hanging unless the coordinator has an open
   transaction (Ongoing, PrepareCommit, PrepareAbort, PrepareEpochFence) of that producer id
   and epoch that includes the partition.

The output is Kafka's columns: ``Topic Partition ProducerId ProducerEpoch CoordinatorEpoch
StartOffset LastTimestamp Duration(min)``. ``odradek transactions abort`` ends one (not yet
served: see docs/transactions.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from odradek.cli.common import table
from odradek.client.types import TopicPartition

if TYPE_CHECKING:
    from odradek.admin import Admin
    from odradek.client.txn_admin import ProducerState, TransactionDescription

__all__ = ["HEADER", "OPEN_STATES", "OpenTransaction", "find_hanging", "hanging_table"]

HEADER = (
    "Topic",
    "Partition",
    "ProducerId",
    "ProducerEpoch",
    "CoordinatorEpoch",
    "StartOffset",
    "LastTimestamp",
    "Duration(min)",
)
OPEN_STATES = frozenset({"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    """A transaction a partition holds open (its producer's state there)."""

    tp: TopicPartition
    producer: ProducerState


def candidates(
    producers: dict[TopicPartition, Sequence[ProducerState]], max_timeout_ms: int, now_ms: int
) -> list[OpenTransaction]:
    """Step 1: open transactions whose last batch is older than ``max_timeout_ms``."""
    return [
        OpenTransaction(tp, p)
        for tp in sorted(producers)
        for p in producers[tp]
        if p.current_transaction_start_offset is not None
        and now_ms - p.last_timestamp > max_timeout_ms
    ]


def is_hanging(open_: OpenTransaction, described: TransactionDescription | None) -> bool:
    """Steps 2 and 3: ``described`` is the coordinator's description of the transactional id
    that holds the producer id (None: no coordinator lists it)."""
    if described is None:
        return True
    return not (
        described.state in OPEN_STATES
        and described.producer_id == open_.producer.producer_id
        and described.producer_epoch == open_.producer.producer_epoch
        and open_.tp in described.topic_partitions
    )


def find_hanging(
    admin: Admin,
    *,
    broker_id: int | None,
    partitions: Iterable[TopicPartition] | None,
    max_timeout_ms: int,
    now_ms: int,
) -> list[OpenTransaction]:
    """The hanging transactions of ``partitions`` (asked at their leaders), or of every
    partition node ``broker_id`` hosts (asked there)."""
    if partitions is None:
        assert broker_id is not None
        cluster = admin.cluster_metadata()
        wanted = [
            TopicPartition(p.topic, p.partition)
            for t in cluster.topics.values()
            for p in t.partitions
            if broker_id in p.replicas
        ]
    else:
        wanted = list(partitions)
    if not wanted:
        return []
    states = admin.describe_producers(wanted, broker_id=broker_id)
    found = candidates({tp: s.active_producers for tp, s in states.items()}, max_timeout_ms, now_ms)
    if not found:
        return []
    listed = admin.list_transactions(producer_ids=sorted({o.producer.producer_id for o in found}))
    ids_by_producer = {t.producer_id: t.transactional_id for t in listed}
    described = admin.describe_transactions(sorted(set(ids_by_producer.values())))
    return [
        o
        for o in found
        if is_hanging(
            o,
            None
            if o.producer.producer_id not in ids_by_producer
            else described[ids_by_producer[o.producer.producer_id]],
        )
    ]


def hanging_table(found: Sequence[OpenTransaction], now_ms: int) -> list[str]:
    """Kafka's columns, one line per hanging transaction."""
    return table(
        HEADER,
        [
            [
                o.tp.topic,
                str(o.tp.partition),
                str(o.producer.producer_id),
                str(o.producer.producer_epoch),
                str(-1 if o.producer.coordinator_epoch is None else o.producer.coordinator_epoch),
                str(o.producer.current_transaction_start_offset),
                str(o.producer.last_timestamp),
                str(max(now_ms - o.producer.last_timestamp, 0) // 60_000),
            ]
            for o in found
        ],
    )
