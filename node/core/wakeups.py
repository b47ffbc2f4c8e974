"""Wake-ups for requests that wait on partitions (Kafka's purgatories, keyed the same way).

A request that waits (an acks=-1 produce until the high watermark passes its batches, a long
poll until data arrives, a DeleteRecords until the followers' log starts move) registers a
:class:`Waiter` for the partitions it waits on and the kinds of change that can complete it.
A partition reports each change with :meth:`Wakeups.notify`, which wakes only the waiters of
that partition that asked for that kind. Waking every waiting thread on every change (one
global condition) made a replicated produce cost dozens of futile thread wake-ups — each a
GIL hand-off — on the leader; this keeps it to the ones that can make progress.

An acks=-1 produce also says which high watermark it needs per partition (``required``), as
Kafka's ``DelayedProduce`` completes only once the high watermark passes its batch: a
notification of a high watermark still below it does not wake it. With several produce
requests in flight, each move of the high watermark completes about one of them; waking all
of them cost the leader a thread switch per request per move.

A request may also wait without a thread (:meth:`Wakeups.subscribe`): its waiter calls a
function of its own on each wake-up instead (the Kafka door's event loop, which then re-checks
the request itself), so a produce waiting for its replicas holds no request thread and its
answer costs one thread hand-off fewer.

Thread-safe: notifications come from request threads, the fetcher threads and the controller's
requests; waiting is per request thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

__all__ = ["DATA", "HIGH_WATERMARK", "LOG_START", "SHARE_RECORDS", "STATE", "Waiter", "Wakeups"]

TopicPartition = tuple[str, int]

DATA = 1
"""The log end offset moved: new records for follower fetches."""
HIGH_WATERMARK = 2
"""The high watermark moved: acks=-1 produce requests and consumer fetches."""
LOG_START = 4
"""A replica's log start offset moved: DeleteRecords waiting on its followers."""
STATE = 8
"""Leadership, ISR, truncation or the replica went offline: wakes every waiter of the
partition, whatever it asked for, so that it can answer with the new state or an error."""
SHARE_RECORDS = 16
"""A share group's records of the partition became AVAILABLE again (released, their member's
share session closed): ShareFetches waiting to acquire (:mod:`node.share.manager`)."""


class Waiter:
    """One waiting request. Use through :meth:`Wakeups.waiting`.

    The loop is: :meth:`clear`, check the condition, :meth:`wait`. A change notified after
    :meth:`clear` makes the next :meth:`wait` return at once, so none is lost between the
    check and the wait.
    """

    __slots__ = ("_event", "_on_wake", "kinds", "required")

    def __init__(
        self,
        kinds: int,
        required: dict[TopicPartition, int] | None = None,
        on_wake: Callable[[], None] | None = None,
    ) -> None:
        self.kinds = kinds
        self.required = required
        self._event = threading.Event()
        self._on_wake = on_wake

    def wanted(self, tp: TopicPartition, kinds: int, high_watermark: int | None) -> bool:
        """Whether a change of ``kinds`` on ``tp`` concerns this waiter."""
        if kinds & STATE:
            return True
        mine = self.kinds & kinds
        if not mine:
            return False
        if mine != HIGH_WATERMARK or self.required is None or high_watermark is None:
            return True
        needed = self.required.get(tp)
        return needed is None or high_watermark >= needed

    def clear(self) -> None:
        self._event.clear()

    def wake(self) -> None:
        if self._on_wake is not None:
            self._on_wake()  # a subscriber: nobody waits on the event
        else:
            self._event.set()

    def wait(self, timeout_s: float) -> bool:
        """Block until woken or ``timeout_s`` passes; whether it was woken."""
        return self._event.wait(timeout_s)


class Wakeups:
    """The registry of waiting requests, by partition."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[TopicPartition, set[Waiter]] = {}
        self._closed = False

    @contextmanager
    def waiting(
        self,
        partitions: Iterable[TopicPartition],
        kinds: int,
        required: dict[TopicPartition, int] | None = None,
    ) -> Iterator[Waiter]:
        """Register a waiter for ``kinds`` of change on ``partitions`` for the block's length.
        ``required`` (partition to offset) holds back ``HIGH_WATERMARK`` wake-ups of a
        partition until its high watermark reaches that offset; ``STATE`` always wakes.

        After :meth:`close` the waiter starts woken, so a request arriving during shutdown
        does not block.
        """
        waiter = Waiter(kinds, required)
        keys = set(partitions)
        self._add(waiter, keys)
        try:
            yield waiter
        finally:
            self._remove(waiter, keys)

    def subscribe(
        self,
        partitions: Iterable[TopicPartition],
        kinds: int,
        required: dict[TopicPartition, int] | None,
        on_wake: Callable[[], None],
    ) -> Callable[[], None]:
        """Register a waiter that calls ``on_wake`` on each wake-up (as :meth:`waiting`'s would
        be woken) until the returned function is called. ``on_wake`` runs on the notifying
        thread: it must not block (hand the re-check to another thread, e.g.
        ``loop.call_soon_threadsafe``), and may still be called once just after the returned
        function. After :meth:`close` it is called at once."""
        waiter = Waiter(kinds, required, on_wake)
        keys = set(partitions)
        self._add(waiter, keys)
        return lambda: self._remove(waiter, keys)

    def _add(self, waiter: Waiter, keys: set[TopicPartition]) -> None:
        with self._lock:
            for tp in keys:
                self._waiters.setdefault(tp, set()).add(waiter)
            closed = self._closed
        if closed:
            waiter.wake()

    def _remove(self, waiter: Waiter, keys: set[TopicPartition]) -> None:
        with self._lock:
            for tp in keys:
                waiters = self._waiters.get(tp)
                if waiters is not None:
                    waiters.discard(waiter)
                    if not waiters:
                        del self._waiters[tp]

    def notify(self, tp: TopicPartition, kinds: int, high_watermark: int | None = None) -> None:
        """Wake the waiters of ``tp`` that asked for any of ``kinds`` (all of them for
        ``STATE``), except those that need a higher ``high_watermark`` than the partition's
        (when given). Never blocks for long."""
        with self._lock:
            waiters = self._waiters.get(tp)
            if not waiters:
                return
            woken = [w for w in waiters if w.wanted(tp, kinds, high_watermark)]
        # woken outside the lock: a wake-up is a futex call (or a callback) during which the
        # waking thread may lose its CPU, and every registration and removal waits on the lock
        for waiter in woken:
            waiter.wake()

    def notify_all(self) -> None:
        """Wake every waiter (metadata, leadership and shutdown changes across partitions)."""
        with self._lock:
            woken = {w for waiters in self._waiters.values() for w in waiters}
        for waiter in woken:
            waiter.wake()

    def close(self) -> None:
        """Wake every waiter now and every later one at once: the node is shutting down."""
        with self._lock:
            self._closed = True
        self.notify_all()

    def waiter_counts(self) -> tuple[int, int]:
        """``(produces, fetches)`` waiting: a produce waits for a high watermark to reach an
        offset (``required``), a fetch for data or a high watermark to move."""
        with self._lock:
            waiters = {w for waiters in self._waiters.values() for w in waiters}
        produces = sum(1 for w in waiters if w.required is not None)
        return produces, len(waiters) - produces

    def waiter_count(self) -> int:
        """How many requests are waiting (for tests and diagnostics)."""
        with self._lock:
            return len({w for waiters in self._waiters.values() for w in waiters})


_remote = threading.local()


def add_remote_time_ms(ms: int) -> None:
    """Count ``ms`` of the current request's time as spent waiting in purgatory (called on the
    request's own thread by the replica manager)."""
    _remote.ms = getattr(_remote, "ms", 0) + ms


def take_remote_time_ms() -> int:
    """The purgatory time counted on this thread since the last call, and reset it (the front
    doors' request metrics call it around each request)."""
    ms: int = getattr(_remote, "ms", 0)
    _remote.ms = 0
    return ms
