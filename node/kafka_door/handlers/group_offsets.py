"""A consumer group's committed offsets: OffsetCommit (8) v2-v10, OffsetFetch (9) v1-v10 (v8+:
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
* **Topic ids** (OffsetCommit and OffsetFetch v10, Kafka 4.2's versions for KIP-848): a topic is
  named by its id, in the request and in the answer; the id is resolved to the topic's name
  here, as Fetch v13+ does (:mod:`node.kafka_door.topic_ids`), and the core sees names only.
  An id this node does not know answers UNKNOWN_TOPIC_ID (100) on its partitions (an
  OffsetFetch's with offset -1), as Kafka's ``KafkaApis`` does before the coordinator sees the
  request; a commit refused on the group answers GROUP_AUTHORIZATION_FAILED there too (Kafka
  checks the group first). A topic of an all-topics OffsetFetch this node no longer knows is
  answered with the zero id (Kafka's ``metadataCache.getTopicId``).
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

from collections.abc import Sequence
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
from node.kafka_door.topic_ids import topic_id_text, topic_id_uuid

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
UNKNOWN_TOPIC_ID = 100
TOPIC_IDS_SINCE = 10
"""OffsetCommit and OffsetFetch name their topics by id from v10."""
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
_V0_NAMES = ("OffsetFetchResponseTopic", "OffsetFetchResponsePartition")
_V8_NAMES = ("OffsetFetchResponseTopics", "OffsetFetchResponsePartitions")
"""OffsetFetch's response classes before v8 and from v8 (kio's names)."""


def _partition_answer(
    cls: type[Any],
    topics: Any,
    errors: dict[tuple[str, int], int],
    names: Sequence[str | None] | None = None,
    unknown_code: int = UNKNOWN_TOPIC_ID,
) -> tuple[Any, ...]:
    """The per-topic, per-partition answer of OffsetCommit, TxnOffsetCommit and OffsetDelete,
    in request order. ``names``: each topic's name, resolved from its id (``None``: an id this
    node does not know, whose partitions answer ``unknown_code``); by default the topics'
    own names."""
    topic_cls = nested(cls, cls.__name__ + "Topic")
    partition_cls = nested(cls, cls.__name__ + "Partition")
    if names is None:
        names = [str(t.name) for t in topics]
    return tuple(
        make(
            topic_cls,
            name=name,
            topic_id=getattr(t, "topic_id", None),
            partitions=tuple(
                make(
                    partition_cls,
                    partition_index=p.partition_index,
                    error_code=unknown_code
                    if name is None
                    else errors.get((name, int(p.partition_index)), 0),
                )
                for p in t.partitions
            ),
        )
        for t, name in zip(topics, names, strict=True)
    )


def _topic_names(services: DoorServices, by_id: bool, topics: Any) -> list[str | None]:
    """Each requested topic's name: its own before v10; from v10 its id's (``None`` for an id
    this node does not know, as Kafka's ``metadataCache.getTopicName``)."""
    if not by_id:
        return [str(t.name) for t in topics]
    known = services.api.records.topic_names_by_id()
    return [known.get(topic_id_text(t.topic_id)) for t in topics]


# -- OffsetCommit ----------------------------------------------------------------------------


def handle_offset_commit(
    services: DoorServices, ctx: RequestContext, request: views.OffsetCommitRequestView
) -> Any:
    versioned: Any = request  # v10 names its topics by id, v2-v9 by name
    names = _topic_names(services, ctx.api_version >= TOPIC_IDS_SINCE, versioned.topics)
    commits = [
        OffsetCommitPartition(
            topic=name,
            partition=int(p.partition_index),
            committed_offset=int(p.committed_offset),
            committed_leader_epoch=int(getattr(p, "committed_leader_epoch", -1)),
            committed_metadata=p.committed_metadata or "",
        )
        for t, name in zip(versioned.topics, names, strict=True)
        if name is not None
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
        # Kafka refuses the group before it looks the topic ids up
        refused = result.error_code == GROUP_AUTHORIZATION_FAILED
        topics = _partition_answer(
            cls,
            versioned.topics,
            errors,
            names,
            GROUP_AUTHORIZATION_FAILED if refused else UNKNOWN_TOPIC_ID,
        )
        return make(cls, throttle_time=0, topics=topics)

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
    """One group's OffsetFetch (``topics`` ``None``: all the group's). From v10 the topics are
    named by id: an id this node does not know answers UNKNOWN_TOPIC_ID on its partitions,
    after the others (unless the group itself is refused or unknown)."""
    if topics is None:
        return services.group_apis.offset_fetch(
            ctx.caller, group_id, member_id, member_epoch, None, require_stable
        )
    names = _topic_names(services, ctx.api_version >= TOPIC_IDS_SINCE, topics)
    wanted = [
        (name, int(p))
        for t, name in zip(topics, names, strict=True)
        if name is not None
        for p in t.partition_indexes
    ]
    result = services.group_apis.offset_fetch(
        ctx.caller, group_id, member_id, member_epoch, wanted, require_stable
    )
    if result.error_code or None not in names:
        return result
    unknown = tuple(
        OffsetFetchPartition(
            topic_id_text(t.topic_id),
            int(p),
            error_code=UNKNOWN_TOPIC_ID,
            error_message="This server does not host this topic ID.",
        )
        for t, name in zip(topics, names, strict=True)
        if name is None
        for p in t.partition_indexes
    )
    return OffsetFetchResult(partitions=result.partitions + unknown)


def _fetched_topics(
    services: DoorServices,
    cls: type[Any],
    names: tuple[str, str],
    result: OffsetFetchResult,
    group_error: bool,
    by_id: bool = False,
) -> tuple[Any, ...]:
    """The answer's topics, each once, in the order of their first partition. ``by_id``
    (v10): each named by its id (an UNKNOWN_TOPIC_ID partition's topic is the id asked for;
    a topic this node does not know, the zero id)."""
    topic_cls = nested(cls, names[0])
    partition_cls = nested(cls, names[1])
    by_topic: dict[tuple[str, bool], list[Any]] = {}
    for p in result.partitions:
        by_topic.setdefault((p.topic, p.error_code == UNKNOWN_TOPIC_ID), []).append(
            make(
                partition_cls,
                partition_index=p.partition,
                committed_offset=p.committed_offset,
                committed_leader_epoch=p.committed_leader_epoch,
                metadata=p.metadata,
                error_code=result.error_code if group_error else p.error_code,
            )
        )
    ids: dict[str, str] = {}
    if by_id:
        ids = {name: tid for tid, name in services.api.records.topic_names_by_id().items()}

    def topic_id(name: str, unknown_id: bool) -> Any:
        if not by_id:
            return None
        return topic_id_uuid(name) if unknown_id else topic_id_uuid(ids.get(name, ""))

    return tuple(
        make(topic_cls, name=n, topic_id=topic_id(n, unknown_id), partitions=tuple(ps))
        for (n, unknown_id), ps in by_topic.items()
    )


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
            topics = _fetched_topics(
                services, cls, _V8_NAMES, result, False, by_id=version >= TOPIC_IDS_SINCE
            )
            groups.append(
                make(group_cls, group_id=g.group_id, topics=topics, error_code=result.error_code)
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
        topics=_fetched_topics(services, cls, _V0_NAMES, result, version < 2),
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
