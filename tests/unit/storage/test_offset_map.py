"""The cleaner's offset map (Kafka's OffsetMapTest, in our words): a dict in a fixed budget."""

from __future__ import annotations

import random

import pytest

from storage.offset_map import BYTES_PER_ENTRY, MAX_OFFSET_SPAN, OffsetMap


def test_put_and_get_behave_as_a_dict():
    m = OffsetMap(64 * 1024)
    rng = random.Random(7)
    oracle: dict[bytes, int] = {}
    for offset in range(3000):
        key = f"key-{rng.randrange(1000)}".encode()
        m.put(key, offset)
        oracle[key] = offset
    assert m.size == len(oracle)
    assert m.latest_offset == 2999
    for key, offset in oracle.items():
        assert m.get(key) == offset
    assert m.get(b"never-put") == -1


def test_clear_empties_the_map_and_sets_the_base():
    m = OffsetMap(4096)
    for i in range(50):
        m.put(str(i).encode(), i)
    m.clear(base=1_000_000)
    assert (m.size, m.latest_offset, m.base) == (0, -1, 1_000_000)
    assert all(m.get(str(i).encode()) == -1 for i in range(50))
    m.put(b"k", 1_000_005)
    assert m.get(b"k") == 1_000_005


def test_offsets_outside_the_span_of_the_base_are_refused():
    m = OffsetMap(4096)
    m.clear(base=100)
    with pytest.raises(ValueError):
        m.put(b"k", 99)
    with pytest.raises(ValueError):
        m.put(b"k", 100 + MAX_OFFSET_SPAN + 1)
    m.put(b"k", 100 + MAX_OFFSET_SPAN)
    assert m.get(b"k") == 100 + MAX_OFFSET_SPAN


def test_memory_is_fixed_whatever_the_number_of_keys():
    budget = 10_000
    m = OffsetMap(budget, load_factor=0.9)
    before = m.memory_bytes
    assert before <= budget
    assert m.slots <= budget // BYTES_PER_ENTRY
    assert m.max_entries == int(m.slots * 0.9)
    for i in range(m.max_entries):
        m.put(f"key-{i}".encode(), i)
    assert m.is_full()
    assert m.memory_bytes == before
    # Every key put is still found: double hashing over a prime table visits every slot.
    assert all(m.get(f"key-{i}".encode()) == i for i in range(m.max_entries))


def test_a_full_table_keeps_one_empty_slot_and_refuses_new_keys():
    m = OffsetMap(3 * BYTES_PER_ENTRY + 8, load_factor=1.0)  # 3 slots
    assert m.slots == 3 and m.max_entries == 2
    m.put(b"a", 0)
    m.put(b"b", 1)
    with pytest.raises(OverflowError):
        m.put(b"c", 2)
    m.put(b"a", 3)  # an existing key can still be updated
    assert (m.get(b"a"), m.get(b"b"), m.get(b"c")) == (3, 1, -1)


def test_too_small_a_budget_is_refused():
    with pytest.raises(ValueError):
        OffsetMap(40)
    with pytest.raises(ValueError):
        OffsetMap(4096, load_factor=0.0)


def test_probes_stay_few_at_kafkas_load_factor():
    m = OffsetMap(1 << 20)
    for i in range(m.max_entries):
        m.put(i.to_bytes(8, "big"), i)
    puts = m.probes / m.lookups
    m.lookups = m.probes = 0
    for i in range(10_000):
        m.get((10**9 + i).to_bytes(8, "big"))  # absent keys: the worst case
    assert puts < 4
    assert m.probes / m.lookups < 15  # double hashing: about 1 / (1 - 0.9)


def test_clear_after_a_small_pass_clears_only_the_slots_used_and_after_a_large_one_all():
    from odradek.records import Record, build_batch
    from odradek.records.batch import HEADER_STRUCT
    from storage.batch_filter import put_keys

    m = OffsetMap(64 * 1024)
    touched = m.slots // 64
    for keys in (5, touched, touched + 1, 1000):
        # half through put, half through the cleaner's inlined loop
        for i in range(keys // 2):
            m.put(f"k{i}".encode(), i)
        b = build_batch([Record(f"k{i}".encode(), b"v") for i in range(keys // 2, keys)])
        assert not put_keys(b, 0, HEADER_STRUCT.unpack_from(b, 0), 0, m)
        assert m.size == keys
        assert all(m.get(f"k{i}".encode()) >= 0 for i in range(keys))
        m.clear()
        assert m.size == 0
        assert all(m.get(f"k{i}".encode()) == -1 for i in range(keys))
        assert not any(m.tables()[0]), "a slot was left behind"
