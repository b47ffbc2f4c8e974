"""Node addresses: ``host:port`` strings, and the bootstrap server lists users give.

Pure, and free of gRPC imports (the command line checks ``--bootstrap-server`` with it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["format_address", "parse_bootstrap_servers"]


def format_address(host: str, port: int) -> str:
    """``host:port``, with an IPv6 host in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_bootstrap_servers(servers: str | Sequence[str]) -> list[str]:
    """The ``host:port`` addresses of ``servers``: a comma-separated string or a sequence.

    Raises ``ValueError`` naming the first entry that is not ``host:port`` with a port in
    1..65535, or when no address is given.
    """
    items: Iterable[str] = servers.split(",") if isinstance(servers, str) else servers
    out: list[str] = []
    for raw in items:
        entry = raw.strip()
        if not entry:
            continue
        host, sep, port_text = entry.rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError(f"not a HOST:PORT address: {entry!r}")
        address = format_address(host, int(port_text))
        if address not in out:
            out.append(address)
    if not out:
        raise ValueError("no bootstrap server given")
    return out
