"""Share group membership as Kafka's shareGroupHeartbeat decides it (pure, no coordinator)."""

from __future__ import annotations

import pytest

from node.coordinator.group_state import TopicInfo
from node.share_group.share_group import (
    ShareGroup,
    ShareHeartbeatRequest,
    share_heartbeat,
    share_member_leave,
)
from odradek.errors import (
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    InvalidRequestError,
    UnknownMemberIdError,
)

TOPICS = {"t": TopicInfo("t", "TID", 2)}


def join(group: ShareGroup | None, member: str, max_size: int = 10) -> ShareGroup:
    new, _ = share_heartbeat(
        group, ShareHeartbeatRequest("g", member, 0, subscribed_topic_names=("t",)), TOPICS, 10
    )
    return new


def test_join_creates_the_group_and_assigns() -> None:
    group, result = share_heartbeat(
        None,
        ShareHeartbeatRequest("g", "m1", 0, rack_id="r1", subscribed_topic_names=("t",)),
        TOPICS,
        10,
    )
    assert (group.group_epoch, group.assignment_epoch) == (1, 1)
    assert group.state_name() == "Stable"
    assert result.member_epoch == 1
    assert result.assignment == {"TID": frozenset({0, 1})}
    assert group.members["m1"].rack_id == "r1"


def test_a_second_member_shares_and_the_first_learns_at_its_next_heartbeat() -> None:
    group = join(None, "m1")
    group = join(group, "m2")
    assert group.group_epoch == 2
    assert group.members["m2"].member_epoch == 2
    # m1 heartbeats at its epoch (1) and gets the new target at epoch 2
    group, result = share_heartbeat(group, ShareHeartbeatRequest("g", "m1", 1), TOPICS, 10)
    assert result.member_epoch == 2
    assert result.assignment is not None and len(result.assignment["TID"]) == 1
    # an unchanged heartbeat carries no assignment
    _, again = share_heartbeat(group, ShareHeartbeatRequest("g", "m1", 2), TOPICS, 10)
    assert again.assignment is None and again.member_epoch == 2


def test_more_members_than_partitions_all_get_work() -> None:
    group = None
    for m in ("a", "b", "c", "d", "e"):
        group = join(group, m)
    assert group is not None
    for m in ("a", "b", "c", "d", "e"):
        group, _ = share_heartbeat(
            group, ShareHeartbeatRequest("g", m, group.members[m].member_epoch), TOPICS, 10
        )
        assert group.members[m].assigned, m


def test_errors() -> None:
    group = join(None, "m1")
    with pytest.raises(FencedMemberEpochError):
        share_heartbeat(group, ShareHeartbeatRequest("g", "m1", 7), TOPICS, 10)
    with pytest.raises(UnknownMemberIdError):
        share_heartbeat(group, ShareHeartbeatRequest("g", "nobody", 1), TOPICS, 10)
    with pytest.raises(GroupIdNotFoundError):
        share_heartbeat(None, ShareHeartbeatRequest("g", "m1", 1), TOPICS, 10)
    with pytest.raises(GroupMaxSizeReachedError):
        share_heartbeat(
            group, ShareHeartbeatRequest("g", "m2", 0, subscribed_topic_names=("t",)), TOPICS, 1
        )
    for bad in (
        ShareHeartbeatRequest("", "m1", 0, subscribed_topic_names=("t",)),
        ShareHeartbeatRequest("g", "", 0, subscribed_topic_names=("t",)),
        ShareHeartbeatRequest("g", "m1", 0),  # a join without topics
        ShareHeartbeatRequest("g", "m1", -2),
        ShareHeartbeatRequest("g", "m1", 0, rack_id="", subscribed_topic_names=("t",)),
    ):
        with pytest.raises(InvalidRequestError):
            share_heartbeat(group, bad, TOPICS, 10)


def test_leave_and_expiry_bump_the_epoch() -> None:
    group = join(join(None, "m1"), "m2")
    left, result = share_heartbeat(group, ShareHeartbeatRequest("g", "m2", -1), TOPICS, 10)
    assert result.member_epoch == -1
    assert set(left.members) == {"m1"} and left.group_epoch == 3
    assert set(group.members) == {"m1", "m2"}  # the input is untouched
    expired = share_member_leave(left, "m1")
    assert expired.state_name() == "Empty" and expired.group_epoch == 4
    with pytest.raises(UnknownMemberIdError):
        share_member_leave(expired, "m1")
    with pytest.raises(GroupIdNotFoundError):
        share_heartbeat(None, ShareHeartbeatRequest("g", "m1", -1), TOPICS, 10)


def test_subscription_change_and_new_partitions_bump_the_epoch() -> None:
    group = join(None, "m1")
    group, _ = share_heartbeat(
        group, ShareHeartbeatRequest("g", "m1", 1, subscribed_topic_names=("t", "u")), TOPICS, 10
    )
    assert group.group_epoch == 2
    more = {"t": TopicInfo("t", "TID", 3), "u": TopicInfo("u", "UID", 1)}
    group, result = share_heartbeat(group, ShareHeartbeatRequest("g", "m1", 2), more, 10)
    assert group.group_epoch == 3
    assert result.assignment == {"TID": frozenset({0, 1, 2}), "UID": frozenset({0})}
