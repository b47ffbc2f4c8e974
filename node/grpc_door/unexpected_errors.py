"""The gRPC door's last line: no server exception text ever reaches a client (issue 27.4).

:class:`UnexpectedErrorInterceptor` wraps every handler of a server. An exception a handler
did not turn into an answer (a bug, an unexpected input the core did not type) is logged here
with its traceback, and the call is answered ``UNKNOWN`` with UNKNOWN_SERVER_ERROR (-1) in the
``odradek-error-code`` trailing metadata and a fixed sentence, never the exception's text
(gRPC's default would send ``Exception calling application: <the exception's text>``). A call
a handler aborted itself (``context.abort``) keeps its status. Thread-safe (no state).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import grpc

from odradek.client.errors import ERROR_CODE_METADATA_KEY
from odradek.errors import UnknownServerError

__all__ = ["UNEXPECTED_ERROR_DETAILS", "UnexpectedErrorInterceptor"]

log = logging.getLogger(__name__)

UNEXPECTED_ERROR_DETAILS = (
    f"{UnknownServerError.name} ({UnknownServerError.code}): the server failed to process the "
    "request; its log has the details"
)

if TYPE_CHECKING:
    _ServerInterceptor = grpc.ServerInterceptor[Any, Any]
else:  # the stubs' generic is not subscriptable at run time
    _ServerInterceptor = grpc.ServerInterceptor


def _aborted(context: grpc.ServicerContext) -> bool:
    """Whether the handler aborted the call itself (``context.abort`` sets a code, then
    raises): its status stands."""
    code = getattr(context, "code", None)
    return code is not None and code() is not None


def _answer(method: str, context: grpc.ServicerContext) -> None:
    """Log the exception being handled and abort the call with the fixed answer (raises)."""
    log.exception("%s failed: answered %s", method, UnknownServerError.name)
    context.set_trailing_metadata(((ERROR_CODE_METADATA_KEY, str(UnknownServerError.code)),))
    context.abort(grpc.StatusCode.UNKNOWN, UNEXPECTED_ERROR_DETAILS)


class UnexpectedErrorInterceptor(_ServerInterceptor):
    """See the module doc. Put it last in a server's interceptors (closest to the handlers)."""

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        method = handler_call_details.method
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                _unary(method, handler.unary_unary),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.stream_stream is not None:
            return grpc.stream_stream_rpc_method_handler(
                _stream(method, handler.stream_stream),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                _stream(method, handler.unary_stream),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.stream_unary is not None:
            return grpc.stream_unary_rpc_method_handler(
                _unary(method, handler.stream_unary),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler


def _unary(method: str, behaviour: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def guarded(request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return behaviour(request, context)
        except Exception:
            if _aborted(context):
                raise
            _answer(method, context)
            raise  # not reached: _answer aborts

    return guarded


def _stream(
    method: str, behaviour: Callable[[Any, Any], Iterator[Any]]
) -> Callable[[Any, Any], Iterator[Any]]:
    def guarded(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        try:
            yield from behaviour(request, context)
        except Exception:
            if _aborted(context):
                raise
            _answer(method, context)
            raise  # not reached: _answer aborts

    return guarded
