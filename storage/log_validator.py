"""The records of a client's batch, read before the leader appends it (Kafka's ``LogValidator``).

A batch's CRC-32C covers its bytes, not their sense: a producer (or anything that speaks the
protocol) can send a batch whose CRC is right and whose records are malformed — a record
length that lies, a key length past the record, garbage under a compression codec. Kafka's
leader reads every record of every batch it is given (``LogValidator.assignOffsetsNonCompressed``
and ``validateMessagesAndAssignOffsetsCompressed`` iterate the batch, and
``DefaultRecord.readFrom`` throws ``InvalidRecordException`` on any inconsistency), so such a
batch is refused before anything is written. :func:`check_records` does the same for one batch:

* the records section decompresses with the batch's codec;
* exactly ``RecordsCount`` records fill it, each field inside its record (the reference decoder
  of :mod:`odradek.records.record`, or for batches of 128 records and more the numpy layout of
  :mod:`odradek.records.layout`, which vouches for the same thing);
* headers, where a record has any, are well formed and end where their record does;
* in a compressed batch the offset deltas are 0, 1, 2, … (Kafka: "does not have incremental
  offsets"; it does not check this for uncompressed batches, so neither do we).

It answers which records have no key (their index in the batch), which a compacted log
refuses; :func:`out_of_range_timestamps` which records' timestamps are out of the log's
``message.timestamp.before.max.ms`` / ``after.max.ms``. Kafka names each such record in the
produce answer's ``record_errors`` (KIP-467) and refuses the whole batch
(:func:`refused_records_error`). Pure: bytes in.
"""

from __future__ import annotations

from odradek.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordError,
)
from odradek.records import Compression, RecordBatch
from odradek.records.record import decode_columns, decode_headers_of

__all__ = ["check_records", "out_of_range_timestamps", "refused_records_error"]

_LAYOUT_MIN_RECORDS = 128  # odradek.records.layout.LAYOUT_MIN_RECORDS (numpy loads lazily)


def check_records(buf: bytes | bytearray | memoryview, position: int) -> tuple[int, ...]:
    """Read every record of the v2 batch at ``position`` of ``buf`` (its header already checked,
    its CRC right); answer the indices in the batch of the records with a null key (empty:
    every record has a key).

    Raises :class:`~odradek.errors.CorruptRecordError` for a section that does not decompress
    or records that are malformed or disagree with RecordsCount, and
    :class:`~odradek.errors.InvalidRecordError` for a compressed batch whose offset deltas are
    not 0, 1, 2, …"""
    batch = RecordBatch(buf, position)
    section = batch.section()
    data, count = section[0], section[1]
    compressed = batch.compression is not Compression.NONE
    if count >= _LAYOUT_MIN_RECORDS:
        from odradek.records.layout import record_layout  # numpy: imported on first use

        layout = record_layout(data, count)
        if layout is not None:
            try:
                decode_headers_of(data, layout, range(count))
            except CorruptRecordError as exc:
                raise _at(position, exc) from None
            if compressed:
                deltas = layout.offset_delta
                # 0, 1, 2, …: the first is 0 and each is one more than the one before
                if int(deltas[0]) != 0 or bool((deltas[1:] - deltas[:-1] != 1).any()):
                    raise _not_incremental(position, deltas.tolist())
            keyless = layout.key_size < 0
            if not keyless.any():
                return ()
            return tuple(int(i) for i in keyless.nonzero()[0])
        # the layout does not vouch for the section: the reference decoder names the fault
    try:
        offsets, _, keys, _, _ = decode_columns(*section)
    except CorruptRecordError as exc:
        raise _at(position, exc) from None
    if compressed:
        base = section[2]
        if any(offset - base != index for index, offset in enumerate(offsets)):
            raise _not_incremental(position, [offset - base for offset in offsets])
    if None not in keys:
        return ()
    return tuple(i for i, key in enumerate(keys) if key is None)


def out_of_range_timestamps(
    buf: bytes | bytearray | memoryview,
    position: int,
    now_ms: int,
    before_max_ms: int,
    after_max_ms: int,
) -> dict[int, str]:
    """The records of the (checked) batch at ``position`` whose CreateTime is more than
    ``before_max_ms`` before ``now_ms`` or ``after_max_ms`` after it (Kafka's
    ``message.timestamp.before.max.ms`` / ``after.max.ms``, ``LogValidator.validateTimestamp``),
    by index in the batch, with Kafka's message; records without a timestamp are not checked.
    Decodes the batch's records: call it only when a limit is set."""
    batch = RecordBatch(buf, position)
    offsets, timestamps = batch.columns()[:2]
    low, high = _java_long(now_ms - before_max_ms), _java_long(now_ms + after_max_ms)
    out: dict[int, str] = {}
    for index, (offset, timestamp) in enumerate(zip(offsets, timestamps, strict=True)):
        if timestamp is None or timestamp < 0:
            continue
        if now_ms - timestamp > before_max_ms or timestamp - now_ms > after_max_ms:
            out[index] = (
                f"Timestamp {timestamp} of message with offset {offset} is out of range. "
                f"The timestamp should be within [{low}, {high}]"
            )
    return out


def _java_long(value: int) -> int:
    """``value`` as Java's long arithmetic gives it (wrapping), as Kafka's messages print."""
    return (value + 2**63) % 2**64 - 2**63


def refused_records_error(
    topic_partition: str, keyless: tuple[int, ...], out_of_range: dict[int, str]
) -> InvalidRecordError | InvalidTimestampError | None:
    """The error refusing a batch for its records, in Kafka's words (``LogValidator``'s
    ``validateRecord`` and ``processRecordErrors``): one record error per record at fault, by
    index in the batch — ``keyless`` (records without a key, for a compacted log) first for a
    record at fault twice, else ``out_of_range`` (timestamps) — INVALID_TIMESTAMP if a
    timestamp is among them, else INVALID_RECORD with a message quoting the first three.
    ``None`` when no record is at fault."""
    errors = {
        index: RecordError(
            index,
            f"Compacted topic cannot accept message without key in topic partition "
            f"{topic_partition}",
        )
        for index in keyless
    }
    timestamps = False
    for index, message in out_of_range.items():
        if index not in errors:
            errors[index] = RecordError(index, message)
            timestamps = True
    if not errors:
        return None
    ordered = tuple(errors[index] for index in sorted(errors))
    if timestamps:
        return InvalidTimestampError(
            "One or more records have been rejected due to invalid timestamp", ordered
        )
    return InvalidRecordError(record_errors_message(ordered), ordered)


def record_errors_message(errors: tuple[RecordError, ...]) -> str:
    """Kafka's message for a batch refused for its records' errors (INVALID_RECORD)."""
    shown = ", ".join(
        f"RecordError(batchIndex={e.batch_index}, message='{e.message}')" for e in errors[:3]
    )
    return (
        f"One or more records have been rejected due to {len(errors)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]"
    )


def _at(position: int, exc: CorruptRecordError) -> CorruptRecordError:
    return CorruptRecordError(f"batch at position {position}: {exc.message}")


def _not_incremental(position: int, deltas: list[int]) -> InvalidRecordError:
    index = next(i for i, delta in enumerate(deltas) if delta != i)
    return InvalidRecordError(
        f"batch at position {position}: the records inside the compressed batch do not have "
        f"incremental offsets: record {index} has offset delta {deltas[index]}, expected {index}"
    )
