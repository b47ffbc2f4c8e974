"""The ``odradek`` command line.

Each subcommand lives in its own module with ``add_parser(subparsers)`` registering it and a
handler returning the exit code. Errors a user can cause print one line on stderr and exit 2
(usage) or 1 (anything else); no tracebacks. A handler may raise an
:class:`~odradek.errors.OdradekError` (or ``TimeoutError``): the dispatcher prints it as
``odradek topics create: error: TOPIC_ALREADY_EXISTS: <message>`` and exits 1.

Commands: ``topics``, ``produce``, ``consume``, ``cluster``, ``get-offsets``,
``delete-records``, ``leader-election``, ``reassign``, ``groups``, ``share-groups``,
``transactions`` (the
client SDK; ``docs/cli.md``),
``console`` (the web console; ``docs/console.md``),
``node`` (runs a broker), ``dump-log`` (reads segment files). ``--bootstrap-server`` may come
before the command or after it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from odradek import __version__
from odradek.cli.common import InputError, add_bootstrap_option, error_line
from odradek.errors import OdradekError

__all__ = ["main"]

_CLIENT_COMMANDS = frozenset(
    {
        "topics",
        "produce",
        "consume",
        "cluster",
        "get-offsets",
        "delete-records",
        "leader-election",
        "reassign",
        "acls",
        "users",
        "groups",
        "share-groups",
        "transactions",
        "console",
    }
)


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line (``odradek dump-log: error: …``), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="odradek", description="odradek: a replicated, partitioned commit log")
    parser.add_argument("--version", action="version", version=f"odradek {__version__}")
    add_bootstrap_option(parser, top_level=True)
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=_Parser
    )
    from odradek.cli import (
        acls,
        cluster,
        consume,
        dump_log,
        leader_election,
        node,
        offsets,
        produce,
        reassign,
        topics,
        users,
    )

    topics.add_parser(sub)
    produce.add_parser(sub)
    consume.add_parser(sub)
    cluster.add_parser(sub)
    offsets.add_parser(sub)
    leader_election.add_parser(sub)
    reassign.add_parser(sub)
    acls.add_parser(sub)
    users.add_parser(sub)
    node.add_parser(sub)
    dump_log.add_parser(sub)
    from odradek.cli import groups

    groups.add_parser(sub)
    from odradek.cli import share_groups

    share_groups.add_parser(sub)
    from odradek.cli import transactions

    transactions.add_parser(sub)
    from odradek.cli import console

    console.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    from odradek.cli.kafka_shapes import rewrite

    parser = _parser()
    try:
        # kafka-acls.sh's and kafka-configs.sh's shapes of `acls` and `users`
        argv = rewrite(sys.argv[1:] if argv is None else argv)
    except InputError as exc:
        print(error_line("odradek", exc), file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if args.command in _CLIENT_COMMANDS:
        # gRPC's C core logs connection events (a node going away, …) at INFO on stderr;
        # a command prints its errors as one line of its own. An explicit setting wins.
        os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    try:
        code: int = args.handler(args)
    except BrokenPipeError:
        # `odradek dump-log … | head`: the reader went away; that is not an error of ours.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return 130
    except (OdradekError, InputError, TimeoutError) as exc:
        prog: str = getattr(args, "prog", "odradek")
        print(error_line(prog, exc), file=sys.stderr)
        return 1
    return code
