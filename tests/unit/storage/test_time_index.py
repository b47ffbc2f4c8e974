"""TimeIndex (ported from Kafka's TimeIndexTest, plus the file behaviours specific to it)."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from storage.errors import (
    CorruptIndexError,
    IndexFullError,
    IndexOffsetOverflowError,
    InvalidOffsetError,
)
from storage.time_index import NO_TIMESTAMP, TimeIndex, TimestampOffset

BASE = 45
MAX_ENTRIES = 30


@pytest.fixture
def index(tmp_path: Path) -> Iterator[TimeIndex]:
    idx = TimeIndex(tmp_path / f"{BASE:020d}.timeindex", BASE, MAX_ENTRIES * 12)
    yield idx
    idx.close()


def _append_entries(idx: TimeIndex, n: int) -> None:
    """Kafka's appendEntries: (i * 10, base + i * 10) for i in 1..n."""
    for i in range(1, n + 1):
        idx.maybe_append(i * 10, BASE + i * 10)


def _all(idx: TimeIndex) -> list[TimestampOffset]:
    return [idx.entry(i) for i in range(idx.entries)]


# -- creation and format -------------------------------------------------------------------


def test_new_file_is_preallocated_to_a_whole_number_of_entries(tmp_path: Path) -> None:
    path = tmp_path / "a.timeindex"
    idx = TimeIndex(path, BASE, MAX_ENTRIES * 12 + 11)
    try:
        assert path.stat().st_size == MAX_ENTRIES * 12
        assert idx.max_entries == MAX_ENTRIES
        assert idx.entries == 0
        assert idx.entry_size == 12
        assert idx.last_entry == TimestampOffset(NO_TIMESTAMP, BASE)
    finally:
        idx.close()


def test_default_size_holds_873813_entries_of_which_873812_usable(tmp_path: Path) -> None:
    idx = TimeIndex(tmp_path / "a.timeindex", 0)
    try:
        assert idx.max_entries == 873_813
        assert idx.file_length() == 873_813 * 12
    finally:
        idx.close()


def test_max_index_size_below_one_entry_is_rejected_for_a_new_file(tmp_path: Path) -> None:
    path = tmp_path / "a.timeindex"
    with pytest.raises(ValueError, match="max index size"):
        TimeIndex(path, BASE, 11)
    assert not path.exists()


def test_entries_are_big_endian_timestamp_then_relative_offset(index: TimeIndex) -> None:
    index.maybe_append(1_700_000_000_000, BASE + 7)
    index.flush()
    raw = index.path.read_bytes()
    assert raw[:12] == struct.pack(">qi", 1_700_000_000_000, 7)
    assert raw[12:] == bytes(len(raw) - 12)


# -- lookup and entry -----------------------------------------------------------------------


def test_lookup(index: TimeIndex) -> None:
    assert index.lookup(100) == TimestampOffset(-1, BASE)  # empty
    _append_entries(index, MAX_ENTRIES - 1)
    assert index.lookup(9) == TimestampOffset(-1, BASE)  # below the earliest entry
    assert index.lookup(25) == TimestampOffset(20, 65)  # between two entries
    assert index.lookup(30) == TimestampOffset(30, 75)  # exactly an entry
    assert index.lookup(10) == TimestampOffset(10, 55)
    assert index.lookup(10**12) == TimestampOffset(290, BASE + 290)


def test_entry(index: TimeIndex) -> None:
    _append_entries(index, MAX_ENTRIES - 1)
    assert index.entry(0) == TimestampOffset(10, 55)
    assert index.entry(1) == TimestampOffset(20, 65)
    assert index.entry(2) == TimestampOffset(30, 75)
    assert index.entry(3) == TimestampOffset(40, 85)


def test_entry_out_of_range(index: TimeIndex) -> None:
    with pytest.raises(IndexError):
        index.entry(0)
    _append_entries(index, 2)
    with pytest.raises(IndexError):
        index.entry(2)
    with pytest.raises(IndexError):
        index.entry(-1)


def test_last_entry(index: TimeIndex) -> None:
    assert index.last_entry == TimestampOffset(NO_TIMESTAMP, BASE)
    index.maybe_append(1, BASE + 1)
    assert index.last_entry == TimestampOffset(1, BASE + 1)


# -- maybe_append ---------------------------------------------------------------------------


def test_is_full_reserves_the_last_slot(index: TimeIndex) -> None:
    assert not index.is_full()
    _append_entries(index, MAX_ENTRIES - 2)
    assert not index.is_full()
    index.maybe_append((MAX_ENTRIES - 1) * 10, BASE + (MAX_ENTRIES - 1) * 10)
    assert index.entries == MAX_ENTRIES - 1 == index.max_entries - 1
    assert index.is_full()


def test_append_into_the_reserved_slot_only_with_skip_full_check(index: TimeIndex) -> None:
    _append_entries(index, MAX_ENTRIES - 1)
    with pytest.raises(IndexFullError):
        index.maybe_append(10_000, 1_000)
    with pytest.raises(InvalidOffsetError):
        index.maybe_append(10_000, (MAX_ENTRIES - 2) * 10, skip_full_check=True)
    index.maybe_append(10_000, 1_000, skip_full_check=True)
    assert index.entries == index.max_entries
    assert index.last_entry == TimestampOffset(10_000, 1_000)


def test_with_no_slot_at_all_even_skip_full_check_fails(index: TimeIndex) -> None:
    _append_entries(index, MAX_ENTRIES - 1)
    index.maybe_append(10_000, 1_000, skip_full_check=True)
    # The final entry is written again on close: an equal timestamp is ignored, full or not.
    index.maybe_append(10_000, 1_000, skip_full_check=True)
    with pytest.raises(IndexFullError):
        index.maybe_append(10_001, 1_001, skip_full_check=True)
    assert index.entries == MAX_ENTRIES


def test_equal_timestamp_is_silently_ignored(index: TimeIndex) -> None:
    index.maybe_append(100, BASE + 1)
    index.maybe_append(100, BASE + 1)
    index.maybe_append(100, BASE + 5)
    assert _all(index) == [TimestampOffset(100, BASE + 1)]


def test_larger_timestamp_at_the_same_offset_is_appended(index: TimeIndex) -> None:
    index.maybe_append(100, BASE + 1)
    index.maybe_append(200, BASE + 1)
    assert _all(index) == [TimestampOffset(100, BASE + 1), TimestampOffset(200, BASE + 1)]


def test_smaller_offset_is_invalid(index: TimeIndex) -> None:
    index.maybe_append(100, BASE + 5)
    with pytest.raises(InvalidOffsetError):
        index.maybe_append(200, BASE + 4)
    # The offset is checked before the timestamp, even for an ignorable equal timestamp.
    with pytest.raises(InvalidOffsetError):
        index.maybe_append(100, BASE + 4)
    assert index.entries == 1


def test_smaller_timestamp_is_a_value_error(index: TimeIndex) -> None:
    index.maybe_append(100, BASE + 5)
    with pytest.raises(ValueError, match="timestamp"):
        index.maybe_append(99, BASE + 6)
    assert index.entries == 1


def test_on_an_empty_index_no_timestamp_is_ignored_and_zero_is_written(index: TimeIndex) -> None:
    index.maybe_append(NO_TIMESTAMP, BASE + 3)  # a batch without timestamps
    assert index.entries == 0
    index.maybe_append(0, BASE + 3)
    assert _all(index) == [TimestampOffset(0, BASE + 3)]


def test_the_first_entry_ignores_previous_offsets(index: TimeIndex) -> None:
    # On an empty index the only offset check is the 32-bit relative-offset range.
    index.maybe_append(5, BASE)
    assert index.last_entry == TimestampOffset(5, BASE)


def test_relative_offset_must_fit_in_32_bits(index: TimeIndex) -> None:
    with pytest.raises(IndexOffsetOverflowError):
        index.maybe_append(10, BASE - 1)
    with pytest.raises(IndexOffsetOverflowError):
        index.maybe_append(10, BASE + 2**31)
    assert index.entries == 0
    index.maybe_append(10, BASE + 2**31 - 1)
    assert index.last_entry == TimestampOffset(10, BASE + 2**31 - 1)


def test_timestamp_must_fit_in_64_bits(index: TimeIndex) -> None:
    with pytest.raises(ValueError, match="64 bits"):
        index.maybe_append(2**63, BASE)
    index.maybe_append(2**63 - 1, BASE)
    assert index.lookup(2**63 - 1) == TimestampOffset(2**63 - 1, BASE)


# -- truncation -----------------------------------------------------------------------------


def test_truncate(index: TimeIndex) -> None:
    _append_entries(index, MAX_ENTRIES - 1)
    index.truncate()
    assert index.entries == 0
    assert index.last_entry == TimestampOffset(NO_TIMESTAMP, BASE)

    _append_entries(index, MAX_ENTRIES - 1)
    index.truncate_to(10 + BASE)  # exact match on the first entry's offset
    assert index.entries == 0


@pytest.mark.parametrize(
    ("truncate_to", "kept"),
    [
        (BASE, 0),
        (BASE + 10, 0),
        (BASE + 15, 1),
        (BASE + 20, 1),
        (BASE + 30, 2),
        (BASE + 31, 3),
        (2**62, 3),
    ],
)
def test_truncate_to_searches_by_offset(index: TimeIndex, truncate_to: int, kept: int) -> None:
    _append_entries(index, 3)
    before = _all(index)
    index.truncate_to(truncate_to)
    assert _all(index) == before[:kept]
    assert index.last_entry == (before[kept - 1] if kept else TimestampOffset(-1, BASE))
    assert index.file_length() == MAX_ENTRIES * 12


def test_truncate_to_removes_every_entry_at_a_repeated_offset(index: TimeIndex) -> None:
    # Offsets may repeat (with growing timestamps). A plain exact-match search can land on the
    # second copy and keep the first one. Truncation must remove them all.
    for ts, offset in [(10, BASE + 1), (20, BASE + 5), (30, BASE + 5), (40, BASE + 5), (50, 60)]:
        index.maybe_append(ts, offset)
    index.truncate_to(BASE + 5)
    assert _all(index) == [TimestampOffset(10, BASE + 1)]
    assert index.last_entry == TimestampOffset(10, BASE + 1)


def test_appending_after_truncation_continues_from_the_new_last_entry(index: TimeIndex) -> None:
    _append_entries(index, 5)
    index.truncate_to(BASE + 30)
    assert index.last_entry == TimestampOffset(20, BASE + 20)
    index.maybe_append(25, BASE + 25)  # would have been refused before truncation
    assert index.lookup(27) == TimestampOffset(25, BASE + 25)


# -- sanity_check ----------------------------------------------------------------------------


def _write_entries(path: Path, entries: list[tuple[int, int]], tail: bytes = b"") -> None:
    path.write_bytes(b"".join(struct.pack(">qi", ts, rel) for ts, rel in entries) + tail)


def test_sanity_check_passes_on_a_healthy_index(index: TimeIndex) -> None:
    index.sanity_check()
    _append_entries(index, 5)
    index.sanity_check()
    index.trim_to_valid_size()
    index.sanity_check()


def test_sanity_check_fails_if_the_last_offset_is_below_the_base(tmp_path: Path) -> None:
    path = tmp_path / "a.timeindex"
    _write_entries(path, [(10, 1), (20, -1)])
    idx = TimeIndex(path, BASE)
    try:
        assert idx.last_entry == TimestampOffset(20, BASE - 1)
        with pytest.raises(CorruptIndexError, match="offset"):
            idx.sanity_check()
    finally:
        idx.close_handler()


def test_sanity_check_fails_if_the_last_timestamp_is_below_the_first(tmp_path: Path) -> None:
    path = tmp_path / "a.timeindex"
    _write_entries(path, [(10, 1), (20, 2), (9, 3)])
    idx = TimeIndex(path, BASE)
    try:
        with pytest.raises(CorruptIndexError, match="timestamp"):
            idx.sanity_check()
    finally:
        idx.close_handler()


def test_sanity_check_fails_if_the_length_is_not_a_multiple_of_12(tmp_path: Path) -> None:
    path = tmp_path / "a.timeindex"
    _write_entries(path, [(10, 1), (20, 2)], tail=b"\x00" * 11)
    idx = TimeIndex(path, BASE)
    try:
        assert idx.entries == 2
        assert idx.last_entry == TimestampOffset(20, BASE + 2)
        with pytest.raises(CorruptIndexError, match="multiple"):
            idx.sanity_check()
    finally:
        idx.close_handler()


# -- reopen ----------------------------------------------------------------------------------


def test_reopen_of_a_closed_index_restores_the_last_entry(index: TimeIndex) -> None:
    _append_entries(index, 5)
    index.close()
    assert index.path.stat().st_size == 5 * 12
    reopened = TimeIndex(index.path, BASE, MAX_ENTRIES * 12)
    try:
        assert reopened.entries == reopened.max_entries == 5
        assert reopened.last_entry == TimestampOffset(50, BASE + 50)
        assert reopened.lookup(35) == TimestampOffset(30, BASE + 30)
        reopened.sanity_check()
        assert reopened.is_full()
        assert reopened.resize(MAX_ENTRIES * 12)
        reopened.maybe_append(60, BASE + 60)
        assert reopened.last_entry == TimestampOffset(60, BASE + 60)
    finally:
        reopened.close()


def test_reopen_of_an_untrimmed_index_fails_its_sanity_check(index: TimeIndex) -> None:
    # A crash leaves the preallocated file untrimmed: the whole file is trusted, so the zero
    # tail becomes entries (0, base_offset), the last of which is below the first timestamp.
    _append_entries(index, 3)
    index.close_handler()
    reopened = TimeIndex(index.path, BASE, MAX_ENTRIES * 12)
    try:
        assert reopened.entries == reopened.max_entries == MAX_ENTRIES
        assert reopened.last_entry == TimestampOffset(0, BASE)
        assert reopened.entry(3) == TimestampOffset(0, BASE)
        assert reopened.is_full()
        with pytest.raises(CorruptIndexError, match="timestamp"):
            reopened.sanity_check()
        with pytest.raises(IndexFullError):
            reopened.maybe_append(100, BASE + 100, skip_full_check=True)
    finally:
        reopened.close_handler()


def test_reopen_of_an_untrimmed_index_with_no_entries_passes_its_sanity_check(
    index: TimeIndex,
) -> None:
    # All zeros: first and last timestamps are both 0, the last offset is the base offset.
    index.close_handler()
    reopened = TimeIndex(index.path, BASE, MAX_ENTRIES * 12)
    try:
        assert reopened.entries == MAX_ENTRIES
        assert reopened.last_entry == TimestampOffset(0, BASE)
        reopened.sanity_check()
        assert reopened.lookup(5) == TimestampOffset(0, BASE)
        with pytest.raises(IndexFullError):
            reopened.maybe_append(10, BASE + 10)
    finally:
        reopened.close_handler()


# -- resize and zero-length files -----------------------------------------------------------


def test_resize(index: TimeIndex) -> None:
    assert not index.resize(MAX_ENTRIES * 12)
    assert index.resize(MAX_ENTRIES // 2 * 12)
    assert index.max_entries == MAX_ENTRIES // 2
    assert index.resize(MAX_ENTRIES * 2 * 12)
    assert index.max_entries == MAX_ENTRIES * 2
    assert index.path.stat().st_size == MAX_ENTRIES * 2 * 12


def test_resize_keeps_entries_and_last_entry(index: TimeIndex) -> None:
    _append_entries(index, 4)
    assert index.resize(6 * 12)
    assert index.last_entry == TimestampOffset(40, BASE + 40)
    assert index.lookup(45) == TimestampOffset(40, BASE + 40)
    with pytest.raises(ValueError, match="entries"):
        index.resize(3 * 12)


def test_an_empty_trimmed_time_index_has_no_mapping_and_still_works(index: TimeIndex) -> None:
    index.trim_to_valid_size()
    assert index.file_length() == 0 == index.path.stat().st_size
    assert index.max_entries == 0
    assert index.is_full()
    assert index.lookup(123) == TimestampOffset(NO_TIMESTAMP, BASE)
    assert index.last_entry == TimestampOffset(NO_TIMESTAMP, BASE)
    index.sanity_check()
    index.truncate_to(BASE)
    with pytest.raises(IndexFullError):
        index.maybe_append(10, BASE + 1)
    with pytest.raises(IndexFullError):
        index.maybe_append(10, BASE + 1, skip_full_check=True)
    index.maybe_append(NO_TIMESTAMP, BASE + 1, skip_full_check=True)  # nothing to write
    index.close()

    reopened = TimeIndex(index.path, BASE, MAX_ENTRIES * 12)
    try:
        assert reopened.entries == reopened.max_entries == 0
        assert reopened.last_entry == TimestampOffset(NO_TIMESTAMP, BASE)
        assert reopened.resize(MAX_ENTRIES * 12)
        reopened.maybe_append(10, BASE + 1)
        assert reopened.lookup(11) == TimestampOffset(10, BASE + 1)
    finally:
        reopened.close()


def test_reset(index: TimeIndex) -> None:
    _append_entries(index, 4)
    index.trim_to_valid_size()
    index.reset()
    assert index.entries == 0
    assert index.max_entries == MAX_ENTRIES
    assert index.last_entry == TimestampOffset(NO_TIMESTAMP, BASE)


def test_rename_close_and_delete(index: TimeIndex, tmp_path: Path) -> None:
    _append_entries(index, 2)
    new = tmp_path / "renamed.timeindex"
    index.rename_to(new)
    index.maybe_append(30, BASE + 30)
    index.close()
    assert new.stat().st_size == 36
    with pytest.raises(ValueError, match="closed"):
        index.maybe_append(40, BASE + 40)
    with pytest.raises(ValueError, match="closed"):
        index.lookup(40)
    assert index.delete_if_exists()
    assert not new.exists()


# -- the warm section -------------------------------------------------------------------------


class _CountingTimeIndex(TimeIndex):
    """Records every slot whose key (timestamp) a search reads."""

    def __init__(self, path: Path, base_offset: int, max_index_size: int) -> None:
        super().__init__(path, base_offset, max_index_size)
        self.reads: list[int] = []

    def _parse_key(self, slot: int) -> int:
        self.reads.append(slot)
        return super()._parse_key(slot)


def test_the_warm_section_is_682_entries() -> None:
    assert 8192 // TimeIndex._ENTRY_SIZE == 682


def test_lookups_in_the_warm_section_read_only_its_slots(tmp_path: Path) -> None:
    n = 100_000
    idx = _CountingTimeIndex(tmp_path / "a.timeindex", BASE, (n + 1) * 12)
    try:
        for i in range(n):
            idx.maybe_append(1_000 + 3 * i, BASE + 2 * i)
        assert idx.entries == n
        warm = 682
        first_hot = n - 1 - warm
        window = range(first_hot, n)

        targets = [1_000 + 3 * i + d for i in range(n - warm, n) for d in (0, 2)]
        targets.append(2**62)
        for target in targets:
            idx.reads.clear()
            assert idx.lookup(target).timestamp <= target
            assert idx.reads, target
            assert all(s in window for s in idx.reads), (target, idx.reads)
            assert len(idx.reads) <= 12

        for target in (1_000, 1_001, 1_000 + 3 * 5_000, 1_000 + 3 * first_hot):
            idx.reads.clear()
            assert idx.lookup(target).timestamp == target - (target - 1_000) % 3
            assert 0 in idx.reads
            assert any(s not in window for s in idx.reads)
    finally:
        idx.close()
