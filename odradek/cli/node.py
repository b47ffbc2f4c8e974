"""``odradek node …``: run a broker node; everything after ``node`` goes to ``node.main.main``.

The broker lives in the ``node`` package of the same distribution (``odradek node start
--config FILE``). It is imported only when this command runs, so the other commands work where
the broker's code (or its dependencies) is absent.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import cast

__all__ = ["add_parser", "run"]

PROG = "odradek node"


def run(args: argparse.Namespace) -> int:
    """Hand the remaining arguments to the broker's entry point; its exit code."""
    try:
        module = importlib.import_module("node.main")
    except ModuleNotFoundError as exc:
        if exc.name not in ("node", "node.main"):
            raise
        print(
            f"{PROG}: error: the broker is not installed here (no module {exc.name!r})",
            file=sys.stderr,
        )
        return 1
    entry = cast(Callable[[list[str]], int], module.main)
    return int(entry(list(args.node_args)))


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``node`` on the ``odradek`` command's subparsers."""
    p = sub.add_parser(
        "node",
        help="run a broker node (odradek node start --config FILE)",
        description=(
            "Run an odradek broker node. The arguments after 'node' are the broker's own: "
            "see 'odradek node start --help'."
        ),
    )
    p.add_argument(
        "node_args",
        nargs=argparse.REMAINDER,
        metavar="ARGS",
        help="the broker command and its options, e.g. start --config node.toml",
    )
    p.set_defaults(handler=run, prog=p.prog, parser=p)
