"""The pure replication rules, with the cases of Kafka's PartitionTest and fetcher tests."""

import dataclasses
from typing import Any

from node.core import replication_rules as rules
from node.core.replication_rules import FollowerFetchState
from odradek.errors import FencedLeaderEpochError, UnknownLeaderEpochError

LAG = 30_000


def test_fetch_at_the_leaders_leo_is_caught_up_now():
    s = rules.update_follower_fetch_state(
        FollowerFetchState(), fetch_offset=10, log_start_offset=0, leader_leo=10, now_ms=500
    )
    assert (s.log_end_offset, s.last_caught_up_ms) == (10, 500)


def test_previous_fetch_leo_keeps_a_follower_of_a_busy_partition_in_sync():
    # Kafka's testShouldNotShrinkIsrIfPreviousFetchIsCaughtUp
    s = rules.update_follower_fetch_state(
        FollowerFetchState(), fetch_offset=5, log_start_offset=0, leader_leo=10, now_ms=1_000
    )
    assert s.last_caught_up_ms == rules.NEVER_MS
    s = rules.update_follower_fetch_state(
        s, fetch_offset=10, log_start_offset=0, leader_leo=15, now_ms=2_000
    )
    assert s.last_caught_up_ms == 1_000  # caught up to what the leader had at the last fetch
    s = rules.update_follower_fetch_state(
        s, fetch_offset=12, log_start_offset=0, leader_leo=20, now_ms=3_000
    )
    assert s.last_caught_up_ms == 1_000  # 12 < 15: not caught up as of the previous fetch


def test_shrink_after_the_lag_limit():
    # Kafka's testMaybeShrinkIsr: no fetch from replica 2 for 30001 ms
    followers = {
        1: FollowerFetchState(log_end_offset=10, last_caught_up_ms=30_001),
        2: FollowerFetchState(log_end_offset=5, last_caught_up_ms=0),
        3: FollowerFetchState(),  # never fetched
    }
    out = rules.out_of_sync_replicas(
        leader_id=0,
        isr={0, 1, 2, 3},
        followers=followers,
        leader_leo=10,
        now_ms=30_001,
        replica_lag_time_max_ms=LAG,
    )
    assert out == {2, 3}
    at_limit = rules.out_of_sync_replicas(
        leader_id=0,
        isr={0, 1, 2},
        followers=followers,
        leader_leo=10,
        now_ms=30_000,
        replica_lag_time_max_ms=LAG,
    )
    assert at_limit == set()


def test_high_watermark_is_the_smallest_leo_of_the_maximal_isr():
    followers = {
        1: FollowerFetchState(log_end_offset=7, last_caught_up_ms=0),
        2: FollowerFetchState(log_end_offset=3, last_caught_up_ms=0),
    }
    common: dict[str, Any] = {
        "leader_id": 0,
        "leader_leo": 10,
        "followers": followers,
        "now_ms": 100_000,
    }
    assert (
        rules.high_watermark_candidate(
            maximal_isr={0, 1, 2}, eligible={1, 2}, replica_lag_time_max_ms=LAG, **common
        )
        == 3
    )
    # replica 2 out of the ISR and not caught up: it does not hold the HW back
    assert (
        rules.high_watermark_candidate(
            maximal_isr={0, 1}, eligible={1, 2}, replica_lag_time_max_ms=LAG, **common
        )
        == 7
    )
    # an unknown LEO (-1) of an ISR member holds it
    followers[1] = FollowerFetchState()
    assert (
        rules.high_watermark_candidate(
            maximal_isr={0, 1}, eligible={1, 2}, replica_lag_time_max_ms=LAG, **common
        )
        == -1
    )


def test_high_watermark_never_moves_back_nor_under_min_isr():
    assert rules.next_high_watermark(current=5, candidate=3, isr_size=3, min_isr=2) == 5
    assert rules.next_high_watermark(current=5, candidate=9, isr_size=3, min_isr=2) == 9
    # Kafka 3.7's testHighWatermarkAdvanceShouldNotAdvanceWhenUnderMinISR
    assert rules.next_high_watermark(current=5, candidate=9, isr_size=1, min_isr=2) == 5
    assert rules.effective_min_isr(3, 2) == 2


def test_isr_expansion_needs_the_hw_and_the_epoch_start():
    # Kafka's testFollowerDoesNotJoinISRUntilCaughtUpToOffsetWithinCurrentLeaderEpoch
    args: dict[str, Any] = {"replica_id": 2, "isr": {0, 1}, "eligible": {1, 2}}
    assert not rules.can_join_isr(
        follower_leo=8, high_watermark=8, leader_epoch_start_offset=10, **args
    )
    assert not rules.can_join_isr(
        follower_leo=9, high_watermark=10, leader_epoch_start_offset=5, **args
    )
    assert rules.can_join_isr(
        follower_leo=10, high_watermark=10, leader_epoch_start_offset=10, **args
    )
    assert not rules.can_join_isr(
        follower_leo=10,
        high_watermark=10,
        leader_epoch_start_offset=10,
        replica_id=2,
        isr={0, 1},
        eligible={1},  # shutting down or dead
    )


def test_epoch_fencing():
    assert rules.check_leader_epoch(-1, 5) is None
    assert rules.check_leader_epoch(5, 5) is None
    assert isinstance(rules.check_leader_epoch(4, 5), FencedLeaderEpochError)
    assert isinstance(rules.check_leader_epoch(6, 5), UnknownLeaderEpochError)


def test_leader_answers_a_diverging_epoch():
    # Kafka's testLastFetchedOffsetValidation
    assert (
        rules.diverging_epoch(last_fetched_epoch=3, fetch_offset=20, leader_end_for_epoch=(3, 25))
        is None
    )
    assert rules.diverging_epoch(
        last_fetched_epoch=3, fetch_offset=20, leader_end_for_epoch=(3, 15)
    ) == (3, 15)
    assert rules.diverging_epoch(
        last_fetched_epoch=4, fetch_offset=20, leader_end_for_epoch=(2, 15)
    ) == (2, 15)
    assert (
        rules.diverging_epoch(last_fetched_epoch=-1, fetch_offset=20, leader_end_for_epoch=(-1, -1))
        is None
    )


def test_follower_truncation_cases():
    # the follower knows the leader's epoch: cut at the smaller end
    s = rules.follower_truncation(
        leader_epoch=2,
        leader_end_offset=15,
        follower_end_for_leader_epoch=(2, 18),
        follower_leo=20,
        follower_high_watermark=10,
    )
    assert s == rules.TruncationState(15, True)
    # it does not: cut at its own end for the largest earlier epoch, and ask again
    s = rules.follower_truncation(
        leader_epoch=3,
        leader_end_offset=15,
        follower_end_for_leader_epoch=(2, 12),
        follower_leo=20,
        follower_high_watermark=10,
    )
    assert s == rules.TruncationState(12, False)
    # the leader knows nothing of it: back to the high watermark
    s = rules.follower_truncation(
        leader_epoch=-1,
        leader_end_offset=-1,
        follower_end_for_leader_epoch=(-1, -1),
        follower_leo=20,
        follower_high_watermark=10,
    )
    assert s == rules.TruncationState(10, True)
    # never beyond the follower's own LEO
    s = rules.follower_truncation(
        leader_epoch=2,
        leader_end_offset=50,
        follower_end_for_leader_epoch=(2, 20),
        follower_leo=20,
        follower_high_watermark=10,
    )
    assert s.offset == 20


def test_a_follower_silent_past_the_limit_leaves_the_isr_when_the_rule_is_on():
    # 1 fetched at 10_000 and was answered with data (its fetch offset 5 < the leader's LEO 9):
    # its next fetch was due at once
    answered = rules.update_follower_fetch_state(
        FollowerFetchState(), fetch_offset=5, log_start_offset=0, leader_leo=9, now_ms=10_000
    )
    assert answered.data_answered_ms == 10_000
    never = FollowerFetchState()  # no fetch since this leadership began

    def silent(now_ms: int, silence_max_ms: int = 1_500) -> set[int]:
        return rules.silent_replicas(
            leader_id=0,
            isr={0, 1, 2},
            followers={0: answered, 1: answered, 2: never},
            now_ms=now_ms,
            silence_max_ms=silence_max_ms,
            fetch_wait_max_ms=500,
        )

    assert silent(11_500) == set()
    # the leader itself never counts; 2 has not fetched in this leadership: the lag rule's
    assert silent(11_501) == {1}
    assert silent(99_999, silence_max_ms=0) == set()  # off: Kafka's lag rule alone


def test_a_follower_waiting_in_a_long_poll_is_not_silent():
    # 1 fetched at the leader's LEO: the leader may hold its fetch for fetch_wait_max_ms, so
    # its next fetch is due only then
    waiting = rules.update_follower_fetch_state(
        FollowerFetchState(), fetch_offset=9, log_start_offset=0, leader_leo=9, now_ms=10_000
    )

    def silent(now_ms: int, state: FollowerFetchState = waiting) -> set[int]:
        return rules.silent_replicas(
            leader_id=0,
            isr={0, 1},
            followers={1: state},
            now_ms=now_ms,
            silence_max_ms=1_000,
            fetch_wait_max_ms=500,
        )

    assert silent(11_500) == set()
    assert silent(11_501) == {1}
    # data came at 10_100 and the long poll answered with it: due again at once
    answered = dataclasses.replace(waiting, data_answered_ms=10_100)
    assert silent(11_100, answered) == set()
    assert silent(11_101, answered) == {1}


def test_a_leader_that_stalled_itself_counts_silence_from_its_resumption():
    answered = rules.update_follower_fetch_state(
        FollowerFetchState(), fetch_offset=5, log_start_offset=0, leader_leo=9, now_ms=10_000
    )

    def silent(now_ms: int, resumed_ms: int) -> set[int]:
        return rules.silent_replicas(
            leader_id=0,
            isr={0, 1},
            followers={1: answered},
            now_ms=now_ms,
            silence_max_ms=1_000,
            fetch_wait_max_ms=500,
            resumed_ms=resumed_ms,
        )

    # the leader was paused from 10_100 to 14_000: the follower's fetches wait in its sockets
    assert silent(14_000, resumed_ms=14_000) == set()
    assert silent(15_000, resumed_ms=14_000) == set()
    assert silent(15_001, resumed_ms=14_000) == {1}  # still nothing read from it: gone
