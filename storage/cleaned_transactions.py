"""What compaction does with transactions (Kafka's ``CleanedTransactionMetadata`` and the
transactional half of ``LogCleaner.cleanInto``).

The cleaner reads the batches of a group of segments in offset order and, fed with the aborted
transactions overlapping each segment (:meth:`storage.log.Log.collect_aborted_transactions`),
tracks which producers are inside an aborted or a committed transaction:

* a transactional data batch of an aborted transaction is discarded (its records, whatever the
  offset map says; its keys are not mapped either), and the batch is remembered as observed;
* an ABORT marker is kept while this pass saw batches of its transaction (they are being
  removed now: a consumer reading what is left still needs the ``.txnindex`` entry, which is
  written to the cleaned segment's index); otherwise its transaction's data is gone and the
  marker may go too;
* a COMMIT marker may go once no batch of its transaction is left before it in this pass;
* a control batch with no record (already emptied) may go.

A marker that may go is not dropped at once: it first gets a delete horizon (now +
``delete.retention.ms``, attribute bit 6, as tombstones do), so that a consumer part-way through
the log still sees it; it is dropped by a pass after the horizon. Every batch of a producer
still active that holds its last data offset — or, with no data left, a marker of its current
epoch — is kept, emptied of its records if they may go, so the producer state rebuilt from the
log keeps its epoch and sequence (:func:`batch_retention`).

Pure state; one instance per group of segments cleaned. Not thread-safe.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from odradek.records import ControlRecordType
from storage.transaction_index import AbortedTxn

__all__ = [
    "BatchRetention",
    "CleanedTransactionMetadata",
    "LastRecord",
    "batch_retention",
]


@dataclass(frozen=True, slots=True)
class LastRecord:
    """An active producer's last data offset (-1 if none is left) and epoch (Kafka's
    ``LastRecord``)."""

    last_data_offset: int
    producer_epoch: int


class BatchRetention(Enum):
    """What to write for a batch (Kafka's ``RecordFilter.BatchRetention``)."""

    DELETE = "delete"
    """Drop the batch whole."""
    DELETE_EMPTY = "delete_empty"
    """Keep what its records' filter keeps; drop it if that is nothing."""
    RETAIN_EMPTY = "retain_empty"
    """Keep at least its header, with no records if none is kept."""


@dataclass(slots=True)
class _Aborted:
    txn: AbortedTxn
    observed: bool = False


class CleanedTransactionMetadata:
    """The transactions a cleaning pass is inside of, as it reads batches in offset order."""

    def __init__(self) -> None:
        self._pending: list[tuple[int, int, AbortedTxn]] = []  # heap by first offset
        self._seen: set[AbortedTxn] = set()
        self._ongoing_aborted: dict[int, _Aborted] = {}
        self._ongoing_committed: set[int] = set()
        self.retained_aborted: list[AbortedTxn] = []
        """The aborted transactions whose marker is kept with batches of them removed now:
        the entries of the cleaned segment's ``.txnindex``."""

    def add_aborted_transactions(self, aborted: Iterable[AbortedTxn]) -> None:
        """Add the aborted transactions overlapping the next segment to read (an entry seen
        before is ignored)."""
        for txn in aborted:
            if txn not in self._seen:
                self._seen.add(txn)
                heapq.heappush(self._pending, (txn.first_offset, len(self._seen), txn))

    def _consume_up_to(self, offset: int) -> None:
        pending = self._pending
        while pending and pending[0][0] <= offset:
            txn = heapq.heappop(pending)[2]
            self._ongoing_aborted.setdefault(txn.producer_id, _Aborted(txn))

    def on_batch_read(self, producer_id: int, last_offset: int, is_transactional: bool) -> bool:
        """A data batch was read; returns whether it belongs to an aborted transaction (its
        records may all go)."""
        self._consume_up_to(last_offset)
        if not is_transactional:
            return False
        aborted = self._ongoing_aborted.get(producer_id)
        if aborted is not None:
            aborted.observed = True
            return True
        self._ongoing_committed.add(producer_id)
        return False

    def on_control_batch_read(
        self, producer_id: int, last_offset: int, control_type: ControlRecordType | None
    ) -> bool:
        """A control batch was read (``control_type`` None: it has no record left); returns
        whether it may go (once its delete horizon has passed)."""
        self._consume_up_to(last_offset)
        if control_type is None:
            return True
        if control_type is ControlRecordType.ABORT:
            aborted = self._ongoing_aborted.pop(producer_id, None)
            if aborted is not None and aborted.observed:
                self.retained_aborted.append(aborted.txn)
                return False
            return True
        if control_type is ControlRecordType.COMMIT:
            if producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(producer_id)
                return False
            return True
        return False


def batch_retention(
    *,
    producer_id: int,
    producer_epoch: int,
    last_offset: int,
    is_control: bool,
    discard_records: bool,
    last_records: dict[int, LastRecord],
) -> BatchRetention:
    """Kafka's ``checkBatchRetention``: keep (if need be empty) the batch that holds an
    active producer's last data offset, or — none left — a marker of its epoch; drop a batch
    whose records may all go; otherwise let the record filter decide."""
    last = last_records.get(producer_id) if producer_id >= 0 else None
    if last is not None:
        if last.last_data_offset >= 0:
            if last.last_data_offset == last_offset:
                return BatchRetention.RETAIN_EMPTY
        elif is_control and producer_epoch == last.producer_epoch:
            return BatchRetention.RETAIN_EMPTY
    return BatchRetention.DELETE if discard_records else BatchRetention.DELETE_EMPTY
