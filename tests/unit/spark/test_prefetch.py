"""The Spark reader's one fetch ahead: taken only when the read asks for exactly it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from odradek.client.types import TopicPartition
from odradek.spark.reader import _Fetch, _Prefetch


class FakeFuture:
    def __init__(self, request: Any) -> None:
        self.request = request
        self.was_cancelled = False

    def cancel(self) -> bool:
        self.was_cancelled = True
        return True


def fake_client() -> tuple[Any, list[FakeFuture]]:
    sent: list[FakeFuture] = []

    def future(request: Any, timeout: float) -> FakeFuture:
        sent.append(FakeFuture(request))
        return sent[-1]

    broker = SimpleNamespace(Fetch=SimpleNamespace(future=future))
    return SimpleNamespace(pool=SimpleNamespace(broker=lambda address: broker)), sent


TP = TopicPartition("t", 0)
AHEAD = _Fetch(TP, 100, "a:1", 3, 1 << 20, False)


def test_the_fetch_sent_ahead_is_taken_when_asked_for():
    client, sent = fake_client()
    prefetch = _Prefetch(client)
    prefetch.start(AHEAD)
    got: Any = prefetch.take(_Fetch(TP, 100, "a:1", 3, 1 << 20, False))
    assert got is sent[0] and len(sent) == 1 and not got.was_cancelled
    request = sent[0].request
    assert request.partitions[0].fetch_offset == 100
    assert request.partitions[0].current_leader_epoch == 3
    # Taken once only: the next ask sends a new fetch.
    again: Any = prefetch.take(AHEAD)
    assert again is sent[1]


def test_a_different_fetch_cancels_the_one_sent_ahead():
    client, sent = fake_client()
    prefetch = _Prefetch(client)
    for other in (AHEAD._replace(offset=99), AHEAD._replace(address="b:2")):
        prefetch.start(AHEAD)
        got: Any = prefetch.take(other)
        assert got is sent[-1] and not got.was_cancelled
        assert sent[-2].was_cancelled
    prefetch.start(AHEAD)
    prefetch.cancel()
    assert sent[-1].was_cancelled
