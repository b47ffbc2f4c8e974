"""The share group room hosted by the group coordinator's shards, with a fake shard (its
writes replayed at once, as the coordinator's ``_write``) and a manual clock: sessions expire,
only the group's existence and epoch are written (members rejoin after a reload), one kind per
group id, DeleteGroups, and the metrics' counts."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import pytest

from node.coordinator.group_coordinator_config import GroupCoordinatorConfig
from node.coordinator.group_state import GroupRecord, GroupShard, TopicInfo
from node.metrics.endpoint import NodeCollector
from node.share_group.share_group import ShareHeartbeatRequest
from node.share_group.share_group_coordinator import ShareGroupCoordinator, ShareGroupShard
from odradek.clock import ManualClock
from odradek.errors import (
    FencedMemberEpochError,
    GroupIdNotFoundError,
    NonEmptyGroupError,
    OdradekError,
    UnknownMemberIdError,
)
from odradek.group_records import ShareGroupMetadataKey, ShareGroupMetadataValue

TOPICS = {"t": TopicInfo("t", "TID", 1)}


@dataclass
class FakeShard:
    lock: Any = field(default_factory=threading.RLock)
    share: ShareGroupShard = field(default_factory=ShareGroupShard)
    classic: dict[str, Any] = field(default_factory=dict)
    state: GroupShard = field(default_factory=GroupShard)
    log: list[GroupRecord] = field(default_factory=list)


class Harness:
    def __init__(self, session_timeout_ms: int = 45_000) -> None:
        self.clock = ManualClock()
        self.shard = FakeShard()
        self.fail_writes = False
        config = GroupCoordinatorConfig(
            group_share_session_timeout_ms=session_timeout_ms, group_share_max_size=3
        )

        def write(shard: FakeShard, records: list[GroupRecord]) -> None:
            if self.fail_writes:
                raise OdradekError("append failed")
            for key, value in records:
                shard.log.append((key, value))
                shard.share.replay(key, value)

        def durable(shard: FakeShard) -> Future[OdradekError | None]:
            done: Future[OdradekError | None] = Future()
            done.set_result(None)
            return done

        self.share = ShareGroupCoordinator(
            config, self.clock, lambda gid: self.shard, write, durable, lambda: dict(TOPICS)
        )

    def heartbeat(self, member: str, epoch: int, topics: tuple[str, ...] | None = None) -> Any:
        request = ShareHeartbeatRequest("g", member, epoch, subscribed_topic_names=topics)
        return self.share.heartbeat_later(request).result()


def test_join_writes_the_epoch_and_members_expire_after_the_session_timeout() -> None:
    h = Harness(session_timeout_ms=45_000)
    a = h.heartbeat("a", 0, ("t",))
    b = h.heartbeat("b", 0, ("t",))
    assert (a.error_code, a.member_epoch, b.member_epoch) == (0, 1, 2)
    assert a.heartbeat_interval_ms == 5_000
    assert [(k, getattr(v, "epoch", None)) for k, v in h.shard.log] == [
        (ShareGroupMetadataKey("g"), 1),
        (ShareGroupMetadataKey("g"), 2),
    ]
    h.clock.advance(30_000)
    assert h.heartbeat("a", 1).error_code == 0  # a's session restarts; b's does not
    h.clock.advance(20_000)
    h.share.tick(h.shard, h.clock.monotonic_ms())
    group = h.shard.share.groups["g"]
    assert set(group.members) == {"a"} and group.group_epoch == 3
    key, value = h.shard.log[-1]
    assert key == ShareGroupMetadataKey("g") and isinstance(value, ShareGroupMetadataValue)
    assert value.epoch == 3
    assert h.heartbeat("b", 2).error_code == UnknownMemberIdError.code


def test_a_reloaded_group_is_back_at_its_epoch_without_members() -> None:
    h = Harness()
    h.heartbeat("a", 0, ("t",))
    h.heartbeat("b", 0, ("t",))
    reloaded = ShareGroupShard()
    for key, value in h.shard.log:
        reloaded.replay(key, value)
    h.shard.share = reloaded
    group = reloaded.groups["g"]
    assert (group.group_epoch, group.members) == (2, {})
    assert h.heartbeat("a", 2).error_code == UnknownMemberIdError.code
    rejoined = h.heartbeat("a", 0, ("t",))
    assert (rejoined.error_code, rejoined.member_epoch) == (0, 3)


def test_a_failed_write_changes_nothing() -> None:
    h = Harness()
    h.fail_writes = True
    failed = h.heartbeat("a", 0, ("t",))
    assert failed.error_code != 0
    assert h.shard.share.groups == {} and h.shard.share.sessions == {}


def test_errors_are_answered_not_raised() -> None:
    h = Harness()
    h.heartbeat("a", 0, ("t",))
    assert h.heartbeat("a", 9).error_code == FencedMemberEpochError.code
    for m in ("b", "c"):
        h.heartbeat(m, 0, ("t",))
    assert h.heartbeat("d", 0, ("t",)).error_code == 81  # GROUP_MAX_SIZE_REACHED (max 3)


def test_one_kind_per_group_id() -> None:
    h = Harness()
    h.shard.classic["g"] = object()
    refused = h.heartbeat("a", 0, ("t",))
    assert refused.error_code == GroupIdNotFoundError.code
    assert "not a share group" in refused.error_message
    (described,) = h.share.describe(["g"])
    assert described.error_code == GroupIdNotFoundError.code
    h.shard.classic.clear()
    h.heartbeat("a", 0, ("t",))
    with pytest.raises(GroupIdNotFoundError, match="not a consumer group"):
        h.share.check_not_share(h.shard, "g")


def test_describe_list_delete_and_counts() -> None:
    h = Harness()
    h.heartbeat("a", 0, ("t",))
    (described,) = h.share.describe(["g"])
    assert (described.group_state, described.assignor_name, described.group_type) == (
        "Stable",
        "simple",
        "share",
    )
    (member,) = described.members
    assert [(tp.topic_name, tp.partitions) for tp in member.assignment] == [("t", (0,))]
    (listed,) = h.share.listed(h.shard, set())
    assert (listed.group_type, listed.protocol_type, listed.group_state) == (
        "share",
        "share",
        "Stable",
    )
    assert h.share.listed(h.shard, {"empty"}) == []
    assert h.share.counts([h.shard]) == ({"Empty": 0, "Stable": 1}, 1)
    with pytest.raises(NonEmptyGroupError):
        h.share.delete(h.shard, "g")
    h.heartbeat("a", -1)
    assert h.share.delete(h.shard, "g") is True
    assert h.shard.log[-1] == (ShareGroupMetadataKey("g"), None)
    assert h.shard.share.groups == {}
    assert h.share.delete(h.shard, "g") is False


@dataclass
class FakeNode:
    groups: Any
    replicas: Any = None
    alter_partitions: Any = None
    controller: Any = None
    metadata: Any = None
    log_manager: Any = None
    zk: Any = None


def test_metrics_count_share_groups_and_members() -> None:
    h = Harness()
    h.heartbeat("a", 0, ("t",))
    h.heartbeat("b", 0, ("t",))

    class Groups:
        def share_group_counts(self) -> tuple[dict[str, int], int]:
            return h.share.counts([h.shard])

    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in NodeCollector(FakeNode(Groups())).collect()
        for s in family.samples
    }
    prefix = "kafka_server_group_coordinator_metrics_"
    assert samples[(prefix + "group_count", (("protocol", "share"),))] == 1
    assert samples[(prefix + "share_group_count", (("state", "Stable"),))] == 1
    assert samples[(prefix + "share_group_count", (("state", "Empty"),))] == 0
    assert samples[(prefix + "share_group_member_count", ())] == 2
