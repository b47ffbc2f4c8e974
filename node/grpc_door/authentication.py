"""Who is calling: the principal of each request (Kafka's ``KafkaPrincipal`` and
``DefaultKafkaPrincipalBuilder``).

Principals, as Kafka builds them:

- on a PLAINTEXT listener, and on an SSL listener when the client gave no certificate:
  ``User:ANONYMOUS``;
- on an SSL listener with ``ssl.client.auth=requested``, as with ``required`` for a client that
  gave a certificate and ``User:ANONYMOUS`` for one that did not (the node terminates that
  listener's TLS itself, :mod:`node.security.tls_terminator`, and the principal comes from there);
- on an SSL listener with a client certificate: ``User:<name>``, the name being the
  certificate's subject (RFC 2253, ``CN=alice,OU=Users,O=Example``) mapped by the listener's
  ``ssl.principal.mapping.rules``. A subject no rule maps is refused (``UNAUTHENTICATED``);
- on a SASL_SSL listener: ``User:<SCRAM user name>`` of the session token the call carries
  (:mod:`node.security.sasl`). A call without a live token is refused (``UNAUTHENTICATED`` with
  SASL_AUTHENTICATION_FAILED, 58, in the ``odradek-error-code`` trailer), except the Sasl
  service itself and the health and reflection services.

:class:`AuthenticationInterceptor` (one per listener) computes the principal of every call
before its handler runs and makes it available to the handler's thread through
:func:`current_request`. Thread-safe.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import grpc

from node.grpc_door.sasl_service import SASL_TOKEN_METADATA_KEY
from node.security.principal import ANONYMOUS, KafkaPrincipal
from node.security.sasl import SaslSessions

if TYPE_CHECKING:
    from node.security.tls_terminator import RelayedPeer
from node.security.ssl_principal_mapper import NoMatchingRuleError, SslPrincipalMapper
from odradek.client.errors import ERROR_CODE_METADATA_KEY
from odradek.errors import SaslAuthenticationFailedError

__all__ = [
    "AuthenticationInterceptor",
    "RequestContext",
    "current_request",
    "principal_from_auth_context",
]


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What the handlers know of a call besides its request (Kafka's ``RequestContext``)."""

    principal: KafkaPrincipal
    listener_name: str
    security_protocol: str
    client_address: str
    """The peer as gRPC gives it, e.g. ``ipv4:127.0.0.1:50000``."""

    @property
    def client_host(self) -> str:
        """The peer's address without port: ``127.0.0.1``, ``::1``."""
        peer = self.client_address
        kind, _, rest = peer.partition(":")
        if kind == "ipv6":
            return rest.rpartition(":")[0].strip("[]")
        if kind == "ipv4":
            return rest.rpartition(":")[0]
        return peer


_CURRENT: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar(
    "odradek_request", default=None
)


def current_request() -> RequestContext | None:
    """The context of the call this thread is handling; ``None`` outside a handler."""
    return _CURRENT.get()


def principal_from_auth_context(
    auth_context: Mapping[str, Iterable[bytes]], mapper: SslPrincipalMapper
) -> KafkaPrincipal:
    """The principal for a call with gRPC's ``auth_context``: ``User:<mapped subject>`` with
    a verified client certificate, else ``User:ANONYMOUS``. Raises
    :class:`~node.security.ssl_principal_mapper.NoMatchingRuleError`."""
    subjects = list(auth_context.get("x509_subject") or [])
    if not subjects:
        return ANONYMOUS
    return KafkaPrincipal("User", mapper.name(subjects[0].decode()))


Behaviour = Callable[[Any, grpc.ServicerContext], Any]
_UNAUTHENTICATED_SERVICES = (
    "odradek.v1.Sasl",
    "grpc.health.v1.Health",
    "grpc.reflection.v1alpha.ServerReflection",
)


if TYPE_CHECKING:
    _ServerInterceptor = grpc.ServerInterceptor[Any, Any]
else:
    _ServerInterceptor = grpc.ServerInterceptor  # not subscriptable at run time


class AuthenticationInterceptor(_ServerInterceptor):
    """Sets the :class:`RequestContext` of every call on one listener; refuses a client whose
    certificate subject no mapping rule matches. Thread-safe."""

    def __init__(
        self,
        listener_name: str,
        security_protocol: str,
        mapper: SslPrincipalMapper,
        sessions: SaslSessions | None = None,
        relayed: Callable[[str], RelayedPeer | None] | None = None,
    ) -> None:
        """``sessions``: the node's SASL sessions (needed on a SASL_SSL listener).
        ``relayed``: on a listener whose TLS the node terminates itself
        (``ssl.client.auth=requested``), who is behind a relayed connection (gRPC's peer
        string → :class:`~node.security.tls_terminator.RelayedPeer`, ``None`` for a connection not
        relayed, which is refused)."""
        self._listener = listener_name
        self._protocol = security_protocol
        self._mapper = mapper
        self._sessions = sessions
        self._relayed = relayed

    def _context(self, context: grpc.ServicerContext, method: str) -> RequestContext:
        if self._protocol == "PLAINTEXT":
            principal = ANONYMOUS
        elif self._protocol == "SASL_SSL":
            principal = self._sasl_principal(context, method)
        elif self._relayed is not None:
            who = self._relayed(context.peer())
            if who is None:
                context.abort(
                    grpc.StatusCode.UNAUTHENTICATED,
                    f"listener {self._listener}: connect to the listener's TLS address",
                )
            assert who is not None  # abort raises
            principal = ANONYMOUS
            if who.subject is not None:
                try:
                    principal = KafkaPrincipal("User", self._mapper.name(who.subject))
                except NoMatchingRuleError as e:
                    context.abort(grpc.StatusCode.UNAUTHENTICATED, e.message)
            return RequestContext(principal, self._listener, self._protocol, who.client_address)
        else:
            try:
                # gRPC gives a list of values per key (grpc-stubs says one)
                auth = cast(Mapping[str, Iterable[bytes]], context.auth_context())
                principal = principal_from_auth_context(auth, self._mapper)
            except NoMatchingRuleError as e:
                context.abort(grpc.StatusCode.UNAUTHENTICATED, e.message)
        return RequestContext(principal, self._listener, self._protocol, context.peer())

    def _sasl_principal(self, context: grpc.ServicerContext, method: str) -> KafkaPrincipal:
        service = method.lstrip("/").partition("/")[0]
        if service in _UNAUTHENTICATED_SERVICES:
            return ANONYMOUS
        token = next(
            (str(v) for k, v in context.invocation_metadata() if k == SASL_TOKEN_METADATA_KEY),
            None,
        )
        user = self._sessions.user(token) if token and self._sessions is not None else None
        if user is None:
            context.set_trailing_metadata(
                ((ERROR_CODE_METADATA_KEY, str(SaslAuthenticationFailedError.code)),)
            )
            context.abort(
                grpc.StatusCode.UNAUTHENTICATED,
                f"{SaslAuthenticationFailedError.name} ({SaslAuthenticationFailedError.code}): "
                f"listener {self._listener} needs SASL authentication "
                + ("(the session is unknown or expired)" if token else "(no session token)"),
            )
        return KafkaPrincipal("User", user)

    def _unary(self, behaviour: Behaviour, method: str) -> Behaviour:
        def wrapped(request: Any, context: grpc.ServicerContext) -> Any:
            token = _CURRENT.set(self._context(context, method))
            try:
                return behaviour(request, context)
            finally:
                _CURRENT.reset(token)

        return wrapped

    def _streaming(self, behaviour: Behaviour, method: str) -> Behaviour:
        def wrapped(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            request_context = self._context(context, method)
            token = _CURRENT.set(request_context)
            try:
                responses = behaviour(request, context)
            finally:
                _CURRENT.reset(token)
            return self._each(responses, request_context)

        return wrapped

    @staticmethod
    def _each(responses: Iterator[Any], request_context: RequestContext) -> Iterator[Any]:
        # a streaming handler's body runs as gRPC pulls its answers: set the context per pull
        while True:
            token = _CURRENT.set(request_context)
            try:
                response = next(responses)
            except StopIteration:
                return
            finally:
                _CURRENT.reset(token)
            yield response

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        kinds = (
            ("unary_unary", grpc.unary_unary_rpc_method_handler, self._unary),
            ("stream_unary", grpc.stream_unary_rpc_method_handler, self._unary),
            ("unary_stream", grpc.unary_stream_rpc_method_handler, self._streaming),
            ("stream_stream", grpc.stream_stream_rpc_method_handler, self._streaming),
        )
        for attribute, make, wrap in kinds:
            behaviour = getattr(handler, attribute, None)
            if behaviour is not None:
                return make(
                    wrap(behaviour, handler_call_details.method),
                    request_deserializer=handler.request_deserializer,
                    response_serializer=handler.response_serializer,
                )
        return handler
