"""Offset-range splitting, trigger rate limits and the streaming offset JSON."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from odradek.client.types import TopicPartition
from odradek.spark.planning import (
    OffsetRange,
    delay_batch,
    offsets_from_json,
    offsets_to_json,
    rate_limit,
    split_ranges,
)

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_one_range_per_partition_and_empty_ones_dropped():
    ranges = [OffsetRange(A0, 0, 10), OffsetRange(A1, 5, 5), OffsetRange(B0, 3, 4)]
    assert split_ranges(ranges, None, None) == [OffsetRange(A0, 0, 10), OffsetRange(B0, 3, 4)]


def test_min_partitions_splits_big_ranges_in_proportion():
    ranges = [OffsetRange(A0, 0, 100), OffsetRange(B0, 0, 10)]
    out = split_ranges(ranges, 5, None)
    assert len(out) >= 5
    assert [r for r in out if r.tp == B0] == [OffsetRange(B0, 0, 10)]
    assert sum(r.size for r in out if r.tp == A0) == 100


def test_max_records_per_partition_caps_each_piece():
    out = split_ranges([OffsetRange(A0, 7, 30)], None, 10)
    assert out == [OffsetRange(A0, 7, 14), OffsetRange(A0, 14, 22), OffsetRange(A0, 22, 30)]


@given(
    sizes=st.lists(st.integers(0, 500), min_size=1, max_size=5),
    min_partitions=st.none() | st.integers(1, 20),
    max_records=st.none() | st.integers(1, 200),
)
def test_splits_cover_every_offset_exactly_once(sizes, min_partitions, max_records):
    ranges = [OffsetRange(TopicPartition("t", i), 10, 10 + s) for i, s in enumerate(sizes)]
    out = split_ranges(ranges, min_partitions, max_records)
    covered = sorted((r.tp.partition, o) for r in out for o in range(r.start, r.end))
    expected = sorted((i, 10 + o) for i, s in enumerate(sizes) for o in range(s))
    assert covered == expected
    if max_records is not None:
        assert all(r.size <= max_records for r in out)


def test_rate_limit_spreads_in_proportion_to_backlog():
    start = {A0: 0, A1: 0, B0: 0}
    latest = {A0: 10, A1: 10, B0: 10}
    assert rate_limit(start, latest, 9) == {A0: 3, A1: 3, B0: 3}
    assert rate_limit(start, latest, 100) == latest
    # A share below one record rounds up so a small partition still moves.
    assert rate_limit({A0: 0, B0: 0}, {A0: 1000, B0: 1}, 10) == {A0: 9, B0: 1}


def test_offsets_json_round_trips_with_string_partition_keys():
    offsets = {A0: 4, A1: 7, B0: 0}
    data = offsets_to_json(offsets)
    assert data == {"a": {"0": 4, "1": 7}, "b": {"0": 0}}
    assert offsets_from_json(json.loads(json.dumps(data))) == offsets


def test_delay_batch_waits_for_min_offsets_or_the_max_delay():
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    start, latest = {a: 10, b: 0}, {a: 15, b: 4}  # 9 new records
    assert delay_batch(start, latest, 10, last_trigger_ms=0, now_ms=100, max_delay_ms=1000)
    assert not delay_batch(start, latest, 9, last_trigger_ms=0, now_ms=100, max_delay_ms=1000)
    assert not delay_batch(start, latest, 10, last_trigger_ms=0, now_ms=1000, max_delay_ms=1000)
    # a partition new since start counts from its latest: no records yet
    assert delay_batch({a: 10}, {a: 11, b: 50}, 2, 0, 1, 1000)
