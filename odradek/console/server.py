"""Runs the console: builds the sessions over the cluster, binds the listening socket, prints
the URL and serves the application with uvicorn until interrupted.

``serve`` binds before it prints, so ``--listen 127.0.0.1:0`` prints the port it got (the
tests read it).
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Mapping
from typing import Any, TextIO

import uvicorn

from odradek.client.addresses import format_address
from odradek.clock import SystemClock
from odradek.console.app import ConsoleConfig, create_app
from odradek.console.sessions import Sessions
from odradek.console.view import ClusterView

__all__ = ["login_required", "make_sessions", "serve"]


def login_required(security: Mapping[str, Any]) -> bool:
    """A SASL cluster needs a login: each user's calls run as that user."""
    return security.get("security_protocol") == "SASL_SSL"


def make_sessions(bootstrap_servers: str, security: Mapping[str, Any]) -> Sessions:
    """Sessions whose views use ``security`` (``--command-config``'s settings); on a SASL
    cluster the username and password come from each login, not from the file."""
    clock = SystemClock()
    needs_login = login_required(security)
    base = {
        k: v for k, v in security.items() if k not in ("sasl_plain_username", "sasl_plain_password")
    }
    if needs_login:
        base.setdefault("sasl_mechanism", "SCRAM-SHA-256")

    def make_view(username: str | None, password: str | None) -> ClusterView:
        if username is None:
            return ClusterView(bootstrap_servers, "ANONYMOUS", clock, **security)
        return ClusterView(
            bootstrap_servers,
            f"User:{username}",
            clock,
            **base,
            sasl_plain_username=username,
            sasl_plain_password=password,
        )

    return Sessions(clock, make_view, login_required=needs_login)


def bind(listen: str) -> socket.socket:
    """A listening TCP socket on ``HOST:PORT`` (port 0: any free one). Raises ``OSError``."""
    host, _, port = listen.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, int(port)))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(
    bootstrap_servers: str,
    security: Mapping[str, Any],
    *,
    listen: str,
    read_only: bool,
    out: TextIO = sys.stdout,
) -> int:
    sessions = make_sessions(bootstrap_servers, security)
    app = create_app(sessions, ConsoleConfig(read_only=read_only))
    sock = bind(listen)
    host, port = sock.getsockname()[:2]
    mode = " (read-only)" if read_only else ""
    print(f"odradek console: http://{format_address(host, port)}/{mode}", file=out, flush=True)
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    )
    server.run(sockets=[sock])
    return 0
