"""What a handler knows of the request it answers: the connection and the request header.

A connection's state (its listener, the peer, the authenticated principal, the SASL exchange in
progress) lives on :class:`Connection`, owned by the connection's loop; a handler gets a
:class:`RequestContext` naming it. Handlers run on the request threads one request of a
connection at a time (Kafka answers a connection's requests in order, one after another), so a
handler may update its connection's state without a lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from node.security.auth_helper import Caller
from node.security.principal import ANONYMOUS, KafkaPrincipal

__all__ = ["Connection", "RequestContext"]


@dataclass(slots=True)
class Connection:
    """One client connection of a Kafka listener."""

    listener: str
    """The listener's name (``listeners``), whose endpoints Metadata answers with."""
    security_protocol: str
    """PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."""
    peer_host: str
    peer_port: int
    principal: KafkaPrincipal = ANONYMOUS
    """``User:<name>``: the certificate's mapped name on SSL, the SASL user once authenticated."""
    authenticated: bool = True
    """False on a SASL listener until SaslAuthenticate succeeds."""
    sasl_mechanism: str | None = None
    """The mechanism chosen by SaslHandshake, until the exchange ends."""
    sasl_handshake_version: int = -1
    sasl_exchange: Any = None
    """The SCRAM exchange in progress (:class:`odradek.scram.ScramServerExchange`)."""
    close_after_response: bool = False
    """Set by a handler: the connection is closed once its answer is written (a failed
    authentication, as Kafka's ``SaslServerAuthenticator`` does)."""
    client_software: tuple[str, str] = ("", "")
    """ApiVersions v3's client name and version."""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RequestContext:
    """One request: its header and its connection."""

    connection: Connection
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None

    @property
    def principal(self) -> KafkaPrincipal:
        return self.connection.principal

    @property
    def caller(self) -> Caller:
        """Who asks, as the ACL checks take it."""
        return Caller(self.connection.principal, self.connection.peer_host)

    @property
    def listener(self) -> str:
        return self.connection.listener
