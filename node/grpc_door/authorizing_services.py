"""The inter-broker gRPC services of a node with the authorizer in front: the Replication
service (follower fetch, OffsetForLeaderEpoch, LeaderAndIsr, StopReplica, UpdateMetadata, the
transaction markers and the share coordinator's share-state calls) and
the Controller service (AlterPartition, ControlledShutdown, BrokerHeartbeat) need CLUSTER_ACTION
on the cluster (:meth:`node.security.auth_helper.AuthHelper.cluster_action`); a refused call is
aborted with ``PERMISSION_DENIED`` and CLUSTER_AUTHORIZATION_FAILED (31) in the
``odradek-error-code`` trailing metadata.

The client API's checks run inside :class:`~node.grpc_door.service.BrokerServicer` (given an
:class:`~node.security.auth_helper.AuthHelper`); the Admin service's are
the admin room's (:mod:`node.admin.authorization`). Thread-safe (no state of their own).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc

from controller.service import ControllerServicer
from node.grpc_door.request_checks import RequestChecks
from node.grpc_door.service import ReplicationServicer
from node.security.authorizer import AclAuthorizer
from odradek.acl import AclOperation
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = [
    "AuthorizingControllerServicer",
    "AuthorizingReplicationServicer",
]


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

    def WriteTxnMarkers(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        return self._call("WriteTxnMarkers", request, context)

    def VerifyTxnPartitions(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        return self._call("VerifyTxnPartitions", request, context)

    # share groups' durable state (KIP-932): broker-only, as in Kafka
    def InitializeShareGroupState(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        return self._call("InitializeShareGroupState", request, context)

    def ReadShareGroupState(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        return self._call("ReadShareGroupState", request, context)

    def WriteShareGroupState(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        return self._call("WriteShareGroupState", request, context)

    def DeleteShareGroupState(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        return self._call("DeleteShareGroupState", request, context)

    def ReadShareGroupStateSummary(  # noqa: N802
        self, request: Any, context: grpc.ServicerContext
    ) -> Any:
        return self._call("ReadShareGroupStateSummary", request, context)


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

    def BrokerHeartbeat(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._checks.require_cluster(AclOperation.CLUSTER_ACTION, context)
        return self._inner.BrokerHeartbeat(request, context)
