"""The Admin gRPC service: protobuf in, the admin room's values out and back
(:class:`node.admin.authorization.AuthorizedAdmin` over
:class:`node.admin.admin_manager.AdminManager`), with the caller's principal and client host
from :func:`node.grpc_door.authentication.current_request` (``User:ANONYMOUS`` and ``""``
outside an authenticated call). Nothing is decided here: every check, ACL or otherwise, is the
room's.

The gRPC API keeps its own shapes where Kafka's differ: AlterConfigs is incremental (its ``set``
and ``delete`` become SET and DELETE operations of IncrementalAlterConfigs), DescribeConfigs
takes topic names (answered in ``topics``) and typed resources, topics or brokers (answered
in ``resources``), and answers ``is_default`` and the source per entry, DescribeLogDirs
answers with the node's id, an empty partition list means every
partition (ElectLeaders, ListPartitionReassignments) and ``cancel`` stands for Kafka's null
replicas.

Thread-safe (no state of its own).
"""

from __future__ import annotations

import grpc

from node.admin.authorization import AuthorizedAdmin
from node.admin.requests import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    CreatePartitionsTopic,
    DescribeConfigsResource,
    DescribeConfigsResult,
    DescribeLogDirsResult,
    ElectionType,
    IncrementalAlterConfigsResource,
    InvalidAcl,
    NewTopicSpec,
    PartitionResult,
    ReassignablePartition,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
    TopicResult,
)
from node.apis.txn_abort import TxnAbortApi
from node.grpc_door.authentication import current_request
from node.grpc_door.request_checks import current_caller
from node.security.principal import ANONYMOUS
from odradek.acl import (
    AclBinding,
    AclBindingFilter,
    acl_binding_from_wire,
    acl_binding_to_wire,
    acl_filter_from_wire,
)
from odradek.errors import UnsupportedVersionError
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = ["AdminServicer"]


def _caller() -> tuple[str, str]:
    ctx = current_request()
    if ctx is None:
        return str(ANONYMOUS), ""
    return str(ctx.principal), ctx.client_host


def _topic_result(r: TopicResult) -> pb.TopicResult:
    return pb.TopicResult(name=r.name, error_code=r.error_code, error_message=r.error_message)


def _partition_result(r: PartitionResult) -> pb.PartitionResult:
    return pb.PartitionResult(
        topic=r.topic, partition=r.partition, error_code=r.error_code, error_message=r.error_message
    )


_RESOURCE_TYPES = {
    pb.CONFIG_RESOURCE_TOPIC: ConfigResourceType.TOPIC,
    pb.CONFIG_RESOURCE_BROKER: ConfigResourceType.BROKER,
    pb.CONFIG_RESOURCE_GROUP: ConfigResourceType.GROUP,
}


def _config_resource(wire: pb.ConfigResource) -> ConfigResource:
    return ConfigResource(_RESOURCE_TYPES.get(wire.type, ConfigResourceType.UNKNOWN), wire.name)


def _config_entries(r: DescribeConfigsResult) -> list[pb.ConfigEntry]:
    return [
        pb.ConfigEntry(
            name=c.name,
            value=c.value or "",
            is_default=c.is_default,
            source=pb.ConfigSource.ValueType(int(c.config_source)),
            read_only=c.read_only,
        )
        for c in r.configs
    ]


def _log_dirs(node_id: int, r: DescribeLogDirsResult) -> pb.DescribeLogDirsResponse:
    return pb.DescribeLogDirsResponse(
        error_code=r.error_code,
        node_id=node_id,
        log_dirs=[
            pb.LogDir(
                path=d.log_dir,
                error_code=d.error_code,
                total_bytes=d.total_bytes,
                usable_bytes=d.usable_bytes,
                topics=[
                    pb.LogDirTopic(
                        name=t.name,
                        partitions=[
                            pb.LogDirPartition(
                                partition=p.partition_index,
                                size_bytes=p.partition_size,
                                offset_lag=p.offset_lag,
                                is_future=p.is_future_key,
                            )
                            for p in t.partitions
                        ],
                    )
                    for t in d.topics
                ],
            )
            for d in r.results
        ],
    )


def _binding(wire: pb.AclBinding) -> AclBinding | InvalidAcl:
    try:
        return acl_binding_from_wire(wire)
    except ValueError as e:
        return InvalidAcl(str(e))


def _filter(wire: pb.AclFilter) -> AclBindingFilter | InvalidAcl:
    try:
        return acl_filter_from_wire(wire)
    except ValueError as e:
        return InvalidAcl(str(e))


class AdminServicer(pb_grpc.AdminServicer):
    """Serves the Admin service from the node's admin room; AbortTransaction from
    :class:`node.apis.txn_abort.TxnAbortApi` (``txn_abort`` ``None``: UNSUPPORTED_VERSION)."""

    def __init__(self, admin: AuthorizedAdmin, txn_abort: TxnAbortApi | None = None) -> None:
        self._admin = admin
        self._txn_abort = txn_abort

    # -- topics -----------------------------------------------------------------------------

    def CreateTopics(  # noqa: N802 - gRPC method name
        self, request: pb.CreateTopicsRequest, context: grpc.ServicerContext
    ) -> pb.CreateTopicsResponse:
        topics = [
            NewTopicSpec(
                name=t.name,
                num_partitions=t.num_partitions,
                replication_factor=t.replication_factor,
                assignments=tuple((a.partition, tuple(a.broker_ids)) for a in t.assignments),
                configs=dict(t.configs),
            )
            for t in request.topics
        ]
        results = self._admin.create_topics(
            *_caller(),
            topics,
            validate_only=request.validate_only,
            timeout_ms=request.timeout_ms,
        )
        return pb.CreateTopicsResponse(
            topics=[
                pb.TopicResult(name=r.name, error_code=r.error_code, error_message=r.error_message)
                for r in results
            ]
        )

    def DeleteTopics(  # noqa: N802 - gRPC method name
        self, request: pb.DeleteTopicsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteTopicsResponse:
        results = self._admin.delete_topics(
            *_caller(), list(request.names), timeout_ms=request.timeout_ms
        )
        return pb.DeleteTopicsResponse(topics=[_topic_result(r) for r in results])

    def CreatePartitions(  # noqa: N802 - gRPC method name
        self, request: pb.CreatePartitionsRequest, context: grpc.ServicerContext
    ) -> pb.CreatePartitionsResponse:
        topics = [
            CreatePartitionsTopic(
                name=t.name,
                count=t.count,
                assignments=tuple(tuple(a.broker_ids) for a in t.assignments)
                if t.assignments
                else None,
            )
            for t in request.topics
        ]
        results = self._admin.create_partitions(
            *_caller(),
            topics,
            validate_only=request.validate_only,
            timeout_ms=request.timeout_ms,
        )
        return pb.CreatePartitionsResponse(topics=[_topic_result(r) for r in results])

    # -- configs ----------------------------------------------------------------------------

    def DescribeConfigs(  # noqa: N802 - gRPC method name
        self, request: pb.DescribeConfigsRequest, context: grpc.ServicerContext
    ) -> pb.DescribeConfigsResponse:
        topics = [ConfigResource(ConfigResourceType.TOPIC, name) for name in request.topics]
        typed = [_config_resource(r) for r in request.resources]
        results = self._admin.describe_configs(
            *_caller(), [DescribeConfigsResource(r) for r in (*topics, *typed)]
        )
        return pb.DescribeConfigsResponse(
            topics=[
                pb.TopicConfigs(
                    name=r.resource.resource_name,
                    error_code=r.error_code,
                    error_message=r.error_message,
                    entries=_config_entries(r),
                )
                for r in results[: len(topics)]
            ],
            resources=[
                pb.ResourceConfigs(
                    resource=wire,
                    error_code=r.error_code,
                    error_message=r.error_message,
                    entries=_config_entries(r),
                )
                for wire, r in zip(request.resources, results[len(topics) :], strict=True)
            ],
        )

    def AlterConfigs(  # noqa: N802 - gRPC method name
        self, request: pb.AlterConfigsRequest, context: grpc.ServicerContext
    ) -> pb.AlterConfigsResponse:
        changes = [
            (ConfigResource(ConfigResourceType.TOPIC, t.name), t.set, t.delete)
            for t in request.topics
        ] + [(_config_resource(r.resource), r.set, r.delete) for r in request.resources]
        resources = [
            IncrementalAlterConfigsResource(
                resource,
                (
                    *(AlterConfigOp(k, AlterConfigOpType.SET, v) for k, v in set_.items()),
                    *(AlterConfigOp(k, AlterConfigOpType.DELETE) for k in delete),
                ),
            )
            for resource, set_, delete in changes
        ]
        results = self._admin.incremental_alter_configs(
            *_caller(), resources, validate_only=request.validate_only
        )
        topics = len(request.topics)
        return pb.AlterConfigsResponse(
            topics=[
                pb.TopicResult(
                    name=r.resource.resource_name,
                    error_code=r.error_code,
                    error_message=r.error_message,
                )
                for r in results[:topics]
            ],
            resources=[
                pb.ResourceResult(
                    resource=r.resource, error_code=a.error_code, error_message=a.error_message
                )
                for r, a in zip(request.resources, results[topics:], strict=True)
            ],
        )

    # -- leaders and reassignments ----------------------------------------------------------

    def ElectLeaders(  # noqa: N802 - gRPC method name
        self, request: pb.ElectLeadersRequest, context: grpc.ServicerContext
    ) -> pb.ElectLeadersResponse:
        election = (
            ElectionType.UNCLEAN
            if request.election_type == pb.UNCLEAN
            else (ElectionType.PREFERRED)
        )
        partitions = [(p.topic, p.partition) for p in request.partitions] or None
        result = self._admin.elect_leaders(
            *_caller(), election, partitions, timeout_ms=request.timeout_ms
        )
        return pb.ElectLeadersResponse(
            error_code=result.error_code,
            partitions=[_partition_result(p) for p in result.partitions],
        )

    def AlterPartitionReassignments(  # noqa: N802 - gRPC method name
        self, request: pb.AlterPartitionReassignmentsRequest, context: grpc.ServicerContext
    ) -> pb.AlterPartitionReassignmentsResponse:
        partitions = [
            ReassignablePartition(p.topic, p.partition, None if p.cancel else tuple(p.replicas))
            for p in request.partitions
        ]
        result = self._admin.alter_partition_reassignments(
            *_caller(), partitions, timeout_ms=request.timeout_ms
        )
        return pb.AlterPartitionReassignmentsResponse(
            error_code=result.error_code,
            partitions=[_partition_result(p) for p in result.partitions],
        )

    def ListPartitionReassignments(  # noqa: N802 - gRPC method name
        self, request: pb.ListPartitionReassignmentsRequest, context: grpc.ServicerContext
    ) -> pb.ListPartitionReassignmentsResponse:
        partitions = [(p.topic, p.partition) for p in request.partitions] or None
        result = self._admin.list_partition_reassignments(*_caller(), partitions)
        return pb.ListPartitionReassignmentsResponse(
            error_code=result.error_code,
            reassignments=[
                pb.OngoingReassignment(
                    topic=r.topic,
                    partition=r.partition,
                    replicas=r.replicas,
                    adding_replicas=r.adding_replicas,
                    removing_replicas=r.removing_replicas,
                )
                for r in result.reassignments
            ],
        )

    # -- ACLs -------------------------------------------------------------------------------

    def CreateAcls(  # noqa: N802 - gRPC method name
        self, request: pb.CreateAclsRequest, context: grpc.ServicerContext
    ) -> pb.CreateAclsResponse:
        results = self._admin.create_acls(*_caller(), [_binding(w) for w in request.creations])
        return pb.CreateAclsResponse(
            results=[
                pb.AclResult(error_code=r.error_code, error_message=r.error_message)
                for r in results
            ]
        )

    def DescribeAcls(  # noqa: N802 - gRPC method name
        self, request: pb.DescribeAclsRequest, context: grpc.ServicerContext
    ) -> pb.DescribeAclsResponse:
        result = self._admin.describe_acls(*_caller(), _filter(request.filter))
        return pb.DescribeAclsResponse(
            error_code=result.error_code,
            error_message=result.error_message,
            acls=[acl_binding_to_wire(b) for b in result.acls],
        )

    def DeleteAcls(  # noqa: N802 - gRPC method name
        self, request: pb.DeleteAclsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteAclsResponse:
        results = self._admin.delete_acls(*_caller(), [_filter(w) for w in request.filters])
        return pb.DeleteAclsResponse(
            filter_results=[
                pb.DeleteAclsFilterResult(
                    error_code=r.error_code,
                    error_message=r.error_message,
                    matching_acls=[acl_binding_to_wire(b) for b in r.matching_acls],
                )
                for r in results
            ]
        )

    # -- SCRAM credentials ------------------------------------------------------------------

    def DescribeUserScramCredentials(  # noqa: N802 - gRPC method name
        self, request: pb.DescribeUserScramCredentialsRequest, context: grpc.ServicerContext
    ) -> pb.DescribeUserScramCredentialsResponse:
        response = self._admin.describe_user_scram_credentials(
            *_caller(), list(request.users) or None
        )
        return pb.DescribeUserScramCredentialsResponse(
            error_code=response.error_code,
            error_message=response.error_message,
            results=[
                pb.DescribeUserScramCredentialsResult(
                    user=r.user,
                    error_code=r.error_code,
                    error_message=r.error_message,
                    credential_infos=[
                        pb.ScramCredentialInfo(mechanism=i.mechanism, iterations=i.iterations)
                        for i in r.credential_infos
                    ],
                )
                for r in response.results
            ],
        )

    def AlterUserScramCredentials(  # noqa: N802 - gRPC method name
        self, request: pb.AlterUserScramCredentialsRequest, context: grpc.ServicerContext
    ) -> pb.AlterUserScramCredentialsResponse:
        results = self._admin.alter_user_scram_credentials(
            *_caller(),
            [ScramCredentialDeletion(d.name, d.mechanism) for d in request.deletions],
            [
                ScramCredentialUpsertion(
                    u.name, u.mechanism, u.iterations, u.salt, u.salted_password
                )
                for u in request.upsertions
            ],
        )
        return pb.AlterUserScramCredentialsResponse(
            results=[
                pb.AlterUserScramCredentialsResult(
                    user=r.user, error_code=r.error_code, error_message=r.error_message
                )
                for r in results
            ]
        )

    # -- this node --------------------------------------------------------------------------

    def DescribeLogDirs(  # noqa: N802 - gRPC method name
        self, request: pb.DescribeLogDirsRequest, context: grpc.ServicerContext
    ) -> pb.DescribeLogDirsResponse:
        partitions = [(p.topic, p.partition) for p in request.partitions] or None
        result = self._admin.describe_log_dirs(*_caller(), partitions)
        return _log_dirs(self._admin.admin.node_id, result)

    def AbortTransaction(  # noqa: N802 - gRPC method name
        self, request: pb.AbortTransactionRequest, context: grpc.ServicerContext
    ) -> pb.AbortTransactionResponse:
        if self._txn_abort is None:
            return pb.AbortTransactionResponse(
                error_code=UnsupportedVersionError.code, error_message="no transaction abort here"
            )
        code, message = self._txn_abort.abort_transaction(
            current_caller(),
            request.topic,
            request.partition,
            request.producer_id,
            request.producer_epoch,
            request.coordinator_epoch,
            request.timeout_ms,
        )
        return pb.AbortTransactionResponse(error_code=code, error_message=message)

    def DescribeProducers(  # noqa: N802 - gRPC method name
        self, request: pb.DescribeProducersRequest, context: grpc.ServicerContext
    ) -> pb.DescribeProducersResponse:
        wanted = [(p.topic, p.partition) for p in request.partitions]
        return pb.DescribeProducersResponse(
            partitions=[
                pb.PartitionProducers(
                    topic=r.topic,
                    partition=r.partition_index,
                    error_code=r.error_code,
                    error_message=r.error_message,
                    active_producers=[
                        pb.ActiveProducer(
                            producer_id=s.producer_id,
                            producer_epoch=s.producer_epoch,
                            last_sequence=s.last_sequence,
                            last_timestamp=s.last_timestamp,
                            coordinator_epoch=s.coordinator_epoch,
                            current_txn_start_offset=s.current_txn_start_offset,
                        )
                        for s in r.active_producers
                    ],
                )
                for r in self._admin.describe_producers(*_caller(), wanted)
            ]
        )
