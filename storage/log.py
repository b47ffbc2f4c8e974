"""A partition replica's log: segments, offsets, appends, reads, truncation, retention.

Kafka's ``UnifiedLog`` and ``LocalLog`` in one class. The directory ``<topic>-<partition>``
holds the segments (see :mod:`storage.log_segment`); the log keeps these offsets:

* ``log_start_offset`` — the first readable offset (moved up by retention and delete-records);
* ``log_end_offset`` (LEO) — the offset the next record will get;
* ``high_watermark`` — the end of committed data, ``log_start_offset ≤ HW ≤ LEO``; set by the
  replication layer, never passed by retention;
* ``recovery_point`` — every offset below it is flushed (fsynced). After an unclean stop,
  recovery starts at the segment containing it.

The leader's append path validates each batch (size, CRC-32C, offsets/count consistency),
assigns offsets by rewriting the batch's base offset and stamps the leader epoch — both fields
lie outside the CRC — and writes the bytes as they came: records are neither decoded nor
re-encoded, and the CRC is not recomputed (except with ``log_append_time``, which rewrites a
covered field, and for a batch recompressed to the topic's ``compression.type``:
:mod:`storage.recompression`). Reads return whole batches as raw bytes.

Idempotent producers (:mod:`storage.producer_state`): the leader checks each batch that has
a producer id against the producer's stored epoch and sequences before anything is written; a
batch that exactly repeats one of the producer's last five is not appended and the append
reports the original offsets (a retry whose first response was lost). Followers and recovery
update the state without checks. The state is snapshotted to ``<offset>.snapshot`` at each
segment roll (at the new base offset) and at close; opening or truncating the log loads the
latest snapshot at or below the recovery point (the log end offset after a clean stop) and
replays the batches after it. Snapshots below the log start offset are deleted when it moves
up, and producers whose batches all lie below it are forgotten.

Transactions (:mod:`storage.producer_state`, :mod:`storage.transaction_state`): a transaction
coordinator ends a producer's transaction with a marker, appended as leader with origin
``COORDINATOR`` (:meth:`Log.append_transaction_marker`; clients may not write control batches)
or copied by followers. Each abort completed adds an entry to the ``.txnindex`` of the segment
holding its marker (:mod:`storage.transaction_index`). The *first unstable offset* is the
first offset of the oldest transaction still open or whose marker is not yet below the high
watermark (never below the log start offset); the *last stable offset* is that, or the high
watermark if lower: a read_committed consumer reads below it, and
:meth:`Log.collect_aborted_transactions` lists the aborted transactions overlapping what it
reads. Opening or truncating the log rebuilds all of it with the producer state: every
``.txnindex`` entry whose marker is at or above the producer snapshot loaded is removed and
written again by the replay (a ``.txnindex`` failing its sanity check is emptied and the replay
starts at or below its segment).

Compaction (:mod:`storage.log_cleaner`) works on the non-active segments without the lock and
takes it only to snapshot them (:meth:`Log.begin_cleaning`) and to swap a cleaned segment in
for the ones it replaces (:meth:`Log.replace_segments`); a truncation or :meth:`Log.close`
aborts a pass in progress.

Every public method is thread-safe: one lock serialises the log's state changes and reads.
"""

from __future__ import annotations

import logging
import random
import re
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from odradek.clock import Clock
from odradek.errors import (
    CorruptRecordError,
    InvalidRecordError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
)
from odradek.records import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
    TRANSACTIONAL_FLAG_MASK,
    BatchHeader,
    Compression,
    EndTransactionMarker,
    build_end_txn_marker,
    set_log_append_time,
    stamp_batch,
    validated_headers,
)
from storage.checkpoint_file import fsync_dir
from storage.cleaned_transactions import LastRecord
from storage.cleaner_manager import LogSnapshot, SegmentSnapshot
from storage.config import LONG_MAX, LogConfig
from storage.errors import (
    AppendWouldBlock,
    CorruptIndexError,
    LogCleaningAbortedError,
    OffsetsOutOfOrderError,
    UnexpectedAppendOffsetError,
)
from storage.flush_stats import LogFlushStats
from storage.leader_epoch_cache import LeaderEpochCache
from storage.log_loader import load_segments
from storage.log_segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    BatchInfo,
    FetchDataInfo,
    LogOffsetMetadata,
    LogSegment,
    TimestampAndOffset,
    filename_prefix_from_offset,
)
from storage.log_segments import LogSegments
from storage.log_validator import check_records, out_of_range_timestamps, refused_records_error
from storage.producer_state import (
    AppendAnalysis,
    AppendOrigin,
    ProducerBatch,
    ProducerStateEntry,
    ProducerStateManager,
    marker_at,
)
from storage.recompression import recompress, target_compression
from storage.retention import RetentionReason, SegmentSummary, deletable_segments
from storage.transaction_index import AbortedTxn

__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "Log",
    "LogAppendInfo",
    "parse_topic_partition_name",
]

_log = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2
"""ListOffsets target: the log start offset."""
LATEST_TIMESTAMP = -1
"""ListOffsets target: the log end offset."""
MAX_TIMESTAMP = -3
"""ListOffsets target: the record with the largest timestamp."""

_TOPIC_PARTITION = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


def parse_topic_partition_name(name: str) -> tuple[str, int]:
    """``"orders-3"`` → ``("orders", 3)``. Raises ``ValueError`` for other names."""
    m = _TOPIC_PARTITION.match(name)
    if m is None:
        raise ValueError(f"{name!r} is not a <topic>-<partition> directory name")
    return m.group("topic"), int(m.group("partition"))


class LogAppendInfo(NamedTuple):
    """What an append wrote. (A named tuple: one is made per append on the hot path.)"""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int
    """The broker's time stamped into the batches, or -1 with ``create_time``."""
    log_start_offset: int
    batch_count: int
    valid_bytes: int
    duplicate: bool = False
    """The append repeated an idempotent producer's batch already in the log: nothing was
    written, and the offsets are the original batch's."""

    @property
    def record_count(self) -> int:
        """Offsets assigned (records, for batches written by clients)."""
        return self.last_offset - self.first_offset + 1


class Log:
    """One partition replica's log. Open with :meth:`Log.open`. Thread-safe."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        clock: Clock,
        segments: LogSegments,
        *,
        next_offset: int,
        recovery_point: int,
        log_start_offset: int,
        rng: random.Random,
    ) -> None:
        self._dir = directory
        self.topic, self.partition = parse_topic_partition_name(directory.name)
        self._config = config
        self._clock = clock
        self._segments = segments
        self._next_offset = next_offset
        self._recovery_point = recovery_point
        self._log_start_offset = log_start_offset
        self._high_watermark = log_start_offset
        self._rng = rng
        self._lock = threading.RLock()
        self._last_flush_ms = clock.monotonic_ms()
        self.flush_stats: LogFlushStats | None = None
        """Where flush durations go (the ``LogManager``'s, set when it opens the log)."""
        self._dir_dirty = False
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self._hw_position: tuple[int, int, int] | None = None  # (offset, segment base, position)
        self._closed = False
        self._leader_epoch_cache = LeaderEpochCache.in_dir(directory)
        self._producer_state = ProducerStateManager(directory, config.producer_id_expiration_ms)
        # Compaction (storage.log_cleaner): whether a pass is running, whether something it
        # cannot survive happened meanwhile, and the lowest active-segment base a truncation
        # left since the cleaner last looked (its checkpoint must not stay above it).
        self._cleaning = False
        self._cleaning_aborted = False
        self._cleaner_truncation: int | None = None
        self.recovery_bytes_read = 0
        """Bytes recovery re-read when this log was opened (0 after a clean stop)."""
        self.recovery_bytes_truncated = 0
        """Invalid bytes recovery removed when this log was opened."""

    # -- opening --
    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        clock: Clock,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        had_clean_shutdown: bool = False,
        high_watermark: int | None = None,
        rng: random.Random | None = None,
    ) -> Log:
        """Open the log in ``directory`` (created if missing), recovering it if needed.

        ``recovery_point``, ``log_start_offset`` and ``high_watermark`` come from the log
        directory's checkpoints. Raises ``ValueError`` for a directory name that is not
        ``<topic>-<partition>`` and ``OSError`` for I/O failures.
        """
        parse_topic_partition_name(directory.name)
        directory.mkdir(parents=True, exist_ok=True)
        loaded = load_segments(
            directory,
            config,
            now_ms=clock.wall_ms(),
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=had_clean_shutdown,
        )
        log = cls(
            directory,
            config,
            clock,
            loaded.segments,
            next_offset=loaded.next_offset,
            recovery_point=loaded.recovery_point,
            log_start_offset=loaded.log_start_offset,
            rng=rng or random.Random(),
        )
        log.recovery_bytes_read = loaded.recovery_bytes_read
        log.recovery_bytes_truncated = loaded.bytes_truncated
        active = log._segments.active()
        active.roll_jitter_ms = log._random_jitter()
        # entries the checkpoint holds beyond what survived recovery, or below the start
        log._leader_epoch_cache.truncate_from_end(log._next_offset)
        log._leader_epoch_cache.truncate_from_start(log._log_start_offset)
        if high_watermark is not None:
            log.update_high_watermark(high_watermark)
        # Kafka's removeStraySnapshots: a snapshot neither at a segment's base nor the latest
        # (an older close's, say) is of no further use.
        bases = {seg.base_offset for seg in log._segments}
        log._producer_state.delete_snapshots(
            snap for snap in log._producer_state.snapshots[:-1] if snap not in bases
        )
        if had_clean_shutdown and not log._producer_state.snapshots:
            # Kafka's upgrade shortcut: a log cleanly closed with no snapshot was written
            # before producer state existed (the close writes one), so there is none to rebuild:
            # scanning every segment would only slow the first start.
            log._producer_state.truncate_fully_and_start_at(log._next_offset)
            log._producer_state.take_snapshot()
        else:
            reload_limit = loaded.recovery_point
            for segment in log._segments:
                try:
                    segment.txn_index.sanity_check()
                except CorruptIndexError as e:
                    _log.warning("rebuilding the transaction index of %s: %s", directory, e)
                    segment.txn_index.reset()
                    reload_limit = min(reload_limit, segment.base_offset)
            log._rebuild_producer_state(reload_limit, replay_from_hw=high_watermark is not None)
        return log

    # -- producer state --
    def _rebuild_producer_state(
        self, reload_limit: int, *, snapshot: bool = True, replay_from_hw: bool = True
    ) -> None:
        """Load the latest producer snapshot at or below ``reload_limit`` (and the LEO) and
        replay the batches after it, without validation; then (with ``snapshot``) snapshot at
        the LEO. With ``replay_from_hw``, if a transaction marker lies between the high
        watermark and that limit, the snapshot loaded is also at or below the high watermark
        (the snapshots above it are kept): a transaction completed by a marker the high
        watermark has not passed is still unstable, and only the replay knows it (snapshots
        hold open transactions only).
        Called with the lock held (or before the log is shared)."""
        psm = self._producer_state
        log_start = self._log_start_offset
        limit = min(reload_limit, self._next_offset)
        hw = self._high_watermark
        psm.truncate_and_reload(
            log_start,
            limit,
            self._clock.wall_ms(),
            load_limit=hw if replay_from_hw and self._has_marker_between(hw, limit) else None,
        )
        start = max(psm.map_end_offset, log_start)
        # the .txnindex entries of the markers replayed below are written again by the replay
        for segment in self._segments:
            segment.txn_index.truncate_to(start)

        def batches() -> Iterator[ProducerBatch]:
            # a generator: the replay holds one segment's headers at a time, not the log's
            for segment in self._segments.values(from_offset=start):
                for position, batch in segment.log.batch_headers():
                    if batch.last_offset < start or batch.producer_id <= NO_PRODUCER_ID:
                        continue
                    marker = None
                    if batch.is_control:
                        raw = segment.log.read(position, batch.size_in_bytes)
                        try:
                            marker = marker_at(raw, 0)
                        except CorruptRecordError as e:
                            _log.warning("skipping a control batch of %s: %s", self._dir, e)
                    yield ProducerBatch(
                        batch.producer_id,
                        batch.producer_epoch,
                        batch.base_sequence,
                        batch.base_offset,
                        batch.last_offset,
                        batch.max_timestamp,
                        batch.is_transactional,
                        batch.is_control,
                        marker,
                    )

        aborted = psm.apply(psm.analyze(batches(), AppendOrigin.REPLICATION), self._next_offset)
        self._index_aborted(aborted)
        psm.remove_producers_below(log_start)
        if snapshot:
            psm.take_snapshot()

    def _has_marker_between(self, start: int, end: int) -> bool:
        """Whether a transaction marker lies in ``[start, end)``: its batch headers are read
        (lock held). Usually a few batches: the high watermark is close to the snapshot."""
        if start >= end:
            return False
        for segment in self._segments.values(from_offset=start, to_offset=end):
            found = segment.translate_offset(start)
            if found is None:
                continue
            for _, batch in segment.log.batch_headers(found[0]):
                if batch.base_offset >= end:
                    return False
                if batch.is_control and batch.producer_id > NO_PRODUCER_ID:
                    return True
        return False

    def _index_aborted(self, aborted: Sequence[AbortedTxn]) -> None:
        """Add each aborted transaction to the ``.txnindex`` of the segment holding its
        marker (lock held)."""
        for entry in aborted:
            segment = self._segments.floor(entry.last_offset)
            assert segment is not None
            segment.txn_index.append(entry)

    def producer_state(self) -> dict[int, ProducerStateEntry]:
        """The idempotent producers this log knows, by producer id (a copy). Thread-safe."""
        with self._lock:
            return dict(self._producer_state.producers)

    def producer_entry(self, producer_id: int) -> ProducerStateEntry | None:
        """What this log knows of one producer (its epoch, its open transaction's first
        offset), or ``None``. Thread-safe; cheaper than :meth:`producer_state`."""
        with self._lock:
            return self._producer_state.last_entry(producer_id)

    def producer_snapshot_offsets(self) -> list[int]:
        """Offsets of the ``.snapshot`` files, ascending. Thread-safe."""
        with self._lock:
            return self._producer_state.snapshots

    def remove_expired_producers(self) -> list[int]:
        """Forget producers idle for ``producer_id_expiration_ms`` (by their last batch's
        timestamp against the wall clock); returns their ids. Thread-safe."""
        with self._lock:
            if self._closed:
                return []
            return self._producer_state.remove_expired_producers(self._clock.wall_ms())

    def active_producer_last_offsets(self) -> dict[int, int]:
        """Each unexpired producer's last data offset: the batches compaction must keep
        (Kafka's ``lastRecordsOfActiveProducers``). Thread-safe."""
        with self._lock:
            now = self._clock.wall_ms()
            psm = self._producer_state
            return {
                pid: e.last_data_offset
                for pid, e in psm.producers.items()
                if e.last_data_offset >= 0 and not psm.is_expired(e, now)
            }

    def active_producer_last_records(self) -> dict[int, LastRecord]:
        """Each unexpired producer's last data offset (-1 if it has none) and epoch: the
        batches compaction keeps, at least empty, for the producer state (Kafka's
        ``lastRecordsOfActiveProducers``). Thread-safe."""
        with self._lock:
            now = self._clock.wall_ms()
            psm = self._producer_state
            return {
                pid: LastRecord(e.last_data_offset, e.producer_epoch)
                for pid, e in psm.producers.items()
                if not psm.is_expired(e, now)
            }

    def _new_segment(self, base_offset: int) -> LogSegment:
        return LogSegment.for_config(
            self._dir,
            base_offset,
            self._config,
            created_ms=self._clock.wall_ms(),
            roll_jitter_ms=self._random_jitter(),
        )

    def _random_jitter(self) -> int:
        jitter = self._config.segment_jitter_ms
        if jitter <= 0:
            return 0
        return self._rng.randrange(min(jitter, self._config.segment_ms))

    # -- properties --
    @property
    def dir(self) -> Path:
        return self._dir

    @property
    def config(self) -> LogConfig:
        return self._config

    def update_config(self, config: LogConfig) -> None:
        """Apply a new topic configuration (takes effect for later appends and rolls)."""
        with self._lock:
            self._config = config
            self._producer_state.producer_id_expiration_ms = config.producer_id_expiration_ms

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._next_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def size(self) -> int:
        """Bytes in all segments."""
        with self._lock:
            return self._segments.size_in_bytes()

    @property
    def num_segments(self) -> int:
        with self._lock:
            return len(self._segments)

    def segments(self) -> list[LogSegment]:
        """The segments, oldest first (a snapshot)."""
        with self._lock:
            return self._segments.values()

    @property
    def active_segment(self) -> LogSegment:
        with self._lock:
            return self._segments.active()

    @property
    def latest_epoch(self) -> int:
        """The newest leader epoch in this log's epoch cache, or -1."""
        with self._lock:
            return self._leader_epoch_cache.latest_epoch

    def leader_epoch_entries(self) -> list[tuple[int, int]]:
        """The epoch cache's ``(epoch, start_offset)`` entries, oldest first."""
        with self._lock:
            return self._leader_epoch_cache.entries

    def assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """A new leader records that its epoch starts at ``start_offset`` (its LEO)."""
        with self._lock:
            self._check_open()
            self._leader_epoch_cache.assign(leader_epoch, start_offset)

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """``(epoch, end_offset)`` answering OffsetForLeaderEpoch; ``(-1, -1)`` if unknown."""
        with self._lock:
            return self._leader_epoch_cache.end_offset_for(leader_epoch, self._next_offset)

    def epoch_for_offset(self, offset: int) -> int:
        """The leader epoch of the batch holding ``offset`` as the cache knows it, or -1."""
        with self._lock:
            return self._leader_epoch_cache.epoch_for_offset(offset)

    @property
    def last_flush_ms(self) -> int:
        """The monotonic time of the last flush."""
        return self._last_flush_ms

    @property
    def unflushed_messages(self) -> int:
        return self._next_offset - self._recovery_point

    # -- appends --
    def append_as_leader(
        self,
        batches: bytes | bytearray | memoryview,
        leader_epoch: int,
        *,
        blocking: bool = True,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> LogAppendInfo:
        """Validate client batches, assign offsets from the LEO and append them.

        Each batch must have a valid CRC-32C, magic 2, base offset 0 (offsets are the leader's
        to assign), a record count matching its offset delta, no control flag (unless
        ``origin`` is ``COORDINATOR``: the broker's transaction markers) and, with a producer
        id, a sequence number ≥ 0 (control batches have none); every record of it is read
        (:mod:`storage.log_validator`). Batches with a producer id are then checked by the
        producer state (:mod:`storage.producer_state`): a duplicate of one of the producer's
        last five batches writes nothing and returns the original offsets with ``duplicate``
        set. Raises ``CorruptRecordError`` (also for malformed records under a right CRC),
        ``InvalidRecordError`` (also for records without a key on a compacted log, named in its
        ``record_errors``, or a compressed batch without incremental offsets),
        ``InvalidTimestampError`` (records whose CreateTime is out of
        ``message_timestamp_before_max_ms`` / ``after_max_ms`` of the clock, named in its
        ``record_errors``), ``MessageTooLargeError`` (a batch over ``max_message_bytes``, also
        once recompressed to ``compression_type``),
        ``RecordListTooLargeError`` (more than ``segment_bytes`` in one append),
        ``OutOfOrderSequenceError``, ``InvalidProducerEpochError``, ``InvalidTxnStateError``
        (a non-transactional batch in the producer's open transaction) or
        ``TransactionCoordinatorFencedError`` (a marker of an older coordinator epoch); on any
        error nothing is written. With ``blocking`` False it raises :class:`AppendWouldBlock`
        instead of waiting for the log's lock, recompressing, rolling a segment or flushing
        (nothing written either).
        """
        buf = bytearray(batches)
        headers = validated_headers(buf)
        if not headers:
            raise InvalidRecordError("the append contains no record batch")
        config = self._config
        max_message_bytes = config.max_message_bytes
        check_timestamps = config.message_timestamp_type == "create_time" and (
            config.message_timestamp_before_max_ms < LONG_MAX
            or config.message_timestamp_after_max_ms < LONG_MAX
        )
        for index, h in enumerate(headers):
            if h.size_in_bytes > max_message_bytes:
                raise MessageTooLargeError(
                    f"batch {index} is {h.size_in_bytes} bytes, larger than "
                    f"max_message_bytes ({max_message_bytes})"
                )
            if h.base_offset != 0:
                raise InvalidRecordError(
                    f"batch {index} has base offset {h.base_offset}; clients must send 0"
                )
            if h.records_count != h.last_offset_delta + 1 or h.records_count <= 0:
                raise InvalidRecordError(
                    f"batch {index} reports {h.records_count} records but its offset delta "
                    f"is {h.last_offset_delta}"
                )
            if h.attributes & CONTROL_FLAG_MASK and origin is AppendOrigin.CLIENT:
                raise InvalidRecordError("clients are not allowed to write control batches")
            if h.producer_id > NO_PRODUCER_ID and h.base_sequence < 0 and not h.is_control:
                raise InvalidRecordError(
                    f"batch {index} of producer {h.producer_id} has the invalid sequence "
                    f"number {h.base_sequence}"
                )
            # every record is read, as Kafka's LogValidator does: a right CRC over malformed
            # records is refused here, before anything is written
            keyless = check_records(buf, h.position)
            if not config.compact:
                keyless = ()
            out_of_range = (
                out_of_range_timestamps(
                    buf,
                    h.position,
                    self._clock.wall_ms(),
                    config.message_timestamp_before_max_ms,
                    config.message_timestamp_after_max_ms,
                )
                if check_timestamps
                else {}
            )
            if keyless or out_of_range:
                # Kafka refuses the batch and names each record at fault (KIP-467)
                refused = refused_records_error(
                    f"{self.topic}-{self.partition}", keyless, out_of_range
                )
                assert refused is not None
                raise refused
        target = target_compression(config)
        if target is not None and any(
            h.attributes & COMPRESSION_CODEC_MASK != target[0] and not h.is_control for h in headers
        ):
            if not blocking:
                # compressing takes milliseconds of CPU: not on a caller that must not block
                raise AppendWouldBlock(f"{self._dir}: the append would recompress its batches")
            buf, headers = self._recompressed(buf, headers, *target)
        log_append_time = config.message_timestamp_type == "log_append_time"
        if not self._lock.acquire(blocking):
            raise AppendWouldBlock(f"{self._dir}: the log's lock is held")
        try:
            self._check_open()
            append_time = self._clock.wall_ms() if log_append_time else -1
            next_offset = self._next_offset
            first_offset = next_offset
            infos: list[BatchInfo] = []
            producer_batches: list[ProducerBatch] = []
            max_ts, offset_of_max = NO_TIMESTAMP, -1
            for h in headers:
                stamp_batch(buf, h.position, next_offset, leader_epoch)
                last = next_offset + h.last_offset_delta
                batch_max_ts = h.max_timestamp
                if log_append_time:
                    set_log_append_time(buf, h.position, append_time)
                    batch_max_ts = append_time
                if batch_max_ts > max_ts:
                    max_ts, offset_of_max = batch_max_ts, last
                infos.append(BatchInfo(last, batch_max_ts, h.size_in_bytes))
                if h.producer_id > NO_PRODUCER_ID:
                    producer_batches.append(
                        ProducerBatch(
                            h.producer_id,
                            h.producer_epoch,
                            h.base_sequence,
                            next_offset,
                            last,
                            batch_max_ts,
                            bool(h.attributes & TRANSACTIONAL_FLAG_MASK),
                            h.is_control,
                            marker_at(buf, h.position) if h.is_control else None,
                        )
                    )
                next_offset = last + 1
            analysis = self._producer_state.analyze(producer_batches, origin)
            duplicate = analysis.duplicate
            if duplicate is not None:
                return LogAppendInfo(
                    duplicate.first_offset,
                    duplicate.last_offset,
                    duplicate.timestamp,
                    duplicate.last_offset,
                    duplicate.timestamp if log_append_time else -1,
                    self._log_start_offset,
                    0,
                    0,
                    True,
                )
            if not blocking and self._append_would_block(len(buf), infos[-1].last_offset, max_ts):
                raise AppendWouldBlock(f"{self._dir}: the append would roll or flush")
            self._leader_epoch_cache.assign(leader_epoch, first_offset)
            return self._append(
                buf, infos, first_offset, max_ts, offset_of_max, append_time, len(buf), analysis
            )
        finally:
            self._lock.release()

    def append_transaction_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        marker: EndTransactionMarker,
        leader_epoch: int,
    ) -> LogAppendInfo:
        """Append, as leader, the COMMIT or ABORT marker ending ``producer_id``'s transaction
        (Kafka's ``WriteTxnMarkers`` on the partition's leader), stamped with the wall clock.

        An abort ends with an entry in the ``.txnindex``; a marker for a producer with no
        open transaction here is written and changes no offset. Raises
        ``InvalidProducerEpochError`` (``producer_epoch`` below the producer's) or
        ``TransactionCoordinatorFencedError`` (``marker``'s coordinator epoch below the last
        one this partition saw for the producer), writing nothing; otherwise as
        :meth:`append_as_leader`. Thread-safe."""
        data = build_end_txn_marker(
            marker,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            timestamp=self._clock.wall_ms(),
        )
        return self.append_as_leader(data, leader_epoch, origin=AppendOrigin.COORDINATOR)

    def _recompressed(
        self,
        buf: bytearray,
        headers: list[BatchHeader],
        codec: Compression,
        level: int | None,
    ) -> tuple[bytearray, list[BatchHeader]]:
        """``buf`` with each batch not in ``codec`` recompressed to it (the topic's
        ``compression.type``: :mod:`storage.recompression`), and its headers. Raises
        ``MessageTooLargeError`` for a batch that grew past ``max_message_bytes``, as Kafka's
        ``UnifiedLog.append`` checks again after recompressing."""
        out = bytearray()
        for h in headers:
            # Kafka does not compress control batches (transaction markers) written uncompressed
            if h.attributes & COMPRESSION_CODEC_MASK == codec or h.is_control:
                out += buf[h.position : h.position + h.size_in_bytes]
            else:
                out += recompress(buf, h, codec, level)
        rebuilt = validated_headers(out)
        limit = self._config.max_message_bytes
        for h in rebuilt:
            if h.size_in_bytes > limit:
                raise MessageTooLargeError(
                    f"Message batch size is {h.size_in_bytes} bytes in append to partition "
                    f"{self.topic}-{self.partition} which exceeds the maximum configured size of "
                    f"{limit}."
                )
        return out, rebuilt

    def append_as_follower(self, batches: bytes | bytearray | memoryview) -> LogAppendInfo:
        """Append batches copied from the leader, keeping their offsets and epochs.

        Raises ``CorruptRecordError`` (bad CRC or framing), ``OffsetsOutOfOrderError``
        (offsets not strictly increasing), ``UnexpectedAppendOffsetError`` (first offset below
        the LEO) or ``RecordListTooLargeError``. A trailing partial batch (as a fetch may
        return) is ignored; nothing is written on error.
        """
        headers = validated_headers(batches, allow_partial_tail=True)
        if not headers:
            with self._lock:
                return LogAppendInfo(
                    self._next_offset,
                    self._next_offset - 1,
                    NO_TIMESTAMP,
                    -1,
                    -1,
                    self._log_start_offset,
                    0,
                    0,
                )
        infos: list[BatchInfo] = []
        max_ts, offset_of_max = NO_TIMESTAMP, -1
        previous_last = -1
        for h in headers:
            last = h.base_offset + h.last_offset_delta
            if last <= previous_last or last < h.base_offset:
                raise OffsetsOutOfOrderError(
                    f"out of order offsets in follower append: batch {h.base_offset}..{last} "
                    f"after {previous_last}"
                )
            previous_last = last
            if h.max_timestamp > max_ts:
                max_ts, offset_of_max = h.max_timestamp, last
            infos.append(BatchInfo(last, h.max_timestamp, h.size_in_bytes))
        valid_bytes = headers[-1].position + headers[-1].size_in_bytes
        first_offset = headers[0].base_offset
        with self._lock:
            self._check_open()
            if first_offset < self._next_offset:
                raise UnexpectedAppendOffsetError(
                    f"follower append starts at {first_offset}, below the log end offset "
                    f"{self._next_offset}",
                    first_offset,
                    infos[-1].last_offset,
                )
            analysis = self._producer_state.analyze(
                [
                    ProducerBatch(
                        h.producer_id,
                        h.producer_epoch,
                        h.base_sequence,
                        h.base_offset,
                        h.last_offset,
                        h.max_timestamp,
                        bool(h.attributes & TRANSACTIONAL_FLAG_MASK),
                        h.is_control,
                        marker_at(batches, h.position) if h.is_control else None,
                    )
                    for h in headers
                    if h.producer_id > NO_PRODUCER_ID
                ],
                AppendOrigin.REPLICATION,
            )
            cache = self._leader_epoch_cache
            for h in headers:
                if h.partition_leader_epoch > cache.latest_epoch:
                    cache.assign(h.partition_leader_epoch, h.base_offset)
            return self._append(
                memoryview(batches)[:valid_bytes],
                infos,
                first_offset,
                max_ts,
                offset_of_max,
                -1,
                valid_bytes,
                analysis,
            )

    def _append(
        self,
        data: bytearray | memoryview,
        infos: Sequence[BatchInfo],
        first_offset: int,
        max_ts: int,
        offset_of_max: int,
        append_time: int,
        valid_bytes: int,
        analysis: AppendAnalysis,
    ) -> LogAppendInfo:
        # Called with the lock held.
        config = self._config
        if valid_bytes > config.segment_bytes:
            self._leader_epoch_cache.truncate_from_end(self._next_offset)
            raise RecordListTooLargeError(
                f"the append is {valid_bytes} bytes, larger than segment_bytes "
                f"({config.segment_bytes})"
            )
        last_offset = infos[-1].last_offset
        try:
            segment = self._maybe_roll(valid_bytes, first_offset, last_offset, max_ts)
            segment.append(data, infos)
        except BaseException:
            self._leader_epoch_cache.truncate_from_end(self._next_offset)
            raise
        self._next_offset = last_offset + 1
        self._index_aborted(self._producer_state.apply(analysis, self._next_offset))
        if self.unflushed_messages >= config.flush_messages:
            self.flush()
        return LogAppendInfo(
            first_offset,
            last_offset,
            max_ts,
            offset_of_max,
            append_time,
            self._log_start_offset,
            len(infos),
            valid_bytes,
        )

    def _maybe_roll(
        self, messages_size: int, first_offset: int, last_offset: int, max_ts: int
    ) -> LogSegment:
        if self._roll_due(messages_size, last_offset, max_ts):
            return self._roll(first_offset)
        return self._segments.active()

    def _roll_due(self, messages_size: int, last_offset: int, max_ts: int) -> bool:
        config = self._config
        return self._segments.active().should_roll(
            max_segment_ms=config.max_segment_ms,
            max_segment_bytes=config.segment_bytes,
            max_timestamp_in_messages=max_ts,
            max_offset_in_messages=last_offset,
            messages_size=messages_size,
            now_ms=self._clock.wall_ms(),
        )

    def _append_would_block(self, messages_size: int, last_offset: int, max_ts: int) -> bool:
        """Whether :meth:`_append` would write or fsync more than the batches (lock held): a
        segment roll (new files, the old segment fsynced) or a flush for ``flush.messages``."""
        return (
            self._roll_due(messages_size, last_offset, max_ts)
            or last_offset + 1 - self._recovery_point >= self._config.flush_messages
        )

    # -- rolling --
    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at ``max(expected_next_offset, LEO)`` and flush the old
        ones (which moves the recovery point to the new segment's base). Returns it."""
        with self._lock:
            self._check_open()
            return self._roll(expected_next_offset)

    def _roll(self, expected_next_offset: int | None = None) -> LogSegment:
        new_offset = max(expected_next_offset or 0, self._next_offset)
        active = self._segments.active()
        if active.base_offset == new_offset and active.size == 0:
            # An empty active segment at the same offset is simply replaced (KAFKA-6388).
            _log.warning("rolling %s onto an empty segment at the same offset", self._dir)
            self._segments.remove(new_offset)
            active.delete_if_exists()
        elif new_offset in self._segments:
            raise ValueError(f"{self._dir}: a segment already exists at offset {new_offset}")
        elif new_offset < active.base_offset:
            raise ValueError(
                f"{self._dir}: cannot roll to {new_offset}, below the active segment "
                f"{active.base_offset}"
            )
        else:
            active.on_become_inactive_segment()
        prefix = filename_prefix_from_offset(new_offset)
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            stale = self._dir / f"{prefix}{suffix}"
            if stale.exists():
                _log.warning("deleting stale file %s before rolling", stale)
                stale.unlink()
        segment = self._new_segment(new_offset)
        self._segments.add(segment)
        self._dir_dirty = True
        # Kafka takes the producer snapshot at the new base offset on every roll: recovery then
        # replays at most the active segment. (The state covers the LEO, which is new_offset
        # unless the roll was asked for a higher offset.)
        # Not fsynced (Kafka fsyncs it later, off the append path): a snapshot lost or torn by
        # a crash fails its CRC and an older one is used.
        self._producer_state.update_map_end_offset(self._next_offset)
        self._producer_state.take_snapshot(sync=False)
        # Kafka flushes up to the new segment asynchronously; the old segments are complete,
        # so flushing them now moves the recovery point to the new base offset.
        self._flush_up_to(new_offset)
        return segment

    # -- flushing --
    def flush(self, include_active_empty: bool = False) -> None:
        """fsync everything up to the LEO and move the recovery point there. Thread-safe."""
        with self._lock:
            self._check_open()
            self._flush_up_to(self._next_offset, include_active_empty)

    def _flush_up_to(self, offset: int, include_active_empty: bool = False) -> None:
        if offset > self._recovery_point or include_active_empty:
            started = self._clock.monotonic_ms()
            for segment in self._segments.values(self._recovery_point, offset):
                segment.flush()
            if include_active_empty:
                self._segments.active().flush()
            if self._dir_dirty:
                fsync_dir(self._dir)
                self._dir_dirty = False
            self._recovery_point = max(self._recovery_point, min(offset, self._next_offset))
            if self.flush_stats is not None:
                self.flush_stats.record(self._clock.monotonic_ms() - started)
        self._last_flush_ms = self._clock.monotonic_ms()

    def maybe_flush(self) -> bool:
        """Flush if ``flush_ms`` has passed since the last flush; returns whether it did."""
        with self._lock:
            if self._closed:
                return False
            if self._clock.monotonic_ms() - self._last_flush_ms >= self._config.flush_ms:
                self._flush_up_to(self._next_offset)
                return True
            return False

    # -- reads --
    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_message: bool = True,
        as_slice: bool = False,
    ) -> FetchDataInfo:
        """Whole batches from the one containing ``start_offset``, as raw bytes (``as_slice``:
        as a slice of the segment file, not read).

        ``max_offset`` bounds the read (exclusive): the high watermark for consumers, None
        (the LEO) for followers. A read at the LEO or at/after ``max_offset`` is empty; one
        below ``log_start_offset`` or above the LEO raises ``OffsetOutOfRangeError``. The
        result may end in a partial batch. Thread-safe.
        """
        with self._lock:
            self._check_open()
            leo = self._next_offset
            if start_offset == leo:
                return self._empty(start_offset)
            if start_offset > leo or start_offset < self._log_start_offset:
                raise OffsetOutOfRangeError(
                    f"offset {start_offset} is out of range for {self.topic}-{self.partition}: "
                    f"[{self._log_start_offset}, {leo}]"
                )
            if max_offset is None or max_offset >= leo:
                active = self._segments.active()
                bound_base, bound_position = active.base_offset, active.size
            else:
                if start_offset >= max_offset:
                    return self._empty(start_offset)
                bound_base, bound_position = self._position_of(max_offset)
            segment = self._segments.floor(start_offset)
            while segment is not None and segment.base_offset <= bound_base:
                max_position = segment.size if segment.base_offset < bound_base else bound_position
                info = segment.read(
                    start_offset, max_bytes, max_position, min_one_message, as_slice
                )
                if info is not None:
                    return info
                segment = self._segments.higher(segment.base_offset)
            return self._empty(start_offset)

    def _empty(self, offset: int) -> FetchDataInfo:
        return FetchDataInfo(LogOffsetMetadata(offset), b"")

    def _position_of(self, offset: int) -> tuple[int, int]:
        """(segment base, byte position) of the batch containing ``offset`` (cached once)."""
        cached = self._hw_position
        if cached is not None and cached[0] == offset:
            return cached[1], cached[2]
        segment = self._segments.floor(offset)
        assert segment is not None
        found = segment.translate_offset(offset)
        position = found[0] if found is not None else segment.size
        self._hw_position = (offset, segment.base_offset, position)
        return segment.base_offset, position

    def fetch_offset_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """The first offset whose record timestamp is ≥ ``timestamp`` (ListOffsets).

        Special targets: ``EARLIEST_TIMESTAMP`` (-2) → the log start offset,
        ``LATEST_TIMESTAMP`` (-1) → the LEO, ``MAX_TIMESTAMP`` (-3) → the record with the
        largest timestamp. Returns None when no record is that recent. Thread-safe.
        """
        with self._lock:
            self._check_open()
            if timestamp == EARLIEST_TIMESTAMP:
                return TimestampAndOffset(NO_TIMESTAMP, self._log_start_offset)
            if timestamp == LATEST_TIMESTAMP:
                return TimestampAndOffset(NO_TIMESTAMP, self._next_offset)
            if timestamp == MAX_TIMESTAMP:
                return self._max_timestamp_offset()
            if timestamp < 0:
                raise ValueError(f"invalid target timestamp {timestamp}")
            for segment in self._segments:
                if segment.largest_timestamp() < timestamp:
                    continue
                found = segment.find_offset_by_timestamp(timestamp, self._log_start_offset)
                if found is not None:
                    return found
            return None

    def _max_timestamp_offset(self) -> TimestampAndOffset | None:
        best: LogSegment | None = None
        for segment in self._segments:
            if best is None or segment.max_timestamp_so_far > best.max_timestamp_so_far:
                best = segment
        if best is None or best.max_timestamp_so_far < 0:
            return None
        max_ts = best.max_timestamp_so_far
        # The segment remembers the batch; find the exact record inside it.
        found = best.find_offset_by_timestamp(max_ts, self._log_start_offset)
        if found is not None and found.timestamp == max_ts:
            return found
        return TimestampAndOffset(max_ts, best.offset_of_max_timestamp_so_far)

    # -- high watermark and log start offset --
    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark, clamped to ``[log_start_offset, LEO]``; returns it.

        May lower it (followers after truncation, loading); leaders use
        :meth:`maybe_increment_high_watermark`. Thread-safe.
        """
        with self._lock:
            hw = min(max(offset, self._log_start_offset), self._next_offset)
            self._high_watermark = hw
            return hw

    def maybe_increment_high_watermark(self, offset: int) -> bool:
        """Raise the high watermark to ``offset`` if that is higher; returns whether it moved.

        Raises ``ValueError`` if ``offset`` is above the LEO. Thread-safe.
        """
        with self._lock:
            if offset > self._next_offset:
                raise ValueError(
                    f"high watermark {offset} is above the log end offset {self._next_offset}"
                )
            if offset > self._high_watermark:
                self._high_watermark = offset
                return True
            return False

    # -- transactions --
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest transaction still open, or completed by a marker not
        yet below the high watermark (at least the log start offset); ``None`` if none
        (Kafka's ``firstUnstableOffset``). Thread-safe."""
        with self._lock:
            return self._first_unstable_offset()

    def _first_unstable_offset(self) -> int | None:
        transactions = self._producer_state.transactions
        transactions.on_high_watermark_updated(self._high_watermark)
        first = transactions.first_unstable_offset()
        return None if first is None else max(first, self._log_start_offset)

    def last_stable_offset(self) -> int:
        """The first unstable offset if below the high watermark, else the high watermark:
        a read_committed fetch returns nothing at or above it, and compaction cleans nothing
        at or above it. Thread-safe."""
        with self._lock:
            return self._last_stable_offset()

    def _last_stable_offset(self) -> int:
        first = self._first_unstable_offset()
        hw = self._high_watermark
        return first if first is not None and first < hw else hw

    def collect_aborted_transactions(
        self, start_offset: int, upper_bound_offset: int
    ) -> list[AbortedTxn]:
        """The aborted transactions overlapping ``[start_offset, upper_bound_offset)``, from the
        ``.txnindex`` of the segment holding ``start_offset`` on, stopping at the first entry
        that proves no later one can overlap (Kafka's ``collectAbortedTransactions``): what a
        read_committed fetch answers beside the batches it returns. Thread-safe."""
        with self._lock:
            self._check_open()
            found: list[AbortedTxn] = []
            start = self._segments.floor(start_offset) or self._segments.first()
            if start is None:
                return found
            for segment in self._segments.values(from_offset=start.base_offset):
                result = segment.txn_index.collect_aborted_txns(start_offset, upper_bound_offset)
                found += result.aborted
                if result.is_complete:
                    break
            return found

    def delete_records(self, before_offset: int) -> int:
        """Move the log start offset up to ``before_offset`` (Kafka's DeleteRecords).

        Reads below it fail at once; whole segments below it go at the next retention pass.
        Raises ``OffsetOutOfRangeError`` if ``before_offset`` is above the high watermark.
        Returns the (possibly unchanged) log start offset. Thread-safe.
        """
        with self._lock:
            self._check_open()
            if before_offset > self._high_watermark:
                raise OffsetOutOfRangeError(
                    f"cannot delete records before {before_offset}: above the high watermark "
                    f"{self._high_watermark} of {self.topic}-{self.partition}"
                )
            self._maybe_increment_log_start_offset(before_offset)
            return self._log_start_offset

    def _maybe_increment_log_start_offset(self, offset: int) -> None:
        if offset > self._log_start_offset:
            self._log_start_offset = offset
            self._leader_epoch_cache.truncate_from_start(offset)
            self._producer_state.delete_snapshots_before(offset)
            self._producer_state.remove_producers_below(offset)
            self._high_watermark = max(self._high_watermark, offset)
            self._recovery_point = max(self._recovery_point, offset)

    # -- truncation --
    def truncate_to(self, target_offset: int) -> bool:
        """Remove every offset ≥ ``target_offset``; returns whether anything was removed.

        Whole batches go: a batch containing ``target_offset`` is removed entirely, so the new
        LEO may be below the target. Raises ``ValueError`` for a negative target. Thread-safe.
        """
        if target_offset < 0:
            raise ValueError(f"cannot truncate to a negative offset ({target_offset})")
        with self._lock:
            self._check_open()
            if target_offset >= self._next_offset:
                # Nothing to cut, but an epoch that started at the LEO without a batch (a leader
                # that wrote nothing, now a follower) must go, or the follower would be told it
                # diverges on every fetch (Kafka's truncateTo does the same).
                self._leader_epoch_cache.truncate_from_end(self._next_offset)
                return False
            first = self._segments.first()
            assert first is not None
            if target_offset < first.base_offset:
                self._truncate_fully_and_start_at(target_offset)
                return True
            now = self._clock.wall_ms()
            for segment in reversed(self._segments.values()):
                if segment.base_offset > target_offset:
                    self._segments.remove(segment.base_offset)
                    segment.delete_if_exists()
            active = self._segments.active()
            active.truncate_to(target_offset, now)
            active.resize_indexes(self._config.segment_index_bytes)
            self._next_offset = active.read_next_offset()
            self._after_truncation()
            self._producer_state.delete_snapshots_after(self._next_offset)
            self._rebuild_producer_state(self._next_offset, snapshot=False)
            return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete every segment and start an empty log at ``new_offset``. Thread-safe."""
        if new_offset < 0:
            raise ValueError(f"cannot start a log at a negative offset ({new_offset})")
        with self._lock:
            self._check_open()
            self._truncate_fully_and_start_at(new_offset)

    def _truncate_fully_and_start_at(self, new_offset: int) -> None:
        for segment in self._segments.clear():
            segment.delete_if_exists()
        self._segments.add(self._new_segment(new_offset))
        self._leader_epoch_cache.clear()
        self._dir_dirty = True
        self._next_offset = new_offset
        self._log_start_offset = new_offset
        self._high_watermark = new_offset
        self._recovery_point = new_offset
        self._after_truncation()
        self._producer_state.truncate_fully_and_start_at(new_offset)

    def _after_truncation(self) -> None:
        self._leader_epoch_cache.truncate_from_end(self._next_offset)
        # Kafka aborts a cleaning pass on truncation and lowers the cleaner checkpoint to the
        # active segment's base: what follows it is new, dirty data.
        self._cleaning_aborted = self._cleaning_aborted or self._cleaning
        base = self._segments.active().base_offset
        previous = self._cleaner_truncation
        self._cleaner_truncation = base if previous is None else min(previous, base)
        self._hw_position = None
        self._log_start_offset = min(self._log_start_offset, self._next_offset)
        self._high_watermark = min(self._high_watermark, self._next_offset)
        self._recovery_point = min(self._recovery_point, self._next_offset)

    # -- retention --
    def delete_old_segments(self) -> int:
        """Apply retention (log start offset, then size and time when the policy includes
        ``delete``); returns the number of segments deleted. Never deletes at or above the
        high watermark; rolls first rather than delete the active segment. The files are
        renamed ``.deleted`` and removed after ``file_delete_delay_ms``. Thread-safe."""
        with self._lock:
            self._check_open()
            segments = self._segments.values()
            decision = deletable_segments(
                [SegmentSummary(s.base_offset, s.size, s.largest_timestamp()) for s in segments],
                log_end_offset=self._next_offset,
                high_watermark=self._high_watermark,
                log_start_offset=self._log_start_offset,
                config=self._config,
                now_ms=self._clock.wall_ms(),
            )
            if decision is None:
                return 0
            reason, doomed = decision
            if len(doomed) == len(segments):
                self._roll()
            to_delete = [self._segments.get(s.base_offset) for s in doomed]
            victims = [s for s in to_delete if s is not None and s is not self._segments.active()]
            for segment in victims:
                self._segments.remove(segment.base_offset)
            first = self._segments.first()
            assert first is not None
            self._maybe_increment_log_start_offset(first.base_offset)
            self._schedule_delete(victims)
            if reason is not RetentionReason.LOG_START_OFFSET:
                _log.info(
                    "retention (%s) deleted %d segments of %s; log start offset %d",
                    reason.value,
                    len(victims),
                    self._dir,
                    self._log_start_offset,
                )
            return len(victims)

    def _schedule_delete(self, segments: list[LogSegment]) -> None:
        due = self._clock.monotonic_ms() + self._config.file_delete_delay_ms
        for segment in segments:
            segment.change_file_suffixes("", DELETED_SUFFIX)
            self._pending_deletes.append((due, segment))
        self._hw_position = None
        if self._config.file_delete_delay_ms == 0:
            self.delete_pending_files()

    def delete_pending_files(self) -> int:
        """Remove ``.deleted`` segments whose delay has passed; returns how many. Thread-safe."""
        with self._lock:
            now = self._clock.monotonic_ms()
            due = [s for t, s in self._pending_deletes if t <= now]
            self._pending_deletes = [(t, s) for t, s in self._pending_deletes if t > now]
            for segment in due:
                segment.delete_if_exists()
            return len(due)

    # -- closing --
    def close(self) -> None:
        """Close every segment (trimming indexes). Does not flush: the log manager flushes
        before a clean shutdown. ``.deleted`` files not yet removed are removed at the next
        open. Thread-safe; closing twice is a no-op."""
        with self._lock:
            if self._closed:
                return
            try:
                if self._producer_state.take_snapshot() is not None:
                    fsync_dir(self._dir)  # before the clean-shutdown marker trusts it
            except OSError as e:
                _log.warning("could not snapshot the producer state of %s: %s", self._dir, e)
            self._closed = True
            self._cleaning_aborted = self._cleaning_aborted or self._cleaning
            for segment in self._segments:
                segment.close()
            for _, segment in self._pending_deletes:
                segment.close_handlers()
            self._pending_deletes.clear()

    def retire(self) -> None:
        """Stop serving this log (a deleted one): reads, appends and everything else fail from
        now on as after :meth:`close`, but its files stay open until :meth:`close_handlers`.
        A reader still holding a slice of one of its segments (:class:`FileSlice`, sent later
        with sendfile) reads the slice's bytes, not whatever file the descriptor's number would
        name once closed and reused. Thread-safe."""
        with self._lock:
            self._closed = True
            self._cleaning_aborted = self._cleaning_aborted or self._cleaning

    def close_handlers(self) -> None:
        """Close the files of a :meth:`retire`d log, writing nothing. Thread-safe."""
        with self._lock:
            for segment in self._segments:
                segment.close_handlers()
            for _, segment in self._pending_deletes:
                segment.close_handlers()
            self._pending_deletes.clear()

    @property
    def closed(self) -> bool:
        return self._closed

    # -- compaction (driven by storage.log_cleaner) --
    def cleaning_snapshot(self) -> LogSnapshot:
        """The segments and offsets the cleaner decides from, read together under the lock.
        Raises ``ValueError`` if the log is closed. Thread-safe."""
        with self._lock:
            self._check_open()
            return self._snapshot()

    def _snapshot(self) -> LogSnapshot:
        segments = tuple(
            SegmentSnapshot(
                base_offset=s.base_offset,
                size_in_bytes=s.size,
                largest_timestamp=s.largest_timestamp(),
                first_batch_timestamp=s.first_batch_timestamp(),
                offset_index_bytes=s.offset_index.size_in_bytes,
                time_index_bytes=s.time_index.size_in_bytes,
                last_modified_ms=s.log.last_modified_ms(),
                log_path=s.log.path,
            )
            for s in self._segments
        )
        return LogSnapshot(
            segments, self._log_start_offset, self._next_offset, self._last_stable_offset()
        )

    def begin_cleaning(self) -> tuple[LogSnapshot, list[LogSegment]]:
        """Start a cleaning pass: a snapshot, and the segment objects it describes (for
        :meth:`replace_segments`). A truncation or :meth:`close` before :meth:`end_cleaning`
        aborts the pass. Raises ``LogCleaningAbortedError`` if the log is closed or already
        being cleaned. Thread-safe."""
        with self._lock:
            if self._closed:
                raise LogCleaningAbortedError(f"the log {self._dir} is closed")
            if self._cleaning:
                raise LogCleaningAbortedError(f"the log {self._dir} is already being cleaned")
            self._cleaning = True
            self._cleaning_aborted = False
            return self._snapshot(), self._segments.values()

    def end_cleaning(self) -> None:
        """End the pass started by :meth:`begin_cleaning`. Thread-safe."""
        with self._lock:
            self._cleaning = False
            self._cleaning_aborted = False

    @property
    def cleaning_aborted(self) -> bool:
        """Whether the running pass must stop (read without the lock: a flag)."""
        return self._cleaning_aborted

    def take_cleaner_truncation(self) -> int | None:
        """The lowest active-segment base left by a truncation since the last call (None if
        none), for the cleaner to lower its checkpoint. Thread-safe."""
        with self._lock:
            found, self._cleaner_truncation = self._cleaner_truncation, None
            return found

    def replace_segments(self, new_segment: LogSegment, old_segments: Sequence[LogSegment]) -> None:
        """Swap a cleaned segment in for the segments it was made from (Kafka's
        ``LocalLog.replaceSegments``).

        ``new_segment`` is based at the first old segment's base, its files carry the
        ``.cleaned`` suffix and are flushed. Under the lock, in an order that a crash at any
        point leaves for :mod:`storage.log_loader` to abandon (before step 1 completes) or to
        finish (after):

        1. the new files are renamed ``.swap`` (``.log`` first) and the directory fsynced;
        2. the old segments leave the segment list and are renamed ``.deleted`` (their files
           are removed ``file_delete_delay_ms`` later);
        3. the ``.swap`` suffix is dropped and the directory fsynced.

        The producer snapshots at the replaced segments' base offsets (other than the new
        segment's) are deleted.

        Readers never see a mix: they hold the lock too. Raises ``LogCleaningAbortedError``,
        having changed nothing, if the pass was aborted, the log is closed, or an old segment
        is no longer in the log (retention removed it). Thread-safe.
        """
        with self._lock:
            if self._closed or self._cleaning_aborted:
                raise LogCleaningAbortedError(f"cleaning of {self._dir} was aborted")
            for old in old_segments:
                if self._segments.get(old.base_offset) is not old:
                    raise LogCleaningAbortedError(
                        f"segment {old.base_offset} of {self._dir} changed during cleaning"
                    )
            if not old_segments or new_segment.base_offset != old_segments[0].base_offset:
                raise ValueError("a cleaned segment takes the base offset of the first it replaces")
            if self._segments.active() in old_segments:
                raise ValueError("the active segment is never replaced")
            new_segment.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
            fsync_dir(self._dir)
            for old in old_segments:
                self._segments.remove(old.base_offset)
            self._segments.add(new_segment)
            self._schedule_delete(list(old_segments))
            # The snapshots taken when the replaced segments were rolled go with them (Kafka's
            # replaceSegments), or a compacted log would keep one per roll forever.
            self._producer_state.delete_snapshots(
                s.base_offset for s in old_segments if s.base_offset != new_segment.base_offset
            )
            new_segment.change_file_suffixes(SWAP_SUFFIX, "")
            fsync_dir(self._dir)
            self._hw_position = None

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"the log {self._dir} is closed")

    def __repr__(self) -> str:
        return (
            f"Log({self.topic}-{self.partition}, log_start_offset={self._log_start_offset}, "
            f"high_watermark={self._high_watermark}, log_end_offset={self._next_offset})"
        )
