"""Per-partition requests that must reach each partition's leader, with retries.

``ListOffsets`` and ``DeleteRecords`` name partitions and must be sent to their leaders.
:func:`send_to_leaders` groups the partitions by leader, sends one request per leader (all at
once), and repeats for the partitions that failed with a retriable error — refreshing the
metadata when the error says the leader moved, and backing off — until every partition has an
answer or ``timeout_ms`` has passed. It returns one result per partition: the value, or the
typed error (a non-retriable one, or the last retriable one when time ran out).

Blocking; safe to call from any thread (the metadata cache and pool are thread-safe).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import grpc

from odradek.client.connection import wait
from odradek.client.errors import error_from_code, is_invalid_metadata
from odradek.client.metadata import MetadataCache
from odradek.client.types import TopicPartition
from odradek.clock import Clock
from odradek.errors import (
    LeaderNotAvailableError,
    OdradekError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
)

__all__ = ["Answer", "LeaderTarget", "send_to_leaders"]

T = TypeVar("T")
R = TypeVar("R")
Resp = TypeVar("Resp")


@dataclass(frozen=True, slots=True)
class LeaderTarget(Generic[T]):
    """One partition of a request to a leader: what to ask, and the leader epoch the client
    knows (to send as ``current_leader_epoch``)."""

    tp: TopicPartition
    item: T
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class Answer(Generic[R]):
    """One partition of a leader's answer: its error code and message, and the value."""

    tp: TopicPartition
    error_code: int
    error_message: str
    value: R


def send_to_leaders(
    metadata: MetadataCache,
    clock: Clock,
    items: Mapping[TopicPartition, T],
    start_call: Callable[[str, list[LeaderTarget[T]]], grpc.Future[Resp]],
    answers: Callable[[Resp], Iterable[Answer[R]]],
    *,
    timeout_ms: int,
    retry_backoff_ms: int,
) -> dict[TopicPartition, R | OdradekError]:
    """Ask each partition's leader about ``items`` (see the module docstring).

    ``start_call(address, targets)`` starts the call to one leader; ``answers(response)``
    reads its per-partition answers. At least one round is made even with ``timeout_ms`` 0.
    """
    deadline = clock.monotonic_ms() + timeout_ms
    pending = dict(items)
    results: dict[TopicPartition, R | OdradekError] = {}
    settled: set[TopicPartition] = set()  # errors not worth retrying even when retriable
    if pending:
        metadata.add_topics({tp.topic for tp in pending})
    while pending:
        if not metadata.has_snapshot or metadata.time_to_update_ms(clock.monotonic_ms()) == 0:
            metadata.maybe_refresh()
        cluster = metadata.snapshot()
        by_leader: dict[str, list[LeaderTarget[T]]] = {}
        for tp, item in pending.items():
            address = cluster.leader_address(tp)
            part = cluster.partition(tp)
            if address is None or part is None:
                topic = cluster.topics.get(tp.topic)
                if topic is not None and topic.error_code == 0 and part is None:
                    # The topic is known and has no such partition: no use waiting.
                    results[tp] = UnknownTopicOrPartitionError(
                        f"{tp}: the topic has no such partition"
                    )
                    settled.add(tp)
                elif part is None:
                    results[tp] = UnknownTopicOrPartitionError(f"{tp}: unknown topic")
                else:
                    results[tp] = LeaderNotAvailableError(f"{tp}: no leader")
                metadata.request_update()
                continue
            by_leader.setdefault(address, []).append(LeaderTarget(tp, item, part.leader_epoch))
        calls = [
            (address, targets, start_call(address, targets))
            for address, targets in by_leader.items()
        ]
        for address, targets, future in calls:
            try:
                response = wait(future, address)
            except OdradekError as exc:
                for target in targets:
                    results[target.tp] = exc
                if exc.retriable:
                    metadata.request_update()
                continue
            answered = set()
            for answer in answers(response):
                if answer.tp not in pending:
                    continue
                answered.add(answer.tp)
                if answer.error_code == 0:
                    results[answer.tp] = answer.value
                else:
                    error = error_from_code(answer.error_code, answer.error_message, str(answer.tp))
                    results[answer.tp] = error
                    if is_invalid_metadata(error):
                        metadata.request_update()
            for target in targets:
                if target.tp not in answered:
                    results[target.tp] = error_from_code(
                        -1, "the leader's answer has no result for it", str(target.tp)
                    )
        pending = {
            tp: item
            for tp, item in pending.items()
            if tp not in settled and _retriable(results.get(tp))
        }
        remaining = deadline - clock.monotonic_ms()
        if not pending or remaining <= 0:
            break
        time.sleep(min(retry_backoff_ms, remaining) / 1000)
    for tp in pending:
        last = results.get(tp)
        if not isinstance(last, OdradekError):  # pragma: no cover - pending means an error
            results[tp] = RequestTimedOutError(f"{tp}: no answer within {timeout_ms} ms")
    return results


def _retriable(result: object) -> bool:
    return isinstance(result, OdradekError) and result.retriable
