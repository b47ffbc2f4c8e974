"""Log compaction: keep the latest record of every key, crash-safe, in a fixed memory budget.

Kafka's ``LogCleaner`` (``core/.../log/LogCleaner.scala``): :class:`LogCleaner` picks the
filthiest compacted log (:mod:`storage.cleaner_manager`) and keeps the per-directory
``cleaner-offset-checkpoint``; :class:`Cleaner` runs one pass over one log:

1. **Map** the dirty section ``[first dirty, first uncleanable)`` into the
   :class:`~storage.offset_map.OffsetMap`: key → latest offset. When the map fills up, the
   pass ends where mapping stopped; the next pass starts there. So a log with more distinct
   keys than the map holds is cleaned in several passes, never loaded whole.
2. **Recopy** every segment below the pass's end (the clean section too: that is how a
   tombstone is eventually dropped) in groups of at most ``segment_bytes``
   (:func:`~storage.cleaner_manager.group_segments_by_size`), each into one new segment,
   filtering each batch (:mod:`storage.batch_filter`). Offsets never change: gaps appear.
3. **Swap** each new segment in for its group (:meth:`storage.log.Log.replace_segments`), then
   record the pass's end in the checkpoint.

Never cleaned: the active segment and anything at or above the last stable offset (at most
the high watermark; below any transaction still open).

Transactions (:mod:`storage.cleaned_transactions`, Kafka's ``CleanedTransactionMetadata``): the
batches of aborted transactions are removed whatever the offset map says (and their keys are
not mapped); an ABORT marker stays while this pass removes batches of its transaction, and its
``.txnindex`` entry is written to the cleaned segment's ``.txnindex``; a marker whose
transaction has no batch left gets a delete horizon (``delete_retention_ms``) and is removed by
a pass after it; an active producer's last data batch, or with none a marker of its epoch, is
kept at least as an empty header.

On disk, while a group is being cleaned, in the partition directory::

    <base>.log.cleaned, .index.cleaned, .timeindex.cleaned,  being written (flushed when done)
      .txnindex.cleaned
    <base>.log.swap, …                                       complete, being swapped in
    <old base>.log.deleted, …                                replaced, removed later

Crash policy: a crash while ``.cleaned`` files exist leaves the old segments in place (the
loader deletes ``.cleaned`` files and any ``.swap`` at or above them); once the ``.swap``
files exist the loader completes the swap, deleting the regular segments in
``[swap base, swap next offset)``. A group's last batch is always kept — as a header with no
records if nothing in it survives — so the new segment's next offset covers every old segment
it replaces. So is each active producer's last data batch, or with none its current
epoch's marker (Kafka's ``lastRecordsOfActiveProducers``): its header keeps the producer's
epoch and last sequence for the state rebuilt after a restart. Groups are swapped one at a
time, oldest first, and each is the compaction of the same map: after a crash every key still
has its latest record. The checkpoint is written only after the whole pass, so a pass cut
short is redone.

Concurrency: passes run without the log's lock — reads, appends, rolls and retention go on —
except to take a snapshot and for each swap. The cleaner reads the old segments through its
own file descriptors, so retention renaming or deleting them cannot pull a file from under it;
a truncation, a closed log or a replaced segment aborts the pass
(:class:`~storage.errors.LogCleaningAbortedError`) with nothing half-swapped. A
:class:`LogCleaner` runs up to ``threads`` passes at once (``log.cleaner.threads``), never two
on one log; its methods are thread-safe.

Memory, per pass: its offset map (``dedupe_buffer_bytes / threads``, allocated at the first
pass that needs it and reused by the next ones), up to two read
chunks of ``io_buffer_bytes`` (the one being filtered and the next; a batch larger than a chunk
is read alone), the output buffered up to ``io_buffer_bytes`` plus one batch, and the batch
being filtered, decompressed and rebuilt. Nothing grows with the number of keys or the size of
the log.

Deviations from Kafka: the cleaner owns no threads (its owner calls
:meth:`LogCleaner.clean_filthiest_log` from up to ``threads`` threads of its own, e.g.
``LogManager``'s cleaning workers); no I/O throttling.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from odradek.clock import Clock
from odradek.errors import CorruptRecordError
from odradek.records import (
    CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_FLAG_MASK,
    ControlRecordType,
    RecordBatch,
)
from odradek.records.batch import HEADER_STRUCT
from odradek.records.control import control_record_type
from storage.batch_filter import (
    H_ATTRIBUTES,
    H_BASE_OFFSET,
    H_BASE_TIMESTAMP,
    H_LAST_OFFSET_DELTA,
    H_LENGTH,
    H_MAX_TIMESTAMP,
    H_PRODUCER_EPOCH,
    H_PRODUCER_ID,
    H_RECORDS_COUNT,
    FilterOutcome,
    check_crc,
    discard_batch,
    filter_batch,
    put_keys,
    with_delete_horizon,
)
from storage.checkpoint_file import OffsetCheckpointFile
from storage.cleaned_transactions import (
    BatchRetention,
    CleanedTransactionMetadata,
    LastRecord,
    batch_retention,
)
from storage.cleaner_manager import (
    LogSnapshot,
    SegmentSnapshot,
    filthiest,
    group_segments_by_size,
    log_to_clean,
)
from storage.config import CleanerConfig, LogConfig
from storage.errors import CheckpointError, LogCleaningAbortedError
from storage.log import Log
from storage.log_segment import (
    CLEANED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    BatchInfo,
    LogSegment,
    filename_prefix_from_offset,
)
from storage.offset_map import OffsetMap
from storage.transaction_index import TXN_INDEX_SUFFIX, AbortedTxn

__all__ = ["CLEANER_OFFSET_CHECKPOINT", "Cleaner", "CleanerStats", "LogCleaner"]

_log = logging.getLogger(__name__)

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"

TopicPartition = tuple[str, int]

_TRANSACTION_FLAGS = CONTROL_FLAG_MASK | TRANSACTIONAL_FLAG_MASK
_NO_INDEX = 2**62  # an index interval no group reaches: stop adding index entries


@dataclass(slots=True)
class CleanerStats:
    """What one pass did (Kafka's ``CleanerStats``)."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    end_offset: int = -1
    """The pass cleaned every offset below this; the new checkpoint."""
    map_bytes_read: int = 0
    """Dirty bytes read to build the offset map."""
    map_records_read: int = 0
    bytes_read: int = 0
    """Bytes recopied (read) from the old segments."""
    bytes_written: int = 0
    records_read: int = 0
    records_retained: int = 0
    batches_rewritten: int = 0
    segments_cleaned: int = 0
    groups: int = 0
    map_entries: int = 0
    map_utilization: float = 0.0
    start_ms: int = 0
    end_ms: int = 0
    group_bases: list[int] = field(default_factory=list)

    @property
    def elapsed_ms(self) -> int:
        return self.end_ms - self.start_ms


class Cleaner:
    """Runs cleaning passes with one offset map. Not thread-safe: one pass at a time."""

    def __init__(
        self,
        offset_map: OffsetMap,
        config: CleanerConfig,
        clock: Clock,
        *,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> None:
        self._map = offset_map
        self._config = config
        self._clock = clock
        self._should_stop = should_stop
        self._log: Log | None = None

    @property
    def offset_map(self) -> OffsetMap:
        return self._map

    def clean(self, log: Log, checkpointed: int | None) -> CleanerStats:
        """One pass over ``log`` from the checkpointed first dirty offset (None: the log
        start), whatever its dirty ratio. Returns the pass's figures; ``end_offset`` is the
        new checkpoint (the first dirty offset, unchanged, when there was nothing to clean).

        Raises ``LogCleaningAbortedError`` if the log changed under the pass or the cleaner
        is stopping (groups already swapped stay: each is a valid compaction), and
        ``CorruptRecordError`` or ``OSError`` if a segment cannot be read (nothing of the
        group being cleaned is swapped in).
        """
        snapshot, segments = log.begin_cleaning()
        self._log = log
        try:
            return self._clean(log, log.config, snapshot, segments, checkpointed)
        finally:
            self._log = None
            log.end_cleaning()

    def _check_abort(self) -> None:
        log = self._log
        if (log is not None and log.cleaning_aborted) or self._should_stop():
            raise LogCleaningAbortedError("cleaning aborted")

    def _clean(
        self,
        log: Log,
        config: LogConfig,
        snapshot: LogSnapshot,
        segments: list[LogSegment],
        checkpointed: int | None,
    ) -> CleanerStats:
        now = self._clock.wall_ms()
        to_clean = log_to_clean(snapshot, checkpointed, config, now)
        dirty = to_clean.first_dirty_offset
        upper = to_clean.first_uncleanable_offset
        stats = CleanerStats(dirty, upper, start_ms=self._clock.monotonic_ms())
        if dirty >= upper:
            stats.end_offset = dirty
            stats.end_ms = stats.start_ms
            return stats
        self._build_offset_map(snapshot, dirty, upper, stats)
        end_offset = self._map.latest_offset + 1
        stats.end_offset = end_offset
        stats.map_entries = self._map.size
        stats.map_utilization = self._map.utilization
        by_base = {s.base_offset: s for s in segments}
        # Kafka's cleaner keeps, at least as an empty batch, each active producer's last batch,
        # so that its sequence and epoch survive a reload of the state.
        producers_last = log.active_producer_last_records()
        groups = group_segments_by_size(
            snapshot.between(0, end_offset),
            max_size=config.segment_bytes,
            max_index_size=config.segment_index_bytes,
            first_uncleanable_offset=upper,
        )
        # each segment's upper bound for the aborted transactions overlapping it: the next
        # segment's base (the active segment is never cleaned, so there is always one)
        next_base = {
            s.base_offset: n.base_offset
            for s, n in zip(snapshot.segments, snapshot.segments[1:], strict=False)
        }
        for group in groups:
            old = [by_base[s.base_offset] for s in group]
            self._clean_group(log, config, group, old, now, stats, producers_last, next_base)
        stats.end_ms = self._clock.monotonic_ms()
        _log.info(
            "cleaned %s up to offset %d in %d groups: %d of %d records kept, %d bytes → %d",
            log.dir.name,
            end_offset,
            stats.groups,
            stats.records_retained,
            stats.records_read,
            stats.bytes_read,
            stats.bytes_written,
        )
        return stats

    # -- reading --
    def _batches(
        self, path: Path, size: int
    ) -> Iterator[tuple[bytes, memoryview, int, int, tuple[int, ...]]]:
        """``(buffer, its view, position in buffer, position in file, header)`` for each batch
        of the first ``size`` bytes of ``path``, read in chunks through a descriptor of our
        own. A missing file or one shorter than ``size`` aborts the pass: the log changed."""
        chunk = self._config.io_buffer_bytes
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise LogCleaningAbortedError(f"{path} is gone") from None
        try:
            position = 0
            while position < size:
                self._check_abort()
                want = min(chunk, size - position)
                buf = os.pread(fd, want, position)
                if len(buf) < want:
                    raise LogCleaningAbortedError(f"{path} shrank during cleaning")
                view = memoryview(buf)
                off = 0
                while off + RECORD_BATCH_OVERHEAD <= want:
                    header = HEADER_STRUCT.unpack_from(buf, off)
                    batch_size = header[H_LENGTH] + LOG_OVERHEAD
                    if batch_size < RECORD_BATCH_OVERHEAD:
                        raise CorruptRecordError(
                            f"{path}: batch of {batch_size} bytes at position {position + off}"
                        )
                    if off + batch_size > want:
                        break
                    yield buf, view, off, position + off, header
                    off += batch_size
                if off == 0:
                    # A batch larger than a chunk (or a header cut by the chunk's end): read
                    # that batch alone.
                    if want < RECORD_BATCH_OVERHEAD:
                        raise CorruptRecordError(f"{path}: {want} stray bytes at {position}")
                    header = HEADER_STRUCT.unpack_from(buf, 0)
                    batch_size = header[H_LENGTH] + LOG_OVERHEAD
                    if position + batch_size > size:
                        raise CorruptRecordError(f"{path}: torn batch at position {position}")
                    buf = os.pread(fd, batch_size, position)
                    if len(buf) < batch_size:
                        raise LogCleaningAbortedError(f"{path} shrank during cleaning")
                    yield buf, memoryview(buf), 0, position, header
                    off = batch_size
                position += off
        finally:
            os.close(fd)

    # -- step 1: the offset map --
    def _build_offset_map(
        self, snapshot: LogSnapshot, start: int, end: int, stats: CleanerStats
    ) -> None:
        offset_map = self._map
        offset_map.clear(start)
        dirty = snapshot.between(start, end)
        transactions = CleanedTransactionMetadata()
        assert self._log is not None
        transactions.add_aborted_transactions(_aborted_transactions(self._log, start, end))
        for i, segment in enumerate(dirty):
            next_base = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
            if self._map_segment(segment, start, next_base, stats, transactions):
                _log.debug(
                    "offset map full after %d keys, in segment %d",
                    offset_map.size,
                    segment.base_offset,
                )
                return

    def _map_segment(
        self,
        segment: SegmentSnapshot,
        start: int,
        next_base: int,
        stats: CleanerStats,
        transactions: CleanedTransactionMetadata,
    ) -> bool:
        offset_map = self._map
        for buf, view, off, _, header in self._batches(segment.log_path, segment.size_in_bytes):
            last_offset = header[H_BASE_OFFSET] + header[H_LAST_OFFSET_DELTA]
            if last_offset < start:
                continue
            check_crc(view, off, header)
            stats.map_bytes_read += header[H_LENGTH] + LOG_OVERHEAD
            attributes = header[H_ATTRIBUTES]
            if attributes & _TRANSACTION_FLAGS:  # (the rest needs no transaction bookkeeping)
                pid = header[H_PRODUCER_ID]
                if attributes & CONTROL_FLAG_MASK:
                    transactions.on_control_batch_read(pid, last_offset, _control_type(buf, off))
                    aborted = True  # no keys to map
                else:
                    aborted = transactions.on_batch_read(pid, last_offset, True)
                # an aborted transaction's batch: its keys supersede nothing
                if not aborted and put_keys(buf, off, header, start, offset_map):
                    return True
            elif put_keys(buf, off, header, start, offset_map):
                return True
            stats.map_records_read += header[H_RECORDS_COUNT]
            offset_map.update_latest_offset(last_offset)
        # Offsets missing at the end of the segment (a gap) belong to the map's range too.
        offset_map.update_latest_offset(next_base - 1)
        return False

    # -- steps 2 and 3: recopy and swap --
    def _clean_group(
        self,
        log: Log,
        config: LogConfig,
        group: Sequence[SegmentSnapshot],
        old_segments: list[LogSegment],
        now: int,
        stats: CleanerStats,
        producers_last: dict[int, LastRecord],
        next_base: Mapping[int, int],
    ) -> None:
        base = group[0].base_offset
        prefix = filename_prefix_from_offset(base)
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            # Left by a pass that failed here: reopening would take it for valid data.
            (log.dir / f"{prefix}{suffix}{CLEANED_SUFFIX}").unlink(missing_ok=True)
        cleaned = LogSegment.for_config(
            log.dir, base, config, created_ms=now, file_suffix=CLEANED_SUFFIX
        )
        try:
            transactions = CleanedTransactionMetadata()
            self._recopy(
                log, config, group, cleaned, now, stats, producers_last, next_base, transactions
            )
            for aborted in transactions.retained_aborted:
                cleaned.txn_index.append(aborted)
            cleaned.on_become_inactive_segment()
            cleaned.flush()
            cleaned.log.set_last_modified_ms(group[-1].last_modified_ms)
            self._check_abort()
        except BaseException:
            cleaned.delete_if_exists()
            raise
        try:
            log.replace_segments(cleaned, old_segments)
        except LogCleaningAbortedError:
            cleaned.delete_if_exists()
            raise
        stats.groups += 1
        stats.segments_cleaned += len(group)
        stats.bytes_written += cleaned.size
        stats.group_bases.append(base)

    def _recopy(
        self,
        log: Log,
        config: LogConfig,
        group: Sequence[SegmentSnapshot],
        cleaned: LogSegment,
        now: int,
        stats: CleanerStats,
        producers_last: dict[int, LastRecord],
        next_base: Mapping[int, int],
        transactions: CleanedTransactionMetadata,
    ) -> None:
        flush_at = self._config.io_buffer_bytes
        offset_map = self._map
        delete_retention_ms = config.delete_retention_ms
        # The group's last batch is kept even when empty, so that the new segment ends where
        # the old ones did (the loader relies on it to finish an interrupted swap).
        last_nonempty = max((i for i, s in enumerate(group) if s.size_in_bytes > 0), default=-1)
        out = bytearray()
        infos: list[BatchInfo] = []
        bytes_read = records_read = records_retained = rewritten = 0
        for i, segment in enumerate(group):
            size = segment.size_in_bytes
            transactions.add_aborted_transactions(
                _aborted_transactions(
                    log, segment.base_offset, next_base.get(segment.base_offset, 2**63 - 1)
                )
            )
            for buf, view, off, file_position, header in self._batches(segment.log_path, size):
                check_crc(view, off, header)
                batch_size = header[H_LENGTH] + LOG_OVERHEAD
                last_offset = header[H_BASE_OFFSET] + header[H_LAST_OFFSET_DELTA]
                group_last = i == last_nonempty and file_position + batch_size == size
                data, max_timestamp, read, retained, was_rewritten = _filter(
                    buf,
                    view,
                    off,
                    header,
                    last_offset,
                    offset_map,
                    now,
                    delete_retention_ms,
                    group_last,
                    producers_last,
                    transactions,
                )
                bytes_read += batch_size
                records_read += read
                records_retained += retained
                rewritten += was_rewritten
                if data is None:
                    continue
                out += data
                infos.append(BatchInfo(last_offset, max_timestamp, len(data)))
                if len(out) >= flush_at:
                    self._append(cleaned, out, infos)
                    out = bytearray()
                    infos = []
        if infos:
            self._append(cleaned, out, infos)
        stats.bytes_read += bytes_read
        stats.records_read += records_read
        stats.records_retained += records_retained
        stats.batches_rewritten += rewritten

    @staticmethod
    def _append(cleaned: LogSegment, data: bytearray, infos: list[BatchInfo]) -> None:
        # Merging segments may need a few more index entries than the sources had (Kafka's
        # grouping bounds only their sum). Rather than fail, stop indexing the new segment
        # when an index is full: a sparser index is still correct, lookups scan further.
        def free() -> int:
            return min(
                cleaned.offset_index.max_entries - cleaned.offset_index.entries,
                cleaned.time_index.max_entries - 1 - cleaned.time_index.entries,
            )

        interval = cleaned.index_interval_bytes
        at_most = min(len(infos), len(data) // (interval + 1) + 1)  # entries this can add
        if free() > at_most:
            cleaned.append(data, infos)
            return
        position = 0
        for info in infos:  # one batch, so at most one entry per index, at a time
            if free() < 1:
                cleaned.index_interval_bytes = _NO_INDEX
            cleaned.append(memoryview(data)[position : position + info.size_in_bytes], [info])
            position += info.size_in_bytes


def _aborted_transactions(log: Log, start: int, upper: int) -> list[AbortedTxn]:
    """The log's aborted transactions overlapping ``[start, upper)``; a log closed meanwhile
    aborts the pass (rather than failing it, which would mark the log uncleanable)."""
    try:
        return log.collect_aborted_transactions(start, upper)
    except ValueError:
        raise LogCleaningAbortedError(f"the log {log.dir} was closed") from None


def _control_type(buf: bytes, position: int) -> ControlRecordType | None:
    """The type of the control batch at ``position`` (None: it has no record left). Raises
    ``CorruptRecordError`` for a malformed control record."""
    batch = RecordBatch(buf, position)
    if batch.records_count <= 0:
        return None
    return control_record_type(batch.records()[0].key)


def _filter(
    buf: bytes,
    view: memoryview,
    position: int,
    header: tuple[int, ...],
    last_offset: int,
    offset_map: OffsetMap,
    now: int,
    delete_retention_ms: int,
    group_last: bool,
    producers_last: dict[int, LastRecord],
    transactions: CleanedTransactionMetadata,
) -> FilterOutcome:
    """What to write for one batch (Kafka's ``cleanInto`` filter): the transactional rules of
    :mod:`storage.cleaned_transactions`, then :func:`~storage.batch_filter.filter_batch`'s.
    ``group_last``: the group's last batch, kept at least empty for the loader."""
    attributes = header[H_ATTRIBUTES]
    pid = header[H_PRODUCER_ID]
    if not attributes & _TRANSACTION_FLAGS:
        # not transactional: only an active producer's last batch is kept for its sake (the
        # aborted transactions the metadata tracks are consumed by the next one that is)
        last = producers_last.get(pid) if pid >= 0 else None
        retain_empty = group_last or (last is not None and last.last_data_offset == last_offset)
        return filter_batch(
            buf, view, position, header, offset_map, now, delete_retention_ms, retain_empty
        )
    is_control = bool(attributes & CONTROL_FLAG_MASK)
    if is_control:
        may_go = transactions.on_control_batch_read(pid, last_offset, _control_type(buf, position))
        horizon_passed = bool(attributes & DELETE_HORIZON_FLAG_MASK) and (
            header[H_BASE_TIMESTAMP] <= now
        )
        discard_records = may_go and horizon_passed
    else:
        may_go = discard_records = transactions.on_batch_read(
            pid, last_offset, bool(attributes & TRANSACTIONAL_FLAG_MASK)
        )
    retention = batch_retention(
        producer_id=pid,
        producer_epoch=header[H_PRODUCER_EPOCH],
        last_offset=last_offset,
        is_control=is_control,
        discard_records=discard_records,
        last_records=producers_last,
    )
    retain_empty = group_last or retention is BatchRetention.RETAIN_EMPTY
    if discard_records:
        return discard_batch(header, retain_empty)
    if is_control:
        count = header[H_RECORDS_COUNT]
        if count <= 0:
            return discard_batch(header, retain_empty)
        if may_go and not attributes & DELETE_HORIZON_FLAG_MASK:
            return with_delete_horizon(buf, position, header, now + delete_retention_ms)
        whole = view[position : position + header[H_LENGTH] + LOG_OVERHEAD]
        return FilterOutcome(whole, header[H_MAX_TIMESTAMP], count, count, False)
    return filter_batch(
        buf, view, position, header, offset_map, now, delete_retention_ms, retain_empty
    )


class LogCleaner:
    """Cleans compacted logs and keeps ``cleaner-offset-checkpoint`` in each log directory.

    Up to ``threads`` passes run at once (Kafka's ``log.cleaner.threads`` CleanerThreads),
    each in its caller's thread, on distinct logs (Kafka's ``LogCleanerManager.inProgress``),
    each with an offset map of its own of ``dedupe_buffer_bytes / threads`` bytes, allocated
    at the first pass that needs it and reused. :meth:`set_threads` changes the count (Kafka's
    ``LogCleaner.reconfigure``): running passes finish with their maps, the next ones get maps
    of the new size.

    Thread-safe. :meth:`shutdown` stops every running pass at its next check and waits for
    them.
    """

    def __init__(
        self, log_dirs: Sequence[Path], config: CleanerConfig, clock: Clock, threads: int = 1
    ) -> None:
        if threads < 1:
            raise ValueError(f"the cleaner needs at least one thread, not {threads}")
        self._config = config
        self._clock = clock
        # checkpoints, the uncleanable and in-progress sets, the maps and the pass count
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # a pass ended or the count changed
        self._threads = threads
        self._maps: list[OffsetMap] = []  # allocated for the current count, in use or free
        self._free_maps: list[OffsetMap] = []
        self._in_progress: set[TopicPartition] = set()
        self._running = 0
        self._stopped = False
        self._checkpoints: dict[Path, dict[TopicPartition, int]] = {
            d: self._read_checkpoint(d) for d in log_dirs
        }
        self._uncleanable: set[TopicPartition] = set()
        self.last_stats: CleanerStats | None = None
        """The figures of the last pass that completed."""

    @staticmethod
    def _read_checkpoint(d: Path) -> dict[TopicPartition, int]:
        try:
            return OffsetCheckpointFile(d / CLEANER_OFFSET_CHECKPOINT).read()
        except (CheckpointError, OSError) as e:
            # Only costs work: every log is then cleaned from its start.
            _log.warning("ignoring unreadable %s in %s: %s", CLEANER_OFFSET_CHECKPOINT, d, e)
            return {}

    @property
    def config(self) -> CleanerConfig:
        return self._config

    @property
    def threads(self) -> int:
        """How many passes may run at once."""
        with self._lock:
            return self._threads

    def set_threads(self, threads: int) -> None:
        """Let up to ``threads`` passes run at once from now on (Kafka's
        ``LogCleaner.reconfigure``). Running passes finish with their maps; the maps of the
        old size are dropped as they come back. Raises ``ValueError`` below 1."""
        if threads < 1:
            raise ValueError(f"the cleaner needs at least one thread, not {threads}")
        with self._lock:
            if threads == self._threads:
                return
            _log.info("log cleaner threads: %d -> %d", self._threads, threads)
            self._threads = threads
            self._maps = []
            self._free_maps = []
            self._changed.notify_all()

    @property
    def offset_map(self) -> OffsetMap | None:
        """The first map of the current thread count, once a pass has allocated it."""
        with self._lock:
            return self._maps[0] if self._maps else None

    @property
    def offset_maps(self) -> list[OffsetMap]:
        """The maps allocated for the current thread count (at most one per thread)."""
        with self._lock:
            return list(self._maps)

    def allocate_offset_map(self) -> OffsetMap:
        """A map for a pass, allocated now if none is free (it takes a moment: the whole
        ``dedupe_buffer_bytes / threads`` is written). Thread-safe only before passes
        start."""
        offset_map = self._take_map()
        self._give_back_map(offset_map)
        return offset_map

    def _take_map(self) -> OffsetMap:
        with self._lock:
            if self._free_maps:
                return self._free_maps.pop()
            threads = self._threads
        # allocated outside the lock: writing the whole buffer takes a moment
        offset_map = OffsetMap(
            max(self._config.dedupe_buffer_bytes // threads, 1024),
            self._config.dedupe_buffer_load_factor,
        )
        with self._lock:
            if threads == self._threads:
                self._maps.append(offset_map)
        return offset_map

    def _give_back_map(self, offset_map: OffsetMap) -> None:
        with self._lock:
            # a map of an older thread count is dropped
            if any(m is offset_map for m in self._maps):
                self._free_maps.append(offset_map)

    # -- checkpoints --
    def checkpoints(self) -> dict[TopicPartition, int]:
        """Every log's first dirty offset, from all directories."""
        with self._lock:
            return {tp: o for entries in self._checkpoints.values() for tp, o in entries.items()}

    def _set_checkpoint(
        self, d: Path, tp: TopicPartition, offset: int | None, *, unless_closed: Log | None = None
    ) -> None:
        # Passes on logs of one directory end in any order: each writes the whole file under
        # the lock, with every log's latest entry.
        with self._lock:
            if unless_closed is not None and unless_closed.closed:
                return  # deleted meanwhile: LogManager.delete_log closes, then calls remove_log
            entries = self._checkpoints.setdefault(d, {})
            if offset is None:
                if entries.pop(tp, None) is None:
                    return
            else:
                entries[tp] = offset
            OffsetCheckpointFile(d / CLEANER_OFFSET_CHECKPOINT).write(entries)

    def _checkpoint_for(self, tp: TopicPartition, log: Log) -> int | None:
        d = log.dir.parent
        with self._lock:
            checkpointed = self._checkpoints.get(d, {}).get(tp)
        truncated = log.take_cleaner_truncation()
        if truncated is not None and checkpointed is not None and checkpointed > truncated:
            checkpointed = truncated
            self._set_checkpoint(d, tp, truncated)
        return checkpointed

    def remove_log(self, tp: TopicPartition, log_dir: Path) -> None:
        """Forget a deleted log (its checkpoint entry and uncleanable mark)."""
        with self._lock:
            self._uncleanable.discard(tp)
        self._set_checkpoint(log_dir, tp, None)

    @property
    def uncleanable_partitions(self) -> set[TopicPartition]:
        """Logs a pass failed on with an error other than an abort; skipped from then on."""
        with self._lock:
            return set(self._uncleanable)

    @property
    def in_progress(self) -> set[TopicPartition]:
        """The logs a pass is cleaning now."""
        with self._lock:
            return set(self._in_progress)

    # -- passes --
    def _acquire_slot(self, wait: bool) -> bool:
        """Count a pass in, waiting (``wait``) for one of the ``threads`` to be free. False
        if stopped, or busy and not ``wait``. Lock held."""
        while not self._stopped and self._running >= self._threads:
            if not wait:
                return False
            self._changed.wait()
        if self._stopped:
            return False
        self._running += 1
        return True

    def _release_slot(self, tp: TopicPartition | None) -> None:
        with self._lock:
            self._running -= 1
            if tp is not None:
                self._in_progress.discard(tp)
            self._changed.notify_all()

    def clean_filthiest_log(
        self, logs: Mapping[TopicPartition, Log], *, wait: bool = True
    ) -> CleanerStats | None:
        """Clean the compacted log with the highest dirty ratio among those due and not being
        cleaned by another pass, if any. Returns the pass's figures, or None if nothing was
        due, the pass did not finish, or — with ``wait=False`` — ``threads`` passes are
        running (with ``wait``, it waits for one of them to end)."""
        with self._lock:
            if not self._acquire_slot(wait):
                return None
        tp: TopicPartition | None = None
        try:
            tp = self._choose_filthiest_log(logs)
            if tp is None:
                return None
            return self._clean(tp, logs[tp])
        finally:
            self._release_slot(tp)

    def _choose_filthiest_log(self, logs: Mapping[TopicPartition, Log]) -> TopicPartition | None:
        """The filthiest log due, marked in progress; None if none."""
        now = self._clock.wall_ms()
        candidates = []
        with self._lock:
            skipped = self._uncleanable | self._in_progress
        for tp, log in logs.items():
            if not log.config.compact or tp in skipped or log.closed:
                continue
            try:
                snapshot = log.cleaning_snapshot()
            except ValueError:
                continue  # closed meanwhile
            to_clean = log_to_clean(snapshot, self._checkpoint_for(tp, log), log.config, now)
            if to_clean.force_update_checkpoint:
                _log.warning(
                    "resetting the cleaner checkpoint of %s-%d to %d: it was out of range",
                    *tp,
                    to_clean.first_dirty_offset,
                )
                self._set_checkpoint(log.dir.parent, tp, to_clean.first_dirty_offset)
            candidates.append((tp, to_clean, log.config))
        with self._lock:
            # another pass may have taken one of them meanwhile
            candidates = [c for c in candidates if c[0] not in self._in_progress]
            chosen = filthiest(candidates)
            if chosen is not None:
                self._in_progress.add(chosen)
            return chosen

    def clean_log(self, tp: TopicPartition, log: Log) -> CleanerStats | None:
        """One pass over ``log`` now, whatever its dirty ratio (tests, operators), once a
        thread is free and no other pass is cleaning it. Returns None if the pass was aborted
        or failed, or the cleaner is shut down."""
        with self._lock:
            while not self._stopped and (tp in self._in_progress or self._running >= self._threads):
                self._changed.wait()
            if self._stopped:
                return None
            self._running += 1
            self._in_progress.add(tp)
        try:
            return self._clean(tp, log)
        finally:
            self._release_slot(tp)

    def _clean(self, tp: TopicPartition, log: Log) -> CleanerStats | None:
        checkpointed = self._checkpoint_for(tp, log)
        offset_map = self._take_map()
        cleaner = Cleaner(offset_map, self._config, self._clock, should_stop=self._is_stopped)
        try:
            stats = cleaner.clean(log, checkpointed)
        except LogCleaningAbortedError as e:
            _log.info("cleaning of %s-%d aborted: %s", *tp, e)
            return None
        except Exception:
            _log.exception("cleaning of %s-%d failed: marking it uncleanable", *tp)
            with self._lock:
                self._uncleanable.add(tp)
            return None
        finally:
            self._give_back_map(offset_map)
        self._set_checkpoint(log.dir.parent, tp, stats.end_offset, unless_closed=log)
        with self._lock:
            self.last_stats = stats
        return stats

    def _is_stopped(self) -> bool:
        return self._stopped

    def shutdown(self) -> None:
        """Stop: running passes abort at their next check; wait for them. Idempotent."""
        with self._lock:
            self._stopped = True
            self._changed.notify_all()
            while self._running:
                self._changed.wait()
