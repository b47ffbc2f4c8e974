"""``odradek node start``: run a node in the foreground until SIGTERM or SIGINT.

Configuration comes from defaults, then ``--config FILE`` (a Java properties file such as
Kafka's ``server.properties``: see ``node.kafka_config``), then the
environment (``ODRADEK_NODE_ID``, ``ODRADEK_LOG_DIRS``, ``ODRADEK_ZOOKEEPER_CONNECT``,
``ODRADEK_LISTEN_ADDRESS``, ``ODRADEK_BROKER_RACK``, ... any property as ``ODRADEK_`` plus its
name in upper case with ``_`` for ``.``), then flags and ``--override key=value``. Once serving,
it prints one line ``odradek node <id> listening on <host>:<port>`` on stdout. SIGTERM or SIGINT
triggers a controlled shutdown. Exit status: 0 after a clean stop, 1 when the node cannot start
(one line on stderr), 2 for usage errors.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path

from node.config import (
    LOG_FORMATS,
    config_from_properties,
    parse_properties,
    properties_from_env,
)
from node.log_format import configure_logging
from node.server import Node
from odradek.errors import OdradekError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"odradek node: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="odradek node", description="Run an odradek broker node.")
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="start a node in the foreground")
    start.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help=(
            "a Java properties file such as Kafka's config/server.properties (key=value, "
            "key: value or key value; # comments; \\ continuations); Kafka's broker names are "
            "read where odradek has the setting, Kafka settings it has no use for are logged "
            "once and ignored, any other unknown name fails"
        ),
    )
    start.add_argument("--node-id", type=int, help="node.id")
    start.add_argument("--listen", help="listen.address, HOST:PORT (port 0: any free port)")
    start.add_argument(
        "--kafka-listen",
        help=(
            "kafka.listen.address, HOST:PORT: also serve Kafka's wire protocol there, on a "
            "PLAINTEXT listener named KAFKA (port 0: any free port)"
        ),
    )
    start.add_argument("--log-dirs", help="log.dirs, comma-separated")
    start.add_argument("--zookeeper", help="zookeeper.connect, HOST:PORT[,...][/chroot]")
    start.add_argument("--rack", help="broker.rack")
    start.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any node property (repeatable)",
    )
    start.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    start.add_argument(
        "--log-format", choices=LOG_FORMATS, help="log.format: text (default) or json lines"
    )
    return parser


def properties_from_args(args: argparse.Namespace) -> dict[str, str]:
    props: dict[str, str] = {}
    if args.config is not None:
        props.update(parse_properties(args.config.read_text()))
    props.update(properties_from_env(os.environ))
    flags = {
        "node.id": args.node_id,
        "listen.address": args.listen,
        "kafka.listen.address": args.kafka_listen,
        "log.dirs": args.log_dirs,
        "zookeeper.connect": args.zookeeper,
        "broker.rack": args.rack,
        "log.format": args.log_format,
    }
    props.update({k: str(v) for k, v in flags.items() if v is not None})
    for item in args.override:
        key, sep, value = item.partition("=")
        if not sep:
            raise OdradekError(f"--override needs KEY=VALUE, got {item!r}")
        props[key.strip()] = value.strip()
    return props


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = config_from_properties(properties_from_args(args))
    except (OdradekError, OSError) as e:
        print(f"odradek node: error: {e}", file=sys.stderr)
        return 1
    configure_logging(args.log_level, config.log_format, config.node_id)
    if config.ignored_kafka_configs:
        logging.getLogger(__name__).warning(
            "ignoring Kafka settings odradek has no use for: %s",
            ", ".join(config.ignored_kafka_configs),
        )
    node = Node(config)

    def _stop(signum: int, frame: object) -> None:
        logging.getLogger(__name__).info("signal %d: stopping", signum)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        threading.Thread(target=node.stop, name="stopper").start()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        node.start()
    except Exception as e:
        print(f"odradek node: error: cannot start node {config.node_id}: {e}", file=sys.stderr)
        node.stop(controlled=False)
        return 1
    listening = ", ".join(
        f"{listener.name}://{listener.host}:{node.ports[listener.name]}"
        for listener in config.effective_listeners
    )
    print(f"odradek node {config.node_id} listening on {listening}", flush=True)
    while not node.wait(1.0):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
