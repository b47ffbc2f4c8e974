"""The request metrics of the gRPC door: :class:`RequestMetricsInterceptor`, a gRPC server
interceptor timing and counting every RPC into :class:`~node.metrics.request_metrics.RequestMetrics`
(the request count and total time per RPC, and bytes out of followers' fetches per topic;
clients' traffic is counted by :mod:`node.apis`).

``totaltimems`` is from the handler's start to its answer; ``remotetimems`` is the part spent
waiting in purgatory (:func:`node.core.wakeups.take_remote_time_ms`). Thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import grpc

from node.core.wakeups import take_remote_time_ms
from node.metrics.request_metrics import RequestMetrics
from odradek.clock import Clock

__all__ = ["RequestMetricsInterceptor", "count_traffic", "request_name"]

# Kafka's request names (RequestMetrics' request= tag) for odradek's RPCs; Fetch is split by
# requester as Kafka does. Other RPCs go by their gRPC method name.
_REQUEST_NAMES = {
    "/odradek.v1.Broker/Fetch": "FetchConsumer",
    "/odradek.v1.Replication/Fetch": "FetchFollower",
    "/odradek.v1.Replication/FetchSession": "FetchFollower",
}


def request_name(method: str) -> str:
    """``/odradek.v1.Broker/Produce`` → ``Produce``; Fetch → ``FetchConsumer`` or
    ``FetchFollower``."""
    return _REQUEST_NAMES.get(method) or method.rsplit("/", 1)[-1]


def count_traffic(metrics: RequestMetrics, name: str, request: Any, response: Any) -> None:
    """Bytes out of a follower's fetch (gRPC messages), per topic. A client's produce and
    fetch are counted by their API's function (:mod:`node.apis.records`), whichever door."""
    del request
    if name == "FetchFollower":
        metrics.count_fetched(
            [(p.topic, len(p.records)) for p in response.partitions], from_follower=True
        )


if TYPE_CHECKING:
    _ServerInterceptor = grpc.ServerInterceptor[Any, Any]
else:  # the stubs' generic is not subscriptable at run time
    _ServerInterceptor = grpc.ServerInterceptor


class RequestMetricsInterceptor(_ServerInterceptor):
    """Times and counts every RPC (see the module doc). Thread-safe."""

    def __init__(self, metrics: RequestMetrics, clock: Clock) -> None:
        self._metrics = metrics
        self._clock = clock
        # method -> its measured handler, built once (the services' handlers never change)
        self._wrapped: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        method = handler_call_details.method
        wrapped = self._wrapped.get(method)
        if wrapped is not None:
            return wrapped
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        wrapped = self._wrap(request_name(method), handler)
        self._wrapped[method] = wrapped  # a race builds the same handler twice: harmless
        return wrapped

    def _wrap(
        self, name: str, handler: grpc.RpcMethodHandler[Any, Any]
    ) -> grpc.RpcMethodHandler[Any, Any]:
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._unary(name, handler.unary_unary),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.stream_stream is not None:
            return grpc.stream_stream_rpc_method_handler(
                self._stream(name, handler.stream_stream),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler  # no unary-stream or stream-unary RPCs today: served unmeasured

    def _unary(self, name: str, behaviour: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        metrics, clock = self._metrics, self._clock

        def measured(request: Any, context: grpc.ServicerContext) -> Any:
            take_remote_time_ms()
            started = clock.monotonic_ms()
            try:
                response = behaviour(request, context)
            except Exception:
                code = context.code() if hasattr(context, "code") else None
                metrics.error(name, getattr(code, "name", "UNKNOWN"))
                raise
            finally:
                metrics.observe(name, clock.monotonic_ms() - started, take_remote_time_ms())
            count_traffic(metrics, name, request, response)
            return response

        return measured

    def _stream(
        self, name: str, behaviour: Callable[[Iterator[Any], Any], Iterator[Any]]
    ) -> Callable[[Iterator[Any], Any], Iterator[Any]]:
        """A fetch session: each request of the stream is timed from when the servicer takes
        it to when it yields the answer (it answers each in turn)."""
        metrics, clock = self._metrics, self._clock

        def measured(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
            pending: list[tuple[Any, int]] = []

            def timed() -> Iterator[Any]:
                for request in requests:
                    take_remote_time_ms()
                    pending.append((request, clock.monotonic_ms()))
                    yield request

            for response in behaviour(timed(), context):
                if pending:
                    request, started = pending.pop(0)
                    metrics.observe(name, clock.monotonic_ms() - started, take_remote_time_ms())
                    count_traffic(metrics, name, request, response)
                yield response

        return measured
