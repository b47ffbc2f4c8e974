"""Planning reads: offset ranges, how they are split into Spark partitions, how a trigger's
record limit is spread over topic-partitions, and the streaming offset JSON.

Mirrors Spark's ``KafkaOffsetRangeCalculator`` (split the biggest ranges so there are at least
``minPartitions`` Spark partitions, each range into pieces of at most
``maxRecordsPerPartition`` records) and ``KafkaMicroBatchStream.rateLimit`` (a trigger's limit
shared between partitions in proportion to their backlog, rounding a share below one record
up so that a small partition still moves).

Pure; thread-safe.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from odradek.client.types import TopicPartition

__all__ = [
    "OffsetRange",
    "offsets_from_json",
    "offsets_to_json",
    "rate_limit",
    "split_ranges",
]


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Records ``[start, end)`` of one topic-partition."""

    tp: TopicPartition
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(self.end - self.start, 0)


def _pieces(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """``r`` cut into ``parts`` contiguous pieces of (nearly) equal size."""
    parts = max(1, min(parts, r.size))
    out: list[OffsetRange] = []
    for i in range(parts):
        start = r.start + r.size * i // parts
        end = r.start + r.size * (i + 1) // parts
        out.append(OffsetRange(r.tp, start, end))
    return out


def split_ranges(
    ranges: list[OffsetRange], min_partitions: int | None, max_records: int | None
) -> list[OffsetRange]:
    """The ranges to read, one Spark partition each: empty ranges dropped; with
    ``min_partitions`` above the number of ranges, ranges split in proportion to their size
    (as Spark's ``KafkaOffsetRangeCalculator``); then any piece above ``max_records`` split
    into pieces of at most that many records. Order: by topic-partition, then offset."""
    kept = [r for r in ranges if r.size > 0]
    if min_partitions is not None and min_partitions > len(kept):
        total = sum(r.size for r in kept)
        split: list[OffsetRange] = []
        for r in kept:
            share = r.size / total * min_partitions
            split.extend(_pieces(r, max(1, math.ceil(share)) if share > 1 else 1))
        kept = split
    if max_records is not None:
        kept = [piece for r in kept for piece in _pieces(r, math.ceil(r.size / max_records))]
    return sorted(kept, key=lambda r: (r.tp, r.start))


def rate_limit(
    start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], limit: int
) -> dict[TopicPartition, int]:
    """The end offsets of a micro-batch reading at most about ``limit`` records from
    ``start`` towards ``latest``, each partition's share proportional to its backlog (Spark's
    ``rateLimit``: a share below one record is rounded up, others down). ``start`` holds every
    partition of ``latest``."""
    backlog = {tp: max(latest[tp] - start[tp], 0) for tp in latest}
    total = sum(backlog.values())
    if total <= limit:
        return dict(latest)
    out: dict[TopicPartition, int] = {}
    for tp, end in latest.items():
        begin = start[tp]
        size = backlog[tp]
        if size == 0:
            out[tp] = begin
            continue
        share = limit * size / total
        step = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(begin + step, end)
    return out


def delay_batch(
    start: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    min_offsets: int,
    last_trigger_ms: int,
    now_ms: int,
    max_delay_ms: int,
) -> bool:
    """Whether to skip this trigger (Spark's Kafka ``delayBatch``): fewer than ``min_offsets``
    new records since ``start``, and less than ``max_delay_ms`` since the last batch."""
    if now_ms - last_trigger_ms >= max_delay_ms:
        return False
    new = sum(max(latest[tp] - start.get(tp, latest[tp]), 0) for tp in latest)
    return new < min_offsets


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Spark's offset JSON: ``{"topic": {"0": 12}}``, partition keys as strings (JSON object
    keys come back as strings from the checkpoint anyway)."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return out


def offsets_from_json(data: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    """The inverse of :func:`offsets_to_json`."""
    return {
        TopicPartition(topic, int(partition)): int(offset)
        for topic, parts in data.items()
        for partition, offset in parts.items()
    }
