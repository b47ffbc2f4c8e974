"""The gRPC door's translation of the consumer group RPCs: protobuf messages to the group
coordinator's plain values (:mod:`node.coordinator.group_requests`) and back. Pure functions;
thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable

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
    OffsetFetchResult,
    PartitionResult,
    TopicPartitions,
)
from odradek.v1 import odradek_pb2 as pb

__all__ = [
    "described_groups_to_wire",
    "deleted_groups_to_wire",
    "find_coordinator_to_wire",
    "heartbeat_from_wire",
    "heartbeat_to_wire",
    "list_groups_to_wire",
    "offset_commit_from_wire",
    "offset_commit_to_wire",
    "offset_delete_to_wire",
    "offset_fetch_to_wire",
]


def find_coordinator_to_wire(coordinators: Iterable[Coordinator]) -> pb.FindCoordinatorResponse:
    return pb.FindCoordinatorResponse(
        coordinators=[
            pb.Coordinator(
                key=c.key,
                node_id=c.node_id,
                host=c.host,
                port=max(c.port, 0),
                error_code=c.error_code,
                error_message=c.error_message,
            )
            for c in coordinators
        ]
    )


def heartbeat_from_wire(
    req: pb.ConsumerGroupHeartbeatRequest, client_host: str
) -> HeartbeatRequest:
    owned = None
    if req.has_topic_partitions:
        owned = {
            tp.topic_id: frozenset(tp.partitions) for tp in req.topic_partitions if tp.partitions
        }
    return HeartbeatRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        member_epoch=req.member_epoch,
        instance_id=req.instance_id if req.HasField("instance_id") else None,
        rack_id=req.rack_id if req.HasField("rack_id") else None,
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        subscribed_topic_names=(
            tuple(req.subscribed_topic_names) if req.has_subscribed_topic_names else None
        ),
        subscribed_topic_regex=(
            req.subscribed_topic_regex if req.HasField("subscribed_topic_regex") else None
        ),
        server_assignor=req.server_assignor if req.HasField("server_assignor") else None,
        owned=owned,
        client_id=req.client_id,
        client_host=client_host,
    )


def _tps(tps: Iterable[TopicPartitions]) -> list[pb.HeartbeatTopicPartitions]:
    return [
        pb.HeartbeatTopicPartitions(
            topic_id=t.topic_id, partitions=list(t.partitions), topic_name=t.topic_name
        )
        for t in tps
    ]


def heartbeat_to_wire(r: HeartbeatResponse) -> pb.ConsumerGroupHeartbeatResponse:
    return pb.ConsumerGroupHeartbeatResponse(
        error_code=r.error_code,
        error_message=r.error_message,
        member_id=r.member_id,
        member_epoch=r.member_epoch,
        heartbeat_interval_ms=r.heartbeat_interval_ms,
        has_assignment=r.assignment is not None,
        assignment=_tps(r.assignment or ()),
    )


def offset_commit_from_wire(
    req: pb.OffsetCommitRequest | pb.TxnOffsetCommitRequest,
) -> list[OffsetCommitPartition]:
    return [
        OffsetCommitPartition(
            t.name,
            p.partition,
            p.committed_offset,
            p.committed_leader_epoch,
            p.committed_metadata,
        )
        for t in req.topics
        for p in t.partitions
    ]


def _partition_results(
    results: Iterable[PartitionResult],
) -> list[pb.OffsetCommitPartitionResponse]:
    return [
        pb.OffsetCommitPartitionResponse(
            topic=r.topic,
            partition=r.partition,
            error_code=r.error_code,
            error_message=r.error_message,
        )
        for r in results
    ]


def offset_commit_to_wire(r: OffsetCommitResult) -> pb.OffsetCommitResponse:
    return pb.OffsetCommitResponse(
        error_code=r.error_code, partitions=_partition_results(r.partitions)
    )


def offset_fetch_to_wire(r: OffsetFetchResult) -> pb.OffsetFetchResponse:
    return pb.OffsetFetchResponse(
        error_code=r.error_code,
        error_message=r.error_message,
        partitions=[
            pb.OffsetFetchPartitionResponse(
                topic=p.topic,
                partition=p.partition,
                committed_offset=p.committed_offset,
                committed_leader_epoch=p.committed_leader_epoch,
                metadata=p.metadata,
                error_code=p.error_code,
                error_message=p.error_message,
            )
            for p in r.partitions
        ],
    )


def offset_delete_to_wire(r: OffsetDeleteResult) -> pb.OffsetDeleteResponse:
    return pb.OffsetDeleteResponse(
        error_code=r.error_code,
        error_message=r.error_message,
        partitions=_partition_results(r.partitions),
    )


def list_groups_to_wire(r: ListGroupsResult) -> pb.ListGroupsResponse:
    return pb.ListGroupsResponse(
        error_code=r.error_code,
        groups=[
            pb.ListedGroup(
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=g.group_state,
                group_type=g.group_type,
            )
            for g in r.groups
        ],
    )


def described_groups_to_wire(groups: Iterable[DescribedGroup]) -> pb.ConsumerGroupDescribeResponse:
    out = pb.ConsumerGroupDescribeResponse()
    for g in groups:
        d = out.groups.add(
            error_code=g.error_code,
            error_message=g.error_message,
            group_id=g.group_id,
            group_state=g.group_state,
            group_epoch=g.group_epoch,
            assignment_epoch=g.assignment_epoch,
            assignor_name=g.assignor_name,
            group_type=g.group_type,
            protocol_type=g.protocol_type,
            protocol=g.protocol,
        )
        for m in g.members:
            dm = d.members.add(
                member_id=m.member_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=list(m.subscribed_topic_names),
                assignment=_tps(m.assignment),
                target_assignment=_tps(m.target_assignment),
                member_state=m.member_state,
            )
            if m.instance_id is not None:
                dm.instance_id = m.instance_id
            if m.rack_id is not None:
                dm.rack_id = m.rack_id
            if m.subscribed_topic_regex is not None:
                dm.subscribed_topic_regex = m.subscribed_topic_regex
            if m.member_type >= 0:
                dm.upgraded = m.member_type == 1
    return out


def deleted_groups_to_wire(results: Iterable[DeletedGroup]) -> pb.DeleteGroupsResponse:
    return pb.DeleteGroupsResponse(
        results=[
            pb.DeletableGroupResult(
                group_id=r.group_id, error_code=r.error_code, error_message=r.error_message
            )
            for r in results
        ]
    )
