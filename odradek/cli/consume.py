"""``odradek consume TOPIC``: print records, one per line, as ``kafka-console-consumer.sh``.

Where it starts, per partition (all of the topic's partitions unless ``--partition``):

* the log start (``--from-beginning``, ``--offset earliest``, or no option at all);
* the end (``--offset latest``): only records produced from now on;
* offset N (``--offset N``, which needs ``--partition``, as in Kafka);
* the first record at or after a time (``--timestamp MS``, milliseconds since the epoch).

Where it stops: without ``--follow``, at the high watermarks it found when it started (like
``kcat -e``); with ``--follow``, never — Ctrl-C ends it after the poll in progress, closing
the connections cleanly (exit status 130; a second Ctrl-C does not wait). ``--max-messages N``
stops after N records either way.

Each line is the value, preceded, when asked, by Kafka's console-consumer fields separated by
tabs: ``CreateTime:1700000000000``, ``Partition:0``, ``Offset:42``, the key. Bytes that are not
UTF-8 are printed as ``\\xNN`` escapes; a null key or value prints as ``null``. A summary
(``Processed a total of N messages``) goes to standard error. A start offset past the end
says where the partition's log ends.

Kafka's console-consumer ``--property`` (``print.key``, ``print.headers``, ``key.separator``,
``line.separator``, ``null.literal``, ...: :class:`odradek.cli.properties.MessageFormatter`)
and ``--consumer-property`` (Kafka consumer configs mapped to the SDK's ``Consumer``
arguments); kcat's ``-f FORMAT`` (``%t %p %o %k %s %S %K %R %T %h``) and ``-J`` (its JSON
envelope, one line per record) replace that layout.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO, TypeAlias

from odradek.cli.common import (
    add_bootstrap_option,
    client_security,
    config_pair,
    non_negative_int,
    positive_int,
)

if TYPE_CHECKING:
    from odradek.client.types import ConsumerRecord, TopicPartition

__all__ = ["add_parser", "consume", "format_record", "run"]

PROG = "odradek consume"

_POLL_MS = 500

_SignalHandler: TypeAlias = Callable[[int, FrameType | None], Any] | int | signal.Handlers


def _text(data: bytes | None) -> str:
    return "null" if data is None else data.decode("utf-8", "backslashreplace")


def format_record(record: ConsumerRecord, args: argparse.Namespace) -> str:
    """The output line of ``record`` (without its line separator) with the default layout."""
    from odradek.cli.properties import MessageFormatter

    formatter = MessageFormatter(
        print_timestamp=args.print_timestamp,
        print_partition=args.print_partition,
        print_offset=args.print_offset,
        print_key=args.print_key,
        line_separator="",
    )
    return formatter.format(record)


def _writer(args: argparse.Namespace, out: TextIO) -> Callable[[list[ConsumerRecord]], None]:
    """How a poll's records are written: kcat's -J or -f, else Kafka's formatter."""
    from odradek.cli.properties import (
        CONSUMER_PROPERTIES,
        MessageFormatter,
        client_kwargs,
        kcat_format,
        kcat_json,
    )

    parser: argparse.ArgumentParser = args.parser
    try:
        client_kwargs(args.consumer_property, CONSUMER_PROPERTIES, "consumer")
        formatter = MessageFormatter.from_properties(
            args.property,
            print_timestamp=args.print_timestamp,
            print_partition=args.print_partition,
            print_offset=args.print_offset,
            print_key=args.print_key,
        )
    except ValueError as exc:
        parser.error(str(exc))
    if args.json:

        def write_json(records: list[ConsumerRecord]) -> None:
            out.write("".join(f"{kcat_json(record)}\n" for record in records))

        return write_json
    if args.format is not None:
        fmt: str = args.format

        def write_bytes(records: list[ConsumerRecord]) -> None:
            data = b"".join(kcat_format(fmt, record) for record in records)
            buffer = getattr(out, "buffer", None)
            if buffer is None:
                out.write(data.decode("utf-8", "backslashreplace"))
            else:
                out.flush()
                buffer.write(data)
                buffer.flush()

        return write_bytes

    def write_text(records: list[ConsumerRecord]) -> None:
        # One write per poll, not per record: the terminal or pipe gets a poll's lines at once.
        out.write("".join(map(formatter.format, records)))

    return write_text


def _format_type(text: str) -> str:
    from odradek.cli.properties import check_kcat_format

    try:
        return check_kcat_format(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _say_where_the_log_ends(
    consumer: Any, tp: TopicPartition, start: int, end: int, err: TextIO
) -> None:
    """A start offset at or past the end reads nothing: say where the log ends (and starts)."""
    if start < end:
        return
    begin = consumer.beginning_offsets([tp])[tp]
    if start == end:
        print(
            f"{PROG}: offset {start} is the end of {tp.topic}-{tp.partition} (log start "
            f"{begin}, high watermark {end}): no records after it yet",
            file=err,
        )
    else:
        print(
            f"{PROG}: offset {start} is past the end of {tp.topic}-{tp.partition}: its log "
            f"ends at offset {end} (high watermark; log start {begin}); use --offset "
            f"{max(begin, end - 1)} or earlier, or --offset earliest",
            file=err,
        )


def _start_offset(text: str) -> str | int:
    if text in ("earliest", "latest"):
        return text
    return non_negative_int(text)


def consume(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the command, printing to ``out``; the exit code (130 after Ctrl-C)."""
    from odradek.admin import Admin
    from odradek.client.types import TopicPartition
    from odradek.consumer import Consumer
    from odradek.errors import UnknownTopicOrPartitionError

    if args.group is not None:  # a group member (odradek.cli.groups)
        from odradek.cli.groups import consume_group

        if args.partition is not None:
            args.parser.error("--partition cannot be used with --group")
        group_stop = threading.Event()
        restore = _catch_ctrl_c(group_stop)
        try:
            return consume_group(args, out, err, group_stop, format_record)
        finally:
            if restore is not None:
                signal.signal(signal.SIGINT, restore)
    start = args.offset
    if args.from_beginning:
        start = "earliest"
    if isinstance(start, int) and args.partition is None:
        args.parser.error("--offset N needs --partition (the offsets of partitions differ)")
    with Admin(args.bootstrap_server, **client_security(args)) as admin:
        topic = admin.describe_topics([args.topic])[args.topic]
    ids = [p.partition for p in topic.partitions]
    if args.partition is not None:
        if args.partition not in ids:
            raise UnknownTopicOrPartitionError(
                f"topic {args.topic!r} has no partition {args.partition} (it has {len(ids)})"
            )
        ids = [args.partition]
    tps = [TopicPartition(args.topic, p) for p in ids]

    from odradek.cli.properties import CONSUMER_PROPERTIES, client_kwargs

    write = _writer(args, out)
    kwargs = client_kwargs(args.consumer_property, CONSUMER_PROPERTIES, "consumer")
    if args.isolation_level is not None:
        kwargs["isolation_level"] = args.isolation_level
    try:
        consumer = Consumer(args.bootstrap_server, **kwargs, **client_security(args))
    except ValueError as exc:
        args.parser.error(f"--consumer-property: {exc}")
    count = 0
    stop = threading.Event()
    previous = _catch_ctrl_c(stop) if args.follow else None
    try:
        consumer.assign(tps)
        if args.timestamp is not None:
            consumer.seek_to_timestamp(args.timestamp)
        elif start == "latest":
            consumer.seek_to_end()
        elif isinstance(start, int):
            consumer.seek(tps[0], start)
        else:
            consumer.seek_to_beginning()
        ends = None if args.follow else consumer.end_offsets(tps)
        if isinstance(start, int):
            end = ends[tps[0]] if ends is not None else consumer.end_offsets(tps)[tps[0]]
            _say_where_the_log_ends(consumer, tps[0], start, end, err)
        while not stop.is_set() and (args.max_messages is None or count < args.max_messages):
            if ends is not None and all(consumer.position(tp) >= ends[tp] for tp in tps):
                break
            records = consumer.poll(timeout_ms=_POLL_MS)
            if args.max_messages is not None:
                records = records[: args.max_messages - count]
            if records:
                write(records)
                count += len(records)
            out.flush()
    except KeyboardInterrupt:
        stop.set()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        consumer.close()
    print(f"Processed a total of {count} messages", file=err)
    return 130 if stop.is_set() else 0


def _catch_ctrl_c(stop: threading.Event) -> _SignalHandler | None:
    """Make the first Ctrl-C set ``stop`` (the loop ends after the poll in progress, and the
    consumer closes cleanly) and a second one interrupt at once; the previous handler, or
    ``None`` off the main thread (where handlers cannot be set)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    return signal.signal(signal.SIGINT, on_sigint)


def run(args: argparse.Namespace) -> int:
    """The ``consume`` handler."""
    return consume(args, sys.stdout, sys.stderr)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``consume`` on the ``odradek`` command's subparsers."""
    p = sub.add_parser(
        "consume",
        help="print the records of a topic",
        description=(
            "Print the records of TOPIC, one per line: from the beginning unless told otherwise, "
            "up to the end found at start unless --follow. Exit code: 0 done, 1 an error, "
            "2 usage error, 130 interrupted."
        ),
    )
    add_bootstrap_option(p, top_level=False)
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("--partition", type=non_negative_int, metavar="P", help="only partition P")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--from-beginning", action="store_true", help="start at the log start (the default)"
    )
    where.add_argument(
        "--offset",
        type=_start_offset,
        default="earliest",
        metavar="N|earliest|latest",
        help="start at offset N (with --partition), the log start, or the end",
    )
    where.add_argument(
        "--timestamp",
        type=non_negative_int,
        metavar="MS",
        help="start at the first record at or after MS milliseconds since the epoch",
    )
    p.add_argument("--max-messages", type=positive_int, metavar="N", help="stop after N records")
    p.add_argument(
        "--isolation-level",
        choices=("read_uncommitted", "read_committed"),
        help="read_committed: only committed transactions' records, up to the last stable "
        "offset (Kafka's isolation.level; default read_uncommitted)",
    )
    p.add_argument(
        "--follow", action="store_true", help="keep waiting for new records (Ctrl-C stops)"
    )
    p.add_argument("--print-key", action="store_true", help="print the key before the value")
    p.add_argument("--print-offset", action="store_true", help="print Offset:N first")
    p.add_argument("--print-partition", action="store_true", help="print Partition:P first")
    p.add_argument(
        "--print-timestamp", action="store_true", help="print CreateTime:MS (or LogAppendTime:MS)"
    )
    p.add_argument(
        "--property",
        type=config_pair,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="output layout, as Kafka's console consumer: print.timestamp, print.partition, "
        "print.offset, print.headers, print.key, print.value, key.separator, line.separator, "
        "headers.separator, null.literal (repeatable)",
    )
    p.add_argument(
        "--consumer-property",
        type=config_pair,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Kafka consumer config: fetch.max.bytes, max.partition.fetch.bytes, "
        "fetch.max.wait.ms, max.poll.records, request.timeout.ms, ... (repeatable)",
    )
    layout = p.add_mutually_exclusive_group()
    layout.add_argument(
        "-f",
        "--format",
        type=_format_type,
        metavar="FORMAT",
        help="kcat's format string: %%t topic, %%p partition, %%o offset, %%k key, %%s value, "
        "%%S value length, %%K key length, %%R value length as binary int32, %%T timestamp, "
        "%%h headers, \\n \\t escapes",
    )
    layout.add_argument(
        "-J", "--json", action="store_true", help="kcat's JSON envelope, one line per record"
    )
    p.add_argument(
        "--group", metavar="GROUP", help="consume as a member of GROUP, committing its offsets"
    )
    p.set_defaults(handler=run, prog=p.prog, parser=p)
