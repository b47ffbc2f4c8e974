"""The producer's incremental batch builder writes exactly what build_batch writes, and a built
batch renumbered for another producer epoch is the batch build_batch writes for it."""

from __future__ import annotations

import random

import pytest

from odradek.records import Compression, Record, build_batch, read_batches
from odradek.records.appender import RecordBatchBuilder, encoded_headers, with_producer_state


def _records(seed: int, count: int) -> list[Record]:
    rng = random.Random(seed)
    base = 1_700_000_000_000
    return [
        Record(
            None if rng.random() < 0.3 else rng.randbytes(rng.randrange(0, 300)),
            None if rng.random() < 0.1 else rng.randbytes(rng.choice([0, 5, 100, 9000])),
            [("h\u00e9", b"1"), ("n", None)][: rng.randrange(3)],
            timestamp=base + rng.randrange(-5, 20_000),
        )
        for _ in range(count)
    ]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.ZSTD])
def test_appending_one_at_a_time_writes_build_batchs_bytes(seed, codec):
    records = _records(seed, 1 + seed * 37)
    builder = RecordBatchBuilder()
    size = builder.size_in_bytes
    for r in records:
        assert r.timestamp is not None
        size += builder.append(r.timestamp, r.key, r.value, encoded_headers(r.headers))
    assert builder.size_in_bytes == size == len(build_batch(records))
    built = builder.close(compression=codec, producer_id=7, producer_epoch=2, base_sequence=40)
    assert built == build_batch(
        records, compression=codec, producer_id=7, producer_epoch=2, base_sequence=40
    )


def test_append_many_writes_the_same_records_and_stops_at_its_limits():
    values = [b"v" * i for i in range(50)]
    keys = [None if i % 3 else b"k%d" % i for i in range(50)]
    builder = RecordBatchBuilder()
    assert builder.append_many(99, keys, values, 0, 50, 10**9) == 50
    assert builder.close() == build_batch(
        [Record(k, v, timestamp=99) for k, v in zip(keys, values, strict=True)]
    )
    small = RecordBatchBuilder()
    reached = small.append_many(99, None, values, 0, 50, 400)
    assert 0 < reached < 50 and small.size_in_bytes <= 400
    budget = RecordBatchBuilder()
    assert budget.append_many(99, None, values, 0, 50, 10**9, room=1000, per_record=100) < 10
    # At least one record, whatever the limits.
    assert RecordBatchBuilder().append_many(99, None, [b"x" * 500], 0, 1, 10) == 1


def test_a_batch_renumbered_for_a_new_epoch_is_the_batch_built_for_it():
    records = _records(3, 20)
    first = build_batch(records, producer_id=5, producer_epoch=0, base_sequence=17)
    again = with_producer_state(first, 5, 1, 0)
    assert again == build_batch(records, producer_id=5, producer_epoch=1, base_sequence=0)
    (batch,) = list(read_batches(again))
    batch.validate()
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (5, 1, 0)
