"""One segment of a partition log: a ``.log`` file, its ``.index`` and ``.timeindex``, and
its ``.txnindex``.

On disk, inside the partition directory, a segment whose first offset is ``B`` is::

    <B:020d>.log         record batches (storage.file_records)
    <B:020d>.index       sparse offset index, 8-byte entries (storage.offset_index)
    <B:020d>.timeindex   sparse time index, 12-byte entries (storage.time_index)
    <B:020d>.txnindex    aborted transactions whose ABORT marker is in this segment,
                         34-byte entries (storage.transaction_index); only once there is one

with an optional suffix on all four while a segment is being deleted (``.deleted``) or
swapped in by compaction (``.cleaned``, ``.swap``).

Invariants: ``base_offset`` ≤ every offset in the segment, and every offset is at most
``base_offset + 2**31 - 1`` (indexes store 32-bit relative offsets). Index entries are added
after at least ``index_interval_bytes`` of batches since the previous entry, keyed by a batch's
*last* offset and pointing at the *start* of that batch; the first batch never gets one.

Crash policy: the indexes are derived data. Appends reach the page cache only; ``flush`` fsyncs
the log and the indexes. After an unclean stop, ``recover`` re-reads the log, validates every
batch (CRC-32C), rebuilds the offset and time indexes and cuts the file at the first invalid
batch. The ``.txnindex`` needs the partition's producer state to be rebuilt: the log does that
(:meth:`storage.log.Log.open` rewrites the entries of every marker it replays).

Concurrency: not thread-safe on its own; the owning ``Log`` serialises every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from odradek.errors import CorruptRecordError
from odradek.records import NO_TIMESTAMP, RECORD_BATCH_OVERHEAD, RecordBatch
from storage.config import LogConfig
from storage.errors import InvalidOffsetError, LogSegmentOffsetOverflowError
from storage.file_records import FileRecords, FileSlice
from storage.offset_index import OffsetIndex, OffsetPosition
from storage.time_index import TimeIndex, TimestampOffset
from storage.transaction_index import TXN_INDEX_SUFFIX, TransactionIndex

__all__ = [
    "LOG_SUFFIX",
    "INDEX_SUFFIX",
    "TIME_INDEX_SUFFIX",
    "DELETED_SUFFIX",
    "CLEANED_SUFFIX",
    "SWAP_SUFFIX",
    "BatchInfo",
    "FetchDataInfo",
    "LogOffsetMetadata",
    "LogSegment",
    "TimestampAndOffset",
    "filename_prefix_from_offset",
    "offset_from_file_name",
]

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"

_INT32_MAX = 2**31 - 1


def filename_prefix_from_offset(offset: int) -> str:
    """The 20-digit zero-padded base offset that names a segment's files."""
    return f"{offset:020d}"


def offset_from_file_name(name: str) -> int:
    """The base offset in a segment file name (``00000000000000000042.log`` → 42).

    Raises ``ValueError`` if the name does not start with digits followed by a dot.
    """
    return int(name[: name.index(".")])


@dataclass(frozen=True, slots=True)
class LogOffsetMetadata:
    """An offset with where it sits: its segment's base offset and byte position there."""

    message_offset: int
    segment_base_offset: int = -1
    relative_position: int = -1


@dataclass(frozen=True, slots=True)
class FetchDataInfo:
    """The result of a read: whole batches as raw bytes, not decoded; or, read ``as_slice``,
    ``records`` empty and ``slice`` the part of the segment file holding them.

    ``records`` may end in a partial batch (the reader drops it); ``first_entry_incomplete``
    is true when even the first batch did not fit (only possible without ``min_one_message``).
    """

    fetch_offset_metadata: LogOffsetMetadata
    records: bytes | memoryview
    first_entry_incomplete: bool = False
    slice: FileSlice | None = None


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    """A ListOffsets answer: the first offset with a timestamp ≥ the target, and its time."""

    timestamp: int
    offset: int
    leader_epoch: int | None = None


class BatchInfo(NamedTuple):
    """What an append needs to know of each batch it writes (from the batch header).

    A named tuple rather than a dataclass: one is made per batch on the append path.
    """

    last_offset: int
    max_timestamp: int
    size_in_bytes: int


class LogSegment:
    """A segment: its log file, offset index and time index. See the module docstring."""

    def __init__(
        self,
        log: FileRecords,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
        base_offset: int,
        index_interval_bytes: int,
        roll_jitter_ms: int,
        created_ms: int,
    ) -> None:
        self.log = log
        self.offset_index = offset_index
        self.time_index = time_index
        self.txn_index = TransactionIndex(
            log.path.with_name(log.path.name.replace(LOG_SUFFIX, TXN_INDEX_SUFFIX, 1)),
            base_offset,
        )
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self.created_ms = created_ms
        self._bytes_since_last_index_entry = 0
        # The timestamp of the first batch, the base of time-based rolling; loaded lazily for
        # segments opened from disk (None: not known yet; NO_TIMESTAMP: no record time).
        self._rolling_based_timestamp: int | None = None
        last = time_index.last_entry
        self._max_timestamp_so_far = last.timestamp
        self._offset_of_max_timestamp_so_far = last.offset

    # -- construction --
    @classmethod
    def open(
        cls,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        segment_index_bytes: int,
        created_ms: int,
        roll_jitter_ms: int = 0,
        preallocate: bool = False,
        init_file_size: int = 0,
        file_suffix: str = "",
    ) -> LogSegment:
        """Open (creating if missing) the segment starting at ``base_offset`` in ``directory``.

        Raises ``OSError`` for I/O failures.
        """
        prefix = filename_prefix_from_offset(base_offset)
        log = FileRecords(
            directory / f"{prefix}{LOG_SUFFIX}{file_suffix}",
            preallocate=preallocate,
            init_file_size=init_file_size,
        )
        offset_index = OffsetIndex(
            directory / f"{prefix}{INDEX_SUFFIX}{file_suffix}", base_offset, segment_index_bytes
        )
        time_index = TimeIndex(
            directory / f"{prefix}{TIME_INDEX_SUFFIX}{file_suffix}",
            base_offset,
            segment_index_bytes,
        )
        return cls(
            log,
            offset_index,
            time_index,
            base_offset,
            index_interval_bytes,
            roll_jitter_ms,
            created_ms,
        )

    @classmethod
    def for_config(
        cls,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        *,
        created_ms: int,
        roll_jitter_ms: int = 0,
        file_suffix: str = "",
    ) -> LogSegment:
        """:meth:`open` with the index and preallocation settings of ``config``."""
        return cls.open(
            directory,
            base_offset,
            index_interval_bytes=config.index_interval_bytes,
            segment_index_bytes=config.segment_index_bytes,
            created_ms=created_ms,
            roll_jitter_ms=roll_jitter_ms,
            preallocate=config.preallocate,
            init_file_size=config.segment_bytes if config.preallocate else 0,
            file_suffix=file_suffix,
        )

    # -- properties --
    @property
    def size(self) -> int:
        """Valid bytes in the ``.log`` file."""
        return self.log.size

    @property
    def max_timestamp_so_far(self) -> int:
        return self._max_timestamp_so_far

    @property
    def offset_of_max_timestamp_so_far(self) -> int:
        return self._offset_of_max_timestamp_so_far

    def largest_timestamp(self) -> int:
        """The largest record timestamp, or the file's mtime if no record has one (Kafka)."""
        if self._max_timestamp_so_far >= 0:
            return self._max_timestamp_so_far
        return self.log.last_modified_ms()

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= _INT32_MAX

    # -- appends --
    def append(self, data: bytes | bytearray | memoryview, batches: Sequence[BatchInfo]) -> None:
        """Append whole batches ``data`` (described, in order, by ``batches``).

        Adds an index entry for each batch that starts after more than
        ``index_interval_bytes`` since the previous entry. Raises
        ``LogSegmentOffsetOverflowError`` if the last offset does not fit this segment.
        """
        if not batches:
            return
        physical_position = self.log.size
        if physical_position == 0:
            self._rolling_based_timestamp = batches[0].max_timestamp
        largest_offset = batches[-1].last_offset
        if not self.can_convert_to_relative_offset(largest_offset):
            raise LogSegmentOffsetOverflowError(
                f"offset {largest_offset} does not fit segment {self.base_offset} ({self.log.path})"
            )
        self.log.append(data)
        interval = self.index_interval_bytes
        for batch in batches:
            if batch.max_timestamp > self._max_timestamp_so_far:
                self._max_timestamp_so_far = batch.max_timestamp
                self._offset_of_max_timestamp_so_far = batch.last_offset
            if self._bytes_since_last_index_entry > interval:
                self.offset_index.append(batch.last_offset, physical_position)
                self.time_index.maybe_append(
                    self._max_timestamp_so_far, self._offset_of_max_timestamp_so_far
                )
                self._bytes_since_last_index_entry = 0
            physical_position += batch.size_in_bytes
            self._bytes_since_last_index_entry += batch.size_in_bytes

    # -- reads --
    def translate_offset(
        self, offset: int, starting_file_position: int = 0
    ) -> tuple[int, RecordBatch] | None:
        """The first batch whose last offset is ≥ ``offset``, with its file position.

        Starts at the index's floor entry (or ``starting_file_position`` if later) and scans
        batch headers forward. None if there is no such batch in this segment.
        """
        mapping = self.offset_index.lookup(offset)
        start = max(mapping.position, starting_file_position)
        # The wanted batch starts within index_interval_bytes (plus one batch) of the index
        # entry: reads of that size end the scan in one or two small reads, where one large
        # read would copy far more than the headers needed.
        chunk = max(512, self.index_interval_bytes + RECORD_BATCH_OVERHEAD)
        for position, batch in self.log.batch_headers(start, chunk_bytes=chunk):
            if batch.last_offset >= offset:
                return position, batch
        return None

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_position: int | None = None,
        min_one_message: bool = False,
        as_slice: bool = False,
    ) -> FetchDataInfo | None:
        """Read whole batches from the one containing ``start_offset``.

        At most ``max_size`` bytes (at least the first batch with ``min_one_message``), never
        past byte ``max_position`` (default: the segment's size). None if no batch at or after
        ``start_offset`` is in this segment. ``as_slice``: the records as a :class:`FileSlice`
        of the segment file, not read. Raises ``ValueError`` for a negative ``max_size``.
        """
        if max_size < 0:
            raise ValueError(f"invalid max size {max_size} for log read from {self.log.path}")
        if max_position is None:
            max_position = self.log.size
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        start_position, batch = found
        batch_size = batch.size_in_bytes
        metadata = LogOffsetMetadata(start_offset, self.base_offset, start_position)
        adjusted_max_size = max(max_size, batch_size) if min_one_message else max_size
        if adjusted_max_size == 0:
            return FetchDataInfo(metadata, b"")
        fetch_size = min(max_position - start_position, adjusted_max_size)
        if fetch_size <= 0:
            return FetchDataInfo(metadata, b"")
        incomplete = adjusted_max_size < batch_size
        if as_slice:
            return FetchDataInfo(
                metadata, b"", incomplete, self.log.slice(start_position, fetch_size)
            )
        return FetchDataInfo(metadata, self.log.read(start_position, fetch_size), incomplete)

    def read_next_offset(self) -> int:
        """The offset after the last batch in the segment (``base_offset`` if empty)."""
        start = self.offset_index.lookup(self.offset_index.last_offset).position
        next_offset = self.base_offset
        for _, batch in self.log.batch_headers(start):
            next_offset = batch.last_offset + 1
        return next_offset

    def find_offset_by_timestamp(
        self, timestamp: int, starting_offset: int
    ) -> TimestampAndOffset | None:
        """The first batch record with timestamp ≥ ``timestamp`` at offset ≥ ``starting_offset``.

        Uses the time index to skip ahead, then decodes the batches from there. None if none.
        Raises ``CorruptRecordError`` if a batch scanned cannot be decoded.
        """
        entry = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(entry.offset, starting_offset)).position
        for pos, header in self.log.batch_headers(position):
            if header.max_timestamp < timestamp or header.last_offset < starting_offset:
                continue
            full = RecordBatch(self.log.read(pos, header.size_in_bytes))
            for record in full.records():
                ts = record.timestamp if record.timestamp is not None else NO_TIMESTAMP
                offset = record.offset if record.offset is not None else -1
                if ts >= timestamp and offset >= starting_offset:
                    return TimestampAndOffset(ts, offset, full.partition_leader_epoch)
        return None

    # -- rolling --
    def first_batch_timestamp(self) -> int:
        """The first batch's max timestamp (the base of time-based rolling and of
        ``max_compaction_lag_ms``); ``NO_TIMESTAMP`` if the segment is empty. Read once."""
        if self._rolling_based_timestamp is None:
            self._rolling_based_timestamp = NO_TIMESTAMP
            for _, batch in self.log.batch_headers(0):
                self._rolling_based_timestamp = batch.max_timestamp
                break
        return self._rolling_based_timestamp

    def time_waited_for_roll(self, now_ms: int, message_timestamp: int) -> int:
        """How long the segment has been filling, by record time when records carry it."""
        first = self.first_batch_timestamp()
        if first >= 0:
            return message_timestamp - first
        return now_ms - self.created_ms

    def should_roll(
        self,
        *,
        max_segment_ms: int,
        max_segment_bytes: int,
        max_timestamp_in_messages: int,
        max_offset_in_messages: int,
        messages_size: int,
        now_ms: int,
    ) -> bool:
        """Kafka's roll conditions (``RollParams``): the append would pass ``segment_bytes``;
        the segment is not empty and has been filling longer than ``segment_ms`` minus its
        jitter; an index is full; or the append's last offset does not fit the segment."""
        size = self.log.size
        return (
            size > max_segment_bytes - messages_size
            or (
                size > 0
                and self.time_waited_for_roll(now_ms, max_timestamp_in_messages)
                > max_segment_ms - self.roll_jitter_ms
            )
            or self.offset_index.is_full()
            or self.time_index.is_full()
            or not self.can_convert_to_relative_offset(max_offset_in_messages)
        )

    def on_become_inactive_segment(self) -> None:
        """Write the final time-index entry and trim the indexes and a preallocated log."""
        self.time_index.maybe_append(
            self._max_timestamp_so_far, self._offset_of_max_timestamp_so_far, skip_full_check=True
        )
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.log.trim()

    def resize_indexes(self, size: int) -> None:
        """Regrow both indexes to ``size`` bytes (for the active segment)."""
        self.offset_index.resize(size)
        self.time_index.resize(size)

    def sanity_check(self, timeindex_existed: bool) -> None:
        """Check the offset and time indexes (the log checks the ``.txnindex``). Raises
        ``CorruptIndexError``; a missing ``.index`` is caught by the loader before this is
        called."""
        self.offset_index.sanity_check()
        if timeindex_existed:
            self.time_index.sanity_check()

    # -- recovery and truncation --
    def recover(self, max_batch_bytes: int | None = None) -> int:
        """Rebuild both indexes from the log and cut it at the first invalid batch.

        A batch is invalid if its header is corrupt, its CRC-32C does not match, it is larger
        than ``max_batch_bytes``, its offsets do not increase or do not fit this segment.
        Returns the number of bytes truncated. Raises ``OSError`` for I/O failures.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.offset_index.resize(self.offset_index.max_index_size)
        self.time_index.resize(self.time_index.max_index_size)
        self._max_timestamp_so_far = NO_TIMESTAMP
        self._offset_of_max_timestamp_so_far = self.base_offset
        self._rolling_based_timestamp = None
        valid_bytes = 0
        last_index_entry = 0
        next_expected = self.base_offset
        try:
            for position, batch in self.log.full_batches(0):
                batch.validate()
                if max_batch_bytes is not None and batch.size_in_bytes > max_batch_bytes:
                    raise CorruptRecordError(
                        f"batch of {batch.size_in_bytes} bytes exceeds {max_batch_bytes}"
                    )
                if batch.base_offset < next_expected or batch.last_offset < batch.base_offset:
                    raise InvalidOffsetError(
                        f"batch at {position} has offsets {batch.base_offset}..."
                        f"{batch.last_offset}, expected at least {next_expected}"
                    )
                if not self.can_convert_to_relative_offset(batch.last_offset):
                    raise InvalidOffsetError(f"offset {batch.last_offset} overflows the segment")
                if batch.max_timestamp > self._max_timestamp_so_far:
                    self._max_timestamp_so_far = batch.max_timestamp
                    self._offset_of_max_timestamp_so_far = batch.last_offset
                if valid_bytes - last_index_entry > self.index_interval_bytes:
                    self.offset_index.append(batch.last_offset, valid_bytes)
                    self.time_index.maybe_append(
                        self._max_timestamp_so_far, self._offset_of_max_timestamp_so_far
                    )
                    last_index_entry = valid_bytes
                valid_bytes += batch.size_in_bytes
                next_expected = batch.last_offset + 1
        except (CorruptRecordError, InvalidOffsetError):
            pass  # everything from here on is cut below
        truncated = self.log.size - valid_bytes
        self.log.truncate_to(valid_bytes)
        self.offset_index.trim_to_valid_size()
        self.time_index.maybe_append(
            self._max_timestamp_so_far, self._offset_of_max_timestamp_so_far, skip_full_check=True
        )
        self.time_index.trim_to_valid_size()
        self._bytes_since_last_index_entry = valid_bytes - last_index_entry
        return truncated

    def truncate_to(self, offset: int, now_ms: int) -> int:
        """Remove every batch whose last offset is ≥ ``offset`` (whole batches: a batch that
        contains ``offset`` goes too). Returns the bytes removed."""
        found = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.offset_index.resize(self.offset_index.max_index_size)
        self.time_index.resize(self.time_index.max_index_size)
        if found is None:
            return 0
        position, _ = found
        removed = self.log.truncate_to(position)
        self._bytes_since_last_index_entry = 0
        if self.log.size == 0:
            self.created_ms = now_ms
            self._rolling_based_timestamp = None
        self._reload_largest_timestamp()
        return removed

    def _reload_largest_timestamp(self) -> None:
        last: TimestampOffset = self.time_index.last_entry
        self._max_timestamp_so_far = last.timestamp
        self._offset_of_max_timestamp_so_far = last.offset
        start: OffsetPosition = self.offset_index.lookup(last.offset)
        for _, batch in self.log.batch_headers(start.position):
            if batch.max_timestamp > self._max_timestamp_so_far:
                self._max_timestamp_so_far = batch.max_timestamp
                self._offset_of_max_timestamp_so_far = batch.last_offset

    # -- files --
    def flush(self) -> None:
        """fsync the log and the indexes. Raises ``OSError``."""
        self.log.flush()
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        """Write the final time-index entry, trim and close the files."""
        self.time_index.maybe_append(
            self._max_timestamp_so_far, self._offset_of_max_timestamp_so_far, skip_full_check=True
        )
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        self.log.close()

    def close_handlers(self) -> None:
        """Close the files without trimming or writing anything."""
        self.offset_index.close_handler()
        self.time_index.close_handler()
        self.txn_index.close()
        self.log.close_handler()

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        """Rename the files from ``old_suffix`` to ``new_suffix`` (e.g. to ``.deleted``)."""
        for f in (self.log, self.offset_index, self.time_index, self.txn_index):
            name = f.path.name
            stem = name[: len(name) - len(old_suffix)] if old_suffix else name
            f.rename_to(f.path.with_name(stem + new_suffix))

    def delete_if_exists(self) -> None:
        """Remove the files (closing them first)."""
        self.log.delete_if_exists()
        self.offset_index.delete_if_exists()
        self.time_index.delete_if_exists()
        self.txn_index.delete_if_exists()

    def __repr__(self) -> str:
        return (
            f"LogSegment(base_offset={self.base_offset}, size={self.log.size}, "
            f"path={self.log.path})"
        )
