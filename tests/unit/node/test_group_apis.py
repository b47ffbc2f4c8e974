"""The group APIs' one policy (node.apis.groups), over a coordinator stand-in that records what
reaches it: the offset APIs check READ (commit, delete) or DESCRIBE (fetch) on each topic
after the group's own ACL, and an unknown topic or partition, before the coordinator sees
anything — whichever door calls them (the gRPC door used to skip the topic checks)."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, cast

from node.apis.groups import GroupApis
from node.coordinator.group_requests import (
    DescribedGroup,
    OffsetCommitPartition,
    OffsetCommitResult,
    OffsetDeleteResult,
    OffsetFetchPartition,
    OffsetFetchResult,
    PartitionResult,
)
from node.core.metadata_cache import MetadataCache, Snapshot
from node.security.auth_helper import AuthHelper
from odradek.acl import AclOperation, ResourceType
from tests.unit.node.test_auth_helper import ALICE, _Acls


@dataclass
class _Coordinator:
    calls: list[tuple[str, Any]] = field(default_factory=list)

    def offset_commit(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        partitions: list[OffsetCommitPartition],
        instance_id: str | None = None,
        api_version: int | None = None,
    ) -> OffsetCommitResult:
        self.calls.append(("commit", [(p.topic, p.partition) for p in partitions]))
        return OffsetCommitResult(
            0, tuple(PartitionResult(p.topic, p.partition) for p in partitions)
        )

    def offset_commit_later(self, *args: Any, **kwargs: Any) -> Future[OffsetCommitResult]:
        done: Future[OffsetCommitResult] = Future()
        done.set_result(self.offset_commit(*args, **kwargs))
        return done

    def txn_offset_commit_later(
        self, group_id: str, producer_id: int, producer_epoch: int, partitions: Any, **_: Any
    ) -> Future[OffsetCommitResult]:
        self.calls.append(("txn-commit", [(p.topic, p.partition) for p in partitions]))
        done: Future[OffsetCommitResult] = Future()
        done.set_result(
            OffsetCommitResult(0, tuple(PartitionResult(p.topic, p.partition) for p in partitions))
        )
        return done

    def offset_fetch(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        wanted: Any,
        require_stable: bool = False,
    ) -> OffsetFetchResult:
        self.calls.append(("fetch", wanted))
        found = [("orders", 0), ("secret", 0)] if wanted is None else wanted
        return OffsetFetchResult(
            partitions=tuple(OffsetFetchPartition(t, p, committed_offset=7) for t, p in found)
        )

    def offset_delete(self, group_id: str, partitions: list[tuple[str, int]]) -> OffsetDeleteResult:
        self.calls.append(("delete", partitions))
        return OffsetDeleteResult(partitions=tuple(PartitionResult(t, p) for t, p in partitions))

    def describe_groups(self, group_ids: list[str]) -> list[DescribedGroup]:
        return [
            DescribedGroup(g, group_type="classic" if g == "classic" else "consumer")
            for g in group_ids
        ]


def _apis(*grants: tuple[ResourceType, str, AclOperation]) -> tuple[GroupApis, _Coordinator]:
    acls = _Acls()
    for grant in grants:
        acls.allow(*grant)
    metadata = MetadataCache()
    partitions = {("orders", 0): cast(Any, None), ("secret", 0): cast(Any, None)}
    metadata._snapshot = Snapshot(partitions=partitions)
    coordinator = _Coordinator()
    return GroupApis(cast(Any, coordinator), metadata, AuthHelper(acls)), coordinator


GROUP_READ = (ResourceType.GROUP, "g", AclOperation.READ)
ORDERS_READ = (ResourceType.TOPIC, "orders", AclOperation.READ)


def test_a_commit_needs_read_on_each_topic_and_a_known_partition() -> None:
    apis, coordinator = _apis(GROUP_READ, ORDERS_READ)
    commits = [
        OffsetCommitPartition("secret", 0, 5),
        OffsetCommitPartition("orders", 0, 5),
        OffsetCommitPartition("orders", 3, 5),  # no such partition
    ]
    result = apis.offset_commit(ALICE, "g", "", -1, commits)
    assert [(r.topic, r.partition, r.error_code) for r in result.partitions] == [
        ("secret", 0, 29),
        ("orders", 0, 0),
        ("orders", 3, 3),
    ]
    assert coordinator.calls == [("commit", [("orders", 0)])]


def test_a_commit_refused_on_the_group_reaches_nothing() -> None:
    apis, coordinator = _apis(ORDERS_READ)
    result = apis.offset_commit(ALICE, "g", "", -1, [OffsetCommitPartition("orders", 0, 5)])
    assert result.error_code == 30 and [r.error_code for r in result.partitions] == [30]
    assert coordinator.calls == []


TXN_WRITE = (ResourceType.TRANSACTIONAL_ID, "app", AclOperation.WRITE)


def test_a_txn_offset_commit_checks_the_transactional_id_the_group_then_each_topic() -> None:
    """Kafka's handleTxnOffsetCommitRequest: WRITE on the transactional id (53 on every
    partition), READ on the group (30 on every partition), READ on each topic (29) and the
    partition known (3); only the rest reach the coordinator."""
    commits = [
        OffsetCommitPartition("secret", 0, 5),
        OffsetCommitPartition("orders", 0, 5),
        OffsetCommitPartition("orders", 3, 5),
    ]

    def codes(*grants: tuple[ResourceType, str, AclOperation]) -> tuple[list[int], list[Any]]:
        apis, coordinator = _apis(*grants)
        result = apis.txn_offset_commit_later(ALICE, "app", "g", 7, 0, commits).result()
        return [r.error_code for r in result.partitions], coordinator.calls

    assert codes(GROUP_READ, ORDERS_READ) == ([53, 53, 53], [])
    assert codes(TXN_WRITE, ORDERS_READ) == ([30, 30, 30], [])
    assert codes(TXN_WRITE, GROUP_READ, ORDERS_READ) == (
        [29, 0, 3],
        [("txn-commit", [("orders", 0)])],
    )


def test_a_fetch_hides_or_refuses_the_topics_the_caller_may_not_describe() -> None:
    apis, coordinator = _apis(
        (ResourceType.GROUP, "g", AclOperation.DESCRIBE),
        (ResourceType.TOPIC, "orders", AclOperation.DESCRIBE),
    )
    everything = apis.offset_fetch(ALICE, "g", "", -1, None)
    assert [(p.topic, p.committed_offset) for p in everything.partitions] == [("orders", 7)]
    named = apis.offset_fetch(ALICE, "g", "", -1, [("secret", 0), ("orders", 0)])
    assert [(p.topic, p.error_code, p.committed_offset) for p in named.partitions] == [
        ("orders", 0, 7),
        ("secret", 29, -1),
    ]
    assert coordinator.calls[-1] == ("fetch", [("orders", 0)])
    refused = apis.offset_fetch(ALICE, "other", "", -1, None)
    assert refused.error_code == 30 and refused.partitions == ()


def test_an_offset_delete_checks_the_group_then_each_topic() -> None:
    apis, coordinator = _apis((ResourceType.GROUP, "g", AclOperation.DELETE), ORDERS_READ)
    result = apis.offset_delete(ALICE, "g", [("secret", 0), ("orders", 0)])
    assert [(r.topic, r.error_code) for r in result.partitions] == [("secret", 29), ("orders", 0)]
    assert coordinator.calls == [("delete", [("orders", 0)])]
    assert apis.offset_delete(ALICE, "h", [("orders", 0)]).error_code == 30


def test_consumer_group_describe_answers_group_id_not_found_for_a_classic_group() -> None:
    apis, _ = _apis(
        (ResourceType.GROUP, "classic", AclOperation.DESCRIBE),
        (ResourceType.GROUP, "g", AclOperation.DESCRIBE),
    )
    described = apis.consumer_group_describe(ALICE, ["classic", "g", "hidden"])
    assert [(g.group_id, g.error_code) for g in described] == [
        ("classic", 69),
        ("g", 69),  # known only by its offsets: epoch 0, no member
        ("hidden", 30),
    ]
    # odradek's own describe (the gRPC API) describes either kind
    assert [g.error_code for g in apis.describe_groups(ALICE, ["classic"])] == [0]
