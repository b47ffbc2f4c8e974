"""Which segments retention deletes: pure decisions, no I/O (Kafka `deleteOldSegments`).

``deletable_segments`` walks the segments oldest first and stops at the first one that is not
deletable, so retention only ever removes a prefix of the log. A segment is deletable only if
all of its offsets are below the high watermark (so nothing uncommitted or unreplicated is
removed) and it is not an empty active segment. Three reasons, checked in Kafka's order:

* ``log_start_offset`` — the segment lies wholly below the log start offset (delete-records);
* ``size`` — the log is larger than ``retention_bytes``; the oldest segments go while what
  remains is still at least ``retention_bytes``;
* ``time`` — the segment's largest record timestamp is older than ``retention_ms``.

Size and time apply only when the cleanup policy includes ``delete``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from storage.config import LogConfig

__all__ = ["RetentionReason", "SegmentSummary", "deletable_segments"]


class RetentionReason(Enum):
    LOG_START_OFFSET = "log_start_offset"
    SIZE = "size"
    TIME = "time"


@dataclass(frozen=True, slots=True)
class SegmentSummary:
    """What retention needs of a segment."""

    base_offset: int
    size_in_bytes: int
    largest_timestamp: int


def deletable_segments(
    segments: Sequence[SegmentSummary],
    *,
    log_end_offset: int,
    high_watermark: int,
    log_start_offset: int,
    config: LogConfig,
    now_ms: int,
) -> tuple[RetentionReason, list[SegmentSummary]] | None:
    """The oldest segments to delete and why, or None if retention removes nothing.

    ``segments`` is the whole log, oldest first; the last one is the active segment.
    """
    reasons: list[RetentionReason] = [RetentionReason.LOG_START_OFFSET]
    if config.delete:
        reasons += [RetentionReason.SIZE, RetentionReason.TIME]
    for reason in reasons:
        found = _deletable(
            segments, reason, log_end_offset, high_watermark, log_start_offset, config, now_ms
        )
        if found:
            return reason, found
    return None


def _deletable(
    segments: Sequence[SegmentSummary],
    reason: RetentionReason,
    log_end_offset: int,
    high_watermark: int,
    log_start_offset: int,
    config: LogConfig,
    now_ms: int,
) -> list[SegmentSummary]:
    if reason is RetentionReason.SIZE:
        if config.retention_bytes < 0:
            return []
        total = sum(s.size_in_bytes for s in segments)
        if total < config.retention_bytes:
            return []
        diff = total - config.retention_bytes
    out: list[SegmentSummary] = []
    for i, segment in enumerate(segments):
        is_last = i == len(segments) - 1
        upper_bound = log_end_offset if is_last else segments[i + 1].base_offset
        if high_watermark < upper_bound:
            break
        if is_last and segment.size_in_bytes == 0:
            break
        if reason is RetentionReason.LOG_START_OFFSET:
            if is_last or segments[i + 1].base_offset > log_start_offset:
                break
        elif reason is RetentionReason.SIZE:
            if diff - segment.size_in_bytes < 0:
                break
            diff -= segment.size_in_bytes
        elif config.retention_ms < 0 or now_ms - segment.largest_timestamp <= config.retention_ms:
            break
        out.append(segment)
    return out
