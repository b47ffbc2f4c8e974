"""Indexes against a dumb oracle: a Python list searched with ``bisect``.

Each example also draws the size of the warm section. With a tiny warm section, an index of a
few dozen entries exercises both the warm and the cold branch of the slot search.
"""

from __future__ import annotations

import bisect
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from storage.offset_index import OffsetIndex, OffsetPosition
from storage.time_index import NO_TIMESTAMP, TimeIndex, TimestampOffset

SETTINGS = settings(max_examples=200, deadline=None)

base_offsets = st.integers(min_value=0, max_value=2**40)
warm_sizes = st.sampled_from([0, 1, 2, 3, 7, 1024])


def _increasing(
    gap: st.SearchStrategy[int], start: int, min_size: int = 0
) -> st.SearchStrategy[list[int]]:
    """Running sums of ``start`` and the drawn gaps."""
    gaps = st.lists(gap, min_size=min_size, max_size=80)

    def accumulate(steps: list[int]) -> list[int]:
        out, value = [], start
        for step in steps:
            value += step
            out.append(value)
        return out

    return gaps.map(accumulate)


@contextmanager
def _offset_index(base: int, capacity: int, warm: int) -> Iterator[OffsetIndex]:
    with tempfile.TemporaryDirectory() as d:
        idx = OffsetIndex(Path(d) / f"{base:020d}.index", base, max(capacity, 1) * 8)
        idx._warm_entries = warm  # shrink the warm section so small indexes cross it
        try:
            yield idx
        finally:
            idx.close()


@contextmanager
def _time_index(base: int, capacity: int, warm: int) -> Iterator[TimeIndex]:
    with tempfile.TemporaryDirectory() as d:
        idx = TimeIndex(Path(d) / f"{base:020d}.timeindex", base, (capacity + 1) * 12)
        idx._warm_entries = warm
        try:
            yield idx
        finally:
            idx.close()


def _targets(data: st.DataObject, keys: list[int], low: int) -> list[int]:
    high = (keys[-1] if keys else low) + 5
    anywhere = st.integers(min_value=low - 5, max_value=high)
    exact = st.sampled_from(keys) if keys else anywhere
    return data.draw(st.lists(st.one_of(anywhere, exact), min_size=1, max_size=30))


# -- offset index -----------------------------------------------------------------------------


@st.composite
def offset_entries(draw: st.DrawFn) -> tuple[int, list[int], list[int]]:
    base = draw(base_offsets)
    offsets = draw(
        _increasing(st.integers(1, 50), base - 1)
    )  # the first entry may be the base offset
    positions = draw(_increasing(st.integers(1, 5_000), -1, min_size=len(offsets)))[: len(offsets)]
    return base, offsets, positions


@SETTINGS
@given(entries=offset_entries(), warm=warm_sizes, data=st.data())
def test_offset_lookup_matches_bisect(
    entries: tuple[int, list[int], list[int]], warm: int, data: st.DataObject
) -> None:
    base, offsets, positions = entries
    with _offset_index(base, len(offsets), warm) as idx:
        for offset, position in zip(offsets, positions, strict=True):
            idx.append(offset, position)
        for target in _targets(data, offsets, base):
            i = bisect.bisect_right(offsets, target) - 1
            expected = (
                OffsetPosition(base, 0) if i < 0 else OffsetPosition(offsets[i], positions[i])
            )
            assert idx.lookup(target) == expected
            assert idx.largest_lower_bound_slot(target) == i
            j = bisect.bisect_left(offsets, target)
            assert idx.smallest_upper_bound_slot(target) == (j if j < len(offsets) else -1)


@SETTINGS
@given(entries=offset_entries(), warm=warm_sizes, data=st.data())
def test_fetch_upper_bound_offset_matches_bisect(
    entries: tuple[int, list[int], list[int]], warm: int, data: st.DataObject
) -> None:
    base, offsets, positions = entries
    with _offset_index(base, len(offsets), warm) as idx:
        for offset, position in zip(offsets, positions, strict=True):
            idx.append(offset, position)
        start = data.draw(
            st.sampled_from([OffsetPosition(base, 0), *map(OffsetPosition, offsets, positions)])
        )
        for size in data.draw(st.lists(st.integers(min_value=0, max_value=20_000), max_size=20)):
            j = bisect.bisect_left(positions, start.position + size)
            expected = OffsetPosition(offsets[j], positions[j]) if j < len(offsets) else None
            assert idx.fetch_upper_bound_offset(start, size) == expected


@SETTINGS
@given(entries=offset_entries(), warm=warm_sizes, data=st.data())
def test_offset_truncate_to_matches_the_oracle(
    entries: tuple[int, list[int], list[int]], warm: int, data: st.DataObject
) -> None:
    base, offsets, positions = entries
    with _offset_index(base, len(offsets) + 1, warm) as idx:
        for offset, position in zip(offsets, positions, strict=True):
            idx.append(offset, position)
        model = list(zip(offsets, positions, strict=True))
        for target in _targets(data, offsets, base)[:3]:
            idx.truncate_to(target)
            model = [(o, p) for o, p in model if o < target]
            assert idx.entries == len(model)
            assert [idx.entry(i) for i in range(idx.entries)] == [OffsetPosition(*e) for e in model]
            assert idx.last_offset == (model[-1][0] if model else base)
        # The index keeps working from its new end.
        next_offset = idx.last_offset + 1 if model else base
        idx.append(next_offset, model[-1][1] + 1 if model else 0)
        assert idx.lookup(next_offset).offset == next_offset


@SETTINGS
@given(entries=offset_entries())
def test_offset_index_survives_close_and_reopen(entries: tuple[int, list[int], list[int]]) -> None:
    base, offsets, positions = entries
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "x.index"
        idx = OffsetIndex(path, base, max(len(offsets), 1) * 8)
        for offset, position in zip(offsets, positions, strict=True):
            idx.append(offset, position)
        idx.close()
        assert path.stat().st_size == 8 * len(offsets)
        reopened = OffsetIndex(path, base)
        try:
            reopened.sanity_check()
            assert [reopened.entry(i) for i in range(reopened.entries)] == [
                OffsetPosition(o, p) for o, p in zip(offsets, positions, strict=True)
            ]
        finally:
            reopened.close()


# -- time index -------------------------------------------------------------------------------


@st.composite
def time_entries(draw: st.DrawFn) -> tuple[int, list[int], list[int]]:
    """Strictly increasing timestamps with non-decreasing offsets (repeats allowed)."""
    base = draw(base_offsets)
    timestamps = draw(_increasing(st.integers(1, 1_000), -1))
    # Many repeated offsets: truncation must drop every copy of an offset.
    offset_gaps = st.one_of(st.just(0), st.integers(0, 20))
    offsets = draw(_increasing(offset_gaps, base, min_size=len(timestamps)))[: len(timestamps)]
    return base, timestamps, offsets


@SETTINGS
@given(entries=time_entries(), warm=warm_sizes, data=st.data())
def test_time_lookup_matches_bisect(
    entries: tuple[int, list[int], list[int]], warm: int, data: st.DataObject
) -> None:
    base, timestamps, offsets = entries
    with _time_index(base, len(timestamps), warm) as idx:
        for ts, offset in zip(timestamps, offsets, strict=True):
            idx.maybe_append(ts, offset)
        assert idx.entries == len(timestamps)
        for target in _targets(data, timestamps, 0):
            i = bisect.bisect_right(timestamps, target) - 1
            expected = (
                TimestampOffset(NO_TIMESTAMP, base)
                if i < 0
                else TimestampOffset(timestamps[i], offsets[i])
            )
            assert idx.lookup(target) == expected


@SETTINGS
@given(entries=time_entries(), warm=warm_sizes, data=st.data())
def test_time_truncate_to_matches_the_oracle(
    entries: tuple[int, list[int], list[int]], warm: int, data: st.DataObject
) -> None:
    base, timestamps, offsets = entries
    with _time_index(base, len(timestamps), warm) as idx:
        for ts, offset in zip(timestamps, offsets, strict=True):
            idx.maybe_append(ts, offset)
        model = list(zip(timestamps, offsets, strict=True))
        for target in _targets(data, offsets, base)[:3]:
            idx.truncate_to(target)
            model = [(t, o) for t, o in model if o < target]
            assert [idx.entry(i) for i in range(idx.entries)] == [
                TimestampOffset(*e) for e in model
            ]
            assert idx.last_entry == (
                TimestampOffset(*model[-1]) if model else TimestampOffset(-1, base)
            )


@SETTINGS
@given(
    base=base_offsets,
    steps=st.lists(
        st.tuples(st.integers(min_value=0, max_value=3), st.integers(min_value=0, max_value=3)),
        max_size=60,
    ),
)
def test_maybe_append_keeps_only_strictly_larger_timestamps(
    base: int, steps: list[tuple[int, int]]
) -> None:
    # Timestamps and offsets that never go down: the index keeps exactly the records that
    # raise the maximum timestamp above the last kept one (and above NO_TIMESTAMP).
    with _time_index(base, len(steps) + 1, 682) as idx:
        model: list[tuple[int, int]] = []
        ts, offset = NO_TIMESTAMP, base
        for dts, doffset in steps:
            ts, offset = ts + dts, offset + doffset
            idx.maybe_append(ts, offset)
            if ts > (model[-1][0] if model else NO_TIMESTAMP):
                model.append((ts, offset))
        assert [idx.entry(i) for i in range(idx.entries)] == [TimestampOffset(*e) for e in model]
