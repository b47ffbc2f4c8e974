"""The ``odradek`` command line.

Each subcommand lives in its own module with ``add_parser(subparsers)`` registering it and a
handler returning the exit code. Errors a user can cause print one line on stderr and exit 2
(usage) or 1 (anything else); no tracebacks.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from odradek import __version__

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line (``odradek dump-log: error: …``), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="odradek", description="odradek: a replicated, partitioned commit log")
    parser.add_argument("--version", action="version", version=f"odradek {__version__}")
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=_Parser
    )
    from odradek.cli import dump_log

    dump_log.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
    except BrokenPipeError:
        # `odradek dump-log … | head`: the reader went away; that is not an error of ours.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return 130
    return code
