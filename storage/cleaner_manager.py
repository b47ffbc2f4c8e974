"""What the log cleaner cleans, and in which pieces: pure decisions, no I/O (Kafka's
``LogCleanerManager`` and ``Cleaner.groupSegmentsBySize``).

A compacted log has three sections (``[log start, first dirty)`` is *clean*: compacted at
least once; ``[first dirty, first uncleanable)`` is *cleanable*; the rest is not):

* the **first dirty offset** is the ``cleaner-offset-checkpoint`` entry, reset to the log start
  offset when it is below it or beyond the log end (:func:`cleanable_offsets`);
* the **first uncleanable offset** is the lowest of the last stable offset (the high watermark:
  nothing uncommitted is compacted), the active segment's base (it is never compacted) and the
  base of the first dirty segment holding a record newer than ``min_compaction_lag_ms``; it is
  then rounded down to a segment boundary.

A log is worth cleaning when its *dirty ratio* ``cleanable / (clean + cleanable)`` bytes is
above ``min_cleanable_dirty_ratio`` (strictly), or when it has cleanable bytes and the first
batch of some dirty segment is older than ``max_compaction_lag_ms``. Of those, the one with the
highest ratio — the filthiest — is cleaned first (:func:`filthiest`).

A pass rewrites every segment below its end in groups (:func:`group_segments_by_size`):
consecutive segments whose log bytes and each index's bytes stay within ``segment_bytes`` and
``segment_index_bytes``, and whose offsets fit 32-bit offsets relative to the group's base.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from storage.config import LogConfig

__all__ = [
    "LogSnapshot",
    "LogToClean",
    "OffsetsToClean",
    "SegmentSnapshot",
    "cleanable_offsets",
    "filthiest",
    "group_segments_by_size",
    "log_to_clean",
    "max_compaction_delay",
]

_INT32_MAX = 2**31 - 1

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class SegmentSnapshot:
    """What the cleaner needs of a segment, read under the log's lock."""

    base_offset: int
    size_in_bytes: int
    largest_timestamp: int
    """The largest record timestamp, else the file's mtime (as retention uses it)."""
    first_batch_timestamp: int
    """The first batch's max timestamp, -1 if none or the segment is empty."""
    offset_index_bytes: int
    time_index_bytes: int
    last_modified_ms: int
    log_path: Path


@dataclass(frozen=True, slots=True)
class LogSnapshot:
    """A consistent view of a log's segments (oldest first; the last one is active)."""

    segments: tuple[SegmentSnapshot, ...]
    log_start_offset: int
    log_end_offset: int
    last_stable_offset: int
    """The log's last stable offset (:meth:`storage.log.Log.last_stable_offset`: at most the
    high watermark, below any transaction still open): nothing at or above it is cleaned."""

    def __post_init__(self) -> None:
        if not self.segments:
            raise ValueError("a log always has an active segment")

    @property
    def active(self) -> SegmentSnapshot:
        return self.segments[-1]

    def _floor_index(self, offset: int) -> int:
        bases = [s.base_offset for s in self.segments]
        return max(0, bisect.bisect_right(bases, offset) - 1)

    def between(self, from_offset: int, to_offset: int) -> list[SegmentSnapshot]:
        """Segments overlapping ``[from_offset, to_offset)``: from the one containing
        ``from_offset`` to the last one based below ``to_offset`` (Kafka's ``logSegments``)."""
        if from_offset >= to_offset:
            return []
        lo = self._floor_index(from_offset)
        return [s for s in self.segments[lo:] if s.base_offset < to_offset]

    def non_active_from(self, offset: int) -> list[SegmentSnapshot]:
        """Non-active segments from the one containing ``offset`` (Kafka's
        ``nonActiveLogSegmentsFrom``)."""
        active = self.active
        if offset > active.base_offset:
            return []
        return self.between(offset, active.base_offset)


@dataclass(frozen=True, slots=True)
class OffsetsToClean:
    first_dirty_offset: int
    first_uncleanable_dirty_offset: int
    """Not yet rounded down to a segment boundary."""
    force_update_checkpoint: bool
    """The checkpointed offset was out of range and has been reset."""


def cleanable_offsets(
    log: LogSnapshot, checkpointed: int | None, config: LogConfig, now_ms: int
) -> OffsetsToClean:
    """Where the dirty section starts and where the uncleanable one does."""
    start = log.log_start_offset
    dirty = start if checkpointed is None else checkpointed
    force = False
    if dirty < start or dirty > log.log_end_offset:
        dirty, force = start, checkpointed is not None
    limits = [log.last_stable_offset, log.active.base_offset]
    lag = max(config.min_compaction_lag_ms, 0)
    if lag > 0:
        for segment in log.non_active_from(dirty):
            if segment.largest_timestamp > now_ms - lag:
                limits.append(segment.base_offset)
                break
    return OffsetsToClean(dirty, max(dirty, min(limits)), force)


def max_compaction_delay(
    log: LogSnapshot, first_dirty_offset: int, config: LogConfig, now_ms: int
) -> int:
    """How long past ``max_compaction_lag_ms`` the oldest dirty non-active segment's first
    batch is (0 if none is): a positive delay makes the log due whatever its ratio."""
    stamps = [
        s.first_batch_timestamp
        for s in log.non_active_from(first_dirty_offset)
        if s.first_batch_timestamp > 0
    ]
    if not stamps:
        return 0
    clean_until = now_ms - max(config.max_compaction_lag_ms, 0)
    earliest = min(stamps)
    return clean_until - earliest if earliest < clean_until else 0


@dataclass(frozen=True, slots=True)
class LogToClean:
    """A compacted log's sections, in bytes, and whether it is due (Kafka's ``LogToClean``)."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    """The end of the cleanable section, rounded down to a segment's base."""
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool
    force_update_checkpoint: bool

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        total = self.total_bytes
        return self.cleanable_bytes / total if total else 0.0

    def is_cleanable(self, min_cleanable_dirty_ratio: float) -> bool:
        """Due: the ratio is above the minimum, or the maximum lag is breached with something
        to clean."""
        return (
            self.need_compaction_now and self.cleanable_bytes > 0
        ) or self.cleanable_ratio > min_cleanable_dirty_ratio


def log_to_clean(
    log: LogSnapshot, checkpointed: int | None, config: LogConfig, now_ms: int
) -> LogToClean:
    """The sections of ``log`` given its checkpointed first dirty offset."""
    offsets = cleanable_offsets(log, checkpointed, config, now_ms)
    dirty = offsets.first_dirty_offset
    uncleanable_segments = log.non_active_from(offsets.first_uncleanable_dirty_offset)
    first_uncleanable = (
        uncleanable_segments[0].base_offset if uncleanable_segments else log.active.base_offset
    )
    clean_bytes = sum(s.size_in_bytes for s in log.segments if s.base_offset < dirty)
    cleanable_bytes = sum(
        s.size_in_bytes for s in log.between(min(dirty, first_uncleanable), first_uncleanable)
    )
    return LogToClean(
        first_dirty_offset=dirty,
        first_uncleanable_offset=first_uncleanable,
        clean_bytes=clean_bytes,
        cleanable_bytes=cleanable_bytes,
        need_compaction_now=max_compaction_delay(log, dirty, config, now_ms) > 0,
        force_update_checkpoint=offsets.force_update_checkpoint,
    )


def filthiest(candidates: Sequence[tuple[K, LogToClean, LogConfig]]) -> K | None:
    """The due log with the highest dirty ratio, or None. Empty logs are never due."""
    best: tuple[float, K] | None = None
    for key, to_clean, config in candidates:
        if to_clean.total_bytes == 0 or not to_clean.is_cleanable(config.min_cleanable_dirty_ratio):
            continue
        if best is None or to_clean.cleanable_ratio > best[0]:
            best = (to_clean.cleanable_ratio, key)
    return None if best is None else best[1]


def group_segments_by_size(
    segments: Sequence[SegmentSnapshot],
    *,
    max_size: int,
    max_index_size: int,
    first_uncleanable_offset: int,
) -> list[list[SegmentSnapshot]]:
    """Split consecutive ``segments`` into groups, each cleaned into one new segment.

    A segment joins the group before it while the group's log bytes stay ≤ ``max_size``, its
    offset-index bytes and time-index bytes each ≤ ``max_index_size``, and (unless the
    segment is empty) the segment's last offset — the next segment's base minus one, or
    ``first_uncleanable_offset - 1`` for the last — is within ``2**31 - 1`` of the group's
    base. Every segment is in exactly one group, in order.
    """
    groups: list[list[SegmentSnapshot]] = []
    i = 0
    n = len(segments)
    while i < n:
        head = segments[i]
        group = [head]
        log_size = head.size_in_bytes
        index_size = head.offset_index_bytes
        time_index_size = head.time_index_bytes
        i += 1
        while i < n:
            candidate = segments[i]
            last_offset = (
                segments[i + 1].base_offset - 1 if i + 1 < n else first_uncleanable_offset - 1
            )
            if (
                log_size + candidate.size_in_bytes > max_size
                or index_size + candidate.offset_index_bytes > max_index_size
                or time_index_size + candidate.time_index_bytes > max_index_size
                or (candidate.size_in_bytes > 0 and last_offset - head.base_offset > _INT32_MAX)
            ):
                break
            group.append(candidate)
            log_size += candidate.size_in_bytes
            index_size += candidate.offset_index_bytes
            time_index_size += candidate.time_index_bytes
            i += 1
        groups.append(group)
    return groups
