"""Helpers for the compaction tests (unit, property and crash): keyed appends, reading a log
back record by record, the oracle every compacted log must agree with, and a pass that waits
(:class:`PassBlocker`) for the tests of concurrent passes."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from odradek.records import Record, build_batch, read_batches
from storage import Log
from storage.errors import LogCleaningAbortedError
from storage.log_cleaner import Cleaner


@dataclass(frozen=True, slots=True)
class Stored:
    """A record as read back from a log, with the delete horizon of its batch."""

    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int | None
    horizon: int | None


def keyed_batch(
    pairs: Sequence[tuple[bytes | None, bytes | None]],
    timestamp: int | None = None,
    compression: str = "none",
) -> bytes:
    return build_batch(
        [Record(k, v, timestamp=timestamp) for k, v in pairs], compression=compression
    )


def read_log(log: Log, from_offset: int | None = None) -> list[Stored]:
    """Every record from ``from_offset`` (default: the log start) to the LEO, via Log.read,
    checking each batch's CRC and that offsets only go up."""
    out: list[Stored] = []
    offset = log.log_start_offset if from_offset is None else from_offset
    previous = -1
    while offset < log.log_end_offset:
        info = log.read(offset, 1 << 20)
        batches = list(read_batches(info.records))
        assert batches, f"nothing readable at {offset} below the LEO {log.log_end_offset}"
        for batch in batches:
            batch.validate()
            for r in batch.records():
                assert r.offset is not None and r.offset > previous, "offsets must increase"
                previous = r.offset
                if r.offset >= offset:
                    out.append(
                        Stored(r.offset, r.key, r.value, r.timestamp, batch.delete_horizon_ms)
                    )
            offset = max(offset, batch.next_offset)
    return out


def live(records: list[Stored]) -> dict[bytes, bytes]:
    """The table a compacted log stands for: the latest value of every key, tombstones
    deleting."""
    table: dict[bytes, bytes] = {}
    for r in records:
        assert r.key is not None
        if r.value is None:
            table.pop(r.key, None)
        else:
            table[r.key] = r.value
    return table


@dataclass
class Oracle:
    """What was appended: the record at every offset, and so the latest of every key."""

    written: dict[int, tuple[bytes, bytes | None]] = field(default_factory=dict)
    latest: dict[bytes, int] = field(default_factory=dict)

    def append(self, first_offset: int, pairs: Sequence[tuple[bytes, bytes | None]]) -> None:
        for i, (key, value) in enumerate(pairs):
            self.written[first_offset + i] = (key, value)
            self.latest[key] = first_offset + i

    def table(self) -> dict[bytes, bytes]:
        out = {}
        for key, offset in self.latest.items():
            value = self.written[offset][1]
            if value is not None:
                out[key] = value
        return out

    def check(self, log: Log) -> list[Stored]:
        """Assert the log holds only records that were written at their offsets, the latest
        record of every key that has a value, and the same table; returns what it read."""
        records = read_log(log)
        for r in records:
            assert self.written.get(r.offset) == (r.key, r.value), f"offset {r.offset} changed"
        present = {r.offset for r in records}
        for key, offset in self.latest.items():
            if self.written[offset][1] is not None and offset >= log.log_start_offset:
                assert offset in present, f"the latest record of {key!r} ({offset}) is gone"
        assert live(records) == {
            k: v for k, v in self.table().items() if self.latest[k] >= log.log_start_offset
        }
        return records


class PassBlocker:
    """While entered, a cleaning pass over ``blocked`` (a topic-partition) stops before it
    starts: ``entered`` is set, and the pass waits until the block is left (or, with
    ``until_stopped``, until the cleaner stops: the pass is then aborted). ``others_done``
    is set after each pass over another log ends; ``most_at_once`` counts, per log, the most
    passes that ran over it at the same time."""

    def __init__(
        self, monkeypatch: Any, blocked: tuple[str, int], *, until_stopped: bool = False
    ) -> None:
        self.entered = threading.Event()
        self.others_done = threading.Event()
        self._release = threading.Event()
        self._lock = threading.Lock()
        self._running: dict[tuple[str, int], int] = {}
        self.most_at_once: dict[tuple[str, int], int] = {}
        real = Cleaner.clean
        blocker = self

        def clean(cleaner: Cleaner, log: Log, checkpointed: int | None) -> Any:
            tp = (log.topic, log.partition)
            with blocker._lock:
                blocker._running[tp] = blocker._running.get(tp, 0) + 1
                blocker.most_at_once[tp] = max(
                    blocker.most_at_once.get(tp, 0), blocker._running[tp]
                )
            try:
                if tp != blocked:
                    try:
                        return real(cleaner, log, checkpointed)
                    finally:
                        blocker.others_done.set()
                blocker.entered.set()
                while not blocker._release.wait(0.01):
                    if until_stopped and cleaner._should_stop():
                        raise LogCleaningAbortedError("stopped while blocked")
                return real(cleaner, log, checkpointed)
            finally:
                with blocker._lock:
                    blocker._running[tp] -= 1

        monkeypatch.setattr(Cleaner, "clean", clean)

    def __enter__(self) -> PassBlocker:
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
