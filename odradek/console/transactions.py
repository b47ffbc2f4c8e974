"""The console's transactions page: every transactional id of the cluster (Kafka's
``listTransactions``, every node asked), each with its coordinator's description (state,
producer id and epoch, the open transaction's partitions and how long it has been open).

Blocking; thread-safe (the Admin is).
"""

from __future__ import annotations

from dataclasses import dataclass

from odradek.admin import Admin
from odradek.client.types import TopicPartition
from odradek.errors import OdradekError

__all__ = ["OPEN_STATES", "TransactionRow", "transaction_rows"]

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
