"""``odradek get-offsets`` and ``odradek delete-records``, as ``kafka-get-offsets.sh`` and
``kafka-delete-records.sh``.

``get-offsets [--topic REGEX] [--partitions 0,2-4]
[--time earliest|latest|max-timestamp|-1|-2|-3|MS]`` prints ``topic:partition:offset`` for
each matching partition, sorted: the log start offset (``earliest``/``-2``), the high watermark
(``latest``/``-1``, the default), the offset of the record with the largest timestamp
(``max-timestamp``/``-3``, KIP-734), or the first offset whose record's timestamp is at or
after ``MS`` (a partition with no such record prints no line, as Kafka's tool does).
``--topic`` is a regular expression matched against whole names (all topics when left out).

``delete-records --offset-json-file FILE`` reads Kafka's JSON::

    {"partitions": [{"topic": "t", "partition": 0, "offset": 10}], "version": 1}

and moves each partition's log start offset up to the offset given (-1: the high watermark),
printing ``partition: t-0  low_watermark: 10`` or ``partition: t-0  error: ...`` per partition;
exit 1 if any failed. A file that cannot be read or is not that JSON is one ``INVALID_INPUT``
line, exit 1.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from odradek.cli.common import InputError, add_bootstrap_option, client_security

if TYPE_CHECKING:
    from odradek.client.types import TopicPartition

__all__ = ["add_parser", "parse_partition_list", "parse_time", "read_offset_json"]

EARLIEST = -2
LATEST = -1
MAX_TIMESTAMP = -3


def parse_time(text: str) -> int:
    """argparse type for ``--time``: ``earliest``/``-2``, ``latest``/``-1``,
    ``max-timestamp``/``-3`` or a timestamp in milliseconds (>= 0)."""
    value = text.strip().lower()
    if value == "earliest":
        return EARLIEST
    if value == "latest":
        return LATEST
    if value == "max-timestamp":
        return MAX_TIMESTAMP
    try:
        ms = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected earliest, latest, max-timestamp, -1, -2, -3 or a timestamp in ms, "
            f"not {text!r}"
        ) from None
    if ms < MAX_TIMESTAMP:
        raise argparse.ArgumentTypeError(f"expected -1, -2, -3 or a timestamp >= 0, not {ms}")
    return ms


def parse_partition_list(text: str) -> list[int]:
    """argparse type for ``--partitions``: ``0,2,5-7`` (ids and inclusive ranges)."""
    out: list[int] = []
    for item in text.split(","):
        low, dash, high = item.strip().partition("-")
        try:
            first = int(low)
            last = int(high) if dash else first
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected partition ids or ranges like 0,2,5-7, not {text!r}"
            ) from None
        if first < 0 or last < first:
            raise argparse.ArgumentTypeError(f"bad partition range {item.strip()!r}")
        out.extend(range(first, last + 1))
    return sorted(set(out))


def _topic_regex(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"not a regular expression: {text!r} ({exc})") from None


def run_get_offsets(args: argparse.Namespace) -> int:
    return get_offsets(args, sys.stdout)


def get_offsets(args: argparse.Namespace, out: TextIO) -> int:
    """Print the offsets; raises ``UnknownTopicOrPartitionError`` when nothing matches."""
    from odradek.admin import Admin
    from odradek.client.types import TopicPartition
    from odradek.consumer import Consumer
    from odradek.errors import UnknownTopicOrPartitionError

    with Admin(args.bootstrap_server, **client_security(args)) as admin:
        cluster = admin.cluster_metadata()
    tps: list[TopicPartition] = []
    for name in sorted(cluster.topics):
        if args.topic is not None and not args.topic.fullmatch(name):
            continue
        tps.extend(
            TopicPartition(name, p.partition)
            for p in cluster.topics[name].partitions
            if args.partitions is None or p.partition in args.partitions
        )
    if not tps:
        raise UnknownTopicOrPartitionError(
            "Could not match any topic-partitions with the specified filters"
        )
    with Consumer(args.bootstrap_server, **client_security(args)) as consumer:
        if args.time == EARLIEST:
            offsets: dict[TopicPartition, int | None] = dict(consumer.beginning_offsets(tps))
        elif args.time == LATEST:
            offsets = dict(consumer.end_offsets(tps))
        elif args.time == MAX_TIMESTAMP:
            top = consumer.max_timestamp_offsets(tps)
            offsets = {tp: (o.offset if o is not None else None) for tp, o in top.items()}
        else:
            found = consumer.offsets_for_times(dict.fromkeys(tps, args.time))
            offsets = {tp: (o.offset if o is not None else None) for tp, o in found.items()}
    for tp in tps:
        offset = offsets.get(tp)
        if offset is not None:
            print(f"{tp.topic}:{tp.partition}:{offset}", file=out)
    return 0


def _load_json(path: str) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path} is not JSON: {exc}") from None


def _int_field(entry: Any, name: str, path: str, minimum: int) -> int:
    value = entry.get(name) if isinstance(entry, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(f"{path}: each partition needs an integer {name!r} >= {minimum}")
    return value


def read_offset_json(path: str) -> dict[TopicPartition, int]:
    """Kafka's delete-records JSON as partition → offset. Raises ``InputError``."""
    from odradek.client.types import TopicPartition

    data = _load_json(path)
    entries = data.get("partitions") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise InputError(f'{path}: expected {{"partitions": [{{"topic", "partition", "offset"}}]}}')
    out: dict[TopicPartition, int] = {}
    for entry in entries:
        topic = entry.get("topic") if isinstance(entry, dict) else None
        if not isinstance(topic, str) or not topic:
            raise InputError(f"{path}: each partition needs a 'topic' string")
        tp = TopicPartition(topic, _int_field(entry, "partition", path, 0))
        if tp in out:
            raise InputError(f"{path}: Offset json file contains duplicate topic partitions: {tp}")
        out[tp] = _int_field(entry, "offset", path, -1)
    return out


def run_delete_records(args: argparse.Namespace) -> int:
    return delete_records(args, sys.stdout)


def delete_records(args: argparse.Namespace, out: TextIO) -> int:
    """Delete; 1 if any partition failed (each result printed)."""
    from odradek.admin import Admin

    offsets = read_offset_json(args.offset_json_file)
    print("Executing records delete operation", file=out)
    with Admin(args.bootstrap_server, **client_security(args)) as admin:
        results = admin.delete_records(offsets)
    print("Records delete operation completed:", file=out)
    failed = 0
    for tp in offsets:
        result = results[tp]
        if isinstance(result, int):
            print(f"partition: {tp.topic}-{tp.partition}\tlow_watermark: {result}", file=out)
        else:
            failed += 1
            print(
                f"partition: {tp.topic}-{tp.partition}\terror: {result.name}: {result.message}",
                file=out,
            )
    return 1 if failed else 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``get-offsets`` and ``delete-records``."""
    g = sub.add_parser(
        "get-offsets",
        help="partitions' earliest, latest or by-time offsets (kafka-get-offsets.sh)",
        description="Print topic:partition:offset for each matching partition, as "
        "kafka-get-offsets.sh does.",
    )
    add_bootstrap_option(g, top_level=False)
    g.add_argument(
        "--topic",
        type=_topic_regex,
        metavar="REGEX",
        help="topics whose whole name matches (default: all)",
    )
    g.add_argument(
        "--partitions",
        type=parse_partition_list,
        metavar="0,2,5-7",
        help="only these partition ids (default: all)",
    )
    g.add_argument(
        "--time",
        type=parse_time,
        default=LATEST,
        metavar="earliest|latest|max-timestamp|-2|-1|-3|MS",
        help="the log start (-2), the high watermark (-1, the default), the record with the "
        "largest timestamp (-3), or the first offset at or after a timestamp in ms",
    )
    g.set_defaults(handler=run_get_offsets, prog=g.prog, parser=g)

    d = sub.add_parser(
        "delete-records",
        help="move partitions' log start offsets up (kafka-delete-records.sh)",
        description="Delete the records before the offsets Kafka's JSON file gives "
        '({"partitions": [{"topic": "t", "partition": 0, "offset": 10}], "version": 1}; '
        "offset -1 = the high watermark).",
    )
    add_bootstrap_option(d, top_level=False)
    d.add_argument("--offset-json-file", required=True, metavar="FILE")
    d.set_defaults(handler=run_delete_records, prog=d.prog, parser=d)
