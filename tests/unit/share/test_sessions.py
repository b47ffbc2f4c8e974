"""Share sessions: Kafka's epoch rules for ShareFetch and ShareAcknowledge (node.share.sessions)."""

from __future__ import annotations

from node.share.sessions import ShareSessions
from odradek.clock import ManualClock

INVALID_REQUEST = 42
NOT_FOUND = 122
BAD_EPOCH = 123
LIMIT = 133
P0, P1 = ("tid", 0), ("tid", 1)


def test_zero_opens_then_each_epoch_in_turn() -> None:
    s = ShareSessions(10)
    assert s.for_fetch("g", "m", 0, [P0], [], has_acknowledgements=False) == (0, [P0])
    assert s.for_fetch("g", "m", 1, [P1], [], has_acknowledgements=False) == (0, [P0, P1])
    assert s.for_fetch("g", "m", 2, [], [P0], has_acknowledgements=True) == (0, [P1])
    assert s.for_fetch("g", "m", 2, [], [], has_acknowledgements=False) == (BAD_EPOCH, [])
    assert s.for_acknowledge("g", "m", 3) == 0
    assert s.for_fetch("g", "m", 4, [], [], has_acknowledgements=False) == (0, [P1])


def test_zero_replaces_a_session_and_refuses_acknowledgements() -> None:
    s = ShareSessions(1)
    s.for_fetch("g", "m", 0, [P0], [], has_acknowledgements=False)
    assert s.for_fetch("g", "m", 0, [P1], [], has_acknowledgements=False) == (0, [P1])
    assert s.for_fetch("g", "m", 0, [P1], [], has_acknowledgements=True) == (INVALID_REQUEST, [])


def test_without_a_session() -> None:
    s = ShareSessions(10)
    assert s.for_fetch("g", "m", 1, [P0], [], has_acknowledgements=False) == (NOT_FOUND, [])
    assert s.for_fetch("g", "m", -1, [], [], has_acknowledgements=False) == (NOT_FOUND, [])
    assert s.for_acknowledge("g", "m", 1) == NOT_FOUND
    assert s.for_acknowledge("g", "m", -1) == NOT_FOUND
    assert s.for_acknowledge("g", "m", 0) == BAD_EPOCH


def test_minus_one_closes() -> None:
    s = ShareSessions(10)
    s.for_fetch("g", "m", 0, [P0], [], has_acknowledgements=False)
    assert s.for_acknowledge("g", "m", -1) == 0
    assert s.get("g", "m") is None
    s.for_fetch("g", "m", 0, [P0], [], has_acknowledgements=False)
    assert s.for_fetch("g", "m", -1, [P0], [], has_acknowledgements=True) == (0, [])
    assert len(s) == 0


def test_the_session_limit() -> None:
    s = ShareSessions(1)
    assert s.for_fetch("g", "a", 0, [P0], [], has_acknowledgements=False)[0] == 0
    assert s.for_fetch("g", "b", 0, [P0], [], has_acknowledgements=False) == (LIMIT, [])
    assert s.remove_member("g", "a")
    assert s.for_fetch("g", "b", 0, [P0], [], has_acknowledgements=False)[0] == 0


def test_a_full_cache_evicts_the_least_recently_used_idle_session() -> None:
    clock = ManualClock()
    s = ShareSessions(2, clock, lambda group: 1000 if group == "g" else 10**9)
    s.for_fetch("g", "a", 0, [P0], [], has_acknowledgements=False)
    s.for_fetch("h", "b", 0, [P0], [], has_acknowledgements=False)
    clock.advance(1000)
    assert s.for_fetch("g", "c", 0, [P0], [], has_acknowledgements=False) == (LIMIT, [])
    clock.advance(1)
    assert s.for_fetch("h", "b", 1, [], [], has_acknowledgements=False)[0] == 0  # used: kept
    assert s.for_fetch("g", "c", 0, [P0], [], has_acknowledgements=False)[0] == 0
    assert s.get("g", "a") is None and s.take_evicted() == [("g", "a")]
    assert s.take_evicted() == []
