"""A consumer group's committed offsets: OffsetCommit (8) v2-v9, OffsetFetch (9) v1-v9 (v8+:
several groups in one request), OffsetDelete (47) v0 and TxnOffsetCommit (28) v0-v3,
translated to the group coordinator
(:class:`node.coordinator.group_coordinator.GroupCoordinator`), which decides everything about
the group; this module does what Kafka's ``KafkaApis`` does before handing a request over:

* **OffsetCommit**: without READ on the group every partition answers
  GROUP_AUTHORIZATION_FAILED (30); a topic without READ answers TOPIC_AUTHORIZATION_FAILED (29)
  on its partitions, an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION (3); the rest go
  to the coordinator with ``generation_id_or_member_epoch`` and ``member_id`` as sent: -1 and
  ``""`` is a simple consumer's (or the admin client's) commit, accepted while the group has no
  members; a member's commit must carry its current epoch (UNKNOWN_MEMBER_ID 25,
  STALE_MEMBER_EPOCH 113).
* **TxnOffsetCommit**: a transactional producer's offsets (``send_offsets_to_transaction``),
  pending in its transaction (:mod:`node.coordinator.txn_offsets`); the checks are
  :meth:`node.apis.groups.GroupApis.txn_offset_commit_later`'s. v3 carries the member id,
  generation and instance id (KIP-447's fencing); below, none is checked.
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

from typing import Any

from node.apis.groups import then
from node.coordinator.group_requests import (
    OffsetCommitPartition,
    OffsetCommitResult,
    OffsetFetchPartition,
    OffsetFetchResult,
)
from node.kafka_door import views
from node.kafka_door.build import make, nested, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.services import DoorServices

__all__ = [
    "handle_offset_commit",
    "handle_offset_delete",
    "handle_offset_fetch",
    "handle_txn_offset_commit",
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


def handle_offset_commit(
    services: DoorServices, ctx: RequestContext, request: views.OffsetCommitRequestView
) -> Any:
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
    ]
    instance_id = getattr(request, "group_instance_id", None)  # v7+
    # appended at once; the answer waits (on the loop, no request thread held) until the high
    # watermark passes it
    pending = services.group_apis.offset_commit_later(
        ctx.caller,
        str(request.group_id),
        str(request.member_id or ""),
        int(request.generation_id_or_member_epoch),
        commits,
        instance_id=None if instance_id is None else str(instance_id),
        api_version=ctx.api_version,
    )
    cls = response_class_of(ctx)

    def answer(result: OffsetCommitResult) -> Any:
        errors = {(r.topic, r.partition): r.error_code for r in result.partitions}
        return make(cls, throttle_time=0, topics=_partition_answer(cls, request.topics, errors))

    return then(pending, answer)


# -- TxnOffsetCommit -------------------------------------------------------------------------


def handle_txn_offset_commit(
    services: DoorServices, ctx: RequestContext, request: views.TxnOffsetCommitRequestView
) -> Any:
    commits = [
        OffsetCommitPartition(
            topic=t.name,
            partition=int(p.partition_index),
            committed_offset=int(p.committed_offset),
            committed_leader_epoch=int(getattr(p, "committed_leader_epoch", -1)),  # v2+
            committed_metadata=p.committed_metadata or "",
        )
        for t in request.topics
        for p in t.partitions
    ]
    instance_id = getattr(request, "group_instance_id", None)  # v3+
    pending = services.group_apis.txn_offset_commit_later(
        ctx.caller,
        str(request.transactional_id),
        str(request.group_id),
        int(request.producer_id),
        int(request.producer_epoch),
        commits,
        member_id=str(getattr(request, "member_id", "") or ""),  # v3+
        generation_id=int(getattr(request, "generation_id", -1)),  # v3+
        instance_id=None if instance_id is None else str(instance_id),
    )
    cls = response_class_of(ctx)

    def answer(result: OffsetCommitResult) -> Any:
        errors = {(r.topic, r.partition): r.error_code for r in result.partitions}
        return make(cls, throttle_time=0, topics=_partition_answer(cls, request.topics, errors))

    return then(pending, answer)


# -- OffsetFetch -----------------------------------------------------------------------------


def _fetch_group(
    services: DoorServices,
    ctx: RequestContext,
    group_id: str,
    member_id: str,
    member_epoch: int,
    topics: Any,
    require_stable: bool,
) -> OffsetFetchResult:
    """One group's OffsetFetch (``topics`` ``None``: all the group's)."""
    wanted = (
        None
        if topics is None
        else [(str(t.name), int(p)) for t in topics for p in t.partition_indexes]
    )
    return services.group_apis.offset_fetch(
        ctx.caller, group_id, member_id, member_epoch, wanted, require_stable
    )


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


def handle_offset_fetch(
    services: DoorServices, ctx: RequestContext, request: views.OffsetFetchRequestView
) -> Any:
    version = ctx.api_version
    cls = response_class_of(ctx)
    stable = bool(getattr(request, "require_stable", False))  # v7+
    # v8+ asks for several groups, v1-v7 for one: the fields of either shape (not in the view
    # of every version) are read where the version says they are
    versioned: Any = request
    if version >= 8:
        group_cls = nested(cls, "OffsetFetchResponseGroup")
        groups = []
        for g in versioned.groups:
            member_id = getattr(g, "member_id", None) or ""
            member_epoch = int(getattr(g, "member_epoch", -1))
            result = _fetch_group(
                services, ctx, str(g.group_id), member_id, member_epoch, g.topics, stable
            )
            groups.append(
                make(
                    group_cls,
                    group_id=g.group_id,
                    topics=_fetched_topics(cls, _V8_NAMES, result, False),
                    error_code=result.error_code,
                )
            )
        return make(cls, throttle_time=0, groups=tuple(groups))
    result = _fetch_group(services, ctx, str(versioned.group_id), "", -1, versioned.topics, stable)
    if result.error_code and version < 2:
        # no group-level error before v2: every partition asked for carries it
        result = OffsetFetchResult(
            result.error_code,
            result.error_message,
            tuple(
                OffsetFetchPartition(t.name, int(p))
                for t in versioned.topics or ()
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


def handle_offset_delete(
    services: DoorServices, ctx: RequestContext, request: views.OffsetDeleteRequestView
) -> Any:
    cls = response_class_of(ctx)
    wanted = [(t.name, int(p.partition_index)) for t in request.topics for p in t.partitions]
    result = services.group_apis.offset_delete(ctx.caller, str(request.group_id), wanted)
    if result.error_code:
        return make(cls, error_code=result.error_code, throttle_time=0, topics=())
    errors = {(r.topic, r.partition): r.error_code for r in result.partitions}
    return make(
        cls, error_code=0, throttle_time=0, topics=_partition_answer(cls, request.topics, errors)
    )
