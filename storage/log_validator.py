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
refuses: Kafka names each of them in the produce answer's ``record_errors`` (KIP-467) and
refuses the whole batch (:func:`keyless_records_error`). Pure: bytes in.
"""

from __future__ import annotations

from odradek.errors import CorruptRecordError, InvalidRecordError, RecordError
from odradek.records import Compression, RecordBatch
from odradek.records.record import decode_columns, decode_headers_of

__all__ = ["check_records", "keyless_records_error"]

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


def keyless_records_error(topic_partition: str, keyless: tuple[int, ...]) -> InvalidRecordError:
    """The error refusing a batch whose records at ``keyless`` have no key, for a compacted
    log, in Kafka's words (``LogValidator.validateKey`` and ``processRecordErrors``): one
    record error per keyless record, and a message quoting the first three."""
    errors = tuple(
        RecordError(
            index,
            f"Compacted topic cannot accept message without key in topic partition "
            f"{topic_partition}",
        )
        for index in keyless
    )
    return InvalidRecordError(record_errors_message(errors), errors)


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
