"""``odradek console``: a web console for the cluster (docs/console.md).

::

    odradek --bootstrap-server 127.0.0.1:9092 console --listen 127.0.0.1:8080 [--read-only]
    odradek console --command-config client.properties   # SASL_SSL: each user logs in

It serves the overview, topics, messages (browse, search, live tail, export, produce),
consumer groups (lag, offset resets), security (ACLs, SCRAM users) and brokers pages, talking
to the cluster through the SDK. Against a SASL cluster (``security.protocol=SASL_SSL`` in
``--command-config``) every user logs in and the console acts as that user; ``--read-only``
hides and refuses every change. Prints its URL, then serves until interrupted.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from odradek.cli.common import InputError, add_bootstrap_option

__all__ = ["add_parser"]


def _listen(text: str) -> str:
    _host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return text


def console_security(path: Path | None) -> dict[str, Any]:
    """The SDK's security keywords from ``--command-config``. With ``SASL_SSL`` the username
    and password come from each login, so the file need not (and should not) hold them.
    Raises :class:`InputError` for an unreadable file, an unknown property or an unreadable
    certificate."""
    if path is None:
        return {}
    from odradek.client.security import (
        SecurityConfig,
        from_kafka_properties,
        parse_properties,
    )

    try:
        options: dict[str, Any] = dict(from_kafka_properties(parse_properties(path.read_text())))
        check = dict(options)
        if check.get("security_protocol") == "SASL_SSL":
            options.pop("sasl_plain_username", None)
            options.pop("sasl_plain_password", None)
            check.setdefault("sasl_mechanism", "SCRAM-SHA-256")
            check.update(sasl_plain_username="login", sasl_plain_password="login")
        SecurityConfig(**check).channel_credentials()  # check the files now
    except OSError as exc:
        raise InputError(f"--command-config {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise InputError(f"--command-config {path}: {exc}") from None
    return options


def run(args: argparse.Namespace) -> int:
    try:
        from odradek.console.server import serve
    except ImportError as exc:
        raise InputError(
            f"the console needs the 'console' extra (pip install 'odradek[console]'): {exc}"
        ) from None
    security = console_security(getattr(args, "command_config", None))
    try:
        return serve(args.bootstrap_server, security, listen=args.listen, read_only=args.read_only)
    except OSError as exc:
        raise InputError(f"cannot listen on {args.listen}: {exc.strerror}") from None


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``console`` on the ``odradek`` command's subparsers."""
    p = sub.add_parser(
        "console",
        help="serve the web console",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_bootstrap_option(p, top_level=False)
    p.add_argument(
        "--listen",
        type=_listen,
        default="127.0.0.1:8080",
        metavar="HOST:PORT",
        help="where to serve (default 127.0.0.1:8080; port 0: any free port)",
    )
    p.add_argument(
        "--read-only", action="store_true", help="show no change controls and refuse changes"
    )
    p.set_defaults(handler=run, prog=p.prog, parser=p)
