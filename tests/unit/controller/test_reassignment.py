"""Reassignment values: RS/AR/RR from original and target replicas (KIP-455)."""

from __future__ import annotations

import pytest

from controller.election import Election
from controller.reassignment import (
    ReplicaAssignment,
    completed_reassignment_leader,
    validate_target_replicas,
)
from controller.zk_data import LeaderIsrAndControllerEpoch
from odradek.errors import InvalidReplicaAssignmentError


def test_disjoint_reassignment():
    a = ReplicaAssignment((1, 2, 3)).reassign_to([4, 5, 6])
    assert a == ReplicaAssignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))
    assert a.origin_replicas == (1, 2, 3)
    assert a.target_replicas == (4, 5, 6)
    assert a.is_being_reassigned


def test_overlapping_reassignment():
    a = ReplicaAssignment((1, 2, 3)).reassign_to([3, 4, 5])
    assert a == ReplicaAssignment((3, 4, 5, 1, 2), (4, 5), (1, 2))


def test_reordering_only_is_not_a_reassignment_in_progress():
    a = ReplicaAssignment((1, 2, 3)).reassign_to([3, 1, 2])
    assert a == ReplicaAssignment((3, 1, 2))
    assert not a.is_being_reassigned


def test_reassigning_again_starts_from_the_original_replicas():
    ongoing = ReplicaAssignment((1, 2, 3)).reassign_to([3, 4, 5])
    # As in Kafka, the originals are RS minus AR, in RS order: (3, 1, 2).
    assert ongoing.origin_replicas == (3, 1, 2)
    again = ongoing.reassign_to([6])
    assert again == ReplicaAssignment((6, 3, 1, 2), (6,), (3, 1, 2))


def test_cancel_reverts_to_the_original_replicas():
    ongoing = ReplicaAssignment((1, 2, 3)).reassign_to([4, 5])
    assert ongoing.cancel() == ReplicaAssignment((1, 2, 3))
    assert not ongoing.cancel().is_being_reassigned


def test_completion_needs_every_target_in_the_isr():
    a = ReplicaAssignment((1, 2, 3)).reassign_to([2, 3, 4])
    assert not a.is_reassignment_complete([1, 2, 3])
    assert a.is_reassignment_complete([1, 2, 3, 4])
    assert a.completed() == ReplicaAssignment((2, 3, 4))
    assert ReplicaAssignment((1,)).is_reassignment_complete([])


def state(leader, isr):
    return LeaderIsrAndControllerEpoch(
        leader=leader, leader_epoch=3, isr=tuple(isr), controller_epoch=1
    )


def test_completed_reassignment_keeps_a_live_target_leader():
    assert completed_reassignment_leader([2, 3, 4], state(2, [1, 2, 3, 4]), {1, 2, 3, 4}) == (
        Election(2, (2, 3, 4))
    )


def test_completed_reassignment_moves_leadership_off_a_removed_replica():
    assert completed_reassignment_leader([3, 4], state(1, [1, 2, 4, 3]), {1, 2, 3, 4}) == (
        Election(3, (4, 3))
    )


def test_completed_reassignment_replaces_a_dead_target_leader():
    assert completed_reassignment_leader([2, 3], state(2, [2, 3]), {3}) == Election(3, (2, 3))


def test_completed_reassignment_without_an_eligible_target():
    assert completed_reassignment_leader([3, 4], state(1, [1, 3, 4]), {1}) is None


@pytest.mark.parametrize(
    ("target", "match"),
    [
        ([], "Empty replica list"),
        ([1, 1], "Duplicate replica ids"),
        ([1, -2], "Invalid broker id"),
        ([1, 9], "not alive"),
    ],
)
def test_invalid_targets(target, match):
    with pytest.raises(InvalidReplicaAssignmentError, match=match):
        validate_target_replicas(target, {1, 2, 3})


def test_valid_target():
    validate_target_replicas([3, 1], {1, 2, 3})
