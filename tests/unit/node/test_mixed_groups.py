"""Mixed groups through the coordinator: a KIP-848 member joining a classic group converts it,
classic members are served from the consumer group (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, commits, timers), and the last KIP-848 member leaving converts it back; every
write replayed by a successor gives the same group (a fake replica manager that accepts every
write; a manual clock)."""

from __future__ import annotations

import dataclasses
from typing import Any

from node.config import config_from_properties
from node.coordinator.classic_group import JoinGroupRequest, LeaveMember, SyncGroupRequest
from node.coordinator.consumer_protocol import decode_assignment
from node.coordinator.group_coordinator import GroupCoordinator
from node.coordinator.group_requests import (
    HeartbeatRequest,
    HeartbeatResponse,
    OffsetCommitPartition,
)
from odradek.clock import ManualClock
from tests.unit.node.test_group_coordinator import TID, _coordinator, _FakeReplicas
from tests.unit.node.test_group_migration import assignment, i16, i32, s, subscription_v0

NONE = 0
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27
UNSUPPORTED_VERSION = 35
GROUP_ID_NOT_FOUND = 69


def subscription_v1(topic: str, owned: list[int]) -> bytes:
    """A cooperative client's subscription: the partitions it owns."""
    return (
        i16(1)
        + i32(1)
        + s(topic)
        + i32(-1)
        + i32(1)
        + s(topic)
        + i32(len(owned))
        + b"".join(i32(p) for p in owned)
    )


def _join(member_id: str = "", metadata: bytes = b"", **kw: Any) -> JoinGroupRequest:
    req = JoinGroupRequest(
        group_id="g",
        member_id=member_id,
        protocol_type="consumer",
        protocols=(("range", metadata or subscription_v0("t")),),
        session_timeout_ms=10_000,
        rebalance_timeout_ms=20_000,
        client_id="app",
        client_host="/127.0.0.1",
    )
    return dataclasses.replace(req, **kw)


def _classic_stable(coordinator: GroupCoordinator) -> str:
    """A Stable classic group "g" at generation 1: one member holding t-0 and t-1."""
    joined = coordinator.classic.join_group(_join()).result(0)
    assert joined.error_code == 0 and joined.generation_id == 1
    member = joined.member_id
    synced = coordinator.classic.sync_group(
        SyncGroupRequest("g", member, 1, assignments=((member, assignment(0, {"t": [0, 1]})),))
    ).result(0)
    assert synced.error_code == 0
    return member


def _kip848(
    coordinator: GroupCoordinator, epoch: int = 0, member: str = "k", **kw: Any
) -> HeartbeatResponse:
    req = HeartbeatRequest(
        group_id="g",
        member_id=member,
        member_epoch=epoch,
        rebalance_timeout_ms=20_000 if epoch == 0 else -1,
        subscribed_topic_names=("t",) if epoch == 0 else None,
        owned={} if epoch == 0 else None,
    )
    return coordinator.consumer_group_heartbeat(dataclasses.replace(req, **kw))


def _parts(answer: object) -> frozenset[int] | None:
    """The partitions of topic t a ConsumerGroupHeartbeat answer gives (None: not told)."""
    assignment = getattr(answer, "assignment", None)
    if assignment is None:
        return None
    return frozenset(p for tp in assignment if tp.topic_id == TID for p in tp.partitions)


def _successor(clock: ManualClock, replicas: _FakeReplicas) -> GroupCoordinator:
    successor, _ = _coordinator(clock, group_initial_rebalance_delay_ms=0)
    shard = successor._shards[0]
    for k, v in replicas.written:
        successor._replay_raw(shard, k, v, True)
    return successor


def _types(coordinator: GroupCoordinator) -> list[tuple[str, str]]:
    return [(g.group_type, g.group_state) for g in coordinator.list_groups().groups]


def test_a_kip848_member_converts_a_classic_group_and_the_classic_member_hands_over() -> None:
    clock = ManualClock()
    coordinator, replicas = _coordinator(clock, group_initial_rebalance_delay_ms=0)
    classic = _classic_stable(coordinator)

    joined = _kip848(coordinator)
    assert joined.error_code == NONE
    assert joined.member_epoch == 2  # the generation (1) became the group epoch, then a bump
    assert _parts(joined) == frozenset()
    assert _types(coordinator) == [("consumer", "Reconciling")]

    # the classic member is told to join again, and gives up one partition
    assert coordinator.classic.heartbeat("g", classic, 1) == REBALANCE_IN_PROGRESS
    rejoined = coordinator.classic.join_group(_join(classic)).result(0)
    assert rejoined.error_code == NONE
    assert (rejoined.generation_id, rejoined.leader, rejoined.members) == (2, "", ())
    assert (rejoined.protocol_type, rejoined.protocol_name) == ("consumer", "range")
    synced = coordinator.classic.sync_group(SyncGroupRequest("g", classic, 2)).result(0)
    assert synced.error_code == NONE
    kept = decode_assignment(synced.assignment).partitions()
    assert len(kept["t"]) == 1
    assert coordinator.classic.heartbeat("g", classic, 2) == NONE

    # the KIP-848 member now gets the other partition
    again = _kip848(coordinator, epoch=2, owned={})
    assert again.error_code == NONE
    assert _parts(again) == frozenset({0, 1}) - kept["t"]

    # a successor replays the same group from the records
    successor = _successor(clock, replicas)
    assert successor.classic.heartbeat("g", classic, 2) == NONE
    described = {m.member_id: m for d in successor.describe_groups(["g"]) for m in d.members}
    assert set(described) == {classic, "k"}


def test_a_cooperative_classic_member_revokes_before_the_partition_moves() -> None:
    clock = ManualClock()
    coordinator, _ = _coordinator(clock, group_initial_rebalance_delay_ms=0)
    classic = _classic_stable(coordinator)
    assert _kip848(coordinator).error_code == NONE
    # it rejoins still owning both: it must revoke one first
    owning = coordinator.classic.join_group(_join(classic, subscription_v1("t", [0, 1]))).result(0)
    assert owning.error_code == NONE and owning.generation_id == 1  # not yet the new epoch
    synced = coordinator.classic.sync_group(SyncGroupRequest("g", classic, 1)).result(0)
    kept = decode_assignment(synced.assignment).partitions()["t"]
    assert len(kept) == 1
    assert coordinator.classic.heartbeat("g", classic, 1) == REBALANCE_IN_PROGRESS
    # the KIP-848 member does not get the partition while the classic member holds it
    waiting = _kip848(coordinator, epoch=2, owned={})
    assert not _parts(waiting)
    revoked = coordinator.classic.join_group(
        _join(classic, subscription_v1("t", sorted(kept)))
    ).result(0)
    assert revoked.generation_id == 2
    got = _kip848(coordinator, epoch=2, owned={})
    assert _parts(got) == frozenset({0, 1}) - kept


def test_the_last_kip848_member_leaving_converts_the_group_back() -> None:
    clock = ManualClock()
    coordinator, replicas = _coordinator(clock, group_initial_rebalance_delay_ms=0)
    classic = _classic_stable(coordinator)
    assert _kip848(coordinator).error_code == NONE
    assert coordinator.classic.join_group(_join(classic)).result(0).generation_id == 2

    left = _kip848(coordinator, epoch=-1)
    assert left.error_code == NONE and left.member_epoch == -1
    assert _types(coordinator) == [("classic", "PreparingRebalance")]
    # the classic member joins again and leads the next generation (group epoch + 1)
    assert coordinator.classic.heartbeat("g", classic, 2) == REBALANCE_IN_PROGRESS
    rejoined = coordinator.classic.join_group(_join(classic)).result(0)
    assert rejoined.error_code == NONE
    assert (rejoined.generation_id, rejoined.leader) == (3, classic)
    successor = _successor(clock, replicas)
    assert [g.group_type for g in successor.list_groups().groups] == ["classic"]


def test_a_kip848_member_that_expires_last_converts_the_group_back() -> None:
    clock = ManualClock()
    coordinator, _ = _coordinator(
        clock, group_initial_rebalance_delay_ms=0, group_consumer_session_timeout_ms=45_000
    )
    classic = _classic_stable(coordinator)
    assert _kip848(coordinator).error_code == NONE
    coordinator.classic.join_group(_join(classic)).result(0)
    coordinator.classic.sync_group(SyncGroupRequest("g", classic, 2)).result(0)
    for _ in range(5):  # the classic member keeps its session alive, the KIP-848 one does not
        clock.advance(9_000)
        assert coordinator.classic.heartbeat("g", classic, 2) == NONE
        coordinator.tick()
    clock.advance(1_000)
    coordinator.tick()
    assert _types(coordinator) == [("classic", "PreparingRebalance")]


def test_a_classic_member_of_a_consumer_group_expires_after_its_own_session_timeout() -> None:
    clock = ManualClock()
    coordinator, _ = _coordinator(clock, group_initial_rebalance_delay_ms=0)
    assert _kip848(coordinator).error_code == NONE
    joined = coordinator.classic.join_group(_join()).result(0)
    assert joined.error_code == NONE
    member = joined.member_id
    assert (
        coordinator.classic.sync_group(SyncGroupRequest("g", member, joined.generation_id))
        .result(0)
        .error_code
        == NONE
    )
    _kip848(coordinator, epoch=joined.generation_id, owned={})
    clock.advance(10_001)  # its session.timeout.ms, far below group.consumer.session.timeout.ms
    coordinator.tick()
    assert coordinator.classic.heartbeat("g", member, joined.generation_id) == UNKNOWN_MEMBER_ID


def test_a_classic_member_that_never_syncs_is_removed_after_its_rebalance_timeout() -> None:
    clock = ManualClock()
    coordinator, _ = _coordinator(clock, group_initial_rebalance_delay_ms=0)
    assert _kip848(coordinator).error_code == NONE
    joined = coordinator.classic.join_group(_join(session_timeout_ms=60_000)).result(0)
    clock.advance(20_001)
    coordinator.tick()
    assert (
        coordinator.classic.heartbeat("g", joined.member_id, joined.generation_id)
        == UNKNOWN_MEMBER_ID
    )


def test_refusals_and_kafkas_error_codes_in_a_mixed_group() -> None:
    clock = ManualClock()
    coordinator, _ = _coordinator(clock, group_initial_rebalance_delay_ms=0)
    classic = _classic_stable(coordinator)
    # only a joining KIP-848 member converts; a heartbeat at an epoch is not for this group
    assert _kip848(coordinator, epoch=3).error_code == GROUP_ID_NOT_FOUND
    assert _kip848(coordinator).error_code == NONE
    joined = coordinator.classic.join_group(_join(classic)).result(0)
    gen = joined.generation_id
    assert coordinator.classic.heartbeat("g", classic, gen + 5) == ILLEGAL_GENERATION
    assert coordinator.classic.heartbeat("g", "k", gen) == UNKNOWN_MEMBER_ID  # a KIP-848 member
    assert coordinator.classic.heartbeat("g", "nobody", gen) == UNKNOWN_MEMBER_ID
    other_type = coordinator.classic.join_group(_join(protocol_type="connect")).result(0)
    assert other_type.error_code == INCONSISTENT_GROUP_PROTOCOL
    other_assignor = coordinator.classic.join_group(
        _join(protocols=(("roundrobin", subscription_v0("t")),))
    ).result(0)
    assert other_assignor.error_code == INCONSISTENT_GROUP_PROTOCOL
    malformed = coordinator.classic.join_group(_join(protocols=(("range", b"\x00"),))).result(0)
    assert malformed.error_code == INCONSISTENT_GROUP_PROTOCOL
    assert (
        coordinator.classic.sync_group(SyncGroupRequest("g", classic, gen + 1)).result(0).error_code
        == ILLEGAL_GENERATION
    )
    # commits: a classic member's generation is its member epoch; KIP-848 needs v9
    commit = [OffsetCommitPartition("t", p, committed_offset=5) for p in (0, 1)]
    assert (
        coordinator.offset_commit("g", classic, gen + 1, commit, api_version=8).error_code
        == ILLEGAL_GENERATION
    )
    kip_epoch = _kip848(coordinator, epoch=gen, owned={}).member_epoch
    refused = coordinator.offset_commit("g", "k", kip_epoch, commit[:0], api_version=8)
    assert refused.error_code == UNSUPPORTED_VERSION
    # a classic member leaves by LeaveGroup: the group stays a consumer group
    code, results = coordinator.classic.leave_group("g", [LeaveMember(classic), LeaveMember("k")])
    assert code == NONE
    assert [r.error_code for r in results] == [NONE, UNKNOWN_MEMBER_ID]
    assert _types(coordinator)[0][0] == "consumer"
    assert coordinator.classic.heartbeat("g", classic, gen) == UNKNOWN_MEMBER_ID


def test_a_disabled_policy_keeps_the_classic_group() -> None:
    clock = ManualClock()
    coordinator, _ = _coordinator(clock, group_initial_rebalance_delay_ms=0)
    coordinator.mixed.policy = type(coordinator.mixed.policy).DISABLED
    classic = _classic_stable(coordinator)
    assert _kip848(coordinator).error_code == GROUP_ID_NOT_FOUND
    assert _types(coordinator) == [("classic", "Stable")]
    assert coordinator.classic.heartbeat("g", classic, 1) == NONE


def test_the_upgrade_answers_a_parked_join_rebalance_in_progress() -> None:
    clock = ManualClock()
    coordinator, _ = _coordinator(clock, group_initial_rebalance_delay_ms=0)
    classic = _classic_stable(coordinator)
    # a second classic member starts a rebalance: the first one's join is awaited
    parked = coordinator.classic.join_group(_join())
    assert not parked.done()
    assert _kip848(coordinator).error_code == NONE
    assert parked.result(0).error_code == REBALANCE_IN_PROGRESS
    assert coordinator.classic.heartbeat("g", classic, 1) == REBALANCE_IN_PROGRESS


def test_a_static_classic_member_replacing_the_last_kip848_one_converts_without_a_rebalance() -> (
    None
):
    clock = ManualClock()
    coordinator, replicas = _coordinator(clock, group_initial_rebalance_delay_ms=0)
    classic = _classic_stable(coordinator)
    joined = _kip848(coordinator, instance_id="i-1")
    assert joined.error_code == NONE
    rejoined = coordinator.classic.join_group(_join(classic)).result(0)
    coordinator.classic.sync_group(SyncGroupRequest("g", classic, rejoined.generation_id)).result(0)
    held = _parts(_kip848(coordinator, epoch=joined.member_epoch, instance_id="i-1", owned={}))
    assert held
    # the KIP-848 process restarts as a classic one with the same group.instance.id
    replacing = coordinator.classic.join_group(_join(instance_id="i-1")).result(0)
    assert replacing.error_code == NONE
    assert _types(coordinator) == [("classic", "Stable")]  # converted, and no rebalance
    synced = coordinator.classic.sync_group(
        SyncGroupRequest("g", replacing.member_id, replacing.generation_id, "i-1")
    ).result(0)
    assert synced.error_code == NONE
    assert decode_assignment(synced.assignment).partitions()["t"] == held
    assert coordinator.classic.heartbeat("g", classic, rejoined.generation_id) == NONE
    assert [g.group_type for g in _successor(clock, replicas).list_groups().groups] == ["classic"]


def test_the_migration_policy_is_read_from_the_node_properties() -> None:
    config = config_from_properties(
        {
            "node.id": "1",
            "log.dirs": "/tmp/x",
            "zookeeper.connect": "z:2181",
            "group.consumer.migration.policy": "UPGRADE",
        }
    )
    assert config.group_coordinator.group_consumer_migration_policy == "UPGRADE"
    clock = ManualClock()
    coordinator, _ = _coordinator(clock, group_consumer_migration_policy="UPGRADE")
    assert coordinator.mixed.policy.value == "upgrade"  # any case, as Kafka's parse
    coordinator, _ = _coordinator(clock, group_consumer_migration_policy="no-such")
    assert coordinator.mixed.policy.value == "disabled"  # Kafka: an unknown name disables
    coordinator, _ = _coordinator(clock)
    assert coordinator.mixed.policy.value == "bidirectional"  # Kafka 4.0's default
