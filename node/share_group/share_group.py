"""Share groups (KIP-932) as values and pure decisions: membership and assignment.

Kafka's ``ShareGroup``, ``ShareGroupMember`` and ``GroupMetadataManager.shareGroupHeartbeat``
without I/O. A share group's state (Kafka's names):

* **group epoch**: bumped when a member joins, leaves or expires, when a subscription changes,
  or when a subscribed topic's metadata changes (created, deleted, more partitions);
* **target assignment** at the *assignment epoch*: what Kafka's simple share assignor
  (:mod:`node.share_group.simple_assignor`) gives each member, recomputed on the first
  heartbeat after the group epoch moved;
* **members**: member id (the client generates it, KIP-1082), member epoch, rack, client id
  and host, subscribed topic names, assigned partitions. A share group has no revocation
  phase (a partition may be read by several members at once; records are locked one by one
  by the partition leaders), so a member moves to the target assignment and the assignment
  epoch on its next heartbeat.

**Persistence** (narrower than Kafka's): only the group's existence and epoch are written to
``__consumer_offsets`` (Kafka's ``ShareGroupMetadata`` record, type 11, a tombstone when the
group is deleted); Kafka's member, target-assignment and current-assignment records are not.
Members live in the coordinator's memory: after a coordinator failover the group is back,
empty, at its epoch, and every member's next heartbeat answers UNKNOWN_MEMBER_ID, upon which
a KIP-848 client rejoins with epoch 0 (as after a session expiry). What the members read is
unaffected: share-partition state lives with the partition leaders and the share coordinator.

Errors, as Kafka's heartbeat answers them: INVALID_REQUEST (42) for a malformed request,
GROUP_ID_NOT_FOUND (69) for an unknown group heartbeated above epoch 0 or a group id used by a
consumer or classic group, UNKNOWN_MEMBER_ID (25), FENCED_MEMBER_EPOCH (110) for any epoch
other than the member's, GROUP_MAX_SIZE_REACHED (81) beyond ``group.share.max.size``.

Not thread-safe: the coordinator serialises access per ``__consumer_offsets`` partition.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from node.coordinator.group_state import TopicInfo, subscription_metadata_hash
from node.share_group.simple_assignor import Assignment, assign_simple
from odradek.errors import (
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    InvalidRequestError,
    UnknownMemberIdError,
)

__all__ = [
    "LEAVE_GROUP_MEMBER_EPOCH",
    "ShareGroup",
    "ShareHeartbeatRequest",
    "ShareHeartbeatResult",
    "ShareMember",
    "share_heartbeat",
    "share_member_leave",
]

LEAVE_GROUP_MEMBER_EPOCH = -1
KAFKA_STRING_MAX_BYTES = 32767


@dataclass(frozen=True, slots=True)
class ShareMember:
    member_id: str
    member_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    assigned: Assignment = field(default_factory=dict)
    """topic id → partitions: the member's assignment at ``member_epoch``."""


@dataclass(slots=True)
class ShareGroup:
    """One share group's state."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    metadata_hash: int = 0
    """The hash of the subscribed topics' metadata at ``group_epoch``."""
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)

    def state_name(self) -> str:
        """Kafka's ``ShareGroupState``: Empty without members, else Stable."""
        return "Stable" if self.members else "Empty"

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}

    def copy(self) -> ShareGroup:
        return dataclasses.replace(self, members=dict(self.members), target=dict(self.target))


@dataclass(frozen=True, slots=True)
class ShareHeartbeatRequest:
    """ShareGroupHeartbeat (v1): the fields of Kafka's request, plus the client's id and host
    (from the request header and the connection)."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None
    """None: unchanged since the last heartbeat."""
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class ShareHeartbeatResult:
    member_id: str
    member_epoch: int
    assignment: Assignment | None = None
    """The member's partitions (topic id → partitions) when they are news to it (a join, or a
    change); None otherwise."""


def validate(req: ShareHeartbeatRequest) -> None:
    """Kafka's ``throwIfShareGroupHeartbeatRequestIsInvalid``: INVALID_REQUEST."""
    if not req.group_id:
        raise InvalidRequestError("GroupId can't be empty.")
    if not req.member_id:
        raise InvalidRequestError("MemberId can't be empty.")
    fields = {"MemberId": req.member_id, "RackId": req.rack_id}
    for i, name in enumerate(req.subscribed_topic_names or ()):
        fields[f"SubscribedTopicNames[{i}]"] = name
    for name, value in fields.items():
        if value is not None and len(value.encode()) > KAFKA_STRING_MAX_BYTES:
            raise InvalidRequestError(
                f"{name} is longer than {KAFKA_STRING_MAX_BYTES} bytes, Kafka's string limit."
            )
    if req.rack_id == "":
        raise InvalidRequestError("RackId can't be empty.")
    if req.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        raise InvalidRequestError(f"MemberEpoch {req.member_epoch} is invalid.")
    if req.member_epoch == 0 and not req.subscribed_topic_names:
        raise InvalidRequestError("SubscribedTopicNames must be set in first request.")


def _by_id(topics: Mapping[str, TopicInfo]) -> dict[str, int]:
    return {t.topic_id: t.num_partitions for t in topics.values()}


def compute_target(group: ShareGroup, topics: Mapping[str, TopicInfo]) -> None:
    """Recompute the target assignment at the group epoch (in place)."""
    subscriptions = {
        m.member_id: {topics[n].topic_id for n in m.subscribed_topic_names if n in topics}
        for m in group.members.values()
    }
    group.target = dict(assign_simple(subscriptions, _by_id(topics), group.target))
    group.assignment_epoch = group.group_epoch


def share_heartbeat(
    group: ShareGroup | None,
    req: ShareHeartbeatRequest,
    topics: Mapping[str, TopicInfo],
    max_size: int,
) -> tuple[ShareGroup, ShareHeartbeatResult]:
    """One heartbeat (join with epoch 0, heartbeat, or leave with -1) on ``group`` (None: no
    share group of that id; a group id of another kind is the caller's to refuse). Returns the
    group's new state (a copy; ``group`` is untouched) and the answer. Raises the errors of the
    module docstring."""
    validate(req)
    if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
        if group is None:
            raise GroupIdNotFoundError(f"Group {req.group_id} not found.")
        return share_member_leave(group, req.member_id), ShareHeartbeatResult(
            req.member_id, LEAVE_GROUP_MEMBER_EPOCH
        )
    if group is None:
        if req.member_epoch != 0:
            raise GroupIdNotFoundError(f"Group {req.group_id} not found.")
        group = ShareGroup(req.group_id)
    new = group.copy()
    member = new.members.get(req.member_id)
    if member is None:
        if req.member_epoch != 0:
            raise UnknownMemberIdError(
                f"Member {req.member_id} is not a member of group {req.group_id}."
            )
        if len(new.members) >= max_size:
            raise GroupMaxSizeReachedError(
                f"The share group has reached its maximum capacity of {max_size} members."
            )
        member = ShareMember(req.member_id)
        joined = True
    else:
        if req.member_epoch not in (0, member.member_epoch):
            which = "larger" if req.member_epoch > member.member_epoch else "smaller"
            raise FencedMemberEpochError(
                f"The share group member has a {which} "
                f"member epoch ({req.member_epoch}) than the one known by the group "
                f"coordinator ({member.member_epoch})."
            )
        joined = req.member_epoch == 0
    updated = dataclasses.replace(
        member,
        rack_id=member.rack_id if req.rack_id is None else req.rack_id,
        subscribed_topic_names=member.subscribed_topic_names
        if req.subscribed_topic_names is None
        else tuple(sorted(set(req.subscribed_topic_names))),
        client_id=req.client_id,
        client_host=req.client_host,
    )
    new.members[req.member_id] = updated
    metadata_hash = subscription_metadata_hash(new.subscribed_topics(), topics)
    if (
        member.member_id not in group.members
        or updated.subscribed_topic_names != member.subscribed_topic_names
        or metadata_hash != new.metadata_hash
    ):
        new.group_epoch += 1
        new.metadata_hash = metadata_hash
    if new.assignment_epoch < new.group_epoch:
        compute_target(new, topics)
    target = new.target.get(req.member_id, {})
    final = dataclasses.replace(updated, member_epoch=new.assignment_epoch, assigned=target)
    new.members[req.member_id] = final
    changed = joined or dict(member.assigned) != dict(target)
    return new, ShareHeartbeatResult(req.member_id, final.member_epoch, target if changed else None)


def share_member_leave(group: ShareGroup, member_id: str) -> ShareGroup:
    """A member leaves (epoch -1) or its session expired: removed, the group epoch bumped (the
    others get its partitions at their next heartbeat). Raises UNKNOWN_MEMBER_ID."""
    if member_id not in group.members:
        raise UnknownMemberIdError(f"Member {member_id} is not a member of group {group.group_id}.")
    new = group.copy()
    del new.members[member_id]
    new.target.pop(member_id, None)
    new.group_epoch += 1
    return new


def described_assignment(
    assignment: Assignment, names: Mapping[str, str]
) -> Sequence[tuple[str, str, tuple[int, ...]]]:
    """``(topic id, topic name, partitions)`` of an assignment, by name (a topic gone from the
    metadata is left out)."""
    return sorted(
        (tid, names[tid], tuple(sorted(ps))) for tid, ps in assignment.items() if tid in names
    )
