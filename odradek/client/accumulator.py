"""The producer's record accumulator: records gather into per-partition batches until sent.

Kafka's ``RecordAccumulator``, reduced to what odradek needs. Each partition has a queue of
:class:`ProducerBatch`; a record goes into the last batch of its partition if it fits in
``batch_size`` bytes (a record bigger than that gets a batch of its own), else it starts a new
batch. The sender asks :meth:`RecordAccumulator.ready` which leaders have something to send,
then :meth:`RecordAccumulator.drain` takes the first batch of each of their partitions.

A partition's first batch is *sendable* when any of these holds:

* it is full: it reached ``batch_size``, or another batch is queued behind it;
* it has waited ``linger_ms`` since it was created;
* a flush is in progress, or the producer is closing;

and it is not backing off after a failed attempt (until ``retry_at_ms``), and the partition
has fewer than ``max_in_flight_per_partition`` batches in flight. With the default of one in
flight, a batch that failed is put back at the *front* of its queue and nothing behind it is
sent until it succeeds or fails for good: records of a partition are stored in the order they
were sent, retries included. With more in flight, a retried batch can land after a later one.

Batches that waited longer than ``delivery_timeout_ms`` since they were created are taken out
by :meth:`RecordAccumulator.expired` (Kafka's ``delivery.timeout.ms``).

Decisions take ``now_ms`` as an argument and do no I/O. Thread-safe: sends append from any
thread while the sender thread drains.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

from odradek.client.errors import ProducerClosedError
from odradek.client.types import RecordMetadata, TopicPartition
from odradek.errors import OdradekError
from odradek.records import NO_TIMESTAMP, RECORD_BATCH_OVERHEAD, Compression, Record, build_batch
from odradek.records.varint import size_of_varint, size_of_varlong

__all__ = [
    "AppendResult",
    "ProducerBatch",
    "ReadyCheck",
    "RecordAccumulator",
    "estimate_record_size",
    "record_size",
]

# Upper bounds of the varint fields of a record (Kafka's DefaultRecord.sizeInUpperBound).
_MAX_VARINT = 5
_MAX_VARLONG = 10


def estimate_record_size(
    key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes | None]]
) -> int:
    """An upper bound of the bytes ``key``, ``value`` and ``headers`` take in any batch."""
    size = _MAX_VARINT + 1 + _MAX_VARLONG + _MAX_VARINT  # length, attributes, deltas
    size += _MAX_VARINT + (len(key) if key is not None else 0)
    size += _MAX_VARINT + (len(value) if value is not None else 0)
    size += _MAX_VARINT
    for header_key, header_value in headers:
        size += _MAX_VARINT + len(header_key.encode("utf-8", "surrogatepass"))
        size += _MAX_VARINT + (len(header_value) if header_value is not None else 0)
    return size


def record_size(offset_delta: int, timestamp_delta: int, record: Record) -> int:
    """The exact bytes ``record`` takes in an uncompressed batch at these deltas (Kafka's
    ``DefaultRecord.sizeInBytes``)."""
    key, value = record.key, record.value
    body = 1 + size_of_varlong(timestamp_delta) + size_of_varint(offset_delta)
    body += 1 if key is None else size_of_varint(len(key)) + len(key)
    body += 1 if value is None else size_of_varint(len(value)) + len(value)
    body += size_of_varint(len(record.headers))
    for header_key, header_value in record.headers:
        raw = len(header_key.encode("utf-8", "surrogatepass"))
        body += size_of_varint(raw) + raw
        body += 1 if header_value is None else size_of_varint(len(header_value)) + len(header_value)
    return size_of_varint(body) + body


class ProducerBatch:
    """Records for one partition, sent together as one v2 batch, with their futures.

    Not thread-safe by itself: the accumulator's lock guards it while it is queued; once
    drained only the sender thread touches it.
    """

    __slots__ = (
        "attempts",
        "created_ms",
        "futures",
        "last_attempt_ms",
        "payload",
        "records",
        "retry_at_ms",
        "size_in_bytes",
        "tp",
    )

    def __init__(self, tp: TopicPartition, created_ms: int) -> None:
        self.tp = tp
        self.records: list[Record] = []
        self.futures: list[Future[RecordMetadata]] = []
        self.created_ms = created_ms
        self.last_attempt_ms = created_ms
        self.attempts = 0  # retries so far
        self.retry_at_ms = 0
        self.size_in_bytes = RECORD_BATCH_OVERHEAD  # exact, before compression
        self.payload: bytes | None = None

    def __repr__(self) -> str:
        return f"ProducerBatch({self.tp}, records={len(self.records)}, attempts={self.attempts})"

    def size_with(self, record: Record) -> int:
        """The exact bytes ``record`` would add to this batch (uncompressed)."""
        if not self.records:
            return record_size(0, 0, record)
        base = self.records[0].timestamp
        delta = _timestamp(record) - (base if base is not None else NO_TIMESTAMP)
        return record_size(len(self.records), delta, record)

    def has_room_for(self, size: int, batch_size: int) -> bool:
        return not self.records or self.size_in_bytes + size <= batch_size

    def append(self, record: Record, future: Future[RecordMetadata], size: int) -> None:
        self.records.append(record)
        self.futures.append(future)
        self.size_in_bytes += size

    def is_full(self, batch_size: int) -> bool:
        return self.size_in_bytes >= batch_size

    def build(self, compression: Compression) -> bytes:
        """The batch's bytes (base offset 0), built once and reused by retries.

        Raises what :func:`~odradek.records.build_batch` raises for records it refuses.
        """
        if self.payload is None:
            self.payload = build_batch(self.records, compression=compression)
        return self.payload

    def complete(self, base_offset: int, log_append_time_ms: int) -> None:
        """Resolve every future; ``base_offset`` -1 (acks=0) gives offsets of -1."""
        for index, (record, future) in enumerate(zip(self.records, self.futures, strict=True)):
            if log_append_time_ms >= 0:
                timestamp = log_append_time_ms
            else:
                timestamp = record.timestamp if record.timestamp is not None else -1
            offset = base_offset + index if base_offset >= 0 else -1
            if not future.done():
                future.set_result(
                    RecordMetadata(self.tp.topic, self.tp.partition, offset, timestamp)
                )

    def fail(self, error: BaseException) -> None:
        """Fail every future with ``error``."""
        for future in self.futures:
            if not future.done():
                future.set_exception(error)


def _timestamp(record: Record) -> int:
    return record.timestamp if record.timestamp is not None else NO_TIMESTAMP


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What :meth:`RecordAccumulator.append` did.

    ``aborted``: the record was not appended because it would have started a new batch and the
    caller asked for that (the sticky partitioner then picks another partition). ``new_batch``:
    the record started a new batch. ``batch_full``: the partition has a full batch (wake the
    sender).
    """

    appended: bool
    new_batch: bool = False
    batch_full: bool = False
    aborted: bool = False


@dataclass(frozen=True, slots=True)
class ReadyCheck:
    """The answer of :meth:`RecordAccumulator.ready`.

    ``nodes``: leaders with a sendable batch. ``next_check_ms``: how long until another batch
    may become sendable (``None``: nothing is waiting). ``unknown_leader_topics``: topics with
    queued records whose partition has no known leader (refresh the metadata).
    """

    nodes: frozenset[int]
    next_check_ms: int | None
    unknown_leader_topics: frozenset[str]


class RecordAccumulator:
    """Per-partition queues of batches (see the module docstring). Thread-safe."""

    def __init__(
        self,
        *,
        batch_size: int,
        linger_ms: int,
        retry_backoff_ms: int,
        retry_backoff_max_ms: int,
        delivery_timeout_ms: int,
        max_in_flight_per_partition: int,
    ) -> None:
        self._batch_size = batch_size
        self._linger_ms = linger_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._retry_backoff_max_ms = max(retry_backoff_max_ms, retry_backoff_ms)
        self._delivery_timeout_ms = delivery_timeout_ms
        self._max_in_flight = max_in_flight_per_partition
        self._lock = threading.Lock()
        self._queues: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._in_flight: dict[TopicPartition, int] = {}
        self._flushes = 0
        self._closed = False
        self._drain_start = 0

    # --- appending --------------------------------------------------------------------------

    def append(
        self,
        tp: TopicPartition,
        record: Record,
        future: Future[RecordMetadata],
        now_ms: int,
        *,
        abort_on_new_batch: bool = False,
    ) -> AppendResult:
        """Add ``record`` to ``tp``'s last batch if it fits in ``batch_size``, else to a new
        batch (or, with ``abort_on_new_batch``, nowhere).

        Raises :class:`~odradek.client.errors.ProducerClosedError` after :meth:`close`.
        """
        with self._lock:
            if self._closed:
                raise ProducerClosedError("cannot send after the producer is closed")
            queue = self._queues.get(tp)
            if queue is None:
                queue = self._queues[tp] = deque()
            last = queue[-1] if queue else None
            if last is not None and last.payload is None:
                size = last.size_with(record)
                if last.has_room_for(size, self._batch_size):
                    last.append(record, future, size)
                    full = len(queue) > 1 or last.is_full(self._batch_size)
                    return AppendResult(appended=True, batch_full=full)
            if abort_on_new_batch:
                return AppendResult(appended=False, aborted=True)
            batch = ProducerBatch(tp, now_ms)
            batch.append(record, future, batch.size_with(record))
            queue.append(batch)
            full = len(queue) > 1 or batch.is_full(self._batch_size)
            return AppendResult(appended=True, new_batch=True, batch_full=full)

    # --- the sender's side ------------------------------------------------------------------

    def ready(self, leader_of: Callable[[TopicPartition], int | None], now_ms: int) -> ReadyCheck:
        """Which leaders have a sendable batch (see the module docstring)."""
        nodes: set[int] = set()
        unknown: set[str] = set()
        next_check: int | None = None
        with self._lock:
            hurry = self._closed or self._flushes > 0
            for tp, queue in self._queues.items():
                if not queue:
                    continue
                leader = leader_of(tp)
                if leader is None:
                    unknown.add(tp.topic)
                    continue
                if leader in nodes or self._in_flight.get(tp, 0) >= self._max_in_flight:
                    continue
                batch = queue[0]
                if batch.attempts > 0 and now_ms < batch.retry_at_ms:
                    wait = batch.retry_at_ms - now_ms
                elif hurry or len(queue) > 1 or batch.is_full(self._batch_size):
                    wait = 0
                else:
                    wait = batch.created_ms + self._linger_ms - now_ms
                if wait <= 0:
                    nodes.add(leader)
                elif next_check is None or wait < next_check:
                    next_check = wait
        return ReadyCheck(frozenset(nodes), next_check, frozenset(unknown))

    def drain(
        self,
        leader_of: Callable[[TopicPartition], int | None],
        nodes: Collection[int],
        max_request_size: int,
        now_ms: int,
    ) -> dict[int, list[ProducerBatch]]:
        """Take, for each node in ``nodes``, the first batch of each partition it leads that may
        be sent now, up to ``max_request_size`` estimated bytes per node (at least one batch).

        Drained batches count as in flight until :meth:`reenqueue` or :meth:`done`.
        """
        out: dict[int, list[ProducerBatch]] = {}
        with self._lock:
            tps = [tp for tp, q in self._queues.items() if q]
            if not tps:
                return out
            start = self._drain_start % len(tps)
            self._drain_start += 1
            order = tps[start:] + tps[:start]  # round robin: no partition starves the others
            wanted = set(nodes)
            sizes: dict[int, int] = {}
            for tp in order:
                node = leader_of(tp)
                if node is None or node not in wanted:
                    continue
                if self._in_flight.get(tp, 0) >= self._max_in_flight:
                    continue
                queue = self._queues[tp]
                batch = queue[0]
                if batch.attempts > 0 and now_ms < batch.retry_at_ms:
                    continue
                used = sizes.get(node, 0)
                if used and used + batch.size_in_bytes > max_request_size:
                    continue
                queue.popleft()
                sizes[node] = used + batch.size_in_bytes
                self._in_flight[tp] = self._in_flight.get(tp, 0) + 1
                batch.last_attempt_ms = now_ms
                out.setdefault(node, []).append(batch)
        return out

    def backoff_ms(self, attempts: int) -> int:
        """The wait before retry number ``attempts`` (1, 2, …): ``retry_backoff_ms`` doubling
        up to ``retry_backoff_max_ms`` (Kafka's exponential backoff, KIP-580, without jitter)."""
        exponent = min(max(attempts - 1, 0), 30)
        return int(min(self._retry_backoff_ms * (2**exponent), self._retry_backoff_max_ms))

    def reenqueue(self, batch: ProducerBatch, now_ms: int) -> None:
        """Put a drained batch back at the front of its queue for another attempt; it waits
        :meth:`backoff_ms` first. The caller has counted the attempt in ``batch.attempts``."""
        with self._lock:
            self._release(batch.tp)
            batch.retry_at_ms = now_ms + self.backoff_ms(batch.attempts)
            batch.last_attempt_ms = now_ms
            self._queues.setdefault(batch.tp, deque()).appendleft(batch)

    def done(self, batch: ProducerBatch) -> None:
        """A drained batch finished (delivered or failed for good)."""
        with self._lock:
            self._release(batch.tp)

    def _release(self, tp: TopicPartition) -> None:
        count = self._in_flight.get(tp, 0) - 1
        if count > 0:
            self._in_flight[tp] = count
        else:
            self._in_flight.pop(tp, None)

    def expired(self, now_ms: int) -> list[ProducerBatch]:
        """Remove and return the queued batches created ``delivery_timeout_ms`` ago or more."""
        out: list[ProducerBatch] = []
        with self._lock:
            for queue in self._queues.values():
                if not any(now_ms - b.created_ms >= self._delivery_timeout_ms for b in queue):
                    continue
                keep = [b for b in queue if now_ms - b.created_ms < self._delivery_timeout_ms]
                out.extend(b for b in queue if now_ms - b.created_ms >= self._delivery_timeout_ms)
                queue.clear()
                queue.extend(keep)
        return out

    def delivery_expired(self, batch: ProducerBatch, now_ms: int) -> bool:
        """Whether ``batch`` has used up its ``delivery_timeout_ms``."""
        return now_ms - batch.created_ms >= self._delivery_timeout_ms

    # --- flush and close ---------------------------------------------------------------------

    def begin_flush(self) -> None:
        """Make every queued batch sendable until the matching :meth:`end_flush`."""
        with self._lock:
            self._flushes += 1

    def end_flush(self) -> None:
        with self._lock:
            self._flushes -= 1

    def close(self) -> None:
        """Refuse further appends; every queued batch is sendable from now on."""
        with self._lock:
            self._closed = True

    def has_undrained(self) -> bool:
        """Whether any batch is queued (in flight batches do not count)."""
        with self._lock:
            return any(self._queues.values())

    def in_flight_count(self) -> int:
        with self._lock:
            return sum(self._in_flight.values())

    def abort_undrained(self, error: OdradekError) -> int:
        """Fail and drop every queued batch; returns how many records failed."""
        with self._lock:
            batches = [b for q in self._queues.values() for b in q]
            self._queues.clear()
        for batch in batches:
            batch.fail(error)
        return sum(len(b.records) for b in batches)

    def queued(self, tp: TopicPartition) -> list[ProducerBatch]:
        """A copy of ``tp``'s queue (for tests and diagnostics)."""
        with self._lock:
            return list(self._queues.get(tp, ()))
