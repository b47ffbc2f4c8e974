"""The segments of one log, ordered by base offset (Kafka's ``LogSegments``).

A sorted list of base offsets beside a dict, so floor and ceiling lookups are ``bisect``
calls. Not thread-safe: the owning ``Log`` holds its lock around every use, and readers that
need a stable view take :meth:`LogSegments.values` (a copy).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from storage.log_segment import LogSegment

__all__ = ["LogSegments"]


class LogSegments:
    """Segments keyed and ordered by base offset. The last one is the active segment."""

    def __init__(self) -> None:
        self._bases: list[int] = []
        self._by_base: dict[int, LogSegment] = {}

    def __len__(self) -> int:
        return len(self._bases)

    def __iter__(self) -> Iterator[LogSegment]:
        return (self._by_base[b] for b in self._bases)

    def __contains__(self, base_offset: object) -> bool:
        return base_offset in self._by_base

    def add(self, segment: LogSegment) -> LogSegment | None:
        """Insert or replace the segment at its base offset; returns the one replaced."""
        old = self._by_base.get(segment.base_offset)
        if old is None:
            bisect.insort(self._bases, segment.base_offset)
        self._by_base[segment.base_offset] = segment
        return old

    def remove(self, base_offset: int) -> LogSegment | None:
        segment = self._by_base.pop(base_offset, None)
        if segment is not None:
            del self._bases[bisect.bisect_left(self._bases, base_offset)]
        return segment

    def clear(self) -> list[LogSegment]:
        out = self.values()
        self._bases.clear()
        self._by_base.clear()
        return out

    def get(self, base_offset: int) -> LogSegment | None:
        return self._by_base.get(base_offset)

    def values(
        self, from_offset: int | None = None, to_offset: int | None = None
    ) -> list[LogSegment]:
        """Segments from the one containing ``from_offset`` (its floor) up to, not including,
        the first whose base offset is ≥ ``to_offset``."""
        lo = 0
        if from_offset is not None:
            lo = max(0, bisect.bisect_right(self._bases, from_offset) - 1)
        hi = len(self._bases) if to_offset is None else bisect.bisect_left(self._bases, to_offset)
        return [self._by_base[b] for b in self._bases[lo:hi]]

    def floor(self, offset: int) -> LogSegment | None:
        """The segment with the largest base offset ≤ ``offset``."""
        i = bisect.bisect_right(self._bases, offset)
        return self._by_base[self._bases[i - 1]] if i else None

    def higher(self, base_offset: int) -> LogSegment | None:
        """The segment after the one based at ``base_offset``."""
        i = bisect.bisect_right(self._bases, base_offset)
        return self._by_base[self._bases[i]] if i < len(self._bases) else None

    def first(self) -> LogSegment | None:
        return self._by_base[self._bases[0]] if self._bases else None

    def last(self) -> LogSegment | None:
        return self._by_base[self._bases[-1]] if self._bases else None

    def active(self) -> LogSegment:
        """The last segment. Raises ``LookupError`` if there is none (never, once loaded)."""
        if not self._bases:
            raise LookupError("the log has no segments")
        return self._by_base[self._bases[-1]]

    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._by_base.values())
