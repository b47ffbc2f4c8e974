"""Byte compatibility with an implementation no one here wrote: kafka-python's ``kafka.record``.

(a) kafka-python decodes and CRC-checks batches odradek builds, for every codec;
(b) odradek decodes and validates batches kafka-python builds, for every codec;
(c) uncompressed, both write the very same bytes for the same inputs.
"""

import warnings
from collections.abc import Sequence

import pytest

from odradek.records import Compression, Record, RecordBatch, build_batch, read_batches

# Importing kafka-python 3.x warns (importlib.resources.read_text is deprecated) and the test
# config turns warnings into errors: silence that one warning for this import only.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.codec
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

CODECS = list(Compression)

# Compressible (so kafka-python, which falls back to no compression when it does not pay,
# really compresses), with null keys, tombstones, empty values, headers (a None value,
# non-ASCII keys), and timestamps out of order.
RECORDS = [
    Record(
        f"key-{i}".encode() if i % 4 else None,
        None if i % 7 == 3 else f"value {i % 3} ".encode() * 30,
        headers=[(f"h\u00e9-{i % 2}", b"x" * (i % 5)), ("nil", None)] if i % 3 else (),
        timestamp=1_700_000_000_000 + (i * 37) % 11,
    )
    for i in range(60)
] + [Record(b"", b"", timestamp=1_700_000_000_020)]

MAX_TIMESTAMP = max(r.timestamp for r in RECORDS if r.timestamp is not None)


def test_kafka_python_codecs_are_really_available():
    # A missing codec library must fail loudly, not skip the checks below.
    assert kafka.codec.has_gzip()
    assert kafka.codec.has_snappy()
    assert kafka.codec.has_lz4()
    assert kafka.codec.has_zstd()


def kafka_python_build(
    records: Sequence[Record],
    codec: Compression,
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=int(codec),
        is_transactional=is_transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=2**30,
    )
    for i, r in enumerate(records):
        meta = builder.append(
            i, timestamp=r.timestamp, key=r.key, value=r.value, headers=list(r.headers)
        )
        assert meta is not None
    return bytes(builder.build())


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.label)
def test_a_kafka_python_reads_what_odradek_builds(codec):
    out = build_batch(
        RECORDS,
        base_offset=500,
        compression=codec,
        producer_id=4242,
        producer_epoch=9,
        base_sequence=100,
        partition_leader_epoch=3,
    )
    theirs = DefaultRecordBatch(out)
    assert theirs.validate_crc()
    ours = RecordBatch(out)
    assert theirs.crc == ours.crc == ours.compute_crc()
    assert theirs.compression_type == int(codec)
    assert (theirs.base_offset, theirs.last_offset) == (500, 500 + len(RECORDS) - 1)
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (4242, 9, 100)
    assert theirs.leader_epoch == 3
    assert theirs.first_timestamp == RECORDS[0].timestamp
    assert theirs.max_timestamp == MAX_TIMESTAMP
    decoded = [
        (r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers]) for r in theirs
    ]
    assert decoded == [
        (500 + i, r.timestamp, r.key, r.value, list(r.headers)) for i, r in enumerate(RECORDS)
    ]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.label)
def test_b_odradek_reads_what_kafka_python_builds(codec):
    out = kafka_python_build(
        RECORDS, codec, producer_id=77, producer_epoch=1, base_sequence=5, is_transactional=True
    )
    (batch,) = read_batches(out)
    batch.validate()
    assert batch.compression is codec  # kafka-python really compressed
    assert batch.compute_crc() == batch.crc == DefaultRecordBatch(out).crc
    assert batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 1, 5)
    assert batch.max_timestamp == MAX_TIMESTAMP
    assert batch.records() == [
        Record(r.key, r.value, r.headers, r.timestamp, i) for i, r in enumerate(RECORDS)
    ]


@pytest.mark.parametrize(
    "producer",
    [
        {},
        {"producer_id": 123456789, "producer_epoch": 2, "base_sequence": 7},
        {"producer_id": 5, "producer_epoch": 0, "base_sequence": 0, "is_transactional": True},
    ],
    ids=["plain", "idempotent", "transactional"],
)
@pytest.mark.parametrize("records", [RECORDS, RECORDS[:1], RECORDS[1:2]], ids=["many", "1", "1b"])
def test_c_uncompressed_bytes_are_identical(producer, records):
    theirs = kafka_python_build(records, Compression.NONE, **producer)
    # kafka-python always writes base offset 0 and partition leader epoch 0.
    ours = build_batch(records, base_offset=0, partition_leader_epoch=0, **producer)
    assert ours == theirs
