"""The log directories of a broker and every partition log in them (Kafka's ``LogManager``).

Per log directory, on disk::

    .lock                               held (flock) while a LogManager owns the directory
    .kafka_cleanshutdown                present only after a clean shutdown: JSON
                                        {"version": 0, "brokerEpoch": -1}
    recovery-point-offset-checkpoint    per partition, the offset below which data is flushed
    log-start-offset-checkpoint         per partition whose log start is above its first
                                        segment's base (delete-records)
    replication-offset-checkpoint       per partition, the high watermark
    cleaner-offset-checkpoint           per compacted partition, the first dirty offset
                                        (storage.log_cleaner)
    <topic>-<partition>/                one directory per log (storage.log)

Startup deletes the clean-shutdown marker *before* loading (a crash while loading then counts
as unclean), recovers each log from its recovery point unless the marker was there, and falls
back to empty checkpoints when a checkpoint is unreadable (costing only a longer recovery).
:meth:`LogManager.shutdown` flushes every log, writes the checkpoints and only then the
marker.

Periodic work — time-based flush, retention, checkpointing, removal of ``.deleted`` files,
compaction — runs in :meth:`LogManager.tick`, driven by the injected clock; the broker calls it
from one thread, tests call it after advancing a ``ManualClock``. As in Kafka, retention of
logs whose policy includes ``compact`` runs after each cleaning round rather than with the
other logs' retention (:meth:`LogManager.clean_logs`). ``tick`` runs the cleaning rounds on
worker threads of the manager's, up to ``log.cleaner.threads`` at once on distinct logs
(:meth:`LogManager.set_cleaner_threads` changes the count); a pass holds no manager lock, so
ticks go on during a long one, and :meth:`LogManager.shutdown` stops and waits for them all.

Thread-safety: every public method is thread-safe.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import shutil
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path

from odradek.clock import Clock
from odradek.errors import InvalidTopicError
from storage.checkpoint_file import OffsetCheckpointFile, fsync_dir, write_atomically
from storage.config import CleanerConfig, LogConfig, LogManagerConfig
from storage.errors import CheckpointError, LogDirLockedError
from storage.flush_stats import LogFlushStats
from storage.log import Log, parse_topic_partition_name
from storage.log_cleaner import CleanerStats, LogCleaner

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "LOCK_FILE",
    "LOG_START_OFFSET_CHECKPOINT",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "LogManager",
    "validate_topic_name",
]

_log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
_DELETE_DIR_SUFFIX = "-delete"

_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME_LENGTH = 249

TopicPartition = tuple[str, int]


def validate_topic_name(topic: str) -> None:
    """Kafka's topic name rules. Raises ``InvalidTopicError``."""
    if not topic:
        raise InvalidTopicError("topic name is empty")
    if topic in (".", ".."):
        raise InvalidTopicError(f"topic name cannot be {topic!r}")
    if len(topic) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(f"topic name is longer than {MAX_TOPIC_NAME_LENGTH} characters")
    if not _LEGAL_TOPIC.match(topic):
        raise InvalidTopicError(
            f"topic name {topic!r} has characters other than ASCII letters, digits, '.', '_', '-'"
        )


class LogManager:
    """Owns the log directories and the logs in them. Thread-safe."""

    def __init__(
        self,
        log_dirs: Sequence[Path | str],
        config: LogConfig,
        clock: Clock,
        manager_config: LogManagerConfig | None = None,
        cleaner_config: CleanerConfig | None = None,
        cleaner_threads: int = 1,
    ) -> None:
        """Lock each directory, then load (recovering where needed) every log in them.

        ``cleaner_config`` sets up compaction (enabled by default; the offset map is
        allocated at the first pass); ``cleaner_threads`` passes may run at once
        (``log.cleaner.threads``, :meth:`set_cleaner_threads`).

        Raises ``LogDirLockedError`` if another process holds a directory, ``ValueError`` for
        no directories or duplicates, and ``OSError`` for I/O failures.
        """
        dirs = [Path(d).resolve() for d in log_dirs]
        if not dirs:
            raise ValueError("at least one log directory is needed")
        if len(set(dirs)) != len(dirs):
            raise ValueError("log directories must be distinct")
        self.log_dirs = dirs
        self.default_config = config
        self._clock = clock
        self._manager_config = manager_config or LogManagerConfig()
        self._lock = threading.RLock()
        self._logs: dict[TopicPartition, Log] = {}
        # How many logs each directory holds, kept as logs come and go: a new log goes to the
        # least loaded one (counting them per creation made creating N logs O(N^2)).
        self._per_dir: dict[Path, int] = dict.fromkeys(self.log_dirs, 0)
        self._lock_fds: list[int] = []
        self._topic_configs: dict[str, LogConfig] = {}
        self._shut_down = False
        # deleted logs whose files close (and directory goes) once file.delete.delay.ms passed:
        # (due, log, renamed directory)
        self._deleted: list[tuple[int, Log, Path]] = []
        self.flush_stats = LogFlushStats()
        """Flush durations of every log of this manager (``LogFlushRateAndTimeMs``)."""
        self.had_clean_shutdown: dict[Path, bool] = {}
        for d in dirs:
            d.mkdir(parents=True, exist_ok=True)
            self._lock_fds.append(self._lock_dir(d))
        try:
            for d in dirs:
                self._load_dir(d)
        except BaseException:
            self._release_locks()
            raise
        now = clock.monotonic_ms()
        mc = self._manager_config
        self._next_retention_ms = now + mc.initial_task_delay_ms
        self._next_flush_check_ms = now + min(mc.flush_scheduler_interval_ms, 2**62)
        self._next_recovery_checkpoint_ms = now + mc.flush_offset_checkpoint_interval_ms
        self._next_start_checkpoint_ms = now + mc.flush_start_offset_checkpoint_interval_ms
        self._next_hw_checkpoint_ms = now + mc.high_watermark_checkpoint_interval_ms
        self._next_producer_expiration_ms = now + mc.producer_id_expiration_check_interval_ms
        self.cleaner_config = cleaner_config or CleanerConfig()
        self.cleaner: LogCleaner | None = (
            LogCleaner(dirs, self.cleaner_config, clock, cleaner_threads)
            if self.cleaner_config.enable
            else None
        )
        self._next_clean_ms = now
        self._cleaning_workers: set[threading.Thread] = set()  # each runs one round
        self._stopping = False  # shutdown started: no new cleaning workers

    # -- loading --
    @staticmethod
    def _lock_dir(d: Path) -> int:
        fd = os.open(d / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LogDirLockedError(f"{d} is locked by another process") from None
        return fd

    def _release_locks(self) -> None:
        for fd in self._lock_fds:
            os.close(fd)
        self._lock_fds.clear()

    @staticmethod
    def _read_checkpoint(path: Path) -> dict[TopicPartition, int]:
        try:
            return OffsetCheckpointFile(path).read()
        except (CheckpointError, OSError) as e:
            _log.warning("ignoring unreadable checkpoint %s (%s): recovering from scratch", path, e)
            return {}

    def _load_dir(self, d: Path) -> None:
        marker = d / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        if clean:
            # Deleted before loading, so a crash while loading counts as unclean (KAFKA-10471).
            marker.unlink()
            fsync_dir(d)
        self.had_clean_shutdown[d] = clean
        recovery_points = self._read_checkpoint(d / RECOVERY_POINT_CHECKPOINT)
        start_offsets = self._read_checkpoint(d / LOG_START_OFFSET_CHECKPOINT)
        high_watermarks = self._read_checkpoint(d / REPLICATION_OFFSET_CHECKPOINT)
        for child in sorted(d.iterdir()):
            if not child.is_dir():
                continue
            if child.name.endswith(_DELETE_DIR_SUFFIX):
                _log.info("removing %s, a log deleted before the last stop", child)
                shutil.rmtree(child, ignore_errors=True)
                continue
            try:
                tp = parse_topic_partition_name(child.name)
            except ValueError:
                _log.warning("ignoring %s: not a <topic>-<partition> directory", child)
                continue
            if tp in self._logs:
                raise ValueError(f"{tp[0]}-{tp[1]} is in more than one log directory")
            log = Log.open(
                child,
                self._topic_configs.get(tp[0], self.default_config),
                self._clock,
                recovery_point=recovery_points.get(tp, 0),
                log_start_offset=start_offsets.get(tp, 0),
                had_clean_shutdown=clean,
                high_watermark=high_watermarks.get(tp),
            )
            log.flush_stats = self.flush_stats
            self._logs[tp] = log
            self._per_dir[d] += 1

    # -- logs --
    def get_log(self, topic: str, partition: int) -> Log | None:
        with self._lock:
            return self._logs.get((topic, partition))

    def get_or_create_log(self, topic: str, partition: int, config: LogConfig | None = None) -> Log:
        """The log of ``topic``-``partition``, created in the least-loaded directory if new.

        ``config`` applies to a new log (and updates an existing one). Raises
        ``InvalidTopicError`` for an illegal topic name, ``ValueError`` for a negative
        partition. Thread-safe.
        """
        validate_topic_name(topic)
        if partition < 0:
            raise ValueError(f"partition must be non-negative, not {partition}")
        with self._lock:
            self._check_running()
            log = self._logs.get((topic, partition))
            if log is not None:
                if config is not None:
                    log.update_config(config)
                return log
            target = min(self.log_dirs, key=self._per_dir.__getitem__)
            log = Log.open(
                target / f"{topic}-{partition}",
                config or self.default_config,
                self._clock,
                had_clean_shutdown=True,
            )
            log.flush_stats = self.flush_stats
            self._logs[(topic, partition)] = log
            self._per_dir[target] += 1
            return log

    def all_logs(self) -> dict[TopicPartition, Log]:
        with self._lock:
            return dict(self._logs)

    def delete_log(self, topic: str, partition: int) -> bool:
        """Stop serving the log and rename its directory ``…-delete`` (as Kafka does, so a crash
        midway finishes the removal at the next start); its files are closed and the directory
        removed ``file.delete.delay.ms`` later, as Kafka deletes segments, so that a reader
        still sending a slice of it (the Kafka door's sendfile) sends the slice's bytes, never
        another file's that reused the descriptor's number. Returns whether it existed."""
        with self._lock:
            log = self._logs.pop((topic, partition), None)
            if log is None:
                return False
            self._per_dir[log.dir.parent] -= 1
            log.retire()
            if self.cleaner is not None:
                self.cleaner.remove_log((topic, partition), log.dir.parent)
            doomed = log.dir.with_name(f"{log.dir.name}.{uuid.uuid4().hex}{_DELETE_DIR_SUFFIX}")
            log.dir.rename(doomed)
            due = self._clock.monotonic_ms() + log.config.file_delete_delay_ms
            self._deleted.append((due, log, doomed))
            if log.config.file_delete_delay_ms == 0:
                self._remove_deleted(due)
            return True

    def _remove_deleted(self, now_ms: int | None) -> None:
        """Close and remove the deleted logs due by ``now_ms`` (all of them: None). Lock held."""
        keep: list[tuple[int, Log, Path]] = []
        for due, log, directory in self._deleted:
            if now_ms is None or due <= now_ms:
                log.close_handlers()
                shutil.rmtree(directory, ignore_errors=True)
            else:
                keep.append((due, log, directory))
        self._deleted = keep

    # -- periodic work --
    def tick(self) -> None:
        """Run whatever periodic task is due by the clock. Call it often (e.g. every 100 ms).

        Cleaning rounds (:meth:`clean_logs`) run on worker threads of the manager's, up to
        the cleaner's ``threads`` at once: while fewer are running, a tick starts one when the
        last round to end cleaned something or ``backoff_ms`` has passed since it did not. A
        round finds nothing (and backs off) while the cleaner's threads are all busy with
        other callers' passes. :meth:`wait_for_cleaning` waits for the rounds started."""
        with self._lock:
            if self._shut_down or self._stopping:
                return
            self._periodic_tasks()
            cleaner = self.cleaner
            if (
                cleaner is None
                or self._clock.monotonic_ms() < self._next_clean_ms
                or len(self._cleaning_workers) >= cleaner.threads
            ):
                return
            worker = threading.Thread(target=self._cleaning_round, name="log-cleaner", daemon=True)
            self._cleaning_workers.add(worker)
        worker.start()

    def _cleaning_round(self) -> None:
        """A cleaning worker: one round, then the time the next one is due."""
        worker = threading.current_thread()
        cleaned = None
        try:
            cleaned = self.clean_logs(wait=False)
        except Exception:
            _log.exception("a cleaning round failed")
        finally:
            backoff = 0 if cleaned is not None else self.cleaner_config.backoff_ms
            with self._lock:
                self._cleaning_workers.discard(worker)
                self._next_clean_ms = self._clock.monotonic_ms() + backoff

    def wait_for_cleaning(self) -> None:
        """Wait for the cleaning rounds :meth:`tick` started (tests, shutdown)."""
        with self._lock:
            workers = list(self._cleaning_workers)
        for worker in workers:
            worker.join()

    def set_cleaner_threads(self, threads: int) -> None:
        """Run up to ``threads`` cleaning passes at once from now on (a dynamic
        ``log.cleaner.threads``): running passes finish; the next rounds due use the new
        count. Raises ``ValueError`` below 1."""
        cleaner = self.cleaner
        if cleaner is None:
            return
        cleaner.set_threads(threads)

    def _periodic_tasks(self) -> None:
        # Called with the lock held.
        now = self._clock.monotonic_ms()
        mc = self._manager_config
        logs = list(self._logs.values())
        if now >= self._next_flush_check_ms:
            self._next_flush_check_ms = now + mc.flush_scheduler_interval_ms
            for log in logs:
                log.maybe_flush()
        if now >= self._next_retention_ms:
            self._next_retention_ms = now + mc.retention_check_interval_ms
            self.cleanup_logs()
        for log in logs:
            log.delete_pending_files()
        if self._deleted:
            self._remove_deleted(now)
        if now >= self._next_recovery_checkpoint_ms:
            self._next_recovery_checkpoint_ms = now + mc.flush_offset_checkpoint_interval_ms
            self.checkpoint_recovery_points()
        if now >= self._next_start_checkpoint_ms:
            self._next_start_checkpoint_ms = now + mc.flush_start_offset_checkpoint_interval_ms
            self.checkpoint_log_start_offsets()
        if now >= self._next_hw_checkpoint_ms:
            self._next_hw_checkpoint_ms = now + mc.high_watermark_checkpoint_interval_ms
            self.checkpoint_high_watermarks()
        if now >= self._next_producer_expiration_ms:
            self._next_producer_expiration_ms = now + mc.producer_id_expiration_check_interval_ms
            for log in logs:
                log.remove_expired_producers()

    def cleanup_logs(self) -> int:
        """Run retention on every log whose policy does not include ``compact`` (compacted
        logs get theirs from :meth:`clean_logs`, as in Kafka); returns the number of segments
        deleted."""
        with self._lock:
            return sum(
                log.delete_old_segments() for log in self._logs.values() if not log.config.compact
            )

    def clean_logs(self, *, wait: bool = True) -> CleanerStats | None:
        """One cleaning round (Kafka's ``cleanFilthiestLog``): clean the compacted log with the
        highest dirty ratio among those due, then run retention on every compacted log
        (only delete-records breaches for policy ``compact``; size and time too for
        ``compact,delete``). Returns the pass's figures, or None if no log was cleaned.

        Holds no manager lock during the pass: reads, appends and other calls proceed. With
        ``wait=False`` it returns at once, cleaning nothing, if the cleaner's ``threads``
        passes are running (with ``wait``, it waits for one to end); it never cleans a log
        another pass is cleaning.
        Does nothing if the cleaner is disabled or the manager is shut down. Thread-safe.
        """
        cleaner = self.cleaner
        if cleaner is None:
            return None
        with self._lock:
            if self._shut_down:
                return None
            logs = dict(self._logs)
        stats = cleaner.clean_filthiest_log(logs, wait=wait)
        for log in logs.values():
            if log.config.compact and not log.closed:
                try:
                    log.delete_old_segments()
                except ValueError:
                    pass  # closed meanwhile (deleted or shut down)
        return stats

    def _logs_by_dir(self) -> dict[Path, list[tuple[TopicPartition, Log]]]:
        out: dict[Path, list[tuple[TopicPartition, Log]]] = {d: [] for d in self.log_dirs}
        for tp, log in self._logs.items():
            out[log.dir.parent].append((tp, log))
        return out

    def checkpoint_recovery_points(self) -> None:
        """Write ``recovery-point-offset-checkpoint`` in every directory."""
        with self._lock:
            for d, logs in self._logs_by_dir().items():
                OffsetCheckpointFile(d / RECOVERY_POINT_CHECKPOINT).write(
                    {tp: log.recovery_point for tp, log in logs}
                )

    def checkpoint_log_start_offsets(self) -> None:
        """Write ``log-start-offset-checkpoint``: logs whose start is above their first
        segment's base offset (Kafka records only those)."""
        with self._lock:
            for d, logs in self._logs_by_dir().items():
                entries = {}
                for tp, log in logs:
                    first = log.segments()[0]
                    if log.log_start_offset > first.base_offset:
                        entries[tp] = log.log_start_offset
                OffsetCheckpointFile(d / LOG_START_OFFSET_CHECKPOINT).write(entries)

    def checkpoint_high_watermarks(self) -> None:
        """Write ``replication-offset-checkpoint`` in every directory."""
        with self._lock:
            for d, logs in self._logs_by_dir().items():
                OffsetCheckpointFile(d / REPLICATION_OFFSET_CHECKPOINT).write(
                    {tp: log.high_watermark for tp, log in logs}
                )

    # -- shutdown --
    def shutdown(self) -> None:
        """Clean shutdown: flush and close every log, write the checkpoints, then the
        clean-shutdown marker, and release the directory locks. Idempotent."""
        with self._lock:
            if self._shut_down or self._stopping:
                return
            self._stopping = True  # tick starts no more cleaning workers
        if self.cleaner is not None:
            self.cleaner.shutdown()  # stops the running passes and waits for them
        self.wait_for_cleaning()  # their rounds' retention, outside the lock they take
        with self._lock:
            for log in self._logs.values():
                log.flush(include_active_empty=True)
            self.checkpoint_recovery_points()
            self.checkpoint_log_start_offsets()
            self.checkpoint_high_watermarks()
            for log in self._logs.values():
                log.close()
            self._remove_deleted(None)
            for d in self.log_dirs:
                write_atomically(
                    d / CLEAN_SHUTDOWN_FILE,
                    json.dumps({"version": 0, "brokerEpoch": -1}).encode(),
                )
            self._shut_down = True
            self._release_locks()

    def _check_running(self) -> None:
        if self._shut_down:
            raise ValueError("the log manager is shut down")
