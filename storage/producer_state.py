"""Idempotent and transactional producers' state per partition, and its ``.snapshot`` files.

Kafka's ``ProducerStateEntry``, ``ProducerAppendInfo`` and ``ProducerStateManager``
(``storage/.../internals/log/``), for idempotent producers (KIP-98, KIP-360). For each producer
id that wrote to the partition the log keeps its epoch and the metadata of its last five
batches (first/last sequence, first/last offset, max timestamp), enough to tell a retried
batch from a new one:

* on the leader (origin ``CLIENT``) each batch with a producer id is checked in this order:
  an exact duplicate (same epoch, same first and last sequence) of one of the cached batches
  is not appended and is answered with the original offsets; an epoch below the stored one
  is ``INVALID_PRODUCER_EPOCH``; a new epoch must start at sequence 0; in the same epoch the
  first sequence must follow the last one (``2**31 - 1`` wraps to 0), else
  ``OUT_OF_ORDER_SEQUENCE_NUMBER``. A producer the partition has no state for (new, expired,
  or whose batches retention removed) is accepted at any sequence, as Kafka does since
  KIP-360: ``UNKNOWN_PRODUCER_ID`` is never returned.
* followers and recovery (origin ``REPLICATION``) apply batches without any check, so that a
  follower's state is ready when it becomes leader.
* the broker's own appends (origin ``COORDINATOR``: transaction markers, and later a
  coordinator's records) are checked for their epoch only, not their sequence.

Transactions (KIP-98): a producer's first transactional batch after its last marker starts its
transaction on the partition (``current_txn_first_offset``); its COMMIT or ABORT control batch
ends it (:mod:`storage.transaction_state` keeps the open ones and turns aborts into
``.txnindex`` entries). Checked as Kafka's ``ProducerAppendInfo`` does:

* a non-transactional batch while the producer's transaction is open is ``INVALID_TXN_STATE``
  (from a client or the coordinator; a follower or recovery logs it and keeps the transaction
  open);
* a marker whose coordinator epoch is below the producer's stored one is
  ``TRANSACTION_COORDINATOR_FENCED`` (logged, and applied, by a follower or recovery); a marker
  of an epoch below the producer's is ``INVALID_PRODUCER_EPOCH`` likewise;
* a marker ends the transaction (and moves the producer to the marker's epoch, forgetting its
  batches if that is new), records the coordinator epoch, and completes a transaction only if
  one was open (a marker for a producer with no data here changes no offset);
* a control batch of a type this version does not know, or with no record (compaction empties
  the marker it keeps for an active producer), changes nothing but a newer producer epoch,
  which it records (Kafka skips it whole and so forgets the epoch).

On-disk layout: ``<20-digit offset>.snapshot`` in the partition directory holds the state of
every producer for the offsets below that offset (Kafka's ``ProducerSnapshot`` schema,
version 1, big-endian)::

    version int16 (=1) | crc uint32 (CRC-32C of everything after it) | count int32
    count * (producer_id int64, epoch int16, last_sequence int32, last_offset int64,
             offset_delta int32, timestamp int64, coordinator_epoch int32,
             current_txn_first_offset int64)

Only each producer's last batch is saved, so after a restart duplicates are detected for that
batch only. ``coordinator_epoch`` is the last marker's (-1 before any) and
``current_txn_first_offset`` the open transaction's first offset (-1 for none): loading a
snapshot reopens those transactions. Crash policy: a snapshot is written in place, fsynced
when the caller asks (the log does at close, not at a roll); a torn or corrupt one fails its
CRC when read, is deleted, and loading falls back to an older snapshot (and the log replays the
batches after it).

Not thread-safe: the owning :class:`storage.log.Log` serialises every call under its lock.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import NamedTuple

import crc32c

from odradek.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from odradek.records import (
    NO_PRODUCER_EPOCH,
    NO_SEQUENCE,
    ControlRecordType,
    EndTransactionMarker,
    RecordBatch,
    end_txn_marker_of,
)
from odradek.records.batch import Buffer
from storage.transaction_index import AbortedTxn
from storage.transaction_state import CompletedTxn, StartedTxn, TransactionState, TxnEvent

__all__ = [
    "INT32_MAX",
    "NUM_BATCHES_TO_RETAIN",
    "SNAPSHOT_SUFFIX",
    "SNAPSHOT_VERSION",
    "AppendAnalysis",
    "AppendOrigin",
    "BatchMetadata",
    "CorruptSnapshotError",
    "ProducerAppendInfo",
    "ProducerBatch",
    "ProducerStateEntry",
    "ProducerStateManager",
    "decode_snapshot",
    "decrement_sequence",
    "encode_snapshot",
    "increment_sequence",
    "marker_at",
    "read_snapshot",
    "snapshot_file",
    "snapshot_offsets",
    "write_snapshot",
]

log = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5
"""Batches remembered per producer: the client keeps at most 5 in flight per partition."""
INT32_MAX = 2**31 - 1
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_HEADER = struct.Struct(">hIi")  # version, crc, entry count
_ENTRY = struct.Struct(">qhiqiqiq")
_ENTRIES_OFFSET = 6  # the CRC covers the bytes from here (Kafka's PRODUCER_ENTRIES_OFFSET)


class CorruptSnapshotError(Exception):
    """A ``.snapshot`` file with a bad version, CRC or length (Kafka's
    ``CorruptSnapshotException``): it is deleted and an older one is used."""


class AppendOrigin(Enum):
    """Who appends: a client through the leader (validated), the broker's own coordinator
    through the leader (epochs validated, not sequences), or replication/recovery (not)."""

    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLICATION = "replication"


def increment_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment`` wrapping past ``2**31 - 1`` to 0 (Kafka's
    ``DefaultRecordBatch.incrementSequence``)."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    """``sequence - decrement`` wrapping below 0 to ``2**31 - 1``."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """One appended batch of a producer (Kafka's ``BatchMetadata``)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    """``last_offset - first_offset``; also ``last_seq - first_seq`` (modulo the wrap)."""
    timestamp: int
    """The batch's max timestamp."""

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(frozen=True, slots=True)
class ProducerStateEntry:
    """What a partition knows of one producer id: its epoch and its last batches."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: tuple[BatchMetadata, ...] = ()
    """The last (at most :data:`NUM_BATCHES_TO_RETAIN`) batches of ``producer_epoch``, oldest
    first."""
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    """The max timestamp of the last batch: what expiration compares with."""
    current_txn_first_offset: int = -1

    @property
    def is_empty(self) -> bool:
        return not self.batches

    @property
    def first_seq(self) -> int:
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def first_data_offset(self) -> int:
        return self.batches[0].first_offset if self.batches else -1

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def with_batch(
        self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int
    ) -> ProducerStateEntry:
        """This entry after one more batch: a new epoch forgets the old epoch's batches, and
        only the newest :data:`NUM_BATCHES_TO_RETAIN` are kept."""
        kept = self.batches if epoch == self.producer_epoch else ()
        batch = BatchMetadata(last_seq, last_offset, offset_delta, timestamp)
        return replace(
            self,
            producer_epoch=epoch,
            batches=(*kept, batch)[-NUM_BATCHES_TO_RETAIN:],
            last_timestamp=timestamp,
        )

    def with_marker(self, epoch: int, coordinator_epoch: int, timestamp: int) -> ProducerStateEntry:
        """This entry after a transaction marker of ``epoch``: no open transaction, the
        marker's coordinator epoch and time; a new epoch forgets the old epoch's batches."""
        return replace(
            self,
            producer_epoch=epoch,
            batches=self.batches if epoch == self.producer_epoch else (),
            coordinator_epoch=coordinator_epoch,
            last_timestamp=timestamp,
            current_txn_first_offset=-1,
        )

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """The cached batch with exactly these sequences in this epoch, if any."""
        if epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None


class ProducerBatch(NamedTuple):
    """The producer fields of one batch about to be appended, with its offsets."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    first_offset: int
    last_offset: int
    max_timestamp: int
    is_transactional: bool = False
    is_control: bool = False
    marker: EndTransactionMarker | None = None
    """A control batch's end-transaction marker (``None`` for an unknown control type or a
    control batch with no record: skipped)."""

    @property
    def last_sequence(self) -> int:
        return increment_sequence(self.base_sequence, self.last_offset - self.first_offset)


def marker_at(buf: Buffer, position: int) -> EndTransactionMarker | None:
    """The end-transaction marker of the control batch at ``position`` in ``buf``, or
    ``None`` for a control type this version does not know or a control batch with no
    record. Raises ``CorruptRecordError`` for a malformed control record."""
    batch = RecordBatch(buf, position)
    if batch.records_count <= 0:
        return None
    return end_txn_marker_of(batch)


class ProducerAppendInfo:
    """The state one producer will have after the batches of one append (Kafka's
    ``ProducerAppendInfo``): validated batch by batch against the stored entry."""

    def __init__(self, current: ProducerStateEntry, origin: AppendOrigin, partition: str) -> None:
        self.current = current
        self.updated = current
        self._origin = origin
        self._partition = partition

    def append(self, batch: ProducerBatch, events: list[TxnEvent]) -> None:
        """Check ``batch`` and add it to the updated entry; a transaction it starts or ends is
        added to ``events``.

        Raises ``InvalidProducerEpochError`` (epoch below the stored one; not for origin
        REPLICATION), ``OutOfOrderSequenceError`` (a new epoch not starting at 0, or a gap;
        origin CLIENT only), ``InvalidTxnStateError`` (a non-transactional batch in an open
        transaction) or ``TransactionCoordinatorFencedError`` (a marker from an older
        coordinator epoch); the last two not for origin REPLICATION.
        """
        if batch.is_control:
            if batch.marker is not None:
                self._append_marker(batch, batch.marker, events)
            elif batch.producer_epoch > self.updated.producer_epoch:
                # an emptied marker (compaction keeps an active producer's last one as a bare
                # header) still carries the producer's epoch
                self.updated = replace(
                    self.updated, producer_epoch=batch.producer_epoch, batches=()
                )
            return
        epoch, first_seq = batch.producer_epoch, batch.base_sequence
        if self._origin is not AppendOrigin.REPLICATION:
            self._check_epoch(epoch, batch.first_offset)
        else:
            self._warn_epoch(epoch, batch.first_offset)
        if self._origin is AppendOrigin.CLIENT:
            self._check_sequence(epoch, first_seq, batch.first_offset)
        updated = self.updated.with_batch(
            epoch,
            batch.last_sequence,
            batch.last_offset,
            batch.last_offset - batch.first_offset,
            batch.max_timestamp,
        )
        txn_open = updated.current_txn_first_offset >= 0
        if txn_open and not batch.is_transactional:
            message = (
                f"expected a transactional write from producer {updated.producer_id} at "
                f"offset {batch.first_offset} in {self._partition}: its transaction opened at "
                f"{updated.current_txn_first_offset} is not ended"
            )
            if self._origin is not AppendOrigin.REPLICATION:
                raise InvalidTxnStateError(message)
            log.warning("%s", message)
        elif not txn_open and batch.is_transactional:
            updated = replace(updated, current_txn_first_offset=batch.first_offset)
            events.append(StartedTxn(updated.producer_id, batch.first_offset))
        self.updated = updated

    def _append_marker(
        self, batch: ProducerBatch, marker: EndTransactionMarker, events: list[TxnEvent]
    ) -> None:
        epoch, offset = batch.producer_epoch, batch.first_offset
        current = self.updated
        if self._origin is not AppendOrigin.REPLICATION:
            self._check_epoch(epoch, offset)
        else:
            self._warn_epoch(epoch, offset)
        if current.coordinator_epoch > marker.coordinator_epoch:
            message = (
                f"invalid coordinator epoch for producer {current.producer_id} at offset "
                f"{offset} in {self._partition}: {marker.coordinator_epoch} is older than the "
                f"last known coordinator epoch {current.coordinator_epoch}"
            )
            if self._origin is not AppendOrigin.REPLICATION:
                raise TransactionCoordinatorFencedError(message)
            log.info("%s", message)
        if current.current_txn_first_offset >= 0:
            events.append(
                CompletedTxn(
                    current.producer_id,
                    current.current_txn_first_offset,
                    offset,
                    marker.control_type is ControlRecordType.ABORT,
                )
            )
        self.updated = current.with_marker(epoch, marker.coordinator_epoch, batch.max_timestamp)

    def _warn_epoch(self, epoch: int, offset: int) -> None:
        if epoch < self.updated.producer_epoch:
            log.warning(
                "producer %d at offset %d in %s has epoch %d, below the last seen %d",
                self.updated.producer_id,
                offset,
                self._partition,
                epoch,
                self.updated.producer_epoch,
            )

    def _check_epoch(self, epoch: int, offset: int) -> None:
        current = self.updated.producer_epoch
        if epoch < current:
            raise InvalidProducerEpochError(
                f"epoch of producer {self.updated.producer_id} at offset {offset} in "
                f"{self._partition} is {epoch}, below the last seen epoch {current}"
            )

    def _check_sequence(self, epoch: int, first_seq: int, offset: int) -> None:
        pid = self.updated.producer_id
        if epoch != self.updated.producer_epoch:
            if first_seq != 0 and self.updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"invalid sequence number for new epoch {epoch} of producer {pid} at offset "
                    f"{offset} in {self._partition}: {first_seq} (expected 0; current epoch "
                    f"{self.updated.producer_epoch})"
                )
            return
        if not self.updated.is_empty:
            last_seq = self.updated.last_seq
        elif epoch == self.current.producer_epoch:
            last_seq = self.current.last_seq
        else:
            last_seq = NO_SEQUENCE
        # No stored epoch (all its batches gone to retention or DeleteRecords): any sequence.
        if self.current.producer_epoch == NO_PRODUCER_EPOCH or _in_sequence(last_seq, first_seq):
            return
        raise OutOfOrderSequenceError(
            f"out of order sequence number for producer {pid} at offset {offset} in "
            f"{self._partition}: {first_seq} (incoming), {last_seq} (current end sequence)"
        )


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class AppendAnalysis(NamedTuple):
    """The outcome of validating one append: the producers' updated entries and the
    transactions it starts and ends (in log order), or the cached batch it duplicates (then
    nothing is appended and nothing changes)."""

    updated: Mapping[int, ProducerStateEntry]
    duplicate: BatchMetadata | None
    events: tuple[TxnEvent, ...] = ()


# -- snapshot files --
def snapshot_file(directory: Path, offset: int) -> Path:
    """``<dir>/<20-digit offset>.snapshot``."""
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def snapshot_offsets(directory: Path) -> list[int]:
    """The offsets of the snapshot files in ``directory``, ascending."""
    found = []
    for path in directory.iterdir():
        name = path.name
        if name.endswith(SNAPSHOT_SUFFIX) and name[:20].isdigit() and len(name) == 29:
            found.append(int(name[:20]))
    return sorted(found)


def encode_snapshot(entries: Iterable[ProducerStateEntry]) -> bytes:
    """The bytes of a snapshot of ``entries`` (see the module docstring)."""
    body = bytearray()
    count = 0
    for e in entries:
        body += _ENTRY.pack(
            e.producer_id,
            e.producer_epoch,
            e.last_seq,
            e.last_data_offset,
            e.last_offset_delta,
            e.last_timestamp,
            e.coordinator_epoch,
            e.current_txn_first_offset,
        )
        count += 1
    covered = struct.pack(">i", count) + bytes(body)
    return struct.pack(">hI", SNAPSHOT_VERSION, crc32c.crc32c(covered)) + covered


def decode_snapshot(data: bytes) -> list[ProducerStateEntry]:
    """The entries of a snapshot's bytes. Raises :class:`CorruptSnapshotError`."""
    if len(data) < _HEADER.size:
        raise CorruptSnapshotError(f"snapshot of {len(data)} bytes is shorter than its header")
    version, crc, count = _HEADER.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"snapshot has unknown version {version}")
    computed = crc32c.crc32c(data[_ENTRIES_OFFSET:])
    if crc != computed:
        raise CorruptSnapshotError(f"snapshot CRC {crc} does not match the computed {computed}")
    if count < 0 or len(data) != _HEADER.size + count * _ENTRY.size:
        raise CorruptSnapshotError(f"snapshot of {len(data)} bytes cannot hold {count} entries")
    out = []
    for i in range(count):
        pid, epoch, seq, offset, delta, ts, coord, txn = _ENTRY.unpack_from(
            data, _HEADER.size + i * _ENTRY.size
        )
        batches = (BatchMetadata(seq, offset, delta, ts),) if offset >= 0 else ()
        out.append(ProducerStateEntry(pid, epoch, batches, coord, ts, txn))
    return out


def write_snapshot(path: Path, entries: Iterable[ProducerStateEntry], *, sync: bool = True) -> None:
    """Write a snapshot file (replacing one of that name). Raises ``OSError``."""
    data = encode_snapshot(entries)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def read_snapshot(path: Path) -> list[ProducerStateEntry]:
    """Read a snapshot file. Raises :class:`CorruptSnapshotError` or ``OSError``."""
    return decode_snapshot(path.read_bytes())


class ProducerStateManager:
    """The producer entries of one partition and its snapshot files (Kafka's
    ``ProducerStateManager``).

    ``map_end_offset`` is the offset up to which (exclusive) the state reflects the log.
    Not thread-safe: the log calls it under its lock.
    """

    def __init__(self, directory: Path, producer_id_expiration_ms: int) -> None:
        self._dir = directory
        self._partition = directory.name
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._producers: dict[int, ProducerStateEntry] = {}
        self.map_end_offset = 0
        self._snapshots = snapshot_offsets(directory) if directory.exists() else []
        self.transactions = TransactionState()
        """The open and unreplicated transactions (the last stable offset's inputs)."""

    # -- reading the state --
    @property
    def producers(self) -> Mapping[int, ProducerStateEntry]:
        return self._producers

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    @property
    def snapshots(self) -> list[int]:
        """Offsets of the snapshot files, ascending."""
        return list(self._snapshots)

    def latest_snapshot_offset(self) -> int | None:
        return self._snapshots[-1] if self._snapshots else None

    # -- appends --
    def analyze(self, batches: Iterable[ProducerBatch], origin: AppendOrigin) -> AppendAnalysis:
        """Validate the producer batches of one append, control batches included (batches
        with producer id -1 must be left out by the caller). Pure: nothing changes until
        :meth:`apply`.

        For origin CLIENT, the first batch that duplicates a cached one ends the analysis
        (Kafka answers the whole append with it). Raises as :meth:`ProducerAppendInfo.append`.
        """
        infos: dict[int, ProducerAppendInfo] = {}
        events: list[TxnEvent] = []
        for batch in batches:
            pid = batch.producer_id
            info = infos.get(pid)
            if info is None:
                current = self._producers.get(pid) or ProducerStateEntry(pid)
                if origin is AppendOrigin.CLIENT and not batch.is_control:
                    duplicate = current.find_duplicate(
                        batch.producer_epoch, batch.base_sequence, batch.last_sequence
                    )
                    if duplicate is not None:
                        return AppendAnalysis({}, duplicate)
                info = infos[pid] = ProducerAppendInfo(current, origin, self._partition)
            info.append(batch, events)
        return AppendAnalysis({pid: i.updated for pid, i in infos.items()}, None, tuple(events))

    def apply(self, analysis: AppendAnalysis, end_offset: int) -> list[AbortedTxn]:
        """Store the entries an append produced; the state now covers offsets below
        ``end_offset``. Returns the aborted transactions it completed, for the ``.txnindex``
        of the segment holding each marker."""
        self._producers.update(analysis.updated)
        self.map_end_offset = end_offset
        if not analysis.events:
            return []
        return self.transactions.apply(analysis.events)

    def update_map_end_offset(self, end_offset: int) -> None:
        self.map_end_offset = end_offset

    # -- expiration --
    def is_expired(self, entry: ProducerStateEntry, now_ms: int) -> bool:
        return (
            entry.current_txn_first_offset < 0
            and now_ms - entry.last_timestamp >= self.producer_id_expiration_ms
        )

    def remove_expired_producers(self, now_ms: int) -> list[int]:
        """Forget producers idle for ``producer_id_expiration_ms``; returns their ids."""
        gone = [pid for pid, e in self._producers.items() if self.is_expired(e, now_ms)]
        for pid in gone:
            del self._producers[pid]
        return gone

    def remove_producers_below(self, log_start_offset: int) -> list[int]:
        """Forget producers whose every cached batch is below ``log_start_offset`` (retention
        or DeleteRecords removed them); returns their ids."""
        gone = [
            pid
            for pid, e in self._producers.items()
            if not e.is_empty and e.last_data_offset < log_start_offset
        ]
        for pid in gone:
            del self._producers[pid]
        self.transactions.remove_producers(gone)
        return gone

    # -- snapshots --
    def take_snapshot(self, *, sync: bool = True) -> int | None:
        """Write ``<map_end_offset>.snapshot`` if that is past the latest snapshot (and past
        0); returns the offset written, or None. Raises ``OSError``."""
        offset = self.map_end_offset
        # As Kafka: only past the latest snapshot (an empty log at 0 gets none).
        if offset <= (self._snapshots[-1] if self._snapshots else 0):
            return None
        write_snapshot(snapshot_file(self._dir, offset), self._producers.values(), sync=sync)
        self._snapshots.append(offset)
        self._snapshots.sort()
        return offset

    def delete_snapshots_before(self, offset: int) -> None:
        """Delete the snapshot files below ``offset``."""
        for snap in [s for s in self._snapshots if s < offset]:
            self._delete(snap)

    def delete_snapshots_after(self, offset: int) -> None:
        """Delete the snapshot files above ``offset`` (truncation)."""
        for snap in [s for s in self._snapshots if s > offset]:
            self._delete(snap)

    def delete_snapshots(self, offsets: Iterable[int]) -> None:
        """Delete the snapshot files at these offsets (those that exist)."""
        for offset in offsets:
            if offset in self._snapshots:
                self._delete(offset)

    def _delete(self, offset: int) -> None:
        self._snapshots.remove(offset)
        snapshot_file(self._dir, offset).unlink(missing_ok=True)

    def truncate_and_reload(
        self,
        log_start_offset: int,
        log_end_offset: int,
        now_ms: int,
        load_limit: int | None = None,
    ) -> None:
        """Drop snapshots outside ``[log_start_offset, log_end_offset]`` and load the state
        of the latest valid one at or below ``load_limit`` (default: all; expired producers
        left out); with none, the state is empty at ``log_start_offset``. Corrupt snapshots
        are deleted. The caller replays the batches from :attr:`map_end_offset` to the log
        end."""
        for snap in list(self._snapshots):
            if snap > log_end_offset or snap < log_start_offset:
                self._delete(snap)
        self._producers.clear()
        self.transactions.clear()
        limit = log_end_offset if load_limit is None else load_limit
        while candidates := [snap for snap in self._snapshots if snap <= limit]:
            latest = candidates[-1]
            try:
                entries = read_snapshot(snapshot_file(self._dir, latest))
            except (CorruptSnapshotError, OSError) as e:
                log.warning("deleting producer snapshot %d of %s: %s", latest, self._dir, e)
                self._delete(latest)
                continue
            for entry in entries:
                if not self.is_expired(entry, now_ms):
                    self._producers[entry.producer_id] = entry
            self.transactions.load(
                (e.producer_id, e.current_txn_first_offset)
                for e in self._producers.values()
                if e.current_txn_first_offset >= 0
            )
            self.map_end_offset = latest
            return
        self.map_end_offset = log_start_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Forget every producer and delete every snapshot; the state starts at ``offset``."""
        self._producers.clear()
        self.transactions.clear()
        for snap in list(self._snapshots):
            self._delete(snap)
        self.map_end_offset = offset

    def __iter__(self) -> Iterator[ProducerStateEntry]:
        return iter(self._producers.values())
