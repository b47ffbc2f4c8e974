"""A consumer group's committed offsets: OffsetCommit (8) v2-v9, OffsetFetch (9) v1-v9 (v8+:
several groups in one request) and OffsetDelete (47) v0, translated to the group coordinator
(:class:`node.coordinator.group_coordinator.GroupCoordinator`), which decides everything about
the group; this module does what Kafka's ``KafkaApis`` does before handing a request over:

* **OffsetCommit**: without READ on the group every partition answers
  GROUP_AUTHORIZATION_FAILED (30); a topic without READ answers TOPIC_AUTHORIZATION_FAILED (29)
  on its partitions, an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION (3); the rest go
  to the coordinator with ``generation_id_or_member_epoch`` and ``member_id`` as sent: -1 and
  ``""`` is a simple consumer's (or the admin client's) commit, accepted while the group has no
  members; a member's commit must carry its current epoch (UNKNOWN_MEMBER_ID 25,
  STALE_MEMBER_EPOCH 113).
* **OffsetFetch**: without DESCRIBE on the group, GROUP_AUTHORIZATION_FAILED for the group; all
  topics (null): the committed offsets of the topics the caller may DESCRIBE; named topics: a
  topic without DESCRIBE answers TOPIC_AUTHORIZATION_FAILED on its partitions (offset -1),
  after the others. v9 carries the member's id and epoch (checked as a commit's); below, the
  fetch is an admin one. v0-v1 have no group-level error: it is set on every partition.
* **OffsetDelete**: without DELETE on the group, GROUP_AUTHORIZATION_FAILED (30) for the
  request; per topic READ and existence as OffsetCommit's; the coordinator refuses a topic a
  member subscribes to (GROUP_SUBSCRIBED_TO_TOPIC, 86) and an unknown group
  (GROUP_ID_NOT_FOUND, 69).

Handlers run on the request threads and may block while the coordinator's write waits for the
replicas (acks=-1), as a produce does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from node.coordinator.group_requests import (
    OffsetCommitPartition,
    OffsetCommitResult,
    OffsetFetchPartition,
    OffsetFetchResult,
)
from node.kafka_door.build import make, nested
from node.kafka_door.context import RequestContext
from node.kafka_door.frames import response_class
from node.kafka_door.handlers.classic_groups import then
from node.kafka_door.services import DoorServices
from odradek.acl import AclOperation

__all__ = [
    "handle_offset_commit",
    "handle_offset_delete",
    "handle_offset_fetch",
    "partition_counts",
]

OFFSET_COMMIT = 8
OFFSET_FETCH = 9
OFFSET_DELETE = 47
UNKNOWN_TOPIC_OR_PARTITION = 3
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
_V0_NAMES = ("OffsetFetchResponseTopic", "OffsetFetchResponsePartition")
_V8_NAMES = ("OffsetFetchResponseTopics", "OffsetFetchResponsePartitions")
"""OffsetFetch's response classes before v8 and from v8 (kio's names)."""


def partition_counts(services: DoorServices) -> dict[str, int]:
    """Each topic of the metadata cache and its number of partitions."""
    counts: dict[str, int] = {}
    for topic, _ in services.metadata.snapshot.partitions:
        counts[topic] = counts.get(topic, 0) + 1
    return counts


def _group_refused(services: DoorServices, ctx: RequestContext, api: str, group_id: str) -> bool:
    """Whether the ACL check of ``api`` (an :class:`AuthHelper` group method) refuses the
    group."""
    if services.auth is None:
        return False
    return bool(getattr(services.auth, api)(ctx.caller, group_id))


def _screen(
    services: DoorServices,
    ctx: RequestContext,
    wanted: Sequence[tuple[str, int]],
) -> tuple[list[tuple[str, int]], dict[tuple[str, int], int]]:
    """KafkaApis' checks before a commit or an offset delete: READ on each topic, then the
    topic and partition known. Returns what may go on and the refusals' error codes."""
    ok = (
        {t: True for t, _ in wanted}
        if services.auth is None
        else services.auth.topics(ctx.caller, AclOperation.READ, (t for t, _ in wanted))
    )
    counts = partition_counts(services)
    allowed: list[tuple[str, int]] = []
    refused: dict[tuple[str, int], int] = {}
    for topic, partition in wanted:
        if not ok[topic]:
            refused[(topic, partition)] = TOPIC_AUTHORIZATION_FAILED
        elif not 0 <= partition < counts.get(topic, 0):
            refused[(topic, partition)] = UNKNOWN_TOPIC_OR_PARTITION
        else:
            allowed.append((topic, partition))
    return allowed, refused


def _partition_answer(
    cls: type[Any], topics: Any, errors: dict[tuple[str, int], int]
) -> tuple[Any, ...]:
    """The per-topic, per-partition answer of OffsetCommit and OffsetDelete, in request
    order."""
    topic_cls = nested(cls, cls.__name__ + "Topic")
    partition_cls = nested(cls, cls.__name__ + "Partition")
    return tuple(
        make(
            topic_cls,
            name=t.name,
            partitions=tuple(
                make(
                    partition_cls,
                    partition_index=p.partition_index,
                    error_code=errors.get((t.name, int(p.partition_index)), 0),
                )
                for p in t.partitions
            ),
        )
        for t in topics
    )


# -- OffsetCommit ----------------------------------------------------------------------------


def handle_offset_commit(services: DoorServices, ctx: RequestContext, request: Any) -> Any:
    group_id = str(request.group_id)
    wanted = [(t.name, int(p.partition_index)) for t in request.topics for p in t.partitions]
    cls = response_class(OFFSET_COMMIT, ctx.api_version)
    if _group_refused(services, ctx, "offset_commit", group_id):
        errors = dict.fromkeys(wanted, GROUP_AUTHORIZATION_FAILED)
        return make(cls, throttle_time=0, topics=_partition_answer(cls, request.topics, errors))
    allowed, errors = _screen(services, ctx, wanted)
    if allowed:
        keep = set(allowed)
        commits = [
            OffsetCommitPartition(
                topic=t.name,
                partition=int(p.partition_index),
                committed_offset=int(p.committed_offset),
                committed_leader_epoch=int(getattr(p, "committed_leader_epoch", -1)),
                committed_metadata=p.committed_metadata or "",
            )
            for t in request.topics
            for p in t.partitions
            if (t.name, int(p.partition_index)) in keep
        ]
        instance_id = getattr(request, "group_instance_id", None)  # v7+
        # appended at once; the answer waits (on the loop, no request thread held) until the
        # high watermark passes it
        pending = services.groups.offset_commit_later(
            group_id,
            str(request.member_id or ""),
            int(request.generation_id_or_member_epoch),
            commits,
            instance_id=None if instance_id is None else str(instance_id),
            api_version=ctx.api_version,
        )

        def answer(result: OffsetCommitResult) -> Any:
            errors.update({(r.topic, r.partition): r.error_code for r in result.partitions})
            return make(cls, throttle_time=0, topics=_partition_answer(cls, request.topics, errors))

        return then(pending, answer)
    return make(cls, throttle_time=0, topics=_partition_answer(cls, request.topics, errors))


# -- OffsetFetch -----------------------------------------------------------------------------


def _fetch_group(
    services: DoorServices,
    ctx: RequestContext,
    group_id: str,
    member_id: str,
    member_epoch: int,
    topics: Any,
) -> OffsetFetchResult:
    """One group's OffsetFetch, as ``KafkaApis.handleOffsetFetchRequestFromCoordinator``."""
    if _group_refused(services, ctx, "offset_fetch", group_id):
        return OffsetFetchResult(GROUP_AUTHORIZATION_FAILED)
    auth = services.auth
    if topics is None:
        result: OffsetFetchResult = services.groups.offset_fetch(
            group_id, member_id, member_epoch, None
        )
        if result.error_code or auth is None:
            return result
        ok = auth.topics(ctx.caller, AclOperation.DESCRIBE, (p.topic for p in result.partitions))
        return OffsetFetchResult(partitions=tuple(p for p in result.partitions if ok[p.topic]))
    names = [t.name for t in topics]
    ok = (
        dict.fromkeys(names, True)
        if auth is None
        else auth.topics(ctx.caller, AclOperation.DESCRIBE, names)
    )
    wanted = [(t.name, int(p)) for t in topics if ok[t.name] for p in t.partition_indexes]
    answer: OffsetFetchResult = services.groups.offset_fetch(
        group_id, member_id, member_epoch, wanted
    )
    if answer.error_code:
        return answer
    refused = tuple(
        OffsetFetchPartition(t.name, int(p), error_code=TOPIC_AUTHORIZATION_FAILED)
        for t in topics
        if not ok[t.name]
        for p in t.partition_indexes
    )
    return OffsetFetchResult(partitions=answer.partitions + refused)


def _fetched_topics(
    cls: type[Any],
    names: tuple[str, str],
    result: OffsetFetchResult,
    group_error: bool,
) -> tuple[Any, ...]:
    """The answer's topics, each once, in the order of their first partition."""
    topic_cls = nested(cls, names[0])
    partition_cls = nested(cls, names[1])
    by_topic: dict[str, list[Any]] = {}
    for p in result.partitions:
        by_topic.setdefault(p.topic, []).append(
            make(
                partition_cls,
                partition_index=p.partition,
                committed_offset=p.committed_offset,
                committed_leader_epoch=p.committed_leader_epoch,
                metadata=p.metadata,
                error_code=result.error_code if group_error else p.error_code,
            )
        )
    return tuple(make(topic_cls, name=n, partitions=tuple(ps)) for n, ps in by_topic.items())


def handle_offset_fetch(services: DoorServices, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    cls = response_class(OFFSET_FETCH, version)
    if version >= 8:
        group_cls = nested(cls, "OffsetFetchResponseGroup")
        groups = []
        for g in request.groups:
            member_id = getattr(g, "member_id", None) or ""
            member_epoch = int(getattr(g, "member_epoch", -1))
            result = _fetch_group(services, ctx, str(g.group_id), member_id, member_epoch, g.topics)
            groups.append(
                make(
                    group_cls,
                    group_id=g.group_id,
                    topics=_fetched_topics(cls, _V8_NAMES, result, False),
                    error_code=result.error_code,
                )
            )
        return make(cls, throttle_time=0, groups=tuple(groups))
    result = _fetch_group(services, ctx, str(request.group_id), "", -1, request.topics)
    if result.error_code and version < 2:
        # no group-level error before v2: every partition asked for carries it
        result = OffsetFetchResult(
            result.error_code,
            result.error_message,
            tuple(
                OffsetFetchPartition(t.name, int(p))
                for t in request.topics or ()
                for p in t.partition_indexes
            ),
        )
    return make(
        cls,
        throttle_time=0,
        topics=_fetched_topics(cls, _V0_NAMES, result, version < 2),
        error_code=result.error_code,
    )


# -- OffsetDelete ----------------------------------------------------------------------------


def handle_offset_delete(services: DoorServices, ctx: RequestContext, request: Any) -> Any:
    group_id = str(request.group_id)
    cls = response_class(OFFSET_DELETE, ctx.api_version)
    if _group_refused(services, ctx, "offset_delete", group_id):
        return make(cls, error_code=GROUP_AUTHORIZATION_FAILED, throttle_time=0, topics=())
    wanted = [(t.name, int(p.partition_index)) for t in request.topics for p in t.partitions]
    allowed, errors = _screen(services, ctx, wanted)
    result = services.groups.offset_delete(group_id, allowed)
    if result.error_code:
        return make(cls, error_code=result.error_code, throttle_time=0, topics=())
    errors.update({(r.topic, r.partition): r.error_code for r in result.partitions})
    return make(
        cls, error_code=0, throttle_time=0, topics=_partition_answer(cls, request.topics, errors)
    )
