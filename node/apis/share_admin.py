"""The share group offset APIs (KIP-932), whatever the front door: DescribeShareGroupOffsets
(90), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92), each with its policy in
front of the share group room (membership: the group coordinator's share groups) and the
durable share state (:class:`~node.share.persister.ShareStatePersister`). As Kafka's
``KafkaApis.handle{Describe,Alter,Delete}ShareGroupOffsetsRequest`` and
``GroupCoordinatorService``:

==========================  ==========================================================  ======
API                         checks, in Kafka's order                                    codes
==========================  ==========================================================  ======
DescribeShareGroupOffsets   DESCRIBE on the group (30, for the whole group); DESCRIBE    30, 29
                            on each topic (29 on its partitions); an unknown group or    69, 3
                            one of another kind GROUP_ID_NOT_FOUND; an unknown topic or
                            partition UNKNOWN_TOPIC_OR_PARTITION on its partitions
AlterShareGroupOffsets      READ on the group (30); READ on each topic (29); the group   30, 29
                            must be empty (NON_EMPTY_GROUP 68) and known (69); a         68, 69
                            negative start offset INVALID_REQUEST (42) on its partition  42, 3
DeleteShareGroupOffsets     DELETE on the group (30); READ on each topic (29); empty     30, 29
                            (68) and known (69); an unknown topic 3                      68, 69
==========================  ==========================================================  ======

What each does with the share state, per share partition (group, topic id, partition):

* **Describe**: the persister's summary (``read_summary``): the share-partition start offset
  (-1: never initialized) and, when this node leads the partition, the lag (high watermark -
  start offset; -1 otherwise). Topics ``None`` (Kafka's "all topics"): the group's members'
  subscribed and assigned topics plus every partition of the cluster whose share state for
  the group is initialized (a ``read_summary`` per partition: an admin call's cost).
* **Alter**: ``initialize`` at the new start offset — a reset: a new state epoch (the summary's
  + 1), no state batches. The share partition this node had loaded for it is dropped
  (:meth:`~node.share.manager.SharePartitionManager.forget`), so that the next ShareFetch loads
  the reset state; one loaded on another leader is dropped when a member opens a new share
  session there and the leader finds the durable state epoch moved on
  (:meth:`~node.share.manager.SharePartitionManager.drop_stale`).
* **Delete**: ``delete`` of every partition of each topic, and the loaded share partitions
  dropped likewise; the next ShareFetch starts from ``share.auto.offset.reset``.

Takes plain values and the :class:`~node.security.auth_helper.Caller`; answers plain values
with Kafka's error codes. Thread-safe (no state of its own). May block (the persister).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from node.coordinator.group_coordinator import GroupCoordinator
from node.core.requests import ListOffsetsPartition
from node.security.auth_helper import AuthHelper, Caller
from node.share.manager import SharePartitionManager
from node.share.persister import PersisterError, ShareKey
from odradek.acl import AclOperation, ResourceType
from odradek.errors import (
    GroupAuthorizationFailedError,
    InvalidRequestError,
    NonEmptyGroupError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)

__all__ = [
    "ShareAdminApis",
    "ShareGroupOffsets",
    "ShareOffsetsAnswer",
    "SharePartitionOffset",
    "ShareTopicAnswer",
]

GROUP_DENIED = GroupAuthorizationFailedError.code
TOPIC_DENIED = TopicAuthorizationFailedError.code
UNKNOWN_TOPIC = UnknownTopicOrPartitionError.code
NON_EMPTY_GROUP = NonEmptyGroupError.code
INVALID_REQUEST = InvalidRequestError.code


@dataclass(frozen=True, slots=True)
class SharePartitionOffset:
    """One share partition's answer: its start offset (-1: none), leader epoch (-1: not
    kept), lag (-1: unknown) and error."""

    topic: str
    topic_id: str
    partition: int
    start_offset: int = -1
    leader_epoch: int = -1
    lag: int = -1
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class ShareGroupOffsets:
    """DescribeShareGroupOffsets' answer for one group: an error for the whole group, or its
    partitions sorted by topic and partition."""

    group_id: str
    error_code: int = 0
    error_message: str = ""
    partitions: tuple[SharePartitionOffset, ...] = ()


@dataclass(frozen=True, slots=True)
class ShareTopicAnswer:
    """DeleteShareGroupOffsets' answer for one topic."""

    topic: str
    topic_id: str
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class ShareOffsetsAnswer:
    """AlterShareGroupOffsets' and DeleteShareGroupOffsets' answer: an error for the whole
    request (then nothing was changed), else one entry per partition (alter) or topic
    (delete)."""

    error_code: int = 0
    error_message: str = ""
    partitions: tuple[SharePartitionOffset, ...] = ()
    topics: tuple[ShareTopicAnswer, ...] = ()


class ShareAdminApis:
    """The share group offset APIs over one node's group coordinator and share partition
    manager (whose persister holds the share state). ``auth`` ``None``: everything is
    allowed."""

    def __init__(
        self,
        coordinator: GroupCoordinator,
        share_partitions: SharePartitionManager,
        auth: AuthHelper | None,
    ) -> None:
        self.coordinator = coordinator
        self.share_partitions = share_partitions
        self.auth = auth

    # -- shared checks ---------------------------------------------------------------------

    def _group_refusal(
        self, caller: Caller, operation: AclOperation, group_id: str
    ) -> tuple[int, str]:
        if self.auth is None or self.auth.allowed(caller, operation, ResourceType.GROUP, group_id):
            return 0, ""
        return GROUP_DENIED, (
            f"{caller.principal} may not {operation.kafka_name} group {group_id!r}"
        )

    def _allowed_topics(
        self, caller: Caller, operation: AclOperation, topics: Sequence[str]
    ) -> dict[str, bool]:
        if self.auth is None:
            return dict.fromkeys(topics, True)
        return self.auth.topics(caller, operation, list(dict.fromkeys(topics)))

    def _topics(self) -> dict[str, tuple[str, list[int]]]:
        """topic name → (topic id, partitions), as this node's metadata has them."""
        out: dict[str, tuple[str, list[int]]] = {}
        for (
            topic,
            partition,
        ), state in self.share_partitions.replicas.metadata.snapshot.partitions.items():
            out.setdefault(topic, (state.topic_id or "", []))[1].append(partition)
        for _, partitions in out.values():
            partitions.sort()
        return out

    def _group(self, group_id: str) -> tuple[int, str, str, set[str]]:
        """(error code, message, state, the members' topics) of a share group on this
        coordinator: GROUP_ID_NOT_FOUND, NOT_COORDINATOR and kin as ShareGroupDescribe."""
        [described] = self.coordinator.share.describe([group_id])
        topics = {
            name
            for m in described.members
            for name in (*m.subscribed_topic_names, *(t.topic_name for t in m.assignment))
            if name
        }
        return described.error_code, described.error_message, described.group_state, topics

    def _lag(self, topic: str, partition: int, start_offset: int) -> int:
        """High watermark - start offset when this node leads the partition, else -1."""
        if start_offset < 0:
            return -1
        hosted = self.share_partitions.replicas.partition(topic, partition)
        if hosted is None or not hosted.is_leader:
            return -1
        [found] = self.share_partitions.replicas.list_offsets(
            [ListOffsetsPartition(topic, partition, -1)]
        )
        return -1 if found.error_code else max(0, found.offset - start_offset)

    # -- DescribeShareGroupOffsets ---------------------------------------------------------

    def describe_share_group_offsets(
        self,
        caller: Caller,
        group_id: str,
        topics: Sequence[tuple[str, Sequence[int]]] | None,
    ) -> ShareGroupOffsets:
        """One group's start offsets: of the partitions named (topic, partitions), or, with
        ``topics`` ``None``, of every partition the group has share state for."""
        code, message = self._group_refusal(caller, AclOperation.DESCRIBE, group_id)
        if code:
            return ShareGroupOffsets(group_id, code, message)
        code, message, _, members_topics = self._group(group_id)
        if code:
            return ShareGroupOffsets(group_id, code, message)
        known = self._topics()
        everything = topics is None
        if topics is None:
            topics = [(t, known[t][1]) for t in sorted(known) if not t.startswith("__")]
        allowed = self._allowed_topics(caller, AclOperation.DESCRIBE, [t for t, _ in topics])
        out = []
        for topic, partitions in topics:
            topic_id, existing = known.get(topic, ("", []))
            for partition in partitions:
                if not allowed.get(topic, False):
                    if not everything:
                        out.append(
                            SharePartitionOffset(
                                topic,
                                topic_id,
                                partition,
                                error_code=TOPIC_DENIED,
                                error_message=AuthHelper.topic_message(
                                    caller, AclOperation.DESCRIBE, topic
                                ),
                            )
                        )
                    continue
                if partition not in existing:
                    out.append(
                        SharePartitionOffset(
                            topic,
                            topic_id,
                            partition,
                            error_code=UNKNOWN_TOPIC,
                            error_message="This server does not host this topic-partition.",
                        )
                    )
                    continue
                try:
                    summary = self.share_partitions.persister.read_summary(
                        ShareKey(group_id, topic_id, partition)
                    )
                except PersisterError as e:
                    out.append(
                        SharePartitionOffset(
                            topic,
                            topic_id,
                            partition,
                            error_code=e.error_code,
                            error_message=str(e),
                        )
                    )
                    continue
                if everything and summary.start_offset < 0 and topic not in members_topics:
                    continue
                out.append(
                    SharePartitionOffset(
                        topic,
                        topic_id,
                        partition,
                        start_offset=summary.start_offset,
                        lag=self._lag(topic, partition, summary.start_offset),
                    )
                )
        return ShareGroupOffsets(group_id, partitions=tuple(out))

    # -- AlterShareGroupOffsets ------------------------------------------------------------

    def _empty_group(
        self, caller: Caller, operation: AclOperation, group_id: str
    ) -> tuple[int, str]:
        code, message = self._group_refusal(caller, operation, group_id)
        if code:
            return code, message
        code, message, state, _ = self._group(group_id)
        if code:
            return code, message
        if state != "Empty":
            return NON_EMPTY_GROUP, (
                f"The group {group_id} is not empty: its share group offsets cannot be "
                "changed while it has members."
            )
        return 0, ""

    def alter_share_group_offsets(
        self,
        caller: Caller,
        group_id: str,
        offsets: Sequence[tuple[str, int, int]],
    ) -> ShareOffsetsAnswer:
        """Resets each (topic, partition, start offset) of an empty group: a new state epoch
        at that start offset (see the module docstring)."""
        code, message = self._empty_group(caller, AclOperation.READ, group_id)
        if code:
            return ShareOffsetsAnswer(code, message)
        known = self._topics()
        allowed = self._allowed_topics(caller, AclOperation.READ, [t for t, _, _ in offsets])
        out = []
        for topic, partition, start_offset in offsets:
            topic_id, existing = known.get(topic, ("", []))
            if not allowed.get(topic, False):
                out.append(
                    SharePartitionOffset(
                        topic,
                        topic_id,
                        partition,
                        error_code=TOPIC_DENIED,
                        error_message=AuthHelper.topic_message(caller, AclOperation.READ, topic),
                    )
                )
                continue
            if partition not in existing:
                out.append(
                    SharePartitionOffset(
                        topic,
                        topic_id,
                        partition,
                        error_code=UNKNOWN_TOPIC,
                        error_message="This server does not host this topic-partition.",
                    )
                )
                continue
            if start_offset < 0:
                out.append(
                    SharePartitionOffset(
                        topic,
                        topic_id,
                        partition,
                        error_code=INVALID_REQUEST,
                        error_message=f"Invalid start offset {start_offset}.",
                    )
                )
                continue
            key = ShareKey(group_id, topic_id, partition)
            try:
                summary = self.share_partitions.persister.read_summary(key)
                self.share_partitions.persister.initialize(
                    key, summary.state_epoch + 1, start_offset
                )
            except PersisterError as e:
                out.append(
                    SharePartitionOffset(
                        topic,
                        topic_id,
                        partition,
                        error_code=e.error_code,
                        error_message=str(e),
                    )
                )
                continue
            self.share_partitions.forget(group_id, topic, partition)
            out.append(SharePartitionOffset(topic, topic_id, partition, start_offset))
        return ShareOffsetsAnswer(partitions=tuple(out))

    # -- DeleteShareGroupOffsets -----------------------------------------------------------

    def delete_share_group_offsets(
        self, caller: Caller, group_id: str, topics: Sequence[str]
    ) -> ShareOffsetsAnswer:
        """Forgets the share state of every partition of each topic for an empty group."""
        code, message = self._empty_group(caller, AclOperation.DELETE, group_id)
        if code:
            return ShareOffsetsAnswer(code, message)
        known = self._topics()
        allowed = self._allowed_topics(caller, AclOperation.READ, topics)
        out = []
        for topic in dict.fromkeys(topics):
            topic_id, partitions = known.get(topic, ("", []))
            if not allowed.get(topic, False):
                out.append(
                    ShareTopicAnswer(
                        topic,
                        topic_id,
                        TOPIC_DENIED,
                        AuthHelper.topic_message(caller, AclOperation.READ, topic),
                    )
                )
                continue
            if not partitions:
                out.append(
                    ShareTopicAnswer(
                        topic,
                        "",
                        UNKNOWN_TOPIC,
                        "This server does not host this topic-partition.",
                    )
                )
                continue
            try:
                for partition in partitions:
                    self.share_partitions.persister.delete(ShareKey(group_id, topic_id, partition))
                    self.share_partitions.forget(group_id, topic, partition)
            except PersisterError as e:
                out.append(ShareTopicAnswer(topic, topic_id, e.error_code, str(e)))
                continue
            out.append(ShareTopicAnswer(topic, topic_id))
        return ShareOffsetsAnswer(topics=tuple(out))
