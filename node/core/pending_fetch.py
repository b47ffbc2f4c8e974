"""A consumer's fetch waiting for its bytes without holding a thread (Kafka's ``DelayedFetch``).

:meth:`ReplicaManager.start_fetch <node.core.replica_manager.ReplicaManager.start_fetch>` reads
once at once; when that falls short of ``min_bytes`` (and nothing stops the fetch: an error, a
diverging epoch, a ``max_wait_ms`` of 0), it returns a :class:`PendingFetch`. Its owner — the
Kafka door's event loop — has :meth:`PendingFetch.subscribe` call it back whenever the high
watermark of one of the fetch's partitions moves, asks :meth:`PendingFetch.ready` then (a read
that only measures: slices of the segment files, no bytes copied), and once ready takes
:meth:`PendingFetch.results`. With ``as_slices`` those are the measuring read's own slices; without
(a TLS listener, whose bytes go through Python) ``results`` reads the bytes, so it belongs on a
request thread (:attr:`PendingFetch.reads_bytes`). The fetch is ready as Kafka's
``DelayedFetch.tryComplete`` would complete it: an error or a diverging epoch, ``min_bytes``
available, the deadline passed, or the node shutting down.

Thread-safe for one caller at a time; every method but ``results`` (with ``reads_bytes``) returns
quickly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from node.core.requests import FetchResult

__all__ = ["FetchRead", "PendingFetch"]

FetchRead = Callable[[bool], tuple[list["FetchResult"], int, bool]]
"""Reads the fetch's partitions once, as slices (``True``) or bytes: (results, bytes, stop)."""


class PendingFetch:
    """A fetch that waits until ``min_bytes`` are available (see the module docstring)."""

    __slots__ = (
        "_as_slices",
        "_deadline_ms",
        "_min_bytes",
        "_now_ms",
        "_read",
        "_ready",
        "_shutting_down",
        "_slices",
        "_subscribe",
    )

    def __init__(
        self,
        read: FetchRead,
        subscribe: Callable[[Callable[[], None]], Callable[[], None]],
        *,
        as_slices: bool,
        min_bytes: int,
        deadline_ms: int,
        now_ms: Callable[[], int],
        shutting_down: Callable[[], bool],
    ) -> None:
        self._read = read
        self._subscribe = subscribe
        self._as_slices = as_slices
        self._min_bytes = min_bytes
        self._deadline_ms = deadline_ms
        self._now_ms = now_ms
        self._shutting_down = shutting_down
        self._ready = False
        self._slices: list[FetchResult] | None = None

    @property
    def reads_bytes(self) -> bool:
        """:meth:`results` copies the records' bytes (may take long: call it on a thread)."""
        return not self._as_slices

    def remaining_ms(self) -> int:
        """Milliseconds until the deadline (0 once passed): when :meth:`ready` must be asked
        again even if nothing woke it."""
        return max(0, self._deadline_ms - self._now_ms())

    def subscribe(self, on_wake: Callable[[], None]) -> Callable[[], None]:
        """Have ``on_wake`` called (on the notifying thread: it must not block) whenever the high
        watermark of one of the partitions moves or their state changes, until the returned
        function is called."""
        return self._subscribe(on_wake)

    def ready(self) -> bool:
        """Whether the fetch is complete: measures what is available now (slices, no bytes)."""
        if self._ready:
            return True
        results, total, stop = self._read(True)
        if stop or total >= self._min_bytes or self.remaining_ms() <= 0 or self._shutting_down():
            self._ready = True
            self._slices = results
        return self._ready

    def results(self) -> list[FetchResult]:
        """The answer, once :meth:`ready`: the measured slices, or (``reads_bytes``) the bytes
        read now, which hold at least as much unless the log moved under them (an error then
        answers that partition, as any fetch would)."""
        if not self._ready or self._slices is None:
            raise RuntimeError("the fetch is not ready")
        if self._as_slices:
            return self._slices
        return self._read(False)[0]
