"""Online migration between classic and KIP-848 consumer groups (node.coordinator.group_migration):
the policy, the checks and both conversions, with the consumer protocol's bytes written by hand
and the records replayed through the coordinators' own replay functions."""

from __future__ import annotations

import dataclasses

import pytest

from node.coordinator import classic_group as cg
from node.coordinator.classic_group import (
    ClassicGroup,
    ClassicGroupConfig,
    ClassicGroupState,
    ClassicMember,
    JoinGroupRequest,
    SyncGroupRequest,
)
from node.coordinator.consumer_protocol import decode_assignment
from node.coordinator.group_migration import (
    DEFAULT_MIGRATION_POLICY,
    ConsumerGroupMigrationPolicy,
    Downgrade,
    Refusal,
    Upgrade,
    all_members_use_classic_protocol_except,
    classic_group_from_consumer,
    consumer_group_from_classic,
    validate_online_downgrade,
    validate_online_downgrade_with_replaced_member,
    validate_online_upgrade,
)
from node.coordinator.group_state import (
    ConsumerGroup,
    GroupShard,
    HeartbeatRequest,
    Member,
    TopicInfo,
    heartbeat,
)
from odradek.errors import GroupIdNotFoundError
from odradek.group_records import (
    ClassicGroupMetadataKey,
    ClassicProtocol,
    ConsumerGroupClassicMemberMetadata,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    GroupMetadataValue,
    GroupRecordKey,
    GroupRecordValue,
    MemberState,
    TopicPartitions,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    key_type,
)

P = ConsumerGroupMigrationPolicy
T1 = "AAECAwQFBgcICQoLDA0ODw"  # a topic id (bytes 00..0f)
T2 = "EBESExQVFhcYGRobHB0eHw"  # bytes 10..1f
TOPICS = {"t1": TopicInfo("t1", T1, 4), "t2": TopicInfo("t2", T2, 2)}
BIG = 2**31 - 1


# --- the consumer protocol's bytes, by hand ------------------------------------------------


def i16(v: int) -> bytes:
    return v.to_bytes(2, "big", signed=True)


def i32(v: int) -> bytes:
    return v.to_bytes(4, "big", signed=True)


def s(v: str) -> bytes:
    return i16(len(v)) + v.encode()


def subscription_v0(*topics: str) -> bytes:
    return i16(0) + i32(len(topics)) + b"".join(s(t) for t in topics) + i32(-1)


def subscription_v3(*topics: str, rack: str | None = None) -> bytes:
    return (
        i16(3)
        + i32(len(topics))
        + b"".join(s(t) for t in topics)
        + i32(-1)  # user data
        + i32(0)  # owned partitions
        + i32(-1)  # generation
        + (i16(-1) if rack is None else s(rack))
    )


def assignment(version: int, parts: dict[str, list[int]], user_data: bytes | None = None) -> bytes:
    out = i16(version) + i32(len(parts))
    for topic, ps in parts.items():
        out += s(topic) + i32(len(ps)) + b"".join(i32(p) for p in ps)
    return out + (i32(-1) if user_data is None else i32(len(user_data)) + user_data)


# --- a Stable classic group ----------------------------------------------------------------


def classic_member(
    member_id: str,
    protocols: tuple[tuple[str, bytes], ...],
    assigned: bytes,
    *,
    instance_id: str | None = None,
    session_timeout_ms: int = 10_000,
) -> ClassicMember:
    return ClassicMember(
        member_id=member_id,
        client_id=f"client-{member_id}",
        client_host="/127.0.0.1",
        rebalance_timeout_ms=30_000,
        session_timeout_ms=session_timeout_ms,
        protocol_type="consumer",
        protocols=protocols,
        instance_id=instance_id,
        assignment=assigned,
    )


def stable_classic_group(generation: int = 5) -> ClassicGroup:
    """a: range (v3, rack r1) and roundrobin; b: range (v0), static. a owns t1-0,1 and t2-0;
    b owns t1-2,3 and t2-1."""
    group = ClassicGroup(
        "g",
        state=ClassicGroupState.STABLE,
        generation_id=generation,
        protocol_type="consumer",
        protocol_name="range",
        leader_id="a",
    )
    group.members["a"] = classic_member(
        "a",
        (("range", subscription_v3("t1", "t2", rack="r1")), ("roundrobin", subscription_v0("t1"))),
        assignment(3, {"t1": [0, 1], "t2": [0]}),
        session_timeout_ms=45_000,
    )
    group.members["b"] = classic_member(
        "b",
        (("range", subscription_v0("t1", "t2")),),
        assignment(0, {"t1": [2, 3], "t2": [1]}),
        instance_id="ib",
    )
    group.static_members["ib"] = "b"
    return group


def state_of(group: ClassicGroup) -> ClassicGroupState:
    """A call, so that mypy does not narrow ``group.state`` across the state machine's steps."""
    return group.state


def replay_consumer(
    records: tuple[tuple[GroupRecordKey, GroupRecordValue | None], ...],
) -> GroupShard:
    """The records through their bytes (encode, decode) and GroupShard.replay, as a cold load."""
    shard = GroupShard()
    for key, value in records:
        raw_key = encode_key(key)
        raw_value = None if value is None else encode_value(value)
        shard.replay(decode_key(raw_key), decode_value(key_type(raw_key), raw_value))
    return shard


# --- policy --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "policy", "upgrade", "downgrade"),
    [
        ("bidirectional", P.BIDIRECTIONAL, True, True),
        ("UPGRADE", P.UPGRADE, True, False),
        ("Downgrade", P.DOWNGRADE, False, True),
        ("disabled", P.DISABLED, False, False),
        ("both", P.DISABLED, False, False),
        ("", P.DISABLED, False, False),
        (None, P.DISABLED, False, False),
    ],
)
def test_policy_parse(name: str | None, policy: P, upgrade: bool, downgrade: bool) -> None:
    parsed = P.parse(name)
    assert parsed is policy
    assert parsed.is_upgrade_enabled is upgrade
    assert parsed.is_downgrade_enabled is downgrade


def test_default_policy_is_bidirectional() -> None:
    assert DEFAULT_MIGRATION_POLICY is P.BIDIRECTIONAL


# --- upgrade checks ------------------------------------------------------------------------


def test_validate_online_upgrade_accepts() -> None:
    group = stable_classic_group()
    assert validate_online_upgrade(group, P.BIDIRECTIONAL, BIG) is None
    assert validate_online_upgrade(group, P.UPGRADE, 2) is None  # the size may equal the max


@pytest.mark.parametrize(
    ("policy", "protocol_type", "max_size", "why"),
    [
        (P.DISABLED, "consumer", BIG, "online upgrade is disabled"),
        (P.DOWNGRADE, "consumer", BIG, "online upgrade is disabled"),
        (P.BIDIRECTIONAL, "connect", BIG, "does not use the consumer embedded protocol"),
        (P.BIDIRECTIONAL, "consumer", 1, "exceeds the consumer group maximum size"),
    ],
)
def test_validate_online_upgrade_refusals(
    policy: P, protocol_type: str, max_size: int, why: str
) -> None:
    group = stable_classic_group()
    group.protocol_type = protocol_type
    refusal = validate_online_upgrade(group, policy, max_size)
    assert refusal is not None
    assert refusal.error_code == GroupIdNotFoundError.code
    assert refusal.message == "Group g is not a consumer group"
    assert why in refusal.reason


# --- upgrade -------------------------------------------------------------------------------


def test_upgrade_members_epochs_and_assignments() -> None:
    classic = stable_classic_group(generation=5)
    up = consumer_group_from_classic(classic, TOPICS, now=1_000)
    group = up.group
    assert (group.group_id, group.group_epoch, group.assignment_epoch) == ("g", 5, 5)
    a, b = group.members["a"], group.members["b"]
    assert a == Member(
        member_id="a",
        client_id="client-a",
        client_host="/127.0.0.1",
        instance_id=None,
        rack_id="r1",
        subscribed_topic_names=("t1", "t2"),
        rebalance_timeout_ms=30_000,
        member_epoch=5,
        previous_member_epoch=5,
        state=MemberState.STABLE,
        assigned={T1: frozenset({0, 1}), T2: frozenset({0})},
        classic=ConsumerGroupClassicMemberMetadata(
            45_000,
            (
                ClassicProtocol("range", subscription_v3("t1", "t2", rack="r1")),
                ClassicProtocol("roundrobin", subscription_v0("t1")),
            ),
        ),
    )
    assert b.instance_id == "ib" and b.rack_id is None
    assert b.assigned == {T1: frozenset({2, 3}), T2: frozenset({1})}
    assert group.target == {"a": a.assigned, "b": b.assigned}
    assert up.session_deadlines_ms == {"a": 46_000, "b": 11_000}
    assert up.parked_joins == () and up.parked_syncs == ()
    assert group.state_name() == "Stable"


def test_upgrade_records_in_kafkas_order() -> None:
    up = consumer_group_from_classic(stable_classic_group(generation=5), TOPICS, now=0)
    a, b = up.group.members["a"], up.group.members["b"]
    assert up.records == (
        (ClassicGroupMetadataKey("g"), None),
        (ConsumerGroupMemberMetadataKey("g", "a"), a.metadata_value()),
        (ConsumerGroupMemberMetadataKey("g", "b"), b.metadata_value()),
        (ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(5)),
        (
            ConsumerGroupTargetAssignmentMemberKey("g", "a"),
            ConsumerGroupTargetAssignmentMemberValue(
                (TopicPartitions(T1, (0, 1)), TopicPartitions(T2, (0,)))
            ),
        ),
        (
            ConsumerGroupTargetAssignmentMemberKey("g", "b"),
            ConsumerGroupTargetAssignmentMemberValue(
                (TopicPartitions(T1, (2, 3)), TopicPartitions(T2, (1,)))
            ),
        ),
        (
            ConsumerGroupTargetAssignmentMetadataKey("g"),
            ConsumerGroupTargetAssignmentMetadataValue(5),
        ),
        (
            ConsumerGroupCurrentMemberAssignmentKey("g", "a"),
            ConsumerGroupCurrentMemberAssignmentValue(
                5, 5, MemberState.STABLE, (TopicPartitions(T1, (0, 1)), TopicPartitions(T2, (0,)))
            ),
        ),
        (
            ConsumerGroupCurrentMemberAssignmentKey("g", "b"),
            ConsumerGroupCurrentMemberAssignmentValue(
                5, 5, MemberState.STABLE, (TopicPartitions(T1, (2, 3)), TopicPartitions(T2, (1,)))
            ),
        ),
    )
    value = up.records[1][1]
    assert isinstance(value, ConsumerGroupMemberMetadataValue)
    assert value.classic_member_metadata is not None
    assert value.classic_member_metadata.session_timeout_ms == 45_000


def test_upgrade_records_replay_to_the_same_group() -> None:
    """A coordinator loading the partition after the conversion rebuilds the group it answered
    from, classic metadata included (this needs tag 0 of MemberMetadata to be written)."""
    up = consumer_group_from_classic(stable_classic_group(), TOPICS, now=0)
    shard = replay_consumer(up.records)
    assert shard.groups == {"g": up.group}


def test_upgrade_drops_unknown_topics_and_reads_a_never_synced_member() -> None:
    classic = stable_classic_group()
    classic.members["a"].assignment = assignment(1, {"gone": [0], "t1": [0, 1]})
    classic.members["b"].assignment = b""  # joined, never synced (KAFKA-17733)
    up = consumer_group_from_classic(classic, TOPICS, now=0)
    assert up.group.members["a"].assigned == {T1: frozenset({0, 1})}
    assert up.group.members["b"].assigned == {}
    assert up.group.target["b"] == {}


def test_upgrade_of_a_rebalancing_group_lists_the_parked_requests() -> None:
    """Built through the classic state machine: a Stable alone, then c joins (PreparingRebalance,
    c's JoinGroup parked, c never synced); a KIP-848 member arriving now converts the group
    anyway (the state is not checked), c with no partitions."""
    config = ClassicGroupConfig(group_initial_rebalance_delay_ms=0)
    group = ClassicGroup("g")

    def join_req(member_id: str) -> JoinGroupRequest:
        return JoinGroupRequest(
            "g", member_id, "consumer", (("range", subscription_v0("t1")),), 10_000, 30_000
        )

    out = cg.join(group, join_req(""), "a", 0, config, created=True)
    assert state_of(group) is ClassicGroupState.COMPLETING_REBALANCE
    a_assignment = assignment(0, {"t1": [0, 1, 2, 3]})
    out = cg.sync(group, SyncGroupRequest("g", "a", 1, assignments=(("a", a_assignment),)), 0)
    assert out.store is not None
    cg.store_assignment(group, 1, out.store, 0)
    assert state_of(group) is ClassicGroupState.STABLE
    out = cg.join(group, join_req(""), "c", 10, config)
    assert out.wait_key == "c"
    assert state_of(group) is ClassicGroupState.PREPARING_REBALANCE
    up = consumer_group_from_classic(group, TOPICS, now=20)
    assert up.parked_joins == ("c",)
    assert up.parked_syncs == ()
    assert up.group.group_epoch == 1
    assert up.group.members["a"].assigned == {T1: frozenset({0, 1, 2, 3})}
    assert up.group.members["c"].assigned == {}


@pytest.mark.parametrize(
    "field_name",
    ["subscription", "assignment"],
)
def test_upgrade_of_malformed_bytes_is_group_id_not_found(field_name: str) -> None:
    classic = stable_classic_group()
    if field_name == "subscription":
        classic.members["b"].protocols = (("range", b"\x00\x00\x00"),)
    else:
        classic.members["b"].assignment = b"\x00\x00\x00\x00\x00\x01"
    with pytest.raises(GroupIdNotFoundError, match="embedded consumer protocol is malformed"):
        consumer_group_from_classic(classic, TOPICS, now=0)


def test_upgrade_without_a_chosen_protocol_is_group_id_not_found() -> None:
    classic = stable_classic_group()
    classic.protocol_name = None
    with pytest.raises(GroupIdNotFoundError):
        consumer_group_from_classic(classic, TOPICS, now=0)


def test_upgrade_refuses_assignor_user_data() -> None:
    classic = stable_classic_group()
    classic.members["a"].assignment = assignment(3, {"t1": [0]}, user_data=b"sticky")
    with pytest.raises(GroupIdNotFoundError, match="unsupported custom assignor"):
        consumer_group_from_classic(classic, TOPICS, now=0)
    # empty user data is no user data
    classic.members["a"].assignment = assignment(3, {"t1": [0]}, user_data=b"")
    consumer_group_from_classic(classic, TOPICS, now=0)


def test_upgrade_does_not_change_the_classic_group() -> None:
    classic = stable_classic_group()
    before = dataclasses.replace(classic, members=dict(classic.members))
    consumer_group_from_classic(classic, TOPICS, now=0)
    assert classic == before


def test_kip848_member_joins_the_converted_group() -> None:
    """The existing heartbeat runs on the converted group: the joiner's epoch is generation + 1,
    it gets no partition a classic member still owns, and the classic members keep their
    classic metadata through the heartbeat's records."""
    up = consumer_group_from_classic(stable_classic_group(generation=5), TOPICS, now=0)
    shard = replay_consumer(up.records)
    result = heartbeat(
        shard.groups["g"],
        HeartbeatRequest(
            "g", "k", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("t1", "t2"), owned={}
        ),
        TOPICS,
    )
    assert result.member_epoch == 6
    assert result.assignment == {}
    for key, value in result.records:
        shard.replay(key, value)
    group = shard.groups["g"]
    assert group.group_epoch == 6 and group.assignment_epoch == 6
    assert group.members["k"].classic is None
    assert group.members["k"].state is MemberState.UNRELEASED_PARTITIONS
    assert group.members["a"].classic is not None and group.members["b"].classic is not None
    assert sum(len(ps) for t in group.target.values() for ps in t.values()) == 6
    assert group.target["k"]  # the assignor gave the newcomer a share


# --- downgrade checks ----------------------------------------------------------------------


def mixed_group() -> ConsumerGroup:
    """The converted group plus one KIP-848 member k (no target yet) at group epoch 6."""
    up = consumer_group_from_classic(stable_classic_group(generation=5), TOPICS, now=0)
    group = up.group
    group.members["k"] = Member(
        "k",
        client_id="kip848",
        subscribed_topic_names=("t1",),
        member_epoch=6,
        previous_member_epoch=5,
    )
    group.group_epoch = 6
    return group


def test_validate_online_downgrade_accepts() -> None:
    group = mixed_group()
    assert all_members_use_classic_protocol_except(group, "k")
    assert validate_online_downgrade(group, "k", P.BIDIRECTIONAL, BIG) is None
    assert validate_online_downgrade(group, "k", P.DOWNGRADE, 2) is None


def test_validate_online_downgrade_refusals() -> None:
    group = mixed_group()

    def why(g: ConsumerGroup, mid: str, policy: P = P.BIDIRECTIONAL, size: int = BIG) -> str:
        refusal = validate_online_downgrade(g, mid, policy, size)
        assert isinstance(refusal, Refusal)
        assert (refusal.error_code, refusal.message) == (0, "")
        return refusal.reason

    assert "not the last KIP-848 member" in why(group, "a")  # a classic member leaving
    assert "not the last KIP-848 member" in why(group, "nobody")
    two_kip848 = mixed_group()
    two_kip848.members["k2"] = Member("k2", subscribed_topic_names=("t1",))
    assert "not the last KIP-848 member" in why(two_kip848, "k")
    alone = ConsumerGroup("g", members={"k": Member("k")})
    assert "because it's empty" in why(alone, "k")
    assert "online downgrade is disabled" in why(group, "k", P.UPGRADE)
    assert "online downgrade is disabled" in why(group, "k", P.DISABLED)
    assert "greater than classic group max size" in why(group, "k", size=1)


def test_validate_online_downgrade_with_replaced_member() -> None:
    group = mixed_group()
    assert validate_online_downgrade_with_replaced_member(group, "k", P.BIDIRECTIONAL, 3) is None
    refusal = validate_online_downgrade_with_replaced_member(group, "k", P.BIDIRECTIONAL, 2)
    assert refusal is not None and "max size" in refusal.reason  # the joiner counts
    refusal = validate_online_downgrade_with_replaced_member(group, "k", P.UPGRADE, 3)
    assert refusal is not None and "disabled" in refusal.reason
    assert (
        validate_online_downgrade_with_replaced_member(group, "a", P.BIDIRECTIONAL, 3) is not None
    )


# --- downgrade -----------------------------------------------------------------------------


def test_downgrade_group_and_assignment_bytes() -> None:
    group = mixed_group()
    group.target["a"] = {T1: frozenset({1, 0}), T2: frozenset({0})}
    group.target["b"] = {T1: frozenset({3})}
    down = classic_group_from_consumer(group, "k", TOPICS, now=7_000)
    classic = down.group
    assert down.rebalance is True
    assert classic.state is ClassicGroupState.STABLE
    assert (classic.generation_id, classic.protocol_type) == (6, "consumer")
    assert classic.protocol_name == "range"  # the only protocol both support
    assert classic.leader_id == "a"
    assert classic.current_state_timestamp == 7_000
    assert list(classic.members) == ["a", "b"]
    assert classic.static_members == {"ib": "b"}
    a, b = classic.members["a"], classic.members["b"]
    assert a.protocols == (
        ("range", subscription_v3("t1", "t2", rack="r1")),
        ("roundrobin", subscription_v0("t1")),
    )
    assert (a.session_timeout_ms, a.rebalance_timeout_ms, a.client_id) == (
        45_000,
        30_000,
        "client-a",
    )
    assert a.session_deadline_ms == 52_000
    # each at the version of its own subscription for the chosen protocol: a v3, b v0
    assert a.assignment == assignment(3, {"t1": [0, 1], "t2": [0]})
    assert b.assignment == assignment(0, {"t1": [3]})


def test_downgrade_records_in_kafkas_order_and_replay() -> None:
    group = mixed_group()
    group.target["gone"] = {T1: frozenset({2})}  # a stray target of a member no longer there
    down = classic_group_from_consumer(group, "k", TOPICS, now=7_000)
    ids = ["a", "b", "k"]
    expected: list[tuple[GroupRecordKey, GroupRecordValue | None]] = []
    expected += [(ConsumerGroupCurrentMemberAssignmentKey("g", m), None) for m in ids]
    expected += [(ConsumerGroupTargetAssignmentMemberKey("g", m), None) for m in [*ids, "gone"]]
    expected.append((ConsumerGroupTargetAssignmentMetadataKey("g"), None))
    expected += [(ConsumerGroupMemberMetadataKey("g", m), None) for m in ids]
    expected.append((ConsumerGroupPartitionMetadataKey("g"), None))
    expected.append((ConsumerGroupMetadataKey("g"), None))
    assert list(down.records[:-1]) == expected
    key, value = down.records[-1]
    assert key == ClassicGroupMetadataKey("g")
    assert isinstance(value, GroupMetadataValue)
    assert (value.generation, value.protocol, value.leader, value.current_state_timestamp) == (
        6,
        "range",
        "a",
        7_000,
    )
    assert [m.member_id for m in value.members] == ["a", "b"]
    # the consumer group's records, then the downgrade's, replayed: no consumer group left
    shard = replay_consumer(consumer_group_from_classic(stable_classic_group(), TOPICS, 0).records)
    for k, v in down.records:
        shard.replay(k, v)
    assert shard.groups == {}
    # and the classic coordinator's replay of the GroupMetadata bytes gives a Stable group
    raw = encode_value(value)
    decoded = decode_value(2, raw)
    assert isinstance(decoded, GroupMetadataValue)
    groups: dict[str, ClassicGroup] = {}
    cg.replay(groups, "g", decoded, 7_000)
    assert groups["g"].state is ClassicGroupState.STABLE
    assert groups["g"].generation_id == 6
    assert {m: x.assignment for m, x in groups["g"].members.items()} == {
        m: x.assignment for m, x in down.group.members.items()
    }


def test_downgrade_votes_for_the_protocol_most_members_prefer() -> None:
    group = mixed_group()
    both = (
        ClassicProtocol("roundrobin", subscription_v0("t1")),
        ClassicProtocol("range", subscription_v0("t1")),
    )
    for mid in ("a", "b"):
        m = group.members[mid]
        assert m.classic is not None
        group.members[mid] = dataclasses.replace(
            m, classic=dataclasses.replace(m.classic, supported_protocols=both)
        )
    down = classic_group_from_consumer(group, "k", TOPICS, now=0)
    assert down.group.protocol_name == "roundrobin"


def test_downgrade_refusals_raise() -> None:
    group = mixed_group()
    with pytest.raises(GroupIdNotFoundError, match="does not use the classic protocol"):
        classic_group_from_consumer(group, "a", TOPICS, now=0)  # k would stay
    b = group.members["b"]
    group.members["b"] = dataclasses.replace(
        b,
        classic=ConsumerGroupClassicMemberMetadata(
            10_000, (ClassicProtocol("other", subscription_v0()),)
        ),
    )
    with pytest.raises(GroupIdNotFoundError, match="share no protocol"):
        classic_group_from_consumer(group, "k", TOPICS, now=0)
    group.members["b"] = dataclasses.replace(
        b, classic=ConsumerGroupClassicMemberMetadata(10_000, (ClassicProtocol("range", b"\x00"),))
    )
    with pytest.raises(GroupIdNotFoundError):
        classic_group_from_consumer(group, "k", TOPICS, now=0)  # unreadable version


def test_downgrade_with_a_static_member_replacing_the_last_kip848_one() -> None:
    group = mixed_group()
    group.members["k"] = dataclasses.replace(group.members["k"], instance_id="ik")
    group.target["k"] = {T2: frozenset({1})}
    joiner = Member(
        "j",
        client_id="classic-j",
        instance_id="ik",
        rebalance_timeout_ms=30_000,
        classic=ConsumerGroupClassicMemberMetadata(
            10_000, (ClassicProtocol("range", subscription_v3("t2")),)
        ),
    )
    down = classic_group_from_consumer(group, "k", TOPICS, now=0, joining_member=joiner)
    assert down.rebalance is False
    assert list(down.group.members) == ["a", "b", "j"]
    assert down.group.static_members == {"ib": "b", "ik": "j"}
    assert down.group.members["j"].assignment == assignment(3, {"t2": [1]})
    keys = [k for k, _ in down.records]
    assert ConsumerGroupMemberMetadataKey("g", "j") in keys
    assert ConsumerGroupMemberMetadataKey("g", "k") not in keys


def test_round_trip_upgrade_then_downgrade_keeps_the_assignments() -> None:
    """A classic group upgraded when a KIP-848 member joins and downgraded when it leaves before
    any partition moved: every classic member gets back the partitions it had, in bytes at its
    own subscription's version, at generation = the group epoch."""
    classic = stable_classic_group(generation=5)
    up: Upgrade = consumer_group_from_classic(classic, TOPICS, now=0)
    shard = replay_consumer(up.records)
    group = shard.groups["g"]
    group.members["k"] = Member("k", subscribed_topic_names=("t1",), member_epoch=6)
    group.group_epoch = 6
    assert validate_online_downgrade(group, "k", P.BIDIRECTIONAL, BIG) is None
    down: Downgrade = classic_group_from_consumer(group, "k", TOPICS, now=0)
    back = down.group
    assert back.generation_id == 6
    assert back.protocol_name == classic.protocol_name
    for mid, before in classic.members.items():
        after = back.members[mid]
        assert (
            decode_assignment(after.assignment).partitions()
            == decode_assignment(before.assignment).partitions()
        )
        assert after.assignment == before.assignment  # same version, same order here
        assert after.protocols == before.protocols
        assert (after.session_timeout_ms, after.instance_id) == (
            before.session_timeout_ms,
            before.instance_id,
        )
