"""Storage's own errors.

The errors storage reports to clients carry Kafka codes and live in :mod:`odradek.errors`
(``OffsetOutOfRangeError``, ``CorruptRecordError``, ``MessageTooLargeError``, …); they are
re-exported here so storage's callers need one import. The classes defined here are the
internal invariants Kafka also keeps off the wire (``InvalidOffsetException``,
``CorruptIndexException``, ``OffsetsOutOfOrderException``, …); they all derive from
:class:`LogError`, which the broker reports as ``KAFKA_STORAGE_ERROR`` or
``UNKNOWN_SERVER_ERROR``.
"""

from __future__ import annotations

from odradek.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    KafkaStorageError,
    MessageTooLargeError,
    OdradekError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
    UnsupportedCompressionTypeError,
)

__all__ = [
    "AppendWouldBlock",
    "LogError",
    "CorruptIndexError",
    "InvalidOffsetError",
    "IndexOffsetOverflowError",
    "IndexFullError",
    "OffsetsOutOfOrderError",
    "UnexpectedAppendOffsetError",
    "LogSegmentOffsetOverflowError",
    "LogDirLockedError",
    "CheckpointError",
    "LogCleaningAbortedError",
    # re-exported wire errors
    "CorruptRecordError",
    "InvalidRecordError",
    "InvalidTimestampError",
    "KafkaStorageError",
    "MessageTooLargeError",
    "OdradekError",
    "OffsetOutOfRangeError",
    "RecordListTooLargeError",
    "UnsupportedCompressionTypeError",
]


class AppendWouldBlock(Exception):  # noqa: N818  (not an error: a request to come back)
    """An append asked not to block (``blocking=False``) would have: another thread holds the
    log's (or its partition's) lock, or the append would roll a segment or flush
    (``flush.messages``), which write and fsync files. Nothing was written: the caller appends
    again where blocking is allowed (the Kafka door appends on its event loop, which every
    connection of the node shares, and hands such an append to a request thread)."""


class LogError(OdradekError):
    """Root of storage's internal errors (no wire code of their own)."""


class CorruptIndexError(LogError):
    """An index file failed its sanity check; the segment's indexes must be rebuilt."""


class InvalidOffsetError(LogError):
    """An index append was not strictly increasing in offset (Kafka InvalidOffsetException)."""


class IndexOffsetOverflowError(LogError):
    """An offset does not fit in the index's 32-bit relative offset."""


class IndexFullError(LogError):
    """An append to an index that has no free slot (the caller should have rolled)."""


class OffsetsOutOfOrderError(LogError):
    """A follower append whose batches' offsets are not strictly increasing."""


class UnexpectedAppendOffsetError(LogError):
    """A follower append whose first offset is below the log end offset."""

    def __init__(self, message: str, first_offset: int, last_offset: int) -> None:
        super().__init__(message)
        self.first_offset = first_offset
        self.last_offset = last_offset


class LogSegmentOffsetOverflowError(LogError):
    """An offset does not fit relative to its segment's base offset (32 bits)."""


class LogDirLockedError(LogError):
    """Another process holds the log directory's ``.lock``."""


class CheckpointError(LogError):
    """A checkpoint file is malformed (bad version, count or line)."""


class LogCleaningAbortedError(LogError):
    """A cleaning pass stopped because its log changed under it (truncation, a segment it
    was rewriting removed by retention, the log closed) or the cleaner is shutting down.
    Nothing was swapped in for the groups not yet done; the next pass starts over."""
