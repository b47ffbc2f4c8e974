"""The time index (``.timeindex``) of a log segment: timestamp -> offset.

On-disk format
    A flat array of 12-byte entries, big-endian, with no header and no checksum::

        int64 timestamp         # ms since the epoch
        int32 relative_offset   # offset - base_offset, in [0, 2**31 - 1]

    An entry ``(T, O)`` means "the largest timestamp seen up to offset O (inclusive) is T":
    any record with a timestamp above T comes after O. Timestamps are strictly increasing and
    offsets non-decreasing. The file is preallocated to ``round_down(max_index_size, 12)``
    bytes (10 MiB = 873,813 entries by default) and trimmed on roll and close (see
    :mod:`storage.index_file`). Its last slot is reserved: :meth:`TimeIndex.is_full` reports
    full one entry early, so that rolling or closing the segment can always write the final
    ``(max_timestamp, offset_of_max_timestamp)`` entry with ``skip_full_check=True``.

Crash policy
    No checksum. After an unclean shutdown the log rebuilds the index from the ``.log``. An
    untrimmed file reopens as full, with trailing ``(0, base_offset)`` entries. With real
    entries before that tail, the last timestamp (0) is below the first, so
    :meth:`TimeIndex.sanity_check` fails. An untrimmed file that is all zeros passes it.

Concurrency
    As for every index (see :mod:`storage.index_file`): :meth:`TimeIndex.maybe_append` and all
    other mutations are serialised by the owner. :meth:`TimeIndex.lookup` and
    :meth:`TimeIndex.entry` are safe while another thread appends.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from storage.errors import (
    CorruptIndexError,
    IndexFullError,
    IndexOffsetOverflowError,
    InvalidOffsetError,
)
from storage.index_file import (
    DEFAULT_MAX_INDEX_SIZE,
    INT32_MAX,
    IndexFile,
    IndexSearchType,
)

__all__ = ["NO_TIMESTAMP", "TimeIndex", "TimestampOffset"]

#: Kafka's ``RecordBatch.NO_TIMESTAMP``.
NO_TIMESTAMP = -1

_INT64_MAX = 2**63 - 1

_ENTRY = struct.Struct(">qi")  # timestamp, relative offset
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_unpack_entry = _ENTRY.unpack_from
_unpack_int64 = _INT64.unpack_from
_unpack_int32 = _INT32.unpack_from


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    """A timestamp and the offset at which it was (first) the segment's largest."""

    timestamp: int
    offset: int


class TimeIndex(IndexFile):
    """The sparse timestamp -> offset index of one log segment (Kafka's ``TimeIndex``).

    See the module docstring for the format, the reserved slot, the crash policy and
    thread-safety. The inherited file operations are documented on
    :class:`~storage.index_file.IndexFile`.
    """

    __slots__ = ("_last_entry",)

    _ENTRY_SIZE: ClassVar[int] = 12
    _OFFSET_SEARCH: ClassVar[IndexSearchType] = IndexSearchType.VALUE

    def __init__(
        self, path: Path, base_offset: int, max_index_size: int = DEFAULT_MAX_INDEX_SIZE
    ) -> None:
        """Open or create the index file, and read its last entry.

        See :class:`~storage.index_file.IndexFile`.

        Raises:
            ValueError: bad ``base_offset``, or ``max_index_size`` < 12 for a new file.
            OSError: the file cannot be created, opened or mapped.
        """
        super().__init__(path, base_offset, max_index_size)
        self._last_entry = self._read_last_entry()

    @property
    def last_entry(self) -> TimestampOffset:
        """The last entry, or ``TimestampOffset(NO_TIMESTAMP, base_offset)`` if empty."""
        return self._last_entry

    def is_full(self) -> bool:
        """True if only the reserved last slot (or none) is left: ``entries >= max_entries - 1``."""
        return self._entries >= self._max_entries - 1

    # -- entry format --

    def _parse_key(self, slot: int) -> int:
        timestamp: int = _unpack_int64(self._buf, slot * 12)[0]
        return timestamp

    def _parse_value(self, slot: int) -> int:
        relative: int = _unpack_int32(self._buf, slot * 12 + 8)[0]
        return self._base_offset + relative

    def _parse_entry(self, slot: int) -> TimestampOffset:
        timestamp, relative = _unpack_entry(self._buf, slot * 12)
        return TimestampOffset(timestamp, self._base_offset + relative)

    def _read_last_entry(self) -> TimestampOffset:
        entries = self._entries
        if entries == 0:
            return TimestampOffset(NO_TIMESTAMP, self._base_offset)
        return self._parse_entry(entries - 1)

    def _on_entries_changed(self) -> None:
        self._last_entry = self._read_last_entry()

    # -- lookups (safe concurrently with append) --

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The entry with the largest timestamp <= ``target_timestamp``.

        Returns ``TimestampOffset(NO_TIMESTAMP, base_offset)`` if the index is empty or every
        entry is above the target. Safe while another thread appends.

        Raises:
            ValueError: the index is closed.
        """
        self._ensure_open()
        slot = self._slot_for(target_timestamp, self._parse_key, upper=False)
        if slot < 0:
            return TimestampOffset(NO_TIMESTAMP, self._base_offset)
        return self._parse_entry(slot)

    def entry(self, n: int) -> TimestampOffset:
        """The ``n``-th entry (0-based). Safe while another thread appends.

        Raises:
            IndexError: ``n`` is not in ``[0, entries)``.
            ValueError: the index is closed.
        """
        self._ensure_open()
        if not 0 <= n < self._entries:
            raise IndexError(
                f"attempt to fetch entry {n} of time index {self._path}, which has "
                f"{self._entries} entries"
            )
        return self._parse_entry(n)

    # -- mutation (owner-serialised) --

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append ``(timestamp, offset)`` if ``timestamp`` is above the last entry's timestamp.

        An equal timestamp is silently ignored. This happens when the segment writes its final
        entry on roll and again on close. On an empty index the comparison is with
        ``NO_TIMESTAMP`` (-1), so the first entry is written for any real (non-negative)
        timestamp, and a batch without a timestamp (-1) adds nothing. Checks run in this
        order, as in Kafka:

        * the full check (unless ``skip_full_check``, which the segment passes for the final
          entry on roll and close, to use the reserved slot);
        * if the index is not empty, ``offset`` must not be below the last offset (an equal
          offset is allowed), and ``timestamp`` must not be below the last timestamp.

        Not thread-safe (owner-serialised). The entry becomes visible to concurrent lookups
        only once it has been fully written.

        Raises:
            IndexFullError: ``not skip_full_check and is_full()``. Also raised even with
                ``skip_full_check`` when an entry would be written and no slot at all is left.
            InvalidOffsetError: ``offset`` is below the last entry's offset.
            ValueError: ``timestamp`` is below the last entry's timestamp (Kafka raises
                IllegalStateException here: a caller's bug, not corrupt data), or
                ``timestamp`` does not fit in 64 bits, or the index is closed.
            IndexOffsetOverflowError: an entry would be written and ``offset - base_offset``
                is not in ``[0, 2**31 - 1]``.
        """
        self._ensure_open()
        entries = self._entries
        if not skip_full_check and entries >= self._max_entries - 1:
            raise IndexFullError(
                f"attempt to append to a full time index {self._path} (entries = {entries})"
            )
        last = self._last_entry
        if entries != 0:
            # An equal offset is allowed: a larger timestamp at the same offset.
            if offset < last.offset:
                raise InvalidOffsetError(
                    f"attempt to append offset {offset} to slot {entries} of time index "
                    f"{self._path}, below the last offset appended ({last.offset})"
                )
            if timestamp < last.timestamp:
                raise ValueError(
                    f"attempt to append timestamp {timestamp} to slot {entries} of time index "
                    f"{self._path}, below the last timestamp appended ({last.timestamp})"
                )
        if timestamp <= last.timestamp:
            return
        if entries >= self._max_entries:
            raise IndexFullError(
                f"no slot left in time index {self._path} (entries = {entries}), "
                "not even the reserved one"
            )
        relative = offset - self._base_offset
        if not 0 <= relative <= INT32_MAX:
            raise IndexOffsetOverflowError(
                f"offset {offset} does not fit in time index {self._path} with base offset "
                f"{self._base_offset}"
            )
        if timestamp > _INT64_MAX:
            raise ValueError(f"timestamp {timestamp} does not fit in 64 bits")
        _ENTRY.pack_into(self._buf, entries * 12, timestamp, relative)
        self._entries = entries + 1  # publish: the entry's bytes are in place
        self._last_entry = TimestampOffset(timestamp, offset)

    # -- checks --

    def sanity_check(self) -> None:
        """Check that timestamps and offsets are in range and the length is a multiple of 12.

        The last timestamp must not be below the first one, the last offset must not be below
        ``base_offset``, and the file length must be a multiple of 12.

        Raises:
            CorruptIndexError: a check fails. Rebuild the index from the log.
            ValueError: the index is closed.
        """
        self._ensure_open()
        last = self._last_entry
        if self._entries != 0:
            first_timestamp = self._parse_key(0)
            if last.timestamp < first_timestamp:
                raise CorruptIndexError(
                    f"corrupt time index {self._path}: its last timestamp {last.timestamp} "
                    f"is below its first timestamp {first_timestamp}"
                )
            if last.offset < self._base_offset:
                raise CorruptIndexError(
                    f"corrupt time index {self._path}: its last offset {last.offset} is "
                    f"below its base offset {self._base_offset}"
                )
        self._check_length()
