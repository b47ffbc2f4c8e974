"""A segment's index of aborted transactions, the ``.txnindex`` file (Kafka's
``TransactionIndex`` and ``AbortedTxn``).

When an ABORT marker is appended, the log adds an entry for the transaction it ends to the
``.txnindex`` of the segment holding the marker. A read_committed fetch lists the entries
overlapping the range it returns, and the consumer drops those producers' batches from each
entry's first offset until its abort marker.

On-disk layout: ``<20-digit base offset>.txnindex`` beside the segment's ``.log`` (with the
segment's ``.deleted`` / ``.cleaned`` / ``.swap`` suffix while it has one), a sequence of
34-byte entries, big-endian, in marker (``last_offset``) order::

    version int16 (0) | producer_id int64 | first_offset int64 | last_offset int64
    | last_stable_offset int64

``first_offset`` is the transaction's first offset, ``last_offset`` its ABORT marker's, and
``last_stable_offset`` the partition's last stable offset once the abort completed (the first
offset of the oldest transaction of another producer still open, else ``last_offset + 1``).
The file is created by the first entry; a segment without aborted transactions has none.

Crash policy: the index is derived data, rebuilt by the log from its producer state
(:meth:`storage.log.Log.open` replays the batches after the producer snapshot it loads and
rewrites every entry whose marker lies there). Appends reach the page cache only; ``flush``
fsyncs. A torn tail (a size that is not a multiple of 34) is cut when the file is opened;
:meth:`TransactionIndex.sanity_check` refuses entries out of order or below the segment.

Concurrency: not thread-safe on its own; the owning log serialises every call.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from storage.errors import CorruptIndexError

__all__ = [
    "ABORTED_TXN_SIZE",
    "ABORTED_TXN_VERSION",
    "TXN_INDEX_SUFFIX",
    "AbortedTxn",
    "TransactionIndex",
    "TxnIndexSearchResult",
    "decode_aborted_txns",
]

log = logging.getLogger(__name__)

TXN_INDEX_SUFFIX = ".txnindex"
ABORTED_TXN_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ABORTED_TXN_SIZE = _ENTRY.size
assert ABORTED_TXN_SIZE == 34


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One aborted transaction of a producer (Kafka's ``AbortedTxn``)."""

    producer_id: int
    first_offset: int
    last_offset: int
    """The offset of its ABORT marker."""
    last_stable_offset: int
    """The partition's last stable offset once the abort completed."""

    def encode(self) -> bytes:
        return _ENTRY.pack(
            ABORTED_TXN_VERSION,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )


class TxnIndexSearchResult(NamedTuple):
    """The entries a search found, and whether no later segment can hold another (Kafka's
    ``TxnIndexSearchResult``)."""

    aborted: list[AbortedTxn]
    is_complete: bool


def decode_aborted_txns(data: bytes | memoryview) -> tuple[list[AbortedTxn], int]:
    """The whole entries in ``data`` and the number of bytes they take (a torn tail is left
    out). Raises :class:`~storage.errors.CorruptIndexError` for an entry of an unknown
    version."""
    whole = len(data) - len(data) % ABORTED_TXN_SIZE
    out = []
    for position in range(0, whole, ABORTED_TXN_SIZE):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, position)
        if version != ABORTED_TXN_VERSION:
            raise CorruptIndexError(
                f"aborted transaction entry at position {position} has version {version}"
            )
        out.append(AbortedTxn(pid, first, last, lso))
    return out, whole


class TransactionIndex:
    """The aborted transactions of one segment: the entries in memory, appended to the file.

    Raises ``OSError`` for I/O failures."""

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._entries: list[AbortedTxn] = []
        self._fd: int | None = None
        if path.exists():
            data = path.read_bytes()
            self._entries, whole = decode_aborted_txns(data)
            if whole != len(data):
                log.warning("cutting a torn entry of %d bytes off %s", len(data) - whole, self.path)
                os.truncate(path, whole)

    @property
    def entries(self) -> Sequence[AbortedTxn]:
        return self._entries

    @property
    def last_offset(self) -> int | None:
        """The marker offset of the last entry, or ``None``."""
        return self._entries[-1].last_offset if self._entries else None

    def __iter__(self) -> Iterator[AbortedTxn]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def _file(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd

    def append(self, entry: AbortedTxn) -> None:
        """Add ``entry``. Raises ``ValueError`` if its marker is below the last entry's (Kafka
        refuses out-of-order entries) or below the segment's base offset."""
        last = self.last_offset
        if last is not None and entry.last_offset < last:
            raise ValueError(
                f"{self.path}: aborted transaction ending at {entry.last_offset} is out of "
                f"order (the last ends at {last})"
            )
        if entry.last_offset < self.base_offset:
            raise ValueError(
                f"{self.path}: aborted transaction ending at {entry.last_offset} is below the "
                f"segment's base offset {self.base_offset}"
            )
        os.write(self._file(), entry.encode())
        self._entries.append(entry)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose marker is at or above ``offset`` (Kafka's ``truncateTo``)."""
        keep = len(self._entries)
        while keep and self._entries[keep - 1].last_offset >= offset:
            keep -= 1
        if keep == len(self._entries):
            return
        del self._entries[keep:]
        if self.path.exists():
            os.truncate(self.path, keep * ABORTED_TXN_SIZE)

    def reset(self) -> None:
        """Remove every entry."""
        self.truncate_to(-(2**63))

    def collect_aborted_txns(
        self, fetch_offset: int, upper_bound_offset: int
    ) -> TxnIndexSearchResult:
        """The entries of transactions overlapping ``[fetch_offset, upper_bound_offset)``, and
        whether the search is complete: an entry whose last stable offset is at or above the
        upper bound proves that every transaction aborted later began at or above it (it was
        not open when this one completed)."""
        found = []
        for entry in self._entries:
            if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound_offset:
                found.append(entry)
            if entry.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(found, True)
        return TxnIndexSearchResult(found, False)

    def sanity_check(self) -> None:
        """Raises :class:`~storage.errors.CorruptIndexError` if an entry ends below the
        segment's base offset or before the previous one."""
        previous = self.base_offset
        for entry in self._entries:
            if entry.last_offset < previous:
                raise CorruptIndexError(
                    f"{self.path}: aborted transaction of producer {entry.producer_id} ends at "
                    f"{entry.last_offset}, below {previous}"
                )
            previous = entry.last_offset

    # -- files --
    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def rename_to(self, path: Path) -> None:
        """Rename the file (if there is one) to ``path``."""
        if self.path.exists():
            self.path.replace(path)
        self.path = path

    def delete_if_exists(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
        self._entries = []

    def __repr__(self) -> str:
        return f"TransactionIndex(path={self.path}, entries={len(self._entries)})"
