"""What a client listener refuses: the inter-broker services (:mod:`node.listeners`).

Thread-safe (immutable values).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import grpc

from node.listeners import INTER_BROKER_SERVICES
from odradek.client.errors import ERROR_CODE_METADATA_KEY
from odradek.errors import ClusterAuthorizationFailedError

__all__ = ["RefuseInterBrokerServices"]


if TYPE_CHECKING:
    _GenericRpcHandler = grpc.GenericRpcHandler[Any, Any]
else:
    _GenericRpcHandler = grpc.GenericRpcHandler  # not subscriptable at run time


class RefuseInterBrokerServices(_GenericRpcHandler):
    """On a listener other than the inter-broker one: refuses every call to the Replication
    and Controller services with ``PERMISSION_DENIED`` and CLUSTER_AUTHORIZATION_FAILED (31)
    in the trailing metadata (``odradek-error-code``). Thread-safe."""

    def __init__(self, listener_name: str, inter_broker_listener_name: str) -> None:
        self._message = (
            f"{ClusterAuthorizationFailedError.name} ({ClusterAuthorizationFailedError.code}): "
            f"inter-broker requests are served only on listener {inter_broker_listener_name}, "
            f"not on {listener_name}"
        )

    def service(
        self, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        method: str = handler_call_details.method
        service = method.lstrip("/").partition("/")[0]
        if service not in INTER_BROKER_SERVICES:
            return None
        message = self._message

        def refuse(request: Any, context: grpc.ServicerContext) -> Any:
            context.set_trailing_metadata(
                ((ERROR_CODE_METADATA_KEY, str(ClusterAuthorizationFailedError.code)),)
            )
            context.abort(grpc.StatusCode.PERMISSION_DENIED, message)

        if method.endswith("/FetchSession"):
            return grpc.stream_stream_rpc_method_handler(refuse)
        return grpc.unary_unary_rpc_method_handler(refuse)
