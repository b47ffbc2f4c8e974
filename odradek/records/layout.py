"""Where every field of a batch's records lies, found with one Python step per record.

Decoding a record field by field in Python costs about 1.1 to 1.4 µs (seven varints, two slices,
five appends), which caps a consumer at well under a million records a second. Only one thing
in the record section is inherently sequential: each record starts where the previous one ends,
so the length varints must be walked one after the other. :func:`record_layout` does just that
walk (:func:`_walk`) and reads every other varint of every record at once with numpy, as arrays
of positions: the attributes byte, the timestamp and offset deltas, the key and value sizes, the
header count. What the caller then makes per record (a ``bytes`` slice, a tuple) is its own
choice.

The walk goes by runs: records of one length follow one another at one stride, so from a
record whose length varint is ``v`` it guesses that the next ones start every ``stride`` bytes
and checks with numpy that each of them starts with the same bytes ``v`` — a record that starts
with the same complete varint has the same length, so it ends where the next guess begins, and
the guess is proven record by record up to the first that differs. A producer's batch of equal
values is two or three runs (the offset delta's varint grows a byte at record 64, the time
delta's at 64 ms), so a 64 KiB batch of 100-byte records is walked in about a tenth of the
0.15 µs a record that the record-by-record walk costs in Python; that walk takes over for the
rest of a section once a run is short (records of every size).

The layout is all-or-nothing: it answers ``None`` for a section it cannot vouch for — a record
that overruns its length or the section, a varint longer than its type allows, a negative
length, bytes left over — and the caller decodes that section with the reference decoder
(:func:`odradek.records.record.decode_columns`'s record loop), which raises the precise
:class:`~odradek.errors.CorruptRecordError`. So the layout never accepts what the reference
rejects; tests hold the two equal on valid batches and on corrupt ones.

Record layout (Kafka's ``DefaultRecord``)::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
    | keyLength varint | key | valueLength varint | value | headerCount varint | headers
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from odradek.errors import CorruptRecordError
from odradek.records.varint import decode_varint

__all__ = ["LAYOUT_MIN_RECORDS", "RecordLayout", "record_layout"]

LAYOUT_MIN_RECORDS = 128
"""Below this many records a batch is decoded record by record: the layout's numpy calls cost
about 80 µs whatever the count, which the saving of 0.6 to 0.8 µs a record repays from about 120
records on (measured with 100-byte records)."""

_I64 = npt.NDArray[np.int64]
_PAD = 16  # zero bytes after the section, so a varint read past its end stays in the array
_MASK32 = np.uint64(0xFFFFFFFF)


class RecordLayout(NamedTuple):
    """The fields of ``n`` records, each an int64 array of ``n``: positions index the section.

    A key or value of negative size is null (its start is then where it would have begun)."""

    timestamp_delta: _I64
    offset_delta: _I64
    key_start: _I64
    key_size: _I64
    value_start: _I64
    value_size: _I64
    header_count: _I64
    headers_start: _I64
    record_end: _I64


_RUN_MIN = 16
"""A run shorter than this hands the rest of the section to the record-by-record walk: a numpy
check costs about as much as walking a dozen records one by one."""


def _walk(data: bytes, section: npt.NDArray[np.uint8], count: int) -> _I64 | None:
    """The position of each record's length varint, or ``None`` if the records do not tile
    ``data`` exactly (a negative length, an overrun, bytes left over). ``section`` is ``data``
    as bytes, padded (see the module docstring: runs of one length)."""
    end = len(data)
    runs: list[_I64] = []
    pos = 0
    done = 0
    while done < count:
        try:
            length, after = decode_varint(data, pos)
        except (IndexError, CorruptRecordError):  # the reference names the fault
            return None
        if length < 0:
            return None
        stride = after - pos + length
        fits = min(count - done, (end - pos) // stride)
        if fits < _RUN_MIN:
            break
        guesses = pos + stride * np.arange(fits, dtype=np.int64)
        same = np.ones(fits, dtype=np.bool_)
        for offset, byte in enumerate(data[pos:after]):
            same &= section[guesses + offset] == byte
        run = fits if bool(same.all()) else int(np.argmin(same))  # the first that differs
        runs.append(guesses[:run])
        pos += stride * run
        done += run
        if run < _RUN_MIN:
            break
    rest = _walk_records(data, count - done, pos)
    if rest is None:
        return None
    starts, pos = rest
    if pos != end:
        return None
    runs.append(np.array(starts, dtype=np.int64))
    return np.concatenate(runs) if len(runs) > 1 else runs[0]


def _walk_records(data: bytes, count: int, pos: int) -> tuple[list[int], int] | None:
    """:func:`_walk` one record at a time, for ``count`` records from ``pos``: their positions
    and the end of the last, or ``None``."""
    starts: list[int] = []
    append = starts.append
    # A length is never negative, so its zig-zag form is even: a one-byte varint is an even
    # byte below 0x80 and a two-byte one an odd-free first byte with the high bit and a second
    # below 0x80 (records up to 8191 bytes). Anything else takes decode_varint, which also
    # catches the odd (negative) ones.
    try:
        for _ in range(count):
            append(pos)
            b = data[pos]
            if b < 0x80 and not b & 1:
                pos += 1 + (b >> 1)
            elif b & 0x81 == 0x80 and (c := data[pos + 1]) < 0x80:
                pos += 2 + (((b & 0x7F) | (c << 7)) >> 1)
            else:
                length, pos = decode_varint(data, pos)
                if length < 0:
                    return None
                pos += length
    except (IndexError, CorruptRecordError):  # truncated or overlong: the reference says which
        return None
    return starts, pos


def _varints(section: npt.NDArray[np.uint8], at: _I64, max_bytes: int) -> tuple[_I64, _I64] | None:
    """The zig-zag varints (``max_bytes`` 5: int32, 10: int64) starting at each position of
    ``at``: (values, positions after them); ``None`` if one is longer than ``max_bytes``."""
    first = section[at].astype(np.int64)
    if int(first.max()) < 0x80:  # all one byte (null keys, no headers, small deltas)
        return (first >> 1) ^ -(first & 1), at + 1
    # Unsigned: the tenth byte of a varlong lands on bit 63.
    raw = (first & 0x7F).astype(np.uint64)
    more = first >= 0x80
    after = at + 1
    shift = 7
    while more.any():
        if shift >= 7 * max_bytes:
            return None
        b = section[after]
        raw |= (b & 0x7F).astype(np.uint64) * more << np.uint64(shift)
        after = after + more
        more &= b >= 0x80
        shift += 7
    if max_bytes == 5:
        raw &= _MASK32
    values = (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)
    return values, after


def record_layout(
    data: bytes, count: int, boundaries: Sequence[tuple[int, int]] = ()
) -> RecordLayout | None:
    """The layout of the ``count`` records that fill ``data`` (a batch's uncompressed record
    section), or ``None`` when it is not a valid section of ``count`` records (see the module
    docstring: the reference decoder then names the fault).

    ``data`` may be several sections one after another (the batches of a fetch answer, laid
    out at once so small batches share the numpy calls' fixed cost): ``boundaries`` then gives
    each later section's (first record's index, first byte), and a record that would straddle
    two sections makes the answer ``None``."""
    if count <= 0:
        return None
    end = len(data)
    section = np.frombuffer(data + bytes(_PAD), dtype=np.uint8)
    length_at = _walk(data, section, count)
    if length_at is None:
        return None
    if any(int(length_at[index]) != position for index, position in boundaries):
        return None
    limit = end + _PAD - 10  # the furthest a varint may start and still be read in full
    try:
        got = _varints(section, length_at, 5)
        if got is None:
            return None
        length, body = got
        record_end = body + length
        fields = []
        at = body + 1  # after the attributes byte
        for max_bytes in (10, 5, 5):  # timestamp delta, offset delta, key size
            if int(at.max()) > limit:
                return None
            got = _varints(section, at, max_bytes)
            if got is None:
                return None
            fields.append(got[0])
            at = got[1]
        timestamp_delta, offset_delta, key_size = fields
        key_start = at
        at = key_start + np.maximum(key_size, 0)
        if bool((at > record_end).any()) or int(at.max()) > limit:
            return None
        got = _varints(section, at, 5)
        if got is None:
            return None
        value_size, value_start = got
        at = value_start + np.maximum(value_size, 0)
        if bool((at > record_end).any()) or int(at.max()) > limit:
            return None
        got = _varints(section, at, 5)
        if got is None:
            return None
        header_count, headers_start = got
    except IndexError:
        return None
    # A record without headers ends right after its header count; one with headers is checked
    # by whoever decodes them (the count must not be negative, the headers must end at its end).
    if bool((header_count < 0).any()):
        return None
    if bool(((header_count == 0) & (headers_start != record_end)).any()):
        return None
    if bool((headers_start > record_end).any()):
        return None
    return RecordLayout(
        timestamp_delta,
        offset_delta,
        key_start,
        key_size,
        value_start,
        value_size,
        header_count,
        headers_start,
        record_end,
    )
