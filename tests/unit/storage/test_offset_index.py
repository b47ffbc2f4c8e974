"""OffsetIndex and the IndexFile lifecycle it inherits (ported from Kafka's OffsetIndexTest)."""

from __future__ import annotations

import bisect
import random
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
from storage.index_file import DEFAULT_MAX_INDEX_SIZE, IndexSearchType
from storage.offset_index import OffsetIndex, OffsetPosition

BASE = 45
MAX_ENTRIES = 30


@pytest.fixture
def index(tmp_path: Path) -> Iterator[OffsetIndex]:
    idx = OffsetIndex(tmp_path / f"{BASE:020d}.index", BASE, MAX_ENTRIES * 8)
    yield idx
    idx.close()


def _fill(idx: OffsetIndex, pairs: list[tuple[int, int]]) -> None:
    for offset, position in pairs:
        idx.append(offset, position)


# -- creation and opening ------------------------------------------------------------------


def test_new_file_is_preallocated_to_a_whole_number_of_entries(tmp_path: Path) -> None:
    path = tmp_path / "a.index"
    idx = OffsetIndex(path, BASE, MAX_ENTRIES * 8 + 5)
    try:
        assert path.stat().st_size == MAX_ENTRIES * 8
        assert idx.file_length() == MAX_ENTRIES * 8
        assert idx.max_entries == MAX_ENTRIES
        assert idx.entries == 0
        assert idx.size_in_bytes == 0
        assert not idx.is_full()
        assert idx.entry_size == 8
        assert idx.base_offset == BASE
        assert idx.max_index_size == MAX_ENTRIES * 8 + 5
        assert idx.path == path
        assert idx.last_offset == BASE
    finally:
        idx.close()


def test_default_max_index_size_is_ten_mib(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "a.index", 0)
    try:
        assert idx.max_index_size == DEFAULT_MAX_INDEX_SIZE == 10 * 1024 * 1024
        assert idx.max_entries == 1_310_720
    finally:
        idx.close()


def test_max_index_size_below_one_entry_is_rejected_for_a_new_file(tmp_path: Path) -> None:
    path = tmp_path / "a.index"
    with pytest.raises(ValueError, match="max index size"):
        OffsetIndex(path, BASE, 7)
    assert not path.exists()


def test_negative_base_offset_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="base offset"):
        OffsetIndex(tmp_path / "a.index", -1, 80)


def test_an_existing_empty_file_is_opened_not_preallocated(tmp_path: Path) -> None:
    path = tmp_path / "a.index"
    path.touch()
    idx = OffsetIndex(path, BASE, 80)
    try:
        assert idx.file_length() == 0
        assert idx.entries == idx.max_entries == 0
        assert idx.is_full()
        assert path.stat().st_size == 0
    finally:
        idx.close()


# -- on-disk format ------------------------------------------------------------------------


def test_entries_are_big_endian_relative_offset_then_position(index: OffsetIndex) -> None:
    index.append(BASE + 5, 1234)
    index.append(BASE + 70_000, 2**31 - 1)
    index.flush()
    raw = index.path.read_bytes()
    assert raw[:16] == struct.pack(">ii", 5, 1234) + struct.pack(">ii", 70_000, 2**31 - 1)
    assert raw[16:] == bytes(len(raw) - 16)


# -- lookup ---------------------------------------------------------------------------------


def test_random_lookup(index: OffsetIndex) -> None:
    rng = random.Random(1729)
    assert index.lookup(92) == OffsetPosition(BASE, 0)  # empty index
    offsets: list[int] = []
    positions: list[int] = []
    offset, position = BASE, 0
    for _ in range(index.max_entries):
        offset += rng.randint(1, 15)
        position += rng.randint(1, 15)
        offsets.append(offset)
        positions.append(position)
        index.append(offset, position)
    for o, p in zip(offsets, positions, strict=True):
        assert index.lookup(o) == OffsetPosition(o, p)
    for target in range(BASE - 3, offsets[-1] + 3):
        i = bisect.bisect_right(offsets, target) - 1
        expected = OffsetPosition(BASE, 0) if i < 0 else OffsetPosition(offsets[i], positions[i])
        assert index.lookup(target) == expected, target


def test_lookup_extreme_cases(index: OffsetIndex) -> None:
    assert index.lookup(BASE) == OffsetPosition(BASE, 0)
    for i in range(index.max_entries):
        index.append(BASE + i + 1, i)
    assert index.lookup(BASE) == OffsetPosition(BASE, 0)  # below the first entry
    last = OffsetPosition(BASE + index.max_entries, index.max_entries - 1)
    assert index.lookup(BASE + index.max_entries) == last
    assert index.lookup(2**62) == last


def test_entry(index: OffsetIndex) -> None:
    for i in range(index.max_entries):
        index.append(BASE + i, i)
    for i in range(index.max_entries):
        assert index.entry(i) == OffsetPosition(BASE + i, i)


def test_entry_out_of_range(index: OffsetIndex) -> None:
    with pytest.raises(IndexError):
        index.entry(0)
    index.append(BASE, 0)
    assert index.entry(0) == OffsetPosition(BASE, 0)
    with pytest.raises(IndexError):
        index.entry(1)
    with pytest.raises(IndexError):
        index.entry(-1)


def test_slot_searches_by_key_and_by_value(index: OffsetIndex) -> None:
    _fill(index, [(BASE + 10, 100), (BASE + 20, 200), (BASE + 30, 300)])
    assert index.largest_lower_bound_slot(BASE + 9) == -1
    assert index.largest_lower_bound_slot(BASE + 10) == 0
    assert index.largest_lower_bound_slot(BASE + 25) == 1
    assert index.largest_lower_bound_slot(BASE + 99) == 2
    assert index.smallest_upper_bound_slot(BASE + 9) == 0
    assert index.smallest_upper_bound_slot(BASE + 11) == 1
    assert index.smallest_upper_bound_slot(BASE + 30) == 2
    assert index.smallest_upper_bound_slot(BASE + 31) == -1
    assert index.largest_lower_bound_slot(250, IndexSearchType.VALUE) == 1
    assert index.smallest_upper_bound_slot(250, IndexSearchType.VALUE) == 2


# -- fetch_upper_bound_offset ---------------------------------------------------------------


def test_fetch_upper_bound_offset(index: OffsetIndex) -> None:
    first = OffsetPosition(BASE, 0)
    second = OffsetPosition(BASE + 1, 10)
    third = OffsetPosition(BASE + 2, 23)
    fourth = OffsetPosition(BASE + 3, 37)
    assert index.fetch_upper_bound_offset(first, 5) is None  # empty index
    for op in (first, second, third, fourth):
        index.append(op.offset, op.position)
    assert index.fetch_upper_bound_offset(first, 5) == second
    assert index.fetch_upper_bound_offset(first, 10) == second
    assert index.fetch_upper_bound_offset(first, 23) == third
    assert index.fetch_upper_bound_offset(first, 22) == third
    assert index.fetch_upper_bound_offset(second, 24) == fourth
    assert index.fetch_upper_bound_offset(fourth, 1) is None
    assert index.fetch_upper_bound_offset(first, 200) is None
    assert index.fetch_upper_bound_offset(second, 200) is None


def test_fetch_upper_bound_offset_at_exactly_the_first_position(index: OffsetIndex) -> None:
    # Kafka's search answers slot 1 here (or nothing with a single entry): the first entry's
    # position equals the target and is the smallest entry at or past it.
    index.append(BASE, 0)
    assert index.fetch_upper_bound_offset(OffsetPosition(BASE, 0), 0) == OffsetPosition(BASE, 0)
    index.append(BASE + 1, 10)
    assert index.fetch_upper_bound_offset(OffsetPosition(BASE, 0), 0) == OffsetPosition(BASE, 0)


# -- append ---------------------------------------------------------------------------------


def test_append_too_many(index: OffsetIndex) -> None:
    for i in range(index.max_entries):
        index.append(BASE + i + 1, i)
    assert index.is_full()
    with pytest.raises(IndexFullError):
        index.append(BASE + index.max_entries + 1, 1)
    assert index.entries == index.max_entries


def test_append_out_of_order(index: OffsetIndex) -> None:
    index.append(51, 0)
    with pytest.raises(InvalidOffsetError):
        index.append(50, 1)
    with pytest.raises(InvalidOffsetError):
        index.append(51, 1)  # strictly increasing: an equal offset is refused too
    assert index.entries == 1
    assert index.last_offset == 51


def test_the_first_entry_may_be_the_base_offset(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "a.index", 20, 80)
    try:
        idx.append(20, 0)
        idx.sanity_check()
        assert idx.last_offset == 20
    finally:
        idx.close()


def test_relative_offset_must_fit_in_32_bits(index: OffsetIndex) -> None:
    assert not index.can_append_offset(BASE - 1)
    assert index.can_append_offset(BASE)
    assert index.can_append_offset(BASE + 2**31 - 1)
    assert not index.can_append_offset(BASE + 2**31)
    with pytest.raises(IndexOffsetOverflowError):
        index.append(BASE - 1, 0)
    with pytest.raises(IndexOffsetOverflowError):
        index.append(BASE + 2**31, 0)
    assert index.entries == 0
    index.append(BASE + 2**31 - 1, 0)
    assert index.lookup(2**40) == OffsetPosition(BASE + 2**31 - 1, 0)


def test_position_must_fit_in_32_bits(index: OffsetIndex) -> None:
    with pytest.raises(ValueError, match="position"):
        index.append(BASE, 2**31)
    with pytest.raises(ValueError, match="position"):
        index.append(BASE, -1)
    assert index.entries == 0


# -- truncation -----------------------------------------------------------------------------


def test_truncate(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "a.index", 0, 10 * 8)
    try:
        idx.truncate()
        _fill(idx, [(i, i) for i in range(1, 10)])

        idx.truncate_to(12)  # past the end: nothing changes
        assert idx.lookup(10) == OffsetPosition(9, 9)
        assert idx.last_offset == 9

        idx.append(10, 10)
        idx.truncate_to(10)  # exact match on the last entry
        assert idx.lookup(10) == OffsetPosition(9, 9)
        assert idx.last_offset == 9
        idx.append(10, 10)

        idx.truncate_to(9)
        assert idx.lookup(10) == OffsetPosition(8, 8)
        assert idx.last_offset == 8
        idx.append(9, 9)

        idx.truncate_to(5)
        assert idx.lookup(10) == OffsetPosition(4, 4)
        assert idx.last_offset == 4
        idx.append(5, 5)

        idx.truncate()
        assert idx.entries == 0
        assert idx.last_offset == 0
        idx.append(0, 0)
    finally:
        idx.close()


@pytest.mark.parametrize(
    ("truncate_to", "kept"),
    [
        (BASE, 0),  # no entry <= the offset: everything goes
        (BASE + 10, 0),  # exact match on the first entry
        (BASE + 15, 1),  # between entries: keep up to the floor entry
        (BASE + 20, 1),  # exact match: drop it and everything after
        (BASE + 30, 2),
        (BASE + 31, 3),  # past the end: no-op
        (2**62, 3),
    ],
)
def test_truncate_to_cases(index: OffsetIndex, truncate_to: int, kept: int) -> None:
    entries = [(BASE + 10, 100), (BASE + 20, 200), (BASE + 30, 300)]
    _fill(index, entries)
    index.truncate_to(truncate_to)
    assert index.entries == kept
    assert [index.entry(i) for i in range(kept)] == [OffsetPosition(*e) for e in entries[:kept]]
    assert index.last_offset == (entries[kept - 1][0] if kept else BASE)
    assert index.file_length() == MAX_ENTRIES * 8  # truncation keeps the preallocation


def test_truncate_to_on_an_empty_index_is_a_noop(index: OffsetIndex) -> None:
    index.truncate_to(BASE + 1)
    assert index.entries == 0


def test_appends_overwrite_truncated_entries(index: OffsetIndex) -> None:
    _fill(index, [(BASE + 1, 10), (BASE + 2, 20), (BASE + 3, 30)])
    index.truncate_to(BASE + 2)
    index.append(BASE + 5, 50)
    assert [index.entry(i) for i in range(index.entries)] == [
        OffsetPosition(BASE + 1, 10),
        OffsetPosition(BASE + 5, 50),
    ]
    assert index.lookup(BASE + 3) == OffsetPosition(BASE + 1, 10)


# -- reopen ----------------------------------------------------------------------------------


def test_reopen_of_a_closed_and_trimmed_index(index: OffsetIndex) -> None:
    first, second = OffsetPosition(51, 0), OffsetPosition(52, 1)
    index.append(first.offset, first.position)
    index.append(second.offset, second.position)
    index.close()
    assert index.path.stat().st_size == 16

    reopened = OffsetIndex(index.path, BASE)
    try:
        assert reopened.lookup(first.offset) == first
        assert reopened.lookup(second.offset) == second
        assert reopened.last_offset == second.offset
        assert reopened.entries == reopened.max_entries == 2
        reopened.sanity_check()
        with pytest.raises(IndexFullError):  # a trimmed index is full until resized
            reopened.append(53, 1)
        assert reopened.resize(MAX_ENTRIES * 8)
        reopened.append(53, 1)
        assert reopened.lookup(60) == OffsetPosition(53, 1)
    finally:
        reopened.close()


def test_reopen_of_an_untrimmed_index_looks_full_of_base_offset_entries(
    index: OffsetIndex,
) -> None:
    # A crash leaves the preallocated file untrimmed. Kafka (and we) then trust the whole file:
    # its zero tail reads as (base_offset, 0) entries, and sanity_check does not notice.
    _fill(index, [(BASE + 1, 10), (BASE + 2, 20), (BASE + 3, 30)])
    index.close_handler()
    assert index.path.stat().st_size == MAX_ENTRIES * 8

    reopened = OffsetIndex(index.path, BASE, MAX_ENTRIES * 8)
    try:
        assert reopened.entries == reopened.max_entries == MAX_ENTRIES
        assert reopened.is_full()
        assert reopened.entry(2) == OffsetPosition(BASE + 3, 30)
        assert reopened.entry(3) == OffsetPosition(BASE, 0)
        assert reopened.entry(MAX_ENTRIES - 1) == OffsetPosition(BASE, 0)
        assert reopened.last_offset == BASE
        reopened.sanity_check()  # passes: last offset == base offset
        with pytest.raises(IndexFullError):
            reopened.append(BASE + 4, 40)
        # The garbage tail breaks the sorted order, so lookups are meaningless: this one
        # lands on a zero entry, which means "scan the segment from its start".
        assert reopened.lookup(BASE + 2) == OffsetPosition(BASE, 0)
    finally:
        reopened.close_handler()


# -- sanity_check ----------------------------------------------------------------------------


def test_sanity_check_passes_on_a_healthy_index(index: OffsetIndex) -> None:
    index.sanity_check()
    _fill(index, [(BASE + 1, 10), (BASE + 2, 20)])
    index.sanity_check()
    index.trim_to_valid_size()
    index.sanity_check()


def test_sanity_check_fails_if_the_length_is_not_a_multiple_of_8(tmp_path: Path) -> None:
    path = tmp_path / "a.index"
    path.write_bytes(struct.pack(">ii", 1, 10) + b"\x00\x00\x00\x02\x00")
    idx = OffsetIndex(path, BASE)
    try:
        assert idx.entries == idx.max_entries == 1  # 13 bytes: one whole entry
        assert idx.lookup(BASE + 1) == OffsetPosition(BASE + 1, 10)
        with pytest.raises(CorruptIndexError, match="multiple"):
            idx.sanity_check()
    finally:
        idx.close_handler()


def test_sanity_check_fails_if_the_last_offset_is_below_the_base_offset(tmp_path: Path) -> None:
    path = tmp_path / "a.index"
    path.write_bytes(struct.pack(">ii", 1, 10) + struct.pack(">ii", -3, 20))
    idx = OffsetIndex(path, BASE)
    try:
        assert idx.last_offset == BASE - 3
        with pytest.raises(CorruptIndexError, match="base offset"):
            idx.sanity_check()
    finally:
        idx.close_handler()


# -- resize, trim, reset ---------------------------------------------------------------------


def test_resize(index: OffsetIndex) -> None:
    _fill(index, [(BASE + i, i * 10) for i in range(1, 6)])
    assert not index.resize(MAX_ENTRIES * 8)  # same size
    assert not index.resize(MAX_ENTRIES * 8 + 7)  # rounds down to the same size

    assert index.resize(10 * 8 + 3)
    assert index.file_length() == 80 == index.path.stat().st_size
    assert index.max_entries == 10
    assert index.entries == 5
    assert index.lookup(BASE + 3) == OffsetPosition(BASE + 3, 30)

    assert index.resize(100 * 8)
    assert index.max_entries == 100
    assert index.path.stat().st_size == 800
    assert index.lookup(BASE + 100) == OffsetPosition(BASE + 5, 50)
    index.append(BASE + 6, 60)
    assert index.entries == 6


def test_resize_never_drops_entries(index: OffsetIndex) -> None:
    _fill(index, [(BASE + i, i) for i in range(1, 6)])
    with pytest.raises(ValueError, match="entries"):
        index.resize(4 * 8)
    assert index.file_length() == MAX_ENTRIES * 8
    assert index.entries == 5


def test_trim_to_valid_size(index: OffsetIndex) -> None:
    _fill(index, [(BASE + i, i) for i in range(1, 4)])
    index.trim_to_valid_size()
    assert index.file_length() == index.size_in_bytes == 24 == index.path.stat().st_size
    assert index.max_entries == 3
    assert index.is_full()
    assert index.lookup(BASE + 2) == OffsetPosition(BASE + 2, 2)


def test_reset_drops_entries_and_grows_back_to_max_index_size(index: OffsetIndex) -> None:
    _fill(index, [(BASE + i, i) for i in range(1, 4)])
    index.trim_to_valid_size()
    index.reset()
    assert index.entries == 0
    assert index.last_offset == BASE
    assert index.file_length() == MAX_ENTRIES * 8
    assert index.max_entries == MAX_ENTRIES
    index.append(BASE, 0)


# -- zero-length files (no mapping) ---------------------------------------------------------


def test_an_empty_trimmed_index_has_no_mapping_and_still_works(index: OffsetIndex) -> None:
    index.trim_to_valid_size()
    assert index.file_length() == 0 == index.path.stat().st_size
    assert index.max_entries == 0
    assert index.is_full()
    assert index.lookup(BASE + 7) == OffsetPosition(BASE, 0)
    assert index.fetch_upper_bound_offset(OffsetPosition(BASE, 0), 1) is None
    assert index.largest_lower_bound_slot(BASE) == -1
    assert index.smallest_upper_bound_slot(BASE) == -1
    index.truncate_to(BASE)
    index.sanity_check()
    index.flush()
    with pytest.raises(IndexFullError):
        index.append(BASE, 0)
    with pytest.raises(IndexError):
        index.entry(0)
    assert not index.resize(0)

    assert index.resize(MAX_ENTRIES * 8)  # from no mapping back to a mapping
    index.append(BASE + 1, 10)
    assert index.lookup(BASE + 2) == OffsetPosition(BASE + 1, 10)


def test_close_and_reopen_of_an_empty_index_gives_a_zero_length_file(index: OffsetIndex) -> None:
    index.close()
    assert index.path.stat().st_size == 0
    reopened = OffsetIndex(index.path, BASE, MAX_ENTRIES * 8)
    try:
        assert reopened.entries == reopened.max_entries == 0
        assert reopened.lookup(BASE) == OffsetPosition(BASE, 0)
        reopened.sanity_check()
        reopened.close()  # trimming a zero-length index is a no-op
        assert index.path.stat().st_size == 0
    finally:
        reopened.close()


# -- close, rename, delete ------------------------------------------------------------------


def test_use_after_close_raises_value_error(index: OffsetIndex) -> None:
    index.append(BASE + 1, 10)
    index.close()
    index.close()  # idempotent
    index.close_handler()
    for call in (
        lambda: index.lookup(BASE),
        lambda: index.entry(0),
        lambda: index.append(BASE + 2, 20),
        lambda: index.fetch_upper_bound_offset(OffsetPosition(BASE, 0), 1),
        lambda: index.largest_lower_bound_slot(BASE),
        lambda: index.truncate_to(BASE),
        lambda: index.truncate(),
        lambda: index.resize(80),
        lambda: index.trim_to_valid_size(),
        lambda: index.flush(),
        lambda: index.sanity_check(),
    ):
        with pytest.raises(ValueError, match="closed"):
            call()
    assert index.entries == 1  # plain accessors still answer
    assert "closed" in repr(index)


def test_close_handler_does_not_trim(index: OffsetIndex) -> None:
    index.append(BASE + 1, 10)
    index.close_handler()
    assert index.path.stat().st_size == MAX_ENTRIES * 8


def test_rename_to_keeps_the_mapping_working(index: OffsetIndex, tmp_path: Path) -> None:
    old = index.path
    index.append(BASE + 1, 10)
    new = tmp_path / f"{BASE:020d}.index.deleted"
    index.rename_to(new)
    assert index.path == new
    assert not old.exists()
    assert new.exists()
    assert index.lookup(BASE + 1) == OffsetPosition(BASE + 1, 10)
    index.append(BASE + 2, 20)
    assert index.resize(MAX_ENTRIES * 8 * 2)  # resize reopens the file by its new name
    index.close()
    assert new.stat().st_size == 16
    reopened = OffsetIndex(new, BASE)
    try:
        assert reopened.lookup(BASE + 5) == OffsetPosition(BASE + 2, 20)
    finally:
        reopened.close()


def test_rename_to_a_missing_directory_keeps_the_old_path(
    index: OffsetIndex, tmp_path: Path
) -> None:
    old = index.path
    with pytest.raises(FileNotFoundError):
        index.rename_to(tmp_path / "missing" / "x.index")
    assert index.path == old
    assert old.exists()


def test_delete_if_exists(index: OffsetIndex) -> None:
    index.append(BASE + 1, 10)
    assert index.delete_if_exists()
    assert not index.path.exists()
    assert not index.delete_if_exists()
    with pytest.raises(ValueError, match="closed"):
        index.lookup(BASE)
    index.close()  # closing after delete is harmless


def test_flush_writes_through_to_the_file(index: OffsetIndex) -> None:
    index.append(BASE + 3, 99)
    index.flush()
    with index.path.open("rb") as f:
        assert f.read(8) == struct.pack(">ii", 3, 99)


# -- the warm section -------------------------------------------------------------------------


class _CountingOffsetIndex(OffsetIndex):
    """Records every slot whose key a search reads."""

    def __init__(self, path: Path, base_offset: int, max_index_size: int) -> None:
        super().__init__(path, base_offset, max_index_size)
        self.reads: list[int] = []

    def _parse_key(self, slot: int) -> int:
        self.reads.append(slot)
        return super()._parse_key(slot)


def test_the_warm_section_is_1024_entries() -> None:
    assert 8192 // OffsetIndex._ENTRY_SIZE == 1024


def test_lookups_in_the_warm_section_read_only_its_slots(tmp_path: Path) -> None:
    n = 100_000
    idx = _CountingOffsetIndex(tmp_path / "a.index", BASE, n * 8)
    try:
        for i in range(n):
            idx.append(BASE + 1 + 2 * i, 100 * i)  # gaps, so targets between keys exist
        warm = 1024
        first_hot = n - 1 - warm  # the slot just before the last `warm` entries
        window = range(first_hot, n)  # the last warm + 1 slots

        targets = [BASE + 1 + 2 * i + d for i in range(n - warm, n) for d in (0, 1)]
        targets.append(2**40)  # past the last entry
        for target in targets:
            idx.reads.clear()
            result = idx.lookup(target)
            assert result.offset <= target
            assert idx.reads, target
            assert all(s in window for s in idx.reads), (target, idx.reads)
            assert len(idx.reads) <= 13  # 1 + ceil(log2(1025)) + the final probe at most

        # Near the head, the search starts from slot 0, far outside the warm section.
        for target in (BASE + 1, BASE + 2, BASE + 1 + 2 * 500, BASE + 1 + 2 * first_hot):
            idx.reads.clear()
            assert idx.lookup(target).offset == target - (target - BASE - 1) % 2
            assert 0 in idx.reads
            assert any(s not in window for s in idx.reads)
    finally:
        idx.close()
