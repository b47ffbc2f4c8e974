"""The calling principal's ACL decisions, for the gRPC servicers: the gRPC face of
:class:`~node.security.auth_helper.AuthHelper`.

:func:`current_caller` is the principal and host of the call being handled
(:func:`node.grpc_door.authentication.current_request`); :class:`RequestChecks` asks the
helper about it, and aborts a call refused as a whole with ``PERMISSION_DENIED`` and the
Kafka error code in the ``odradek-error-code`` trailing metadata. Thread-safe (no state of
its own).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import grpc

from node.grpc_door.authentication import current_request
from node.security.auth_helper import (
    CLUSTER_DENIED,
    GROUP_DENIED,
    TOPIC_DENIED,
    AuthHelper,
    Caller,
    Refusal,
)
from node.security.authorizer import AclAuthorizer
from node.security.principal import ANONYMOUS
from odradek.acl import AclOperation, ResourceType
from odradek.client.errors import ERROR_CODE_METADATA_KEY

__all__ = [
    "CLUSTER_DENIED",
    "GROUP_DENIED",
    "TOPIC_DENIED",
    "RequestChecks",
    "abort_refused",
    "current_caller",
    "denied_message",
]


def current_caller() -> Caller:
    """The caller of the call this thread is handling (anonymous outside a handler)."""
    ctx = current_request()
    if ctx is None:
        return Caller(ANONYMOUS, "")
    return Caller(ctx.principal, ctx.client_host)


def abort_refused(context: grpc.ServicerContext, refusals: Sequence[Refusal]) -> None:
    """Aborts the call with ``PERMISSION_DENIED`` and the first refusal's code and message,
    if any refusal."""
    if refusals:
        first = refusals[0]
        context.set_trailing_metadata(((ERROR_CODE_METADATA_KEY, str(first.error_code)),))
        context.abort(grpc.StatusCode.PERMISSION_DENIED, first.error_message)


def denied_message(topic: str, operation: AclOperation) -> str:
    return AuthHelper.topic_message(current_caller(), operation, topic)


class RequestChecks:
    """The calling principal's decisions (see :class:`~node.security.auth_helper.AuthHelper`)."""

    def __init__(self, authorizer: AclAuthorizer) -> None:
        self.helper = AuthHelper(authorizer)

    def allowed(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        return self.helper.allowed(current_caller(), operation, resource_type, name)

    def topics(self, operation: AclOperation, names: Iterable[str]) -> dict[str, bool]:
        return self.helper.topics(current_caller(), operation, names)

    def cluster(self, operation: AclOperation) -> bool:
        return self.helper.cluster(current_caller(), operation)

    def may_write_a_topic(self) -> bool:
        return self.helper.may_write_a_topic(current_caller())

    def require_cluster(self, operation: AclOperation, context: grpc.ServicerContext) -> None:
        """Aborts the call with CLUSTER_AUTHORIZATION_FAILED unless allowed."""
        refusal = self.helper.cluster_refusal(current_caller(), operation)
        abort_refused(context, [refusal] if refusal is not None else [])
