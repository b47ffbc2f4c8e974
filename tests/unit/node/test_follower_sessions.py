"""A leader drops a follower from the ISR once it is clearly gone: its fetch sessions broke and
none came back (a killed process), or it went silent after its next fetch was due (a hung
one) — and never acknowledges an acks=-1 write before the smaller ISR is committed."""

from __future__ import annotations

import pytest

from node.core.follower_sessions import (
    FollowerSessions,
    disconnected_replicas,
    session_lost_grace_ms,
)
from node.core.replication_rules import FollowerFetchState
from odradek.clock import ManualClock
from odradek.errors import NotEnoughReplicasError
from tests.unit.node.test_replica_manager import _follower_fetch, _lead, _produce

# -- the pure rule ----------------------------------------------------------------------------


def _disconnected(
    lost_at: dict[int, int],
    now_ms: int,
    *,
    last_fetch_ms: int = 1_000,
    leader_since_ms: int = 0,
    grace_ms: int = 400,
) -> set[int]:
    return disconnected_replicas(
        leader_id=0,
        isr={0, 1, 2},
        followers={r: FollowerFetchState(last_fetch_ms=last_fetch_ms) for r in (0, 1, 2)},
        lost_at=lost_at,
        leader_since_ms=leader_since_ms,
        now_ms=now_ms,
        grace_ms=grace_ms,
    )


def test_a_follower_whose_sessions_broke_is_disconnected_after_the_grace():
    assert _disconnected({1: 2_000}, 2_400) == set()  # still within its grace
    assert _disconnected({1: 2_000}, 2_401) == {1}
    assert _disconnected({0: 2_000, 1: 2_000}, 9_999) == {1}  # never the leader itself


def test_a_fetch_after_the_break_or_a_break_before_the_leadership_does_not_count():
    # it fetched again (on a new session, or a plain Fetch) after its session ended
    assert _disconnected({1: 2_000}, 9_999, last_fetch_ms=2_050) == set()
    # its session here ended before this node became leader: it may still be on its way
    assert _disconnected({1: 2_000}, 9_999, leader_since_ms=2_001) == set()


def test_the_rule_is_off_with_no_grace():
    assert _disconnected({1: 2_000}, 99_999, grace_ms=0) == set()


def test_the_grace_is_twice_the_fetch_backoff_at_most_the_silence_limit():
    assert session_lost_grace_ms(silence_max_ms=1_000, fetch_backoff_ms=200) == 400
    assert session_lost_grace_ms(silence_max_ms=300, fetch_backoff_ms=200) == 300
    assert session_lost_grace_ms(silence_max_ms=0, fetch_backoff_ms=200) == 0  # off


# -- the session counts -----------------------------------------------------------------------


def test_a_follower_is_lost_only_when_its_last_session_ends(clock: ManualClock):
    sessions = FollowerSessions(clock)
    sessions.opened(1)
    sessions.opened(1)  # a replacement opened before the old one ended
    clock.advance(10)
    sessions.closed(1)
    assert sessions.lost_at() == {}
    clock.advance(10)
    sessions.closed(1)
    lost = clock.monotonic_ms()
    assert sessions.lost_at() == {1: lost}
    assert sessions.grace_ends_between(lost, lost + 401, 400)
    assert not sessions.grace_ends_between(lost + 401, lost + 900, 400)
    sessions.opened(1)  # back
    assert sessions.lost_at() == {}


def test_the_ticker_is_told_when_a_followers_fetches_have_been_silent_long_enough(
    clock: ManualClock,
):
    sessions = FollowerSessions(clock)
    sessions.fetched(1)
    at = clock.monotonic_ms()
    # silent 1000 ms after its last fetch (answered with data), or 1000 after the long poll
    assert sessions.silence_ends_between(at + 900, at + 1_001, 1_000, 500)
    assert sessions.silence_ends_between(at + 1_400, at + 1_501, 1_000, 500)
    assert not sessions.silence_ends_between(at + 1_001, at + 1_400, 1_000, 500)
    assert not sessions.silence_ends_between(at + 1_501, at + 9_000, 1_000, 500)
    clock.advance(200)
    sessions.answered_with_data(1)  # its long poll ended with records at + 200
    assert sessions.silence_ends_between(at + 1_100, at + 1_201, 1_000, 500)


def test_closing_a_session_that_was_never_opened_is_refused(clock: ManualClock):
    with pytest.raises(ValueError, match="no open fetch session"):
        FollowerSessions(clock).closed(3)


# -- in the replica manager -------------------------------------------------------------------


@pytest.fixture
def manager(replica_manager):
    return replica_manager


def test_the_defaults_turn_both_rules_on(manager):
    assert manager.config.replica_fetch_silence_max_ms == 800
    assert manager.session_lost_grace_ms == 400


def test_a_killed_follower_leaves_the_isr_and_acks_wait_for_the_commit(manager, clock):
    partition = _lead(manager)
    _produce(manager, 1, count=3)
    for replica in (1, 2):
        manager.follower_sessions.opened(replica)
        _follower_fetch(manager, replica, 3)
    assert partition.log.high_watermark == 3
    # replica 2 dies: its session breaks; a write arrives that only 1 fetches
    clock.advance(100)
    manager.follower_sessions.closed(2)
    _produce(manager, 1, count=2)
    _follower_fetch(manager, 1, 5)
    assert partition.log.high_watermark == 3  # 2 is still in the ISR: nothing is acked past it
    clock.advance(400)
    assert partition.maybe_shrink_isr() is None  # within its grace: a replaced session
    clock.advance(1)
    change = partition.maybe_shrink_isr()
    assert change is not None and change.new_isr == (0, 1)
    # until the controller commits the smaller ISR, 2 still holds the high watermark
    partition.maybe_increment_high_watermark()
    assert partition.log.high_watermark == 3
    partition.complete_isr_change(
        change, error=None, isr=change.new_isr, leader_epoch=0, partition_epoch=1
    )
    assert partition.log.high_watermark == 5
    assert partition.isr == {0, 1}


def test_a_follower_back_on_a_new_session_stays(manager, clock):
    partition = _lead(manager)
    _produce(manager, 1, count=3)
    for replica in (1, 2):
        manager.follower_sessions.opened(replica)
        _follower_fetch(manager, replica, 3)
    manager.follower_sessions.closed(2)  # a failed fetch: it waits out its backoff
    clock.advance(200)
    manager.follower_sessions.opened(2)
    _follower_fetch(manager, 2, 3)
    clock.advance(900)
    for replica in (1, 2):  # both keep fetching (held in the long poll, nothing new)
        _follower_fetch(manager, replica, 3)
    clock.advance(900)
    assert partition.maybe_shrink_isr() is None


def test_a_long_poll_answered_with_data_makes_the_next_fetch_due(manager, clock):
    partition = _lead(manager)
    _produce(manager, 1, count=3)
    for replica in (1, 2):
        _follower_fetch(manager, replica, 3)  # caught up: held in the long poll
    clock.advance(100)
    _produce(manager, 1, count=2)
    # the held fetch of 2 ends with the new records (a re-read that does not update its state)
    partition.read_for_follower(
        replica_id=2,
        fetch_offset=3,
        max_bytes=1 << 20,
        current_leader_epoch=0,
        last_fetched_epoch=0,
        follower_log_start_offset=0,
        update_state=False,
    )
    _follower_fetch(manager, 1, 5)
    clock.advance(manager.config.replica_fetch_silence_max_ms)
    assert partition.maybe_shrink_isr() is None
    clock.advance(1)  # 2 never came back for more: silent since the answer, not the fetch
    change = partition.maybe_shrink_isr()
    assert change is not None and change.new_isr == (0, 1)


def test_a_hung_follower_leaves_the_isr_after_its_silence(manager, clock):
    partition = _lead(manager)
    _produce(manager, 1, count=3)
    for replica in (1, 2):
        _follower_fetch(manager, replica, 0)  # answered with the 3 records: due again at once
    clock.advance(manager.config.replica_fetch_silence_max_ms)
    _follower_fetch(manager, 1, 3)
    assert partition.maybe_shrink_isr() is None
    clock.advance(1)
    change = partition.maybe_shrink_isr()
    assert change is not None and change.new_isr == (0, 1)


def test_a_shrink_below_min_insync_replicas_refuses_acks_all(manager, clock):
    partition = _lead(manager, min_isr="2")
    _produce(manager, 1, count=3)
    for replica in (1, 2):
        manager.follower_sessions.opened(replica)
        _follower_fetch(manager, replica, 3)
        manager.follower_sessions.closed(replica)
    clock.advance(401)
    change = partition.maybe_shrink_isr()
    assert change is not None and change.new_isr == (0,)
    partition.complete_isr_change(
        change, error=None, isr=change.new_isr, leader_epoch=0, partition_epoch=1
    )
    [r] = _produce(manager, -1, count=1)
    assert r.error_code == NotEnoughReplicasError.code
    # nothing written with acks=1 meanwhile becomes visible either (Kafka 3.7's rule)
    [r] = _produce(manager, 1, count=1)
    assert r.error_code == 0 and partition.log.high_watermark == 3
