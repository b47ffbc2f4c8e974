"""Shared helpers for storage tests: batches with predictable contents, and opening logs."""

from __future__ import annotations

from pathlib import Path

from odradek.clock import ManualClock
from odradek.records import Record, build_batch, read_batches
from storage import Log, LogConfig


def value_for(offset: int, size: int = 20) -> bytes:
    """The value the tests write at ``offset``: recognisable and checkable."""
    text = f"value-{offset}-".encode()
    return (text * (size // len(text) + 1))[:size]


def make_batch(
    count: int = 1,
    *,
    first: int = 0,
    timestamp: int | None = 1_000,
    value_size: int = 20,
    keys: bool = True,
    base_offset: int = 0,
    compression: str = "none",
    partition_leader_epoch: int = -1,
) -> bytes:
    """A client batch of ``count`` records whose values encode ``first + i``."""
    records = [
        Record(
            key=f"k{first + i:06d}".encode() if keys else None,
            value=value_for(first + i, value_size),
            timestamp=None if timestamp is None else timestamp + i,
        )
        for i in range(count)
    ]
    return build_batch(
        records,
        base_offset=base_offset,
        compression=compression,
        partition_leader_epoch=partition_leader_epoch,
    )


def open_log(
    tmp_path: Path,
    clock: ManualClock,
    config: LogConfig | None = None,
    name: str = "topic-0",
    **kwargs: object,
) -> Log:
    return Log.open(tmp_path / name, config or LogConfig(), clock, **kwargs)  # type: ignore[arg-type]


def all_records(log: Log, max_offset: int | None = None) -> list[tuple[int, bytes | None]]:
    """Every (offset, value) readable from the log start, via ``Log.read``."""
    out: list[tuple[int, bytes | None]] = []
    offset = log.log_start_offset
    end = log.log_end_offset if max_offset is None else max_offset
    while offset < end:
        info = log.read(offset, 1 << 20, max_offset=max_offset)
        batches = list(read_batches(info.records))
        if not batches:
            break
        for batch in batches:
            batch.validate()
            for record in batch.records():
                assert record.offset is not None
                if offset <= record.offset < end:
                    out.append((record.offset, record.value))
            offset = max(offset, batch.next_offset)
    return out
