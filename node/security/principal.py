"""Who is calling, as the authorizer sees it: Kafka's ``KafkaPrincipal`` (``User:alice``).

Each front door builds the principal of a request its own way (the gRPC door from the TLS
certificate or the SASL session token, :mod:`node.grpc_door.authentication`) and hands it to
the core's checks (:mod:`node.security.authorizer`). Immutable values.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ANONYMOUS", "KafkaPrincipal"]


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """``<type>:<name>``, e.g. ``User:alice``; compared as text, as in Kafka's ACLs."""

    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @staticmethod
    def parse(text: str) -> KafkaPrincipal:
        """``User:alice`` → ``KafkaPrincipal("User", "alice")``; raises ``ValueError``."""
        kind, sep, name = text.partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"{text!r} is not a principal (expected Type:name, e.g. User:alice)")
        return KafkaPrincipal(kind, name)


ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")
