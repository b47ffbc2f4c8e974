"""Online migration between classic groups and KIP-848 consumer groups, as Kafka 4.0: the
checks and the conversions, pure.

Kafka's ``GroupMetadataManager.validateOnlineUpgrade`` / ``validateOnlineDowngrade*`` /
``convertToConsumerGroup`` / ``convertToClassicGroup`` with ``ConsumerGroup.fromClassicGroup``
and ``ClassicGroup.fromConsumerGroup``, without I/O, timers or futures. A group never holds both
protocols' structures at once:

* **upgrade** (classic → consumer): a KIP-848 member joins (ConsumerGroupHeartbeat, epoch 0) a
  non-empty classic group of protocol type ``consumer``. Every classic member becomes a member
  of the consumer group with its :class:`ConsumerGroupClassicMemberMetadata` (session timeout,
  JoinGroup protocols); the group epoch, the target assignment epoch and every member epoch are
  the classic generation; each member's current and target assignment are its last classic
  assignment. Records: the classic group's tombstone, then the consumer group's.
* **downgrade** (consumer → classic): the last KIP-848 member of a consumer group whose other
  members all speak the classic protocol leaves or is fenced (or a static classic member
  replaces it). The classic group is Stable at generation = the group epoch, its members'
  assignments their *target* assignments in ConsumerProtocol bytes. Records: the consumer
  group's tombstones, then one ``GroupMetadata`` record.

``group.consumer.migration.policy`` (:class:`ConsumerGroupMigrationPolicy`) allows either
direction. The offline paths (an *empty* group of one type replaced by a new group of the other)
ignore it and are not here.

The caller (the coordinator) writes the records in one batch, as Kafka does, and then:

* after an upgrade: answers the classic members parked in a JoinGroup or SyncGroup
  (:attr:`Upgrade.parked_joins` / :attr:`Upgrade.parked_syncs`) with REBALANCE_IN_PROGRESS,
  starts each member's session timer (:attr:`Upgrade.session_deadlines_ms`), and runs the
  joining member's heartbeat on :attr:`Upgrade.group` (the group-size check there answers
  GROUP_MAX_SIZE_REACHED, and nothing is written);
* after a downgrade triggered by a leave or a fence (:attr:`Downgrade.rebalance`): moves the
  classic group to PreparingRebalance (Kafka's ``prepareRebalance``), so that the members
  rejoin and the next generation is ``group epoch + 1``.

Pure and thread-safe (it builds new values and changes none of its arguments).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from odradek.errors import GroupIdNotFoundError
from odradek.group_records import (
    ClassicGroupMetadataKey,
    ClassicProtocol,
    ConsumerGroupClassicMemberMetadata,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    MemberState,
)

from .classic_group import (
    ClassicGroup,
    ClassicGroupState,
    ClassicMember,
    group_record,
)
from .consumer_protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    decode_version,
    encode_assignment,
)
from .group_state import ConsumerGroup, GroupRecord, Member, TopicInfo, to_topic_partitions

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "DEFAULT_MIGRATION_POLICY",
    "ConsumerGroupMigrationPolicy",
    "Downgrade",
    "Refusal",
    "Upgrade",
    "all_members_use_classic_protocol_except",
    "classic_group_from_consumer",
    "consumer_group_from_classic",
    "num_classic_protocol_members",
    "validate_online_downgrade",
    "validate_online_downgrade_with_replaced_member",
    "validate_online_upgrade",
]

CONSUMER_PROTOCOL_TYPE = "consumer"
NONE = 0
GROUP_ID_NOT_FOUND = GroupIdNotFoundError.code


class ConsumerGroupMigrationPolicy(enum.Enum):
    """``group.consumer.migration.policy`` (Kafka's ``ConsumerGroupMigrationPolicy``): which
    online conversions a coordinator makes."""

    BIDIRECTIONAL = "bidirectional"
    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    DISABLED = "disabled"

    @property
    def is_upgrade_enabled(self) -> bool:
        return self in (
            ConsumerGroupMigrationPolicy.BIDIRECTIONAL,
            ConsumerGroupMigrationPolicy.UPGRADE,
        )

    @property
    def is_downgrade_enabled(self) -> bool:
        return self in (
            ConsumerGroupMigrationPolicy.BIDIRECTIONAL,
            ConsumerGroupMigrationPolicy.DOWNGRADE,
        )

    @classmethod
    def parse(cls, name: str | None) -> ConsumerGroupMigrationPolicy:
        """Case-insensitive, as Kafka's ``parse``; None or an unknown name is ``DISABLED``
        (Kafka's choice: a typo turns migration off rather than failing the broker)."""
        if name is None:
            return cls.DISABLED
        try:
            return cls(name.lower())
        except ValueError:
            return cls.DISABLED


DEFAULT_MIGRATION_POLICY = ConsumerGroupMigrationPolicy.BIDIRECTIONAL
"""Kafka 4.0's default."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a conversion is not made. ``error_code``/``message`` are what the member that
    triggered it is answered (a refused upgrade: GROUP_ID_NOT_FOUND with Kafka's message; a
    refused downgrade: NONE, the member leaves normally and the group stays a consumer group);
    ``reason`` is the sentence Kafka logs."""

    error_code: int
    message: str
    reason: str


# --- checks ------------------------------------------------------------------------------------


def num_classic_protocol_members(group: ConsumerGroup) -> int:
    return sum(1 for m in group.members.values() if m.classic is not None)


def all_members_use_classic_protocol_except(group: ConsumerGroup, member_id: str) -> bool:
    """Kafka's ``ConsumerGroup.allMembersUseClassicProtocolExcept``: every member but
    ``member_id`` speaks the classic protocol, and ``member_id`` is a KIP-848 member."""
    member = group.members.get(member_id)
    return (
        member is not None
        and member.classic is None
        and num_classic_protocol_members(group) == len(group.members) - 1
    )


def validate_online_upgrade(
    classic_group: ClassicGroup, policy: ConsumerGroupMigrationPolicy, max_size: int
) -> Refusal | None:
    """Kafka's ``validateOnlineUpgrade``: None if a KIP-848 member joining ``classic_group`` may
    convert it (``max_size``: ``group.consumer.max.size``). The caller has already taken the
    offline path for an empty group; the group's state is not checked (a rebalancing group
    converts too). A refusal answers GROUP_ID_NOT_FOUND."""
    gid = classic_group.group_id
    message = f"Group {gid} is not a consumer group"
    if not policy.is_upgrade_enabled:
        reason = (
            f"Cannot upgrade classic group {gid} to consumer group because the online upgrade "
            f"is disabled."
        )
    elif classic_group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        reason = (
            f"Cannot upgrade classic group {gid} to consumer group because the group does not "
            f"use the consumer embedded protocol."
        )
    elif len(classic_group.members) > max_size:
        reason = (
            f"Cannot upgrade classic group {gid} to consumer group because the group size "
            f"exceeds the consumer group maximum size."
        )
    else:
        return None
    return Refusal(GROUP_ID_NOT_FOUND, message, reason)


def validate_online_downgrade(
    consumer_group: ConsumerGroup,
    leaving_member_id: str,
    policy: ConsumerGroupMigrationPolicy,
    max_size: int,
) -> Refusal | None:
    """Kafka's ``validateOnlineDowngradeWithFencedMember``: None if ``leaving_member_id``
    leaving (a leave heartbeat with epoch -1, a session or rebalance timeout) converts
    ``consumer_group`` to a classic group: it is the last KIP-848 member, others remain,
    the policy allows a downgrade, and the rest fit in ``max_size`` (``group.max.size``, the
    classic maximum). A refusal is NONE: the member is removed as usual."""
    gid = consumer_group.group_id
    if not all_members_use_classic_protocol_except(consumer_group, leaving_member_id):
        reason = f"Member {leaving_member_id} is not the last KIP-848 member of group {gid}."
    elif len(consumer_group.members) <= 1:
        reason = f"Skip downgrading the consumer group {gid} to classic group because it's empty."
    elif not policy.is_downgrade_enabled:
        reason = (
            f"Cannot downgrade consumer group {gid} to classic group because the online "
            f"downgrade is disabled."
        )
    elif len(consumer_group.members) - 1 > max_size:
        reason = (
            f"Cannot downgrade consumer group {gid} to classic group because its group size is "
            f"greater than classic group max size."
        )
    else:
        return None
    return Refusal(NONE, "", reason)


def validate_online_downgrade_with_replaced_member(
    consumer_group: ConsumerGroup,
    replaced_member_id: str,
    policy: ConsumerGroupMigrationPolicy,
    max_size: int,
) -> Refusal | None:
    """Kafka's ``validateOnlineDowngradeWithReplacedMemberId``: a static classic member takes
    over the instance id of ``replaced_member_id``, the last KIP-848 member. Unlike a leave, the
    group keeps its size (the joiner replaces the member), so the whole group must fit."""
    gid = consumer_group.group_id
    if not all_members_use_classic_protocol_except(consumer_group, replaced_member_id):
        reason = f"Member {replaced_member_id} is not the last KIP-848 member of group {gid}."
    elif not policy.is_downgrade_enabled:
        reason = (
            f"Cannot downgrade consumer group {gid} to classic group because the online "
            f"downgrade is disabled."
        )
    elif len(consumer_group.members) > max_size:
        reason = (
            f"Cannot downgrade consumer group {gid} to classic group because its group size is "
            f"greater than classic group max size."
        )
    else:
        return None
    return Refusal(NONE, "", reason)


# --- upgrade -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Upgrade:
    """A classic group converted to a consumer group."""

    group: ConsumerGroup
    records: tuple[GroupRecord, ...]
    """The classic group's tombstone, then (Kafka's ``createConsumerGroupRecords``) each
    member's MemberMetadata, ConsumerGroupMetadata, each member's TargetAssignmentMember,
    TargetAssignmentMetadata, each member's CurrentMemberAssignment."""
    session_deadlines_ms: Mapping[str, int] = field(default_factory=dict)
    """Member id → when its session expires: ``now`` + its classic session timeout."""
    parked_joins: tuple[str, ...] = ()
    """Members whose JoinGroup waits: answer REBALANCE_IN_PROGRESS (they join again)."""
    parked_syncs: tuple[str, ...] = ()
    """Members whose SyncGroup waits: answer REBALANCE_IN_PROGRESS."""


def _upgrade_error(group_id: str) -> GroupIdNotFoundError:
    return GroupIdNotFoundError(
        f"Cannot upgrade the classic group {group_id} to consumer group because the embedded "
        f"consumer protocol is malformed."
    )


def _member_from_classic(
    classic_group: ClassicGroup, m: ClassicMember, topics: Mapping[str, TopicInfo]
) -> Member:
    gid = classic_group.group_id
    try:
        subscription = decode_subscription(m.metadata(classic_group.protocol_name))
        assignment = decode_assignment(m.assignment)
    except ConsumerProtocolError as e:
        raise _upgrade_error(gid) from e
    if assignment.user_data:
        # KAFKA-18134 (Kafka 4.0): the consumer group would lose what the assignor keeps there
        # (librdkafka's cooperative-sticky keeps its previous assignment and generation)
        raise GroupIdNotFoundError(
            f"Cannot upgrade classic group {gid} to consumer group because an unsupported "
            f"custom assignor is in use. Please refer to the documentation or switch to a "
            f"default assignor before re-attempting the upgrade."
        )
    assigned = {
        topics[name].topic_id: ps
        for name, ps in assignment.partitions().items()
        if name in topics and ps
    }
    generation = classic_group.generation_id
    return Member(
        member_id=m.member_id,
        client_id=m.client_id,
        client_host=m.client_host,
        instance_id=m.instance_id,
        rack_id=subscription.rack_id or None,
        subscribed_topic_names=subscription.topics,
        rebalance_timeout_ms=m.rebalance_timeout_ms,
        member_epoch=generation,
        previous_member_epoch=generation,
        state=MemberState.STABLE,
        assigned=assigned,
        classic=ConsumerGroupClassicMemberMetadata(
            session_timeout_ms=m.session_timeout_ms,
            supported_protocols=tuple(ClassicProtocol(n, data) for n, data in m.protocols),
        ),
    )


def consumer_group_from_classic(
    classic_group: ClassicGroup, topics: Mapping[str, TopicInfo], now: int
) -> Upgrade:
    """Kafka's ``convertToConsumerGroup``: the consumer group ``classic_group`` becomes and the
    records that make it so. ``topics``: topic name → what the metadata cache knows (an
    assigned topic it does not know is dropped, as Kafka's ``toTopicPartitionMap``); ``now``:
    the coordinator clock's milliseconds, for the members' session deadlines.

    Each member's subscription is its metadata for the group's protocol; its assignment, the
    bytes of its last SyncGroup (empty, for a member that joined and never synced: no
    partitions). Call :func:`validate_online_upgrade` first.

    Raises GroupIdNotFoundError when a member's subscription or assignment is malformed (or the
    group has chosen no protocol yet), or when an assignment carries assignor user data (Kafka
    4.0's KAFKA-18134: the consumer group could not give it back).
    """
    gid = classic_group.group_id
    if classic_group.protocol_name is None:
        raise _upgrade_error(gid)
    generation = classic_group.generation_id
    members = {
        mid: _member_from_classic(classic_group, m, topics)
        for mid, m in classic_group.members.items()
    }
    group = ConsumerGroup(
        gid,
        group_epoch=generation,
        assignment_epoch=generation,
        members=members,
        target={mid: m.assigned for mid, m in members.items()},
    )
    records: list[GroupRecord] = [(ClassicGroupMetadataKey(gid), None)]
    records += [
        (ConsumerGroupMemberMetadataKey(gid, mid), m.metadata_value()) for mid, m in members.items()
    ]
    records.append((ConsumerGroupMetadataKey(gid), ConsumerGroupMetadataValue(generation)))
    records += [
        (
            ConsumerGroupTargetAssignmentMemberKey(gid, mid),
            ConsumerGroupTargetAssignmentMemberValue(to_topic_partitions(m.assigned)),
        )
        for mid, m in members.items()
    ]
    records.append(
        (
            ConsumerGroupTargetAssignmentMetadataKey(gid),
            ConsumerGroupTargetAssignmentMetadataValue(generation),
        )
    )
    records += [
        (ConsumerGroupCurrentMemberAssignmentKey(gid, mid), m.assignment_value())
        for mid, m in members.items()
    ]
    return Upgrade(
        group=group,
        records=tuple(records),
        session_deadlines_ms={
            mid: now + m.session_timeout_ms for mid, m in classic_group.members.items()
        },
        parked_joins=tuple(mid for mid, m in classic_group.members.items() if m.awaiting_join),
        parked_syncs=tuple(mid for mid, m in classic_group.members.items() if m.awaiting_sync),
    )


# --- downgrade ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Downgrade:
    """A consumer group converted to a classic group."""

    group: ClassicGroup
    records: tuple[GroupRecord, ...]
    """The consumer group's tombstones (Kafka's ``createGroupTombstoneRecords``), then the
    classic group's ``GroupMetadata`` record."""
    rebalance: bool
    """True (a leave or fence): the caller moves the group to PreparingRebalance. False (a
    static member replaced the last KIP-848 one): the group stays Stable."""


def _downgrade_error(group_id: str, why: str) -> GroupIdNotFoundError:
    return GroupIdNotFoundError(f"Cannot downgrade the classic group {group_id}: {why}.")


def _classic_member(member: Member, member_id: str, now: int) -> ClassicMember:
    classic = member.classic
    assert classic is not None  # checked by the caller
    return ClassicMember(
        member_id=member_id,
        client_id=member.client_id,
        client_host=member.client_host,
        rebalance_timeout_ms=member.rebalance_timeout_ms,
        session_timeout_ms=classic.session_timeout_ms,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocols=tuple((p.name, p.metadata) for p in classic.supported_protocols),
        instance_id=member.instance_id,
        session_deadline_ms=now + classic.session_timeout_ms,
    )


def _tombstones(group: ConsumerGroup, renamed: Mapping[str, str]) -> list[GroupRecord]:
    gid = group.group_id
    ids = [renamed.get(mid, mid) for mid in group.members]
    # A target assignment left for a member id no longer in the group (odradek keeps one until
    # the assignor runs) gets its tombstone too: left behind, it would bring the consumer group
    # back when the partition is loaded after compaction removed the group's other records.
    stray = [mid for mid in group.target if mid not in group.members]
    records: list[GroupRecord] = []
    records += [(ConsumerGroupCurrentMemberAssignmentKey(gid, mid), None) for mid in ids]
    records += [(ConsumerGroupTargetAssignmentMemberKey(gid, mid), None) for mid in ids + stray]
    records.append((ConsumerGroupTargetAssignmentMetadataKey(gid), None))
    records += [(ConsumerGroupMemberMetadataKey(gid, mid), None) for mid in ids]
    records.append((ConsumerGroupPartitionMetadataKey(gid), None))
    records.append((ConsumerGroupMetadataKey(gid), None))
    return records


def classic_group_from_consumer(
    consumer_group: ConsumerGroup,
    leaving_member_id: str,
    topics: Mapping[str, TopicInfo],
    now: int,
    *,
    joining_member: Member | None = None,
) -> Downgrade:
    """Kafka's ``convertToClassicGroup`` / ``ClassicGroup.fromConsumerGroup``: the classic group
    ``consumer_group`` becomes when ``leaving_member_id`` (its last KIP-848 member) goes, and
    the records that make it so. ``topics``: topic name → what the metadata cache knows (a
    target topic it does not know is left out of the assignment bytes); ``now``: the
    coordinator clock's milliseconds (state timestamp, session deadlines).

    ``joining_member``: a static classic member replacing ``leaving_member_id`` (its records,
    written in the same batch by the JoinGroup, already carry its id: the tombstones use it in
    the leaving member's place); it takes the leaving member's target assignment and the group
    needs no rebalance.

    The group is Stable at generation = the group epoch, protocol type ``consumer``, protocol
    the members' vote, leader the first member; each member's assignment its target assignment
    in ConsumerProtocol bytes at the version of its own subscription for that protocol. Call
    :func:`validate_online_downgrade` (or ``..._with_replaced_member``) first.

    Raises GroupIdNotFoundError when a remaining member has no classic metadata, the members
    share no protocol, or a subscription's version cannot be read (Kafka's SchemaException).
    """
    gid = consumer_group.group_id
    classic_group = ClassicGroup(
        gid,
        state=ClassicGroupState.STABLE,
        generation_id=consumer_group.group_epoch,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        current_state_timestamp=now,
    )
    sources: dict[str, str] = {}
    """Classic member id → the consumer member whose target assignment it takes."""
    for mid, m in consumer_group.members.items():
        if mid == leaving_member_id:
            continue
        if m.classic is None:
            raise _downgrade_error(gid, f"member {mid} does not use the classic protocol")
        classic_group.members[mid] = _classic_member(m, mid, now)
        sources[mid] = mid
    if joining_member is not None:
        if joining_member.classic is None:
            raise _downgrade_error(
                gid, f"member {joining_member.member_id} does not use the classic protocol"
            )
        jid = joining_member.member_id
        classic_group.members[jid] = _classic_member(joining_member, jid, now)
        sources[jid] = leaving_member_id
    if not classic_group.members:
        raise _downgrade_error(gid, "no member would remain")
    for mid, cm in classic_group.members.items():
        if cm.instance_id is not None:
            classic_group.static_members[cm.instance_id] = mid
    classic_group.leader_id = next(iter(classic_group.members))
    if not classic_group.candidate_protocols():
        raise _downgrade_error(gid, "its members share no protocol")
    classic_group.protocol_name = classic_group.select_protocol()
    names = {t.topic_id: t.name for t in topics.values()}
    for mid, cm in classic_group.members.items():
        target = consumer_group.target.get(sources[mid], {})
        partitions = {names[tid]: ps for tid, ps in target.items() if tid in names}
        try:
            version = decode_version(cm.metadata(classic_group.protocol_name))
            cm.assignment = encode_assignment(partitions, version)
        except ConsumerProtocolError as e:
            raise _downgrade_error(gid, str(e)) from e
    records = _tombstones(
        consumer_group,
        {} if joining_member is None else {leaving_member_id: joining_member.member_id},
    )
    records.append(group_record(classic_group))
    return Downgrade(classic_group, tuple(records), rebalance=joining_member is None)
