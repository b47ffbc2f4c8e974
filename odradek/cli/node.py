"""``odradek node …``: run a broker node; everything after ``node`` goes to ``node.main.main``.

The broker lives in the ``node`` package of the same distribution (``odradek node start
--config FILE``). It is imported only when this command runs, so the other commands work where
the broker's code (or its dependencies) is absent.

``odradek node health [--bootstrap-server HOST:PORT[,...]]`` is the one exception, answered
here: it asks each node's gRPC health service (grpc.health.v1), prints ``HOST:PORT: SERVING``
for each that serves, and exits 0 if all do, else prints one line per other node and exits 1.
``--address`` is its old, deprecated name. Container health checks run it (``deploy/docker``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from typing import NoReturn, cast

from odradek.cli.common import BOOTSTRAP_ENV, DEFAULT_BOOTSTRAP, bootstrap_servers

__all__ = ["add_parser", "run"]

PROG = "odradek node"


class _HealthParser(argparse.ArgumentParser):
    """Usage errors on one line, as the other commands print them."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def health(argv: list[str], default_bootstrap: str = DEFAULT_BOOTSTRAP) -> int:
    """``odradek node health``: asks each node of ``--bootstrap-server`` whether it serves;
    prints ``HOST:PORT: SERVING`` for each that does (stdout) and the state or error of each
    that does not (stderr); 0 if all serve, else 1."""
    parser = _HealthParser(
        prog=f"{PROG} health",
        description="Ask nodes' gRPC health service whether they serve (exit 0 if all do).",
    )
    parser.add_argument(
        "--bootstrap-server",
        "--bootstrap-servers",
        dest="bootstrap_server",
        metavar="HOST:PORT[,...]",
        type=bootstrap_servers,
        help=(
            f"the nodes to ask (default: the command's --bootstrap-server, ${BOOTSTRAP_ENV}, "
            f"else {DEFAULT_BOOTSTRAP})"
        ),
    )
    parser.add_argument(
        "--address",
        type=bootstrap_servers,
        metavar="HOST:PORT",
        help="deprecated: use --bootstrap-server",
    )
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds (default 3)")
    parser.add_argument("positional", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.positional:
        parser.exit(
            2,
            f"{parser.prog}: error: the node's address goes after --bootstrap-server: "
            f"{parser.prog.removesuffix(' health')} health --bootstrap-server "
            f"{args.positional[0]}\n",
        )
    if args.address is not None:
        print(
            f"{parser.prog}: warning: --address is deprecated, use --bootstrap-server",
            file=sys.stderr,
        )
    servers = (args.bootstrap_server or args.address or default_bootstrap).split(",")
    # gRPC's C core would log the connection failures this command reports on one line
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    serving = 0
    for address in servers:
        with grpc.insecure_channel(address) as channel:
            try:
                response = health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(service=""), timeout=args.timeout
                )
            except grpc.RpcError as exc:
                print(f"{parser.prog}: {address}: {exc.code().name}", file=sys.stderr)
                continue
        status = health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)
        if response.status != health_pb2.HealthCheckResponse.SERVING:
            print(f"{parser.prog}: {address}: {status}", file=sys.stderr)
            continue
        print(f"{address}: {status}")
        serving += 1
    return 0 if serving == len(servers) else 1


def run(args: argparse.Namespace) -> int:
    """Hand the remaining arguments to the broker's entry point; its exit code."""
    if args.node_args[:1] == ["health"]:
        default = getattr(args, "bootstrap_server", None) or DEFAULT_BOOTSTRAP
        return health(list(args.node_args[1:]), default)
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
        help="run a broker node (odradek node start --config FILE), or check one (health)",
        description=(
            "Run an odradek broker node. The arguments after 'node' are the broker's own: "
            "see 'odradek node start --help'."
        ),
    )
    p.add_argument(
        "node_args",
        nargs=argparse.REMAINDER,
        metavar="ARGS",
        help="the broker command and its options, e.g. start --config server.properties",
    )
    p.set_defaults(handler=run, prog=p.prog, parser=p)
