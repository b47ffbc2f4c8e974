"""Leader elections and ISR removal: Kafka's PartitionLeaderElectionAlgorithmsTest and the
OfflineReplica rules."""

from __future__ import annotations

from controller.election import (
    Election,
    controlled_shutdown_leader,
    offline_leader,
    preferred_leader,
    reassignment_leader,
    remove_replica_from_isr,
)

# -- offline ----------------------------------------------------------------------------------


def test_offline_partition_leader_election():
    assert offline_leader([2, 4], [2, 4], {4}, unclean=False) == Election(4, (4,))


def test_offline_election_last_isr_offline_unclean_disabled():
    assert offline_leader([2, 4], [2], {4}, unclean=False) is None


def test_offline_election_last_isr_offline_unclean_enabled():
    assert offline_leader([2, 4], [2], {4}, unclean=True) == Election(4, (4,), unclean=True)


def test_offline_election_prefers_a_live_isr_member_even_with_unclean_enabled():
    assert offline_leader([1, 2, 3], [3], {2, 3}, unclean=True) == Election(3, (3,))


def test_offline_election_follows_assignment_order_not_isr_order():
    assert offline_leader([3, 1, 2], [1, 2, 3], {1, 2, 3}, unclean=False) == Election(3, (1, 2, 3))


def test_offline_election_keeps_only_live_isr_members_in_isr_order():
    assert offline_leader([1, 2, 3, 4], [4, 1, 3, 2], {1, 3, 4}, unclean=False) == Election(
        1, (4, 1, 3)
    )


def test_offline_election_with_nothing_live():
    assert offline_leader([1, 2], [1, 2], set(), unclean=True) is None


# -- reassignment -----------------------------------------------------------------------------


def test_reassign_partition_leader_election():
    assert reassignment_leader([2, 4], [2, 4], {2, 4}) == Election(2, (2, 4))


def test_reassign_partition_leader_election_with_no_live_isr():
    assert reassignment_leader([2, 4], [2], set()) is None


def test_reassign_partition_leader_election_with_empty_isr():
    assert reassignment_leader([2, 4], [], {2}) is None


def test_reassign_partition_leader_election_keeps_the_isr():
    assert reassignment_leader([4, 2], [1, 2, 4], {2, 4}) == Election(4, (1, 2, 4))


# -- preferred --------------------------------------------------------------------------------


def test_preferred_replica_partition_leader_election():
    assert preferred_leader([2, 4], [2, 4], {2, 4}) == Election(2, (2, 4))


def test_preferred_replica_in_isr_not_live():
    assert preferred_leader([2, 4], [2], set()) is None


def test_preferred_replica_not_in_isr_live():
    assert preferred_leader([2, 4], [4], {2, 4}) is None


def test_preferred_replica_not_in_isr_not_live():
    assert preferred_leader([2, 4], [], set()) is None


def test_preferred_replica_is_only_the_first_assigned():
    # Even if the second is live and in the ISR, only the head counts.
    assert preferred_leader([2, 4], [4], {4}) is None


# -- controlled shutdown ----------------------------------------------------------------------


def test_controlled_shutdown_partition_leader_election():
    assert controlled_shutdown_leader([2, 4], [2, 4], {2, 4}, {2}) == Election(4, (4,))


def test_controlled_shutdown_last_isr_shutting_down():
    assert controlled_shutdown_leader([2, 4], [2], {2, 4}, {2}) is None


def test_controlled_shutdown_all_isr_simultaneously_shutting_down():
    assert controlled_shutdown_leader([2, 4], [2, 4], {2, 4}, {2, 4}) is None


def test_controlled_shutdown_skips_dead_replicas():
    assert controlled_shutdown_leader([1, 2, 3], [1, 2, 3], {1, 3}, {1}) == Election(3, (2, 3))


# -- a replica goes offline -------------------------------------------------------------------


def test_follower_leaves_the_isr():
    assert remove_replica_from_isr(1, [1, 2, 3], 3) == (1, (1, 2))


def test_leader_leaves_the_isr_and_the_partition_has_no_leader():
    assert remove_replica_from_isr(1, [1, 2], 1) == (-1, (2,))


def test_the_last_isr_member_stays_in_the_isr():
    assert remove_replica_from_isr(1, [1], 1) == (-1, (1,))


def test_replica_not_in_isr_changes_nothing():
    assert remove_replica_from_isr(1, [1, 2], 3) is None
