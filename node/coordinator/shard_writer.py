"""The writes of one coordinator shard waiting for the high watermark (Kafka's
``CoordinatorRuntime`` deferred event queue).

A write of the group coordinator is decided and applied under the shard's lock: its records
are appended to the shard's ``__consumer_offsets`` partition (acks=-1, the local append only)
and replayed into the shard's state at once, so the next request of the shard decides on top
of it without waiting. What waits is the *answer*: a request is answered only once the high
watermark has passed the shard's last write as it stood when the request was processed (its
own write, or, for a request that wrote nothing, the one whose state its answer may show), as
Kafka defers a write operation's response, and an operation without records while a write is
pending. So an answered commit is replicated, and a slow replication holds the answers that
depend on it but neither the shard's lock (heartbeats, timers, other groups' requests are
processed meanwhile) nor a request thread of another shard.

One thread per shard (:class:`ShardWriter`, started at the first write that has to wait)
waits for the writes in append order (the high watermark passes them in that order) and
resolves, for each, the callbacks waiting on it: with ``None`` once the high watermark passed
it, else with the error the answer carries (:func:`write_error`: NOT_COORDINATOR when the
leadership moved, COORDINATOR_NOT_AVAILABLE when not replicated within
``offsets.commit.timeout.ms``). As in Kafka, a write whose wait failed is not undone in memory:
its records are in the log and may still be replicated (a newer leader replays whatever its log
holds); a write that failed to append at all changed nothing (the caller raises before
replaying it).

Reads (OffsetFetch, ListGroups, DescribeGroups) do not wait: they read the shard's *committed*
state, the records the high watermark is known to have passed (Kafka reads at the last
committed offset). :attr:`ShardWriter.on_durable` replays a write into it, in append order;
a write whose wait timed out is replayed there once a later one is known replicated.

Thread-safe: :meth:`ShardWriter.appended` and :meth:`ShardWriter.when_durable` are called
under the shard's lock (so writes queue in append order); the thread takes that lock (a
reentrant one: a write already replicated is replayed by the appending thread) only to replay
into the committed state, and holds no lock while it waits or runs callbacks.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Protocol

from node.core.requests import ProduceResult
from odradek.errors import (
    CoordinatorNotAvailableError,
    NotCoordinatorError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OdradekError,
    RequestTimedOutError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
    error_for_code,
)

__all__ = ["Appended", "PendingWrite", "ShardWriter", "write_error"]

log = logging.getLogger(__name__)

FENCED_LEADER_EPOCH = 74
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20

Durable = Callable[[OdradekError | None], None]
"""A callback waiting on a write: ``None`` once replicated, else the answer's error."""


class Appended(Protocol):
    """What a write waits on: :class:`node.core.pending_append.PendingAppend`."""

    def poll(self) -> list[ProduceResult] | None: ...

    def wait(self) -> list[ProduceResult]: ...


def write_error(result: ProduceResult) -> OdradekError | None:
    """The error a coordinator answers for its write's produce result (Kafka's coordinator
    mapping of produce errors), or None. NOT_COORDINATOR for a leadership lost (or fenced),
    COORDINATOR_NOT_AVAILABLE for a write not replicated in time or an ISR below
    ``min.insync.replicas``, UNKNOWN_SERVER_ERROR otherwise."""
    if not result.error_code:
        return None
    error = error_for_code(result.error_code, result.error_message)
    if isinstance(error, NotLeaderOrFollowerError | UnknownTopicOrPartitionError):
        return NotCoordinatorError(f"the write to the group's partition failed: {error}")
    if isinstance(
        error,
        NotEnoughReplicasError | NotEnoughReplicasAfterAppendError | RequestTimedOutError,
    ):
        return CoordinatorNotAvailableError(f"the write was not replicated: {error}")
    if error.code == FENCED_LEADER_EPOCH:
        return NotCoordinatorError(f"the group's partition has a new leader: {error}")
    return UnknownServerError(f"the write failed: {error}")


class PendingWrite:
    """One appended write of a shard: its records (key and value bytes, for the committed
    state) and the append whose high watermark it waits for."""

    __slots__ = ("appended", "callbacks", "records", "replicated")

    def __init__(self, appended: Appended, records: Sequence[tuple[bytes, bytes | None]]) -> None:
        self.appended = appended
        self.records = list(records)
        self.callbacks: list[Durable] = []
        self.replicated: bool | None = None
        """None while waiting; then whether the high watermark passed it."""


class ShardWriter:
    """The pending writes of one shard and the thread that waits for them (see the module)."""

    def __init__(self, name: str, on_durable: Callable[[list[PendingWrite]], None]) -> None:
        self._name = name
        self.on_durable = on_durable
        """Called with the writes the high watermark is now known to have passed, oldest
        first: replay them into the committed state. On the writer's thread with no lock held,
        or on the appending thread (holding the shard's lock) for a write replicated at once."""
        self._cond = threading.Condition()
        self._queue: deque[PendingWrite] = deque()
        self._unconfirmed: list[PendingWrite] = []  # waits failed, maybe replicated later
        self._last_error: OdradekError | None = None  # of the last of them
        self._closed: OdradekError | None = None
        self._thread: threading.Thread | None = None

    def appended(self, write: PendingWrite) -> None:
        """Queue a write just appended (caller holds the shard's lock, so the queue is in
        append order). One already replicated with nothing before it is resolved at once."""
        with self._cond:
            closed = self._closed
            if closed is None and not self._queue:
                answer = write.appended.poll()
                if answer is None:
                    self._queue.append(write)
                    self._start_locked()
                    return
            elif closed is None:
                self._queue.append(write)
                return
        if closed is not None:
            write.replicated = False
            return
        assert answer is not None
        self._resolve(write, answer)
        for callback in write.callbacks:
            _call(callback, write_error(answer[0]) if answer else None)

    def _start_locked(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"group-writes-{self._name}", daemon=True
            )
            self._thread.start()
        self._cond.notify_all()

    def when_durable(self, callback: Durable) -> None:
        """Call ``callback`` once the shard's last write so far is replicated (``None``) or its
        wait failed (the error). At once if nothing is pending: ``None``, or the error of the
        last write if its wait failed and it is not known replicated since (Kafka's deferred
        answer would wait for it, and time out). Caller holds the shard's lock."""
        with self._cond:
            if self._queue:
                self._queue[-1].callbacks.append(callback)
                return
            error = self._closed or (self._last_error if self._unconfirmed else None)
        callback(error)

    def recheck(self) -> None:
        """With nothing pending, whether the writes whose wait failed are replicated by now
        (the high watermark passed them later): if so the committed state takes them, and
        :meth:`when_durable` answers ``None`` again. The timers call it; caller holds the
        shard's lock."""
        with self._cond:
            if self._queue or not self._unconfirmed or self._closed is not None:
                return
            last = self._unconfirmed[-1]
        answer = last.appended.poll()  # a resolved append re-checks its high watermark
        if answer is not None and _under_high_watermark(answer):
            self._resolve(last, answer, retried=True)

    def durable(self) -> Future[OdradekError | None]:
        """:meth:`when_durable` as a future (its result is the error, or None)."""
        future: Future[OdradekError | None] = Future()
        self.when_durable(future.set_result)
        return future

    def close(self, error: OdradekError) -> None:
        """The shard is gone (unloaded, or the node stops): every waiting callback gets
        ``error``, and so does every later one. The writer's thread ends."""
        with self._cond:
            self._closed = error
            waiting = list(self._queue)
            self._queue.clear()
            self._cond.notify_all()
        for write in waiting:
            write.replicated = False
            for callback in write.callbacks:
                _call(callback, error)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and self._closed is None:
                    self._cond.wait()
                if self._closed is not None:
                    return
                head = self._queue[0]
            try:
                answer = head.appended.wait()
            except Exception as e:  # never leave the answers waiting
                log.exception("waiting for a write of %s failed", self._name)
                answer = [ProduceResult("", -1, error_code=-1, error_message=str(e))]
            # replayed into the committed state before it leaves the queue: a later write
            # resolved at once (an empty queue) is replayed after it
            self._resolve(head, answer)
            with self._cond:
                if not self._queue or self._queue[0] is not head:
                    continue  # closed meanwhile: its callbacks had the close's error
                self._queue.popleft()
                callbacks, head.callbacks = head.callbacks, []
            error = write_error(answer[0]) if answer else None
            for callback in callbacks:
                _call(callback, error)

    def _resolve(
        self, write: PendingWrite, answer: list[ProduceResult], retried: bool = False
    ) -> None:
        """The wait of ``write`` is over: replay it (with any earlier write whose wait failed)
        into the committed state if the high watermark passed it. No lock of ours held
        (``retried``: ``write`` is the last of those earlier ones)."""
        error = write_error(answer[0]) if answer else None
        write.replicated = error is None
        if error is not None:
            log.debug("a write of %s was not answered: %s", self._name, error)
        if not _under_high_watermark(answer):
            self._unconfirmed.append(write)
            self._last_error = error
            return
        durable = self._unconfirmed if retried else [*self._unconfirmed, write]
        self._unconfirmed = []
        try:
            self.on_durable(durable)
        except Exception:
            log.exception("replaying the committed writes of %s failed", self._name)


def _under_high_watermark(answer: list[ProduceResult]) -> bool:
    """Whether the high watermark passed the write (also when the ISR shrank below
    ``min.insync.replicas`` meanwhile: answered COORDINATOR_NOT_AVAILABLE, but committed)."""
    return not answer or answer[0].error_code in (0, NOT_ENOUGH_REPLICAS_AFTER_APPEND)


def _call(callback: Durable, error: OdradekError | None) -> None:
    try:
        callback(error)
    except Exception:
        log.exception("a callback waiting on a group write failed")
