"""The classic group state machine (node.coordinator.classic_group), time as an input."""

from __future__ import annotations

from typing import Any

from node.coordinator.classic_group import (
    FENCED_INSTANCE_ID,
    GROUP_MAX_SIZE_REACHED,
    ILLEGAL_GENERATION,
    INCONSISTENT_GROUP_PROTOCOL,
    INVALID_SESSION_TIMEOUT,
    MEMBER_ID_REQUIRED,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    ClassicGroupConfig,
    ClassicGroupState,
    JoinGroupRequest,
    JoinGroupResult,
    LeaveMember,
    SyncGroupRequest,
    SyncGroupResult,
    expire,
    heartbeat,
    join,
    leave,
    replay,
    store_assignment,
    sync,
    validate_offset_commit,
)
from odradek.group_records import GroupMetadataValue, decode_value, encode_value

CONFIG = ClassicGroupConfig(group_initial_rebalance_delay_ms=0)
RANGE = (("range", b"r-meta"),)


def req(member_id: str = "", **kw: Any) -> JoinGroupRequest:
    base: dict[str, Any] = {
        "group_id": "g",
        "member_id": member_id,
        "protocol_type": "consumer",
        "protocols": RANGE,
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 30_000,
        "client_id": "c",
        "client_host": "/127.0.0.1",
        "require_known_member_id": True,
    }
    base.update(kw)
    return JoinGroupRequest(**base)


def first_join(group: ClassicGroup, new_id: str, now: int = 0, **kw: Any) -> str | None:
    """KIP-394's round trip; returns the wait key of the second join."""
    out = join(group, req(**kw), new_id, now, CONFIG, created=not group.members)
    assert isinstance(out.reply, JoinGroupResult)
    assert out.reply.error_code == MEMBER_ID_REQUIRED
    assert out.reply.member_id == new_id
    out = join(group, req(new_id, **kw), "unused", now, CONFIG)
    assert out.reply is None
    return out.wait_key


def state(group: ClassicGroup) -> ClassicGroupState:
    return group.state


def stable_group_of_two() -> ClassicGroup:
    group = ClassicGroup("g")
    first_join(group, "a")
    # no initial delay: the first member completes the join at once
    assert group.state is ClassicGroupState.COMPLETING_REBALANCE
    assert group.generation_id == 1
    out = sync(group, SyncGroupRequest("g", "a", 1, assignments=(("a", b"A"),)), 0)
    assert out.store == {"a": b"A"}
    store_assignment(group, 1, out.store, 0)
    assert state(group) is ClassicGroupState.STABLE
    # b joins: a rebalance; a must rejoin before it completes
    join(group, req(), "b", 1, CONFIG)
    out = join(group, req("b"), "x", 1, CONFIG)
    assert out.wait_key == "b" and not out.joins
    assert state(group) is ClassicGroupState.PREPARING_REBALANCE
    assert heartbeat(group, "a", 1, None, 2) == REBALANCE_IN_PROGRESS
    out = join(group, req("a"), "x", 2, CONFIG)
    assert set(out.joins) == {"a", "b"}
    leader = out.joins["a"]
    assert leader.generation_id == 2 and leader.leader == "a"
    assert leader.protocol_name == "range"
    assert {m.member_id for m in leader.members} == {"a", "b"}
    assert out.joins["b"].members == ()
    return group


def test_join_sync_relays_the_leaders_assignment() -> None:
    group = stable_group_of_two()
    follower = sync(group, SyncGroupRequest("g", "b", 2), 3)
    assert follower.wait_key == "b" and follower.reply is None
    leader = sync(group, SyncGroupRequest("g", "a", 2, assignments=(("a", b"A"), ("b", b"B"))), 3)
    assert leader.records and leader.store == {"a": b"A", "b": b"B"}
    # nothing relayed before the store
    assert group.members["b"].assignment == b""
    done = store_assignment(group, 2, leader.store, 4)
    assert done.syncs["a"] == SyncGroupResult(0, "consumer", "range", b"A")
    assert done.syncs["b"].assignment == b"B"
    assert group.state is ClassicGroupState.STABLE
    assert heartbeat(group, "b", 2, None, 5) == 0


def test_errors() -> None:
    group = stable_group_of_two()
    assert heartbeat(group, "nobody", 2, None, 5) == UNKNOWN_MEMBER_ID
    assert heartbeat(group, "a", 1, None, 5) == ILLEGAL_GENERATION
    out = sync(group, SyncGroupRequest("g", "a", 7), 5)
    assert isinstance(out.reply, SyncGroupResult) and out.reply.error_code == ILLEGAL_GENERATION
    out = join(group, req(protocols=(("roundrobin", b""),)), "c", 5, CONFIG)
    assert isinstance(out.reply, JoinGroupResult)
    assert out.reply.error_code == INCONSISTENT_GROUP_PROTOCOL
    out = join(group, req(session_timeout_ms=10), "c", 5, CONFIG)
    assert isinstance(out.reply, JoinGroupResult)
    assert out.reply.error_code == INVALID_SESSION_TIMEOUT
    out = join(ClassicGroup("g"), req("made-up"), "c", 5, CONFIG, created=True)
    assert isinstance(out.reply, JoinGroupResult) and out.reply.error_code == UNKNOWN_MEMBER_ID
    full = ClassicGroupConfig(group_initial_rebalance_delay_ms=0, group_max_size=2)
    out = join(group, req(), "c", 5, full)
    assert isinstance(out.reply, JoinGroupResult)
    assert out.reply.error_code == GROUP_MAX_SIZE_REACHED


def test_protocol_every_member_supports_is_chosen() -> None:
    group = ClassicGroup("g")
    both = (("cooperative-sticky", b"1"), ("range", b"2"))
    first_join(group, "a", protocols=both)
    out = sync(group, SyncGroupRequest("g", "a", 1), 0)
    assert out.store is not None
    store_assignment(group, 1, out.store, 0)
    join(group, req(protocols=(("range", b"3"),)), "b", 0, CONFIG)
    join(group, req("b", protocols=(("range", b"3"),)), "x", 0, CONFIG)
    out = join(group, req("a", protocols=both), "x", 0, CONFIG)
    assert out.joins["a"].protocol_name == "range"
    assert {m.metadata for m in out.joins["a"].members} == {b"2", b"3"}


def test_session_expiry_removes_a_member_and_rebalances() -> None:
    group = stable_group_of_two()
    for m in ("a", "b"):
        sync(group, SyncGroupRequest("g", m, 2, assignments=(("a", b"A"), ("b", b"B"))), 3)
    store_assignment(group, 2, {"a": b"A", "b": b"B"}, 3)
    assert heartbeat(group, "a", 2, None, 9_000) == 0
    out = expire(group, 12_999, CONFIG)  # b's session: 3 + 10000
    assert "b" not in group.members
    assert group.state is ClassicGroupState.PREPARING_REBALANCE
    assert not out.joins
    # a rejoins: the only member, the join completes at once
    out = join(group, req("a"), "x", 13_000, CONFIG)
    assert out.joins["a"].generation_id == 3
    assert [m.member_id for m in out.joins["a"].members] == ["a"]


def test_rebalance_timeout_drops_members_that_do_not_rejoin() -> None:
    group = stable_group_of_two()
    store_assignment(group, 2, {"a": b"A", "b": b"B"}, 3)
    join(group, req(), "c", 10, CONFIG)
    join(group, req("c"), "x", 10, CONFIG)
    join(group, req("a"), "x", 11, CONFIG)
    # b keeps heartbeating but never rejoins
    assert heartbeat(group, "b", 2, None, 20_000) == REBALANCE_IN_PROGRESS
    out = expire(group, 10 + 30_000, CONFIG)
    assert set(out.joins) == {"a", "c"}
    assert "b" not in group.members and group.generation_id == 3


def test_initial_rebalance_delay_waits_for_more_members() -> None:
    config = ClassicGroupConfig(group_initial_rebalance_delay_ms=3_000)
    group = ClassicGroup("g")
    join(group, req(), "a", 0, config, created=True)
    out = join(group, req("a"), "x", 0, config)
    assert not out.joins and group.state is ClassicGroupState.PREPARING_REBALANCE
    join(group, req(), "b", 1_000, config)
    join(group, req("b"), "x", 1_000, config)
    assert not expire(group, 2_999, config).joins
    # b arrived during the delay: it is extended once more
    assert not expire(group, 3_000, config).joins
    out = expire(group, 6_000, config)
    assert set(out.joins) == {"a", "b"}


def test_leave_batch_and_static_member_rejoin_without_rebalance() -> None:
    group = ClassicGroup("g")
    join(group, req(instance_id="i-a"), "a", 0, CONFIG, created=True)
    out = sync(group, SyncGroupRequest("g", "a", 1, instance_id="i-a"), 0)
    assert out.store is not None
    store_assignment(group, 1, {"a": b"A"}, 0)
    # the static member restarts: a new member id, same assignment, no new generation (its
    # metadata bytes differ: the protocol the group would choose does not)
    restarted = req(instance_id="i-a", protocols=(("range", b"other"),))
    out = join(group, restarted, "a2", 5_000, CONFIG)
    assert isinstance(out.reply, JoinGroupResult)
    assert out.reply.member_id == "a2" and out.reply.generation_id == 1
    # the leader it replaced is named, with no members: it does not take itself for the
    # leader and assign (Kafka below JoinGroup v9)
    assert (out.reply.leader, out.reply.members, out.reply.skip_assignment) == ("a", (), False)
    assert out.records
    assert group.state is ClassicGroupState.STABLE
    again = sync(group, SyncGroupRequest("g", "a2", 1, instance_id="i-a"), 5_001)
    assert again.reply == SyncGroupResult(0, "consumer", "range", b"A")
    # the old id is fenced
    assert heartbeat(group, "a", 1, "i-a", 5_002) == FENCED_INSTANCE_ID
    results, out = leave(group, [LeaveMember("", "i-a"), LeaveMember("ghost")], 6_000, CONFIG)
    assert [r.error_code for r in results] == [0, UNKNOWN_MEMBER_ID]
    assert not group.members


def test_offset_commit_validation() -> None:
    group = stable_group_of_two()
    try:
        validate_offset_commit(group, "a", 2, None)
    except Exception as e:
        assert e.code == REBALANCE_IN_PROGRESS  # type: ignore[attr-defined]
    else:
        raise AssertionError("a commit while completing a rebalance must be refused")
    store_assignment(group, 2, {"a": b"A", "b": b"B"}, 3)
    validate_offset_commit(group, "a", 2, None)
    for member, generation, code in (("a", 1, ILLEGAL_GENERATION), ("z", 2, UNKNOWN_MEMBER_ID)):
        try:
            validate_offset_commit(group, member, generation, None)
        except Exception as e:
            assert e.code == code  # type: ignore[attr-defined]
        else:
            raise AssertionError(f"{member} {generation} must be refused")
    empty = ClassicGroup("e")
    validate_offset_commit(empty, "", -1, None)


def test_group_record_replays_to_a_stable_group() -> None:
    group = stable_group_of_two()
    out = sync(group, SyncGroupRequest("g", "a", 2, assignments=(("a", b"A"), ("b", b"B"))), 3)
    (_key, value) = out.records[0]
    assert isinstance(value, GroupMetadataValue)
    decoded = decode_value(2, encode_value(value))
    assert isinstance(decoded, GroupMetadataValue)
    groups: dict[str, ClassicGroup] = {}
    replay(groups, "g", decoded, 100)
    loaded = groups["g"]
    assert loaded.state is ClassicGroupState.STABLE
    assert loaded.generation_id == 2 and loaded.leader_id == "a"
    assert loaded.members["b"].assignment == b"B"
    assert loaded.members["b"].session_deadline_ms == 100 + 10_000
    sync_b = sync(loaded, SyncGroupRequest("g", "b", 2), 101)
    assert sync_b.reply == SyncGroupResult(0, "consumer", "range", b"B")


def test_a_new_member_still_waiting_for_its_rebalance_after_five_minutes_is_dropped() -> None:
    """Kafka's new-member join timeout: a new member cannot heartbeat, and a client whose
    JoinGroup timed out during a long rebalance retries as another member; so a new member
    still waiting five minutes after it joined is removed, its JoinGroup answered
    UNKNOWN_MEMBER_ID, even though members waiting in a join are otherwise kept alive."""
    slow = {"rebalance_timeout_ms": 600_000, "session_timeout_ms": 1_000_000}
    group = ClassicGroup("g")
    first_join(group, "a", **slow)
    out = sync(group, SyncGroupRequest("g", "a", 1, assignments=(("a", b"A"),)), 0)
    assert out.store is not None
    store_assignment(group, 1, out.store, 0)
    # c joins at 10: a rebalance that waits (up to 10 minutes) for a to rejoin
    first_join(group, "c", now=10, **slow)
    assert group.state is ClassicGroupState.PREPARING_REBALANCE
    # the client retries its JoinGroup with its id: the five minutes still count from 10
    out = join(group, req("c", **slow), "x", 100_000, CONFIG)
    assert out.reply is None and out.wait_key == "c"
    assert not expire(group, 10 + 299_999, CONFIG).joins
    assert "c" in group.members
    out = expire(group, 10 + 300_000, CONFIG)
    assert "c" not in group.members
    assert out.joins["c"].error_code == UNKNOWN_MEMBER_ID
    # a, not new, waits in the rebalance as before
    assert "a" in group.members and group.state is ClassicGroupState.PREPARING_REBALANCE
