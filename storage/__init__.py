"""odradek's storage engine: partition logs on disk, as Kafka lays them out.

Synchronous and free of network code; time comes from an injected clock. The public surface:

* :class:`LogConfig` — Kafka's topic configs; :class:`LogManagerConfig` — broker-wide tasks.
* :class:`LogManager` — the log directories and every partition :class:`Log` in them.
* :class:`LogCleaner` — compaction of logs whose policy includes ``compact`` (run by the log
  manager); :class:`CleanerConfig` — its dedupe buffer, I/O buffer and backoff.
* :class:`Log` — append as leader or follower, read, look up by timestamp, truncate, roll,
  flush, retention, delete-records; ``log_start_offset``, ``log_end_offset``,
  ``high_watermark``, ``recovery_point``; transactions: ``append_transaction_marker``
  (or ``append_as_leader`` with :class:`AppendOrigin` ``COORDINATOR``),
  ``first_unstable_offset``, ``last_stable_offset``, ``collect_aborted_transactions`` (the
  :class:`AbortedTxn` entries of the ``.txnindex`` files).
* :class:`LogSegment`, :class:`OffsetIndex`, :class:`TimeIndex` — the files underneath.
"""

from storage.config import CleanerConfig, LogConfig, LogManagerConfig
from storage.log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    Log,
    LogAppendInfo,
)
from storage.log_cleaner import CleanerStats, LogCleaner
from storage.log_manager import LogManager
from storage.log_segment import FetchDataInfo, LogOffsetMetadata, LogSegment, TimestampAndOffset
from storage.offset_index import OffsetIndex, OffsetPosition
from storage.producer_state import AppendOrigin
from storage.time_index import TimeIndex, TimestampOffset
from storage.transaction_index import AbortedTxn

__all__ = [
    "AbortedTxn",
    "AppendOrigin",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "CleanerConfig",
    "CleanerStats",
    "FetchDataInfo",
    "Log",
    "LogAppendInfo",
    "LogCleaner",
    "LogConfig",
    "LogManager",
    "LogManagerConfig",
    "LogOffsetMetadata",
    "LogSegment",
    "OffsetIndex",
    "OffsetPosition",
    "TimeIndex",
    "TimestampAndOffset",
    "TimestampOffset",
]
