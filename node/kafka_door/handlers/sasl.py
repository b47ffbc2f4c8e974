"""SaslHandshake (17) v1 and SaslAuthenticate (36) v0-v1: SCRAM-SHA-256/512 on a Kafka
SASL_PLAINTEXT or SASL_SSL listener, against the node's SCRAM credential store.

As Kafka's ``SaslServerAuthenticator``: the connection's first requests may only be ApiVersions
and SaslHandshake; the handshake names a mechanism (UNSUPPORTED_SASL_MECHANISM, 33, with the
enabled ones, and the connection closed, otherwise); then SaslAuthenticate requests carry the
exchange's messages (RFC 5802, :class:`odradek.scram.ScramServerExchange`). A wrong password
or an unknown user answers SASL_AUTHENTICATION_FAILED (58) with Kafka's message and closes the
connection; a SaslAuthenticate out of turn answers ILLEGAL_SASL_STATE (34) and closes it.
SaslHandshake v0 (raw tokens outside Kafka's framing) is not served: every client since Kafka
1.0 sends v1.

Runs on a request thread, one request of a connection at a time (no lock needed for the
connection's state).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from node.kafka_door.build import make, response_class_of
from node.kafka_door.context import RequestContext
from node.security.principal import KafkaPrincipal
from odradek.errors import (
    IllegalSaslStateError,
    OdradekError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)
from odradek.scram import ScramCredential, ScramServerExchange

__all__ = ["SaslHandlers"]

HANDSHAKE_KEY = 17
AUTHENTICATE_KEY = 36


class SaslHandlers:
    """The two SASL APIs over a credential lookup ``(mechanism, user) -> credential``."""

    def __init__(
        self,
        lookup: Callable[[str, str], ScramCredential | None],
        mechanisms: tuple[str, ...],
        session_lifetime_ms: int = 0,
    ) -> None:
        self._lookup = lookup
        self._mechanisms = mechanisms
        self._session_lifetime_ms = session_lifetime_ms

    def handshake(self, ctx: RequestContext, request: Any) -> Any:
        cls = response_class_of(ctx)
        conn = ctx.connection
        if not conn.security_protocol.startswith("SASL_") or conn.authenticated:
            conn.close_after_response = True
            return make(cls, error_code=IllegalSaslStateError.code, mechanisms=self._mechanisms)
        if request.mechanism not in self._mechanisms:
            conn.close_after_response = True
            return make(
                cls, error_code=UnsupportedSaslMechanismError.code, mechanisms=self._mechanisms
            )
        conn.sasl_mechanism = request.mechanism
        conn.sasl_handshake_version = ctx.api_version
        conn.sasl_exchange = None
        return make(cls, error_code=0, mechanisms=self._mechanisms)

    def authenticate(self, ctx: RequestContext, request: Any) -> Any:
        cls = response_class_of(ctx)
        conn = ctx.connection
        if conn.sasl_mechanism is None or conn.authenticated:
            conn.close_after_response = True
            return make(
                cls,
                error_code=IllegalSaslStateError.code,
                error_message="SaslAuthenticate before SaslHandshake",
                auth_bytes=b"",
                session_lifetime=0,
            )
        try:
            if conn.sasl_exchange is None:
                exchange = ScramServerExchange.start(
                    conn.sasl_mechanism, bytes(request.auth_bytes), self._lookup
                )
                conn.sasl_exchange = exchange
                return make(
                    cls,
                    error_code=0,
                    error_message=None,
                    auth_bytes=exchange.server_first.encode(),
                    session_lifetime=0,
                )
            exchange = conn.sasl_exchange
            server_final = exchange.finish(bytes(request.auth_bytes))
        except OdradekError as e:
            conn.close_after_response = True
            conn.sasl_exchange = None
            code = e.code if e.code else SaslAuthenticationFailedError.code
            return make(
                cls,
                error_code=code,
                error_message=_failure_message(e, conn.sasl_mechanism),
                auth_bytes=b"",
                session_lifetime=0,
            )
        conn.principal = KafkaPrincipal("User", exchange.username)
        conn.authenticated = True
        conn.sasl_exchange = None
        return make(
            cls,
            error_code=0,
            error_message=None,
            auth_bytes=server_final,
            session_lifetime=self._session_lifetime_ms,
        )


def _failure_message(error: OdradekError, mechanism: str) -> str:
    if isinstance(error, SaslAuthenticationFailedError):
        # Kafka's text, the same for an unknown user and a wrong password
        return (
            "Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {mechanism}"
        )
    return error.message
