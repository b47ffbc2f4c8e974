"""Opening a partition directory: finishing interrupted work and crash recovery.

Follows Kafka's ``LogLoader.load``:

1. Leftovers of unfinished operations: ``*.deleted`` files are removed (their deletion was
   scheduled), ``*.cleaned`` files are removed (a compaction that had not finished writing),
   and ``*.swap`` files — compaction output that was complete — are swapped in: the regular
   segments they replace are deleted and the ``.swap`` suffix is dropped. ``.swap`` files based
   at or above the lowest ``.cleaned`` file belong to the unfinished operation and are removed.
   The segments a ``.swap`` replaces are those based in ``[its base, its next offset)``: the
   cleaner (:mod:`storage.log_cleaner`) writes one group at a time, renames ``.cleaned`` to
   ``.swap`` before it renames anything old to ``.deleted``, and keeps each group's last batch
   (as a bare header if nothing in it survives), so that range covers every old segment of
   the group with data.
   A ``.txnindex.swap`` goes with its ``.log.swap`` (the offset and time indexes are rebuilt).
2. Index files (``.index``, ``.timeindex``, ``.txnindex``) with no ``.log`` beside them are
   removed. Every ``.log`` is opened; a segment
   whose ``.index`` is missing, or whose indexes fail their sanity check, is rebuilt from its
   log whatever the recovery point says. A missing ``.timeindex`` is recreated and rebuilt.
3. Only after an unclean stop, every segment from the one containing the recovery point on is
   re-validated (``LogSegment.recover``): its batches' CRC-32C and offsets are checked and its
   indexes rebuilt. At the first invalid batch the segment is cut and every later segment is
   deleted. After a clean stop nothing is scanned.
   The ``.txnindex`` is the log's to check and rebuild (it needs the producer state:
   :meth:`storage.log.Log.open`).
4. A log whose end is below the checkpointed log start offset starts afresh there; a
   directory with no segments gets an empty one at the log start offset.

The result says how many bytes recovery read and truncated, so operators and benchmarks can
see that recovery is bounded by the data after the recovery point.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from storage.config import LogConfig
from storage.errors import CorruptIndexError
from storage.log_segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    filename_prefix_from_offset,
    offset_from_file_name,
)
from storage.log_segments import LogSegments
from storage.transaction_index import TXN_INDEX_SUFFIX

__all__ = ["LoadedLog", "load_segments"]

log = logging.getLogger(__name__)

_INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)


@dataclass(slots=True)
class LoadedLog:
    """What loading found: the segments, the log's offsets, and what recovery cost."""

    segments: LogSegments
    next_offset: int
    recovery_point: int
    log_start_offset: int
    recovery_bytes_read: int
    """Bytes re-read to validate batches (0 after a clean stop)."""
    bytes_truncated: int
    """Bytes cut off invalid tails and later segments deleted."""
    segments_recovered: int


def _is_segment_file(name: str) -> bool:
    return name[:20].isdigit() and name[20:21] == "."


def load_segments(
    directory: Path,
    config: LogConfig,
    *,
    now_ms: int,
    recovery_point: int,
    log_start_offset: int,
    had_clean_shutdown: bool,
) -> LoadedLog:
    """Load (and if needed recover) the segments of the log in ``directory``.

    Raises ``OSError`` for I/O failures; corrupt data never raises, it is cut off.
    """
    _remove_temp_files_and_complete_swaps(directory, config, now_ms)

    segments = LogSegments()
    recovered = 0
    bytes_read = 0
    truncated_total = 0
    log_files: list[Path] = []
    for path in sorted(directory.iterdir()):
        name = path.name
        if not _is_segment_file(name):
            continue
        if name.endswith(_INDEX_SUFFIXES):
            base = name[: name.index(".")]
            if not (directory / f"{base}{LOG_SUFFIX}").exists():
                log.warning("removing index file %s with no log file", path)
                path.unlink()
        elif name.endswith(LOG_SUFFIX):
            log_files.append(path)
    # After an unclean stop, the segments from the one holding the recovery point on are
    # rebuilt by recovery anyway: checking their (probably untrimmed) indexes would be wasted.
    bases = [offset_from_file_name(p.name) for p in log_files]
    recover_from = None
    if not had_clean_shutdown and bases:
        below = [b for b in bases if b <= recovery_point]
        recover_from = max(below) if below else bases[0]
    for path, base_offset in zip(log_files, bases, strict=True):
        prefix = path.name[:20]
        index_existed = (directory / f"{prefix}{INDEX_SUFFIX}").exists()
        timeindex_existed = (directory / f"{prefix}{TIME_INDEX_SUFFIX}").exists()
        segment = _open(directory, base_offset, config, now_ms)
        if recover_from is None or base_offset < recover_from:
            needs_rebuild = not index_existed or not timeindex_existed
            if not index_existed:
                log.info("rebuilding the missing index of %s", path)
            if not needs_rebuild:
                try:
                    segment.sanity_check(timeindex_existed)
                except CorruptIndexError as e:
                    log.warning("rebuilding the indexes of %s: %s", path, e)
                    needs_rebuild = True
            if needs_rebuild:
                before = segment.log.bytes_read
                truncated_total += segment.recover()
                bytes_read += segment.log.bytes_read - before
                recovered += 1
        segments.add(segment)

    if not had_clean_shutdown and len(segments) > 0:
        r_bytes, r_truncated, r_count = _recover(segments, recovery_point)
        bytes_read += r_bytes
        truncated_total += r_truncated
        recovered += r_count

    next_offset = segments.active().read_next_offset() if len(segments) else log_start_offset
    if len(segments) and next_offset < log_start_offset:
        log.warning(
            "log end offset %d of %s is below its log start offset %d: starting afresh",
            next_offset,
            directory,
            log_start_offset,
        )
        for segment in segments.clear():
            segment.delete_if_exists()
        next_offset = log_start_offset
    if len(segments) == 0:
        segments.add(_open(directory, log_start_offset, config, now_ms))
        next_offset = log_start_offset

    segments.active().resize_indexes(config.segment_index_bytes)
    first = segments.first()
    assert first is not None
    return LoadedLog(
        segments=segments,
        next_offset=next_offset,
        recovery_point=next_offset if had_clean_shutdown else min(recovery_point, next_offset),
        log_start_offset=max(log_start_offset, first.base_offset),
        recovery_bytes_read=bytes_read,
        bytes_truncated=truncated_total,
        segments_recovered=recovered,
    )


def _open(
    directory: Path, base_offset: int, config: LogConfig, now_ms: int, suffix: str = ""
) -> LogSegment:
    return LogSegment.for_config(
        directory, base_offset, config, created_ms=now_ms, file_suffix=suffix
    )


def _recover(segments: LogSegments, recovery_point: int) -> tuple[int, int, int]:
    """Re-validate every segment from the one containing ``recovery_point``."""
    bytes_read = 0
    truncated_total = 0
    count = 0
    unflushed = segments.values(from_offset=recovery_point)
    for i, segment in enumerate(unflushed):
        before = segment.log.bytes_read
        truncated = segment.recover()
        bytes_read += segment.log.bytes_read - before
        count += 1
        if truncated > 0:
            log.warning(
                "recovery truncated %d invalid bytes of %s at offset %d",
                truncated,
                segment.log.path,
                segment.read_next_offset(),
            )
            truncated_total += truncated
            for later in unflushed[i + 1 :]:
                log.warning("recovery deletes %s after the truncation", later.log.path)
                truncated_total += later.size
                segments.remove(later.base_offset)
                later.delete_if_exists()
            break
    return bytes_read, truncated_total, count


def _remove_temp_files_and_complete_swaps(directory: Path, config: LogConfig, now_ms: int) -> None:
    swap_files: list[Path] = []
    min_cleaned: int | None = None
    for path in list(directory.iterdir()):
        name = path.name
        if name.endswith(".tmp") and not _is_segment_file(name):
            path.unlink()  # a checkpoint whose rename never happened
            continue
        if not _is_segment_file(name):
            continue
        if name.endswith(DELETED_SUFFIX):
            path.unlink()
        elif name.endswith(CLEANED_SUFFIX):
            base = offset_from_file_name(name)
            min_cleaned = base if min_cleaned is None else min(min_cleaned, base)
            path.unlink()
        elif name.endswith(SWAP_SUFFIX):
            swap_files.append(path)

    kept: list[int] = []
    for path in swap_files:
        base = offset_from_file_name(path.name)
        if min_cleaned is not None and base >= min_cleaned:
            log.info("removing swap file %s of an unfinished operation", path)
            path.unlink()
        elif path.name.endswith(LOG_SUFFIX + SWAP_SUFFIX):
            kept.append(base)
        # offset and time index swap files of kept segments are rebuilt below; drop them
    # (a kept segment's .txnindex.swap is swapped in with it: it cannot be rebuilt here)
    for path in swap_files:
        name = path.name
        if not path.exists() or name.endswith(LOG_SUFFIX + SWAP_SUFFIX):
            continue
        if name.endswith(TXN_INDEX_SUFFIX + SWAP_SUFFIX) and offset_from_file_name(name) in kept:
            continue
        path.unlink()
    if not kept:
        return

    swaps = [_open(directory, base, config, now_ms, SWAP_SUFFIX) for base in sorted(kept)]
    for swap in swaps:
        swap.recover()
    lo = swaps[0].base_offset
    hi = max(s.read_next_offset() for s in swaps)
    for path in list(directory.iterdir()):
        name = path.name
        if _is_segment_file(name) and name.endswith((LOG_SUFFIX, *_INDEX_SUFFIXES)):
            base = offset_from_file_name(name)
            if lo <= base < hi:
                log.info("deleting %s replaced by a completed swap", path)
                path.unlink()
    for swap in swaps:
        swap.change_file_suffixes(SWAP_SUFFIX, "")
        swap.close()
        log.info("completed the swap of %s", filename_prefix_from_offset(swap.base_offset))
