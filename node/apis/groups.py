"""The consumer group APIs, whatever the front door: each API's one function, holding its
policy — the ACL checks, the existence checks, Kafka's choice of error — in front of the group
coordinator (:class:`~node.coordinator.group_coordinator.GroupCoordinator`), which decides
everything about the group itself. As Kafka's ``KafkaApis`` handlers with ``AuthHelper``:

==========================  ============================================================  =====
API                         checks, in Kafka's order                                      codes
==========================  ============================================================  =====
FindCoordinator             DESCRIBE on each group                                        30
ConsumerGroupHeartbeat      READ on the group                                             30
JoinGroup, SyncGroup,       READ on the group                                             30
Heartbeat, LeaveGroup
OffsetCommit                READ on the group (every partition 30); READ on each topic    30,
                            (29), the topic and partition known (3); then the             29, 3
                            coordinator
TxnOffsetCommit             WRITE on the transactional id (every partition 53); READ on   53,
                            the group (every partition 30); READ on each topic (29), the  30,
                            topic and partition known (3); then the coordinator           29, 3
OffsetFetch                 DESCRIBE on the group (30); named topics: DESCRIBE on each    30, 29
                            (29, offset -1, after the others); all topics: only those
                            the caller may DESCRIBE
OffsetDelete                DELETE on the group (30, the request's); READ on each topic   30,
                            (29) and the topic and partition known (3)                    29, 3
ListGroups                  every group with DESCRIBE on the cluster, else the groups     —
                            the caller may DESCRIBE
DescribeGroups,             DESCRIBE on each group                                        30
ConsumerGroupDescribe
DeleteGroups                DELETE on each group                                          30
==========================  ============================================================  =====

A refused topic is refused whether it exists or not: its existence does not leak. Each
function takes plain values and the :class:`~node.security.auth_helper.Caller`, and answers
plain values with Kafka's error codes; a door decodes its wire into them and encodes the
answer, nothing more. Thread-safe (no state of its own; the coordinator and the authorizer are
thread-safe); the offset writes may block while the coordinator's write waits for its replicas.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import TypeVar

from node.coordinator.classic_group import (
    JoinGroupRequest,
    JoinGroupResult,
    LeaveMember,
    LeaveMemberResult,
    SyncGroupRequest,
    SyncGroupResult,
)
from node.coordinator.group_coordinator import GroupCoordinator
from node.coordinator.group_requests import (
    Coordinator,
    DeletedGroup,
    DescribedGroup,
    HeartbeatRequest,
    HeartbeatResponse,
    ListGroupsResult,
    OffsetCommitPartition,
    OffsetCommitResult,
    OffsetDeleteResult,
    OffsetFetchPartition,
    OffsetFetchResult,
    PartitionResult,
)
from node.core.metadata_cache import MetadataCache
from node.security.auth_helper import AuthHelper, Caller, Refusal
from odradek.acl import AclOperation, ResourceType
from odradek.errors import (
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    InvalidProducerIdMappingError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)

__all__ = ["GroupApis", "then"]

TOPIC_DENIED = TopicAuthorizationFailedError.code
UNKNOWN_TOPIC_OR_PARTITION = UnknownTopicOrPartitionError.code
GROUP_ID_NOT_FOUND = GroupIdNotFoundError.code

Partition = tuple[str, int]


def _merged(
    pending: Future[OffsetCommitResult],
    refused: dict[Partition, PartitionResult],
    wanted: Sequence[Partition],
) -> Future[OffsetCommitResult]:
    """A commit's answer in request order: the coordinator's results (and its group-level
    error) with the partitions this layer refused."""

    def merged(answer: OffsetCommitResult) -> OffsetCommitResult:
        found = {**refused, **{(r.topic, r.partition): r for r in answer.partitions}}
        return OffsetCommitResult(answer.error_code, tuple(found[k] for k in wanted))

    return then(pending, merged)


def _first(refusals: Sequence[Refusal]) -> Refusal | None:
    return refusals[0] if refusals else None


_T = TypeVar("_T")
_R = TypeVar("_R")


def _done(value: _T) -> Future[_T]:
    out: Future[_T] = Future()
    out.set_result(value)
    return out


def then(future: Future[_T], answer: Callable[[_T], _R]) -> Future[_R]:
    """A future of ``answer(result)`` once ``future`` is done (its error, if it fails)."""
    out: Future[_R] = Future()

    def done(f: Future[_T]) -> None:
        try:
            out.set_result(answer(f.result()))
        except Exception as e:
            out.set_exception(e)

    future.add_done_callback(done)
    return out


class GroupApis:
    """The group APIs over one coordinator. ``auth`` ``None``: no authorizer, everything is
    allowed."""

    def __init__(
        self, coordinator: GroupCoordinator, metadata: MetadataCache, auth: AuthHelper | None
    ) -> None:
        self.coordinator = coordinator
        self._metadata = metadata
        self.auth = auth

    # -- helpers -------------------------------------------------------------------------------

    def _group_refusals(
        self, check: str, caller: Caller, group_ids: Sequence[str]
    ) -> dict[str, Refusal]:
        """The refused groups of ``group_ids`` under :class:`AuthHelper`'s ``check``."""
        if self.auth is None:
            return {}
        if check in ("find_coordinator", "describe_groups", "delete_groups"):
            refusals: list[Refusal] = getattr(self.auth, check)(caller, list(group_ids))
        else:
            refusals = [r for g in group_ids for r in getattr(self.auth, check)(caller, g)]
        return {r.name: r for r in refusals}

    def _topics_allowed(
        self, caller: Caller, operation: AclOperation, topics: Sequence[str]
    ) -> dict[str, bool]:
        if self.auth is None:
            return dict.fromkeys(topics, True)
        return self.auth.topics(caller, operation, topics)

    def _partition_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for topic, _ in self._metadata.snapshot.partitions:
            counts[topic] = counts.get(topic, 0) + 1
        return counts

    def _screen(
        self, caller: Caller, wanted: Sequence[Partition]
    ) -> tuple[list[Partition], dict[Partition, PartitionResult]]:
        """KafkaApis' checks before a commit or an offset delete: READ on each topic (29),
        then the topic and partition known (3). What may go on, and the refusals."""
        ok = self._topics_allowed(caller, AclOperation.READ, [t for t, _ in wanted])
        counts = self._partition_counts()
        allowed: list[Partition] = []
        refused: dict[Partition, PartitionResult] = {}
        for topic, partition in wanted:
            if not ok[topic]:
                message = AuthHelper.topic_message(caller, AclOperation.READ, topic)
                refused[(topic, partition)] = PartitionResult(
                    topic, partition, TOPIC_DENIED, message
                )
            elif not 0 <= partition < counts.get(topic, 0):
                refused[(topic, partition)] = PartitionResult(
                    topic,
                    partition,
                    UNKNOWN_TOPIC_OR_PARTITION,
                    f"This server does not host this topic-partition: {topic}-{partition}",
                )
            else:
                allowed.append((topic, partition))
        return allowed, refused

    # -- FindCoordinator -----------------------------------------------------------------------

    def find_coordinator(
        self, caller: Caller, group_ids: Sequence[str], listener_name: str | None
    ) -> list[Coordinator]:
        """Each group's coordinator, in request order: its endpoint on ``listener_name`` (the
        listener the request came in on; ``None``: the registered endpoints), or the error."""
        refused = self._group_refusals("find_coordinator", caller, group_ids)
        allowed = [g for g in group_ids if g not in refused]
        found = {
            c.key: c
            for c in (self.coordinator.find_coordinator(allowed, listener_name) if allowed else [])
        }
        return [
            Coordinator(g, error_code=refused[g].error_code, error_message=refused[g].error_message)
            if g in refused
            else found[g]
            for g in group_ids
        ]

    # -- KIP-848 ---------------------------------------------------------------------------------

    def consumer_group_heartbeat(
        self, caller: Caller, request: HeartbeatRequest
    ) -> HeartbeatResponse:
        """:meth:`consumer_group_heartbeat_later`, waited for on this thread."""
        return self.consumer_group_heartbeat_later(caller, request).result()

    def consumer_group_heartbeat_later(
        self, caller: Caller, request: HeartbeatRequest
    ) -> Future[HeartbeatResponse]:
        """Processed at once; a future of the answer, done once the group's write it depends
        on is replicated (no thread need wait for it)."""
        refusal = _first(
            list(
                self._group_refusals(
                    "consumer_group_heartbeat", caller, [request.group_id]
                ).values()
            )
        )
        if refusal is not None:
            return _done(
                HeartbeatResponse(
                    request.member_id,
                    request.member_epoch,
                    0,
                    refusal.error_code,
                    refusal.error_message,
                )
            )
        return self.coordinator.consumer_group_heartbeat_later(request)

    # -- the classic protocol --------------------------------------------------------------------

    def _classic_refusal(self, caller: Caller, group_id: str) -> Refusal | None:
        return _first(list(self._group_refusals("classic_group", caller, [group_id]).values()))

    def join_group(self, caller: Caller, request: JoinGroupRequest) -> Future[JoinGroupResult]:
        """A future of the answer, done when the rebalance completes."""
        refusal = self._classic_refusal(caller, request.group_id)
        if refusal is not None:
            done: Future[JoinGroupResult] = Future()
            done.set_result(
                JoinGroupResult(error_code=refusal.error_code, member_id=request.member_id)
            )
            return done
        return self.coordinator.classic.join_group(request)

    def sync_group(self, caller: Caller, request: SyncGroupRequest) -> Future[SyncGroupResult]:
        """A future of the answer (a follower's waits for its leader's assignment)."""
        refusal = self._classic_refusal(caller, request.group_id)
        if refusal is not None:
            done: Future[SyncGroupResult] = Future()
            done.set_result(SyncGroupResult(refusal.error_code))
            return done
        return self.coordinator.classic.sync_group(request)

    def heartbeat(
        self,
        caller: Caller,
        group_id: str,
        member_id: str,
        generation_id: int,
        instance_id: str | None,
    ) -> int:
        """The classic Heartbeat's error code (:meth:`heartbeat_later`, waited for)."""
        return self.heartbeat_later(
            caller, group_id, member_id, generation_id, instance_id
        ).result()

    def heartbeat_later(
        self,
        caller: Caller,
        group_id: str,
        member_id: str,
        generation_id: int,
        instance_id: str | None,
    ) -> Future[int]:
        """Processed at once (the member's session restarted); a future of its error code, done
        once the group's last write is replicated."""
        refusal = self._classic_refusal(caller, group_id)
        if refusal is not None:
            return _done(refusal.error_code)
        return self.coordinator.classic.heartbeat_later(
            group_id, member_id, generation_id, instance_id
        )

    def leave_group(
        self, caller: Caller, group_id: str, members: Sequence[LeaveMember]
    ) -> tuple[int, list[LeaveMemberResult]]:
        """The request's error code and each member's result."""
        refusal = self._classic_refusal(caller, group_id)
        if refusal is not None:
            return refusal.error_code, []
        code, results = self.coordinator.classic.leave_group(group_id, list(members))
        return int(code), list(results)

    # -- offsets -------------------------------------------------------------------------------

    def offset_commit(
        self,
        caller: Caller,
        group_id: str,
        member_id: str,
        member_epoch: int,
        commits: Sequence[OffsetCommitPartition],
        instance_id: str | None = None,
        api_version: int | None = None,
    ) -> OffsetCommitResult:
        """:meth:`offset_commit_later`, waited for on this thread."""
        return self.offset_commit_later(
            caller, group_id, member_id, member_epoch, commits, instance_id, api_version
        ).result()

    def offset_commit_later(
        self,
        caller: Caller,
        group_id: str,
        member_id: str,
        member_epoch: int,
        commits: Sequence[OffsetCommitPartition],
        instance_id: str | None = None,
        api_version: int | None = None,
    ) -> Future[OffsetCommitResult]:
        """A future of one result per partition, in request order, done once the commit is
        replicated. Refused on the group: every partition GROUP_AUTHORIZATION_FAILED and the
        answer's own code too."""
        wanted = [(c.topic, c.partition) for c in commits]
        refusal = _first(list(self._group_refusals("offset_commit", caller, [group_id]).values()))
        if refusal is not None:
            return _done(
                OffsetCommitResult(
                    refusal.error_code,
                    tuple(
                        PartitionResult(t, p, refusal.error_code, refusal.error_message)
                        for t, p in wanted
                    ),
                )
            )
        allowed, results = self._screen(caller, wanted)
        if not allowed:
            return _done(OffsetCommitResult(0, tuple(results[k] for k in wanted)))
        keep = set(allowed)
        pending = self.coordinator.offset_commit_later(
            group_id,
            member_id,
            member_epoch,
            [c for c in commits if (c.topic, c.partition) in keep],
            instance_id=instance_id,
            api_version=api_version,
        )
        return _merged(pending, results, wanted)

    def txn_offset_commit_later(
        self,
        caller: Caller,
        transactional_id: str,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        commits: Sequence[OffsetCommitPartition],
        member_id: str = "",
        generation_id: int = -1,
        instance_id: str | None = None,
    ) -> Future[OffsetCommitResult]:
        """TxnOffsetCommit, as Kafka's ``handleTxnOffsetCommitRequest``: WRITE on the
        transactional id (every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the
        group (every partition GROUP_AUTHORIZATION_FAILED), then per partition READ on its topic
        and its existence; the rest go to the coordinator, which writes them pending in the
        producer's transaction. A future of one result per partition in request order."""
        wanted = [(c.topic, c.partition) for c in commits]

        def refused(code: int, message: str) -> Future[OffsetCommitResult]:
            return _done(
                OffsetCommitResult(
                    code, tuple(PartitionResult(t, p, code, message) for t, p in wanted)
                )
            )

        if self.auth is not None and not self.auth.allowed(
            caller, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
        ):
            return refused(
                TransactionalIdAuthorizationFailedError.code,
                f"{caller.principal} may not write transactional id {transactional_id!r}",
            )
        if self.auth is not None and not self.auth.allowed(
            caller, AclOperation.READ, ResourceType.GROUP, group_id
        ):
            return refused(
                GroupAuthorizationFailedError.code,
                f"{caller.principal} may not read group {group_id!r}",
            )
        allowed, results = self._screen(caller, wanted)
        if not allowed:
            return _done(OffsetCommitResult(0, tuple(results[k] for k in wanted)))
        if producer_id < 0 or producer_epoch < 0:
            # no transaction can hold it (Kafka's verification with the transaction
            # coordinator answers this for an id it never gave)
            bad = PartitionResult(
                "", -1, InvalidProducerIdMappingError.code, "no producer id or epoch"
            )
            return _done(
                OffsetCommitResult(
                    0,
                    tuple(
                        results.get(k) or dataclasses.replace(bad, topic=k[0], partition=k[1])
                        for k in wanted
                    ),
                )
            )
        keep = set(allowed)
        pending = self.coordinator.txn_offset_commit_later(
            group_id,
            producer_id,
            producer_epoch,
            [c for c in commits if (c.topic, c.partition) in keep],
            member_id=member_id,
            generation_id=generation_id,
            instance_id=instance_id,
        )
        return _merged(pending, results, wanted)

    def offset_fetch(
        self,
        caller: Caller,
        group_id: str,
        member_id: str,
        member_epoch: int,
        wanted: Sequence[Partition] | None,
        require_stable: bool = False,
    ) -> OffsetFetchResult:
        """The committed offsets of ``wanted`` (``None``: all the group's, those of topics the
        caller may DESCRIBE), as Kafka's ``handleOffsetFetchRequestFromCoordinator``; refused
        topics come after the others, with offset -1. ``require_stable``: a partition with
        offsets pending in an open transaction answers UNSTABLE_OFFSET_COMMIT (KIP-447)."""
        refusal = _first(list(self._group_refusals("offset_fetch", caller, [group_id]).values()))
        if refusal is not None:
            return OffsetFetchResult(refusal.error_code, refusal.error_message)
        if wanted is None:
            result: OffsetFetchResult = self.coordinator.offset_fetch(
                group_id, member_id, member_epoch, None, require_stable
            )
            if result.error_code or self.auth is None:
                return result
            ok = self._topics_allowed(
                caller, AclOperation.DESCRIBE, [p.topic for p in result.partitions]
            )
            return OffsetFetchResult(partitions=tuple(p for p in result.partitions if ok[p.topic]))
        ok = self._topics_allowed(caller, AclOperation.DESCRIBE, [t for t, _ in wanted])
        answer: OffsetFetchResult = self.coordinator.offset_fetch(
            group_id, member_id, member_epoch, [(t, p) for t, p in wanted if ok[t]], require_stable
        )
        if answer.error_code:
            return answer
        refused = tuple(
            OffsetFetchPartition(
                t,
                p,
                error_code=TOPIC_DENIED,
                error_message=AuthHelper.topic_message(caller, AclOperation.DESCRIBE, t),
            )
            for t, p in wanted
            if not ok[t]
        )
        return OffsetFetchResult(partitions=answer.partitions + refused)

    def offset_delete(
        self, caller: Caller, group_id: str, partitions: Sequence[Partition]
    ) -> OffsetDeleteResult:
        """One result per partition in request order, or the request's error (the group
        refused, unknown, or subscribed to a topic asked)."""
        refusal = _first(list(self._group_refusals("offset_delete", caller, [group_id]).values()))
        if refusal is not None:
            return OffsetDeleteResult(refusal.error_code, refusal.error_message)
        allowed, results = self._screen(caller, partitions)
        answer = self.coordinator.offset_delete(group_id, allowed)
        if answer.error_code:
            return OffsetDeleteResult(answer.error_code, answer.error_message)
        results.update({(r.topic, r.partition): r for r in answer.partitions})
        return OffsetDeleteResult(0, "", tuple(results[k] for k in partitions))

    # -- listing, describing, deleting ---------------------------------------------------------

    def list_groups(
        self, caller: Caller, states: Sequence[str] = (), types: Sequence[str] = ()
    ) -> ListGroupsResult:
        """The groups of this node's coordinator shards, filtered by state (any case) and type,
        and by what the caller may see."""
        result = self.coordinator.list_groups(list(states))
        listed = result.groups
        wanted_types = {t.lower() for t in types}
        if wanted_types:
            listed = tuple(g for g in listed if g.group_type.lower() in wanted_types)
        if self.auth is not None:
            listed = self.auth.list_groups(caller, listed)
        return ListGroupsResult(result.error_code, tuple(listed))

    def describe_groups(self, caller: Caller, group_ids: Sequence[str]) -> list[DescribedGroup]:
        """Each group as the coordinator describes it (either kind), in request order; a
        refused one answers GROUP_AUTHORIZATION_FAILED."""
        refused = self._group_refusals("describe_groups", caller, group_ids)
        allowed = [g for g in dict.fromkeys(group_ids) if g not in refused]
        described = {
            g.group_id: g for g in (self.coordinator.describe_groups(allowed) if allowed else [])
        }
        return [
            DescribedGroup(g, refused[g].error_code, refused[g].error_message)
            if g in refused
            else described[g]
            for g in group_ids
        ]

    def consumer_group_describe(
        self, caller: Caller, group_ids: Sequence[str]
    ) -> list[DescribedGroup]:
        """KIP-848's ConsumerGroupDescribe: as :meth:`describe_groups`, but a classic group, or
        one known only by its committed offsets (no group record: epoch 0, no member), is not a
        consumer group for Kafka: GROUP_ID_NOT_FOUND (librdkafka then asks DescribeGroups); so
        is a share group (ShareGroupDescribe describes it)."""
        out = []
        for g in self.describe_groups(caller, group_ids):
            offsets_only = g.error_code == 0 and g.group_epoch == 0 and not g.members
            if g.error_code == 0 and (offsets_only or g.group_type in ("classic", "share")):
                g = DescribedGroup(
                    g.group_id, GROUP_ID_NOT_FOUND, f"Group {g.group_id} is not a consumer group."
                )
            out.append(g)
        return out

    def delete_groups(self, caller: Caller, group_ids: Sequence[str]) -> list[DeletedGroup]:
        """Each distinct group's result, in request order: NON_EMPTY_GROUP with members,
        GROUP_ID_NOT_FOUND for an unknown one, GROUP_AUTHORIZATION_FAILED refused."""
        ids = list(dict.fromkeys(group_ids))
        refused = self._group_refusals("delete_groups", caller, ids)
        allowed = [g for g in ids if g not in refused]
        deleted = {
            r.group_id: r for r in (self.coordinator.delete_groups(allowed) if allowed else [])
        }
        return [
            DeletedGroup(g, refused[g].error_code, refused[g].error_message)
            if g in refused
            else deleted[g]
            for g in ids
        ]
