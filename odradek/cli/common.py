"""What the client subcommands of ``odradek`` share: the ``--bootstrap-server`` option, argument
types, the one-line error format, and column output.

Kept free of gRPC imports (the SDK is imported by each handler when it runs), so ``odradek
--help`` and ``odradek dump-log`` do not pay for loading it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from odradek.errors import OdradekError

__all__ = [
    "InputError",
    "BOOTSTRAP_ENV",
    "DEFAULT_BOOTSTRAP",
    "add_bootstrap_option",
    "bootstrap_servers",
    "client_security",
    "config_pair",
    "error_line",
    "non_negative_int",
    "positive_int",
    "table",
]

BOOTSTRAP_ENV = "ODRADEK_BOOTSTRAP_SERVERS"
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


class InputError(Exception):
    """Input the command cannot use (a line of standard input, say): one line, exit 1."""

    name = "INVALID_INPUT"


def bootstrap_servers(text: str) -> str:
    """argparse type: a comma-separated ``HOST:PORT`` list, checked, returned normalised."""
    from odradek.client.addresses import parse_bootstrap_servers

    try:
        return ",".join(parse_bootstrap_servers(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_bootstrap_option(parser: argparse.ArgumentParser, *, top_level: bool) -> None:
    """``--bootstrap-server``: on the ``odradek`` parser with its default (the environment's
    ``ODRADEK_BOOTSTRAP_SERVERS``, else 127.0.0.1:9092), and again on each client subcommand
    so it may also follow the command, as Kafka's tools take it."""
    if top_level:
        default: str = os.environ.get(BOOTSTRAP_ENV) or DEFAULT_BOOTSTRAP
        help_text = (
            f"HOST:PORT[,HOST:PORT...] of nodes to connect to (default: ${BOOTSTRAP_ENV}, "
            f"else {DEFAULT_BOOTSTRAP})"
        )
    else:
        default = argparse.SUPPRESS  # keep the value (or default) of the top-level option
        help_text = "HOST:PORT[,HOST:PORT...] of nodes to connect to"
    parser.add_argument(
        "--bootstrap-server",
        "--bootstrap-servers",
        dest="bootstrap_server",
        metavar="HOST:PORT[,...]",
        type=bootstrap_servers,
        default=default,
        help=help_text,
    )
    parser.add_argument(
        "--command-config",
        dest="command_config",
        metavar="FILE",
        type=Path,
        default=None if top_level else argparse.SUPPRESS,
        help="Kafka client properties: security.protocol, ssl.truststore.location, "
        "ssl.keystore.location (PEM), ... (docs/security.md)",
    )


def client_security(args: argparse.Namespace) -> dict[str, Any]:
    """The SDK's security keywords from ``--command-config`` (empty without one). Raises
    :class:`InputError` for an unreadable file, an unknown property or an unreadable
    certificate."""
    path: Path | None = getattr(args, "command_config", None)
    if path is None:
        return {}
    from odradek.client.security import (
        SecurityConfig,
        from_kafka_properties,
        parse_properties,
    )

    try:
        options = from_kafka_properties(parse_properties(path.read_text()))
        SecurityConfig(**options).channel_credentials()  # check the files now
    except OSError as exc:
        raise InputError(f"--command-config {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise InputError(f"--command-config {path}: {exc}") from None
    return options


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def positive_int(text: str) -> int:
    """argparse type: an integer > 0."""
    value = _int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {value}")
    return value


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {value}")
    return value


def config_pair(text: str) -> tuple[str, str]:
    """argparse type: ``key=value`` (the value may be empty or hold ``=``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def error_line(prog: str, error: BaseException) -> str:
    """The one line a failed command prints: ``odradek topics create: error: NAME: message``."""
    if isinstance(error, OdradekError):
        name, message = error.name, error.message
    elif isinstance(error, InputError):
        name, message = error.name, str(error)
    elif isinstance(error, TimeoutError):
        name, message = "TIMED_OUT", str(error)
    else:
        name, message = type(error).__name__, str(error)
    return f"{prog}: error: {name}: {' '.join(message.split())}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """Rows as lines of left-aligned columns two spaces apart (the last column unpadded)."""
    widths = [len(h) for h in header]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    out = []
    for row in [list(header), *rows]:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])] + [row[-1]]
        out.append((indent + "  ".join(cells)).rstrip())
    return out
