"""The memory-mapped, fixed-entry-size index file shared by the offset and time indexes.

This is Kafka's ``AbstractIndex``: the file handling, the resizing and the binary search of a
segment's sparse indexes. :class:`~storage.offset_index.OffsetIndex` and
:class:`~storage.time_index.TimeIndex` define the entry format.

On-disk format
    A flat array of fixed-size entries (8 bytes for the offset index, 12 for the time index),
    big-endian, with no header, no footer and no checksum. Slot ``n`` starts at byte
    ``n * entry_size``. Each entry has a *key* (the offset or the timestamp) and a *value* (the
    position or the offset). Both are non-decreasing from slot to slot, and keys are strictly
    increasing.

File lifecycle
    * A **new** index file is created and preallocated (sparsely) to
      ``round_down(max_index_size, entry_size)`` bytes, with 0 entries.
    * An **existing** file is trusted completely: ``entries = max_entries =
      file_length // entry_size``. Nothing in the file marks where the valid entries end. So the
      owner trims an index to its valid size (:meth:`IndexFile.trim_to_valid_size`) when its
      segment rolls and on :meth:`IndexFile.close`, and grows the active segment's index back
      with :meth:`IndexFile.resize` after loading or truncation.
    * A trimmed index with no entries has length 0. An empty file cannot be mapped, so such an
      index has **no mapping**: internally the mapping is an empty buffer, ``max_entries`` is 0,
      lookups return their "not found" value, and appends fail as "full" until a
      :meth:`IndexFile.resize` maps the file again.

Crash policy
    Writes go to the page cache through the mapping. :meth:`IndexFile.flush` makes them durable
    (msync). The index is derived data. After an unclean shutdown, the log rebuilds the indexes
    of every segment from the recovery point on, from the ``.log`` file. An untrimmed file left
    by a crash reopens as *full*, and its tail reads as ``(base_offset, 0)`` entries (time index:
    ``(0, base_offset)``). :meth:`IndexFile.sanity_check` catches some corrupt files, but not
    all. Never trust the index of a segment that was not recovered or cleanly closed.

Concurrency
    Mutations (append, ``truncate*``, ``resize``, ``reset``, ``rename_to``, ``close*``,
    ``delete_if_exists``) are **not** thread-safe. The owner (the segment, under the log's lock)
    must run them one at a time. Lookups (``lookup``, ``entry``, the ``*_slot`` searches,
    ``fetch_upper_bound_offset``) are safe in CPython while another thread appends: an append
    first writes all the bytes of its entry and only then increments ``entries``. A lookup reads
    ``entries`` once and only reads slots below it. Lookups must not run concurrently with
    truncation, resizing or closing: the owner excludes these, as Kafka's ``remapLock`` does.
    A shrinking resize racing a read of a slot beyond the new end of file could fault the
    process (SIGBUS).
"""

from __future__ import annotations

import abc
import enum
import mmap
import os
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from storage.errors import CorruptIndexError

__all__ = [
    "DEFAULT_MAX_INDEX_SIZE",
    "WARM_SECTION_BYTES",
    "INT32_MAX",
    "IndexSearchType",
    "IndexFile",
]

#: ``segment.index.bytes`` default (Kafka ``log.index.size.max.bytes``): 10 MiB.
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024
#: Size of the warm section at the end of an index, in bytes (see ``_slot_for``).
WARM_SECTION_BYTES = 8192
#: Largest relative offset (and file position) an index entry can hold.
INT32_MAX = 2**31 - 1


class IndexSearchType(enum.Enum):
    """Which half of an entry a slot search compares against the target."""

    KEY = "key"  # offset (offset index) or timestamp (time index)
    VALUE = "value"  # position (offset index) or offset (time index)


def _round_down(number: int, factor: int) -> int:
    return factor * (number // factor)


class IndexFile(abc.ABC):
    """A sparse, memory-mapped index of a log segment: Kafka's ``AbstractIndex``.

    Subclasses set ``_ENTRY_SIZE`` and ``_OFFSET_SEARCH`` (which half of an entry holds the
    offset), and implement :meth:`_parse_key`, :meth:`_parse_value`, :meth:`sanity_check` and
    :meth:`_on_entries_changed`. See the module docstring for the file lifecycle, the crash
    policy and the thread-safety rules.

    Every method that touches the mapping or the file raises :class:`ValueError` after
    :meth:`close`, :meth:`close_handler` or :meth:`delete_if_exists`. :meth:`close`,
    :meth:`close_handler`, :meth:`rename_to` and :meth:`delete_if_exists` still work after that.
    """

    __slots__ = (
        "_base_offset",
        "_buf",
        "_closed",
        "_entries",
        "_length",
        "_max_entries",
        "_max_index_size",
        "_path",
        "_warm_entries",
    )

    _ENTRY_SIZE: ClassVar[int]
    _OFFSET_SEARCH: ClassVar[IndexSearchType]

    def __init__(
        self, path: Path, base_offset: int, max_index_size: int = DEFAULT_MAX_INDEX_SIZE
    ) -> None:
        """Open the index at ``path``, creating and preallocating it if it does not exist.

        A new file gets ``round_down(max_index_size, entry_size)`` bytes and 0 entries. An
        existing file (even an empty one) keeps its length and is assumed full of valid entries.

        Raises:
            ValueError: ``base_offset`` is negative, or the file must be created and
                ``max_index_size`` is smaller than one entry.
            OSError: the file cannot be created, opened, sized or mapped.
        """
        entry_size = self._ENTRY_SIZE
        if base_offset < 0:
            raise ValueError(f"negative base offset {base_offset} for index {path}")
        self._path = Path(path)
        self._base_offset = base_offset
        self._max_index_size = max_index_size
        self._warm_entries = WARM_SECTION_BYTES // entry_size
        self._closed = False

        created = False
        if max_index_size >= entry_size:
            try:
                fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
                created = True
            except FileExistsError:
                fd = os.open(self._path, os.O_RDWR)
        else:
            try:
                fd = os.open(self._path, os.O_RDWR)
            except FileNotFoundError:
                raise ValueError(
                    f"invalid max index size {max_index_size} for new index {self._path}: "
                    f"smaller than one {entry_size}-byte entry"
                ) from None
        try:
            if created:
                os.ftruncate(fd, _round_down(max_index_size, entry_size))
            length = os.fstat(fd).st_size
            self._buf: mmap.mmap | bytearray = _map(fd, length)
        except BaseException:
            os.close(fd)
            if created:
                self._path.unlink(missing_ok=True)
            raise
        os.close(fd)  # the mapping keeps its own descriptor
        self._length = length
        self._max_entries = length // entry_size
        # A pre-existing file is assumed valid to its (rounded-down) end, as Kafka does.
        self._entries = 0 if created else self._max_entries

    # -- accessors --

    @property
    def path(self) -> Path:
        return self._path

    @property
    def base_offset(self) -> int:
        return self._base_offset

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._max_entries

    @property
    def max_index_size(self) -> int:
        return self._max_index_size

    @property
    def entry_size(self) -> int:
        return self._ENTRY_SIZE

    @property
    def size_in_bytes(self) -> int:
        """Bytes used by valid entries: ``entries * entry_size``."""
        return self._entries * self._ENTRY_SIZE

    def file_length(self) -> int:
        """The file's length as last set by this object (at open or by :meth:`resize`)."""
        return self._length

    def is_full(self) -> bool:
        """True if there is no slot left for an append."""
        return self._entries >= self._max_entries

    def can_append_offset(self, offset: int) -> bool:
        """True if ``offset - base_offset`` fits in an entry's 32-bit relative offset."""
        return 0 <= offset - self._base_offset <= INT32_MAX

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(path={str(self._path)!r}, base_offset={self._base_offset}, "
            f"entries={self._entries}, max_entries={self._max_entries}"
            f"{', closed' if self._closed else ''})"
        )

    # -- entry format (subclasses) --

    @abc.abstractmethod
    def _parse_key(self, slot: int) -> int:
        """The key of ``slot``: the absolute offset (offset index) or the timestamp (time index).

        Every key read of a slot search goes through here, so a test can override it to count
        the slots a lookup touches.
        """

    @abc.abstractmethod
    def _parse_value(self, slot: int) -> int:
        """The value of ``slot``: the position (offset index) or absolute offset (time index)."""

    @abc.abstractmethod
    def _on_entries_changed(self) -> None:
        """Refresh cached state (last offset, last entry) after ``entries`` went down."""

    @abc.abstractmethod
    def sanity_check(self) -> None:
        """Detect obvious corruption.

        Raises:
            CorruptIndexError: the index is corrupt and must be rebuilt from the log.
            ValueError: the index is closed.
        """

    def _check_length(self) -> None:
        if self._length % self._ENTRY_SIZE != 0:
            raise CorruptIndexError(
                f"index file {self._path} is corrupt: its length {self._length} is not a "
                f"multiple of the entry size {self._ENTRY_SIZE}"
            )

    def _ensure_open(self) -> None:
        if self._closed:
            raise ValueError(f"index {self._path} is closed")

    # -- slot search --

    def largest_lower_bound_slot(
        self, target: int, search_type: IndexSearchType = IndexSearchType.KEY
    ) -> int:
        """The slot of the largest entry whose key (or value) is <= ``target``, or -1 if none.

        Thread-safe against a concurrent append (see the module docstring).

        Raises:
            ValueError: the index is closed.
        """
        self._ensure_open()
        return self._slot_for(target, self._reader(search_type), upper=False)

    def smallest_upper_bound_slot(
        self, target: int, search_type: IndexSearchType = IndexSearchType.KEY
    ) -> int:
        """The slot of the smallest entry whose key (or value) is >= ``target``, or -1 if none.

        Thread-safe against a concurrent append (see the module docstring).

        Raises:
            ValueError: the index is closed.
        """
        self._ensure_open()
        return self._slot_for(target, self._reader(search_type), upper=True)

    def _reader(self, search_type: IndexSearchType) -> Callable[[int], int]:
        return self._parse_key if search_type is IndexSearchType.KEY else self._parse_value

    def _slot_for(self, target: int, read: Callable[[int], int], upper: bool) -> int:
        # Kafka's indexSlotRangeFor. Why the search looks at the warm section first:
        #
        # The index lives in the page cache, and almost every lookup (from in-sync followers
        # and consumers tailing the log) targets an entry near its end, where appends also go.
        # A plain binary search over the whole index doesn't suit an LRU page cache: it first
        # probes the middle of the file, then the middle of the upper half, and so on. Those
        # probe pages are the same on every lookup, so they stay cached... until the index
        # grows into a new page. Then the midpoints move to pages that nobody has read in a
        # long time. The next lookup faults on them and blocks on the disk. Kafka measured
        # acks=all produce latency jumping from milliseconds to about a second because of this.
        #
        # So we first compare the target with the entry that starts the last ``_warm_entries``
        # entries (the "warm" section: 8 KiB of index, 1024 offset or 682 time entries). If
        # the target is above it, we binary-search only that section. 8 KiB is small enough
        # that a warm search always touches the section's first, middle and last entries,
        # which covers all of its (at most 3) pages when pages are 4 KiB or larger. So the whole
        # section stays hot. It is also large enough (about 4 MiB of log for the offset index,
        # 2.7 MiB for the time index, with the default index.interval.bytes) to hold nearly
        # every in-sync lookup. A larger section could not guarantee that all its pages are
        # touched on every lookup. The split changes which slots are read, never the answer.
        entries = self._entries  # read once: a concurrent append only adds slots above it
        if entries == 0:
            return -1
        first_hot = max(0, entries - 1 - self._warm_entries)
        if read(first_hot) < target:
            return _binary_search(read, target, first_hot, entries - 1, entries, upper)
        first = read(0)
        if first > target:
            return 0 if upper else -1
        if first == target:
            # Both bounds are slot 0. (Kafka falls through to a binary search of [0, 0], which
            # for the upper bound answers slot 1, or -1 with a single entry. We don't.)
            return 0
        return _binary_search(read, target, 0, first_hot, entries, upper)

    # -- mutation (owner-serialised) --

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``.

        If no entry is <= ``offset``, this empties the index. If an entry has exactly this
        offset, it is removed along with everything after it. Otherwise the entries up to the
        floor entry are kept. Truncating past the last entry changes nothing. The file keeps
        its length. Not thread-safe.

        Raises:
            ValueError: the index is closed.
        """
        self._ensure_open()
        read = self._reader(self._OFFSET_SEARCH)
        slot = self._slot_for(offset, read, upper=False)
        if slot < 0:
            new_entries = 0
        elif read(slot) == offset:
            new_entries = slot
            # The time index may repeat an offset (with a larger timestamp). The search can land
            # on any of the copies. Back up to the first one so that none of them survives.
            while new_entries > 0 and read(new_entries - 1) == offset:
                new_entries -= 1
        else:
            new_entries = slot + 1
        self._truncate_to_entries(new_entries)

    def truncate(self) -> None:
        """Remove all entries. The file keeps its length. Not thread-safe.

        Raises:
            ValueError: the index is closed.
        """
        self._ensure_open()
        self._truncate_to_entries(0)

    def reset(self) -> None:
        """Remove all entries and resize the file to ``max_index_size``. Not thread-safe.

        Raises:
            ValueError: the index is closed.
            OSError: the file cannot be resized or mapped.
        """
        self.truncate()
        self.resize(self._max_index_size)

    def _truncate_to_entries(self, entries: int) -> None:
        self._entries = entries
        self._on_entries_changed()

    def resize(self, new_size: int) -> bool:
        """Set the file length to ``round_down(new_size, entry_size)``, keeping the entries.

        This remaps the file. ``max_entries`` follows the new length. Use it to trim (see
        :meth:`trim_to_valid_size`) or to grow an index back to ``max_index_size`` when its
        segment becomes active again. Not thread-safe, and lookups must not run concurrently.

        Returns:
            Whether the length changed.

        Raises:
            ValueError: the index is closed, or the new length would drop valid entries.
            OSError: the file cannot be reopened, sized or mapped.
        """
        self._ensure_open()
        rounded = _round_down(new_size, self._ENTRY_SIZE)
        if rounded < self._entries * self._ENTRY_SIZE:
            raise ValueError(
                f"cannot resize index {self._path} to {new_size} bytes: it holds "
                f"{self._entries} entries ({self._entries * self._ENTRY_SIZE} bytes)"
            )
        if rounded == self._length:
            return False
        fd = os.open(self._path, os.O_RDWR)
        try:
            os.ftruncate(fd, rounded)
            buf = _map(fd, rounded)
        finally:
            os.close(fd)
        # The old mapping is dropped rather than closed: CPython unmaps it as soon as no reader
        # holds it, so a reader that picked it up just before the swap still gets valid bytes.
        self._buf = buf
        self._length = rounded
        self._max_entries = rounded // self._ENTRY_SIZE
        return True

    def trim_to_valid_size(self) -> None:
        """Shrink the file to ``entries * entry_size`` (on roll and close). Not thread-safe.

        Raises:
            ValueError: the index is closed.
            OSError: the file cannot be resized or mapped.
        """
        self.resize(self._entries * self._ENTRY_SIZE)

    def flush(self) -> None:
        """Write the mapped pages to disk (msync). Not thread-safe with :meth:`resize`.

        Raises:
            ValueError: the index is closed.
            OSError: the flush failed.
        """
        self._ensure_open()
        buf = self._buf
        if isinstance(buf, mmap.mmap):
            buf.flush()

    def rename_to(self, new_path: Path) -> None:
        """Rename the file (atomically, within one file system). The mapping keeps working.

        ``path`` changes only if the rename succeeds. Allowed after close. Not thread-safe.

        Raises:
            OSError: the rename failed.
        """
        new_path = Path(new_path)
        self._path.replace(new_path)
        self._path = new_path

    def close(self) -> None:
        """Trim the file to its valid size, then unmap it. Idempotent. Not thread-safe.

        Raises:
            OSError: trimming failed (the mapping is released anyway).
        """
        if self._closed:
            return
        try:
            self.trim_to_valid_size()
        finally:
            self.close_handler()

    def close_handler(self) -> None:
        """Unmap the file without trimming it. Calling it again does nothing. Not thread-safe."""
        buf = self._buf
        self._buf = bytearray()
        self._closed = True
        if isinstance(buf, mmap.mmap):
            buf.close()

    def delete_if_exists(self) -> bool:
        """Unmap and delete the file. Returns False if it did not exist. Not thread-safe.

        Raises:
            OSError: the file exists but cannot be deleted.
        """
        self.close_handler()
        try:
            self._path.unlink()
        except FileNotFoundError:
            return False
        return True


def _map(fd: int, length: int) -> mmap.mmap | bytearray:
    # Python (like POSIX) cannot map 0 bytes. An index with no mapping reads from an empty buffer
    # instead. It has no slots, and nothing ever reads one: every read is bounded by ``entries``,
    # and ``entries`` is 0 when there is no mapping.
    if length == 0:
        return bytearray()
    return mmap.mmap(fd, length, access=mmap.ACCESS_WRITE)


def _binary_search(
    read: Callable[[int], int], target: int, lo: int, hi: int, entries: int, upper: bool
) -> int:
    # Invariant: read(lo) < target (the caller checked it on entry). Probing
    # mid = ceil((lo + hi) / 2) means every iteration narrows [lo, hi].
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        found = read(mid)
        if found > target:
            hi = mid - 1
        elif found < target:
            lo = mid
        else:
            return mid
    if upper:
        return -1 if lo == entries - 1 else lo + 1
    return lo
