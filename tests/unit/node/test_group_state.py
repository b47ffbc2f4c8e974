"""The group coordinator's pure core: heartbeats, reconciliation, assignors, offset checks."""

from __future__ import annotations

import pytest

from node.coordinator.group_state import (
    ConsumerGroup,
    GroupShard,
    HeartbeatRequest,
    HeartbeatResult,
    Member,
    TopicInfo,
    assign_range,
    assign_uniform,
    delete_group_records,
    heartbeat,
    member_leave_records,
    offset_commit_records,
    validate_offset_fetch,
)
from odradek.errors import (
    FencedMemberEpochError,
    GroupIdNotFoundError,
    InvalidRegularExpressionError,
    InvalidRequestError,
    OffsetMetadataTooLargeError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)
from odradek.group_records import (
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    key_type,
)

TID = "AAECAwQFBgcICQoLDA0ODw"
TOPICS = {"t": TopicInfo("t", TID, 12)}


class Coordinator:
    """Heartbeats against a shard, replaying the records through the codec as the node does."""

    def __init__(self) -> None:
        self.shard = GroupShard()
        self.topics = dict(TOPICS)

    def write(self, records: list) -> None:  # type: ignore[type-arg]
        for key, value in records:
            raw_key = encode_key(key)
            raw_value = None if value is None else encode_value(value)
            self.shard.replay(decode_key(raw_key), decode_value(key_type(raw_key), raw_value))

    def beat(
        self, member_id: str, epoch: int, owned: dict[str, frozenset[int]] | None, **kw: object
    ) -> HeartbeatResult:
        join = epoch == 0
        req = HeartbeatRequest(
            group_id="g",
            member_id=member_id,
            member_epoch=epoch,
            rebalance_timeout_ms=300000 if join else -1,
            subscribed_topic_names=(() if "subscribed_topic_regex" in kw else ("t",))
            if join
            else None,
            owned=owned,
            **kw,  # type: ignore[arg-type]
        )
        result = heartbeat(self.shard.groups.get("g"), req, self.topics)
        self.write(result.records)
        return result

    @property
    def group(self) -> ConsumerGroup:
        return self.shard.groups["g"]


class Client:
    """A member that revokes at once and reports what it owns."""

    def __init__(self, coordinator: Coordinator, member_id: str, **kw: object) -> None:
        self.c = coordinator
        self.member_id = member_id
        self.epoch = 0
        self.owned: dict[str, frozenset[int]] = {}
        self.kw = kw

    def beat(self) -> HeartbeatResult:
        result = self.c.beat(self.member_id, self.epoch, dict(self.owned), **self.kw)
        self.epoch = result.member_epoch
        if result.assignment is not None:
            self.owned = dict(result.assignment)
        return result

    def count(self) -> int:
        return sum(len(ps) for ps in self.owned.values())


def settle(clients: list[Client], rounds: int = 10) -> None:
    for _ in range(rounds):
        for cl in clients:
            cl.beat()


def no_partition_owned_twice(clients: list[Client]) -> None:
    seen: set[tuple[str, int]] = set()
    for cl in clients:
        for tid, ps in cl.owned.items():
            for p in ps:
                assert (tid, p) not in seen
                seen.add((tid, p))


def test_three_members_get_four_partitions_each() -> None:
    c = Coordinator()
    clients = [Client(c, f"m{i}") for i in range(3)]
    for cl in clients:
        cl.beat()
        no_partition_owned_twice(clients)
    settle(clients)
    assert [cl.count() for cl in clients] == [4, 4, 4]
    assert c.group.state_name() == "Stable"
    assert {cl.epoch for cl in clients} == {c.group.assignment_epoch}


def test_a_fourth_member_gets_partitions_only_after_they_are_revoked() -> None:
    c = Coordinator()
    clients = [Client(c, f"m{i}") for i in range(3)]
    settle(clients)
    before = {cl.member_id: dict(cl.owned) for cl in clients}
    fourth = Client(c, "m3")
    first = fourth.beat()
    assert first.assignment == {}  # everything is still owned by the others
    clients.append(fourth)
    for _ in range(10):
        for cl in clients:
            cl.beat()
            no_partition_owned_twice(clients)
    assert sorted(cl.count() for cl in clients) == [3, 3, 3, 3]
    # sticky: the old members kept three of their four partitions
    for cl in clients[:3]:
        kept = cl.owned[TID] & before[cl.member_id][TID]
        assert len(kept) == 3


def test_partitions_added_to_a_subscribed_topic_are_assigned_without_moving_others() -> None:
    c = Coordinator()
    clients = [Client(c, f"m{i}") for i in range(3)]
    settle(clients)
    epoch = c.group.group_epoch
    before = {cl.member_id: dict(cl.owned) for cl in clients}
    settle(clients, 2)
    assert c.group.group_epoch == epoch  # unchanged metadata: no bump
    c.topics["t"] = TopicInfo("t", TID, 18)  # CreatePartitions: 12 -> 18
    clients[0].beat()
    assert c.group.group_epoch == epoch + 1  # the next heartbeat bumps the group epoch
    settle(clients)
    assert c.group.state_name() == "Stable"
    assert [cl.count() for cl in clients] == [6, 6, 6]
    no_partition_owned_twice(clients)
    for cl in clients:  # the new partitions were added; nothing moved
        assert cl.owned[TID] >= before[cl.member_id][TID]
    # the hash survives a reload: replaying the records does not bump again
    reloaded = Coordinator()
    reloaded.shard, reloaded.topics = c.shard, c.topics
    clients[1].c = reloaded
    clients[1].beat()
    assert reloaded.group.group_epoch == epoch + 1


def test_a_subscribed_topic_created_later_is_assigned() -> None:
    c = Coordinator()
    c.topics = {}
    clients = [Client(c, f"m{i}") for i in range(2)]
    settle(clients)
    assert [cl.count() for cl in clients] == [0, 0]
    c.topics = dict(TOPICS)
    settle(clients)
    assert [cl.count() for cl in clients] == [6, 6]


ID_A, ID_B, ID_C, ID_O, ID_O2 = (
    "9Zb-jtdaUcSrn8InGhs4hw",
    "KNBBNTTpURqO4FqehsSzFA",
    "J0EO1D1uWS-6kisajdmBjQ",
    "_gippwTaUd2r4fuj3_Ut_g",
    "QaIhIQvjWbOEi-BXsnBUYw",
)


def test_a_regex_subscription_is_resolved_by_the_coordinator() -> None:
    c = Coordinator()
    c.topics = {
        "metrics-a": TopicInfo("metrics-a", ID_A, 2),
        "other": TopicInfo("other", ID_O, 2),
        "__consumer_offsets": TopicInfo("__consumer_offsets", ID_C, 3),
    }
    clients = [Client(c, f"m{i}", subscribed_topic_regex=r"metrics-.*|__.*") for i in range(2)]
    settle(clients)  # a regex only: no names
    assert {tid for cl in clients for tid in cl.owned} == {ID_A}  # internal topics never match
    assert sorted(cl.count() for cl in clients) == [1, 1]
    epoch = c.group.group_epoch
    c.topics["metrics-b"] = TopicInfo("metrics-b", ID_B, 4)  # created later, matches
    c.topics["other-2"] = TopicInfo("other-2", ID_O2, 4)
    settle(clients)
    assert c.group.group_epoch == epoch + 1
    assert {tid for cl in clients for tid in cl.owned} == {ID_A, ID_B}
    assert sorted(cl.count() for cl in clients) == [3, 3]
    no_partition_owned_twice(clients)
    assert c.group.members["m0"].subscribed_topic_regex == r"metrics-.*|__.*"
    with pytest.raises(InvalidRegularExpressionError):
        c.beat("m9", 0, {}, subscribed_topic_regex="metrics-(")


def test_leaving_member_partitions_move() -> None:
    c = Coordinator()
    clients = [Client(c, f"m{i}") for i in range(3)]
    settle(clients)
    gone = clients.pop()
    result = c.beat(gone.member_id, -1, None)
    assert result.member_epoch == -1
    settle(clients)
    assert sorted(cl.count() for cl in clients) == [6, 6]
    assert gone.member_id not in c.group.members


def test_epoch_errors() -> None:
    c = Coordinator()
    a = Client(c, "a")
    settle([a])
    with pytest.raises(FencedMemberEpochError):
        c.beat("a", a.epoch + 1, None)
    with pytest.raises(UnknownMemberIdError):
        c.beat("nobody", 1, None)
    with pytest.raises(GroupIdNotFoundError):
        heartbeat(None, HeartbeatRequest("other", "x", 3), TOPICS)
    with pytest.raises(InvalidRequestError):
        heartbeat(None, HeartbeatRequest("g", "x", 0, rebalance_timeout_ms=1), TOPICS)
    with pytest.raises(UnsupportedAssignorError):
        c.beat("b", 0, {}, server_assignor="sticky-ish")


def test_previous_epoch_is_accepted_when_the_answer_was_lost() -> None:
    c = Coordinator()
    a = Client(c, "a")
    settle([a])
    b = Client(c, "b")
    settle([a, b])
    member = c.group.members["a"]
    # "a" resends its previous epoch, owning a subset of its assignment: accepted
    result = c.beat("a", member.previous_member_epoch, {TID: frozenset(sorted(a.owned[TID])[:1])})
    assert result.member_epoch == member.member_epoch


def test_static_member_comes_back_with_its_partitions_without_a_rebalance() -> None:
    c = Coordinator()
    a = Client(c, "a", instance_id="i-a")
    b = Client(c, "b", instance_id="i-b")
    settle([a, b])
    epoch = c.group.group_epoch
    owned = dict(a.owned)
    c.beat("a", -2, None, instance_id="i-a")
    assert c.group.members["a"].member_epoch == -2
    with pytest.raises(UnreleasedInstanceIdError):
        c.beat("b2", 0, {}, instance_id="i-b")
    back = Client(c, "a2", instance_id="i-a")
    result = back.beat()
    assert result.assignment == owned
    assert "a" not in c.group.members
    assert c.group.group_epoch == epoch


def test_assignors() -> None:
    members = {f"m{i}": Member(f"m{i}", subscribed_topic_names=("t",)) for i in range(5)}
    uniform = assign_uniform(members, TOPICS, {})
    assert sorted(len(a[TID]) for a in uniform.values()) == [2, 2, 2, 3, 3]
    ranges = assign_range(members, TOPICS, {})
    assert ranges["m0"][TID] == frozenset({0, 1, 2})
    assert ranges["m4"][TID] == frozenset({10, 11})
    # sticky: a new member takes from others without moving anything else
    members["m5"] = Member("m5", subscribed_topic_names=("t",))
    again = assign_uniform(members, TOPICS, uniform)
    moved = sum(len(uniform[m][TID] - again[m][TID]) for m in uniform)
    assert moved == 2
    assert sorted(len(a.get(TID, ())) for a in again.values()) == [2] * 6


def test_offset_commit_checks() -> None:
    c = Coordinator()
    a = Client(c, "a")
    settle([a])
    owned = min(a.owned[TID])
    records, outcome = offset_commit_records(
        c.group, "g", "a", a.epoch, [("t", owned, 10, -1, "")], TOPICS, 1000
    )
    assert outcome == [("t", owned, None)]
    c.write(records)
    assert c.shard.offsets["g"][("t", owned)].offset == 10
    with pytest.raises(StaleMemberEpochError):
        offset_commit_records(c.group, "g", "a", a.epoch - 1, [], TOPICS, 0)
    with pytest.raises(UnknownMemberIdError):
        offset_commit_records(c.group, "g", "zz", 1, [], TOPICS, 0)
    with pytest.raises(UnknownMemberIdError):  # admin commit to a group with members
        offset_commit_records(c.group, "g", "", -1, [], TOPICS, 0)
    _, outcome = offset_commit_records(
        None, "empty", "", -1, [("t", 0, 1, -1, "x" * 5000), ("nope", 0, 1, -1, "")], TOPICS, 0
    )
    assert isinstance(outcome[0][2], OffsetMetadataTooLargeError)
    assert isinstance(outcome[1][2], UnknownTopicOrPartitionError)
    validate_offset_fetch(c.group, "", -1)
    with pytest.raises(StaleMemberEpochError):
        validate_offset_fetch(c.group, "a", 99)


def test_member_expiry_and_group_deletion_records() -> None:
    c = Coordinator()
    a = Client(c, "a")
    settle([a])
    c.write(member_leave_records(c.group, "a"))
    assert c.group.members == {}
    assert c.group.state_name() == "Empty"
    c.write(delete_group_records(c.group, "g", [("t", 0)]))
    assert "g" not in c.shard.groups
    assert "g" not in c.shard.offsets
