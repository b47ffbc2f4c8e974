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
(``Processed a total of N messages``) goes to standard error.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO, TypeAlias

from odradek.cli.common import add_bootstrap_option, non_negative_int, positive_int

if TYPE_CHECKING:
    from odradek.client.types import ConsumerRecord

__all__ = ["add_parser", "consume", "format_record", "run"]

PROG = "odradek consume"

_POLL_MS = 500

_SignalHandler: TypeAlias = Callable[[int, FrameType | None], Any] | int | signal.Handlers


def _text(data: bytes | None) -> str:
    return "null" if data is None else data.decode("utf-8", "backslashreplace")


def format_record(record: ConsumerRecord, args: argparse.Namespace) -> str:
    """The output line of ``record``."""
    fields = []
    if args.print_timestamp:
        fields.append(f"{record.timestamp_type.name.title().replace('_', '')}:{record.timestamp}")
    if args.print_partition:
        fields.append(f"Partition:{record.partition}")
    if args.print_offset:
        fields.append(f"Offset:{record.offset}")
    if args.print_key:
        fields.append(_text(record.key))
    fields.append(_text(record.value))
    return "\t".join(fields)


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
    with Admin(args.bootstrap_server) as admin:
        topic = admin.describe_topics([args.topic])[args.topic]
    ids = [p.partition for p in topic.partitions]
    if args.partition is not None:
        if args.partition not in ids:
            raise UnknownTopicOrPartitionError(
                f"topic {args.topic!r} has no partition {args.partition} (it has {len(ids)})"
            )
        ids = [args.partition]
    tps = [TopicPartition(args.topic, p) for p in ids]

    count = 0
    stop = threading.Event()
    previous = _catch_ctrl_c(stop) if args.follow else None
    consumer = Consumer(args.bootstrap_server)
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
        while not stop.is_set() and (args.max_messages is None or count < args.max_messages):
            if ends is not None and all(consumer.position(tp) >= ends[tp] for tp in tps):
                break
            for record in consumer.poll(timeout_ms=_POLL_MS):
                print(format_record(record, args), file=out)
                count += 1
                if args.max_messages is not None and count >= args.max_messages:
                    break
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
        "--follow", action="store_true", help="keep waiting for new records (Ctrl-C stops)"
    )
    p.add_argument("--print-key", action="store_true", help="print the key before the value")
    p.add_argument("--print-offset", action="store_true", help="print Offset:N first")
    p.add_argument("--print-partition", action="store_true", help="print Partition:P first")
    p.add_argument(
        "--print-timestamp", action="store_true", help="print CreateTime:MS (or LogAppendTime:MS)"
    )
    p.add_argument(
        "--group", metavar="GROUP", help="consume as a member of GROUP, committing its offsets"
    )
    p.set_defaults(handler=run, prog=p.prog, parser=p)
