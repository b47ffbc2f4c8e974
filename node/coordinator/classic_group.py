"""Classic consumer groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) as a pure state machine.

Kafka's ``ClassicGroup`` and the ``classicGroup*`` methods of ``GroupMetadataManager``, without
I/O: every function takes a group, a request and ``now_ms`` and changes the group in place,
returning an :class:`Outcome` (the records to write to ``__consumer_offsets``, the answers of
requests that were waiting, the caller's own answer or the key it waits under). The coordinator
(:mod:`node.coordinator.classic_coordinator`) holds the futures and the lock.

The group moves through Kafka's states::

    Empty --join--> PreparingRebalance --all joined / rebalance timeout--> CompletingRebalance
    CompletingRebalance --leader's SyncGroup stored--> Stable
    Stable / CompletingRebalance --join of a new member, leave, expiry--> PreparingRebalance
    PreparingRebalance --nobody left--> Empty;  deleted --> Dead

* JoinGroup: the first join of a dynamic member without a member id (v4+, KIP-394) answers
  MEMBER_ID_REQUIRED with the id it must join again with; a join waits until every known
  member has joined (or the rebalance timeout, the longest of the members', removes those that
  did not), then every member gets the generation, the protocol every member supports (the one
  most members prefer) and the leader; the leader also gets every member's metadata.
  ``group.initial.rebalance.delay.ms`` holds the first rebalance of an empty group open that
  long, again for each new member, up to the rebalance timeout.
* SyncGroup: the leader's assignment is stored (one ``GroupMetadata`` record) and then relayed
  to each member; the assignors run in the clients, so range, roundrobin, sticky and
  cooperative-sticky all work unchanged.
* Static membership (KIP-345): a member rejoining with a known ``group.instance.id`` and no
  member id takes over its predecessor's id and assignment; in a Stable group with unchanged
  protocols that needs no rebalance (the leader learns it leads with ``skip_assignment``).
* A member's session expires ``session.timeout.ms`` after its last heartbeat (not while it
  waits in a join or a sync); a pending member (KIP-394) that does not join again within its
  session timeout is forgotten; a new member whose JoinGroup is still waiting for its
  rebalance five minutes later is dropped, its JoinGroup answered UNKNOWN_MEMBER_ID (Kafka's
  new-member join timeout: a client retrying a timed-out JoinGroup joins as another member).

Not thread-safe: the coordinator serialises access per ``__consumer_offsets`` partition.
"""

from __future__ import annotations

import dataclasses
import enum
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from odradek.errors import (
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    IllegalGenerationError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from odradek.group_records import (
    ClassicGroupMetadataKey,
    ClassicMemberMetadata,
    GroupMetadataValue,
    GroupRecordKey,
    GroupRecordValue,
)

__all__ = [
    "ClassicGroup",
    "ClassicGroupConfig",
    "ClassicGroupState",
    "ClassicMember",
    "JoinGroupRequest",
    "JoinGroupResult",
    "JoinedMember",
    "LeaveMember",
    "LeaveMemberResult",
    "Outcome",
    "SyncGroupRequest",
    "SyncGroupResult",
    "consumer_assignment_topics",
    "consumer_subscription_topics",
    "delete_records",
    "expire",
    "fail_sync_store",
    "heartbeat",
    "join",
    "leave",
    "prepare_rebalance",
    "replay",
    "store_assignment",
    "sync",
    "validate_offset_commit",
]

NONE = 0
COORDINATOR_NOT_AVAILABLE = 15
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
MEMBER_ID_REQUIRED = 79
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82

GroupRecord: TypeAlias = tuple[GroupRecordKey, GroupRecordValue | None]


class ClassicGroupState(enum.Enum):
    """Kafka's ``ClassicGroupState`` (the names ListGroups and DescribeGroups give)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ClassicGroupConfig:
    """The classic group settings, Kafka's names."""

    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 3_000
    group_max_size: int = 2**31 - 1
    new_member_join_timeout_ms: int = 5 * 60 * 1000
    """How long a new member's JoinGroup may wait for its rebalance before the member is
    dropped (Kafka's ``CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS``, not a setting there)."""


@dataclass(slots=True)
class ClassicMember:
    """One member of a classic group (Kafka's ``ClassicGroupMember``)."""

    member_id: str
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    """(name, metadata) in the member's order of preference."""
    instance_id: str | None = None
    assignment: bytes = b""
    awaiting_join: bool = False
    awaiting_sync: bool = False
    is_new: bool = False
    session_deadline_ms: int = 0

    def metadata(self, protocol: str | None) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        return b""

    def protocol_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.protocols)


@dataclass(slots=True)
class ClassicGroup:
    """One classic group's state (Kafka's ``ClassicGroup``)."""

    group_id: str
    state: ClassicGroupState = ClassicGroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, ClassicMember] = field(default_factory=dict)
    pending_members: dict[str, int] = field(default_factory=dict)
    """KIP-394: member ids given with MEMBER_ID_REQUIRED → deadline to join again."""
    static_members: dict[str, str] = field(default_factory=dict)
    """group.instance.id → member id."""
    pending_sync: set[str] = field(default_factory=set)
    new_member_added: bool = False
    previous_state: ClassicGroupState = ClassicGroupState.EMPTY
    join_deadline_ms: int | None = None
    """When the join phase ends (the rebalance timeout, or the next step of the initial
    delay)."""
    initial_delay_ms: int = 0
    initial_remaining_ms: int = 0
    """The initial rebalance delay's step and what is left of the rebalance timeout."""
    sync_deadline_ms: int | None = None
    current_state_timestamp: int = -1

    def is_empty(self) -> bool:
        return not self.members and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def has_all_members_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def candidate_protocols(self) -> list[str]:
        """The protocols every member supports, in the first member's order."""
        members = list(self.members.values())
        if not members:
            return []
        common = set(members[0].protocol_names())
        for m in members[1:]:
            common &= set(m.protocol_names())
        return [p for p in members[0].protocol_names() if p in common]

    def supports_protocols(self, protocol_type: str, protocols: Iterable[str]) -> bool:
        names = set(protocols)
        if not self.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and bool(names & set(self.candidate_protocols()))

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol every member supports; the one
        with most votes wins (ties: the first member's preference)."""
        candidates = self.candidate_protocols()
        votes = dict.fromkeys(candidates, 0)
        for m in self.members.values():
            vote = next(p for p in m.protocol_names() if p in votes)
            votes[vote] += 1
        return max(candidates, key=lambda p: (votes[p], -candidates.index(p)))

    def transition(self, state: ClassicGroupState, now_ms: int) -> None:
        self.previous_state = self.state
        self.state = state
        self.current_state_timestamp = now_ms

    def joined_members(self) -> tuple[JoinedMember, ...]:
        return tuple(
            JoinedMember(m.member_id, m.instance_id, m.metadata(self.protocol_name))
            for m in self.members.values()
        )

    def subscribed_topics(self) -> set[str]:
        """The topics the members' subscriptions name (protocol type ``consumer``)."""
        if self.protocol_type != "consumer":
            return set()
        out: set[str] = set()
        for m in self.members.values():
            out |= consumer_subscription_topics(m.metadata(self.protocol_name))
        return out


@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    group_id: str
    member_id: str
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str = ""
    client_host: str = ""
    instance_id: str | None = None
    require_known_member_id: bool = False
    """JoinGroup v4+ (KIP-394)."""


@dataclass(frozen=True, slots=True)
class JoinedMember:
    """``JoinGroupResponseMember``: what the leader learns of each member."""

    member_id: str
    instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResult:
    """``JoinGroupResponse``."""

    error_code: int = NONE
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinedMember, ...] = ()
    skip_assignment: bool = False
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    group_id: str
    member_id: str
    generation_id: int
    instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: tuple[tuple[str, bytes], ...] = ()
    """The leader's: member id → assignment."""


@dataclass(frozen=True, slots=True)
class SyncGroupResult:
    error_code: int = NONE
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class LeaveMember:
    member_id: str
    instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveMemberResult:
    member_id: str
    instance_id: str | None = None
    error_code: int = NONE


@dataclass(slots=True)
class Outcome:
    """What a step decided: records to write, answers to waiting requests, the caller's answer
    (or the key it waits under)."""

    records: list[GroupRecord] = field(default_factory=list)
    joins: dict[str, JoinGroupResult] = field(default_factory=dict)
    """Member id → the answer to its waiting JoinGroup."""
    syncs: dict[str, SyncGroupResult] = field(default_factory=dict)
    """Member id → the answer to its waiting SyncGroup."""
    reply: JoinGroupResult | SyncGroupResult | None = None
    wait_key: str | None = None
    """The caller's request waits under this member id."""
    store: dict[str, bytes] | None = None
    """SyncGroup of the leader: the assignment to store (``records`` holds its record); once
    written call :func:`store_assignment`, or :func:`fail_sync_store`."""

    def merge(self, other: Outcome) -> None:
        self.records += other.records
        self.joins.update(other.joins)
        self.syncs.update(other.syncs)


# --- records -----------------------------------------------------------------------------------


def group_record(group: ClassicGroup) -> GroupRecord:
    """The group's ``GroupMetadata`` record (Kafka's ``newGroupMetadataRecord``; an empty group
    has no protocol, no leader and no members)."""
    members = tuple(
        ClassicMemberMetadata(
            member_id=m.member_id,
            client_id=m.client_id,
            client_host=m.client_host,
            session_timeout_ms=m.session_timeout_ms,
            subscription=m.metadata(group.protocol_name),
            assignment=m.assignment,
            instance_id=m.instance_id,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
        )
        for m in group.members.values()
    )
    value = GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=group.protocol_name if members else None,
        leader=group.leader_id if members else None,
        current_state_timestamp=group.current_state_timestamp,
        members=members,
    )
    return ClassicGroupMetadataKey(group.group_id), value


def delete_records(group_id: str) -> list[GroupRecord]:
    """The group's tombstone."""
    return [(ClassicGroupMetadataKey(group_id), None)]


def replay(
    groups: dict[str, ClassicGroup], group_id: str, value: GroupMetadataValue | None, now_ms: int
) -> None:
    """Apply one ``GroupMetadata`` record read back while loading the partition (Kafka's
    ``GroupMetadataManager.replay`` of classic groups): the group is Stable with its members
    (or Empty), each member's session restarted at ``now_ms``."""
    if value is None:
        groups.pop(group_id, None)
        return
    group = ClassicGroup(
        group_id,
        generation_id=value.generation,
        protocol_type=value.protocol_type or None,
        protocol_name=value.protocol,
        leader_id=value.leader,
        current_state_timestamp=value.current_state_timestamp,
    )
    for m in value.members:
        group.members[m.member_id] = ClassicMember(
            member_id=m.member_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            session_timeout_ms=m.session_timeout_ms,
            protocol_type=value.protocol_type,
            protocols=((value.protocol or "", m.subscription),),
            instance_id=m.instance_id,
            assignment=m.assignment,
            session_deadline_ms=now_ms + m.session_timeout_ms,
        )
        if m.instance_id is not None:
            group.static_members[m.instance_id] = m.member_id
    group.state = ClassicGroupState.STABLE if group.members else ClassicGroupState.EMPTY
    groups[group_id] = group


# --- JoinGroup ---------------------------------------------------------------------------------


def _join_error(code: int, member_id: str = "", message: str = "") -> JoinGroupResult:
    return JoinGroupResult(error_code=code, member_id=member_id, error_message=message)


def join(
    group: ClassicGroup,
    req: JoinGroupRequest,
    new_member_id: str,
    now_ms: int,
    config: ClassicGroupConfig,
    *,
    created: bool = False,
) -> Outcome:
    """Kafka's ``classicGroupJoinToClassicGroup``. ``new_member_id`` is the id a member joining
    without one gets (the coordinator makes it: ``client_id`` and a UUID); ``created``: the
    group did not exist before this request. The outcome's ``reply`` is the caller's answer at
    once, or its ``wait_key`` the member id its answer will come under."""
    out = Outcome()
    unknown = req.member_id == ""
    if not (
        config.group_min_session_timeout_ms
        <= req.session_timeout_ms
        <= config.group_max_session_timeout_ms
    ):
        out.reply = _join_error(INVALID_SESSION_TIMEOUT, req.member_id)
        return out
    if not req.protocol_type or not req.protocols:
        out.reply = _join_error(INCONSISTENT_GROUP_PROTOCOL, req.member_id)
        return out
    if created and not unknown:
        out.reply = _join_error(UNKNOWN_MEMBER_ID, req.member_id)
        return out
    if group.state is ClassicGroupState.DEAD:
        out.reply = _join_error(COORDINATOR_NOT_AVAILABLE, req.member_id)
        return out
    known = req.member_id in group.members or req.member_id in group.pending_members
    if not known and not _accept_joining_member(group, req, config):
        out.reply = _join_error(GROUP_MAX_SIZE_REACHED, req.member_id)
        return out
    if group.state is not ClassicGroupState.EMPTY and not group.supports_protocols(
        req.protocol_type, (name for name, _ in req.protocols)
    ):
        out.reply = _join_error(INCONSISTENT_GROUP_PROTOCOL, req.member_id)
        return out

    if unknown:
        if req.instance_id is not None and req.instance_id in group.static_members:
            return _replace_static_member(group, req, new_member_id, now_ms, config)
        if req.instance_id is None and req.require_known_member_id:
            group.pending_members[new_member_id] = now_ms + req.session_timeout_ms
            out.reply = _join_error(MEMBER_ID_REQUIRED, new_member_id)
            return out
        return _add_member(group, req, new_member_id, now_ms, config)

    if req.member_id in group.pending_members:
        del group.pending_members[req.member_id]
        return _add_member(group, req, req.member_id, now_ms, config)
    if req.instance_id is not None:
        holder = group.static_members.get(req.instance_id)
        if holder is not None and holder != req.member_id:
            out.reply = _join_error(FENCED_INSTANCE_ID, req.member_id)
            return out
    member = group.members.get(req.member_id)
    if member is None or group.state in (ClassicGroupState.EMPTY, ClassicGroupState.DEAD):
        out.reply = _join_error(UNKNOWN_MEMBER_ID, req.member_id)
        return out
    if group.state is ClassicGroupState.PREPARING_REBALANCE:
        return _update_member(group, member, req, now_ms, config)
    same = member.protocols == req.protocols
    if group.state is ClassicGroupState.COMPLETING_REBALANCE and same:
        # the join answer was lost: give it again
        member.session_deadline_ms = now_ms + member.session_timeout_ms
        out.reply = _current_join(group, member.member_id)
        return out
    if group.state is ClassicGroupState.STABLE and same and member.member_id != group.leader_id:
        member.session_deadline_ms = now_ms + member.session_timeout_ms
        out.reply = _current_join(group, member.member_id)
        return out
    return _update_member(group, member, req, now_ms, config)


def _accept_joining_member(
    group: ClassicGroup, req: JoinGroupRequest, config: ClassicGroupConfig
) -> bool:
    if req.instance_id is not None and req.instance_id in group.static_members:
        return True
    return len(group.members) + len(group.pending_members) < config.group_max_size


def _current_join(group: ClassicGroup, member_id: str, skip: bool = False) -> JoinGroupResult:
    leader = member_id == group.leader_id
    return JoinGroupResult(
        generation_id=group.generation_id,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=group.leader_id or "",
        member_id=member_id,
        members=group.joined_members() if leader else (),
        skip_assignment=skip and leader,
    )


def _add_member(
    group: ClassicGroup,
    req: JoinGroupRequest,
    member_id: str,
    now_ms: int,
    config: ClassicGroupConfig,
) -> Outcome:
    member = ClassicMember(
        member_id=member_id,
        client_id=req.client_id,
        client_host=req.client_host,
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        session_timeout_ms=req.session_timeout_ms,
        protocol_type=req.protocol_type,
        protocols=req.protocols,
        instance_id=req.instance_id,
        awaiting_join=True,
        is_new=True,
        # a new member cannot heartbeat (it has no id yet) and a client whose JoinGroup timed
        # out during a long rebalance retries as another new member: Kafka drops a new member
        # still waiting after this long, so defunct ones do not pile up
        session_deadline_ms=now_ms + config.new_member_join_timeout_ms,
    )
    if not group.members:
        group.protocol_type = req.protocol_type
    group.members[member_id] = member
    if group.leader_id is None or group.leader_id not in group.members:
        group.leader_id = member_id
    if req.instance_id is not None:
        group.static_members[req.instance_id] = member_id
    group.new_member_added = True
    out = _maybe_prepare_rebalance_or_complete_join(group, now_ms, config)
    out.wait_key = member_id
    return out


def _update_member(
    group: ClassicGroup,
    member: ClassicMember,
    req: JoinGroupRequest,
    now_ms: int,
    config: ClassicGroupConfig,
) -> Outcome:
    member.protocols = req.protocols
    member.rebalance_timeout_ms = req.rebalance_timeout_ms
    member.session_timeout_ms = req.session_timeout_ms
    member.client_id = req.client_id or member.client_id
    member.client_host = req.client_host or member.client_host
    member.awaiting_join = True
    if not member.is_new:  # a new member keeps its join timeout (Kafka reschedules nothing)
        member.session_deadline_ms = now_ms + member.session_timeout_ms
    out = _maybe_prepare_rebalance_or_complete_join(group, now_ms, config)
    out.wait_key = member.member_id
    return out


def _replace_static_member(
    group: ClassicGroup,
    req: JoinGroupRequest,
    new_member_id: str,
    now_ms: int,
    config: ClassicGroupConfig,
) -> Outcome:
    """KIP-345: a static member back under a new member id takes its predecessor's place; the
    old id's waiting requests are fenced."""
    old_id = group.static_members[req.instance_id or ""]
    old = group.members.pop(old_id)
    out = Outcome()
    if old.awaiting_join:
        out.joins[old_id] = _join_error(FENCED_INSTANCE_ID, old_id)
    if old.awaiting_sync:
        out.syncs[old_id] = SyncGroupResult(FENCED_INSTANCE_ID)
    member = ClassicMember(
        member_id=new_member_id,
        client_id=req.client_id,
        client_host=req.client_host,
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        session_timeout_ms=req.session_timeout_ms,
        protocol_type=req.protocol_type,
        protocols=req.protocols,
        instance_id=req.instance_id,
        assignment=old.assignment,
        session_deadline_ms=now_ms + req.session_timeout_ms,
    )
    group.members[new_member_id] = member
    group.static_members[req.instance_id or ""] = new_member_id
    old_leader = group.leader_id
    if group.leader_id == old_id:
        group.leader_id = new_member_id
    group.pending_sync.discard(old_id)
    if group.state is ClassicGroupState.STABLE and group.select_protocol() == group.protocol_name:
        # no rebalance while the group's protocol stays (Kafka compares the protocol the
        # members would choose, not the metadata bytes, which carry e.g. owned partitions):
        # the same assignment under the new id, once stored. The answer names the leader the
        # group had and no members, as Kafka's does below JoinGroup v9 (which cannot say "skip
        # the assignment"): a restarted leader that saw its own id would assign, and a stable
        # group would not pass that assignment on; kafka-python then rejoins
        out.records.append(group_record(group))
        current = _current_join(group, new_member_id)
        out.reply = dataclasses.replace(current, leader=old_leader or "", members=())
        return out
    member.awaiting_join = True
    out.merge(_maybe_prepare_rebalance_or_complete_join(group, now_ms, config))
    out.wait_key = new_member_id
    return out


def _maybe_prepare_rebalance_or_complete_join(
    group: ClassicGroup, now_ms: int, config: ClassicGroupConfig
) -> Outcome:
    if group.state in (
        ClassicGroupState.STABLE,
        ClassicGroupState.COMPLETING_REBALANCE,
        ClassicGroupState.EMPTY,
    ):
        return _prepare_rebalance(group, now_ms, config)
    return _maybe_complete_join(group, now_ms)


def prepare_rebalance(group: ClassicGroup, now_ms: int, config: ClassicGroupConfig) -> Outcome:
    """Kafka's ``prepareRebalance``: the group moves to PreparingRebalance and its members
    are told to join again (a consumer group converted back to a classic one starts so)."""
    return _prepare_rebalance(group, now_ms, config)


def _prepare_rebalance(group: ClassicGroup, now_ms: int, config: ClassicGroupConfig) -> Outcome:
    out = Outcome()
    if group.state is ClassicGroupState.COMPLETING_REBALANCE:
        for m in group.members.values():
            m.assignment = b""
            if m.awaiting_sync:
                m.awaiting_sync = False
                out.syncs[m.member_id] = SyncGroupResult(REBALANCE_IN_PROGRESS)
    group.pending_sync.clear()
    group.sync_deadline_ms = None
    initial = group.state is ClassicGroupState.EMPTY
    group.transition(ClassicGroupState.PREPARING_REBALANCE, now_ms)
    if initial:
        delay = config.group_initial_rebalance_delay_ms
        group.initial_delay_ms = delay
        group.initial_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
        group.new_member_added = False
        group.join_deadline_ms = now_ms + delay
        if delay == 0:
            out.merge(_complete_join(group, now_ms))
        return out
    group.initial_delay_ms = 0
    group.join_deadline_ms = now_ms + group.rebalance_timeout_ms()
    out.merge(_maybe_complete_join(group, now_ms))
    return out


def _maybe_complete_join(group: ClassicGroup, now_ms: int) -> Outcome:
    if (
        group.state is ClassicGroupState.PREPARING_REBALANCE
        and group.previous_state is not ClassicGroupState.EMPTY
        and group.has_all_members_joined()
    ):
        return _complete_join(group, now_ms)
    return Outcome()


def _complete_join(group: ClassicGroup, now_ms: int) -> Outcome:
    """Kafka's ``completeClassicGroupJoin``: dynamic members that did not join are removed; a
    new generation starts (CompletingRebalance), or the group is Empty (its record written)."""
    out = Outcome()
    group.join_deadline_ms = None
    for m in list(group.members.values()):
        if not m.awaiting_join and m.instance_id is None:
            _remove(group, m.member_id, out)
    if group.state is ClassicGroupState.DEAD:
        return out
    joined = [m for m in group.members.values() if m.awaiting_join]
    if group.members and not joined:
        # nobody rejoined: wait another rebalance timeout for the sessions to expire
        group.join_deadline_ms = now_ms + group.rebalance_timeout_ms()
        return out
    if group.leader_id is None or not group.members[group.leader_id].awaiting_join:
        group.leader_id = joined[0].member_id if joined else None
    if group.members and not group.candidate_protocols():
        # cannot happen through join's checks; never choose from nothing
        raise AssertionError(f"group {group.group_id}: no protocol every member supports")
    group.generation_id += 1
    if not group.members:
        # Kafka's initNextGeneration clears the protocol only: the type stays (an empty
        # "consumer" group is no simple group, and its record says so for the next leader)
        group.protocol_name = None
        group.transition(ClassicGroupState.EMPTY, now_ms)
        out.records.append(group_record(group))
        return out
    group.protocol_name = group.select_protocol()
    group.transition(ClassicGroupState.COMPLETING_REBALANCE, now_ms)
    for m in group.members.values():
        if m.awaiting_join:
            out.joins[m.member_id] = _current_join(group, m.member_id)
            m.awaiting_join = False
        m.is_new = False
        m.session_deadline_ms = now_ms + m.session_timeout_ms
        group.pending_sync.add(m.member_id)
    group.sync_deadline_ms = now_ms + group.rebalance_timeout_ms()
    return out


def _remove(group: ClassicGroup, member_id: str, out: Outcome) -> None:
    member = group.members.pop(member_id, None)
    if member is None:
        return
    if member.awaiting_join:
        out.joins[member_id] = _join_error(UNKNOWN_MEMBER_ID, member_id)
    if member.awaiting_sync:
        out.syncs[member_id] = SyncGroupResult(UNKNOWN_MEMBER_ID)
    if member.instance_id is not None and group.static_members.get(member.instance_id) == member_id:
        del group.static_members[member.instance_id]
    group.pending_sync.discard(member_id)
    if group.leader_id == member_id:
        group.leader_id = next(iter(group.members), None)


def _remove_and_rebalance(
    group: ClassicGroup, member_ids: Sequence[str], now_ms: int, config: ClassicGroupConfig
) -> Outcome:
    out = Outcome()
    for mid in member_ids:
        _remove(group, mid, out)
    if group.state in (ClassicGroupState.STABLE, ClassicGroupState.COMPLETING_REBALANCE):
        out.merge(_prepare_rebalance(group, now_ms, config))
    elif group.state is ClassicGroupState.PREPARING_REBALANCE:
        out.merge(_maybe_complete_join(group, now_ms))
    return out


# --- SyncGroup ---------------------------------------------------------------------------------


def _check_member(
    group: ClassicGroup | None, member_id: str, instance_id: str | None
) -> ClassicMember:
    """Raises UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, COORDINATOR_NOT_AVAILABLE (Dead)."""
    if group is None:
        raise UnknownMemberIdError(f"Member {member_id} is not a member of the group.")
    if instance_id is not None:
        holder = group.static_members.get(instance_id)
        if holder is not None and holder != member_id:
            raise FencedInstanceIdError(
                f"Instance {instance_id} is held by another member of group {group.group_id}."
            )
    if group.state is ClassicGroupState.DEAD:
        raise CoordinatorNotAvailableError(f"Group {group.group_id} is dead.")
    member = group.members.get(member_id)
    if member is None:
        raise UnknownMemberIdError(f"Member {member_id} is not a member of group {group.group_id}.")
    return member


def sync(group: ClassicGroup | None, req: SyncGroupRequest, now_ms: int) -> Outcome:
    """Kafka's ``classicGroupSync``: the leader's assignment is stored and relayed; a follower
    waits for it (or gets the current one in a Stable group). Errors in ``reply``."""
    out = Outcome()
    try:
        member = _check_member(group, req.member_id, req.instance_id)
    except (UnknownMemberIdError, FencedInstanceIdError, CoordinatorNotAvailableError) as e:
        out.reply = SyncGroupResult(e.code)
        return out
    assert group is not None
    if req.generation_id != group.generation_id:
        out.reply = SyncGroupResult(ILLEGAL_GENERATION)
        return out
    if (req.protocol_type is not None and req.protocol_type != group.protocol_type) or (
        req.protocol_name is not None and req.protocol_name != group.protocol_name
    ):
        out.reply = SyncGroupResult(INCONSISTENT_GROUP_PROTOCOL)
        return out
    if group.state is ClassicGroupState.EMPTY:
        out.reply = SyncGroupResult(UNKNOWN_MEMBER_ID)
        return out
    if group.state is ClassicGroupState.PREPARING_REBALANCE:
        out.reply = SyncGroupResult(REBALANCE_IN_PROGRESS)
        return out
    group.pending_sync.discard(member.member_id)
    member.session_deadline_ms = now_ms + member.session_timeout_ms
    if group.state is ClassicGroupState.STABLE:
        out.reply = SyncGroupResult(
            NONE, group.protocol_type, group.protocol_name, member.assignment
        )
        return out
    # CompletingRebalance
    member.awaiting_sync = True
    out.wait_key = member.member_id
    if member.member_id == group.leader_id:
        given = dict(req.assignments)
        assignment = {mid: given.get(mid, b"") for mid in group.members}
        out.store = assignment
        saved = {mid: m.assignment for mid, m in group.members.items()}
        for mid, m in group.members.items():
            m.assignment = assignment[mid]
        out.records.append(group_record(group))
        for mid, m in group.members.items():
            m.assignment = saved[mid]
    return out


def store_assignment(
    group: ClassicGroup, generation_id: int, assignment: Mapping[str, bytes], now_ms: int
) -> Outcome:
    """The leader's assignment is stored: the group is Stable, each waiting member gets its
    part."""
    out = Outcome()
    if (
        group.state is not ClassicGroupState.COMPLETING_REBALANCE
        or group.generation_id != generation_id
    ):
        return out
    for mid, m in group.members.items():
        m.assignment = assignment.get(mid, b"")
        if m.awaiting_sync:
            m.awaiting_sync = False
            out.syncs[mid] = SyncGroupResult(
                NONE, group.protocol_type, group.protocol_name, m.assignment
            )
    group.transition(ClassicGroupState.STABLE, now_ms)
    group.sync_deadline_ms = None if not group.pending_sync else group.sync_deadline_ms
    return out


def fail_sync_store(
    group: ClassicGroup,
    generation_id: int,
    error_code: int,
    now_ms: int,
    config: ClassicGroupConfig,
) -> Outcome:
    """The leader's assignment could not be stored: waiting members get the error and the
    group rebalances again (Kafka's ``resetAndPropagateAssignmentWithError``)."""
    out = Outcome()
    if (
        group.state is not ClassicGroupState.COMPLETING_REBALANCE
        or group.generation_id != generation_id
    ):
        return out
    for mid, m in group.members.items():
        m.assignment = b""
        if m.awaiting_sync:
            m.awaiting_sync = False
            out.syncs[mid] = SyncGroupResult(error_code)
    out.merge(_prepare_rebalance(group, now_ms, config))
    return out


# --- Heartbeat, LeaveGroup ---------------------------------------------------------------------


def heartbeat(
    group: ClassicGroup | None,
    member_id: str,
    generation_id: int,
    instance_id: str | None,
    now_ms: int,
) -> int:
    """Kafka's ``classicGroupHeartbeat``: the error code (0: alive, the session restarted;
    REBALANCE_IN_PROGRESS: rejoin; UNKNOWN_MEMBER_ID; ILLEGAL_GENERATION;
    FENCED_INSTANCE_ID; COORDINATOR_NOT_AVAILABLE)."""
    try:
        member = _check_member(group, member_id, instance_id)
    except (UnknownMemberIdError, FencedInstanceIdError, CoordinatorNotAvailableError) as e:
        return e.code
    assert group is not None
    if group.state is ClassicGroupState.EMPTY:
        return UNKNOWN_MEMBER_ID
    if generation_id != group.generation_id:
        return ILLEGAL_GENERATION
    member.session_deadline_ms = now_ms + member.session_timeout_ms
    if group.state is ClassicGroupState.PREPARING_REBALANCE:
        return REBALANCE_IN_PROGRESS
    return NONE


def leave(
    group: ClassicGroup | None,
    members: Sequence[LeaveMember],
    now_ms: int,
    config: ClassicGroupConfig,
) -> tuple[list[LeaveMemberResult], Outcome]:
    """Kafka's ``classicGroupLeave`` (v3+: a batch, KIP-345): one result per member; the
    group rebalances without the members that left."""
    out = Outcome()
    results: list[LeaveMemberResult] = []
    if group is None or group.state is ClassicGroupState.DEAD:
        return [
            LeaveMemberResult(m.member_id, m.instance_id, UNKNOWN_MEMBER_ID) for m in members
        ], out
    leaving: list[str] = []
    pending_left = False
    for m in members:
        code = NONE
        if m.instance_id is not None:
            holder = group.static_members.get(m.instance_id)
            if holder is None:
                code = UNKNOWN_MEMBER_ID
            elif m.member_id and holder != m.member_id:
                code = FENCED_INSTANCE_ID
            else:
                leaving.append(holder)
        elif m.member_id in group.pending_members:
            del group.pending_members[m.member_id]
            pending_left = True
        elif m.member_id in group.members:
            leaving.append(m.member_id)
        else:
            code = UNKNOWN_MEMBER_ID
        results.append(LeaveMemberResult(m.member_id, m.instance_id, code))
    if leaving:
        out = _remove_and_rebalance(group, leaving, now_ms, config)
    elif pending_left:
        out = _maybe_complete_join(group, now_ms)
    return results, out


# --- timers ------------------------------------------------------------------------------------


def expire(group: ClassicGroup, now_ms: int, config: ClassicGroupConfig) -> Outcome:
    """The group's timers at ``now_ms``: pending members and sessions that expired (a member
    waiting in a join or a sync is kept alive), the end of the join phase (the initial delay
    extended while new members keep coming, up to the rebalance timeout), members that did not
    sync within the rebalance timeout."""
    out = Outcome()
    for mid, deadline in list(group.pending_members.items()):
        if deadline <= now_ms:
            del group.pending_members[mid]
            out.merge(_maybe_complete_join(group, now_ms))
    expired = [
        m.member_id
        for m in group.members.values()
        if m.session_deadline_ms <= now_ms
        and (m.is_new or (not m.awaiting_join and not m.awaiting_sync))
    ]
    if expired:
        out.merge(_remove_and_rebalance(group, expired, now_ms, config))
    if (
        group.state is ClassicGroupState.PREPARING_REBALANCE
        and group.join_deadline_ms is not None
        and group.join_deadline_ms <= now_ms
    ):
        if group.initial_delay_ms and group.new_member_added and group.initial_remaining_ms > 0:
            group.new_member_added = False
            step = min(group.initial_delay_ms, group.initial_remaining_ms)
            group.initial_remaining_ms = max(group.initial_remaining_ms - group.initial_delay_ms, 0)
            group.join_deadline_ms = now_ms + step
        else:
            group.initial_delay_ms = 0
            out.merge(_complete_join(group, now_ms))
    if (
        group.sync_deadline_ms is not None
        and group.sync_deadline_ms <= now_ms
        and group.state in (ClassicGroupState.COMPLETING_REBALANCE, ClassicGroupState.STABLE)
    ):
        group.sync_deadline_ms = None
        late = sorted(group.pending_sync)
        if late:
            out.merge(_remove_and_rebalance(group, late, now_ms, config))
    return out


# --- offsets -----------------------------------------------------------------------------------


def validate_offset_commit(
    group: ClassicGroup,
    member_id: str,
    generation_id: int,
    instance_id: str | None,
    transactional: bool = False,
) -> None:
    """Kafka's ``ClassicGroup.validateOffsetCommit``: a commit with a negative generation to an
    Empty group is a simple (manual) one; a member's must carry the group's generation. A
    ``transactional`` one (TxnOffsetCommit, KIP-447) without member id, generation and
    instance id is not checked, whatever the state, nor refused while the group rebalances.

    Raises COORDINATOR_NOT_AVAILABLE (Dead), UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
    ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS (CompletingRebalance)."""
    if group.state is ClassicGroupState.DEAD:
        raise CoordinatorNotAvailableError(f"Group {group.group_id} is dead.")
    if generation_id < 0 and group.state is ClassicGroupState.EMPTY:
        return
    if generation_id >= 0 or member_id or instance_id is not None:
        _check_member(group, member_id, instance_id)
        if generation_id != group.generation_id:
            raise IllegalGenerationError(
                f"Generation {generation_id} is not the group's ({group.generation_id})."
            )
    elif not transactional and group.state is not ClassicGroupState.EMPTY:
        raise UnknownMemberIdError(
            f"Group {group.group_id} has members: a simple commit needs an empty group."
        )
    if not transactional and group.state is ClassicGroupState.COMPLETING_REBALANCE:
        raise RebalanceInProgressError(f"Group {group.group_id} is rebalancing.")


# --- the consumer protocol's bytes (read only for describe and OffsetDelete) -------------------


def _read_strings(data: bytes, pos: int) -> tuple[list[str], int]:
    (count,) = struct.unpack_from(">i", data, pos)
    pos += 4
    out = []
    for _ in range(max(count, 0)):
        (n,) = struct.unpack_from(">h", data, pos)
        pos += 2
        out.append(data[pos : pos + n].decode())
        pos += n
    return out, pos


def consumer_subscription_topics(metadata: bytes) -> set[str]:
    """The topics of a ``ConsumerProtocolSubscription`` (v0-3); empty if unreadable."""
    try:
        topics, _ = _read_strings(metadata, 2)
        return set(topics)
    except (struct.error, UnicodeDecodeError):
        return set()


def consumer_assignment_topics(assignment: bytes) -> dict[str, tuple[int, ...]]:
    """The partitions of a ``ConsumerProtocolAssignment`` (v0-3); empty if unreadable."""
    out: dict[str, tuple[int, ...]] = {}
    try:
        (count,) = struct.unpack_from(">i", assignment, 2)
        pos = 6
        for _ in range(max(count, 0)):
            (n,) = struct.unpack_from(">h", assignment, pos)
            pos += 2
            topic = assignment[pos : pos + n].decode()
            pos += n
            (k,) = struct.unpack_from(">i", assignment, pos)
            pos += 4
            partitions = struct.unpack_from(f">{max(k, 0)}i", assignment, pos)
            pos += 4 * max(k, 0)
            out[topic] = tuple(sorted(partitions))
    except (struct.error, UnicodeDecodeError):
        return {}
    return out
