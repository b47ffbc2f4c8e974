"""Kafka's record batch v2 (magic 2), byte for byte: build, view, validate, decode, rewrite.

The one record-batch codec of odradek, shared by the client that builds batches and the broker
that validates and stores them (as Kafka's ``org.apache.kafka.common.record``). Pure: bytes in,
values out; no I/O, no clock; it imports nothing of ours but :mod:`odradek.errors`.

Modules: :mod:`.batch` (byte layout, :class:`RecordBatch`, :func:`read_batches`, in-place
rewrites), :mod:`.builder` (:func:`build_batch`), :mod:`.record` (:class:`Record` and the
record layout), :mod:`.compression` (codecs and their framings), :mod:`.timestamp_type`,
:mod:`.varint`, :mod:`.control` (transaction markers: control batches).
``docs/record-batch.md`` summarises the format.
"""

from odradek.records.batch import (
    ATTRIBUTES_OFFSET,
    BASE_OFFSET_OFFSET,
    BASE_SEQUENCE_OFFSET,
    BASE_TIMESTAMP_OFFSET,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    DELETE_HORIZON_FLAG_MASK,
    HEADER_SIZE_UP_TO_MAGIC,
    LAST_OFFSET_DELTA_OFFSET,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    MAX_TIMESTAMP_OFFSET,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    PARTITION_LEADER_EPOCH_OFFSET,
    PRODUCER_EPOCH_OFFSET,
    PRODUCER_ID_OFFSET,
    RECORD_BATCH_OVERHEAD,
    RECORD_OVERHEAD_V0,
    RECORDS_COUNT_OFFSET,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    BatchHeader,
    RecordBatch,
    batch_size_at,
    read_batches,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    stamp_batch,
    validated_headers,
)
from odradek.records.builder import build_batch
from odradek.records.compression import Compression, compress, decompress
from odradek.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_txn_marker,
    end_txn_marker_of,
    parse_end_txn_marker,
)
from odradek.records.record import NO_TIMESTAMP, Record
from odradek.records.timestamp_type import TimestampType

__all__ = [
    # layout
    "MAGIC_V2",
    "LOG_OVERHEAD",
    "RECORD_BATCH_OVERHEAD",
    "HEADER_SIZE_UP_TO_MAGIC",
    "RECORD_OVERHEAD_V0",
    "NO_TIMESTAMP",
    "NO_PRODUCER_ID",
    "NO_PRODUCER_EPOCH",
    "NO_SEQUENCE",
    "NO_PARTITION_LEADER_EPOCH",
    "BASE_OFFSET_OFFSET",
    "LENGTH_OFFSET",
    "PARTITION_LEADER_EPOCH_OFFSET",
    "MAGIC_OFFSET",
    "CRC_OFFSET",
    "ATTRIBUTES_OFFSET",
    "LAST_OFFSET_DELTA_OFFSET",
    "BASE_TIMESTAMP_OFFSET",
    "MAX_TIMESTAMP_OFFSET",
    "PRODUCER_ID_OFFSET",
    "PRODUCER_EPOCH_OFFSET",
    "BASE_SEQUENCE_OFFSET",
    "RECORDS_COUNT_OFFSET",
    "COMPRESSION_CODEC_MASK",
    "TIMESTAMP_TYPE_MASK",
    "TRANSACTIONAL_FLAG_MASK",
    "CONTROL_FLAG_MASK",
    "DELETE_HORIZON_FLAG_MASK",
    # values
    "Compression",
    "TimestampType",
    "Record",
    # codecs
    "compress",
    "decompress",
    # batches
    "build_batch",
    "RecordBatch",
    "BatchHeader",
    "validated_headers",
    "stamp_batch",
    "read_batches",
    "batch_size_at",
    "set_base_offset",
    "set_partition_leader_epoch",
    "set_log_append_time",
    # control batches
    "ControlRecordType",
    "EndTransactionMarker",
    "build_end_txn_marker",
    "end_txn_marker_of",
    "parse_end_txn_marker",
]
