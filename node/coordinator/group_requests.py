"""The group coordinator's requests and answers, as plain values (issue 24): what a front door
hands :class:`~node.coordinator.group_coordinator.GroupCoordinator` and gets back.

Names are Kafka's (the KIP-848 ``ConsumerGroupHeartbeat`` and ``ConsumerGroupDescribe``
schemas, ``OffsetCommit``, ``OffsetFetch``, ``OffsetDelete``, ``ListGroups``, ``DeleteGroups``,
``FindCoordinator``), flattened: a partition names its ``topic``. Error codes are Kafka's
(:mod:`odradek.errors`; ``0``: none). Assignments name topics by id (KIP-848), each with its
name for readability. The heartbeat's request is :class:`HeartbeatRequest` of
:mod:`node.coordinator.group_state` (the coordinator's pure state machine takes it as it is).

Immutable values (frozen dataclasses); thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from node.coordinator.classic_group import (
    ClassicGroup,
    consumer_assignment_topics,
    consumer_subscription_topics,
)
from node.coordinator.group_state import Assignment, HeartbeatRequest, Member, TopicInfo

__all__ = [
    "Coordinator",
    "DeletedGroup",
    "DescribedGroup",
    "DescribedMember",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "ListGroupsResult",
    "ListedGroup",
    "OffsetCommitPartition",
    "OffsetCommitResult",
    "OffsetDeleteResult",
    "OffsetFetchPartition",
    "OffsetFetchResult",
    "PartitionResult",
    "TopicPartitions",
    "described_classic_group",
    "described_member",
    "topic_partitions",
]


@dataclass(frozen=True, slots=True)
class Coordinator:
    """FindCoordinator's answer for one group (``key``): the coordinator's node and its
    endpoint on the request's listener; -1 and an error (INVALID_GROUP_ID,
    COORDINATOR_NOT_AVAILABLE) otherwise."""

    key: str
    node_id: int = -1
    host: str = ""
    port: int = -1
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    """Partitions of one topic, by id (KIP-848); ``topic_name`` for readability."""

    topic_id: str
    partitions: tuple[int, ...]
    topic_name: str = ""


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    """``ConsumerGroupHeartbeatResponse``: the member's id and epoch, and its full assignment
    when it changed (``None``: no change to tell)."""

    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    error_code: int = 0
    error_message: str = ""
    assignment: tuple[TopicPartitions, ...] | None = None


@dataclass(frozen=True, slots=True)
class OffsetCommitPartition:
    """One partition's commit (``OffsetCommitRequestPartition``)."""

    topic: str
    partition: int
    committed_offset: int
    committed_leader_epoch: int = -1
    committed_metadata: str = ""


@dataclass(frozen=True, slots=True)
class PartitionResult:
    """One partition's outcome (OffsetCommit, OffsetDelete)."""

    topic: str
    partition: int
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class OffsetCommitResult:
    """An OffsetCommit's answer: a group-level error (NOT_COORDINATOR, ...) is also set on
    every partition, as Kafka's clients read it there."""

    error_code: int = 0
    partitions: tuple[PartitionResult, ...] = ()


@dataclass(frozen=True, slots=True)
class OffsetFetchPartition:
    """One partition's committed offset (-1, -1, "" when none is committed)."""

    topic: str
    partition: int
    committed_offset: int = -1
    committed_leader_epoch: int = -1
    metadata: str = ""
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class OffsetFetchResult:
    error_code: int = 0
    error_message: str = ""
    partitions: tuple[OffsetFetchPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class OffsetDeleteResult:
    error_code: int = 0
    error_message: str = ""
    partitions: tuple[PartitionResult, ...] = ()


@dataclass(frozen=True, slots=True)
class ListedGroup:
    """``ListGroupsResponse.ListedGroup``; ``group_state`` is Kafka's name (Empty, Assigning,
    Reconciling, Stable, Dead)."""

    group_id: str
    group_state: str
    protocol_type: str = "consumer"
    group_type: str = "consumer"


@dataclass(frozen=True, slots=True)
class ListGroupsResult:
    error_code: int = 0
    groups: tuple[ListedGroup, ...] = ()


@dataclass(frozen=True, slots=True)
class DescribedMember:
    """``ConsumerGroupDescribeResponse.Member``."""

    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: tuple[TopicPartitions, ...]
    target_assignment: tuple[TopicPartitions, ...]
    member_state: str
    """STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS."""
    instance_id: str | None = None
    rack_id: str | None = None
    subscribed_topic_regex: str | None = None
    member_metadata: bytes = b""
    """A classic member: its metadata for the group's protocol (DescribeGroups)."""
    member_assignment: bytes = b""
    """A classic member: its assignment as the leader encoded it (DescribeGroups)."""
    member_type: int = -1
    """ConsumerGroupDescribe v1's ``MemberType`` (KIP-1099): 1 a KIP-848 member, 0 a member of a
    consumer group speaking the classic protocol, -1 a classic group's member."""


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    """``ConsumerGroupDescribeResponse.DescribedGroup``; GROUP_ID_NOT_FOUND (69) for an unknown
    group, NOT_COORDINATOR and kin when this node does not hold it."""

    group_id: str
    error_code: int = 0
    error_message: str = ""
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedMember, ...] = ()
    group_type: str = "consumer"
    """"consumer" (KIP-848) or "classic"."""
    protocol_type: str = "consumer"
    """A classic group's protocol type ("" while Empty): DescribeGroups' ``protocol_type``."""
    protocol: str = ""
    """A classic group's chosen protocol (the assignor): DescribeGroups' ``protocol_data``."""


@dataclass(frozen=True, slots=True)
class DeletedGroup:
    """``DeleteGroupsResponse.DeletableGroupResult``: NON_EMPTY_GROUP (68) for a group with
    members, GROUP_ID_NOT_FOUND (69) for an unknown one."""

    group_id: str
    error_code: int = 0
    error_message: str = ""


def topic_partitions(
    assignment: Assignment, names: Mapping[str, str]
) -> tuple[TopicPartitions, ...]:
    """An assignment by topic id, sorted, each topic with its name ("" if unknown)."""
    return tuple(
        TopicPartitions(tid, tuple(sorted(ps)), names.get(tid, ""))
        for tid, ps in sorted(assignment.items())
    )


def described_member(m: Member, target: Assignment, names: Mapping[str, str]) -> DescribedMember:
    """A member as ConsumerGroupDescribe gives it (``target``: its target assignment)."""
    return DescribedMember(
        member_id=m.member_id,
        member_epoch=m.member_epoch,
        client_id=m.client_id,
        client_host=m.client_host,
        subscribed_topic_names=tuple(m.subscribed_topic_names),
        assignment=topic_partitions(m.assigned, names),
        target_assignment=topic_partitions(target, names),
        member_state=m.state.name,
        instance_id=m.instance_id,
        rack_id=m.rack_id,
        subscribed_topic_regex=m.subscribed_topic_regex,
        member_type=1 if m.classic is None else 0,
    )


def described_classic_group(group: ClassicGroup, topics: Mapping[str, TopicInfo]) -> DescribedGroup:
    """A classic group as DescribeGroups gives it: Kafka's state name, protocol type and
    protocol, each member with its client id and host, metadata and assignment (decoded for
    protocol type ``consumer``; the generation stands for the member epoch)."""
    consumer = group.protocol_type == "consumer"
    members = []
    for m in group.members.values():
        assigned = consumer_assignment_topics(m.assignment) if consumer else {}
        metadata = m.metadata(group.protocol_name)
        members.append(
            DescribedMember(
                member_id=m.member_id,
                member_epoch=group.generation_id,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=tuple(
                    sorted(consumer_subscription_topics(metadata)) if consumer else ()
                ),
                assignment=tuple(
                    TopicPartitions(topics[t].topic_id if t in topics else "", ps, t)
                    for t, ps in sorted(assigned.items())
                ),
                target_assignment=(),
                member_state="",
                instance_id=m.instance_id,
                member_metadata=metadata,
                member_assignment=m.assignment,
            )
        )
    return DescribedGroup(
        group_id=group.group_id,
        group_state=group.state.value,
        group_epoch=group.generation_id,
        assignment_epoch=group.generation_id,
        assignor_name=group.protocol_name or "",
        members=tuple(members),
        group_type="classic",
        protocol_type=group.protocol_type or "",
        protocol=group.protocol_name or "",
    )
