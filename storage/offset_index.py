"""The offset index (``.index``) of a log segment: offset -> byte position in the ``.log``.

On-disk format
    A flat array of 8-byte entries, big-endian, with no header and no checksum::

        int32 relative_offset   # offset - base_offset, in [0, 2**31 - 1]
        int32 position          # byte position of the batch in the segment's .log file

    Relative offsets are strictly increasing. The index is *sparse*: the segment adds an entry
    only every ``index_interval_bytes``. The key of an entry is the *last* offset of an appended
    batch, and its value is the position where that batch *starts*. A reader looks up the floor
    entry and scans the log forward from it. The file is preallocated to
    ``round_down(max_index_size, 8)`` bytes (10 MiB = 1,310,720 entries by default) and trimmed
    to ``entries * 8`` on roll and close (see :mod:`storage.index_file`).

Invariants
    ``entries == 0 or last_offset > every other offset in the index``, and
    ``base_offset <= offset <= base_offset + 2**31 - 1`` for every entry.

Crash policy
    No checksum. After an unclean shutdown the log rebuilds the index from the ``.log``. An
    untrimmed file reopens as full, with trailing ``(base_offset, 0)`` entries.
    :meth:`OffsetIndex.sanity_check` catches a length that is not a multiple of 8 and a last
    offset below ``base_offset``. It does **not** catch that untrimmed tail.

Concurrency
    As for every index (see :mod:`storage.index_file`): :meth:`OffsetIndex.append` and all
    other mutations are serialised by the owner. :meth:`OffsetIndex.lookup`,
    :meth:`OffsetIndex.entry` and :meth:`OffsetIndex.fetch_upper_bound_offset` are safe while
    another thread appends.
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

__all__ = ["OffsetIndex", "OffsetPosition"]

_ENTRY = struct.Struct(">ii")  # relative offset, position
_INT32 = struct.Struct(">i")
_unpack_entry = _ENTRY.unpack_from
_unpack_int32 = _INT32.unpack_from


@dataclass(frozen=True, slots=True)
class OffsetPosition:
    """An offset and the byte position in the segment's ``.log`` to scan from for it."""

    offset: int
    position: int


class OffsetIndex(IndexFile):
    """The sparse offset -> position index of one log segment (Kafka's ``OffsetIndex``).

    See the module docstring for the format, the crash policy and thread-safety. The
    inherited file operations are documented on :class:`~storage.index_file.IndexFile`.
    """

    __slots__ = ("_last_offset",)

    _ENTRY_SIZE: ClassVar[int] = 8
    _OFFSET_SEARCH: ClassVar[IndexSearchType] = IndexSearchType.KEY

    def __init__(
        self, path: Path, base_offset: int, max_index_size: int = DEFAULT_MAX_INDEX_SIZE
    ) -> None:
        """Open or create the index file. See :class:`~storage.index_file.IndexFile`.

        Raises:
            ValueError: bad ``base_offset``, or ``max_index_size`` < 8 for a new file.
            OSError: the file cannot be created, opened or mapped.
        """
        super().__init__(path, base_offset, max_index_size)
        self._last_offset = self._read_last_offset()

    @property
    def last_offset(self) -> int:
        """The offset of the last entry, or ``base_offset`` if the index is empty."""
        return self._last_offset

    # -- entry format --

    def _parse_key(self, slot: int) -> int:
        relative: int = _unpack_int32(self._buf, slot * 8)[0]
        return self._base_offset + relative

    def _parse_value(self, slot: int) -> int:
        position: int = _unpack_int32(self._buf, slot * 8 + 4)[0]
        return position

    def _parse_entry(self, slot: int) -> OffsetPosition:
        relative, position = _unpack_entry(self._buf, slot * 8)
        return OffsetPosition(self._base_offset + relative, position)

    def _read_last_offset(self) -> int:
        entries = self._entries
        return self._parse_key(entries - 1) if entries else self._base_offset

    def _on_entries_changed(self) -> None:
        self._last_offset = self._read_last_offset()

    # -- lookups (safe concurrently with append) --

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The entry with the largest offset <= ``target_offset``.

        Returns ``OffsetPosition(base_offset, 0)`` if the index is empty or every entry is
        above the target: scan the segment from its start. Safe while another thread appends.

        Raises:
            ValueError: the index is closed.
        """
        self._ensure_open()
        slot = self._slot_for(target_offset, self._parse_key, upper=False)
        if slot < 0:
            return OffsetPosition(self._base_offset, 0)
        return self._parse_entry(slot)

    def fetch_upper_bound_offset(
        self, fetch_offset: OffsetPosition, fetch_size: int
    ) -> OffsetPosition | None:
        """The first entry whose position is >= ``fetch_offset.position + fetch_size``.

        The result bounds a fetch of ``fetch_size`` bytes from ``fetch_offset``: its offset
        lies outside the fetched range. It is not, in general, the smallest such offset.
        Returns None if no entry is that far into the log. Safe while another thread appends.

        Raises:
            ValueError: the index is closed.
        """
        self._ensure_open()
        target = fetch_offset.position + fetch_size
        slot = self._slot_for(target, self._parse_value, upper=True)
        if slot < 0:
            return None
        return self._parse_entry(slot)

    def entry(self, n: int) -> OffsetPosition:
        """The ``n``-th entry (0-based). Safe while another thread appends.

        Raises:
            IndexError: ``n`` is not in ``[0, entries)``.
            ValueError: the index is closed.
        """
        self._ensure_open()
        if not 0 <= n < self._entries:
            raise IndexError(
                f"attempt to fetch entry {n} of index {self._path}, which has "
                f"{self._entries} entries"
            )
        return self._parse_entry(n)

    # -- mutation (owner-serialised) --

    def append(self, offset: int, position: int) -> None:
        """Append the entry ``offset -> position``. Not thread-safe (owner-serialised).

        The entry becomes visible to concurrent lookups only once it has been fully written.

        Raises:
            IndexFullError: no slot is left (``entries >= max_entries``). The segment should
                have rolled.
            InvalidOffsetError: the index is not empty and ``offset <= last_offset``.
            IndexOffsetOverflowError: ``offset - base_offset`` is not in ``[0, 2**31 - 1]``.
            ValueError: ``position`` is not in ``[0, 2**31 - 1]``, or the index is closed.
        """
        self._ensure_open()
        entries = self._entries
        if entries >= self._max_entries:
            raise IndexFullError(
                f"attempt to append to a full index {self._path} (entries = {entries})"
            )
        if entries != 0 and offset <= self._last_offset:
            raise InvalidOffsetError(
                f"attempt to append offset {offset} to slot {entries} of index {self._path}, "
                f"not larger than the last offset appended ({self._last_offset})"
            )
        relative = offset - self._base_offset
        if not 0 <= relative <= INT32_MAX:
            raise IndexOffsetOverflowError(
                f"offset {offset} does not fit in index {self._path} with base offset "
                f"{self._base_offset}"
            )
        if not 0 <= position <= INT32_MAX:
            raise ValueError(f"position {position} is not a 32-bit file position")
        _ENTRY.pack_into(self._buf, entries * 8, relative, position)
        self._entries = entries + 1  # publish: the entry's bytes are in place
        self._last_offset = offset

    # -- checks --

    def sanity_check(self) -> None:
        """Check that the last offset is >= ``base_offset`` and the length is a multiple of 8.

        Raises:
            CorruptIndexError: either check fails. Rebuild the index from the log.
            ValueError: the index is closed.
        """
        self._ensure_open()
        if self._entries != 0 and self._last_offset < self._base_offset:
            raise CorruptIndexError(
                f"corrupt index {self._path}: it has {self._entries} entries but its last "
                f"offset {self._last_offset} is below its base offset {self._base_offset}"
            )
        self._check_length()
