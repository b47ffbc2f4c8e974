"""Browsing a topic's records: where to start (:class:`Seek`), which to keep
(:class:`RecordFilter`), how a record goes to the page (:func:`record_json`), and the read
itself (:func:`browse`).

A browse reads each chosen partition from its start position up to the high watermark seen
when it began, keeping at most ``limit`` matching records per partition, then merges them in
timestamp order (one partition: offset order) and keeps the first ``limit``. A filter is
applied here, on the server, so a search reads through records the page never receives; a
browse stops after ``max_scan`` records read, and says where it stopped.

:func:`browse` does I/O through the consumer it is given (blocking); the rest is pure.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Literal

from odradek.client.types import ConsumerRecord, TopicPartition
from odradek.clock import Clock
from odradek.consumer import Consumer

__all__ = [
    "BrowseResult",
    "RecordFilter",
    "Seek",
    "browse",
    "record_json",
    "start_offset",
]

SeekKind = Literal["oldest", "newest", "offset", "timestamp"]
FilterField = Literal["any", "key", "value", "header"]
SEEK_KINDS: tuple[SeekKind, ...] = ("oldest", "newest", "offset", "timestamp")
FILTER_FIELDS: tuple[FilterField, ...] = ("any", "key", "value", "header")


@dataclass(frozen=True, slots=True)
class Seek:
    """Where a browse starts: the oldest record, the newest ``limit``, an offset, or the first
    record at or after a timestamp (ms). Raises ``ValueError`` for an unknown kind or a
    missing or negative value."""

    kind: SeekKind
    value: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in SEEK_KINDS:
            raise ValueError(f"seek must be one of {', '.join(SEEK_KINDS)}, not {self.kind!r}")
        if self.kind in ("offset", "timestamp") and (self.value is None or self.value < 0):
            raise ValueError(f"seek to {self.kind} needs a value >= 0")


@dataclass(frozen=True, slots=True)
class RecordFilter:
    """Keep records whose key, value, a header (its key or value), or any of them contains
    ``pattern`` — a substring, or a regular expression with ``regex``. Bytes are read as UTF-8
    (undecodable bytes as U+FFFD). Raises ``ValueError`` for a bad regular expression."""

    pattern: str
    field: FilterField = "any"
    regex: bool = False
    _compiled: re.Pattern[str] | None = dataclass_field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.field not in FILTER_FIELDS:
            raise ValueError(f"filter on one of {', '.join(FILTER_FIELDS)}, not {self.field!r}")
        if self.regex:
            try:
                compiled = re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {self.pattern!r} ({exc})") from None
            object.__setattr__(self, "_compiled", compiled)

    def _hit(self, data: bytes | None) -> bool:
        if data is None:
            return False
        text = data.decode("utf-8", "replace")
        if self._compiled is not None:
            return self._compiled.search(text) is not None
        return self.pattern in text

    def matches(self, record: ConsumerRecord) -> bool:
        f = self.field
        if f in ("key", "any") and self._hit(record.key):
            return True
        if f in ("value", "any") and self._hit(record.value):
            return True
        if f in ("header", "any"):
            for name, value in record.headers:
                if self._hit(name.encode()) or self._hit(value):
                    return True
        return False


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def record_json(record: ConsumerRecord) -> dict[str, Any]:
    """A record as the page receives it: key, value and header values in base64 (``None`` for
    null), rendered there as text, JSON or hex."""
    return {
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": _b64(record.key),
        "value": _b64(record.value),
        "headers": [[name, _b64(value)] for name, value in record.headers],
    }


def start_offset(
    seek: Seek, log_start: int, high_watermark: int, limit: int, by_time: int | None
) -> int:
    """Where one partition's browse starts, within ``[log_start, high_watermark]``.
    ``by_time`` is the offset of the first record at or after the seek's timestamp (``None``:
    no such record, so the high watermark)."""
    if seek.kind == "oldest":
        target = log_start
    elif seek.kind == "newest":
        target = high_watermark - limit
    elif seek.kind == "offset":
        assert seek.value is not None
        target = seek.value
    else:
        target = high_watermark if by_time is None else by_time
    return min(max(target, log_start), high_watermark)


@dataclass(frozen=True, slots=True)
class BrowseResult:
    """The records to show, in order; where each partition's read began and ended (its next
    offset: where a live tail picks up); how many records were read, and whether the scan
    budget ran out before every partition reached its high watermark."""

    records: tuple[ConsumerRecord, ...]
    starts: Mapping[TopicPartition, int]
    next_offsets: Mapping[TopicPartition, int]
    scanned: int
    truncated: bool


def browse(
    consumer: Consumer,
    starts: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, int],
    *,
    limit: int,
    record_filter: RecordFilter | None,
    clock: Clock,
    newest: bool = False,
    max_scan: int = 100_000,
    timeout_ms: int = 15_000,
) -> BrowseResult:
    """Read ``starts[tp]`` up to ``ends[tp]`` (exclusive) of each partition with ``consumer``
    (a fresh consumer without a group); see the module docstring. With ``newest`` the last
    ``limit`` records of the merge are kept (the newest across the partitions), else the
    first. Raises the consumer's typed errors
    (:class:`~odradek.errors.TopicAuthorizationFailedError`, ...)."""
    if limit <= 0:
        raise ValueError(f"limit must be positive, not {limit}")
    tps = sorted(starts)
    consumer.assign(tps)
    kept: dict[TopicPartition, list[ConsumerRecord]] = {tp: [] for tp in tps}
    positions = dict(starts)
    pending: set[TopicPartition] = set()
    for tp in tps:
        consumer.seek(tp, starts[tp])
        if starts[tp] < ends[tp]:
            pending.add(tp)
        else:
            consumer.pause(tp)
    scanned = 0
    deadline = clock.monotonic_ms() + timeout_ms
    while pending and scanned < max_scan and clock.monotonic_ms() < deadline:
        for record in consumer.poll(timeout_ms=200):
            tp = TopicPartition(record.topic, record.partition)
            if tp not in pending or record.offset >= ends[tp]:
                continue
            scanned += 1
            positions[tp] = record.offset + 1
            if record_filter is None or record_filter.matches(record):
                kept[tp].append(record)
            if len(kept[tp]) >= limit or positions[tp] >= ends[tp]:
                pending.discard(tp)
                consumer.pause(tp)
        for tp in list(pending):
            # compaction may leave no record at ends[tp] - 1: the position says where we are
            position = consumer.position(tp)
            if position >= ends[tp]:
                positions[tp] = max(positions[tp], position)
                pending.discard(tp)
                consumer.pause(tp)
    records: list[ConsumerRecord] = [r for tp in tps for r in kept[tp]]
    if len(tps) > 1:
        records.sort(key=lambda r: (r.timestamp, r.partition, r.offset))
    next_offsets = dict(positions)
    # newest: every partition was read to its end, and the tail continues from there
    shown = records[-limit:] if newest else records[:limit]
    if not newest and len(shown) < len(records):
        # what was cut is not shown: each partition continues after its last shown record
        last: dict[TopicPartition, int] = {}
        for r in shown:
            last[TopicPartition(r.topic, r.partition)] = r.offset + 1
        for tp in tps:
            if len(kept[tp]) and (tp not in last or last[tp] <= kept[tp][-1].offset):
                next_offsets[tp] = last.get(tp, starts[tp])
    return BrowseResult(
        records=tuple(shown),
        starts=dict(starts),
        next_offsets=next_offsets,
        scanned=scanned,
        truncated=bool(pending),
    )


def headers_from_form(lines: Sequence[str]) -> list[tuple[str, bytes]]:
    """Headers typed as ``name: value`` lines (blank lines skipped). Raises ``ValueError`` for
    a line without a name."""
    out: list[tuple[str, bytes]] = []
    for line in lines:
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"a header is 'name: value', not {line!r}")
        out.append((name.strip(), value.strip().encode()))
    return out
