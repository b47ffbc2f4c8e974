"""A partition's open and recently completed transactions: what its last stable offset is
made of (the ``ongoingTxns`` / ``unreplicatedTxns`` part of Kafka's ``ProducerStateManager``).

A transaction starts on a partition with its producer's first transactional batch there
(:class:`StartedTxn`, at that batch's first offset) and completes with the producer's COMMIT or
ABORT marker (:class:`CompletedTxn`, ``last_offset`` the marker's offset). Events are applied in
log order, one batch at a time, as Kafka's recovery does (``LogSegment.recover``), so a leader,
its followers and a recovered copy of the log compute the same entries whatever batches their
appends grouped.

* The *first unstable offset* is the first offset of the oldest transaction still open, or of
  one completed by a marker the high watermark has not yet passed (Kafka's
  ``unreplicatedTxns``): until the marker is committed a read_committed consumer must not read
  past the transaction's start.
* Completing an aborted transaction yields its :class:`~storage.transaction_index.AbortedTxn`
  with the last stable offset at that point: the first offset of the oldest transaction of
  *another* producer still open, else the marker's offset + 1 (Kafka's ``lastStableOffset``).

Pure in-memory state, rebuilt with the producer state (snapshots hold each producer's
``current_txn_first_offset``). Not thread-safe: the owning log serialises every call.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from storage.transaction_index import AbortedTxn

__all__ = ["CompletedTxn", "StartedTxn", "TransactionState", "TxnEvent"]


@dataclass(frozen=True, slots=True)
class StartedTxn:
    """A producer's first transactional batch on the partition since its last marker."""

    producer_id: int
    first_offset: int


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A producer's transaction ended by a marker (Kafka's ``CompletedTxn``)."""

    producer_id: int
    first_offset: int
    last_offset: int
    """The marker's offset."""
    is_aborted: bool


TxnEvent = StartedTxn | CompletedTxn


class TransactionState:
    """The open transactions (by first offset, oldest first) and the completed ones whose
    marker is not yet below the high watermark."""

    def __init__(self) -> None:
        # first offset -> producer id; appends come in offset order, so insertion order is
        # offset order (load() sorts)
        self._ongoing: dict[int, int] = {}
        self._unreplicated: dict[int, CompletedTxn] = {}

    @property
    def ongoing(self) -> dict[int, int]:
        """First offset → producer id of each open transaction, oldest first (a copy)."""
        return dict(self._ongoing)

    @property
    def unreplicated(self) -> list[CompletedTxn]:
        """Completed transactions whose marker the high watermark has not passed."""
        return list(self._unreplicated.values())

    def load(self, ongoing: Iterable[tuple[int, int]]) -> None:
        """Start afresh with these ``(producer_id, first_offset)`` open transactions (from a
        producer snapshot)."""
        self._unreplicated.clear()
        self._ongoing = {first: pid for pid, first in sorted(ongoing, key=lambda t: t[1])}

    def clear(self) -> None:
        self._ongoing.clear()
        self._unreplicated.clear()

    def apply(self, events: Iterable[TxnEvent]) -> list[AbortedTxn]:
        """Apply events in log order; returns the aborted transactions completed, each with
        the last stable offset after it (for the ``.txnindex``)."""
        aborted: list[AbortedTxn] = []
        for event in events:
            if isinstance(event, StartedTxn):
                self._ongoing[event.first_offset] = event.producer_id
                continue
            if event.is_aborted:
                aborted.append(
                    AbortedTxn(
                        event.producer_id,
                        event.first_offset,
                        event.last_offset,
                        self._last_stable_offset(event),
                    )
                )
            self._ongoing.pop(event.first_offset, None)
            self._unreplicated[event.first_offset] = event
        return aborted

    def _last_stable_offset(self, completed: CompletedTxn) -> int:
        for first, pid in self._ongoing.items():
            if pid != completed.producer_id:
                return first
        return completed.last_offset + 1

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Forget completed transactions whose marker is below ``high_watermark``."""
        if self._unreplicated:
            self._unreplicated = {
                first: txn
                for first, txn in self._unreplicated.items()
                if txn.last_offset >= high_watermark
            }

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open or unreplicated transaction, or ``None``."""
        candidates = []
        if self._ongoing:
            candidates.append(next(iter(self._ongoing)))
        if self._unreplicated:
            candidates.append(min(self._unreplicated))
        return min(candidates) if candidates else None

    def remove_producers(self, producer_ids: Iterable[int]) -> None:
        """Forget the open transactions of these producers (they left the producer state)."""
        gone = set(producer_ids)
        if gone:
            self._ongoing = {f: p for f, p in self._ongoing.items() if p not in gone}
