"""The console's transactions: the transactions page, every transactional id of the cluster
(Kafka's ``listTransactions``, every node asked), each with its coordinator's description
(state, producer id and epoch, the open transaction's partitions and how long it has been
open); and a topic page's open transactions, each partition's producers with a transaction
open there (DescribeProducers at the leader: producer id, epoch, first offset, last batch).

Blocking; thread-safe (the Admin is).
"""

from __future__ import annotations

from dataclasses import dataclass

from odradek.admin import Admin
from odradek.client.types import TopicPartition
from odradek.errors import OdradekError

__all__ = [
    "OPEN_STATES",
    "OpenTransactionRow",
    "TransactionRow",
    "open_transactions",
    "transaction_rows",
]

OPEN_STATES = frozenset({"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})
"""The states of a transaction not yet complete (the coordinator keeps a completed one's start
time: only these are shown as open)."""


@dataclass(frozen=True, slots=True)
class TransactionRow:
    transactional_id: str
    state: str
    coordinator_id: int
    producer_id: int
    producer_epoch: int | None
    """None when the id could not be described (``error`` says why)."""
    partitions: tuple[TopicPartition, ...]
    duration_ms: int | None
    """How long the open transaction has been open; None with none open (a state not in
    :data:`OPEN_STATES`)."""
    timeout_ms: int | None
    error: str | None = None


def transaction_rows(admin: Admin, now_ms: int) -> list[TransactionRow]:
    """One row per transactional id, sorted; an id that cannot be described keeps its
    listing and says why."""
    rows = []
    for t in admin.list_transactions():
        try:
            d = admin.describe_transactions([t.transactional_id])[t.transactional_id]
        except OdradekError as exc:
            rows.append(
                TransactionRow(
                    t.transactional_id,
                    t.state,
                    t.coordinator_id,
                    t.producer_id,
                    None,
                    (),
                    None,
                    None,
                    f"{exc.name}: {exc.message}",
                )
            )
            continue
        start = d.transaction_start_time_ms
        rows.append(
            TransactionRow(
                t.transactional_id,
                d.state,
                d.coordinator_id,
                d.producer_id,
                d.producer_epoch,
                tuple(sorted(d.topic_partitions)),
                None if start is None or d.state not in OPEN_STATES else max(now_ms - start, 0),
                d.transaction_timeout_ms,
            )
        )
    return rows


@dataclass(frozen=True, slots=True)
class OpenTransactionRow:
    partition: int
    producer_id: int
    producer_epoch: int
    first_offset: int
    """The open transaction's first offset: the partition's last stable offset while it is the
    oldest open."""
    since_last_batch_ms: int | None
    """How long ago its last batch was written (None: the batch had no timestamp)."""


def open_transactions(
    admin: Admin, partitions: list[TopicPartition], now_ms: int
) -> tuple[tuple[OpenTransactionRow, ...], str | None]:
    """The open transactions of ``partitions`` (asked at their leaders), oldest first per
    partition; or none and the error that kept them from being asked."""
    if not partitions:
        return (), None
    try:
        states = admin.describe_producers(partitions)
    except OdradekError as exc:
        return (), f"{exc.name}: {exc.message}"
    rows = [
        OpenTransactionRow(
            tp.partition,
            p.producer_id,
            p.producer_epoch,
            p.current_transaction_start_offset,
            None if p.last_timestamp < 0 else max(now_ms - p.last_timestamp, 0),
        )
        for tp, state in states.items()
        for p in state.active_producers
        if p.current_transaction_start_offset is not None
    ]
    return tuple(sorted(rows, key=lambda r: (r.partition, r.first_offset))), None
