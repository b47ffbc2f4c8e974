"""``odradek dump-log``: print what is in segment files, as Kafka's ``kafka-dump-log.sh`` does.

Given ``.log``, ``.index``, ``.timeindex``, ``.txnindex`` and ``.snapshot`` files (also with a
``.deleted``, ``.cleaned`` or ``.swap`` suffix) or directories holding them, print every batch
of a log (with its producer id, epoch and sequences, its transactional and control flags) and,
with ``--deep-iteration`` or ``--print-data-log``, every record (a control record as its
COMMIT or ABORT marker and coordinator epoch); every entry of an index; every aborted
transaction of a ``.txnindex`` (as Kafka's ``dumpTxnIndex``); every producer of a
producer-state snapshot (as Kafka's ``dumpProducerIdSnapshot``); or check
an index against the log beside it (``--verify-index``) or with storage's sanity check
(``--index-sanity-check``). ``--json`` prints one JSON object per file instead of text.
``docs/dump-log.md`` shows the output and the exit codes.

The tool is for looking at files a broker may still have open, or at files that are damaged:

* It never writes, creates or resizes anything. Files are opened ``O_RDONLY`` and never through
  :class:`storage.OffsetIndex` or :class:`storage.TimeIndex`, which create a missing file and
  trim an existing one on close. Logs are read batch by batch with ``pread`` rather than
  mapped: memory stays bounded by the largest batch, and a broker truncating the file meanwhile
  shortens the dump (reported as a torn tail) instead of killing the process with SIGBUS.
* It reports damage and goes on where it can. A batch whose CRC does not match is printed with
  ``isvalid: false``; a length or magic that makes the rest of the file unreadable is reported
  with its position, and that file's dump stops there. Anything invalid makes the exit code 1.
* The framing rules are those of :func:`odradek.records.read_batches` (Kafka's
  ``FileLogInputStream``), so the dump stops where storage's recovery would.

Text output streams (one ``print`` per line, so ``| head`` works and a broken pipe is handled by
the dispatcher in :mod:`odradek.cli`); JSON output is built per file and printed when the file
is done.
"""

from __future__ import annotations

import argparse
import base64
import enum
import json
import os
import stat
import struct
import sys
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeAlias

from odradek.cli.offsets_decoder import decode_offsets_record, offsets_record_text
from odradek.cli.share_state_decoder import decode_share_state_record, share_state_record_text
from odradek.errors import CorruptRecordError
from odradek.records import (
    HEADER_SIZE_UP_TO_MAGIC,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    NO_SEQUENCE,
    RECORD_BATCH_OVERHEAD,
    RECORD_OVERHEAD_V0,
    Record,
    RecordBatch,
    TimestampType,
)
from storage.log_segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
)
from storage.producer_state import (
    SNAPSHOT_SUFFIX,
    CorruptSnapshotError,
    ProducerStateEntry,
    decode_snapshot,
)
from storage.transaction_index import (
    ABORTED_TXN_SIZE,
    ABORTED_TXN_VERSION,
    TXN_INDEX_SUFFIX,
    AbortedTxn,
)

__all__ = ["DumpOptions", "SegmentFileKind", "add_parser", "dump", "run"]

PROG = "odradek dump-log"

_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
# The index entry layouts of storage.offset_index and storage.time_index (docs/indexes.md).
_OFFSET_ENTRY = struct.Struct(">ii")  # offset - base_offset, position
_TIME_ENTRY = struct.Struct(">qi")  # timestamp, offset - base_offset
_INT32_MAX = 2**31 - 1

_STATE_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)

# Kafka's ControlRecordType ids, read from a control record's key (int16 version, int16 type).
_CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}


class SegmentFileKind(enum.Enum):
    """The four files of a segment and the producer-state snapshot; the value is the ``type``
    of the JSON output."""

    LOG = "log"
    OFFSET_INDEX = "offset_index"
    TIME_INDEX = "time_index"
    TXN_INDEX = "txn_index"
    PRODUCER_SNAPSHOT = "producer_snapshot"


_KIND_BY_SUFFIX = {
    LOG_SUFFIX: SegmentFileKind.LOG,
    INDEX_SUFFIX: SegmentFileKind.OFFSET_INDEX,
    TIME_INDEX_SUFFIX: SegmentFileKind.TIME_INDEX,
    TXN_INDEX_SUFFIX: SegmentFileKind.TXN_INDEX,
    SNAPSHOT_SUFFIX: SegmentFileKind.PRODUCER_SNAPSHOT,
}
_KINDS = "(.log, .index, .timeindex, .txnindex, .snapshot)"


@dataclass(frozen=True, slots=True)
class DumpOptions:
    """What to print; the command-line flags of the same names."""

    deep_iteration: bool = False
    """Print every record after its batch (implied by ``print_data_log``)."""
    print_data_log: bool = False
    """Also print each record's key, value and headers."""
    verify_index: bool = False
    """Check index entries against the ``.log`` beside the index instead of printing them."""
    index_sanity_check: bool = False
    """Only run storage's sanity check on indexes."""
    max_bytes: int | None = None
    """Read at most this many bytes of each ``.log`` (Kafka's ``--max-bytes``); None: all."""
    json: bool = False
    """One JSON object per file instead of text."""
    offsets_decoder: bool = False
    """Decode records as ``__consumer_offsets`` keys and values (implies printing records)."""
    share_group_state_decoder: bool = False
    """Decode records as ``__share_group_state`` keys and values (implies printing records)."""

    @property
    def records(self) -> bool:
        return (
            self.deep_iteration
            or self.print_data_log
            or self.offsets_decoder
            or self.share_group_state_decoder
        )


@dataclass(frozen=True, slots=True)
class SegmentFile:
    """A file to dump: its path as given (or found in a directory), kind and base offset."""

    path: Path
    kind: SegmentFileKind
    base_offset: int
    state_suffix: str
    """``""`` or the ``.deleted``/``.cleaned``/``.swap`` suffix after the kind's suffix."""

    def sibling_log(self) -> Path:
        """The ``.log`` of the same segment (with the same state suffix)."""
        name = f"{self.path.name.split('.', 1)[0]}{LOG_SUFFIX}{self.state_suffix}"
        return self.path.with_name(name)


class PathError(Exception):
    """A path that cannot be dumped: reported on one line, exit code 1."""


def classify(path: Path) -> SegmentFile | None:
    """The segment file ``path`` names, or None if its name is not ``<digits>.<kind>[.state]``."""
    name = path.name
    state = next((s for s in _STATE_SUFFIXES if name.endswith(s)), "")
    core = name[: len(name) - len(state)]
    for suffix, kind in _KIND_BY_SUFFIX.items():
        if core.endswith(suffix):
            stem = core[: -len(suffix)]
            if stem.isascii() and stem.isdigit():
                return SegmentFile(path, kind, int(stem), state)
            return None
    return None


# --- events: what a dump finds, in file order ------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileStart:
    file: SegmentFile
    size_in_bytes: int


@dataclass(frozen=True, slots=True)
class BatchFound:
    position: int
    batch: RecordBatch
    valid: bool
    computed_crc: int


@dataclass(frozen=True, slots=True)
class RecordFound:
    batch: RecordBatch
    record: Record


@dataclass(frozen=True, slots=True)
class Gap:
    """Offsets ``first..last`` are absent: between batches, or inside the batch at ``within``."""

    first: int
    last: int
    within: int | None = None


@dataclass(frozen=True, slots=True)
class Problem:
    """Something invalid in the file. ``invalid_bytes``: bytes it makes unreadable (0: none)."""

    kind: str
    position: int
    message: str
    invalid_bytes: int = 0


@dataclass(frozen=True, slots=True)
class MaxBytesReached:
    position: int
    max_bytes: int
    bytes_not_dumped: int


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """Slot ``slot`` of an index: ``(offset, position)`` or ``(timestamp, offset)``."""

    kind: SegmentFileKind
    slot: int
    offset: int
    position: int = -1
    timestamp: int = -1


@dataclass(frozen=True, slots=True)
class EmptyIndex:
    path: Path


@dataclass(frozen=True, slots=True)
class UntrimmedTail:
    """An all-zero entry after the first one: the rest is a preallocated, untrimmed tail."""

    slot: int
    entries: int


@dataclass(frozen=True, slots=True)
class Mismatch:
    entry: IndexEntry
    message: str


@dataclass(frozen=True, slots=True)
class Verified:
    log_path: Path
    entries_checked: int
    mismatches: int


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    """One producer of a ``.snapshot`` file."""

    entry: ProducerStateEntry


@dataclass(frozen=True, slots=True)
class TxnIndexEntry:
    """One aborted transaction of a ``.txnindex`` file, at entry ``slot``."""

    slot: int
    version: int
    entry: AbortedTxn


@dataclass(frozen=True, slots=True)
class SanityResult:
    passed: bool
    message: str


Event: TypeAlias = (
    FileStart
    | BatchFound
    | RecordFound
    | Gap
    | Problem
    | MaxBytesReached
    | IndexEntry
    | EmptyIndex
    | UntrimmedTail
    | Mismatch
    | Verified
    | SanityResult
    | SnapshotEntry
    | TxnIndexEntry
)


def is_invalid(event: Event) -> bool:
    """Whether ``event`` makes the exit code 1."""
    if isinstance(event, Problem | Mismatch):
        return True
    if isinstance(event, BatchFound):
        return not event.valid
    if isinstance(event, SanityResult):
        return not event.passed
    return False


# --- reading a .log ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Stop:
    """Why a log scan ended before the end of the file."""

    event: Problem | MaxBytesReached


def _scan_log(
    fd: int, path: Path, file_size: int, max_bytes: int | None
) -> Iterator[tuple[int, RecordBatch] | _Stop]:
    """Yield ``(position, batch)`` for each whole batch, then a :class:`_Stop` if the scan did
    not end exactly at the end of the file (or of ``max_bytes``).

    The rules are :func:`odradek.records.read_batches`'s: no more than 17 bytes left is the end
    (a torn tail if any are left); a Length below 14 or a magic other than 2 makes the rest
    unreadable; a batch running past the end is a torn tail. Also, a v2 batch shorter than its
    61-byte header is unreadable. Each batch is read with one ``pread`` into its own buffer.
    """
    end = file_size if max_bytes is None else min(file_size, max_bytes)
    limited = end < file_size
    position = 0

    def stop_here(reason: str | None) -> _Stop:
        not_read = file_size - position
        if reason is not None:
            return _Stop(
                Problem(
                    "corrupt_batch",
                    position,
                    f"Corrupt batch at position {position} of {path}: {reason}; stopped, "
                    f"{not_read} bytes not dumped",
                    not_read,
                )
            )
        if limited:
            return _Stop(MaxBytesReached(position, end, not_read))
        return _Stop(
            Problem(
                "torn_tail",
                position,
                f"Found {not_read} invalid bytes at the end of {path} (position {position})",
                not_read,
            )
        )

    while True:
        remaining = end - position
        if remaining <= HEADER_SIZE_UP_TO_MAGIC:
            if remaining > 0 or limited:
                yield stop_here(None)
            return
        head = os.pread(fd, HEADER_SIZE_UP_TO_MAGIC, position)
        if len(head) < HEADER_SIZE_UP_TO_MAGIC:  # the file shrank while we read it
            file_size = position + len(head)
            yield stop_here(None)
            return
        (length,) = _INT32.unpack_from(head, LENGTH_OFFSET)
        if length < RECORD_OVERHEAD_V0:
            yield stop_here(
                f"its length field is {length}, below the minimum record overhead "
                f"({RECORD_OVERHEAD_V0})"
            )
            return
        size = length + LOG_OVERHEAD
        if size > remaining:
            yield stop_here(None)
            return
        magic = head[MAGIC_OFFSET]
        if magic != MAGIC_V2:
            yield stop_here(f"magic {magic} is not {MAGIC_V2} (only record batch v2 is supported)")
            return
        if size < RECORD_BATCH_OVERHEAD:
            yield stop_here(
                f"its size {size} is smaller than the {RECORD_BATCH_OVERHEAD}-byte batch header"
            )
            return
        data = os.pread(fd, size, position)
        if len(data) < size:
            file_size = position + len(data)
            yield stop_here(None)
            return
        yield position, RecordBatch(data)
        position += size


def _dump_log(seg: SegmentFile, fd: int, file_size: int, opts: DumpOptions) -> Iterator[Event]:
    yield FileStart(seg, file_size)
    next_offset = seg.base_offset  # the first offset not yet seen
    for item in _scan_log(fd, seg.path, file_size, opts.max_bytes):
        if isinstance(item, _Stop):
            yield item.event
            return
        position, batch = item
        base, last = batch.base_offset, batch.last_offset
        if base > next_offset:
            yield Gap(next_offset, base - 1)
        # The scan checked the magic, the size and the bounds: the CRC is what is left.
        computed_crc = batch.compute_crc()
        yield BatchFound(position, batch, computed_crc == batch.crc, computed_crc)
        if base < next_offset or last < base:
            yield Problem(
                "offset_order",
                position,
                f"Offsets out of order: the batch at position {position} holds offsets "
                f"{base}..{last}, but the next offset expected was at least {next_offset}",
            )
        if opts.records:
            yield from _dump_records(position, batch)
        next_offset = max(next_offset, last + 1)


def _dump_records(position: int, batch: RecordBatch) -> Iterator[Event]:
    try:
        # The header was read from a buffer holding only this batch; say where it really is.
        records = batch.records()
    except CorruptRecordError as exc:
        why = exc.message.removeprefix("batch at position 0: ")
        yield Problem(
            "corrupt_records",
            position,
            f"cannot decode the records of the batch at position {position}: {why}",
        )
        return
    expected = batch.base_offset
    for record in records:
        offset = record.offset if record.offset is not None else expected
        if offset > expected:
            yield Gap(expected, offset - 1, within=position)
        yield RecordFound(batch, record)
        expected = max(expected, offset + 1)
    if expected <= batch.last_offset:
        yield Gap(expected, batch.last_offset, within=position)


# --- reading an index --------------------------------------------------------------------------


def _entry_size(kind: SegmentFileKind) -> int:
    return _OFFSET_ENTRY.size if kind is SegmentFileKind.OFFSET_INDEX else _TIME_ENTRY.size


def _entry_at(seg: SegmentFile, data: bytes, slot: int) -> IndexEntry:
    if seg.kind is SegmentFileKind.OFFSET_INDEX:
        relative, position = _OFFSET_ENTRY.unpack_from(data, slot * _OFFSET_ENTRY.size)
        return IndexEntry(seg.kind, slot, seg.base_offset + relative, position=position)
    timestamp, relative = _TIME_ENTRY.unpack_from(data, slot * _TIME_ENTRY.size)
    return IndexEntry(seg.kind, slot, seg.base_offset + relative, timestamp=timestamp)


def sanity_check(seg: SegmentFile, data: bytes) -> SanityResult:
    """Storage's ``sanity_check()`` of an index, on its bytes (see ``OffsetIndex.sanity_check``
    and ``TimeIndex.sanity_check``): as storage opens an existing index, every whole entry
    counts. The last offset must not be below the base offset, (time index) the last timestamp
    must not be below the first, and the length must be a multiple of the entry size.
    """
    size = _entry_size(seg.kind)
    entries = len(data) // size
    path = seg.path
    if entries:
        last = _entry_at(seg, data, entries - 1)
        if seg.kind is SegmentFileKind.TIME_INDEX:
            first = _entry_at(seg, data, 0)
            if last.timestamp < first.timestamp:
                return SanityResult(
                    False,
                    f"{path} failed sanity check: its last timestamp {last.timestamp} is below "
                    f"its first timestamp {first.timestamp}",
                )
        if last.offset < seg.base_offset:
            return SanityResult(
                False,
                f"{path} failed sanity check: its last offset {last.offset} is below its base "
                f"offset {seg.base_offset}",
            )
    if len(data) % size:
        return SanityResult(
            False,
            f"{path} failed sanity check: its length {len(data)} is not a multiple of the entry "
            f"size {size}",
        )
    return SanityResult(True, f"{path} passed sanity check.")


@dataclass(frozen=True, slots=True)
class _LogBatch:
    position: int
    base_offset: int
    last_offset: int
    max_timestamp_so_far: int


@dataclass(frozen=True, slots=True)
class _LogSummary:
    """What verifying an index needs of the log: its batches and where reading it stopped."""

    path: Path
    batches: list[_LogBatch]
    readable_to: int | None
    """The position where the log stopped being readable, or None if it was read to its end."""


def read_log_summary(log_path: Path) -> _LogSummary:
    """Scan the batch headers of ``log_path``. Raises ``OSError``."""
    fd = os.open(log_path, os.O_RDONLY)
    try:
        file_size = os.fstat(fd).st_size
        batches: list[_LogBatch] = []
        readable_to: int | None = None
        running_max = -1
        for item in _scan_log(fd, log_path, file_size, None):
            if isinstance(item, _Stop):
                readable_to = item.event.position
                break
            position, batch = item
            running_max = max(running_max, batch.max_timestamp)
            batches.append(_LogBatch(position, batch.base_offset, batch.last_offset, running_max))
    finally:
        os.close(fd)
    return _LogSummary(log_path, batches, readable_to)


def _check_offset_entry(
    entry: IndexEntry, previous: IndexEntry | None, log: _LogSummary, by_position: dict[int, int]
) -> Iterator[str]:
    if previous is not None:
        if entry.offset <= previous.offset:
            yield f"offset {entry.offset} is not above the previous entry's ({previous.offset})"
        if entry.position <= previous.position:
            yield (
                f"position {entry.position} is not above the previous entry's ({previous.position})"
            )
    found = by_position.get(entry.position)
    if found is None:
        why = f"no batch starts at position {entry.position} of {log.path}"
        if log.readable_to is not None and entry.position >= log.readable_to:
            why += f" (the log is readable only up to position {log.readable_to})"
        yield why
        return
    batch = log.batches[found]
    if batch.last_offset != entry.offset:
        yield (
            f"the batch at position {entry.position} holds offsets "
            f"{batch.base_offset}..{batch.last_offset}: it ends at offset {batch.last_offset}, "
            f"not {entry.offset}"
        )


def _check_time_entry(
    entry: IndexEntry,
    previous: IndexEntry | None,
    log: _LogSummary,
    lasts: list[int],
    by_last: dict[int, int],
) -> Iterator[str]:
    if previous is not None:
        if entry.timestamp <= previous.timestamp:
            yield (
                f"timestamp {entry.timestamp} is not above the previous entry's "
                f"({previous.timestamp})"
            )
        if entry.offset < previous.offset:
            yield f"offset {entry.offset} is below the previous entry's ({previous.offset})"
    found = by_last.get(entry.offset)
    if found is None:
        i = bisect_left(lasts, entry.offset)
        if i < len(lasts) and log.batches[i].base_offset <= entry.offset:
            b = log.batches[i]
            yield (
                f"offset {entry.offset} is not the last offset of its batch "
                f"({b.base_offset}..{b.last_offset} at position {b.position})"
            )
        else:
            why = f"offset {entry.offset} is not in {log.path}"
            if log.readable_to is not None:
                why += f" (readable only up to position {log.readable_to})"
            yield why
        return
    expected = log.batches[found].max_timestamp_so_far
    if entry.timestamp != expected:
        yield (
            f"timestamp {entry.timestamp} is not the largest timestamp in the log up to offset "
            f"{entry.offset} ({expected})"
        )


def _dump_index(
    seg: SegmentFile, data: bytes, opts: DumpOptions, log: _LogSummary | None
) -> Iterator[Event]:
    yield FileStart(seg, len(data))
    if opts.index_sanity_check:
        yield sanity_check(seg, data)
        return
    size = _entry_size(seg.kind)
    entries = len(data) // size
    if len(data) == 0:
        yield EmptyIndex(seg.path)
    by_position: dict[int, int] = {}
    lasts: list[int] = []
    by_last: dict[int, int] = {}
    if log is not None:
        by_position = {b.position: i for i, b in enumerate(log.batches)}
        lasts = [b.last_offset for b in log.batches]
        by_last = {b.last_offset: i for i, b in enumerate(log.batches)}
    zero = bytes(size)
    previous: IndexEntry | None = None
    checked = mismatches = 0
    for slot in range(entries):
        if slot > 0 and data[slot * size : (slot + 1) * size] == zero:
            # Kafka's rule: a crash leaves the preallocated index untrimmed, and its unused
            # slots read (base_offset, 0) — (0, base_offset) in the time index. Stop there.
            yield UntrimmedTail(slot, entries)
            break
        entry = _entry_at(seg, data, slot)
        if log is None:
            yield entry
            continue
        checked += 1
        if seg.kind is SegmentFileKind.OFFSET_INDEX:
            problems = list(_check_offset_entry(entry, previous, log, by_position))
        else:
            problems = list(_check_time_entry(entry, previous, log, lasts, by_last))
        for message in problems:
            mismatches += 1
            yield Mismatch(entry, message)
        previous = entry
    partial = len(data) % size
    if partial:
        position = entries * size
        yield Problem(
            "partial_entry",
            position,
            f"Found {partial} invalid bytes at the end of {seg.path} (position {position}): "
            f"not a whole {size}-byte entry",
            partial,
        )
    if log is not None:
        yield Verified(log.path, checked, mismatches)


# --- output ------------------------------------------------------------------------------------


def _printable(text: str, encoding: str) -> bool:
    if not text.isprintable():
        return False
    try:
        text.encode(encoding)
    except (UnicodeError, LookupError):
        return False
    return True


def show_bytes(data: bytes, encoding: str = "utf-8") -> str:
    """``data`` for a text dump: as is if it is printable UTF-8 (that ``encoding`` can print),
    else as a Python bytes literal (``b'\\x00\\xff'``), which never spans lines."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return repr(data)
    return text if _printable(text, encoding) else repr(data)


def _show_str(text: str, encoding: str) -> str:
    return text if _printable(text, encoding) else repr(text)


def _json_bytes(data: bytes | None) -> tuple[str | None, bool]:
    """``(text, is_base64)``: UTF-8 text where valid, else base64."""
    if data is None:
        return None, False
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), True


def _increment_sequence(sequence: int, increment: int) -> int:
    # Kafka's DefaultRecordBatch.incrementSequence: sequences wrap from 2**31 - 1 to 0.
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


def last_sequence(batch: RecordBatch) -> int:
    if batch.base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    return _increment_sequence(batch.base_sequence, batch.last_offset_delta)


def record_sequence(batch: RecordBatch, offset: int) -> int:
    if batch.base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    return _increment_sequence(batch.base_sequence, offset - batch.base_offset)


def _codec_name(batch: RecordBatch) -> str:
    try:
        return batch.compression.label
    except CorruptRecordError:
        return f"unknown({batch.attributes & 0x07})"


def _timestamp_type_name(batch: RecordBatch) -> str:
    if batch.timestamp_type is TimestampType.LOG_APPEND_TIME:
        return "LogAppendTime"
    return "CreateTime"


def _control_info(record: Record) -> dict[str, Any]:
    """Kafka's control record key (int16 version, int16 type) and, for a transaction marker,
    its value (int16 version, int32 coordinator epoch)."""
    key = record.key
    if key is None or len(key) < 4:
        return {"type": "UNKNOWN", "type_id": None}
    type_id = _INT16.unpack_from(key, 2)[0]
    info: dict[str, Any] = {"type": _CONTROL_TYPES.get(type_id, "UNKNOWN"), "type_id": type_id}
    value = record.value
    if type_id in (0, 1) and value is not None and len(value) >= 6:
        info["coordinator_epoch"] = _INT32.unpack_from(value, 2)[0]
    return info


def _bool(value: bool) -> str:
    return "true" if value else "false"


class TextOutput:
    """Prints each event as Kafka's ``DumpLogSegments`` would, line by line."""

    def __init__(self, out: TextIO, opts: DumpOptions) -> None:
        self._out = out
        self._opts = opts
        self._encoding = getattr(out, "encoding", None) or "utf-8"

    def _line(self, text: str) -> None:
        print(text, file=self._out)

    def emit(self, event: Event) -> None:
        match event:
            case FileStart(file=seg):
                self._line(f"Dumping {seg.path}")
                if seg.kind is SegmentFileKind.LOG:
                    self._line(f"Log starting offset: {seg.base_offset}")
            case BatchFound():
                self._line(self._batch_line(event))
            case RecordFound():
                self._line(self._record_line(event))
            case Gap(first=first, last=last, within=within):
                prefix = "| " if within is not None else ""
                self._line(f"{prefix}gap: offsets {first}..{last} are absent")
            case Problem(kind="corrupt_records", message=message):
                self._line(f"| {message}")  # under its batch, as the records would be
            case Problem(message=message):
                self._line(message)
            case MaxBytesReached(position=position, max_bytes=limit, bytes_not_dumped=rest):
                self._line(
                    f"Stopped at position {position}: --max-bytes {limit} reached "
                    f"({rest} bytes not dumped)"
                )
            case IndexEntry():
                self._line(self._entry_text(event))
            case EmptyIndex(path=path):
                self._line(f"{path} is empty.")
            case UntrimmedTail(slot=slot, entries=entries):
                self._line(
                    f"Stopped at entry {slot} of {entries}: an all-zero entry marks the "
                    f"untrimmed, preallocated tail of the index ({entries - slot} entries not "
                    f"shown)"
                )
            case Mismatch(entry=entry, message=message):
                self._line(f"Mismatch at entry {entry.slot} ({self._entry_text(entry)}): {message}")
            case Verified(log_path=log_path, entries_checked=checked, mismatches=count):
                found = {0: "no mismatches", 1: "1 mismatch"}.get(count, f"{count} mismatches")
                counted = "1 entry" if checked == 1 else f"{checked} entries"
                self._line(f"Verified {counted} against {log_path}: {found}")
            case SanityResult(message=message):
                self._line(message)
            case SnapshotEntry(entry=entry):
                self._line(snapshot_entry_line(entry))
            case TxnIndexEntry():
                self._line(txn_index_entry_line(event))

    def abort(self, message: str) -> None:
        """The file could not be read to its end (``message`` went to stderr)."""

    def finish(self) -> None:
        pass

    @staticmethod
    def _entry_text(entry: IndexEntry) -> str:
        if entry.kind is SegmentFileKind.OFFSET_INDEX:
            return f"offset: {entry.offset} position: {entry.position}"
        return f"timestamp: {entry.timestamp} offset: {entry.offset}"

    @staticmethod
    def _batch_line(found: BatchFound) -> str:
        b = found.batch
        horizon = b.delete_horizon_ms
        return (
            f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.records_count} "
            f"baseSequence: {b.base_sequence} lastSequence: {last_sequence(b)} "
            f"producerId: {b.producer_id} producerEpoch: {b.producer_epoch} "
            f"partitionLeaderEpoch: {b.partition_leader_epoch} "
            f"isTransactional: {_bool(b.is_transactional)} isControl: {_bool(b.is_control)} "
            f"deleteHorizonMs: {'none' if horizon is None else horizon} "
            f"position: {found.position} {_timestamp_type_name(b)}: {b.max_timestamp} "
            f"size: {b.size_in_bytes} magic: {b.magic} compresscodec: {_codec_name(b)} "
            f"crc: {b.crc} isvalid: {_bool(found.valid)}"
        )

    def _record_line(self, found: RecordFound) -> str:
        b, r = found.batch, found.record
        enc = self._encoding
        offset = r.offset if r.offset is not None else -1
        keys = ",".join(_show_str(k, enc) for k, _ in r.headers)
        parts = [
            f"| offset: {offset} {_timestamp_type_name(b)}: "
            f"{r.timestamp if r.timestamp is not None else -1} "
            f"keySize: {-1 if r.key is None else len(r.key)} "
            f"valueSize: {-1 if r.value is None else len(r.value)} "
            f"sequence: {record_sequence(b, offset)} headerKeys: [{keys}]"
        ]
        if b.is_control:
            info = _control_info(r)
            if info["type"] in ("ABORT", "COMMIT") and "coordinator_epoch" in info:
                parts.append(
                    f"endTxnMarker: {info['type']} coordinatorEpoch: {info['coordinator_epoch']}"
                )
            else:
                parts.append(f"controlType: {info['type']}({info['type_id']})")
        elif self._opts.offsets_decoder:
            parts.append(offsets_record_text(r.key, r.value))
        elif self._opts.share_group_state_decoder:
            parts.append(share_state_record_text(r.key, r.value))
        elif self._opts.print_data_log:
            if r.key is not None:
                parts.append(f"key: {show_bytes(r.key, enc)}")
            if r.value is not None:
                parts.append(f"payload: {show_bytes(r.value, enc)}")
            elif r.key is not None:
                parts.append("payload: <tombstone>")
            else:
                parts.append("payload: <null>")
            if r.headers:
                shown = ", ".join(
                    f"{_show_str(k, enc)}={'<null>' if v is None else show_bytes(v, enc)}"
                    for k, v in r.headers
                )
                parts.append(f"headers: [{shown}]")
        return " ".join(parts)


class JsonOutput:
    """Collects one file's events into a JSON object and prints it on one line."""

    def __init__(self, out: TextIO, opts: DumpOptions) -> None:
        self._out = out
        self._opts = opts
        self._doc: dict[str, Any] | None = None

    def emit(self, event: Event) -> None:
        if isinstance(event, FileStart):
            self.finish()
            self._doc = self._start(event)
            return
        doc = self._doc
        assert doc is not None, "an event before FileStart"
        if is_invalid(event):
            doc["valid"] = False
        match event:
            case BatchFound():
                doc["batches"].append(self._batch(event))
            case RecordFound():
                doc["batches"][-1]["records"].append(self._record(event))
            case Gap(first=first, last=last, within=within):
                doc["gaps"].append(
                    {"first_offset": first, "last_offset": last, "within_batch_at": within}
                )
            case Problem(kind=kind, position=position, message=message, invalid_bytes=n):
                doc["errors"].append(
                    {"kind": kind, "position": position, "message": message, "invalid_bytes": n}
                )
            case MaxBytesReached(position=position, max_bytes=limit, bytes_not_dumped=rest):
                doc["max_bytes_reached"] = {
                    "max_bytes": limit,
                    "position": position,
                    "bytes_not_dumped": rest,
                }
            case IndexEntry():
                doc["entries"].append(self._entry(event))
            case UntrimmedTail(slot=slot, entries=entries):
                doc["untrimmed_tail"] = {"slot": slot, "entries": entries}
            case Mismatch(entry=entry, message=message):
                doc["verification"]["mismatches"].append(
                    {"slot": entry.slot, **self._entry(entry), "message": message}
                )
            case Verified(entries_checked=checked):
                doc["verification"]["entries_checked"] = checked
            case SanityResult(passed=passed, message=message):
                doc["sanity_check"] = {"passed": passed, "message": message}
            case SnapshotEntry(entry=entry):
                doc["entries"].append(_snapshot_entry_json(entry))
            case TxnIndexEntry(slot=slot, version=version, entry=e):
                doc["entries"].append(
                    {
                        "slot": slot,
                        "version": version,
                        "producer_id": e.producer_id,
                        "first_offset": e.first_offset,
                        "last_offset": e.last_offset,
                        "last_stable_offset": e.last_stable_offset,
                    }
                )
            case EmptyIndex():
                pass
            case _:  # pragma: no cover - every event is handled above
                raise AssertionError(event)

    def abort(self, message: str) -> None:
        """The file could not be read to its end: record it in the file's object, if begun."""
        if self._doc is not None:
            self._doc["valid"] = False
            self._doc["errors"].append(
                {"kind": "read_error", "position": None, "message": message, "invalid_bytes": 0}
            )

    def finish(self) -> None:
        if self._doc is not None:
            print(json.dumps(self._doc), file=self._out)
            self._doc = None

    def _start(self, event: FileStart) -> dict[str, Any]:
        seg = event.file
        doc: dict[str, Any] = {
            "file": str(seg.path),
            "type": seg.kind.value,
            "base_offset": seg.base_offset,
            "size_in_bytes": event.size_in_bytes,
            "valid": True,
            "errors": [],
        }
        if seg.kind is SegmentFileKind.LOG:
            doc.update(batches=[], gaps=[], max_bytes_reached=None)
            return doc
        if seg.kind in (SegmentFileKind.PRODUCER_SNAPSHOT, SegmentFileKind.TXN_INDEX):
            doc["entries"] = []
            return doc
        opts = self._opts
        doc["entries"] = None if opts.index_sanity_check else []
        doc["untrimmed_tail"] = None
        doc["sanity_check"] = None
        doc["verification"] = (
            {"log": str(seg.sibling_log()), "entries_checked": 0, "mismatches": []}
            if opts.verify_index and not opts.index_sanity_check
            else None
        )
        return doc

    @staticmethod
    def _entry(entry: IndexEntry) -> dict[str, Any]:
        if entry.kind is SegmentFileKind.OFFSET_INDEX:
            return {"offset": entry.offset, "position": entry.position}
        return {"timestamp": entry.timestamp, "offset": entry.offset}

    def _batch(self, found: BatchFound) -> dict[str, Any]:
        b = found.batch
        doc: dict[str, Any] = {
            "position": found.position,
            "base_offset": b.base_offset,
            "last_offset": b.last_offset,
            "last_offset_delta": b.last_offset_delta,
            "count": b.records_count,
            "base_sequence": b.base_sequence,
            "last_sequence": last_sequence(b),
            "producer_id": b.producer_id,
            "producer_epoch": b.producer_epoch,
            "partition_leader_epoch": b.partition_leader_epoch,
            "is_transactional": b.is_transactional,
            "is_control": b.is_control,
            "delete_horizon_ms": b.delete_horizon_ms,
            "timestamp_type": _timestamp_type_name(b),
            "base_timestamp": b.base_timestamp,
            "max_timestamp": b.max_timestamp,
            "size": b.size_in_bytes,
            "magic": b.magic,
            "attributes": b.attributes,
            "compression": _codec_name(b),
            "crc": b.crc,
            "computed_crc": found.computed_crc,
            "is_valid": found.valid,
        }
        if self._opts.records:
            doc["records"] = []
        return doc

    def _record(self, found: RecordFound) -> dict[str, Any]:
        b, r = found.batch, found.record
        offset = r.offset if r.offset is not None else -1
        doc: dict[str, Any] = {
            "offset": offset,
            "timestamp": r.timestamp if r.timestamp is not None else -1,
            "key_size": -1 if r.key is None else len(r.key),
            "value_size": -1 if r.value is None else len(r.value),
            "sequence": record_sequence(b, offset),
            "header_keys": [k for k, _ in r.headers],
            "tombstone": r.key is not None and r.value is None,
        }
        if b.is_control:
            doc["control"] = _control_info(r)
        elif self._opts.offsets_decoder:
            doc["offsets_key"], doc["offsets_payload"] = decode_offsets_record(r.key, r.value)
        elif self._opts.share_group_state_decoder:
            doc["share_state_key"], doc["share_state_payload"] = decode_share_state_record(
                r.key, r.value
            )
        if self._opts.print_data_log:
            doc["key"], doc["key_base64"] = _json_bytes(r.key)
            doc["value"], doc["value_base64"] = _json_bytes(r.value)
            headers = []
            for k, v in r.headers:
                text, is_b64 = _json_bytes(v)
                headers.append({"key": k, "value": text, "value_base64": is_b64})
            doc["headers"] = headers
        return doc


# --- the command -------------------------------------------------------------------------------


def expand(path: Path) -> list[SegmentFile]:
    """The segment files ``path`` names: itself, or a directory's segment files by name.

    Raises :class:`PathError` for a missing path, a file that is not a segment file, a
    directory without segment files, or something that is neither a file nor a directory.
    """
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise PathError(f"{path}: no such file or directory") from None
    except OSError as exc:
        raise PathError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        try:
            children = sorted(path.iterdir(), key=lambda p: p.name)
        except OSError as exc:
            raise PathError(f"{path}: cannot read: {exc.strerror or exc}") from None
        found = [seg for p in children if (seg := classify(p)) is not None and p.is_file()]
        if not found:
            raise PathError(f"{path}: no segment files {_KINDS} in directory")
        return found
    if not stat.S_ISREG(mode):
        raise PathError(f"{path}: not a regular file")
    seg = classify(path)
    if seg is None:
        raise PathError(f"{path}: not a segment file {_KINDS}")
    return [seg]


def _events(seg: SegmentFile, opts: DumpOptions) -> Iterator[Event]:
    """The events of one file. Raises ``OSError`` and :class:`PathError` (missing log)."""
    if seg.kind is SegmentFileKind.LOG:
        fd = os.open(seg.path, os.O_RDONLY)
        try:
            yield from _dump_log(seg, fd, os.fstat(fd).st_size, opts)
        finally:
            os.close(fd)
        return
    with open(seg.path, "rb") as f:
        data = f.read()
    if seg.kind is SegmentFileKind.PRODUCER_SNAPSHOT:
        yield FileStart(seg, len(data))
        yield from _dump_snapshot(data)
        return
    if seg.kind is SegmentFileKind.TXN_INDEX:
        yield FileStart(seg, len(data))
        yield from _dump_txn_index(seg, data)
        return
    log: _LogSummary | None = None
    if opts.verify_index and not opts.index_sanity_check:
        log_path = seg.sibling_log()
        if not log_path.is_file():
            raise PathError(f"{seg.path}: cannot verify: no log file {log_path} beside it")
        log = read_log_summary(log_path)
    yield from _dump_index(seg, data, opts, log)


def _dump_snapshot(data: bytes) -> Iterator[Event]:
    """The producers of a snapshot, or a Problem if it is corrupt (bad version, CRC, size)."""
    try:
        entries = decode_snapshot(data)
    except CorruptSnapshotError as exc:
        yield Problem("corrupt_snapshot", 0, f"Corrupt producer snapshot: {exc}", len(data))
        return
    for entry in entries:
        yield SnapshotEntry(entry)


def _dump_txn_index(seg: SegmentFile, data: bytes) -> Iterator[Event]:
    """The aborted transactions of a ``.txnindex``, with a Problem for each entry storage's
    sanity check refuses (below the segment's base offset, or ending before the previous one),
    an unknown version (the rest is not read) or a torn last entry."""
    entry_struct = struct.Struct(">hqqqq")
    previous = seg.base_offset
    whole = len(data) - len(data) % ABORTED_TXN_SIZE
    for slot, position in enumerate(range(0, whole, ABORTED_TXN_SIZE)):
        version, pid, first, last, lso = entry_struct.unpack_from(data, position)
        if version != ABORTED_TXN_VERSION:
            yield Problem(
                "unknown_version",
                position,
                f"Entry {slot} at position {position} has the unknown version {version}",
                len(data) - position,
            )
            return
        entry = AbortedTxn(pid, first, last, lso)
        yield TxnIndexEntry(slot, version, entry)
        if last < previous:
            below = "the segment's base offset" if slot == 0 else "the previous entry's"
            yield Problem(
                "out_of_order",
                position,
                f"Entry {slot} ends at offset {last}, below {below} ({previous})",
            )
        previous = max(previous, last)
    if whole != len(data):
        yield Problem(
            "torn_entry",
            whole,
            f"{len(data) - whole} bytes at position {whole} are not a whole "
            f"{ABORTED_TXN_SIZE}-byte entry (a torn write: storage cuts them)",
            len(data) - whole,
        )


def txn_index_entry_line(found: TxnIndexEntry) -> str:
    """An aborted transaction as Kafka's ``DumpLogSegments.dumpTxnIndex`` prints it."""
    e = found.entry
    return (
        f"version: {found.version} producerId: {e.producer_id} firstOffset: {e.first_offset} "
        f"lastOffset: {e.last_offset} lastStableOffset: {e.last_stable_offset}"
    )


def snapshot_entry_line(entry: ProducerStateEntry) -> str:
    """A snapshot entry as Kafka's ``DumpLogSegments.dumpProducerIdSnapshot`` prints it
    (``currentTxnFirstOffset`` is Java's ``OptionalLong``)."""
    txn = entry.current_txn_first_offset
    line = (
        f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
        f"coordinatorEpoch: {entry.coordinator_epoch} currentTxnFirstOffset: "
        f"{'OptionalLong.empty' if txn < 0 else f'OptionalLong[{txn}]'} "
        f"lastTimestamp: {entry.last_timestamp} "
    )
    if entry.batches:
        b = entry.batches[0]
        line += (
            f"firstSequence: {b.first_seq} lastSequence: {b.last_seq} "
            f"lastOffset: {b.last_offset} offsetDelta: {b.offset_delta} timestamp: {b.timestamp}"
        )
    return line


def _snapshot_entry_json(entry: ProducerStateEntry) -> dict[str, Any]:
    b = entry.batches[0] if entry.batches else None
    return {
        "producer_id": entry.producer_id,
        "producer_epoch": entry.producer_epoch,
        "coordinator_epoch": entry.coordinator_epoch,
        "current_txn_first_offset": (
            entry.current_txn_first_offset if entry.current_txn_first_offset >= 0 else None
        ),
        "last_timestamp": entry.last_timestamp,
        "first_sequence": b.first_seq if b else None,
        "last_sequence": b.last_seq if b else None,
        "last_offset": b.last_offset if b else None,
        "offset_delta": b.offset_delta if b else None,
        "timestamp": b.timestamp if b else None,
    }


def dump(paths: Sequence[str], opts: DumpOptions, out: TextIO, err: TextIO) -> int:
    """Dump every path to ``out``; one-line errors to ``err``. Returns the exit code: 0, or 1
    if a path could not be dumped or anything invalid was found (the other paths are still
    dumped)."""
    code = 0
    output: TextOutput | JsonOutput = JsonOutput(out, opts) if opts.json else TextOutput(out, opts)
    for arg in paths:
        try:
            segments = expand(Path(arg))
        except PathError as exc:
            print(f"{PROG}: {exc}", file=err)
            code = 1
            continue
        for seg in segments:
            try:
                # Index verification reads the whole log before the first event: a missing
                # log is reported before anything is printed for this file.
                events = _events(seg, opts)
                for event in events:
                    output.emit(event)
                    if is_invalid(event):
                        code = 1
            except PathError as exc:
                message = f"{PROG}: {exc}"
                print(message, file=err)
                output.abort(message)
                code = 1
            except BrokenPipeError:
                raise  # our reader went away: the dispatcher ends quietly
            except OSError as exc:
                message = f"{PROG}: {seg.path}: cannot read: {exc.strerror or exc}"
                print(message, file=err)
                output.abort(message)
                code = 1
            output.finish()
    return code


def run(args: argparse.Namespace) -> int:
    """The ``dump-log`` handler: returns the exit code."""
    paths: list[str] = list(args.paths)
    for files in args.files:
        paths.extend(p for p in files.split(",") if p)
    if not paths:
        print(f"{PROG}: error: no files to dump (give PATH... or --files)", file=sys.stderr)
        return 2
    opts = DumpOptions(
        deep_iteration=args.deep_iteration,
        print_data_log=args.print_data_log,
        verify_index=args.verify_index,
        index_sanity_check=args.index_sanity_check,
        max_bytes=args.max_bytes,
        json=args.json,
        offsets_decoder=args.offsets_decoder,
        share_group_state_decoder=args.share_group_state_decoder,
    )
    return dump(paths, opts, sys.stdout, sys.stderr)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {value}")
    return value


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``dump-log`` on the ``odradek`` command's subparsers."""
    p = sub.add_parser(
        "dump-log",
        help=(
            "print the contents of segment files (.log, .index, .timeindex, .txnindex, .snapshot)"
        ),
        description=(
            "Print the batches and records of .log files, the entries of .index and "
            ".timeindex files, the aborted transactions of .txnindex files and the producers "
            "of .snapshot files, or check indexes. "
            "Files are only read, never changed. "
            "Exit code: 0 all valid, 1 something invalid or unreadable, 2 usage error."
        ),
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="segment files, or directories whose segment files are dumped in name order",
    )
    p.add_argument(
        "--files",
        action="append",
        default=[],
        metavar="FILE[,FILE...]",
        help="Kafka's spelling: comma-separated files to dump (may be repeated)",
    )
    p.add_argument(
        "--deep-iteration",
        action="store_true",
        help="print every record of each batch (offset, timestamp, sizes, header keys)",
    )
    p.add_argument(
        "--print-data-log",
        action="store_true",
        help="also print record keys, values and headers (implies --deep-iteration)",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--verify-index",
        "--verify-index-only",
        dest="verify_index",
        action="store_true",
        help="check each index entry against the .log beside the index; print mismatches",
    )
    mode.add_argument(
        "--index-sanity-check",
        action="store_true",
        help="only run storage's sanity check on each index",
    )
    p.add_argument(
        "--max-bytes",
        type=_positive_int,
        default=None,
        metavar="N",
        help="read at most N bytes of each .log (default: all)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object per file")
    p.add_argument(
        "--offsets-decoder",
        action="store_true",
        help="decode records as __consumer_offsets commits and group records (prints records)",
    )
    p.add_argument(
        "--share-group-state-decoder",
        action="store_true",
        help="decode records as __share_group_state snapshots and updates (prints records)",
    )
    p.set_defaults(handler=run)
