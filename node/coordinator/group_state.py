"""Consumer groups (KIP-848) as values and pure decisions: the group coordinator's core.

Kafka's ``GroupMetadataManager``, ``ConsumerGroup``, ``CurrentAssignmentBuilder`` and the
server-side assignors, without I/O. Every decision takes the current state, the request and
``now_ms`` and returns the records to write to ``__consumer_offsets`` (keys and values of
:mod:`odradek.group_records`) plus the answer; the state itself changes only by
:meth:`GroupShard.replay` of records, whether they were just written (after the high watermark
passed them) or read back while loading the partition. So a coordinator that takes over a
partition rebuilds exactly the state its predecessor answered from.

A group's state (Kafka's names):

* group epoch: bumped when the membership or a subscription changes;
* target assignment (at the *assignment epoch*): what the assignor wants each member to own;
* each member's current assignment at its *member epoch*, converging to the target one
  heartbeat at a time: partitions are first revoked from their old owner (the member stays at
  its epoch in ``UNREVOKED_PARTITIONS`` until it stops reporting them), and granted to the new
  owner only once no other member holds them (``UNRELEASED_PARTITIONS`` meanwhile).

Not thread-safe: the coordinator serialises access per ``__consumer_offsets`` partition.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from odradek.errors import (
    FencedInstanceIdError,
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    IllegalGenerationError,
    InvalidGroupIdError,
    InvalidRegularExpressionError,
    InvalidRequestError,
    OffsetMetadataTooLargeError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
    UnsupportedVersionError,
)
from odradek.group_records import (
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
    GroupRecordKey,
    GroupRecordValue,
    MemberState,
    OffsetCommitKey,
    OffsetCommitValue,
    TopicPartitions,
)

__all__ = [
    "ASSIGNORS",
    "Assignment",
    "ConsumerGroup",
    "GroupRecord",
    "GroupShard",
    "HeartbeatRequest",
    "HeartbeatResult",
    "Member",
    "TopicInfo",
    "assign_range",
    "assign_uniform",
    "delete_group_records",
    "heartbeat",
    "member_leave_records",
    "next_member_assignment",
    "offset_commit_records",
    "subscribe_and_reconcile",
    "validate_offset_fetch",
]

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
OFFSET_METADATA_MAX_BYTES = 4096
"""Kafka's ``offset.metadata.max.bytes``."""

Assignment: TypeAlias = Mapping[str, frozenset[int]]
"""topic id → partitions."""
GroupRecord: TypeAlias = tuple[GroupRecordKey, GroupRecordValue | None]
"""A record to write: key and value (None: a tombstone)."""


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """What the coordinator knows of a topic from the metadata cache."""

    name: str
    topic_id: str
    num_partitions: int


@dataclass(frozen=True, slots=True)
class Member:
    member_id: str
    client_id: str = ""
    client_host: str = ""
    instance_id: str | None = None
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    classic: ConsumerGroupClassicMemberMetadata | None = None
    """A member speaking the classic protocol (Kafka 4.0's mixed groups): its session timeout
    and JoinGroup protocols; None for a KIP-848 member (see :mod:`.group_migration`)."""

    def topics(self, existing: Iterable[str]) -> set[str]:
        """The topics this member subscribes to: its names, and the topics of ``existing``
        its regular expression matches in full (KIP-848's ``SubscribedTopicRegex``, resolved
        by the coordinator; internal ``__`` topics never match)."""
        out = set(self.subscribed_topic_names)
        if self.subscribed_topic_regex:
            pattern = re.compile(self.subscribed_topic_regex)
            out.update(t for t in existing if not t.startswith("__") and pattern.fullmatch(t))
        return out

    def metadata_value(self) -> ConsumerGroupMemberMetadataValue:
        return ConsumerGroupMemberMetadataValue(
            client_id=self.client_id,
            client_host=self.client_host,
            subscribed_topic_names=self.subscribed_topic_names,
            instance_id=self.instance_id,
            rack_id=self.rack_id,
            subscribed_topic_regex=self.subscribed_topic_regex,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            server_assignor=self.server_assignor,
            classic_member_metadata=self.classic,
        )

    def assignment_value(self) -> ConsumerGroupCurrentMemberAssignmentValue:
        return ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=self.member_epoch,
            previous_member_epoch=self.previous_member_epoch,
            state=self.state,
            assigned_partitions=to_topic_partitions(self.assigned),
            partitions_pending_revocation=to_topic_partitions(self.pending_revocation),
        )


@dataclass(slots=True)
class ConsumerGroup:
    """One group's state, as replayed from its records."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, Member] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    metadata_hash: int = 0
    """The hash of the subscribed topics' metadata at ``group_epoch`` (see
    :func:`subscription_metadata_hash`)."""

    def static_member(self, instance_id: str) -> Member | None:
        for m in self.members.values():
            if m.instance_id == instance_id:
                return m
        return None

    def subscribed_topics(self, existing: Iterable[str] = ()) -> set[str]:
        """Every member's topics (names, and the topics of ``existing`` a regex matches)."""
        existing = tuple(existing)
        return {t for m in self.members.values() for t in m.topics(existing)}

    def state_name(self) -> str:
        """Kafka's ConsumerGroup state: Empty, Assigning, Reconciling or Stable."""
        if not self.members:
            return "Empty"
        if self.assignment_epoch < self.group_epoch:
            return "Assigning"
        if any(
            m.member_epoch != self.assignment_epoch or m.state is not MemberState.STABLE
            for m in self.members.values()
        ):
            return "Reconciling"
        return "Stable"

    def owner_of(self, topic_id: str, partition: int) -> str | None:
        """The member that holds the partition (assigned or still revoking), if any."""
        for m in self.members.values():
            if partition in m.assigned.get(topic_id, ()) or partition in m.pending_revocation.get(
                topic_id, ()
            ):
                return m.member_id
        return None


class GroupShard:
    """The groups and committed offsets of one ``__consumer_offsets`` partition."""

    def __init__(self) -> None:
        self.groups: dict[str, ConsumerGroup] = {}
        self.offsets: dict[str, dict[tuple[str, int], OffsetCommitValue]] = {}

    def replay(self, key: GroupRecordKey, value: GroupRecordValue | None) -> None:
        """Apply one record (Kafka's ``GroupMetadataManager.replay``). Records of unknown kinds
        (classic groups, subscription metadata) are ignored."""
        match key:
            case OffsetCommitKey(group=g, topic=t, partition=p):
                if value is None:
                    offsets = self.offsets.get(g)
                    if offsets is not None:
                        offsets.pop((t, p), None)
                        if not offsets:
                            del self.offsets[g]
                elif isinstance(value, OffsetCommitValue):
                    self.offsets.setdefault(g, {})[(t, p)] = value
            case ConsumerGroupMetadataKey(group_id=g):
                if value is None:
                    self.groups.pop(g, None)
                elif isinstance(value, ConsumerGroupMetadataValue):
                    loaded = self._group(g)
                    loaded.group_epoch = value.epoch
                    loaded.metadata_hash = value.metadata_hash
            case ConsumerGroupTargetAssignmentMetadataKey(group_id=g):
                if isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
                    self._group(g).assignment_epoch = value.assignment_epoch
            case ConsumerGroupMemberMetadataKey(group_id=g, member_id=m):
                group = self.groups.get(g)
                if value is None:
                    if group is not None:
                        group.members.pop(m, None)
                elif isinstance(value, ConsumerGroupMemberMetadataValue):
                    group = self._group(g)
                    old = group.members.get(m, Member(m))
                    group.members[m] = dataclasses.replace(
                        old,
                        client_id=value.client_id,
                        client_host=value.client_host,
                        instance_id=value.instance_id,
                        rack_id=value.rack_id,
                        subscribed_topic_names=value.subscribed_topic_names,
                        subscribed_topic_regex=value.subscribed_topic_regex,
                        rebalance_timeout_ms=value.rebalance_timeout_ms,
                        server_assignor=value.server_assignor,
                        classic=value.classic_member_metadata,
                    )
            case ConsumerGroupTargetAssignmentMemberKey(group_id=g, member_id=m):
                if value is None:
                    group = self.groups.get(g)
                    if group is not None:
                        group.target.pop(m, None)
                elif isinstance(value, ConsumerGroupTargetAssignmentMemberValue):
                    self._group(g).target[m] = from_topic_partitions(value.topic_partitions)
            case ConsumerGroupCurrentMemberAssignmentKey(group_id=g, member_id=m):
                if isinstance(value, ConsumerGroupCurrentMemberAssignmentValue):
                    group = self._group(g)
                    old = group.members.get(m, Member(m))
                    group.members[m] = dataclasses.replace(
                        old,
                        member_epoch=value.member_epoch,
                        previous_member_epoch=value.previous_member_epoch,
                        state=value.state,
                        assigned=from_topic_partitions(value.assigned_partitions),
                        pending_revocation=from_topic_partitions(
                            value.partitions_pending_revocation
                        ),
                    )
            case _:
                pass

    def _group(self, group_id: str) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ConsumerGroup(group_id)
        return group


def to_topic_partitions(assignment: Assignment) -> tuple[TopicPartitions, ...]:
    return tuple(
        TopicPartitions(tid, tuple(sorted(ps))) for tid, ps in sorted(assignment.items()) if ps
    )


def from_topic_partitions(items: Iterable[TopicPartitions]) -> dict[str, frozenset[int]]:
    return {tp.topic_id: frozenset(tp.partitions) for tp in items if tp.partitions}


def _normalise(assignment: Mapping[str, Iterable[int]]) -> dict[str, frozenset[int]]:
    return {t: frozenset(ps) for t, ps in assignment.items() if ps}


# --- assignors ---------------------------------------------------------------------------------


def _eligible(
    members: Mapping[str, Member], topics: Mapping[str, TopicInfo]
) -> dict[str, set[tuple[str, int]]]:
    out: dict[str, set[tuple[str, int]]] = {}
    for mid, m in members.items():
        out[mid] = {
            (topics[name].topic_id, p)
            for name in m.topics(topics)
            if name in topics
            for p in range(topics[name].num_partitions)
        }
    return out


def assign_uniform(
    members: Mapping[str, Member],
    topics: Mapping[str, TopicInfo],
    previous: Mapping[str, Assignment],
) -> dict[str, Assignment]:
    """Kafka's ``uniform`` assignor: every subscribed partition to one subscribed member, the
    counts as even as the subscriptions allow, keeping as many previous owners as possible.

    Sticky pass: each member keeps its previous partitions up to its quota (``P // N``, one
    more for the first ``P % N`` members to claim it); then the rest go, in topic and partition
    order, to the eligible member holding the fewest (ties by member id).
    """
    eligible = _eligible(members, topics)
    all_partitions = sorted(set().union(*eligible.values())) if eligible else []
    result: dict[str, set[tuple[str, int]]] = {mid: set() for mid in members}
    if not members or not all_partitions:
        return {mid: {} for mid in members}
    n = len(members)
    base, extra = divmod(len(all_partitions), n)
    taken: set[tuple[str, int]] = set()
    # members with most previous partitions claim the extra slots first: fewer moves
    order = sorted(
        members,
        key=lambda mid: (-sum(len(ps) for ps in previous.get(mid, {}).values()), mid),
    )
    for mid in order:
        quota = base + (1 if extra > 0 else 0)
        kept = sorted(
            (tid, p)
            for tid, ps in previous.get(mid, {}).items()
            for p in ps
            if (tid, p) in eligible[mid] and (tid, p) not in taken
        )[:quota]
        if len(kept) == base + 1:
            extra -= 1
        result[mid].update(kept)
        taken.update(kept)
    for tp in all_partitions:
        if tp in taken:
            continue
        candidates = [mid for mid in members if tp in eligible[mid]]
        best = min(candidates, key=lambda mid: (len(result[mid]), mid))
        result[best].add(tp)
        taken.add(tp)
    out: dict[str, Assignment] = {}
    for mid, tps in result.items():
        grouped: dict[str, set[int]] = {}
        for tid, p in tps:
            grouped.setdefault(tid, set()).add(p)
        out[mid] = _normalise(grouped)
    return out


def assign_range(
    members: Mapping[str, Member],
    topics: Mapping[str, TopicInfo],
    previous: Mapping[str, Assignment],
) -> dict[str, Assignment]:
    """Kafka's ``range`` assignor: per topic, its subscribers in member id order get contiguous
    ranges, ``ceil(P / N)`` partitions to the first ``P % N`` of them."""
    del previous  # range is deterministic from the subscriptions
    out: dict[str, dict[str, set[int]]] = {mid: {} for mid in members}
    subscriptions = {mid: m.topics(topics) for mid, m in members.items()}
    for name, info in sorted(topics.items()):
        subscribers = sorted(mid for mid, names in subscriptions.items() if name in names)
        if not subscribers:
            continue
        base, extra = divmod(info.num_partitions, len(subscribers))
        start = 0
        for i, mid in enumerate(subscribers):
            count = base + (1 if i < extra else 0)
            if count:
                out[mid][info.topic_id] = set(range(start, start + count))
            start += count
    return {mid: _normalise(a) for mid, a in out.items()}


ASSIGNORS = {"uniform": assign_uniform, "range": assign_range}
"""``group.consumer.assignors``: the first is the default."""


# --- reconciliation ----------------------------------------------------------------------------


def _minus(a: Assignment, b: Assignment) -> dict[str, frozenset[int]]:
    return _normalise({t: ps - b.get(t, frozenset()) for t, ps in a.items()})


def _intersect(a: Assignment, b: Assignment) -> dict[str, frozenset[int]]:
    return _normalise({t: ps & b.get(t, frozenset()) for t, ps in a.items()})


def _overlaps(a: Assignment, b: Assignment) -> bool:
    return any(ps & b.get(t, frozenset()) for t, ps in a.items())


def next_member_assignment(
    member: Member,
    group: ConsumerGroup,
    owned: Assignment | None,
) -> Member:
    """One step of Kafka's ``CurrentAssignmentBuilder``: ``member`` moved towards the group's
    target assignment. ``owned`` is what the member reports it holds (None: not reported)."""
    target_epoch = group.assignment_epoch
    target = group.target.get(member.member_id, {})
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if owned is None or _overlaps(owned, member.pending_revocation):
            return member  # still revoking
    elif member.state is MemberState.STABLE and member.member_epoch == target_epoch:
        return member
    new_assigned = _intersect(member.assigned, target)
    pending_revocation = _minus(member.assigned, new_assigned)
    wanted = _minus(target, new_assigned)
    unreleased: dict[str, set[int]] = {}
    granted: dict[str, set[int]] = {}
    for tid, ps in wanted.items():
        for p in ps:
            owner = group.owner_of(tid, p)
            if owner is not None and owner != member.member_id:
                unreleased.setdefault(tid, set()).add(p)
            else:
                granted.setdefault(tid, set()).add(p)
    if pending_revocation and (owned is None or _overlaps(owned, pending_revocation)):
        return dataclasses.replace(
            member,
            state=MemberState.UNREVOKED_PARTITIONS,
            assigned=new_assigned,
            pending_revocation=pending_revocation,
        )
    assigned: dict[str, frozenset[int]] = dict(new_assigned)
    for tid, new in granted.items():
        assigned[tid] = assigned.get(tid, frozenset()) | frozenset(new)
    return dataclasses.replace(
        member,
        member_epoch=target_epoch,
        previous_member_epoch=member.member_epoch,
        state=MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
        assigned=_normalise(assigned),
        pending_revocation={},
    )


# --- heartbeat ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    records: list[GroupRecord]
    member_id: str
    member_epoch: int
    assignment: Assignment | None
    """None: no change to tell the member."""
    removed_member_id: str | None = None
    """A static member replaced by this one: the coordinator drops its session."""


KAFKA_STRING_MAX_BYTES = 0x7FFF
"""Kafka's protocol strings (int16 length): the most a group record may carry, and more than
any Kafka client can send."""


def check_group_id(group_id: str) -> None:
    """Raises INVALID_GROUP_ID for an empty group id or one longer than Kafka's strings."""
    if not group_id:
        raise InvalidGroupIdError("the group id is empty")
    size = len(group_id.encode())
    if size > KAFKA_STRING_MAX_BYTES:
        raise InvalidGroupIdError(
            f"the group id is {size} bytes long; Kafka's strings are at most "
            f"{KAFKA_STRING_MAX_BYTES}"
        )


def _check_lengths(req: HeartbeatRequest) -> None:
    """INVALID_REQUEST for a string no Kafka client could send (and no record can hold)."""
    fields = {
        "MemberId": req.member_id,
        "InstanceId": req.instance_id,
        "RackId": req.rack_id,
        "SubscribedTopicRegex": req.subscribed_topic_regex,
        "ServerAssignor": req.server_assignor,
        "ClientId": req.client_id,
        "ClientHost": req.client_host,
    }
    for i, name in enumerate(req.subscribed_topic_names or ()):
        fields[f"SubscribedTopicNames[{i}]"] = name
    for name, value in fields.items():
        if value is not None and len(value.encode()) > KAFKA_STRING_MAX_BYTES:
            raise InvalidRequestError(
                f"{name} is longer than {KAFKA_STRING_MAX_BYTES} bytes, Kafka's string limit."
            )


def _validate(req: HeartbeatRequest) -> None:
    if not req.group_id:
        raise InvalidRequestError("GroupId can't be empty.")
    _check_lengths(req)
    if req.instance_id == "":
        raise InvalidRequestError("InstanceId can't be empty.")
    if req.rack_id == "":
        raise InvalidRequestError("RackId can't be empty.")
    if req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise InvalidRequestError(f"MemberEpoch {req.member_epoch} is invalid.")
    if req.member_epoch != 0 and not req.member_id:
        raise InvalidRequestError("MemberId can't be empty.")
    if req.member_epoch == 0:
        if req.rebalance_timeout_ms == -1:
            raise InvalidRequestError("RebalanceTimeoutMs must be provided in first request.")
        if req.owned is None or any(req.owned.values()):
            raise InvalidRequestError("TopicPartitions must be empty when (re-)joining.")
        if not req.subscribed_topic_names and not req.subscribed_topic_regex:
            raise InvalidRequestError("SubscribedTopicNames must be set in first request.")
    if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and req.instance_id is None:
        raise InvalidRequestError("InstanceId can't be null.")
    if req.server_assignor is not None and req.server_assignor not in ASSIGNORS:
        raise UnsupportedAssignorError(f"ServerAssignor {req.server_assignor} is not supported.")
    if req.subscribed_topic_regex:
        try:
            re.compile(req.subscribed_topic_regex)
        except re.error as e:
            raise InvalidRegularExpressionError(
                f"SubscribedTopicRegex `{req.subscribed_topic_regex}` is not a valid regular "
                f"expression: {e}."
            ) from None


def subscription_metadata_hash(subscribed: Iterable[str], topics: Mapping[str, TopicInfo]) -> int:
    """A signed 64-bit hash of the subscribed topics that exist: their names, ids and partition
    counts (0 for none). It changes when a subscribed topic is created, deleted, recreated or
    gets partitions. Kafka's value (XXH3 over the same fields and the racks) is not reproduced:
    only equality with the value stored by this coordinator matters."""
    present = sorted(
        (t.name, t.topic_id, t.num_partitions) for n in subscribed if (t := topics.get(n))
    )
    if not present:
        return 0
    digest = hashlib.blake2b(repr(present).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def member_leave_records(group: ConsumerGroup, member_id: str) -> list[GroupRecord]:
    """A member leaves or expires: tombstones of its records and a group epoch bump."""
    gid = group.group_id
    return [
        (ConsumerGroupCurrentMemberAssignmentKey(gid, member_id), None),
        (ConsumerGroupTargetAssignmentMemberKey(gid, member_id), None),
        (ConsumerGroupMemberMetadataKey(gid, member_id), None),
        (
            ConsumerGroupMetadataKey(gid),
            ConsumerGroupMetadataValue(group.group_epoch + 1, group.metadata_hash),
        ),
    ]


def delete_group_records(
    group: ConsumerGroup | None, group_id: str, offsets: Iterable[tuple[str, int]]
) -> list[GroupRecord]:
    """Tombstones for every record of an (empty) group and its committed offsets."""
    records: list[GroupRecord] = [(OffsetCommitKey(group_id, t, p), None) for t, p in offsets]
    if group is not None:
        for mid in list(group.members):
            records += [
                (ConsumerGroupCurrentMemberAssignmentKey(group_id, mid), None),
                (ConsumerGroupTargetAssignmentMemberKey(group_id, mid), None),
                (ConsumerGroupMemberMetadataKey(group_id, mid), None),
            ]
        for mid in group.target:
            if mid not in group.members:
                records.append((ConsumerGroupTargetAssignmentMemberKey(group_id, mid), None))
        records += [
            (ConsumerGroupTargetAssignmentMetadataKey(group_id), None),
            (ConsumerGroupPartitionMetadataKey(group_id), None),
            (ConsumerGroupMetadataKey(group_id), None),
        ]
    return records


def subscribe_and_reconcile(
    group: ConsumerGroup,
    member: Member,
    updated: Member,
    owned: Assignment | None,
    topics: Mapping[str, TopicInfo],
    records: list[GroupRecord],
    *,
    new: bool,
    rewrite: bool,
    default_assignor: str = "uniform",
) -> Member:
    """The three steps of a heartbeat after its checks (Kafka's ``consumerGroupHeartbeat``
    and ``classicGroupJoinToConsumerGroup`` share them): ``member`` becomes ``updated`` (its
    metadata record if it changed, or ``rewrite``); the group epoch is bumped when the member
    is ``new``, the subscriptions or the subscribed topics' metadata changed; a new target
    assignment is computed when the group epoch is ahead of it; the member moves one step
    towards its target (``owned``: what it reports holding). ``rewrite``: its records are
    written even unchanged (a new member, or a static member's replacement, which takes its
    predecessor's place without a bump). Changes ``group`` (a working copy) and appends to
    ``records``; returns the reconciled member."""
    gid = group.group_id
    if rewrite or updated.metadata_value() != member.metadata_value():
        records.append(
            (ConsumerGroupMemberMetadataKey(gid, updated.member_id), updated.metadata_value())
        )
    group.members[updated.member_id] = updated
    # Kafka 4.1's group hash: partitions added to a subscribed topic, or a subscribed topic
    # created or deleted, bump the group epoch as a membership change does, so the new
    # partitions are assigned (Kafka's GroupMetadataManager compares the stored
    # metadataHash with the one computed from the current metadata on each heartbeat).
    metadata_hash = subscription_metadata_hash(group.subscribed_topics(topics), topics)
    bump = (
        new
        or updated.subscribed_topic_names != member.subscribed_topic_names
        or updated.subscribed_topic_regex != member.subscribed_topic_regex
        or metadata_hash != group.metadata_hash
    )
    if bump:
        group.group_epoch += 1
        group.metadata_hash = metadata_hash
        records.append(
            (
                ConsumerGroupMetadataKey(gid),
                ConsumerGroupMetadataValue(group.group_epoch, metadata_hash),
            )
        )

    if group.group_epoch > group.assignment_epoch:
        # the member's assignor, else one another member names (a classic member names none)
        assignor_name = updated.server_assignor or next(
            (m.server_assignor for m in group.members.values() if m.server_assignor),
            default_assignor,
        )
        assignor = ASSIGNORS[assignor_name]
        subscribed = {
            name: topics[name] for name in group.subscribed_topics(topics) if name in topics
        }
        new_target = assignor(group.members, subscribed, group.target)
        for mid, assignment in sorted(new_target.items()):
            if dict(assignment) != dict(group.target.get(mid, {})) or mid not in group.target:
                records.append(
                    (
                        ConsumerGroupTargetAssignmentMemberKey(gid, mid),
                        ConsumerGroupTargetAssignmentMemberValue(to_topic_partitions(assignment)),
                    )
                )
        group.target = dict(new_target)
        group.assignment_epoch = group.group_epoch
        records.append(
            (
                ConsumerGroupTargetAssignmentMetadataKey(gid),
                ConsumerGroupTargetAssignmentMetadataValue(group.assignment_epoch),
            )
        )

    reconciled = next_member_assignment(updated, group, owned)
    if rewrite or reconciled.assignment_value() != updated.assignment_value():
        records.append(
            (
                ConsumerGroupCurrentMemberAssignmentKey(gid, reconciled.member_id),
                reconciled.assignment_value(),
            )
        )
    group.members[reconciled.member_id] = reconciled
    return reconciled


def heartbeat(
    group: ConsumerGroup | None,
    req: HeartbeatRequest,
    topics: Mapping[str, TopicInfo],
    *,
    max_group_size: int = 2**31 - 1,
    default_assignor: str = "uniform",
) -> HeartbeatResult:
    """Kafka's ``consumerGroupHeartbeat``: the records the request makes the coordinator write
    and the answer. ``group`` is not changed (the caller replays the records once written).

    Raises the typed errors of Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid`` and
    member checks: INVALID_REQUEST, UNSUPPORTED_ASSIGNOR, GROUP_ID_NOT_FOUND,
    UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID,
    GROUP_MAX_SIZE_REACHED.
    """
    _validate(req)
    gid = req.group_id
    if group is None:
        if req.member_epoch != 0:
            raise GroupIdNotFoundError(f"Group {gid} not found.")
        group = ConsumerGroup(gid)
    # work on a copy: replay of the returned records is what changes the real state
    group = ConsumerGroup(
        gid,
        group.group_epoch,
        group.assignment_epoch,
        dict(group.members),
        dict(group.target),
        group.metadata_hash,
    )
    records: list[GroupRecord] = []

    if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
        member = group.members.get(req.member_id)
        if member is None:
            if req.instance_id is not None:
                member = group.static_member(req.instance_id)
            if member is None:
                raise UnknownMemberIdError(f"Member {req.member_id} is not a member of {gid}.")
        if req.instance_id is not None and member.member_id != req.member_id:
            raise FencedInstanceIdError(f"Instance {req.instance_id} belongs to another member.")
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            left = dataclasses.replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH)
            records.append(
                (
                    ConsumerGroupCurrentMemberAssignmentKey(gid, member.member_id),
                    left.assignment_value(),
                )
            )
        else:
            records += member_leave_records(group, member.member_id)
        return HeartbeatResult(records, member.member_id, req.member_epoch, None)

    removed: str | None = None
    member = group.members.get(req.member_id)
    is_new = False
    if req.member_epoch == 0:
        if req.instance_id is not None:
            previous = group.static_member(req.instance_id)
            if previous is not None and previous.member_id != req.member_id:
                if previous.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    raise UnreleasedInstanceIdError(
                        f"Static member {previous.member_id} with instance id "
                        f"{req.instance_id} is not released yet."
                    )
                # a restarted static member takes over its predecessor's assignment and epoch:
                # no rebalance
                removed = previous.member_id
                member = dataclasses.replace(previous, member_id=req.member_id)
                records += [
                    (ConsumerGroupCurrentMemberAssignmentKey(gid, removed), None),
                    (ConsumerGroupTargetAssignmentMemberKey(gid, removed), None),
                    (ConsumerGroupMemberMetadataKey(gid, removed), None),
                ]
                target = group.target.pop(removed, {})
                group.target[req.member_id] = target
                del group.members[removed]
                records.append(
                    (
                        ConsumerGroupTargetAssignmentMemberKey(gid, req.member_id),
                        ConsumerGroupTargetAssignmentMemberValue(to_topic_partitions(target)),
                    )
                )
        if member is None:
            if len(group.members) >= max_group_size:
                raise GroupMaxSizeReachedError("The consumer group has reached its max size.")
            member = Member(req.member_id or "")
            is_new = True
    else:
        if member is None:
            raise UnknownMemberIdError(f"Member {req.member_id} is not a member of group {gid}.")
        if req.instance_id is not None and member.instance_id != req.instance_id:
            raise FencedInstanceIdError(
                f"Instance id {req.instance_id} does not match member {req.member_id}."
            )
        _check_member_epoch(member, req)

    updated = dataclasses.replace(
        member,
        instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
        rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
        client_id=req.client_id or member.client_id,
        client_host=req.client_host or member.client_host,
        subscribed_topic_names=(
            tuple(sorted(set(req.subscribed_topic_names)))
            if req.subscribed_topic_names is not None
            else member.subscribed_topic_names
        ),
        subscribed_topic_regex=(
            req.subscribed_topic_regex
            if req.subscribed_topic_regex is not None
            else member.subscribed_topic_regex
        ),
        rebalance_timeout_ms=(
            req.rebalance_timeout_ms
            if req.rebalance_timeout_ms != -1
            else member.rebalance_timeout_ms
        ),
        server_assignor=(
            req.server_assignor if req.server_assignor is not None else member.server_assignor
        ),
    )
    reconciled = subscribe_and_reconcile(
        group,
        member,
        updated,
        req.owned,
        topics,
        records,
        new=is_new,
        rewrite=is_new or removed is not None,
        default_assignor=default_assignor,
    )
    owned = req.owned
    full = req.member_epoch == 0 or (
        req.rebalance_timeout_ms != -1
        and req.subscribed_topic_names is not None
        and req.owned is not None
    )
    changed = dict(reconciled.assigned) != dict(updated.assigned) or (
        owned is not None and dict(owned) != dict(reconciled.assigned)
    )
    return HeartbeatResult(
        records,
        reconciled.member_id,
        reconciled.member_epoch,
        reconciled.assigned if full or changed or removed is not None else None,
        removed_member_id=removed,
    )


def _check_member_epoch(member: Member, req: HeartbeatRequest) -> None:
    """Kafka's ``throwIfConsumerGroupMemberEpochIsInvalid``: a newer epoch is fenced; an older
    one only passes as the previous epoch with owned partitions all still assigned (the answer
    that bumped the epoch was lost)."""
    received = req.member_epoch
    expected = member.member_epoch
    if received > expected:
        raise FencedMemberEpochError(
            f"The consumer group member has a greater member epoch ({received}) than the one "
            f"known by the group coordinator ({expected}). The member must abandon all its "
            f"partitions and rejoin."
        )
    if received < expected:
        owned = req.owned or {}
        if received != member.previous_member_epoch or not all(
            ps <= member.assigned.get(t, frozenset()) for t, ps in owned.items()
        ):
            raise FencedMemberEpochError(
                f"The consumer group member has a smaller member epoch ({received}) than the "
                f"one known by the group coordinator ({expected}). The member must abandon all "
                f"its partitions and rejoin."
            )


# --- offsets -----------------------------------------------------------------------------------


def _check_member(group: ConsumerGroup | None, member_id: str, member_epoch: int) -> Member:
    member = None if group is None else group.members.get(member_id)
    if member is None:
        raise UnknownMemberIdError(f"Member {member_id} is not a member of the group.")
    if member_epoch != member.member_epoch and member.classic is not None:
        # a classic member's generation is its member epoch (Kafka's validateMemberEpoch)
        raise IllegalGenerationError(
            f"The generation {member_epoch} is not the member's {member.member_epoch}."
        )
    if member_epoch != member.member_epoch:
        raise StaleMemberEpochError(
            f"The member's epoch {member_epoch} is not its current epoch {member.member_epoch}."
        )
    return member


def offset_commit_records(
    group: ConsumerGroup | None,
    group_id: str,
    member_id: str,
    member_epoch: int,
    commits: Sequence[tuple[str, int, int, int, str]],
    topics: Mapping[str, TopicInfo],
    now_ms: int,
    api_version: int | None = None,
) -> tuple[list[GroupRecord], list[tuple[str, int, Exception | None]]]:
    """OffsetCommit (Kafka's ``ConsumerGroup.validateOffsetCommit`` and
    ``OffsetMetadataManager.commitOffset``): ``commits`` are (topic, partition, offset,
    leader epoch, metadata). A commit with a negative epoch to a group without members (or to
    no group) is accepted whatever its member id: an admin commit, or a consumer that only
    ``assign()``s (librdkafka's KIP-848 consumer sends its own member id with epoch -1). With
    members, a commit must be a member's with its current epoch and name partitions it holds.
    Returns the records and a per-partition outcome.

    ``api_version``: the OffsetCommit version of a Kafka client's request (None: the gRPC
    door's); a KIP-848 member's commit below v9 is UNSUPPORTED_VERSION (it cannot carry a
    member epoch), a classic member of the group may use any version.

    Raises (for the whole request) UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH (a KIP-848 member),
    ILLEGAL_GENERATION (a classic member), UNSUPPORTED_VERSION, INVALID_GROUP_ID.
    """
    member: Member | None = None
    if member_epoch < 0 and (group is None or not group.members):
        pass  # Kafka's "memberEpoch < 0 && members().isEmpty()": the member id is not looked at
    elif member_epoch < 0 and not member_id:
        raise UnknownMemberIdError(
            f"Group {group_id} has active members: an admin commit needs an empty group."
        )
    else:
        member = _check_member(group, member_id, member_epoch)
        if member.classic is None and api_version is not None and api_version < 9:
            raise UnsupportedVersionError(
                f"OffsetCommit v{api_version} cannot commit for a consumer group member "
                f"(KIP-848); v9 and later can."
            )
    records: list[GroupRecord] = []
    outcome: list[tuple[str, int, Exception | None]] = []
    for topic, partition, offset, leader_epoch, metadata in commits:
        error: Exception | None = None
        info = topics.get(topic)
        if len(metadata.encode()) > OFFSET_METADATA_MAX_BYTES:
            error = OffsetMetadataTooLargeError(
                f"metadata of {len(metadata.encode())} bytes exceeds {OFFSET_METADATA_MAX_BYTES}"
            )
        elif info is None or not 0 <= partition < info.num_partitions:
            error = UnknownTopicOrPartitionError(f"{topic}-{partition} does not exist")
        elif member is not None and not (
            partition in member.assigned.get(info.topic_id, ())
            or partition in member.pending_revocation.get(info.topic_id, ())
        ):
            error = StaleMemberEpochError(
                f"member {member_id} does not own {topic}-{partition} at epoch {member_epoch}"
            )
        if error is None:
            records.append(
                (
                    OffsetCommitKey(group_id, topic, partition),
                    OffsetCommitValue(offset, metadata, now_ms, leader_epoch),
                )
            )
        outcome.append((topic, partition, error))
    return records, outcome


def validate_offset_fetch(group: ConsumerGroup | None, member_id: str, member_epoch: int) -> None:
    """Kafka's ``ConsumerGroup.validateOffsetFetch``, for a consumer group: an admin fetch (no
    member id, epoch < 0) always passes; one naming a member id must be that member's with its
    current epoch, even with epoch -1 (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH). A group id with
    no consumer group (classic, simple or unknown) is not checked: the caller skips this."""
    if not member_id and member_epoch < 0:
        return
    _check_member(group, member_id, member_epoch)
