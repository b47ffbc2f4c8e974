"""``odradek produce TOPIC``: send each line of standard input as a record, as
``kafka-console-producer.sh`` does.

Lines are read as bytes; the line ending (``\\n`` or ``\\r\\n``) is not part of the value. With
``--key-separator SEP`` each line is ``KEY<SEP>VALUE``, split at the first ``SEP``; a line
without it is an error. Records go to ``--partition`` if given, else where the producer's
partitioner puts them (keyed records: Kafka's murmur2 partition). The command waits until every
record is acknowledged as ``--acks`` asks; if any failed it prints the first error on one line
(with how many records failed) and exits 1.

Kafka's console-producer options: ``--property`` (``parse.key``, ``key.separator``,
``parse.headers``, ``headers.delimiter``, ``headers.separator``, ``headers.key.separator``,
``null.marker``, ``ignore.error``: :class:`odradek.cli.properties.LineReader`) and
``--producer-property`` (Kafka producer configs such as ``delivery.timeout.ms`` mapped to the
SDK's ``Producer`` arguments); kcat's ``-H NAME=VALUE`` adds a header to every record. The
producer's retry warnings (logger ``odradek.producer``) are shown on stderr as it retries, as
Kafka's console producer shows its client's.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

from odradek.cli.common import InputError, add_bootstrap_option, config_pair, non_negative_int
from odradek.client.futures import FutureRecordMetadata
from odradek.producer import SendManyFuture

if TYPE_CHECKING:
    from odradek.cli.properties import LineReader

__all__ = ["add_parser", "produce_lines", "run"]

PROG = "odradek produce"

_ACKS = {"0": 0, "1": 1, "-1": -1, "all": -1}
# The most bytes of input read at once: the lines of one read go in one send_many call.
_CHUNK_BYTES = 1 << 20


class _StderrLines(logging.Handler):
    """Each record as one line on the current ``sys.stderr``."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(" ".join(self.format(record).split()), file=sys.stderr, flush=True)
        except Exception:
            self.handleError(record)


def show_retry_warnings(prog: str = PROG) -> None:
    """Print the SDK producer's warnings (one per retry, naming the broker's error) on stderr,
    one line each: ``odradek produce: warning: ...``. Idempotent."""
    logger = logging.getLogger("odradek.producer")
    if any(isinstance(h, _StderrLines) for h in logger.handlers):
        return
    handler = _StderrLines(logging.WARNING)
    handler.setFormatter(logging.Formatter(f"{prog}: warning: %(message)s"))
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.WARNING:
        logger.setLevel(logging.WARNING)


def _reader(args: argparse.Namespace) -> LineReader:
    from odradek.cli.properties import LineReader

    pairs = list(args.property)
    if args.key_separator:
        pairs = [("parse.key", "true"), ("key.separator", args.key_separator), *pairs]
    parser: argparse.ArgumentParser = args.parser
    try:
        return LineReader.from_properties(pairs)
    except ValueError as exc:
        parser.error(str(exc))


def _producer_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    from odradek.cli.properties import PRODUCER_PROPERTIES, client_kwargs

    kwargs: dict[str, Any] = {
        "acks": _ACKS[args.acks],
        "compression": args.compression,
        "linger_ms": args.linger_ms,
    }
    try:
        kwargs.update(client_kwargs(args.producer_property, PRODUCER_PROPERTIES, "producer"))
    except ValueError as exc:
        args.parser.error(str(exc))
    return kwargs


def produce_lines(args: argparse.Namespace, lines: BinaryIO) -> int:
    """Send every line of ``lines``; the exit code. Raises the first delivery error."""
    from odradek.admin import Admin
    from odradek.errors import OdradekError, UnknownTopicOrPartitionError
    from odradek.producer import Producer

    reader = _reader(args)
    kwargs = _producer_kwargs(args)
    extra_headers = tuple((name, value.encode()) for name, value in args.header)
    with Admin(args.bootstrap_server) as admin:
        topic = admin.describe_topics([args.topic])[args.topic]
    if args.partition is not None and args.partition >= len(topic.partitions):
        raise UnknownTopicOrPartitionError(
            f"topic {args.topic!r} has no partition {args.partition} "
            f"(it has {len(topic.partitions)})"
        )
    try:
        producer = Producer(args.bootstrap_server, **kwargs)
    except ValueError as exc:
        args.parser.error(f"--producer-property: {exc}")
    show_retry_warnings()
    pending: deque[FutureRecordMetadata | SendManyFuture] = deque()
    failures = 0
    first_error: BaseException | None = None
    sent = 0
    clean = False
    headers_per_record = reader.parse_headers or bool(extra_headers)

    def settle(block: bool) -> None:
        """Count the failures of finished sends (all of them with ``block``), keeping the
        list of pending ones short on long inputs."""
        nonlocal failures, first_error
        while pending and (block or pending[0].done()):
            done = pending.popleft()
            error = done.exception()
            if error is not None:
                failures += done.count if isinstance(done, SendManyFuture) else 1
                first_error = first_error or error

    try:
        number = 0
        for chunk in _chunks(lines, _CHUNK_BYTES):
            keys: list[bytes | None] = []
            values: list[bytes | None] = []
            headers: list[tuple[tuple[str, bytes | None], ...]] = []
            bad: InputError | None = None
            for raw in chunk:
                number += 1
                try:
                    parsed = reader.parse(raw, number)
                except ValueError as exc:
                    separator = reader.key_separator.decode("utf-8", "backslashreplace")
                    bad = InputError(
                        f"{exc} {separator!r}" if "key separator" in str(exc) else str(exc)
                    )
                    break
                keys.append(parsed.key)
                values.append(parsed.value)
                headers.append(parsed.headers)
            if values and not headers_per_record:
                # The bulk path: the chunk's records encoded in one call, one future for all.
                pending.append(
                    producer.send_many(
                        args.topic,
                        values,
                        keys if reader.parse_key else None,
                        partition=args.partition,
                    )
                )
            else:
                for key, value, record_headers in zip(keys, values, headers, strict=True):
                    pending.append(
                        producer.send(
                            args.topic,
                            value,
                            key=key,
                            headers=record_headers + extra_headers,
                            partition=args.partition,
                        )
                    )
            sent += len(values)
            settle(block=False)
            if bad is not None:
                producer.flush()  # what came before the bad line is sent, as Kafka's tool
                raise bad
        producer.flush()
        clean = True
    finally:
        producer.close(timeout=None if clean else 0)
    settle(block=True)
    if first_error is not None:
        if isinstance(first_error, OdradekError):
            raise type(first_error)(
                f"{first_error.message} ({failures} of {sent} records not delivered)"
            )
        raise first_error
    return 0


def _chunks(lines: BinaryIO, size: int) -> Iterator[list[bytes]]:
    """The lines of ``lines`` (without their line endings, ``\n`` or ``\r\n``) in lists:
    whatever one read returned (``read1``: at most ``size`` bytes, at most one read of the
    underlying file, so a line typed at a terminal or written slowly into a pipe is sent at
    once, while a fast pipe is read in large chunks for the bulk path)."""
    read = getattr(lines, "read1", lines.read)
    partial = b""
    while True:
        data = read(size)
        if not data:
            if partial:
                yield [partial[:-1] if partial.endswith(b"\r") else partial]
            return
        parts = (partial + data).split(b"\n")
        partial = parts.pop()
        if parts:
            yield [line[:-1] if line.endswith(b"\r") else line for line in parts]


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
    p.add_argument(
        "--property",
        type=config_pair,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="how lines are read, as Kafka's console producer: parse.key, key.separator, "
        "parse.headers, headers.delimiter, headers.separator, headers.key.separator, "
        "null.marker, ignore.error (repeatable)",
    )
    p.add_argument(
        "--producer-property",
        type=config_pair,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Kafka producer config: acks, linger.ms, batch.size, compression.type, retries, "
        "delivery.timeout.ms, request.timeout.ms, max.block.ms, max.request.size, ... "
        "(repeatable)",
    )
    p.add_argument(
        "-H",
        "--header",
        type=config_pair,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="add this header to every record, as kcat -H (repeatable)",
    )
    p.set_defaults(handler=run, prog=p.prog, parser=p)
