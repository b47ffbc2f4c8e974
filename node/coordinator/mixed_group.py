"""Classic members in a consumer group (Kafka 4.0's mixed groups): the classic protocol's
JoinGroup, SyncGroup, Heartbeat and LeaveGroup answered from a KIP-848 consumer group, pure.

Kafka's ``GroupMetadataManager.classicGroupJoinToConsumerGroup``,
``classicGroupSyncToConsumerGroup``, ``classicGroupHeartbeatToConsumerGroup`` and
``classicGroupLeaveToConsumerGroup``. A classic member of a consumer group is an ordinary
:class:`~.group_state.Member` whose ``classic`` holds its session timeout and JoinGroup
protocols. The coordinator assigns it server-side, as any member: its JoinGroup is the
heartbeat that subscribes it and moves it towards its target (the partitions its subscription
says it owns are what it reports holding), SyncGroup hands it its current partitions as
ConsumerProtocol bytes, and a Heartbeat answers REBALANCE_IN_PROGRESS when it must join again
(its epoch is behind the group's, it has partitions to give up, or partitions it waits for were
released). No member is ever leader: a JoinGroup answer names none and lists no members, so the
client runs no assignor. Each member sees its own signal; there is no group-wide barrier.

Every function takes the group as it is (unchanged: the coordinator replays the records once
written) and returns records and answers; the caller runs the timers (a classic member's
session timer uses its own ``session.timeout.ms``; after a JoinGroup it must sync, and after a
REBALANCE_IN_PROGRESS join again, within its rebalance timeout).

Pure and thread-safe (nothing shared is changed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from odradek.errors import (
    FencedInstanceIdError,
    OdradekError,
    UnknownMemberIdError,
)
from odradek.group_records import (
    ClassicProtocol,
    ConsumerGroupClassicMemberMetadata,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    MemberState,
)

from .classic_group import (
    GROUP_MAX_SIZE_REACHED,
    ILLEGAL_GENERATION,
    INCONSISTENT_GROUP_PROTOCOL,
    INVALID_SESSION_TIMEOUT,
    MEMBER_ID_REQUIRED,
    NONE,
    REBALANCE_IN_PROGRESS,
    ClassicGroupConfig,
    JoinGroupRequest,
    JoinGroupResult,
    LeaveMember,
    LeaveMemberResult,
    SyncGroupRequest,
    SyncGroupResult,
)
from .consumer_protocol import (
    ConsumerProtocolError,
    decode_subscription,
    decode_version,
    encode_assignment,
)
from .group_state import (
    ConsumerGroup,
    GroupRecord,
    Member,
    TopicInfo,
    subscribe_and_reconcile,
    subscription_metadata_hash,
    to_topic_partitions,
)

__all__ = [
    "MixedJoin",
    "MixedLeave",
    "MixedSync",
    "classic_heartbeat",
    "classic_join",
    "classic_leave",
    "classic_sync",
    "must_rejoin",
    "supports_classic_protocols",
]

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True, slots=True)
class MixedJoin:
    """What a classic JoinGroup to a consumer group decided."""

    reply: JoinGroupResult
    records: list[GroupRecord] = field(default_factory=list)
    member: Member | None = None
    """The joined member as the records leave it (None: refused, nothing to write)."""
    replaced_member_id: str | None = None
    """A static member this one replaced (its timers go; the group may convert back)."""


@dataclass(frozen=True, slots=True)
class MixedSync:
    reply: SyncGroupResult
    rejoin: bool = False
    """REBALANCE_IN_PROGRESS: the member's join timer starts."""


@dataclass(frozen=True, slots=True)
class MixedLeave:
    results: list[LeaveMemberResult]
    records: list[GroupRecord]
    removed: list[str]
    """Member ids removed (their timers go)."""


def _join_error(code: int, member_id: str, message: str = "") -> MixedJoin:
    return MixedJoin(JoinGroupResult(error_code=code, member_id=member_id, error_message=message))


def supports_classic_protocols(group: ConsumerGroup, protocol_type: str, names: set[str]) -> bool:
    """Kafka's ``ConsumerGroup.supportsClassicProtocols``: the protocol type is ``consumer``
    and one of ``names`` is supported by every classic member already in the group (with none,
    any name will do)."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE or not names:
        return False
    for m in group.members.values():
        if m.classic is not None:
            names = names & {p.name for p in m.classic.supported_protocols}
    return bool(names)


def _member_for_join(
    group: ConsumerGroup, req: JoinGroupRequest, member_id: str, unknown: bool
) -> tuple[Member, Member | None]:
    """The member a JoinGroup joins as, and the static member it replaces (Kafka's
    ``getOrMaybeSubscribe{Static,Dynamic}ConsumerGroupMember`` with the classic protocol: a
    classic member joining with a held instance id always replaces its holder). Raises
    UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID."""
    if req.instance_id is not None:
        holder = group.static_member(req.instance_id)
        if unknown:
            if holder is None:
                return Member(member_id), None
            replacing = dataclasses.replace(
                holder, member_id=member_id, member_epoch=0, previous_member_epoch=0
            )
            return replacing, holder
        if holder is None:
            raise UnknownMemberIdError(f"Instance id {req.instance_id} is unknown.")
        if holder.member_id != member_id:
            raise FencedInstanceIdError(
                f"Instance id {req.instance_id} is held by another member than {member_id}."
            )
        member = holder
    else:
        found = group.members.get(member_id)
        if found is None:
            return Member(member_id), None
        member = found
    if member.classic is None:
        raise UnknownMemberIdError(f"Member {member_id} does not use the classic protocol.")
    return member, None


def classic_join(
    group: ConsumerGroup,
    req: JoinGroupRequest,
    new_member_id: str,
    topics: Mapping[str, TopicInfo],
    config: ClassicGroupConfig,
    *,
    max_group_size: int,
) -> MixedJoin:
    """Kafka's ``classicGroupJoinToConsumerGroup``: a classic member joins (or rejoins) the
    non-empty consumer ``group``. ``new_member_id`` is the id a member joining without one gets;
    ``max_group_size`` is ``group.consumer.max.size``. The answer carries the member's epoch as
    its generation, protocol type ``consumer``, its first protocol's name and no leader; it is
    sent once the records are written."""
    if not (
        config.group_min_session_timeout_ms
        <= req.session_timeout_ms
        <= config.group_max_session_timeout_ms
    ):
        return _join_error(INVALID_SESSION_TIMEOUT, req.member_id)
    unknown = req.member_id == ""
    member_id = new_member_id if unknown else req.member_id
    held = req.instance_id is not None and group.static_member(req.instance_id) is not None
    if member_id not in group.members and not held and len(group.members) >= max_group_size:
        return _join_error(
            GROUP_MAX_SIZE_REACHED,
            req.member_id,
            f"The consumer group has reached its maximum capacity of {max_group_size} members.",
        )
    if not supports_classic_protocols(
        group, req.protocol_type, {name for name, _ in req.protocols}
    ):
        return _join_error(
            INCONSISTENT_GROUP_PROTOCOL,
            req.member_id,
            f"The group {group.group_id} uses the consumer protocol with assignors none of "
            f"which the member supports.",
        )
    if unknown and req.instance_id is None and req.require_known_member_id:
        return _join_error(MEMBER_ID_REQUIRED, member_id)
    try:
        subscription = decode_subscription(req.protocols[0][1])
    except ConsumerProtocolError as e:
        return _join_error(
            INCONSISTENT_GROUP_PROTOCOL,
            req.member_id,
            f"Malformed embedded consumer protocol in subscription deserialization: {e}",
        )
    try:
        member, replaced = _member_for_join(group, req, member_id, unknown)
    except OdradekError as e:
        return _join_error(e.code, req.member_id, e.message)

    work = ConsumerGroup(
        group.group_id,
        group.group_epoch,
        group.assignment_epoch,
        dict(group.members),
        dict(group.target),
        group.metadata_hash,
    )
    gid = group.group_id
    records: list[GroupRecord] = []
    if replaced is not None:
        # Kafka's replaceMember: the predecessor's records go, its target moves to the new id
        old = replaced.member_id
        records += [
            (ConsumerGroupCurrentMemberAssignmentKey(gid, old), None),
            (ConsumerGroupTargetAssignmentMemberKey(gid, old), None),
            (ConsumerGroupMemberMetadataKey(gid, old), None),
        ]
        target = work.target.pop(old, {})
        work.target[member_id] = target
        del work.members[old]
        records.append(
            (
                ConsumerGroupTargetAssignmentMemberKey(gid, member_id),
                ConsumerGroupTargetAssignmentMemberValue(to_topic_partitions(target)),
            )
        )
    is_new = member_id not in group.members and replaced is None
    by_name = {t.name: t.topic_id for t in topics.values()}
    owned = {
        by_name[topic]: frozenset(ps)
        for topic, ps in subscription.owned_partitions
        if topic in by_name and ps
    }
    updated = dataclasses.replace(
        member,
        instance_id=req.instance_id,
        rack_id=subscription.rack_id or None,
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        server_assignor=None,
        subscribed_topic_names=tuple(sorted(set(subscription.topics))),
        subscribed_topic_regex=None,
        client_id=req.client_id,
        client_host=req.client_host,
        classic=ConsumerGroupClassicMemberMetadata(
            session_timeout_ms=req.session_timeout_ms,
            supported_protocols=tuple(ClassicProtocol(n, data) for n, data in req.protocols),
        ),
    )
    reconciled = subscribe_and_reconcile(
        work,
        member,
        updated,
        owned,
        topics,
        records,
        new=is_new,
        rewrite=is_new or replaced is not None,
    )
    reply = JoinGroupResult(
        generation_id=reconciled.member_epoch,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol_name=req.protocols[0][0],
        leader="",
        member_id=member_id,
        members=(),
    )
    return MixedJoin(
        reply,
        records,
        reconciled,
        None if replaced is None else replaced.member_id,
    )


def _classic_member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> Member:
    """Kafka's ``validateConsumerGroupMember`` and ``throwIfMemberDoesNotUseClassicProtocol``.
    Raises UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID."""
    if instance_id is not None:
        member = group.static_member(instance_id)
        if member is None:
            raise UnknownMemberIdError(f"Instance id {instance_id} is unknown.")
        if member.member_id != member_id:
            raise FencedInstanceIdError(
                f"Instance id {instance_id} is held by another member than {member_id}."
            )
    else:
        found = group.members.get(member_id)
        if found is None:
            raise UnknownMemberIdError(f"Member {member_id} is not a member of the group.")
        member = found
    if member.classic is None:
        raise UnknownMemberIdError(f"Member {member_id} does not use the classic protocol.")
    return member


def _waits_on_unreleased(group: ConsumerGroup, member: Member) -> bool:
    """Kafka's ``ConsumerGroup.waitingOnUnreleasedPartition``: a partition of its target that
    it does not hold is still held by another member."""
    target = group.target.get(member.member_id, {})
    for tid, ps in target.items():
        for p in ps - member.assigned.get(tid, frozenset()):
            owner = group.owner_of(tid, p)
            if owner is not None and owner != member.member_id:
                return True
    return False


def must_rejoin(group: ConsumerGroup, member: Member) -> bool:
    """Kafka's classic-member REBALANCE_IN_PROGRESS: its epoch is behind the group's, it has
    partitions to give up, or the partitions it waits for are free now."""
    return (
        member.member_epoch < group.group_epoch
        or member.state is MemberState.UNREVOKED_PARTITIONS
        or (
            member.state is MemberState.UNRELEASED_PARTITIONS
            and not _waits_on_unreleased(group, member)
        )
    )


def classic_sync(
    group: ConsumerGroup, req: SyncGroupRequest, topics: Mapping[str, TopicInfo]
) -> MixedSync:
    """Kafka's ``classicGroupSyncToConsumerGroup``: the member's current partitions as
    ConsumerProtocol bytes at the version of its own subscription (the request's assignments,
    if any, are ignored; nothing is written)."""
    try:
        member = _classic_member(group, req.member_id, req.instance_id)
    except OdradekError as e:
        return MixedSync(SyncGroupResult(e.code))
    if req.generation_id != member.member_epoch:
        return MixedSync(SyncGroupResult(ILLEGAL_GENERATION))
    assert member.classic is not None
    first = member.classic.supported_protocols[0]
    if (req.protocol_type is not None and req.protocol_type != CONSUMER_PROTOCOL_TYPE) or (
        req.protocol_name is not None and req.protocol_name != first.name
    ):
        return MixedSync(SyncGroupResult(INCONSISTENT_GROUP_PROTOCOL))
    if member.member_epoch < group.group_epoch and (
        member.state is not MemberState.UNREVOKED_PARTITIONS
    ):
        return MixedSync(SyncGroupResult(REBALANCE_IN_PROGRESS), rejoin=True)
    names = {t.topic_id: t.name for t in topics.values()}
    partitions = {names[tid]: ps for tid, ps in member.assigned.items() if tid in names}
    try:
        assignment = encode_assignment(partitions, decode_version(first.metadata))
    except ConsumerProtocolError:
        return MixedSync(SyncGroupResult(INCONSISTENT_GROUP_PROTOCOL))
    return MixedSync(
        SyncGroupResult(
            protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=first.name, assignment=assignment
        )
    )


def classic_heartbeat(
    group: ConsumerGroup, member_id: str, generation_id: int, instance_id: str | None
) -> int:
    """Kafka's ``classicGroupHeartbeatToConsumerGroup``: NONE (alive), REBALANCE_IN_PROGRESS
    (join again; :func:`must_rejoin`), ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
    FENCED_INSTANCE_ID. Nothing is written."""
    try:
        member = _classic_member(group, member_id, instance_id)
    except OdradekError as e:
        return e.code
    if generation_id != member.member_epoch:
        return ILLEGAL_GENERATION
    return REBALANCE_IN_PROGRESS if must_rejoin(group, member) else NONE


def classic_leave(
    group: ConsumerGroup, members: Sequence[LeaveMember], topics: Mapping[str, TopicInfo]
) -> MixedLeave:
    """Kafka's ``classicGroupLeaveToConsumerGroup``: each member's result; the removed
    members' tombstones and, if any left, one group epoch bump (with the subscribed topics'
    metadata hash of the members that remain). A member named by instance id alone (an
    administrator's leave) may be any member; one named by id must be a classic member."""
    gid = group.group_id
    results: list[LeaveMemberResult] = []
    records: list[GroupRecord] = []
    removed: list[str] = []
    remaining = dict(group.members)
    for who in members:
        try:
            if who.instance_id is None:
                member = _classic_member(group, who.member_id, None)
            else:
                found = group.static_member(who.instance_id)
                if found is None:
                    raise UnknownMemberIdError(f"Instance id {who.instance_id} is unknown.")
                member = found
                if who.member_id:
                    member = _classic_member(group, who.member_id, who.instance_id)
        except OdradekError as e:
            results.append(LeaveMemberResult(who.member_id, who.instance_id, e.code))
            continue
        if member.member_id in remaining:
            records += [
                (ConsumerGroupCurrentMemberAssignmentKey(gid, member.member_id), None),
                (ConsumerGroupTargetAssignmentMemberKey(gid, member.member_id), None),
                (ConsumerGroupMemberMetadataKey(gid, member.member_id), None),
            ]
            del remaining[member.member_id]
            removed.append(member.member_id)
        results.append(LeaveMemberResult(member.member_id, who.instance_id))
    if records:
        left = ConsumerGroup(gid, members=remaining)
        records.append(
            (
                ConsumerGroupMetadataKey(gid),
                ConsumerGroupMetadataValue(
                    group.group_epoch + 1,
                    subscription_metadata_hash(left.subscribed_topics(topics), topics),
                ),
            )
        )
    return MixedLeave(results, records, removed)
