"""What :meth:`odradek.Producer.send` returns: a light handle per record on one result per batch.

Kafka's producer keeps one ``ProduceRequestResult`` per batch and gives each record a
``FutureRecordMetadata`` that only points at it (its batch and its place in the batch). So does
odradek: a record costs one small object with three slots, no lock, no condition variable; the
batch's result holds the one ``threading.Event`` its waiters share, created when the batch is.

:class:`FutureRecordMetadata` has the ``concurrent.futures.Future`` methods users call
(``result``, ``exception``, ``done``, ``add_done_callback``, ``cancel``, ``cancelled``,
``running``), but it is not a ``concurrent.futures.Future``: ``concurrent.futures.wait`` and
``as_completed`` do not take it. :meth:`odradek.Producer.flush` waits for everything sent so
far, which is what those were used for.

Thread-safe: the sender thread completes results while any thread waits on them or adds
callbacks. Callbacks run on the thread that completes the batch (the producer's I/O thread),
or at once on the caller's thread if the batch is already complete.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from odradek.client.errors import InvalidDifferentRecordError
from odradek.client.types import RecordMetadata, TopicPartition
from odradek.errors import InvalidRecordError, OdradekError

__all__ = ["FutureRecordMetadata", "ProduceRequestResult", "wait_all"]

log = logging.getLogger("odradek.producer")

# Guards the completion of every result (its outcome, and taking and sealing its callback
# list); add_callback takes it too, add_done_callback only when it raced a completion.
_CALLBACKS_LOCK = threading.Lock()

Callback = Callable[["FutureRecordMetadata"], object]

# A named tuple made without its generated __new__'s frame (RecordMetadata per delivered record).
_new_tuple = tuple.__new__


class ProduceRequestResult:
    """The outcome of one batch: the base offset it was stored at, or the error that failed it.

    ``base_offset`` is -1 with ``acks=0``; ``log_append_time_ms`` is -1 unless the topic uses
    LogAppendTime. Set once by :meth:`complete` (later calls are ignored).
    """

    __slots__ = (
        "_callbacks",
        "_done",
        "_event",
        "_record_failures",
        "base_offset",
        "error",
        "log_append_time_ms",
        "tp",
    )

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.base_offset = -1
        self.log_append_time_ms = -1
        self.error: BaseException | None = None
        # where the broker named the batch's invalid records (KIP-467): each named record's
        # error by its index in the batch, and the error of the batch's other records
        self._record_failures: tuple[dict[int, OdradekError], OdradekError] | None = None
        self._done = False
        self._event = threading.Event()
        # callback, future, callback, future, ...: flat, so that a record's callback allocates
        # nothing the garbage collector tracks but its future (a tuple per record doubled the
        # young objects, and the collections that walk them, while a batch is in flight)
        # (a list from the start, None once complete: two threads adding never both create it)
        self._callbacks: list[object] | None = []

    @property
    def is_done(self) -> bool:
        return self._done

    def complete(
        self, base_offset: int, log_append_time_ms: int, error: BaseException | None
    ) -> None:
        """Record the outcome, wake every waiter and run the callbacks (on this thread)."""
        with _CALLBACKS_LOCK:
            if self._done:
                return
            self.base_offset = base_offset
            self.log_append_time_ms = log_append_time_ms
            self.error = error
            if isinstance(error, OdradekError) and error.record_errors:
                self._record_failures = _record_failures(error)
            self._done = True
            callbacks = self._callbacks
            self._callbacks = None
            assert callbacks is not None  # None only once done
            callbacks.append(_SEAL)  # what was added before it is this thread's to run
        self._event.set()
        end = _seal_index(callbacks)
        if end:
            # inlined _run: one frame less per record (the per-record callback path)
            for callback, future in zip(callbacks[0:end:2], callbacks[1:end:2], strict=True):
                try:
                    callback(future)  # type: ignore[operator]
                except Exception:
                    log.exception("a send() callback raised")

    def error_of(self, batch_index: int) -> BaseException | None:
        """The error the batch's record at ``batch_index`` failed with (``None``: delivered):
        the batch's error, except where the broker named the batch's invalid records
        (KIP-467): then each named record fails with its own message, as
        :class:`~odradek.errors.InvalidRecordError` (or the partition's error type, when it
        named only one record, as Kafka's producer does), and every other record with
        :class:`~odradek.client.errors.InvalidDifferentRecordError`; all of them carry the
        batch's ``record_errors``."""
        failures = self._record_failures
        if failures is None:
            return self.error
        return failures[0].get(batch_index, failures[1])

    def wait(self, timeout: float | None) -> bool:
        """Wait up to ``timeout`` seconds (``None``: without limit); ``True`` if complete."""
        return self._done or self._event.wait(timeout)

    def add_callback_while_open(self, callback: Callback, future: FutureRecordMetadata) -> None:
        """``add_callback`` for a result whose batch is still open for appends, called under
        the accumulator's lock (the batch cannot complete meanwhile): no lock taken. A list
        grows by one ``+=`` (atomic under the GIL, as :meth:`add_callback`'s are)."""
        callbacks = self._callbacks
        assert callbacks is not None, "a batch open for appends is not complete"
        callbacks += (callback, future)

    def add_callback(self, callback: Callback, future: FutureRecordMetadata) -> None:
        with _CALLBACKS_LOCK:
            if not self._done:
                callbacks = self._callbacks
                assert callbacks is not None  # None only once done
                callbacks += (callback, future)
                return
        _run(callback, future)


def _record_failures(error: OdradekError) -> tuple[dict[int, OdradekError], OdradekError]:
    """Each named record's error and the other records' one (see ``error_of``)."""
    named_errors = error.record_errors
    context, _, summary = error.message.partition(": ")  # "topic-0: <the broker's message>"
    cls = type(error) if len(named_errors) == 1 else InvalidRecordError
    named: dict[int, OdradekError] = {
        e.batch_index: cls(f"{context}: {e.message or summary}", named_errors) for e in named_errors
    }
    indices = ", ".join(str(e.batch_index) for e in named_errors)
    other = InvalidDifferentRecordError(
        f"{context}: the record was refused because its batch had invalid records (at "
        f"{indices} in the batch): {summary}",
        named_errors,
    )
    return named, other


_SEAL: object = object()
"""Put on a batch's callback list by its completion: the callbacks before it are the
completion's to run, those after it their adders'."""


def _seal_index(callbacks: list[object]) -> int:
    """Where the seal is (near the end: only pairs added after the completion follow it)."""
    i = len(callbacks) - 1
    while callbacks[i] is not _SEAL:
        i -= 1
    return i


def _position(callbacks: list[object], future: object) -> int:
    """Where ``future`` is on the list, searched from the end (it was added just now)."""
    i = len(callbacks) - 1
    while callbacks[i] is not future:
        i -= 1
    return i


def wait_all(results: list[ProduceRequestResult], timeout: float | None) -> bool:
    """Wait until every one of ``results`` is complete, ``timeout`` seconds in all (``None``:
    without limit); ``True`` if they all are. One event and a callback per result, so the
    timeout bounds the whole wait, not each result's."""
    pending = [r for r in results if not r.is_done]
    if not pending:
        return True
    finished = threading.Event()
    left = [len(pending)]
    lock = threading.Lock()

    def settled(_: object) -> None:
        with lock:
            left[0] -= 1
            if left[0] == 0:
                finished.set()

    for result in pending:
        result.add_callback(settled, _NO_FUTURE)
    return finished.wait(timeout)


def _run(callback: Callback, future: FutureRecordMetadata) -> None:
    try:
        callback(future)
    except Exception:
        # As concurrent.futures does: a failing callback must not stop the others.
        log.exception("a send() callback raised")


class FutureRecordMetadata:
    """The future of one sent record's :class:`~odradek.client.types.RecordMetadata`."""

    __slots__ = ("_relative_offset", "_result", "_timestamp")

    def __init__(self, result: ProduceRequestResult, relative_offset: int, timestamp: int) -> None:
        self._result = result
        self._relative_offset = relative_offset
        self._timestamp = timestamp

    def __repr__(self) -> str:
        state = "pending" if not self._result.is_done else "done"
        return f"<FutureRecordMetadata {self._result.tp} #{self._relative_offset} {state}>"

    def done(self) -> bool:
        """Whether the record was delivered or failed."""
        return self._result.is_done

    def running(self) -> bool:
        return not self._result.is_done

    def cancel(self) -> bool:
        """Always ``False``: a record cannot be taken back once sent."""
        return False

    def cancelled(self) -> bool:
        return False

    def result(self, timeout: float | None = None) -> RecordMetadata:
        """The record's metadata once delivered.

        Raises the delivery's typed :class:`~odradek.errors.OdradekError` if it failed, and
        ``TimeoutError`` if it is still pending after ``timeout`` seconds.
        """
        result = self._result
        if not result._done and not result._event.wait(timeout):
            raise TimeoutError(f"the record was not delivered within {timeout} s")
        if result.error is not None:
            raise result.error_of(self._relative_offset) or result.error
        # _metadata inlined: a delivery callback calls this once per record
        base = result.base_offset
        append_time = result.log_append_time_ms
        tp = result.tp
        return _new_tuple(
            RecordMetadata,
            (
                tp.topic,
                tp.partition,
                base + self._relative_offset if base >= 0 else -1,
                append_time if append_time >= 0 else self._timestamp,
            ),
        )

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The error the record failed with, or ``None`` if it was delivered. Raises
        ``TimeoutError`` if it is still pending after ``timeout`` seconds."""
        result = self._result
        if not result._done and not result._event.wait(timeout):
            raise TimeoutError(f"the record was not delivered within {timeout} s")
        return result.error_of(self._relative_offset)

    def add_done_callback(self, fn: Callback) -> None:
        """Call ``fn(self)`` when the record is delivered or fails (at once if it already
        has). It runs on the producer's I/O thread: keep it quick. An exception it raises is
        logged and ignored."""
        # This runs once per record sent, so it takes no lock (one cost as much as the rest):
        # the pair goes on the batch's list in one ``+=`` (atomic), and it is this thread's
        # to run only if the batch completed meanwhile and its completion did not see the
        # pair — which a completion tells by the seal it puts on the list (see complete()).
        result = self._result
        callbacks = result._callbacks
        if callbacks is not None:
            callbacks += (fn, self)
            if result._callbacks is callbacks:
                return  # still attached: the completion, later, runs it
            with _CALLBACKS_LOCK:
                pass  # the completion has put its seal on the list
            if _position(callbacks, self) < _seal_index(callbacks):
                return  # appended before the seal: the completion runs it
        _run(fn, self)

    def _metadata(self) -> RecordMetadata:
        result = self._result
        base = result.base_offset
        append_time = result.log_append_time_ms
        tp = result.tp
        return _new_tuple(
            RecordMetadata,
            (
                tp.topic,
                tp.partition,
                base + self._relative_offset if base >= 0 else -1,
                append_time if append_time >= 0 else self._timestamp,
            ),
        )


# The handle passed to wait_all's callbacks (they ignore it).
_NO_FUTURE = FutureRecordMetadata(ProduceRequestResult(TopicPartition("", -1)), 0, -1)
