"""The gRPC services of a node with the authorizer in front (Kafka's ``KafkaApis`` checks).

Each class wraps a service's servicer: it asks the :class:`~node.authorizer.AclAuthorizer`
about the calling principal (:func:`node.authentication.current_request`), passes what is
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
CreateTopics                           CREATE on the cluster, else on the topic     29 each
DeleteTopics                           DELETE on each topic                         29 each
DescribeConfigs / AlterConfigs         DESCRIBE_CONFIGS / ALTER_CONFIGS on topic    29 each
ElectLeaders, AlterPartition-          ALTER on the cluster                         31
Reassignments
ListPartitionReassignments             DESCRIBE on the cluster                      31
CreateAcls / DeleteAcls / DescribeAcls ALTER / ALTER / DESCRIBE on the cluster      31
=====================================  ==========================================  =========

A whole call refused (31 on the Replication and Controller services) is aborted with
``PERMISSION_DENIED`` and the code in the ``odradek-error-code`` trailing metadata.
:class:`AclAdminServicer` also serves the ACL RPCs, answering SECURITY_DISABLED (54) when the
node has no authorizer. Thread-safe (no state of their own).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import grpc

from controller.admin import AdminServicer
from controller.service import ControllerServicer
from node.authentication import ANONYMOUS, current_request
from node.authorizer import AclAuthorizer
from node.listeners import ERROR_CODE_METADATA_KEY
from node.scram_store import ScramCredentialStore
from node.service import BrokerServicer, ReplicationServicer
from odradek.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourceType,
    acl_binding_from_wire,
    acl_binding_to_wire,
    acl_filter_from_wire,
)
from odradek.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    InvalidRequestError,
    ResourceNotFoundError,
    SecurityDisabledError,
    TopicAuthorizationFailedError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
    UnsupportedVersionError,
)
from odradek.scram import MECHANISMS, credential_from_salted_password
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = [
    "AclAdminServicer",
    "AuthorizingBrokerServicer",
    "AuthorizingControllerServicer",
    "AuthorizingReplicationServicer",
]

_TOPIC_DENIED = TopicAuthorizationFailedError.code
_CLUSTER_DENIED = ClusterAuthorizationFailedError.code
_GROUP_DENIED = GroupAuthorizationFailedError.code


class _Checks:
    """The calling principal's decisions, cached per call site."""

    def __init__(self, authorizer: AclAuthorizer) -> None:
        self._authorizer = authorizer

    def allowed(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        ctx = current_request()
        principal = str(ctx.principal if ctx is not None else ANONYMOUS)
        host = ctx.client_host if ctx is not None else ""
        return self._authorizer.authorize(principal, host, operation, resource_type, name)

    def topics(self, operation: AclOperation, names: Iterable[str]) -> dict[str, bool]:
        return {n: self.allowed(operation, ResourceType.TOPIC, n) for n in set(names)}

    def cluster(self, operation: AclOperation) -> bool:
        return self.allowed(operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def may_write_a_topic(self) -> bool:
        """Whether the caller may WRITE some topic (Kafka's ``authorizeByResourceType``, as
        InitProducerId asks it): a topic pattern an ACL allows WRITE (or ALL) on, for which
        the authorizer's whole decision (denials included) allows it."""
        candidates = {
            binding.pattern.name
            for binding in self._authorizer.bindings()
            if binding.pattern.resource_type is ResourceType.TOPIC
            and binding.entry.permission_type is AclPermissionType.ALLOW
            and binding.entry.operation in (AclOperation.WRITE, AclOperation.ALL)
        }
        return any(self.allowed(AclOperation.WRITE, ResourceType.TOPIC, n) for n in candidates)

    def require_groups(
        self, operation: AclOperation, groups: Iterable[str], context: grpc.ServicerContext
    ) -> None:
        """Aborts the call with GROUP_AUTHORIZATION_FAILED unless ``operation`` is allowed
        on every one of ``groups``."""
        for group in groups:
            if not self.allowed(operation, ResourceType.GROUP, group):
                ctx = current_request()
                who = ctx.principal if ctx is not None else ANONYMOUS
                context.set_trailing_metadata(((ERROR_CODE_METADATA_KEY, str(_GROUP_DENIED)),))
                context.abort(
                    grpc.StatusCode.PERMISSION_DENIED,
                    f"{GroupAuthorizationFailedError.name} ({_GROUP_DENIED}): {who} may not "
                    f"{operation.kafka_name} group {group!r}",
                )

    def require_cluster(self, operation: AclOperation, context: grpc.ServicerContext) -> None:
        """Aborts the call with CLUSTER_AUTHORIZATION_FAILED unless allowed."""
        if not self.cluster(operation):
            ctx = current_request()
            who = ctx.principal if ctx is not None else ANONYMOUS
            context.set_trailing_metadata(((ERROR_CODE_METADATA_KEY, str(_CLUSTER_DENIED)),))
            context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"{ClusterAuthorizationFailedError.name} ({_CLUSTER_DENIED}): {who} may not "
                f"{operation.kafka_name} on the cluster",
            )


def _message(topic: str, operation: AclOperation) -> str:
    ctx = current_request()
    who = ctx.principal if ctx is not None else ANONYMOUS
    return f"{who} may not {operation.kafka_name} topic {topic!r}"


class AuthorizingBrokerServicer(pb_grpc.BrokerServicer):
    """The client API behind topic ACLs."""

    def __init__(self, inner: BrokerServicer, authorizer: AclAuthorizer) -> None:
        self._inner = inner
        self._checks = _Checks(authorizer)

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
                error_code=_TOPIC_DENIED,
                error_message=_message(p.topic, op),
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
                error_code=_TOPIC_DENIED,
                error_message=_message(p.topic, op),
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
            error_code=_CLUSTER_DENIED,
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
                error_code=_TOPIC_DENIED,
                error_message=_message(p.topic, op),
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
            found.get(name) or pb.TopicMetadata(name=name, error_code=_TOPIC_DENIED)
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
                error_code=_TOPIC_DENIED,
                error_message=_message(p.topic, op),
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
        self._checks = _Checks(authorizer)

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
        self._checks = _Checks(authorizer)

    def AlterPartition(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._checks.require_cluster(AclOperation.CLUSTER_ACTION, context)
        return self._inner.AlterPartition(request, context)

    def ControlledShutdown(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._checks.require_cluster(AclOperation.CLUSTER_ACTION, context)
        return self._inner.ControlledShutdown(request, context)


class AclAdminServicer(pb_grpc.AdminServicer):
    """The Admin service: the topic calls behind ACLs (with an authorizer), and the ACL
    calls."""

    def __init__(
        self,
        inner: AdminServicer,
        authorizer: AclAuthorizer | None,
        credentials: ScramCredentialStore | None = None,
    ) -> None:
        """``credentials``: where users' SCRAM credentials live (``None``: the SCRAM calls
        answer UNSUPPORTED_VERSION)."""
        self._inner = inner
        self._credentials = credentials
        self._authorizer = authorizer
        self._checks = _Checks(authorizer) if authorizer is not None else None

    def _topic_results(
        self,
        names: list[str],
        op: AclOperation,
        call: Callable[[list[str]], list[pb.TopicResult]],
        *,
        cluster_wide: bool = False,
    ) -> list[pb.TopicResult]:
        checks = self._checks
        if checks is None or (cluster_wide and checks.cluster(op)):
            return call(names)
        ok = checks.topics(op, names)
        answered = (
            {r.name: r for r in call([n for n in names if ok[n]])} if any(ok.values()) else {}
        )
        return [
            answered.get(n)
            or pb.TopicResult(name=n, error_code=_TOPIC_DENIED, error_message=_message(n, op))
            for n in names
        ]

    def CreateTopics(  # noqa: N802
        self, request: pb.CreateTopicsRequest, context: grpc.ServicerContext
    ) -> pb.CreateTopicsResponse:
        by_name = {t.name: t for t in request.topics}

        def call(names: list[str]) -> list[pb.TopicResult]:
            sub = pb.CreateTopicsRequest(
                topics=[by_name[n] for n in names],
                timeout_ms=request.timeout_ms,
                validate_only=request.validate_only,
            )
            return list(self._inner.CreateTopics(sub, context).topics) if names else []

        names = [t.name for t in request.topics]
        return pb.CreateTopicsResponse(
            topics=self._topic_results(names, AclOperation.CREATE, call, cluster_wide=True)
        )

    def DeleteTopics(  # noqa: N802
        self, request: pb.DeleteTopicsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteTopicsResponse:
        def call(names: list[str]) -> list[pb.TopicResult]:
            sub = pb.DeleteTopicsRequest(names=names, timeout_ms=request.timeout_ms)
            return list(self._inner.DeleteTopics(sub, context).topics) if names else []

        return pb.DeleteTopicsResponse(
            topics=self._topic_results(list(request.names), AclOperation.DELETE, call)
        )

    def DescribeConfigs(  # noqa: N802
        self, request: pb.DescribeConfigsRequest, context: grpc.ServicerContext
    ) -> pb.DescribeConfigsResponse:
        checks = self._checks
        if checks is None:
            return self._inner.DescribeConfigs(request, context)
        op = AclOperation.DESCRIBE_CONFIGS
        ok = checks.topics(op, request.topics)
        allowed = [t for t in request.topics if ok[t]]
        found = {}
        if allowed:
            sub = pb.DescribeConfigsRequest(topics=allowed)
            found = {t.name: t for t in self._inner.DescribeConfigs(sub, context).topics}
        return pb.DescribeConfigsResponse(
            topics=[
                found.get(n)
                or pb.TopicConfigs(name=n, error_code=_TOPIC_DENIED, error_message=_message(n, op))
                for n in request.topics
            ]
        )

    def AlterConfigs(  # noqa: N802
        self, request: pb.AlterConfigsRequest, context: grpc.ServicerContext
    ) -> pb.AlterConfigsResponse:
        by_name = {t.name: t for t in request.topics}

        def call(names: list[str]) -> list[pb.TopicResult]:
            sub = pb.AlterConfigsRequest(
                topics=[by_name[n] for n in names], validate_only=request.validate_only
            )
            return list(self._inner.AlterConfigs(sub, context).topics) if names else []

        names = [t.name for t in request.topics]
        return pb.AlterConfigsResponse(
            topics=self._topic_results(names, AclOperation.ALTER_CONFIGS, call)
        )

    def CreatePartitions(  # noqa: N802
        self, request: pb.CreatePartitionsRequest, context: grpc.ServicerContext
    ) -> pb.CreatePartitionsResponse:
        """Kafka's rule: ALTER on each topic (TOPIC_AUTHORIZATION_FAILED for the others)."""
        by_name = {t.name: t for t in request.topics}

        def call(names: list[str]) -> list[pb.TopicResult]:
            sub = pb.CreatePartitionsRequest(
                topics=[by_name[n] for n in names],
                timeout_ms=request.timeout_ms,
                validate_only=request.validate_only,
            )
            return list(self._inner.CreatePartitions(sub, context).topics) if names else []

        names = [t.name for t in request.topics]
        return pb.CreatePartitionsResponse(
            topics=self._topic_results(names, AclOperation.ALTER, call)
        )

    def _cluster_denied(self, op: AclOperation) -> bool:
        return self._checks is not None and not self._checks.cluster(op)

    def ElectLeaders(  # noqa: N802
        self, request: pb.ElectLeadersRequest, context: grpc.ServicerContext
    ) -> pb.ElectLeadersResponse:
        if self._cluster_denied(AclOperation.ALTER):
            return pb.ElectLeadersResponse(error_code=_CLUSTER_DENIED)
        return self._inner.ElectLeaders(request, context)

    def AlterPartitionReassignments(  # noqa: N802
        self, request: pb.AlterPartitionReassignmentsRequest, context: grpc.ServicerContext
    ) -> pb.AlterPartitionReassignmentsResponse:
        if self._cluster_denied(AclOperation.ALTER):
            return pb.AlterPartitionReassignmentsResponse(error_code=_CLUSTER_DENIED)
        return self._inner.AlterPartitionReassignments(request, context)

    def ListPartitionReassignments(  # noqa: N802
        self, request: pb.ListPartitionReassignmentsRequest, context: grpc.ServicerContext
    ) -> pb.ListPartitionReassignmentsResponse:
        if self._cluster_denied(AclOperation.DESCRIBE):
            return pb.ListPartitionReassignmentsResponse(error_code=_CLUSTER_DENIED)
        return self._inner.ListPartitionReassignments(request, context)

    # -- ACLs -------------------------------------------------------------------------------

    def _acl_refusal(self, op: AclOperation) -> tuple[int, str] | None:
        if self._authorizer is None:
            return SecurityDisabledError.code, "no authorizer is configured (authorizer.class.name)"
        if self._cluster_denied(op):
            ctx = current_request()
            who = ctx.principal if ctx is not None else ANONYMOUS
            return _CLUSTER_DENIED, f"{who} may not {op.kafka_name} on the cluster"
        return None

    def CreateAcls(  # noqa: N802
        self, request: pb.CreateAclsRequest, context: grpc.ServicerContext
    ) -> pb.CreateAclsResponse:
        refusal = self._acl_refusal(AclOperation.ALTER)
        if refusal is not None:
            code, message = refusal
            return pb.CreateAclsResponse(
                results=[pb.AclResult(error_code=code, error_message=message)]
                * len(request.creations)
            )
        assert self._authorizer is not None
        results: list[pb.AclResult] = []
        valid: list[AclBinding] = []
        for wire in request.creations:
            try:
                valid.append(acl_binding_from_wire(wire))
                results.append(pb.AclResult())
            except ValueError as e:
                results.append(
                    pb.AclResult(error_code=InvalidRequestError.code, error_message=str(e))
                )
        self._authorizer.create_acls(valid)
        return pb.CreateAclsResponse(results=results)

    def DescribeAcls(  # noqa: N802
        self, request: pb.DescribeAclsRequest, context: grpc.ServicerContext
    ) -> pb.DescribeAclsResponse:
        refusal = self._acl_refusal(AclOperation.DESCRIBE)
        if refusal is not None:
            return pb.DescribeAclsResponse(error_code=refusal[0], error_message=refusal[1])
        assert self._authorizer is not None
        try:
            wanted = acl_filter_from_wire(request.filter)
        except ValueError as e:
            return pb.DescribeAclsResponse(
                error_code=InvalidRequestError.code, error_message=str(e)
            )
        return pb.DescribeAclsResponse(
            acls=[acl_binding_to_wire(b) for b in self._authorizer.bindings() if wanted.matches(b)]
        )

    def DeleteAcls(  # noqa: N802
        self, request: pb.DeleteAclsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteAclsResponse:
        refusal = self._acl_refusal(AclOperation.ALTER)
        if refusal is not None:
            code, message = refusal
            return pb.DeleteAclsResponse(
                filter_results=[pb.DeleteAclsFilterResult(error_code=code, error_message=message)]
                * len(request.filters)
            )
        assert self._authorizer is not None
        results: list[pb.DeleteAclsFilterResult | None] = []
        filters: list[AclBindingFilter] = []
        for wire in request.filters:
            try:
                filters.append(acl_filter_from_wire(wire))
                results.append(None)
            except ValueError as e:
                results.append(
                    pb.DeleteAclsFilterResult(
                        error_code=InvalidRequestError.code, error_message=str(e)
                    )
                )
        deleted = iter(self._authorizer.delete_acls(filters))
        return pb.DeleteAclsResponse(
            filter_results=[
                r
                if r is not None
                else pb.DeleteAclsFilterResult(
                    matching_acls=[acl_binding_to_wire(b) for b in next(deleted)]
                )
                for r in results
            ]
        )

    # -- SCRAM credentials ------------------------------------------------------------------

    def DescribeUserScramCredentials(  # noqa: N802
        self, request: pb.DescribeUserScramCredentialsRequest, context: grpc.ServicerContext
    ) -> pb.DescribeUserScramCredentialsResponse:
        store = self._credentials
        if store is None:
            return pb.DescribeUserScramCredentialsResponse(error_code=UnsupportedVersionError.code)
        if self._cluster_denied(AclOperation.DESCRIBE):
            return pb.DescribeUserScramCredentialsResponse(
                error_code=_CLUSTER_DENIED, error_message="may not Describe on the cluster"
            )
        named = list(dict.fromkeys(request.users))
        results = []
        for user in named or store.users():
            infos = store.describe(user)
            if not infos and not named:
                continue
            results.append(
                pb.DescribeUserScramCredentialsResult(
                    user=user,
                    error_code=0 if infos else ResourceNotFoundError.code,
                    error_message="" if infos else f"user {user!r} has no SCRAM credentials",
                    credential_infos=[
                        pb.ScramCredentialInfo(mechanism=m, iterations=i)
                        for m, i in sorted(infos.items())
                    ],
                )
            )
        return pb.DescribeUserScramCredentialsResponse(results=results)

    def AlterUserScramCredentials(  # noqa: N802
        self, request: pb.AlterUserScramCredentialsRequest, context: grpc.ServicerContext
    ) -> pb.AlterUserScramCredentialsResponse:
        users = list(
            dict.fromkeys(
                [d.name for d in request.deletions] + [u.name for u in request.upsertions]
            )
        )
        store = self._credentials
        refused: tuple[int, str] | None = None
        if store is None:
            refused = (UnsupportedVersionError.code, "this node keeps no credentials")
        elif self._cluster_denied(AclOperation.ALTER):
            refused = (_CLUSTER_DENIED, "may not Alter on the cluster")
        if refused is not None:
            return pb.AlterUserScramCredentialsResponse(
                results=[
                    pb.AlterUserScramCredentialsResult(
                        user=u, error_code=refused[0], error_message=refused[1]
                    )
                    for u in users
                ]
            )
        assert store is not None
        results = []
        for user in users:
            code, message = 0, ""
            deletions = {d.mechanism for d in request.deletions if d.name == user}
            upsertions = [u for u in request.upsertions if u.name == user]
            upsert = {}
            for u in upsertions:
                if u.mechanism not in MECHANISMS:
                    code, message = UnsupportedSaslMechanismError.code, f"{u.mechanism!r}"
                    break
                _, least, most = MECHANISMS[u.mechanism]
                if not least <= u.iterations <= most or not u.salt or not u.salted_password:
                    code = UnacceptableCredentialError.code
                    message = f"{u.mechanism} needs iterations in [{least}, {most}] and a salt"
                    break
                upsert[u.mechanism] = credential_from_salted_password(
                    u.mechanism, u.salted_password, u.salt, u.iterations
                )
            unknown = deletions - set(MECHANISMS)
            if not code and (unknown or deletions & set(upsert) or not user):
                code = InvalidRequestError.code
                message = "an empty user, an unknown mechanism, or one both set and deleted"
            if not code and deletions - set(store.describe(user)):
                code = ResourceNotFoundError.code
                message = f"user {user!r} has no {', '.join(sorted(deletions))} credential"
            if not code:
                store.alter(user, upsert, deletions)
            results.append(
                pb.AlterUserScramCredentialsResult(
                    user=user, error_code=code, error_message=message
                )
            )
        return pb.AlterUserScramCredentialsResponse(results=results)
