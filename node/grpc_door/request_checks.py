"""The calling principal's ACL decisions, for the gRPC servicers (Kafka's ``AuthHelper``).

:class:`RequestChecks` asks the :class:`~node.security.authorizer.AclAuthorizer` about the
principal of the call being handled (:func:`node.grpc_door.authentication.current_request`).
Thread-safe (no state of its own).
"""

from __future__ import annotations

from collections.abc import Iterable

import grpc

from node.grpc_door.authentication import current_request
from node.security.authorizer import AclAuthorizer
from node.security.principal import ANONYMOUS
from odradek.acl import CLUSTER_NAME, AclOperation, AclPermissionType, ResourceType
from odradek.client.errors import ERROR_CODE_METADATA_KEY
from odradek.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
)

__all__ = ["CLUSTER_DENIED", "GROUP_DENIED", "TOPIC_DENIED", "RequestChecks", "denied_message"]

TOPIC_DENIED = TopicAuthorizationFailedError.code
CLUSTER_DENIED = ClusterAuthorizationFailedError.code
GROUP_DENIED = GroupAuthorizationFailedError.code


class RequestChecks:
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
                context.set_trailing_metadata(((ERROR_CODE_METADATA_KEY, str(GROUP_DENIED)),))
                context.abort(
                    grpc.StatusCode.PERMISSION_DENIED,
                    f"{GroupAuthorizationFailedError.name} ({GROUP_DENIED}): {who} may not "
                    f"{operation.kafka_name} group {group!r}",
                )

    def require_cluster(self, operation: AclOperation, context: grpc.ServicerContext) -> None:
        """Aborts the call with CLUSTER_AUTHORIZATION_FAILED unless allowed."""
        if not self.cluster(operation):
            ctx = current_request()
            who = ctx.principal if ctx is not None else ANONYMOUS
            context.set_trailing_metadata(((ERROR_CODE_METADATA_KEY, str(CLUSTER_DENIED)),))
            context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"{ClusterAuthorizationFailedError.name} ({CLUSTER_DENIED}): {who} may not "
                f"{operation.kafka_name} on the cluster",
            )


def denied_message(topic: str, operation: AclOperation) -> str:
    ctx = current_request()
    who = ctx.principal if ctx is not None else ANONYMOUS
    return f"{who} may not {operation.kafka_name} topic {topic!r}"
