"""The gRPC services of a node with the authorizer in front (Kafka's ``KafkaApis`` checks).

Each class wraps a service's servicer: it asks the :class:`~node.security.authorizer.AclAuthorizer`
about the calling principal (:func:`node.grpc_door.authentication.current_request`), passes what is
allowed on, and answers the rest with Kafka's errors, so a refused caller gets a typed error
and no data:

=====================================  ==========================================  =========
call                                   needs                                        refused
=====================================  ==========================================  =========
Produce                                WRITE on each topic                          29 each
Fetch (consumer)                       READ on each topic                           29 each
ListOffsets                            DESCRIBE on each topic                       29 each
Metadata                               DESCRIBE on each topic (all topics: hidden)  29 each
DeleteRecords                          DELETE on each topic                         29 each
Replication.* (follower fetch,         CLUSTER_ACTION on the cluster                31
OffsetForLeaderEpoch, LeaderAndIsr,
StopReplica, UpdateMetadata)
Controller.* (AlterPartition,          CLUSTER_ACTION on the cluster                31
ControlledShutdown)
=====================================  ==========================================  =========

A whole call refused (31 on the Replication and Controller services) is aborted with
``PERMISSION_DENIED`` and the code in the ``odradek-error-code`` trailing metadata.
The Admin service's checks are the admin room's (:mod:`node.admin.authorization`). Thread-safe (no
state of their own).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc

from controller.service import ControllerServicer
from node.grpc_door.authentication import current_request
from node.grpc_door.request_checks import (
    CLUSTER_DENIED,
    TOPIC_DENIED,
    RequestChecks,
    denied_message,
)
from node.grpc_door.service import BrokerServicer, ReplicationServicer
from node.security.authorizer import AclAuthorizer
from node.security.principal import ANONYMOUS
from odradek.acl import AclOperation, ResourceType
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = [
    "AuthorizingBrokerServicer",
    "AuthorizingControllerServicer",
    "AuthorizingReplicationServicer",
]


class AuthorizingBrokerServicer(pb_grpc.BrokerServicer):
    """The client API behind topic ACLs."""

    def __init__(self, inner: BrokerServicer, authorizer: AclAuthorizer) -> None:
        self._inner = inner
        self._checks = RequestChecks(authorizer)

    def Produce(  # noqa: N802  (gRPC method names)
        self, request: pb.ProduceRequest, context: grpc.ServicerContext
    ) -> pb.ProduceResponse:
        op = AclOperation.WRITE
        ok = self._checks.topics(op, (p.topic for p in request.partitions))
        if all(ok.values()):
            return self._inner.Produce(request, context)
        allowed = [p for p in request.partitions if ok[p.topic]]
        answer = pb.ProduceResponse()
        if allowed:
            sub = pb.ProduceRequest(
                acks=request.acks, timeout_ms=request.timeout_ms, partitions=allowed
            )
            answer = self._inner.Produce(sub, context)
        if request.acks == 0:
            return answer
        answer.partitions.extend(
            pb.ProducePartitionResponse(
                topic=p.topic,
                partition=p.partition,
                error_code=TOPIC_DENIED,
                error_message=denied_message(p.topic, op),
                base_offset=-1,
                log_append_time_ms=-1,
                log_start_offset=-1,
            )
            for p in request.partitions
            if not ok[p.topic]
        )
        return answer

    def Fetch(  # noqa: N802
        self, request: pb.FetchRequest, context: grpc.ServicerContext
    ) -> pb.FetchResponse:
        op = AclOperation.READ
        ok = self._checks.topics(op, (p.topic for p in request.partitions))
        if all(ok.values()):
            return self._inner.Fetch(request, context)
        allowed = [p for p in request.partitions if ok[p.topic]]
        answer = pb.FetchResponse()
        if allowed:
            sub = pb.FetchRequest()
            sub.CopyFrom(request)
            del sub.partitions[:]
            sub.partitions.extend(allowed)
            answer = self._inner.Fetch(sub, context)
        answer.partitions.extend(
            pb.FetchPartitionResponse(
                topic=p.topic,
                partition=p.partition,
                error_code=TOPIC_DENIED,
                error_message=denied_message(p.topic, op),
                high_watermark=-1,
                log_start_offset=-1,
                log_end_offset=-1,
            )
            for p in request.partitions
            if not ok[p.topic]
        )
        return answer

    def InitProducerId(  # noqa: N802
        self, request: pb.InitProducerIdRequest, context: grpc.ServicerContext
    ) -> pb.InitProducerIdResponse:
        """Kafka's rule for an idempotent producer (KIP-679): IDEMPOTENT_WRITE on the cluster,
        or WRITE on any topic; else CLUSTER_AUTHORIZATION_FAILED."""
        if self._checks.cluster(AclOperation.IDEMPOTENT_WRITE) or self._checks.may_write_a_topic():
            return self._inner.InitProducerId(request, context)
        ctx = current_request()
        who = ctx.principal if ctx is not None else ANONYMOUS
        return pb.InitProducerIdResponse(
            error_code=CLUSTER_DENIED,
            error_message=(
                f"{who} may not IdempotentWrite on the cluster nor Write any topic (KIP-679)"
            ),
            producer_id=-1,
            producer_epoch=-1,
        )

    # -- consumer groups: Kafka's KafkaApis checks on the group (and READ on the topics of a
    # commit); a refusal is GROUP_AUTHORIZATION_FAILED for the call.

    def FindCoordinator(  # noqa: N802
        self, request: pb.FindCoordinatorRequest, context: grpc.ServicerContext
    ) -> pb.FindCoordinatorResponse:
        self._checks.require_groups(AclOperation.DESCRIBE, request.group_ids, context)
        return self._inner.FindCoordinator(request, context)

    def ConsumerGroupHeartbeat(  # noqa: N802
        self, request: pb.ConsumerGroupHeartbeatRequest, context: grpc.ServicerContext
    ) -> pb.ConsumerGroupHeartbeatResponse:
        self._checks.require_groups(AclOperation.READ, [request.group_id], context)
        return self._inner.ConsumerGroupHeartbeat(request, context)

    def OffsetCommit(  # noqa: N802
        self, request: pb.OffsetCommitRequest, context: grpc.ServicerContext
    ) -> pb.OffsetCommitResponse:
        self._checks.require_groups(AclOperation.READ, [request.group_id], context)
        return self._inner.OffsetCommit(request, context)

    def OffsetFetch(  # noqa: N802
        self, request: pb.OffsetFetchRequest, context: grpc.ServicerContext
    ) -> pb.OffsetFetchResponse:
        self._checks.require_groups(AclOperation.DESCRIBE, [request.group_id], context)
        return self._inner.OffsetFetch(request, context)

    def ListGroups(  # noqa: N802
        self, request: pb.ListGroupsRequest, context: grpc.ServicerContext
    ) -> pb.ListGroupsResponse:
        """Every group with DESCRIBE on the cluster, else those the caller may describe."""
        answer = self._inner.ListGroups(request, context)
        if self._checks.cluster(AclOperation.DESCRIBE):
            return answer
        visible = [
            g
            for g in answer.groups
            if self._checks.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id)
        ]
        return pb.ListGroupsResponse(error_code=answer.error_code, groups=visible)

    def ConsumerGroupDescribe(  # noqa: N802
        self, request: pb.ConsumerGroupDescribeRequest, context: grpc.ServicerContext
    ) -> pb.ConsumerGroupDescribeResponse:
        self._checks.require_groups(AclOperation.DESCRIBE, request.group_ids, context)
        return self._inner.ConsumerGroupDescribe(request, context)

    def DeleteGroups(  # noqa: N802
        self, request: pb.DeleteGroupsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteGroupsResponse:
        self._checks.require_groups(AclOperation.DELETE, request.group_ids, context)
        return self._inner.DeleteGroups(request, context)

    def OffsetDelete(  # noqa: N802
        self, request: pb.OffsetDeleteRequest, context: grpc.ServicerContext
    ) -> pb.OffsetDeleteResponse:
        self._checks.require_groups(AclOperation.DELETE, [request.group_id], context)
        return self._inner.OffsetDelete(request, context)

    def ListOffsets(  # noqa: N802
        self, request: pb.ListOffsetsRequest, context: grpc.ServicerContext
    ) -> pb.ListOffsetsResponse:
        op = AclOperation.DESCRIBE
        ok = self._checks.topics(op, (p.topic for p in request.partitions))
        if all(ok.values()):
            return self._inner.ListOffsets(request, context)
        allowed = [p for p in request.partitions if ok[p.topic]]
        answer = pb.ListOffsetsResponse()
        if allowed:
            sub = pb.ListOffsetsRequest()
            sub.CopyFrom(request)
            del sub.partitions[:]
            sub.partitions.extend(allowed)
            answer = self._inner.ListOffsets(sub, context)
        answer.partitions.extend(
            pb.ListOffsetsPartitionResponse(
                topic=p.topic,
                partition=p.partition,
                error_code=TOPIC_DENIED,
                error_message=denied_message(p.topic, op),
                timestamp=-1,
                offset=-1,
                leader_epoch=-1,
            )
            for p in request.partitions
            if not ok[p.topic]
        )
        return answer

    def Metadata(  # noqa: N802
        self, request: pb.MetadataRequest, context: grpc.ServicerContext
    ) -> pb.MetadataResponse:
        op = AclOperation.DESCRIBE
        if request.all_topics:
            answer = self._inner.Metadata(request, context)
            ok = self._checks.topics(op, (t.name for t in answer.topics))
            kept = [t for t in answer.topics if ok[t.name]]
            del answer.topics[:]
            answer.topics.extend(kept)
            return answer
        ok = self._checks.topics(op, request.topics)
        allowed = [t for t in request.topics if ok[t]]
        # an unauthorized topic is refused whether it exists or not: its existence does not leak
        answer = self._inner.Metadata(pb.MetadataRequest(topics=allowed), context)
        found = {t.name: t for t in answer.topics}
        topics = [
            found.get(name) or pb.TopicMetadata(name=name, error_code=TOPIC_DENIED)
            for name in dict.fromkeys(request.topics)
        ]
        del answer.topics[:]
        answer.topics.extend(topics)
        return answer

    def DeleteRecords(  # noqa: N802
        self, request: pb.DeleteRecordsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteRecordsResponse:
        op = AclOperation.DELETE
        ok = self._checks.topics(op, (p.topic for p in request.partitions))
        if all(ok.values()):
            return self._inner.DeleteRecords(request, context)
        allowed = [p for p in request.partitions if ok[p.topic]]
        answer = pb.DeleteRecordsResponse()
        if allowed:
            sub = pb.DeleteRecordsRequest(partitions=allowed, timeout_ms=request.timeout_ms)
            answer = self._inner.DeleteRecords(sub, context)
        answer.partitions.extend(
            pb.DeleteRecordsPartitionResponse(
                topic=p.topic,
                partition=p.partition,
                error_code=TOPIC_DENIED,
                error_message=denied_message(p.topic, op),
                low_watermark=-1,
            )
            for p in request.partitions
            if not ok[p.topic]
        )
        return answer


class AuthorizingReplicationServicer(pb_grpc.ReplicationServicer):
    """Replication calls need CLUSTER_ACTION on the cluster (brokers and the controller)."""

    def __init__(self, inner: ReplicationServicer, authorizer: AclAuthorizer) -> None:
        self._inner = inner
        self._checks = RequestChecks(authorizer)

    def _call(self, method: str, request: Any, context: grpc.ServicerContext) -> Any:
        self._checks.require_cluster(AclOperation.CLUSTER_ACTION, context)
        return getattr(self._inner, method)(request, context)

    def Fetch(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        return self._call("Fetch", request, context)

    def FetchSession(  # noqa: N802
        self, request_iterator: Iterator[pb.FetchRequest], context: grpc.ServicerContext
    ) -> Iterator[pb.FetchResponse]:
        self._checks.require_cluster(AclOperation.CLUSTER_ACTION, context)
        answers: Iterator[pb.FetchResponse] = self._inner.FetchSession(request_iterator, context)
        return answers

    def OffsetForLeaderEpoch(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        return self._call("OffsetForLeaderEpoch", request, context)

    def LeaderAndIsr(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        return self._call("LeaderAndIsr", request, context)

    def StopReplica(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        return self._call("StopReplica", request, context)

    def UpdateMetadata(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        return self._call("UpdateMetadata", request, context)


class AuthorizingControllerServicer(pb_grpc.ControllerServicer):
    """The brokers' requests to the controller need CLUSTER_ACTION on the cluster."""

    def __init__(self, inner: ControllerServicer, authorizer: AclAuthorizer) -> None:
        self._inner = inner
        self._checks = RequestChecks(authorizer)

    def AlterPartition(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._checks.require_cluster(AclOperation.CLUSTER_ACTION, context)
        return self._inner.AlterPartition(request, context)

    def ControlledShutdown(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._checks.require_cluster(AclOperation.CLUSTER_ACTION, context)
        return self._inner.ControlledShutdown(request, context)
