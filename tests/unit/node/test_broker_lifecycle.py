"""node.broker_lifecycle.LeaderLease: when a broker may still act as leader."""

from __future__ import annotations

from node.broker_lifecycle import LeaderLease
from odradek.clock import ManualClock

LEASE, STALL = 750, 525  # session timeout; heartbeat interval 150 + attempt timeout 375


def answered(lease: LeaderLease, clock: ManualClock, rtt: int = 5, fenced: bool = False) -> None:
    sent = clock.monotonic_ms()
    clock.advance(rtt)
    lease.attempted(sent, clock.monotonic_ms(), answered=True, fenced=fenced)


def failed(lease: LeaderLease, clock: ManualClock, duration: int = 5) -> None:
    sent = clock.monotonic_ms()
    clock.advance(duration)
    lease.attempted(sent, clock.monotonic_ms(), answered=False, fenced=False)


def test_answered_heartbeats_keep_the_lease() -> None:
    clock = ManualClock()
    lease = LeaderLease(LEASE, STALL, clock.monotonic_ms())
    for _ in range(20):
        answered(lease, clock)
        clock.advance(145)
        assert lease.may_lead(clock.monotonic_ms())


def test_fenced_answers_end_leadership_until_unfenced() -> None:
    clock = ManualClock()
    lease = LeaderLease(LEASE, STALL, clock.monotonic_ms())
    answered(lease, clock, fenced=True)
    assert not lease.may_lead(clock.monotonic_ms()) and lease.fenced
    clock.advance(150)
    answered(lease, clock)
    assert lease.may_lead(clock.monotonic_ms())


def test_a_controller_that_is_gone_does_not_end_leadership() -> None:
    # heartbeats go out on time and reach no controller (killed; the next one not yet elected)
    clock = ManualClock()
    lease = LeaderLease(LEASE, STALL, clock.monotonic_ms())
    answered(lease, clock)
    for _ in range(60):
        clock.advance(145)
        failed(lease, clock, duration=375)  # an unanswered attempt times out
        assert lease.may_lead(clock.monotonic_ms())


def test_a_pause_longer_than_the_stall_limit_ends_leadership_until_answered() -> None:
    clock = ManualClock()
    lease = LeaderLease(LEASE, STALL, clock.monotonic_ms())
    answered(lease, clock)
    clock.advance(2_000)  # SIGSTOP: nothing ran, the controller fenced this broker meanwhile
    assert not lease.may_lead(clock.monotonic_ms())
    failed(lease, clock)  # the first attempt after it reaches nobody: still stood still
    assert not lease.may_lead(clock.monotonic_ms())
    answered(lease, clock, fenced=True)
    assert not lease.may_lead(clock.monotonic_ms())
    answered(lease, clock)
    assert lease.may_lead(clock.monotonic_ms())


def test_a_pause_within_the_lease_after_an_answer_keeps_leadership() -> None:
    clock = ManualClock()
    lease = LeaderLease(LEASE, STALL, clock.monotonic_ms())
    answered(lease, clock)
    clock.advance(600)  # the controller's session, counted from the arrival, still runs
    assert lease.may_lead(clock.monotonic_ms())
    clock.advance(150)
    assert not lease.may_lead(clock.monotonic_ms())


def test_a_pause_during_an_attempt_counts_as_a_stall() -> None:
    clock = ManualClock()
    lease = LeaderLease(LEASE, STALL, clock.monotonic_ms())
    answered(lease, clock)
    clock.advance(140)
    failed(lease, clock, duration=3_000)  # paused while waiting; the deadline fired after
    assert not lease.may_lead(clock.monotonic_ms())
    # and a late answer, given before the pause, says nothing of the time after it
    clock.advance(10)
    answered(lease, clock, rtt=3_000)
    assert not lease.may_lead(clock.monotonic_ms())
    answered(lease, clock)
    assert lease.may_lead(clock.monotonic_ms())


def test_no_lease_always_leads() -> None:
    clock = ManualClock()
    lease = LeaderLease(0, STALL, clock.monotonic_ms())
    clock.advance(100_000)
    assert lease.may_lead(clock.monotonic_ms())
