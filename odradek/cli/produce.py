"""``odradek produce TOPIC``: send each line of standard input as a record, as
``kafka-console-producer.sh`` does.

Lines are read as bytes; the line ending (``\\n`` or ``\\r\\n``) is not part of the value. With
``--key-separator SEP`` each line is ``KEY<SEP>VALUE``, split at the first ``SEP``; a line
without it is an error. Records go to ``--partition`` if given, else where the producer's
partitioner puts them (keyed records: Kafka's murmur2 partition). The command waits until every
record is acknowledged as ``--acks`` asks; if any failed it prints the first error on one line
(with how many records failed) and exits 1.
"""

from __future__ import annotations

import argparse
import sys
from collections import deque
from concurrent.futures import Future
from typing import TYPE_CHECKING, BinaryIO

from odradek.cli.common import (
    InputError,
    add_bootstrap_option,
    client_security,
    non_negative_int,
)

if TYPE_CHECKING:
    from odradek.client.types import RecordMetadata

__all__ = ["add_parser", "produce_lines", "run"]

PROG = "odradek produce"

_ACKS = {"0": 0, "1": 1, "-1": -1, "all": -1}


def _line_value(line: bytes) -> bytes:
    if line.endswith(b"\n"):
        line = line[:-1]
        if line.endswith(b"\r"):
            line = line[:-1]
    return line


def produce_lines(args: argparse.Namespace, lines: BinaryIO) -> int:
    """Send every line of ``lines``; the exit code. Raises the first delivery error."""
    from odradek.admin import Admin
    from odradek.errors import OdradekError, UnknownTopicOrPartitionError
    from odradek.producer import Producer

    with Admin(args.bootstrap_server, **client_security(args)) as admin:
        topic = admin.describe_topics([args.topic])[args.topic]
    if args.partition is not None and args.partition >= len(topic.partitions):
        raise UnknownTopicOrPartitionError(
            f"topic {args.topic!r} has no partition {args.partition} "
            f"(it has {len(topic.partitions)})"
        )
    separator: bytes | None = args.key_separator.encode() if args.key_separator else None
    producer = Producer(
        args.bootstrap_server,
        **client_security(args),
        acks=_ACKS[args.acks],
        compression=args.compression,
        linger_ms=args.linger_ms,
    )
    pending: deque[Future[RecordMetadata]] = deque()
    failures = 0
    first_error: BaseException | None = None
    sent = 0
    clean = False
    try:
        for number, raw in enumerate(lines, start=1):
            line = _line_value(raw)
            key: bytes | None = None
            if separator is not None:
                key, found, value = line.partition(separator)
                if not found:
                    producer.flush()
                    raise InputError(f"line {number} has no key separator {args.key_separator!r}")
            else:
                value = line
            pending.append(producer.send(args.topic, value, key=key, partition=args.partition))
            sent += 1
            while pending and pending[0].done():  # keep memory flat on long inputs
                error = pending.popleft().exception()
                if error is not None:
                    failures += 1
                    first_error = first_error or error
        producer.flush()
        clean = True
    finally:
        producer.close(timeout=None if clean else 0)
    for future in pending:
        error = future.exception()
        if error is not None:
            failures += 1
            first_error = first_error or error
    if first_error is not None:
        if isinstance(first_error, OdradekError):
            raise type(first_error)(
                f"{first_error.message} ({failures} of {sent} records not delivered)"
            )
        raise first_error
    return 0


def run(args: argparse.Namespace) -> int:
    """The ``produce`` handler: reads standard input."""
    return produce_lines(args, sys.stdin.buffer)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``produce`` on the ``odradek`` command's subparsers."""
    p = sub.add_parser(
        "produce",
        help="send lines of standard input to a topic",
        description=(
            "Send each line of standard input to TOPIC as one record (with --key-separator, "
            "lines are KEY<SEP>VALUE). Exit code: 0 every record acknowledged, 1 an error, "
            "2 usage error."
        ),
    )
    add_bootstrap_option(p, top_level=False)
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument(
        "--key-separator",
        metavar="SEP",
        help="split each line at the first SEP into key and value",
    )
    p.add_argument(
        "--acks",
        choices=sorted(_ACKS),
        default="all",
        help="0: do not wait; 1: the leader appended; all/-1: every in-sync replica (default)",
    )
    p.add_argument("--partition", type=non_negative_int, metavar="P", help="send every line to P")
    p.add_argument(
        "--compression",
        choices=["none", "gzip", "snappy", "lz4", "zstd"],
        default="none",
        help="batch compression (default none)",
    )
    p.add_argument(
        "--linger-ms",
        type=non_negative_int,
        default=5,
        metavar="MS",
        help="how long a batch waits for more lines (default 5)",
    )
    p.set_defaults(handler=run, prog=p.prog, parser=p)
