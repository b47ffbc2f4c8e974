"""A topic's ``compression.type``: the leader stores batches in the topic's codec, keeping
every field of the batch and its records but the codec (Kafka's LogValidator), and the configs
refuse what Kafka refuses, in Kafka's words."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from odradek.errors import InvalidConfigError, MessageTooLargeError
from odradek.records import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    RECORD_BATCH_OVERHEAD,
    Compression,
    ControlRecordType,
    Record,
    RecordBatch,
    build_batch,
    read_batches,
)
from storage import LogConfig
from storage.errors import AppendWouldBlock
from storage.log import Log
from storage.recompression import target_compression
from tests.storage_helpers import open_log
from tests.unit.storage.txn_helpers import marker, txn_batch

RECORDS = [
    Record(
        b"k%d" % i, b"value %d " % i * 20, headers=[("h", b"x"), ("n", None)], timestamp=1000 + i
    )
    for i in range(50)
] + [Record(None, None, timestamp=5000)]


def stored(log: Log) -> list[RecordBatch]:
    data = log.read(0, 10_000_000).records
    return list(read_batches(bytes(data)))


@pytest.mark.parametrize("source", ["none", "gzip", "lz4"])
@pytest.mark.parametrize("target", ["gzip", "snappy", "lz4", "zstd", "uncompressed"])
def test_a_batch_is_stored_in_the_topics_codec_with_everything_else_kept(
    tmp_path, clock, source, target
):
    log = open_log(tmp_path, clock, LogConfig(compression_type=target))
    log.append_as_leader(build_batch([Record(b"a", b"first")]), leader_epoch=3)
    sent = build_batch(
        RECORDS,
        compression=source,
        producer_id=42,
        producer_epoch=7,
        base_sequence=0,
    )
    info = log.append_as_leader(sent, leader_epoch=3)
    assert info.first_offset == 1 and info.last_offset == len(RECORDS)
    batch = stored(log)[1]
    batch.validate()
    want = Compression.NONE if target == "uncompressed" else Compression.from_name(target)
    assert batch.compression is want
    original = RecordBatch(sent)
    assert (batch.base_offset, batch.partition_leader_epoch) == (1, 3)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (42, 7, 0)
    assert (batch.base_timestamp, batch.max_timestamp) == (1000, 5000)
    assert batch.timestamp_type == original.timestamp_type
    assert batch.records_count == len(RECORDS)
    got = batch.records()
    assert [(r.key, r.value, r.headers, r.timestamp) for r in got] == [
        (r.key, r.value, r.headers, r.timestamp) for r in RECORDS
    ]
    assert [r.offset for r in got] == list(range(1, len(RECORDS) + 1))


def test_producer_keeps_each_batchs_codec_and_a_batch_in_the_codec_is_stored_as_sent(
    tmp_path, clock
):
    log = open_log(tmp_path, clock, LogConfig())
    assert target_compression(LogConfig()) is None
    log.append_as_leader(build_batch(RECORDS, compression="lz4"), leader_epoch=0)
    gzip_log = open_log(tmp_path, clock, LogConfig(compression_type="gzip"), name="g-0")
    sent = build_batch(RECORDS, compression="gzip")
    gzip_log.append_as_leader(sent, leader_epoch=0)
    assert stored(log)[0].compression is Compression.LZ4
    # in place: only the offset and epoch (outside the CRC) differ
    assert bytes(stored(gzip_log)[0].buffer())[16:] == sent[16:]


def test_the_level_configs_choose_the_level(tmp_path, clock):
    values = [Record(None, bytes(range(256)) * 40) for _ in range(20)]
    sizes = {}
    for level in (1, 9):
        log = open_log(
            tmp_path,
            clock,
            LogConfig(compression_type="gzip", compression_gzip_level=level),
            name=f"t{level}-0",
        )
        log.append_as_leader(build_batch(values), leader_epoch=0)
        sizes[level] = stored(log)[0].size_in_bytes
    assert sizes[9] < sizes[1]


def test_an_uncompressed_batch_with_gaps_in_its_offset_deltas_is_renumbered(tmp_path, clock):
    # Kafka rebuilds a recompressed batch with offset deltas 0, 1, 2, ...
    log = open_log(tmp_path, clock, LogConfig(compression_type="zstd"))
    sent = bytearray(build_batch([Record(b"k", b"v", timestamp=7 + i) for i in range(3)]))
    # each record is 9 bytes; record 1's offset delta (its 4th byte) becomes 2 (zig-zag 4)
    assert sent[RECORD_BATCH_OVERHEAD + 12] == 2
    sent[RECORD_BATCH_OVERHEAD + 12] = 4
    struct.pack_into(">I", sent, CRC_OFFSET, crc32c(bytes(sent[ATTRIBUTES_OFFSET:])))
    assert [r.offset for r in RecordBatch(bytes(sent)).records()] == [0, 2, 2]
    log.append_as_leader(bytes(sent), leader_epoch=0)
    got = stored(log)[0].records()
    assert [r.offset for r in got] == [0, 1, 2] and [r.timestamp for r in got] == [7, 8, 9]


def test_a_batch_that_grows_past_max_message_bytes_is_refused(tmp_path, clock):
    sent = build_batch([Record(None, bytes(range(256)) * 4)], compression="zstd")
    log = open_log(
        tmp_path,
        clock,
        LogConfig(compression_type="uncompressed", max_message_bytes=len(sent) + 10),
    )
    with pytest.raises(MessageTooLargeError, match=r"Message batch size is .* topic-0 which"):
        log.append_as_leader(sent, leader_epoch=0)
    assert log.log_end_offset == 0


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "compression.type",
            "brotli",
            "Invalid value brotli for configuration compression.type: String must be one of: "
            "uncompressed, zstd, lz4, snappy, gzip, producer",
        ),
        (
            "compression.type",
            "GZIP",
            "Invalid value GZIP for configuration compression.type: String must be one of: "
            "uncompressed, zstd, lz4, snappy, gzip, producer",
        ),
        (
            "compression.gzip.level",
            "10",
            "Invalid value 10 for configuration compression.gzip.level: Value must be between 1 "
            "and 9 or equal to -1",
        ),
        (
            "compression.lz4.level",
            "18",
            "Invalid value 18 for configuration compression.lz4.level: Value must be no more "
            "than 17",
        ),
        (
            "compression.zstd.level",
            "-131073",
            "Invalid value -131073 for configuration compression.zstd.level: Value must be at "
            "least -131072",
        ),
        (
            "compression.zstd.level",
            "high",
            "Invalid value high for configuration compression.zstd.level: Not a number of type INT",
        ),
    ],
)
def test_invalid_compression_configs_are_refused_in_kafkas_words(name, value, message):
    with pytest.raises(InvalidConfigError) as caught:
        LogConfig.from_kafka({name: value})
    assert caught.value.message == message


def test_the_compression_configs_read_and_write_kafkas_names():
    config = LogConfig.from_kafka({"compression.type": "zstd", "compression.zstd.level": "-5"})
    assert target_compression(config) == (Compression.ZSTD, -5)
    assert config.to_kafka()["compression.type"] == "zstd"
    assert LogConfig().to_kafka()["compression.type"] == "producer"


def test_a_caller_that_must_not_block_is_told_the_append_would_recompress(tmp_path, clock):
    # the Kafka door's event loop hands such an append to a request thread
    log = open_log(tmp_path, clock, LogConfig(compression_type="gzip"))
    with pytest.raises(AppendWouldBlock):
        log.append_as_leader(build_batch(RECORDS), leader_epoch=0, blocking=False)
    assert log.log_end_offset == 0
    log.append_as_leader(build_batch(RECORDS, compression="gzip"), leader_epoch=0, blocking=False)
    log.append_as_leader(build_batch(RECORDS), leader_epoch=0)
    assert log.log_end_offset == 2 * len(RECORDS)


def test_transactional_batches_keep_their_flag_and_markers_stay_uncompressed(tmp_path, clock):
    # Kafka's LogValidator: the rebuilt batch keeps isTransactional; a control batch written
    # uncompressed is never compressed
    log = open_log(tmp_path, clock, LogConfig(compression_type="zstd"))
    log.append_as_leader(txn_batch(7, 0, 3), leader_epoch=0)
    log.append_transaction_marker(7, 0, marker(ControlRecordType.COMMIT), 0)
    data, commit = stored(log)
    assert data.compression is Compression.ZSTD and data.is_transactional
    assert (data.producer_id, data.base_sequence, data.records_count) == (7, 0, 3)
    assert commit.is_control and commit.compression is Compression.NONE
    assert log.producer_state()[7].last_seq == 2
