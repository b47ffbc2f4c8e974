"""controller.broker_sessions: the brokers' heartbeat sessions, fencing and unfencing."""

from __future__ import annotations

import pytest

from controller.broker_sessions import BrokerSessions, HeartbeatOutcome
from odradek.clock import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


def sessions_for(clock: ManualClock, timeout_ms: int = 750) -> BrokerSessions:
    """Sessions of brokers 0, 1 and 2, each heard from once at the clock's time."""
    s = BrokerSessions(timeout_ms)
    s.reset({0: 10, 1: 11, 2: 12}, clock.monotonic_ms())
    for broker, epoch in ((0, 10), (1, 11), (2, 12)):
        assert s.heartbeat(broker, epoch, clock.monotonic_ms()) is HeartbeatOutcome.ACTIVE
    return s


def test_a_broker_silent_for_the_session_timeout_is_fenced_once(clock: ManualClock) -> None:
    s = sessions_for(clock)
    clock.advance(400)
    assert s.heartbeat(0, 10, clock.monotonic_ms()) is HeartbeatOutcome.ACTIVE
    assert s.heartbeat(1, 11, clock.monotonic_ms()) is HeartbeatOutcome.ACTIVE
    clock.advance(349)
    assert s.expire(clock.monotonic_ms()) == []
    clock.advance(1)
    assert s.expire(clock.monotonic_ms()) == [2]
    assert s.fenced() == {2} and s.is_fenced(2)
    assert s.expire(clock.monotonic_ms()) == []  # fenced once
    clock.advance(400)
    assert s.expire(clock.monotonic_ms()) == [0, 1]


def test_next_expiry_is_the_earliest_unfenced_session_end(clock: ManualClock) -> None:
    s = sessions_for(clock)
    clock.advance(100)
    s.heartbeat(0, 10, clock.monotonic_ms())
    s.heartbeat(1, 11, clock.monotonic_ms())
    assert s.next_expiry_ms() == 750
    clock.advance(650)
    s.expire(clock.monotonic_ms())
    assert s.next_expiry_ms() == 850


def test_a_fenced_broker_is_unfenced_in_two_steps(clock: ManualClock) -> None:
    s = sessions_for(clock)
    clock.advance(800)
    assert s.expire(clock.monotonic_ms()) == [0, 1, 2]
    # heard again: the caller must take it back in; it is answered fenced meanwhile
    assert s.heartbeat(2, 12, clock.monotonic_ms()) is HeartbeatOutcome.UNFENCE
    assert s.heartbeat(2, 12, clock.monotonic_ms()) is HeartbeatOutcome.FENCED
    assert s.is_fenced(2)
    assert s.unfence(2)
    assert not s.is_fenced(2)
    assert s.heartbeat(2, 12, clock.monotonic_ms()) is HeartbeatOutcome.ACTIVE
    assert not s.unfence(1)  # never asked


def test_an_unfencing_broker_that_falls_silent_again_stays_fenced(clock: ManualClock) -> None:
    s = sessions_for(clock)
    clock.advance(800)
    s.expire(clock.monotonic_ms())
    assert s.heartbeat(2, 12, clock.monotonic_ms()) is HeartbeatOutcome.UNFENCE
    clock.advance(750)
    assert s.expire(clock.monotonic_ms()) == []  # already fenced
    assert not s.unfence(2)
    assert s.is_fenced(2)
    assert s.heartbeat(2, 12, clock.monotonic_ms()) is HeartbeatOutcome.UNFENCE


def test_other_registrations_are_stale(clock: ManualClock) -> None:
    s = sessions_for(clock)
    assert s.heartbeat(0, 9, clock.monotonic_ms()) is HeartbeatOutcome.STALE
    # a re-registration the controller has not read yet
    assert s.heartbeat(0, 13, clock.monotonic_ms()) is HeartbeatOutcome.STALE
    assert s.heartbeat(7, 1, clock.monotonic_ms()) is HeartbeatOutcome.STALE
    clock.advance(800)
    assert s.expire(clock.monotonic_ms()) == [0, 1, 2]  # stale heartbeats keep nothing alive


def test_sync_follows_registrations(clock: ManualClock) -> None:
    s = sessions_for(clock)
    clock.advance(800)
    s.expire(clock.monotonic_ms())
    # 0 restarted (larger epoch): a fresh unfenced session; 1 deregistered; 3 is new
    s.sync({0: 20, 2: 12, 3: 30}, clock.monotonic_ms())
    assert s.fenced() == {2}
    assert s.heartbeat(0, 20, clock.monotonic_ms()) is HeartbeatOutcome.ACTIVE
    assert s.heartbeat(1, 11, clock.monotonic_ms()) is HeartbeatOutcome.STALE
    assert s.heartbeat(3, 30, clock.monotonic_ms()) is HeartbeatOutcome.ACTIVE


def test_a_new_controller_fences_no_broker_by_its_session_before_hearing_from_it(
    clock: ManualClock,
) -> None:
    # A broker learns the new controller from its UpdateMetadata: on a loaded machine that may
    # take longer than a session, and a broker fenced meanwhile would never be sent it
    s = sessions_for(clock)
    clock.advance(700)
    s.reset({0: 10, 1: 11}, clock.monotonic_ms())
    assert s.next_expiry_ms() is None
    clock.advance(5_000)
    assert s.expire(clock.monotonic_ms()) == []
    s.heartbeat(0, 10, clock.monotonic_ms())  # 0 heard: its session runs from now
    clock.advance(749)
    assert s.expire(clock.monotonic_ms()) == []
    clock.advance(1)
    assert s.expire(clock.monotonic_ms()) == [0]


def test_a_new_controller_probes_the_brokers_it_has_not_heard_from(clock: ManualClock) -> None:
    # the dead controller's own node, still registered: probed, and fenced if nothing listens
    s = BrokerSessions(750)
    s.reset({0: 10, 1: 11}, clock.monotonic_ms())
    assert s.next_suspect_ms(200) == 200
    clock.advance(200)
    assert s.suspects(clock.monotonic_ms(), 200) == [(0, 10), (1, 11)]
    s.heartbeat(1, 11, clock.monotonic_ms())
    assert s.fence_dead(0, 10)
    assert not s.fence_dead(1, 11)  # heard from since it was probed
    assert s.fenced() == {0}


def test_sessions_off_never_fence(clock: ManualClock) -> None:
    s = sessions_for(clock, timeout_ms=0)
    clock.advance(1_000_000)
    assert s.expire(clock.monotonic_ms()) == []
    assert s.next_expiry_ms() is None
    with pytest.raises(ValueError):
        BrokerSessions(-1)


def test_a_silent_broker_is_a_suspect_once_per_silence(clock: ManualClock) -> None:
    s = sessions_for(clock)
    assert s.next_suspect_ms(200) == 200
    clock.advance(150)
    s.heartbeat(0, 10, clock.monotonic_ms())
    s.heartbeat(1, 11, clock.monotonic_ms())
    clock.advance(50)
    assert s.suspects(clock.monotonic_ms(), 200) == [(2, 12)]
    assert s.suspects(clock.monotonic_ms(), 200) == []  # probed once
    assert s.next_suspect_ms(200) == 350
    s.heartbeat(2, 12, clock.monotonic_ms())  # heard again: a later silence is probed anew
    clock.advance(200)
    assert s.suspects(clock.monotonic_ms(), 200) == [(0, 10), (1, 11), (2, 12)]


def test_a_suspect_found_dead_is_fenced_at_once_unless_heard_from(clock: ManualClock) -> None:
    s = sessions_for(clock)
    clock.advance(200)
    assert s.suspects(clock.monotonic_ms(), 200) == [(0, 10), (1, 11), (2, 12)]
    s.heartbeat(1, 11, clock.monotonic_ms())  # it answered meanwhile: alive after all
    assert not s.fence_dead(1, 11)
    assert not s.fence_dead(2, 11)  # another registration
    assert s.fence_dead(2, 12)
    assert s.fenced() == {2}
    assert not s.fence_dead(2, 12)  # already
    assert s.fence_dead(0, 10)
    assert s.fenced() == {0, 2}
    clock.advance(750)
    assert s.expire(clock.monotonic_ms()) == [1]  # 0 and 2 are fenced already


def test_a_new_registration_is_not_fenced_before_its_first_heartbeat(clock: ManualClock) -> None:
    s = sessions_for(clock)
    s.sync({0: 10, 1: 11, 2: 12, 3: 30}, clock.monotonic_ms())  # 3 registers
    clock.advance(5_000)  # a slow start: it has not heartbeated yet
    # probed (its listener is open before it registers: only a dead one is refused)
    assert s.suspects(clock.monotonic_ms(), 200) == [(0, 10), (1, 11), (2, 12), (3, 30)]
    assert s.expire(clock.monotonic_ms()) == [0, 1, 2]
    assert not s.is_fenced(3)
    assert s.heartbeat(3, 30, clock.monotonic_ms()) is HeartbeatOutcome.ACTIVE
    assert s.next_expiry_ms() == clock.monotonic_ms() + 750
    clock.advance(750)
    assert s.expire(clock.monotonic_ms()) == [3]  # heard once, then silent for a session
