"""The producer's record accumulator: records gather into per-partition batches until sent.

Kafka's ``RecordAccumulator`` and ``BufferPool``. Each partition has a queue of
:class:`ProducerBatch`; the last one may be *open*: :meth:`RecordAccumulator.append` encodes a
record straight into it (:class:`~odradek.records.appender.RecordBatchBuilder`) if it has room
within ``batch_size`` bytes, else closes it and opens a new batch (a record bigger than
``batch_size`` gets a batch of its own). Nothing of a record is kept but its bytes; its
``send()`` gets a :class:`~odradek.client.futures.FutureRecordMetadata` pointing at the batch's
one :class:`~odradek.client.futures.ProduceRequestResult`.

**Bounded memory.** Every batch not yet done (queued or in flight) counts against
``buffer_memory``: its encoded bytes, exactly, plus ``RECORD_MEMORY_OVERHEAD`` per record for
what holding the record costs in Python (Kafka reserves a whole ``batch_size`` per batch from a
pool of buffers; odradek has no pool to fill, so a large ``batch_size`` costs nothing until
records fill it). An append that would pass ``buffer_memory`` waits up to
``max_block_ms`` for batches to be acknowledged, then raises
:class:`~odradek.client.errors.BufferExhaustedError`; nothing already accepted is dropped. So
the records held never exceed ``buffer_memory``, whatever the caller does.

**Sending.** The sender asks :meth:`RecordAccumulator.ready` which leaders have something to
send, then :meth:`RecordAccumulator.drain` takes the first batch of each of their partitions.
A partition's first batch is *sendable* when any of these holds:

* it is closed: it is full, or another batch is queued behind it;
* it has waited ``linger_ms`` since it was opened;
* a flush is in progress, or the producer is closing;

and it is not backing off after a failed attempt (until ``retry_at_ms``), and the partition
has fewer than ``max_in_flight_per_partition`` batches in flight. A batch that failed is put
back at the *front* of its queue; with one batch in flight per partition nothing behind it is
sent until it succeeds or fails for good, so records of a partition are stored in send order,
retries included. (With more in flight, order under retries needs the idempotent producer.)

**Expiry by deadline order.** Every batch has a deadline, its opening time plus
``delivery_timeout_ms``; batches are opened in time order, so a deque of them in opening order
is in deadline order, and :meth:`RecordAccumulator.expired` looks only at its head (a retried
batch goes into a small heap). No scan of the queues.

Decisions take ``now_ms`` as an argument and do no I/O. Thread-safe: sends append from any
thread while the sender thread drains.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from odradek.client.errors import BufferExhaustedError, ProducerClosedError
from odradek.client.futures import Callback, FutureRecordMetadata, ProduceRequestResult
from odradek.client.idempotence import IdempotenceState
from odradek.client.types import TopicPartition
from odradek.errors import OdradekError
from odradek.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, RECORD_BATCH_OVERHEAD, Compression
from odradek.records.appender import RecordBatchBuilder, with_producer_state

__all__ = [
    "ProducerBatch",
    "ReadyCheck",
    "RecordAccumulator",
    "estimate_record_size",
]

# Upper bounds of the varint fields of a record (Kafka's DefaultRecord.sizeInUpperBound): its
# length (5), attributes (1), timestamp delta (10), offset delta (5), key and value lengths and
# the header count (5 each).
_RECORD_OVERHEAD_BOUND = 5 + 1 + 10 + 5 + 5 + 5 + 5


# What a record costs in memory beyond its encoded bytes while its batch is open: the slots of
# its parts in the batch's list and its value's object header (the encoded bytes are counted
# exactly). buffer_memory bounds encoded bytes plus this, so that it bounds the producer's
# memory, not only the bytes it will send.
RECORD_MEMORY_OVERHEAD = 112
# A new batch's header, and the overhead of the record that opens it.
_NEW_BATCH = RECORD_BATCH_OVERHEAD + RECORD_MEMORY_OVERHEAD


def _held(batch: ProducerBatch) -> int:
    """The bytes of ``buffer_memory`` a batch holds (as counted while it filled)."""
    builder = batch.builder
    return builder.size_in_bytes + builder.count * RECORD_MEMORY_OVERHEAD


def _sent_before(queued: ProducerBatch, batch: ProducerBatch) -> bool:
    """Whether ``queued``, at the front of a queue, goes before the retried ``batch``: it is a
    numbered batch of the same epoch with a lower sequence (modulo the 2**31 wrap)."""
    if queued.base_sequence < 0 or queued.producer_epoch != batch.producer_epoch:
        return False
    return 0 < (batch.base_sequence - queued.base_sequence) % 2**31 < 2**30


def estimate_record_size(
    key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes | None]]
) -> int:
    """An upper bound of the bytes ``key``, ``value`` and ``headers`` take in any batch."""
    size = _RECORD_OVERHEAD_BOUND
    if key is not None:
        size += len(key)
    if value is not None:
        size += len(value)
    for header_key, header_value in headers:
        size += 10 + len(header_key.encode("utf-8", "surrogatepass"))
        if header_value is not None:
            size += len(header_value)
    return size


# The states of a batch.
QUEUED, IN_FLIGHT, DONE = 0, 1, 2


class ProducerBatch:
    """Records for one partition, sent together as one v2 batch, and their one result.

    Not thread-safe by itself: the accumulator's lock guards it while it is queued; once
    drained only the sender thread touches it.
    """

    __slots__ = (
        "_payload_state",
        "attempts",
        "base_sequence",
        "builder",
        "closed",
        "created_ms",
        "deadline_ms",
        "last_attempt_ms",
        "last_error",
        "payload",
        "producer_epoch",
        "producer_id",
        "result",
        "retry_at_ms",
        "sent_first_in_line",
        "state",
        "tp",
    )

    def __init__(self, tp: TopicPartition, created_ms: int, deadline_ms: int) -> None:
        self.tp = tp
        self.builder = RecordBatchBuilder()
        self.result = ProduceRequestResult(tp)
        self.created_ms = created_ms
        self.deadline_ms = deadline_ms
        self.last_attempt_ms = created_ms
        self.attempts = 0  # retries so far
        self.retry_at_ms = 0
        self.closed = False  # no more appends
        self.state = QUEUED
        self.payload: bytes | None = None
        self._payload_state = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH, -1)  # what payload carries
        self.last_error: BaseException | None = None  # of the last failed attempt
        # Set when the batch is first drained by an idempotent producer (Kafka assigns them at
        # drain time too) and kept across retries.
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self.base_sequence = -1
        self.sent_first_in_line = False  # every earlier batch acknowledged when last sent

    def __repr__(self) -> str:
        return f"ProducerBatch({self.tp}, records={self.record_count}, attempts={self.attempts})"

    @property
    def record_count(self) -> int:
        return self.builder.count

    @property
    def size_in_bytes(self) -> int:
        """The exact size of the batch (uncompressed, header included)."""
        return self.builder.size_in_bytes

    def build(self, compression: Compression, *, transactional: bool = False) -> bytes:
        """The batch's bytes (base offset 0), built once and reused by retries;
        ``transactional``: a transactional producer's batch (the attributes' flag)."""
        state = (self.producer_id, self.producer_epoch, self.base_sequence)
        if self.payload is None:
            self.payload = self.builder.close(
                compression=compression,
                producer_id=state[0],
                producer_epoch=state[1],
                base_sequence=state[2],
                is_transactional=transactional,
            )
            self.builder.release()  # the records live on in the payload only
            self._payload_state = state
        elif state != self._payload_state:  # renumbered after an epoch bump
            self.payload = with_producer_state(self.payload, *state)
            self._payload_state = state
        return self.payload

    def complete(self, base_offset: int, log_append_time_ms: int) -> None:
        """Resolve the batch's records; ``base_offset`` -1 (acks=0) gives offsets of -1."""
        self.result.complete(base_offset, log_append_time_ms, None)

    def fail(self, error: BaseException) -> None:
        """Fail every record of the batch with ``error``."""
        self.result.complete(-1, -1, error)


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
        buffer_memory: int = 33_554_432,
        max_block_ms: int = 60_000,
        now_ms: Callable[[], int],
    ) -> None:
        self._batch_size = batch_size
        self._linger_ms = linger_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._retry_backoff_max_ms = max(retry_backoff_max_ms, retry_backoff_ms)
        self._delivery_timeout_ms = delivery_timeout_ms
        self._max_in_flight = max_in_flight_per_partition
        self._buffer_memory = buffer_memory
        self._max_block_s = max_block_ms / 1000
        self._now_ms = now_ms
        self._lock = threading.Lock()
        self._memory = threading.Condition(self._lock)
        self._memory_waiters = 0
        self._buffered = 0  # bytes of the batches not yet done
        self._queues: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._open: dict[tuple[str, int], ProducerBatch] = {}
        self._tps: dict[tuple[str, int], TopicPartition] = {}
        self._in_flight: dict[TopicPartition, list[ProducerBatch]] = {}
        # The idempotent producer's ids and sequences (None: not idempotent).
        self.idempotence: IdempotenceState | None = None
        self.send_allowed: Callable[[TopicPartition], bool] | None = None
        """A transactional producer's gate (``TransactionManager.is_send_allowed``): a
        partition's batches are drained only once it was added to the transaction."""
        self.on_new_batch: Callable[[TopicPartition], None] | None = None
        """Called (with the lock held) for each batch opened: a transactional producer adds
        its partition to the transaction (``TransactionManager.maybe_add_partition``)."""
        self._by_deadline: deque[ProducerBatch] = deque()  # opening order = deadline order
        self._incomplete: dict[int, ProducerBatch] = {}  # every batch not done, by id
        self._retried: list[tuple[int, int, ProducerBatch]] = []  # heap of re-queued batches
        self._tiebreak = itertools.count()
        self._flushes = 0
        self._closed = False
        self._drain_start = 0
        # Called (outside the lock) when a batch is opened or closed: wakes the sender.
        self.on_batch_change: Callable[[], None] = lambda: None

    # --- appending --------------------------------------------------------------------------

    def append(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: bytes,
        estimate: int,
        callback: Callback | None = None,
        *,
        abort_on_new_batch: bool = False,
    ) -> FutureRecordMetadata | None:
        """Encode a record into ``topic``/``partition``'s open batch if it has room for
        ``estimate`` more bytes, else into a new batch — or, with ``abort_on_new_batch``, into
        nothing (``None``: the sticky partitioner then picks another partition).

        ``headers`` is the record's encoded headers section. ``callback`` is registered on
        the record's future here, under the accumulator's lock: a batch open for appends
        cannot complete (it is closed under this lock before it is sent, expired or aborted),
        so the callback list needs no lock of its own (the per-record callback path).
        May block up to ``max_block_ms``
        for ``buffer_memory`` when a new batch is needed. Raises
        :class:`~odradek.client.errors.BufferExhaustedError` if no room came, and
        :class:`~odradek.client.errors.ProducerClosedError` after :meth:`close`.
        """
        changed = False
        future: FutureRecordMetadata | None
        where = (topic, partition)
        with self._lock:
            if self._closed:
                raise ProducerClosedError("cannot send after the producer is closed")
            # Room for the record and, should it need one, a new batch's header.
            if self._buffered + estimate + _NEW_BATCH > self._buffer_memory:
                self._wait_for_memory(estimate + _NEW_BATCH)
            batch = self._open.get(where)
            if batch is not None:
                builder = batch.builder
                if builder.size_in_bytes + estimate <= self._batch_size:
                    index = builder.count
                    added = builder.append(timestamp, key, value, headers)
                    self._buffered += added + RECORD_MEMORY_OVERHEAD
                    if builder.size_in_bytes + added > self._batch_size:
                        # The next record of this size would not fit: the batch is full.
                        batch.closed = True
                        del self._open[where]
                        changed = True
                    future = FutureRecordMetadata(batch.result, index, timestamp)
                    if callback is not None:
                        batch.result.add_callback_while_open(callback, future)
                    if not changed:
                        return future
                else:
                    batch.closed = True
                    del self._open[where]
                    batch = None
                    changed = True
            if batch is None:
                if abort_on_new_batch:
                    future = None
                else:
                    batch = self._open_batch(where)
                    added = batch.builder.append(timestamp, key, value, headers)
                    self._buffered += added + RECORD_MEMORY_OVERHEAD
                    future = FutureRecordMetadata(batch.result, 0, timestamp)
                    if callback is not None:
                        batch.result.add_callback_while_open(callback, future)
                    if batch.builder.size_in_bytes >= self._batch_size:
                        batch.closed = True
                        del self._open[where]
                    changed = True
        if changed:
            self.on_batch_change()
        return future

    def append_many(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        keys: Sequence[bytes | None] | None,
        values: Sequence[bytes | None],
        start: int,
        stop: int,
        parts: list[tuple[ProduceRequestResult, int, int, int]],
    ) -> tuple[int, bool]:
        """Encode ``values[start:stop]`` (and their ``keys``) into one batch of
        ``topic``/``partition``: its open batch, or a new one; stops when the batch is full.
        Appends ``(result, index in the batch, count, start)`` to ``parts`` and returns the
        index reached and whether a batch was closed. Blocks and raises as :meth:`append`."""
        where = (topic, partition)
        with self._lock:
            if self._closed:
                raise ProducerClosedError("cannot send after the producer is closed")
            value = values[start]
            key = keys[start] if keys is not None else None
            estimate = estimate_record_size(key, value, ()) + _NEW_BATCH  # with a new batch
            if self._buffered + estimate > self._buffer_memory:
                self._wait_for_memory(estimate)
            batch = self._open.get(where)
            opened = batch is None
            if batch is None or batch.builder.size_in_bytes + estimate > self._batch_size:
                if batch is not None:
                    batch.closed = True
                    del self._open[where]
                batch = self._open_batch(where)
                opened = True
            builder = batch.builder
            first = builder.count
            before = builder.size_in_bytes
            reached = builder.append_many(
                timestamp,
                keys,
                values,
                start,
                stop,
                self._batch_size,
                self._buffer_memory - self._buffered,
                RECORD_MEMORY_OVERHEAD,
            )
            self._buffered += builder.size_in_bytes - before
            self._buffered += (builder.count - first) * RECORD_MEMORY_OVERHEAD
            closed = reached < stop or builder.size_in_bytes >= self._batch_size
            if closed:
                batch.closed = True
                del self._open[where]
            parts.append((batch.result, first, reached - start, start))
        if closed or opened:
            self.on_batch_change()
        return reached, closed

    def _wait_for_memory(self, needed: int) -> None:
        """Wait (the lock held, released while waiting) until ``needed`` more bytes fit in
        ``buffer_memory``, or nothing is held (a record larger than the buffer then goes
        alone). Raises BufferExhaustedError after ``max_block_ms``, ProducerClosedError if
        the producer closes meanwhile."""
        self._memory_waiters += 1
        try:
            room = self._memory.wait_for(
                lambda: (
                    self._closed
                    or not self._buffered
                    or self._buffered + needed <= self._buffer_memory
                ),
                timeout=self._max_block_s,
            )
        finally:
            self._memory_waiters -= 1
        if self._closed:
            raise ProducerClosedError("cannot send after the producer is closed")
        if not room:
            raise BufferExhaustedError(
                f"no room for a record of up to {needed} bytes within max_block_ms "
                f"({round(self._max_block_s * 1000)} ms): buffer_memory "
                f"({self._buffer_memory} bytes) is full of records not yet acknowledged"
            )

    def _open_batch(self, where: tuple[str, int]) -> ProducerBatch:
        """A new open batch for ``where``, queued last. The lock is held."""
        tp = self._tps.get(where)
        if tp is None:
            tp = self._tps[where] = TopicPartition(*where)
        now = self._now_ms()
        batch = ProducerBatch(tp, now, now + self._delivery_timeout_ms)
        self._buffered += batch.builder.size_in_bytes  # the batch header
        queue = self._queues.get(tp)
        if queue is None:
            queue = self._queues[tp] = deque()
        queue.append(batch)
        self._open[where] = batch
        self._by_deadline.append(batch)
        self._incomplete[id(batch)] = batch
        if self.on_new_batch is not None:
            self.on_new_batch(tp)
        return batch

    @property
    def buffered_bytes(self) -> int:
        """Bytes of ``buffer_memory`` held by batches not yet done: their encoded size plus
        ``RECORD_MEMORY_OVERHEAD`` per record."""
        return self._buffered

    # --- the sender's side ------------------------------------------------------------------

    def ready(self, leader_of: Callable[[TopicPartition], int | None], now_ms: int) -> ReadyCheck:
        """Which leaders have a sendable batch (see the module docstring)."""
        nodes: set[int] = set()
        unknown: set[str] = set()
        next_check: int | None = None
        with self._lock:
            hurry = self._closed or self._flushes > 0 or self._memory_waiters > 0
            for tp, queue in self._queues.items():
                if not queue:
                    continue
                leader = leader_of(tp)
                if leader is None:
                    unknown.add(tp.topic)
                    continue
                if leader in nodes or len(self._in_flight.get(tp, ())) >= self._max_in_flight:
                    continue
                batch = queue[0]
                if batch.attempts > 0 and now_ms < batch.retry_at_ms:
                    wait = batch.retry_at_ms - now_ms
                elif hurry or batch.closed or len(queue) > 1:
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
        be sent now, up to ``max_request_size`` bytes per node (at least one batch). An open
        batch is closed.

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
            hurry = self._closed or self._flushes > 0 or self._memory_waiters > 0
            for tp in order:
                node = leader_of(tp)
                if node is None or node not in wanted:
                    continue
                queue = self._queues[tp]
                in_flight = self._in_flight.get(tp)
                if not queue or (in_flight and len(in_flight) >= self._max_in_flight):
                    continue
                batch = queue[0]
                if batch.attempts > 0 and now_ms < batch.retry_at_ms:
                    continue
                sendable = (
                    hurry
                    or batch.closed
                    or len(queue) > 1
                    or batch.attempts > 0
                    or now_ms >= batch.created_ms + self._linger_ms
                )
                if not sendable:
                    continue
                if self.send_allowed is not None and not self.send_allowed(tp):
                    continue
                idempotence = self.idempotence
                if idempotence is not None and not self._may_send(idempotence, batch, in_flight):
                    continue
                used = sizes.get(node, 0)
                if used and used + batch.size_in_bytes > max_request_size:
                    continue
                queue.popleft()
                if not batch.closed:
                    batch.closed = True
                    self._open.pop((tp.topic, tp.partition), None)
                if idempotence is not None and not idempotence.is_current(
                    batch.producer_id, batch.producer_epoch
                ):
                    # First sent, or sent in an earlier epoch: number it now, in queue order.
                    batch.producer_id = idempotence.producer_id
                    batch.producer_epoch = idempotence.epoch
                    batch.base_sequence = idempotence.assign(tp, batch.record_count)
                if idempotence is not None:
                    batch.sent_first_in_line = idempotence.first_in_line(tp, batch.base_sequence)
                batch.state = IN_FLIGHT
                sizes[node] = used + batch.size_in_bytes
                if in_flight is None:
                    in_flight = self._in_flight[tp] = []
                in_flight.append(batch)
                batch.last_attempt_ms = now_ms
                out.setdefault(node, []).append(batch)
        return out

    @staticmethod
    def _may_send(
        idempotence: IdempotenceState, batch: ProducerBatch, in_flight: list[ProducerBatch] | None
    ) -> bool:
        """The idempotent producer's order rules (see :mod:`odradek.client.idempotence`): no
        batch before the producer has an id; a retried batch, or one to be renumbered, only
        when nothing of its partition is in flight; a new batch only behind batches of the
        current epoch, once the leader has stored one batch of the partition in this epoch."""
        if not idempotence.has_id:
            return False
        if batch.attempts > 0 or batch.base_sequence >= 0:
            return not in_flight
        if in_flight:
            # A leader takes any first sequence from a producer (epoch) it does not know yet,
            # as Kafka's does; a node answers concurrent calls in any order, so a second batch
            # sent before the first is stored could be stored first, and the first refused as
            # out of order: one batch at a time until the leader knows the sequence.
            if not idempotence.has_acknowledged(batch.tp):
                return False
            return all(idempotence.is_current(b.producer_id, b.producer_epoch) for b in in_flight)
        return True

    def backoff_ms(self, attempts: int) -> int:
        """The wait before retry number ``attempts`` (1, 2, …): ``retry_backoff_ms`` doubling
        up to ``retry_backoff_max_ms`` (Kafka's exponential backoff, KIP-580, without jitter)."""
        exponent = min(max(attempts - 1, 0), 30)
        return int(min(self._retry_backoff_ms * (2**exponent), self._retry_backoff_max_ms))

    def reenqueue(self, batch: ProducerBatch, now_ms: int, *, backoff: bool = True) -> None:
        """Put a drained batch back at the front of its queue for another attempt; it waits
        :meth:`backoff_ms` first (unless ``backoff`` is false: the idempotent producer's batch
        refused only because one before it failed goes again as soon as that one is stored).
        The caller has counted the attempt in ``batch.attempts``.
        Numbered batches (idempotent producer) go back in sequence order among the retried
        batches at the front, whichever failed first."""
        with self._lock:
            self._release(batch)
            batch.retry_at_ms = now_ms + (self.backoff_ms(batch.attempts) if backoff else 0)
            batch.last_attempt_ms = now_ms
            batch.state = QUEUED
            queue = self._queues.setdefault(batch.tp, deque())
            index = 0
            if batch.base_sequence >= 0:
                while index < len(queue) and _sent_before(queue[index], batch):
                    index += 1
            queue.insert(index, batch)
            heapq.heappush(self._retried, (batch.deadline_ms, next(self._tiebreak), batch))

    def backing_off(self, now_ms: int) -> set[TopicPartition]:
        """Partitions whose first queued batch waits out a retry backoff."""
        with self._lock:
            return {
                tp
                for tp, queue in self._queues.items()
                if queue and queue[0].attempts > 0 and now_ms < queue[0].retry_at_ms
            }

    def skip_backoff(self, tps: Collection[TopicPartition], now_ms: int) -> None:
        """End the retry backoff of the queued batches of ``tps`` now (their partition has a
        new leader: Kafka's KIP-951 sends to it without waiting)."""
        with self._lock:
            for tp in tps:
                for batch in self._queues.get(tp, ()):
                    if batch.attempts > 0 and batch.retry_at_ms > now_ms:
                        batch.retry_at_ms = now_ms

    def done(self, batch: ProducerBatch) -> None:
        """A drained batch finished (delivered or failed for good): its memory is free."""
        with self._lock:
            if batch.state == IN_FLIGHT:
                self._release(batch)
            self._finish(batch)

    def _finish(self, batch: ProducerBatch) -> None:
        if batch.state == DONE:
            return
        batch.state = DONE
        self._incomplete.pop(id(batch), None)
        self._buffered -= _held(batch)
        if self._memory_waiters:
            self._memory.notify_all()

    def _release(self, batch: ProducerBatch) -> None:
        in_flight = self._in_flight.get(batch.tp)
        if in_flight is not None:
            if batch in in_flight:
                in_flight.remove(batch)
            if not in_flight:
                del self._in_flight[batch.tp]

    def expired(self, now_ms: int) -> list[ProducerBatch]:
        """Remove and return the queued batches whose ``delivery_timeout_ms`` has passed
        (their memory is freed; the caller fails them)."""
        out: list[ProducerBatch] = []
        with self._lock:
            by_deadline = self._by_deadline
            while by_deadline and (by_deadline[0].state != QUEUED or by_deadline[0].attempts):
                by_deadline.popleft()  # drained or retried: no longer this deque's to expire
            while by_deadline and by_deadline[0].deadline_ms <= now_ms:
                batch = by_deadline.popleft()
                if batch.state == QUEUED and not batch.attempts:
                    self._expire(batch, out)
            retried = self._retried
            while retried and retried[0][0] <= now_ms:
                batch = heapq.heappop(retried)[2]
                if batch.state == QUEUED:
                    self._expire(batch, out)
        return out

    def _expire(self, batch: ProducerBatch, out: list[ProducerBatch]) -> None:
        queue = self._queues.get(batch.tp)
        if queue is not None:
            queue.remove(batch)
        if not batch.closed:
            batch.closed = True
            self._open.pop((batch.tp.topic, batch.tp.partition), None)
        self._finish(batch)
        out.append(batch)

    def delivery_expired(self, batch: ProducerBatch, now_ms: int) -> bool:
        """Whether ``batch`` has used up its ``delivery_timeout_ms``."""
        return now_ms >= batch.deadline_ms

    def next_deadline_ms(self) -> int | None:
        """The earliest deadline of a queued batch that has not been sent yet, if any (the
        sender wakes up for it)."""
        with self._lock:
            for batch in self._by_deadline:
                if batch.state == QUEUED and not batch.attempts:
                    first: int | None = batch.deadline_ms
                    break
            else:
                first = None
            if self._retried and (first is None or self._retried[0][0] < first):
                first = self._retried[0][0]
            return first

    # --- flush and close ---------------------------------------------------------------------

    def begin_flush(self) -> None:
        """Make every queued batch sendable until the matching :meth:`end_flush`."""
        with self._lock:
            self._flushes += 1

    def end_flush(self) -> None:
        with self._lock:
            self._flushes -= 1

    def close(self) -> None:
        """Refuse further appends; every queued batch is sendable from now on. Sends blocked
        for memory fail with :class:`~odradek.client.errors.ProducerClosedError`."""
        with self._lock:
            self._closed = True
            self._memory.notify_all()

    def has_undrained(self) -> bool:
        """Whether any batch is queued (in flight batches do not count)."""
        with self._lock:
            return any(self._queues.values())

    def in_flight_count(self) -> int:
        with self._lock:
            return sum(len(batches) for batches in self._in_flight.values())

    def pending_results(self) -> list[tuple[ProduceRequestResult, int]]:
        """The result and record count of every batch not yet done (queued or in flight):
        what a flush waits for."""
        with self._lock:
            return [(b.result, b.builder.count) for b in self._incomplete.values()]

    def abort_undrained(self, error: OdradekError) -> int:
        """Fail and drop every queued batch; returns how many records failed."""
        with self._lock:
            batches = [b for q in self._queues.values() for b in q]
            self._queues.clear()
            self._open.clear()
            for batch in batches:
                batch.closed = True
                self._finish(batch)
        for batch in batches:
            batch.fail(error)
        return sum(b.record_count for b in batches)

    def undrained_sequenced(self) -> bool:
        """Whether a queued batch already has a sequence number (it was sent and is to be
        retried): dropping it leaves a gap in its partition's sequences."""
        with self._lock:
            return any(b.base_sequence >= 0 for q in self._queues.values() for b in q)

    def queued(self, tp: TopicPartition) -> list[ProducerBatch]:
        """A copy of ``tp``'s queue (for tests and diagnostics)."""
        with self._lock:
            return list(self._queues.get(tp, ()))
