"""Helpers for the compaction tests (unit, property and crash): keyed appends, reading a log
back record by record, and the oracle every compacted log must agree with."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from odradek.records import Record, build_batch, read_batches
from storage import Log


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
