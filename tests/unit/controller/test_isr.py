"""Validation of AlterPartition items: the order of the checks and the state they produce."""

from __future__ import annotations

import pytest

from controller.isr import IsrChangeAccepted, IsrChangeRejected, validate_alter_partition
from controller.zk_data import LeaderIsrAndControllerEpoch

CURRENT = LeaderIsrAndControllerEpoch(
    leader=1, leader_epoch=5, isr=(1, 2), controller_epoch=3, partition_epoch=7
)


def decide(
    *,
    broker_id=1,
    leader_epoch=5,
    new_isr=(1, 2, 3),
    partition_epoch=7,
    current=CURRENT,
    replicas=(1, 2, 3),
    eligible_brokers=frozenset({1, 2, 3}),
):
    return validate_alter_partition(
        broker_id=broker_id,
        leader_epoch=leader_epoch,
        new_isr=new_isr,
        partition_epoch=partition_epoch,
        current=current,
        replicas=replicas,
        eligible_brokers=eligible_brokers,
        controller_epoch=4,
    )


def code(outcome):
    assert isinstance(outcome, IsrChangeRejected), outcome
    return outcome.error_code


def test_expansion_is_accepted_with_same_leader_epoch_and_this_controllers_epoch():
    outcome = decide()
    assert outcome == IsrChangeAccepted(
        LeaderIsrAndControllerEpoch(
            leader=1, leader_epoch=5, isr=(1, 2, 3), controller_epoch=4, partition_epoch=7
        ),
        write=True,
    )


def test_shrink_is_accepted():
    outcome = decide(new_isr=[1])
    assert isinstance(outcome, IsrChangeAccepted) and outcome.new_state.isr == (1,)


def test_unknown_partition():
    assert code(decide(current=None)) == 3


def test_older_leader_epoch_is_fenced():
    assert code(decide(leader_epoch=4)) == 74


def test_newer_leader_epoch_means_this_controller_is_behind():
    assert code(decide(leader_epoch=6)) == 41


@pytest.mark.parametrize("partition_epoch", [6, 8])
def test_partition_epoch_other_than_current_is_invalid_update_version(partition_epoch):
    assert code(decide(partition_epoch=partition_epoch)) == 95


def test_fenced_leader_epoch_wins_over_stale_partition_epoch():
    assert code(decide(leader_epoch=4, partition_epoch=1)) == 74


def test_repeating_the_current_state_is_accepted_without_a_write_even_with_stale_epoch():
    outcome = decide(new_isr=[1, 2], partition_epoch=6)
    assert outcome == IsrChangeAccepted(CURRENT, write=False)


def test_only_the_leader_may_change_the_isr():
    assert code(decide(broker_id=2)) == 42


@pytest.mark.parametrize("isr", [[], [1, 1, 2], [1, 4], [2, 3]])
def test_malformed_isrs_are_invalid_requests(isr):
    assert code(decide(new_isr=isr)) == 42


def test_dead_replica_is_ineligible():
    assert code(decide(eligible_brokers={1, 2})) == 107


def test_replica_in_controlled_shutdown_is_ineligible():
    # eligible_brokers excludes brokers in controlled shutdown
    assert code(decide(new_isr=[1, 2, 3], eligible_brokers={1, 3})) == 107


def test_accepted_change_ends_leader_recovery():
    recovering = LeaderIsrAndControllerEpoch(
        leader=1,
        leader_epoch=5,
        isr=(1,),
        controller_epoch=3,
        partition_epoch=7,
        leader_recovery_state=1,
    )
    outcome = decide(current=recovering, new_isr=[1, 2])
    assert isinstance(outcome, IsrChangeAccepted)
    assert outcome.new_state.leader_recovery_state == 0
