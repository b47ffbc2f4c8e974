"""The coordinator's classic groups: answers after the write, the GroupMetadata record replayed
by a new coordinator, offsets, list/describe/delete, timers (a fake replica manager that accepts
every write as replicated; a manual clock)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from node.coordinator.classic_group import JoinGroupRequest, LeaveMember, SyncGroupRequest
from node.coordinator.group_coordinator import GroupCoordinator
from node.coordinator.group_requests import HeartbeatRequest, OffsetCommitPartition
from node.core.requests import ProducePartition, ProduceResult
from odradek.clock import ManualClock
from odradek.group_records import (
    ClassicGroupMetadataKey,
    GroupMetadataValue,
    decode_key,
    decode_value,
    key_type,
)
from tests.unit.node.test_group_coordinator import _coordinator, _FakeReplicas


def _join(coordinator: GroupCoordinator, member_id: str = "") -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id="g",
        member_id=member_id,
        protocol_type="consumer",
        protocols=(("range", b"meta"),),
        session_timeout_ms=10_000,
        rebalance_timeout_ms=20_000,
        client_id="app",
        client_host="/127.0.0.1",
        require_known_member_id=True,
    )


def _stable(coordinator: GroupCoordinator, replicas: _FakeReplicas) -> str:
    first = coordinator.classic.join_group(_join(coordinator)).result(0)
    assert first.error_code == 79 and first.member_id.startswith("app-")
    joined = coordinator.classic.join_group(_join(coordinator, first.member_id)).result(0)
    assert joined.error_code == 0 and joined.generation_id == 1
    assert joined.leader == first.member_id and joined.protocol_name == "range"
    before = len(replicas.written)
    synced = coordinator.classic.sync_group(
        SyncGroupRequest("g", first.member_id, 1, assignments=((first.member_id, b"A"),))
    ).result(0)
    assert synced.error_code == 0 and synced.assignment == b"A"
    # the answer came after the group's record was written
    (key, value) = replicas.written[before]
    assert key is not None and decode_key(key) == ClassicGroupMetadataKey("g")
    stored = decode_value(key_type(key), value)
    assert isinstance(stored, GroupMetadataValue)
    assert stored.generation == 1 and stored.protocol == "range"
    assert [(m.member_id, m.assignment, m.client_id) for m in stored.members] == [
        (first.member_id, b"A", "app")
    ]
    return first.member_id


def test_a_new_coordinator_replays_the_group() -> None:
    clock = ManualClock()
    coordinator, replicas = _coordinator(clock, group_initial_rebalance_delay_ms=0)
    member = _stable(coordinator, replicas)
    successor, _ = _coordinator(clock, group_initial_rebalance_delay_ms=0)
    shard = successor._shards[0]
    for k, v in replicas.written:
        successor._replay_raw(shard, k, v, True)
    assert successor.classic.heartbeat("g", member, 1) == 0
    assert successor.classic.heartbeat("g", member, 0) == 22  # ILLEGAL_GENERATION
    assert successor.classic.heartbeat("g", "other", 1) == 25  # UNKNOWN_MEMBER_ID
    again = successor.classic.sync_group(SyncGroupRequest("g", member, 1)).result(0)
    assert again.assignment == b"A"


def test_offsets_and_group_views_of_a_classic_group() -> None:
    clock = ManualClock()
    coordinator, replicas = _coordinator(clock, group_initial_rebalance_delay_ms=0)
    member = _stable(coordinator, replicas)
    commit = [OffsetCommitPartition("t", 0, committed_offset=5)]
    assert coordinator.offset_commit("g", member, 1, commit).error_code == 0
    assert coordinator.offset_commit("g", member, 0, commit).error_code == 22
    assert coordinator.offset_commit("g", "", -1, commit).error_code == 25  # group not empty
    fetched = coordinator.offset_fetch("g", "", -1, [("t", 0)])
    assert [p.committed_offset for p in fetched.partitions] == [5]
    (listed,) = coordinator.list_groups().groups
    assert (listed.group_id, listed.group_state, listed.group_type) == ("g", "Stable", "classic")
    (described,) = coordinator.describe_groups(["g"])
    assert described.group_type == "classic" and described.protocol == "range"
    assert [(m.client_id, m.client_host) for m in described.members] == [("app", "/127.0.0.1")]
    assert coordinator.delete_groups(["g"])[0].error_code == 68  # NON_EMPTY_GROUP
    # its member's metadata is no consumer subscription: a KIP-848 member cannot convert it
    refused = coordinator.consumer_group_heartbeat(
        HeartbeatRequest(group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=1)
    )
    assert refused.error_code == 69  # GROUP_ID_NOT_FOUND
    code, results = coordinator.classic.leave_group("g", [LeaveMember(member)])
    assert code == 0 and results[0].error_code == 0
    (listed,) = coordinator.list_groups().groups
    assert listed.group_state == "Empty"
    assert coordinator.delete_groups(["g"])[0].error_code == 0
    assert coordinator.list_groups().groups == ()


def test_an_emptied_group_keeps_its_protocol_type_also_for_its_next_coordinator() -> None:
    """Kafka's initNextGeneration clears only the protocol once the last member left: the group
    is still a "consumer" one in ListGroups, DescribeGroups and its GroupMetadata record (an
    empty protocol type is a simple group to clients)."""
    clock = ManualClock()
    coordinator, replicas = _coordinator(clock, group_initial_rebalance_delay_ms=0)
    member = _stable(coordinator, replicas)
    code, _ = coordinator.classic.leave_group("g", [LeaveMember(member)])
    assert code == 0
    (listed,) = coordinator.list_groups().groups
    assert (listed.group_state, listed.protocol_type) == ("Empty", "consumer")
    (described,) = coordinator.describe_groups(["g"])
    assert (described.group_state, described.protocol_type, described.protocol) == (
        "Empty",
        "consumer",
        "",
    )
    key, value = replicas.written[-1]
    assert key is not None
    stored = decode_value(key_type(key), value)
    assert isinstance(stored, GroupMetadataValue)
    assert (stored.protocol_type, stored.protocol, stored.members) == ("consumer", None, ())
    successor, _ = _coordinator(clock, group_initial_rebalance_delay_ms=0)
    for k, v in replicas.written:
        successor._replay_raw(successor._shards[0], k, v, True)
    (listed,) = successor.list_groups().groups
    assert (listed.group_state, listed.protocol_type) == ("Empty", "consumer")
    (described,) = successor.describe_groups(["g"])
    assert described.protocol_type == "consumer"


def test_a_silent_member_expires_and_a_waiting_join_is_answered_on_unload() -> None:
    clock = ManualClock()
    coordinator, replicas = _coordinator(clock, group_initial_rebalance_delay_ms=0)
    member = _stable(coordinator, replicas)
    clock.advance(9_999)
    coordinator.tick()
    assert coordinator.classic.heartbeat("g", member, 1) == 0
    clock.advance(10_000)
    coordinator.tick()
    assert coordinator.classic.heartbeat("g", member, 1) == 25
    (listed,) = coordinator.list_groups().groups
    assert listed.group_state == "Empty"
    # a join that waits (the initial delay) is answered NOT_COORDINATOR when the shard goes
    slow, _ = _coordinator(clock, group_initial_rebalance_delay_ms=3_000)
    first = slow.classic.join_group(_join(slow)).result(0)
    waiting = slow.classic.join_group(_join(slow, first.member_id))
    assert not waiting.done()
    slow.on_leadership_change("__consumer_offsets", 0, False, 2)
    assert waiting.result(0).error_code == 16


def test_a_static_member_whose_takeover_cannot_be_written_is_refused_and_undone() -> None:
    clock = ManualClock()
    coordinator, replicas = _coordinator(clock, group_initial_rebalance_delay_ms=0)
    static = dataclasses.replace(_join(coordinator), instance_id="i-1")
    joined = coordinator.classic.join_group(static).result(0)
    assert joined.error_code == 0 and joined.generation_id == 1
    member = joined.member_id
    synced = coordinator.classic.sync_group(
        SyncGroupRequest("g", member, 1, "i-1", assignments=((member, b"A"),))
    ).result(0)
    assert synced.assignment == b"A"

    def not_replicated(
        partitions: Sequence[ProducePartition], *, acks: int, timeout_ms: int
    ) -> list[ProduceResult]:
        return [ProduceResult(p.topic, p.partition, error_code=19) for p in partitions]

    replicas.append_records = not_replicated  # type: ignore[method-assign]
    again = coordinator.classic.join_group(static).result(0)
    assert again.error_code == 15  # COORDINATOR_NOT_AVAILABLE: retry
    # the group is as it was: the old member id still holds the instance
    assert coordinator.classic.heartbeat("g", member, 1, "i-1") == 0


def test_a_group_of_commits_alone_is_listed_as_an_empty_classic_group() -> None:
    """Kafka's "simple" group (assign() and commits, generation -1): an empty classic group with
    no protocol type; a KIP-848 member may then take the id."""
    clock = ManualClock()
    coordinator, _ = _coordinator(clock)
    commit = [OffsetCommitPartition("t", 0, committed_offset=3)]
    assert coordinator.offset_commit("simple", "", -1, commit).error_code == 0
    (listed,) = coordinator.list_groups().groups
    assert (listed.group_type, listed.group_state, listed.protocol_type) == ("classic", "Empty", "")
    joined = coordinator.consumer_group_heartbeat(
        HeartbeatRequest(
            group_id="simple",
            member_id="m",
            member_epoch=0,
            rebalance_timeout_ms=1000,
            subscribed_topic_names=("t",),
            owned={},
        )
    )
    assert joined.error_code == 0
    (listed,) = coordinator.list_groups().groups
    assert listed.group_type == "consumer"
    fetched = coordinator.offset_fetch("simple", "m", joined.member_epoch, [("t", 0)])
    assert [p.committed_offset for p in fetched.partitions] == [3]
