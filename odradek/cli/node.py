"""``odradek node …``: run a broker node; everything after ``node`` goes to ``node.main.main``.

The broker lives in the ``node`` package of the same distribution (``odradek node start
--config FILE``). It is imported only when this command runs, so the other commands work where
the broker's code (or its dependencies) is absent.

``odradek node health --address HOST:PORT`` is the one exception, answered here: it asks the
node's gRPC health service (grpc.health.v1) and exits 0 if the node is SERVING, else prints one
line and exits 1. Container health checks run it (``deploy/docker``). A TLS listener needs
``--command-config FILE`` (Kafka client properties, as the client commands take).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import cast

__all__ = ["add_parser", "run"]

PROG = "odradek node"


def health(argv: list[str]) -> int:
    """``odradek node health``: 0 if the node at ``--address`` says SERVING, else 1."""
    parser = argparse.ArgumentParser(
        prog=f"{PROG} health", description="Ask a node's gRPC health service whether it serves."
    )
    parser.add_argument("--address", required=True, help="the node's HOST:PORT")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds (default 3)")
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="Kafka client properties for a TLS listener (security.protocol=SSL, "
        "ssl.truststore.location, ssl.keystore.location)",
    )
    args = parser.parse_args(argv)
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    credentials = None
    if args.command_config:
        from odradek.client.security import (
            SecurityConfig,
            from_kafka_properties,
            parse_properties,
        )

        try:
            with open(args.command_config) as f:
                options = from_kafka_properties(parse_properties(f.read()))
            credentials = SecurityConfig(**options).channel_credentials()
        except (OSError, ValueError) as exc:
            print(f"{PROG} health: error: --command-config: {exc}", file=sys.stderr)
            return 1
    with (
        grpc.secure_channel(args.address, credentials)
        if credentials is not None
        else grpc.insecure_channel(args.address)
    ) as channel:
        try:
            response = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=args.timeout
            )
        except grpc.RpcError as exc:
            print(f"{PROG} health: {args.address}: {exc.code().name}", file=sys.stderr)
            return 1
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)
    if response.status != health_pb2.HealthCheckResponse.SERVING:
        print(f"{PROG} health: {args.address}: {status}", file=sys.stderr)
        return 1
    return 0


def run(args: argparse.Namespace) -> int:
    """Hand the remaining arguments to the broker's entry point; its exit code."""
    if args.node_args[:1] == ["health"]:
        return health(list(args.node_args[1:]))
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
        help="the broker command and its options, e.g. start --config node.toml",
    )
    p.set_defaults(handler=run, prog=p.prog, parser=p)
