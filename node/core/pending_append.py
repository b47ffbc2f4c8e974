"""An acks=-1 produce waiting for its replicas (Kafka's ``DelayedProduce``).

:meth:`ReplicaManager.start_append <node.core.replica_manager.ReplicaManager.start_append>`
appends a request's partitions and returns a :class:`PendingAppend`; its owner waits for the
answer on a thread (:meth:`PendingAppend.wait`, the gRPC door) or polls it when woken
(:meth:`PendingAppend.poll` and :meth:`PendingAppend.subscribe`, the Kafka door's event loop). A
non-blocking ``start_append`` (on that loop) may leave partitions whose append would wait for a
lock, roll a segment or flush: :meth:`PendingAppend.append_blocked`, on a request thread, appends
them before the answer is taken.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from node.core.requests import ProducePartition, ProduceResult
from node.core.wakeups import HIGH_WATERMARK
from odradek.errors import NotLeaderOrFollowerError, OdradekError, RequestTimedOutError

if TYPE_CHECKING:
    from node.core.partition import Partition
    from node.core.replica_manager import ReplicaManager

__all__ = ["PendingAppend"]

TopicPartition = tuple[str, int]


class PendingAppend:
    """Batches appended by :meth:`ReplicaManager.start_append`, and the wait for their replicas
    (Kafka's ``DelayedProduce``).

    The answer is the per-partition results: at once when nothing waits (acks 0 or 1, or every
    partition failed), else once the high watermark passes every appended batch, the leadership
    moves or the request's timeout passes. Two ways to get it, from one thread at a time:
    :meth:`wait` blocks the calling thread; :meth:`poll` never blocks, and with
    :meth:`subscribe` a caller that has no thread to spare (the Kafka door's event loop) learns
    when to poll again."""

    __slots__ = (
        "_acks",
        "_blocked",
        "_deadline",
        "_manager",
        "_outcome",
        "_required",
        "_results",
        "_timeout_ms",
        "_waiting",
    )

    def __init__(
        self,
        manager: ReplicaManager,
        results: Sequence[ProduceResult | None],
        waiting: list[tuple[int, Partition, int, int]] | None = None,
        deadline: int = 0,
        timeout_ms: int = 0,
        acks: int = 1,
        blocked: list[tuple[int, ProducePartition]] | None = None,
    ) -> None:
        self._manager = manager
        self._results = list(results)  # None where a blocked partition's result will go
        self._waiting: list[tuple[int, Partition, int, int]] = []
        self._deadline = deadline
        self._timeout_ms = timeout_ms
        self._acks = acks
        self._blocked = blocked or []
        self._outcome: dict[int, OdradekError | bool] = {}
        # the high watermark each partition must reach (a wake-up below it is held back)
        self._required: dict[TopicPartition, int] = {}
        for entry in waiting or []:
            self._wait_for(entry)

    def _wait_for(self, entry: tuple[int, Partition, int, int]) -> None:
        self._waiting.append(entry)
        _, p, offset, _ = entry
        tp = (p.topic, p.partition)
        self._required[tp] = max(offset, self._required.get(tp, offset))

    @property
    def blocked(self) -> bool:
        """Whether partitions are left to :meth:`append_blocked` (``blocking=False``)."""
        return bool(self._blocked)

    def append_blocked(self) -> None:
        """Appends the partitions a non-blocking :meth:`ReplicaManager.start_append` left out
        (this may block: a request thread's work), before the answer is polled or waited for."""
        blocked, self._blocked = self._blocked, []
        for index, data in blocked:
            result, wait = self._manager.append_one(data, self._acks, True)
            self._results[index] = result
            if wait is not None:
                self._wait_for((index, *wait))

    @property
    def waits(self) -> bool:
        """Whether the answer may have to wait (an acks=-1 append that stored something)."""
        return bool(self._waiting)

    def wait(self) -> list[ProduceResult]:
        """Block until the answer is ready, and answer it."""
        if self._waiting:
            self._manager.wait_until(
                self._replicated,
                self._deadline,
                list(self._required),
                HIGH_WATERMARK,
                self._required,
            )
        return self._answer()

    def poll(self) -> list[ProduceResult] | None:
        """The answer if it is ready now (replicated, failed, timed out, or the node shutting
        down), else ``None``. Never blocks for long (it takes each partition's lock)."""
        if (
            not self._waiting
            or self._replicated()
            or self._manager.shutting_down
            or self.remaining_ms() <= 0
        ):
            return self._answer()
        return None

    def remaining_ms(self) -> int:
        """Milliseconds until the request's timeout (0 once passed): when :meth:`poll` must be
        asked again even if nothing woke it."""
        return max(0, self._deadline - self._manager.clock.monotonic_ms())

    def subscribe(self, on_wake: Callable[[], None]) -> Callable[[], None]:
        """Have ``on_wake`` called whenever the answer may have become ready (the high
        watermark passing what a partition needs, or its leadership or ISR changing), until the
        returned function is called. ``on_wake`` runs on the notifying thread: it must not block,
        nor poll (see :meth:`node.core.wakeups.Wakeups.subscribe`)."""
        if not self._waiting:
            on_wake()
            return _nothing
        return self._manager.wakeups.subscribe(
            list(self._required), HIGH_WATERMARK, self._required, on_wake
        )

    def _replicated(self) -> bool:
        outcome = self._outcome
        for index, partition, required, term in self._waiting:
            if outcome.get(index, False) is False:
                outcome[index] = partition.check_replicated(required, term)
        return all(outcome.get(index, False) is not False for index, _, _, _ in self._waiting)

    def _answer(self) -> list[ProduceResult]:
        if self._blocked:
            raise RuntimeError("append_blocked() must run before the answer is taken")
        results = [r for r in self._results if r is not None]
        for index, partition, required, _ in self._waiting:
            result = self._outcome.get(index, False)
            error: OdradekError | None = None
            if result is False and self._manager.shutting_down:
                error = RequestTimedOutError(
                    "the node is shutting down before the high watermark passed the batch"
                )
            elif result is False:
                error = RequestTimedOutError(
                    f"the high watermark did not pass the batch within {self._timeout_ms} ms"
                )
                # what held it, for the operator: the follower that did not fetch it, or an
                # ISR below min.insync.replicas
                partition.warn_at_most_every_interval(
                    "produce timeout",
                    "an acks=-1 produce timed out after %d ms waiting for the high watermark "
                    "to reach %d: %s",
                    self._timeout_ms,
                    required,
                    partition.replication_summary(),
                )
            elif isinstance(result, OdradekError):
                error = result
            if error is not None:
                r = results[index]
                results[index] = dataclasses.replace(
                    r,
                    error_code=error.code,
                    error_message=error.message,
                    base_offset=-1
                    if isinstance(error, NotLeaderOrFollowerError)
                    else r.base_offset,
                )
        return results


def _nothing() -> None:
    pass
