"""ShareFetch (78) and ShareAcknowledge (79), v1-v2 (KIP-932): a share group's consumer
fetching records it acquires from a partition's leader, and acknowledging them.

The policy is :class:`~node.apis.share_fetch.ShareFetchApis`'; this only translates. Topics
are named by id; the member id is the client's own (a UUID's text). A ShareFetch answers the
fetched record batches whole with the ``AcquiredRecords`` ranges (and their delivery counts)
the member now holds for ``AcquisitionLockTimeoutMs``; the client delivers only those offsets.
One that acquired nothing waits up to ``MaxWaitMs`` without a request thread
(:class:`~node.kafka_door.server.WhenReady` over
:class:`~node.share.manager.PendingShareFetch`): it is polled when a partition's high
watermark moves, another member releases records or a lock may have expired, and the read and
acquisition run on a request thread (:class:`~node.kafka_door.server.Later`). v2 adds
``IsRenewAck`` (the acknowledgements include RENEW, type 4: the locks are extended and nothing
is fetched) and ``ShareAcquireMode`` (read, not used: batches are acquired whole, KIP-1206's
batch-optimized mode). NOT_LEADER_OR_FOLLOWER names the current leader and its endpoint on
the request's listener (``CurrentLeader``, ``NodeEndpoints``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kio.static.primitive import i16, i64

from node.apis.share_fetch import (
    ShareAcknowledgeRequest,
    ShareFetchAnswer,
    ShareFetchApis,
    ShareFetchRequest,
    SharePartitionRequest,
)
from node.kafka_door import views
from node.kafka_door.build import make, nested, respond, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.leader_discovery import current_leader, node_endpoints
from node.kafka_door.server import Later, WhenReady
from node.kafka_door.services import DoorServices
from node.kafka_door.topic_ids import topic_id_text, topic_id_uuid
from node.share.manager import ShareFetchResult
from node.share.partition import AcknowledgementBatch

__all__ = ["handle_share_acknowledge", "handle_share_fetch"]


def _apis(services: DoorServices) -> ShareFetchApis:
    share = services.api.share
    assert share is not None, "no share partition manager"
    return share


def _partitions(topics: Sequence[Any]) -> tuple[SharePartitionRequest, ...]:
    return tuple(
        SharePartitionRequest(
            topic_id_text(t.topic_id),
            int(p.partition_index),
            tuple(
                AcknowledgementBatch(
                    int(b.first_offset),
                    int(b.last_offset),
                    tuple(int(x) for x in b.acknowledge_types),
                )
                for b in p.acknowledgement_batches
            ),
        )
        for t in topics
        for p in t.partitions
    )


def handle_share_fetch(
    services: DoorServices, ctx: RequestContext, request: views.ShareFetchRequestView
) -> Any:
    apis = _apis(services)
    decoded = ShareFetchRequest(
        group_id=request.group_id or "",
        member_id=request.member_id or "",
        share_session_epoch=int(request.share_session_epoch),
        max_wait_ms=int(request.max_wait.total_seconds() * 1000),
        min_bytes=int(request.min_bytes),
        max_bytes=int(request.max_bytes),
        max_records=int(request.max_records),
        batch_size=int(request.batch_size),
        partitions=_partitions(request.topics),
        forgotten=tuple(
            (topic_id_text(t.topic_id), int(p))
            for t in request.forgotten_topics_data
            for p in t.partitions
        ),
        is_renew_ack=bool(getattr(request, "is_renew_ack", False)),
    )
    started = apis.start_share_fetch(ctx.caller, decoded, ctx.listener)
    pending = started.pending
    if pending is None:
        return _fetch_answer(ctx, started.finish())

    def poll() -> Any:
        if not pending.ready():
            return None
        return Later(lambda: _fetch_answer(ctx, started.finish()))

    return WhenReady(poll=poll, subscribe=pending.subscribe, recheck_ms=pending.recheck_ms)


def _by_topic(results: Sequence[ShareFetchResult]) -> dict[str, list[ShareFetchResult]]:
    topics: dict[str, list[ShareFetchResult]] = {}
    for r in results:
        topics.setdefault(r.topic_id, []).append(r)
    return topics


def _fetch_answer(ctx: RequestContext, answer: ShareFetchAnswer) -> Any:
    cls = response_class_of(ctx)
    partition_cls = nested(cls, "PartitionData")
    acquired_cls = nested(cls, "AcquiredRecords")
    topic_cls = nested(cls, "ShareFetchableTopicResponse")
    responses = tuple(
        make(
            topic_cls,
            topic_id=topic_id_uuid(topic_id),
            partitions=tuple(
                make(
                    partition_cls,
                    partition_index=r.partition,
                    error_code=r.error_code,
                    error_message=r.error_message or None,
                    acknowledge_error_code=r.acknowledge_error_code,
                    acknowledge_error_message=r.acknowledge_error_message or None,
                    records=r.records,
                    acquired_records=tuple(
                        make(
                            acquired_cls,
                            first_offset=i64(a.first_offset),
                            last_offset=i64(a.last_offset),
                            delivery_count=i16(a.delivery_count),
                        )
                        for a in r.acquired
                    ),
                    **_leader(cls, r),
                )
                for r in partitions
            ),
        )
        for topic_id, partitions in _by_topic(answer.results).items()
    )
    return respond(
        ctx,
        error_code=answer.error_code,
        error_message=answer.error_message or None,
        acquisition_lock_timeout=answer.acquisition_lock_timeout_ms,
        responses=responses,
        node_endpoints=node_endpoints(cls, answer.endpoints),
    )


def _leader(cls: type[Any], r: ShareFetchResult) -> dict[str, Any]:
    # a required field here (not tagged as Fetch's): -1 / -1 when not known
    found = current_leader(cls, r.current_leader)
    if found:
        return found
    item = nested(cls, "LeaderIdAndEpoch")
    return {"current_leader": make(item, leader_id=-1, leader_epoch=-1)}


def handle_share_acknowledge(
    services: DoorServices, ctx: RequestContext, request: views.ShareAcknowledgeRequestView
) -> Any:
    answer = _apis(services).share_acknowledge(
        ctx.caller,
        ShareAcknowledgeRequest(
            group_id=request.group_id or "",
            member_id=request.member_id or "",
            share_session_epoch=int(request.share_session_epoch),
            partitions=_partitions(request.topics),
            is_renew_ack=bool(getattr(request, "is_renew_ack", False)),
        ),
        ctx.listener,
    )
    cls = response_class_of(ctx)
    partition_cls = nested(cls, "PartitionData")
    topic_cls = nested(cls, "ShareAcknowledgeTopicResponse")
    return respond(
        ctx,
        error_code=answer.error_code,
        error_message=answer.error_message or None,
        responses=tuple(
            make(
                topic_cls,
                topic_id=topic_id_uuid(topic_id),
                partitions=tuple(
                    make(
                        partition_cls,
                        partition_index=r.partition,
                        error_code=r.error_code,
                        error_message=r.error_message or None,
                        **_leader(cls, r),
                    )
                    for r in partitions
                ),
            )
            for topic_id, partitions in _by_topic(answer.results).items()
        ),
        node_endpoints=node_endpoints(cls, answer.endpoints),
    )
