"""Flush (fsync) latencies of a node's logs, as Kafka's ``LogFlushStats.LogFlushRateAndTimeMs``.

A :class:`LogFlushStats` is shared by every log of a ``LogManager``; each flush that syncs
something records its duration in milliseconds (the injected clock's resolution). Readers take
a :meth:`snapshot` (the broker's metrics endpoint turns it into a histogram at scrape time).
No I/O; thread-safe.
"""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass

FLUSH_BUCKETS_MS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000)
"""Upper bounds (inclusive, ms) of the histogram's buckets; a last one is unbounded."""


@dataclass(frozen=True, slots=True)
class FlushSnapshot:
    """Counts per bucket (not cumulative; one more than :data:`FLUSH_BUCKETS_MS` for the
    overflow), the sum of the durations in ms, and the number of flushes."""

    bucket_counts: tuple[int, ...]
    sum_ms: int
    count: int


class LogFlushStats:
    """Counts of flush durations. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = [0] * (len(FLUSH_BUCKETS_MS) + 1)
        self._sum_ms = 0
        self._count = 0

    def record(self, duration_ms: int) -> None:
        index = bisect.bisect_left(FLUSH_BUCKETS_MS, duration_ms)
        with self._lock:
            self._counts[index] += 1
            self._sum_ms += duration_ms
            self._count += 1

    def snapshot(self) -> FlushSnapshot:
        with self._lock:
            return FlushSnapshot(tuple(self._counts), self._sum_ms, self._count)
