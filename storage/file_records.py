"""A segment's ``.log`` file: record batches back to back (Kafka's ``FileRecords``).

On-disk format: a sequence of record batch v2 (see :mod:`odradek.records`), nothing else — no
header, no footer. ``size`` is the number of valid bytes; with ``preallocate`` the file may be
longer (zero-filled past ``size``) until :meth:`FileRecords.trim` cuts it on roll and close.

Crash policy: appends go to the page cache with ``pwrite``; only :meth:`flush` (``fsync``)
makes them durable. A crash can therefore leave a torn or zero-filled tail, which recovery
truncates (``LogSegment.recover``).

Concurrency: one writer (appends, truncation, trim) serialised by the owning log's lock;
:meth:`read` and the header scans may run concurrently with appends because they read only
below a ``size`` they were given or observed.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from odradek.errors import CorruptRecordError
from odradek.records import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    RECORD_OVERHEAD_V0,
    RecordBatch,
)

__all__ = ["FileRecords", "FileSlice", "SCAN_CHUNK_BYTES"]

SCAN_CHUNK_BYTES = 64 * 1024
"""How much a header scan reads at a time: several batch headers per ``pread``."""

_LENGTH = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class FileSlice:
    """``length`` bytes of a segment file from byte ``position`` (Kafka's ``FileRecords.slice``):
    record batches a reader may send without copying them into Python (the Kafka door's
    ``os.sendfile``), or read (:meth:`read`).

    ``fd`` is the segment's open descriptor, not owned: never close it. It stays open while the
    segment is; a deleted segment, or a deleted log's (``LogManager.delete_log``), is closed
    only ``file.delete.delay.ms`` after its deletion (60 s by default), so a reader that takes
    its own ``os.dup`` at once reads the bytes as they were, as Kafka's readers do of a segment
    being deleted.
    """

    fd: int
    position: int
    length: int

    def read(self) -> bytes:
        """The slice's bytes (fewer if the file is shorter than the slice)."""
        return os.pread(self.fd, self.length, self.position)

    def __len__(self) -> int:
        return self.length


class FileRecords:
    """The ``.log`` file of one segment.

    ``open`` creates the file if needed. A new file with ``preallocate`` is extended to
    ``init_file_size`` bytes and its logical size starts at 0; an existing file's logical size
    is its length (recovery cuts off anything invalid).
    """

    def __init__(self, path: Path, *, preallocate: bool = False, init_file_size: int = 0) -> None:
        existed = path.exists()
        self._path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if preallocate and not existed and init_file_size > 0:
            os.ftruncate(self._fd, init_file_size)
            self._size = 0
        else:
            self._size = os.fstat(self._fd).st_size
        self._preallocate = preallocate
        self.bytes_read = 0
        """Bytes this object has read from disk (reads and scans); recovery reports it."""

    # -- properties --
    @property
    def path(self) -> Path:
        return self._path

    @property
    def size(self) -> int:
        """Valid bytes in the file."""
        return self._size

    def file_length(self) -> int:
        """The file's length on disk (more than ``size`` while preallocated)."""
        return os.fstat(self._fd).st_size

    def last_modified_ms(self) -> int:
        """The file's mtime in milliseconds (retention's fallback when records lack times)."""
        return os.fstat(self._fd).st_mtime_ns // 1_000_000

    def set_last_modified_ms(self, ms: int) -> None:
        """Set the file's mtime (used by tests and compaction)."""
        os.utime(self._path, ns=(ms * 1_000_000, ms * 1_000_000))

    # -- writing --
    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write ``data`` at the end; returns the bytes written. Raises ``OSError``."""
        position = self._size
        n = len(data)
        written = os.pwrite(self._fd, data, position)
        if written < n:  # a short write: finish it
            view = memoryview(data)[written:]
            while view:
                done = os.pwrite(self._fd, view, position + written)
                written += done
                view = view[done:]
        self._size = position + n
        return n

    def truncate_to(self, size: int) -> int:
        """Cut the file to ``size`` bytes; returns the bytes removed.

        Raises ``ValueError`` if ``size`` is negative or beyond the current size.
        """
        if size < 0 or size > self._size:
            raise ValueError(f"cannot truncate {self._path} of size {self._size} to {size}")
        removed = self._size - size
        if removed or self.file_length() != size:
            os.ftruncate(self._fd, size)
        self._size = size
        return removed

    def trim(self) -> None:
        """Cut a preallocated file to its valid size."""
        if self.file_length() != self._size:
            os.ftruncate(self._fd, self._size)

    def flush(self) -> None:
        """fsync the file. Raises ``OSError``."""
        os.fsync(self._fd)

    def close(self) -> None:
        """Trim a preallocated tail and close (no fsync: callers flush first when needed)."""
        if self._fd >= 0:
            if self._preallocate:
                self.trim()
            os.close(self._fd)
            self._fd = -1

    def close_handler(self) -> None:
        """Close the descriptor without trimming."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def rename_to(self, path: Path) -> None:
        """Rename the file; the open descriptor stays valid."""
        self._path.replace(path)
        self._path = path

    def delete_if_exists(self) -> bool:
        """Close and remove the file; returns whether it existed."""
        self.close_handler()
        try:
            self._path.unlink()
        except FileNotFoundError:
            return False
        return True

    # -- reading --
    def slice(self, position: int, size: int) -> FileSlice:
        """``size`` bytes from ``position`` (fewer at the end of the file), not read: the caller
        reads or sends them from the descriptor (:class:`FileSlice`)."""
        return FileSlice(self._fd, position, max(0, min(size, self._size - position)))

    def read(self, position: int, size: int) -> bytes:
        """``size`` bytes from ``position`` (fewer at the end of the file)."""
        data = os.pread(self._fd, size, position)
        self.bytes_read += len(data)
        return data

    def _batch_size(self, buf: bytes, off: int, pos: int) -> int:
        """The size of the batch at ``buf[off]`` (file position ``pos``) from its Length field.

        Raises ``CorruptRecordError`` below Kafka's minimum record overhead.
        """
        (length,) = _LENGTH.unpack_from(buf, off + 8)
        if length < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(
                f"{self._path}: record size {length} is less than the minimum record "
                f"overhead ({RECORD_OVERHEAD_V0}) at position {pos}"
            )
        return int(length) + LOG_OVERHEAD

    def batch_headers(
        self, start: int = 0, end: int | None = None, chunk_bytes: int = SCAN_CHUNK_BYTES
    ) -> Iterator[tuple[int, RecordBatch]]:
        """``(file position, batch)`` for each batch in ``[start, end)`` (default: ``size``).

        Only each batch's header is guaranteed to be readable through the yielded view: use it
        for offsets, sizes and timestamps, not ``records()`` or ``validate()``. Follows Kafka's
        file iteration rules: a torn tail ends the iteration silently; a length field below 14
        raises ``CorruptRecordError``, as does a batch shorter than the v2 header. Reads
        ``chunk_bytes`` at a time: a lookup expecting its batch within a few KiB asks for
        small reads, a long scan for large ones.
        """
        end = self._size if end is None else end
        chunk = max(chunk_bytes, RECORD_BATCH_OVERHEAD)
        buf = b""
        buf_start = start
        pos = start
        while pos + HEADER_SIZE_UP_TO_MAGIC < end:
            off = pos - buf_start
            if off + RECORD_BATCH_OVERHEAD > len(buf):
                buf = self.read(pos, min(chunk, end - pos))
                buf_start, off = pos, 0
                if len(buf) <= HEADER_SIZE_UP_TO_MAGIC:
                    return
            size = self._batch_size(buf, off, pos)
            if pos + size > end:
                return
            if size < RECORD_BATCH_OVERHEAD or off + RECORD_BATCH_OVERHEAD > len(buf):
                raise CorruptRecordError(
                    f"{self._path}: batch of {size} bytes at position {pos} is shorter than "
                    f"the {RECORD_BATCH_OVERHEAD}-byte v2 header"
                )
            yield pos, RecordBatch(buf, off)
            pos += size

    def full_batches(
        self, start: int = 0, end: int | None = None, chunk_bytes: int = 1024 * 1024
    ) -> Iterator[tuple[int, RecordBatch]]:
        """``(file position, batch)`` with each batch's whole bytes readable (for validation).

        Reads ``chunk_bytes`` at a time; a batch larger than a chunk is read on its own. Same
        iteration rules as :meth:`batch_headers`.
        """
        end = self._size if end is None else end
        pos = start
        while pos + HEADER_SIZE_UP_TO_MAGIC < end:
            buf = self.read(pos, min(chunk_bytes, end - pos))
            off = 0
            while pos + HEADER_SIZE_UP_TO_MAGIC < end:
                if off + HEADER_SIZE_UP_TO_MAGIC > len(buf):
                    break
                size = self._batch_size(buf, off, pos)
                if pos + size > end:
                    return
                if off + size > len(buf):
                    if off == 0:
                        buf = self.read(pos, size)  # a batch larger than a chunk
                    else:
                        break
                if size < RECORD_BATCH_OVERHEAD:
                    raise CorruptRecordError(
                        f"{self._path}: batch of {size} bytes at position {pos} is shorter "
                        f"than the {RECORD_BATCH_OVERHEAD}-byte v2 header"
                    )
                yield pos, RecordBatch(buf, off)
                pos += size
                off += size
