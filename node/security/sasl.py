"""SASL/SCRAM on SASL_SSL listeners: the sessions the Sasl service opens (the gRPC service is
:mod:`node.grpc_door.sasl_service`).

Kafka authenticates a connection once, with SaslHandshake and SaslAuthenticate requests, before
any other request. gRPC calls are not tied to one connection, so a node hands out a *session
token* at the end of a successful exchange; the client sends it in the metadata
``odradek-sasl-token`` of every later call to that node, and the
:class:`~node.grpc_door.authentication.AuthenticationInterceptor` turns it back into
``User:<name>``. The
password never crosses the wire: the exchange is RFC 5802's (:mod:`odradek.scram`), inside TLS.

1. ``SaslHandshake(mechanism)``: UNSUPPORTED_SASL_MECHANISM (33) unless enabled
   (``sasl.enabled.mechanisms``); else a ``session_id`` naming the exchange.
2. ``SaslAuthenticate(session_id, client-first)`` → server-first.
3. ``SaslAuthenticate(session_id, client-final)`` → server-final and the token; a wrong
   password or an unknown user → SASL_AUTHENTICATION_FAILED (58), the same for both.

Exchanges not finished within 30 s are dropped (ILLEGAL_SASL_STATE, 34, after that). Tokens are
kept in the node's memory for ``session_lifetime_ms`` (Kafka's ``connections.max.reauth.ms``
re-authenticates; here the client authenticates again when the node refuses its token, e.g.
after a restart). Credentials are read from ZooKeeper at each exchange
(:class:`~node.security.scram_store.ScramCredentialStore`).

Thread-safety: thread-safe (one lock around the tables).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass

from odradek.clock import Clock
from odradek.errors import (
    IllegalSaslStateError,
    OdradekError,
    UnsupportedSaslMechanismError,
)
from odradek.scram import MECHANISMS, ScramCredential, ScramServerExchange

__all__ = ["SaslSessions"]

EXCHANGE_TIMEOUT_MS = 30_000
DEFAULT_SESSION_LIFETIME_MS = 24 * 60 * 60 * 1000


@dataclass(slots=True)
class _Pending:
    mechanism: str
    started_ms: int
    exchange: ScramServerExchange | None = None


@dataclass(frozen=True, slots=True)
class _Session:
    user: str
    expires_ms: int


class SaslSessions:
    """The exchanges in progress and the sessions they opened."""

    def __init__(
        self,
        clock: Clock,
        lookup: Callable[[str, str], ScramCredential | None],
        mechanisms: tuple[str, ...] = tuple(MECHANISMS),
        session_lifetime_ms: int = DEFAULT_SESSION_LIFETIME_MS,
    ) -> None:
        self._clock = clock
        self._lookup = lookup
        self.mechanisms = mechanisms
        self._lifetime_ms = session_lifetime_ms
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._sessions: dict[str, _Session] = {}

    def user(self, token: str) -> str | None:
        """The user a live token was given to, else ``None``."""
        now = self._clock.monotonic_ms()
        with self._lock:
            session = self._sessions.get(token)
            if session is None:
                return None
            if session.expires_ms <= now:
                del self._sessions[token]
                return None
            return session.user

    def handshake(self, mechanism: str) -> str:
        """Opens an exchange; raises :class:`UnsupportedSaslMechanismError`."""
        if mechanism not in self.mechanisms:
            raise UnsupportedSaslMechanismError(
                f"{mechanism!r} is not enabled (sasl.enabled.mechanisms: "
                f"{','.join(self.mechanisms)})"
            )
        session_id = secrets.token_urlsafe(18)
        now = self._clock.monotonic_ms()
        with self._lock:
            for key in [
                k for k, p in self._pending.items() if now - p.started_ms > EXCHANGE_TIMEOUT_MS
            ]:
                del self._pending[key]
            self._pending[session_id] = _Pending(mechanism, now)
        return session_id

    def authenticate(self, session_id: str, auth_bytes: bytes) -> tuple[bytes, str]:
        """One step of the exchange: ``(server message, token)``, the token empty until the
        last step. Raises :class:`IllegalSaslStateError` for an unknown or expired exchange,
        :class:`SaslAuthenticationFailedError` (the exchange is then over)."""
        now = self._clock.monotonic_ms()
        with self._lock:
            pending = self._pending.get(session_id)
            if pending is None or now - pending.started_ms > EXCHANGE_TIMEOUT_MS:
                self._pending.pop(session_id, None)
                raise IllegalSaslStateError("no SASL exchange in progress: call SaslHandshake")
            exchange = pending.exchange
        try:
            if exchange is None:
                exchange = ScramServerExchange.start(pending.mechanism, auth_bytes, self._lookup)
                with self._lock:
                    pending.exchange = exchange
                return exchange.server_first.encode(), ""
            server_final = exchange.finish(auth_bytes)
        except OdradekError:
            with self._lock:
                self._pending.pop(session_id, None)
            raise
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._pending.pop(session_id, None)
            self._sessions[token] = _Session(exchange.username, now + self._lifetime_ms)
        return server_final, token
