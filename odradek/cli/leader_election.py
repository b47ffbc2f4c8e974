"""``odradek leader-election``, as ``kafka-leader-election.sh``.

``--election-type preferred|unclean`` with one of ``--topic T --partition P``,
``--all-topic-partitions`` or ``--path-to-json-file FILE`` (Kafka's JSON:
``{"partitions": [{"topic": "t", "partition": 0}]}``). Prints Kafka's lines::

    Successfully completed leader election (PREFERRED) for partitions t-0, t-1
    Valid replica already elected for partitions t-2
    Error completing leader election (PREFERRED) for partition: t-3: PREFERRED_LEADER_...

and exits 1 (with ``N replica(s) could not be elected`` on stderr) if any partition failed;
a partition already led as asked is not a failure. Usage errors exit 2; a bad JSON file is one
``INVALID_INPUT`` line, exit 1.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from odradek.cli.common import InputError, add_bootstrap_option, non_negative_int

if TYPE_CHECKING:
    from odradek.client.types import TopicPartition

__all__ = ["add_parser", "read_election_json"]


def _election_type(text: str) -> str:
    value = text.strip().lower()
    if value not in ("preferred", "unclean"):
        raise argparse.ArgumentTypeError(f"expected PREFERRED or UNCLEAN, not {text!r}")
    return value


def read_election_json(path: str) -> list[TopicPartition]:
    """The partitions of Kafka's election JSON. Raises ``InputError``."""
    from odradek.cli.offsets import _int_field, _load_json
    from odradek.client.types import TopicPartition

    data = _load_json(path)
    entries = data.get("partitions") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise InputError(f'{path}: expected {{"partitions": [{{"topic", "partition"}}]}}')
    out: list[TopicPartition] = []
    for entry in entries:
        topic = entry.get("topic") if isinstance(entry, dict) else None
        if not isinstance(topic, str) or not topic:
            raise InputError(f"{path}: each partition needs a 'topic' string")
        tp = TopicPartition(topic, _int_field(entry, "partition", path, 0))
        if tp in out:
            raise InputError(f"{path}: Replica election data contains duplicate partitions: {tp}")
        out.append(tp)
    return out


def _name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def run(args: argparse.Namespace) -> int:
    return elect(args, sys.stdout, sys.stderr)


def elect(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the election; the exit code."""
    from odradek.admin import Admin
    from odradek.client.types import TopicPartition
    from odradek.errors import ElectionNotNeededError

    parser: argparse.ArgumentParser = args.parser
    chosen = [
        args.topic is not None,
        args.all_topic_partitions,
        args.path_to_json_file is not None,
    ]
    if sum(chosen) != 1:
        parser.error(
            "give exactly one of --topic (with --partition), --all-topic-partitions or "
            "--path-to-json-file"
        )
    if (args.topic is None) != (args.partition is None):
        parser.error("--topic and --partition go together")
    partitions: list[TopicPartition] | None
    if args.topic is not None:
        partitions = [TopicPartition(args.topic, args.partition)]
    elif args.path_to_json_file is not None:
        partitions = read_election_json(args.path_to_json_file)
    else:
        partitions = None
    kind = args.election_type
    with Admin(args.bootstrap_server) as admin:
        results = admin.elect_leaders(
            partitions, election_type=kind, timeout_ms=args.admin_timeout_ms
        )
    done = sorted((tp for tp, e in results.items() if e is None), key=_name)
    not_needed = sorted(
        (tp for tp, e in results.items() if isinstance(e, ElectionNotNeededError)), key=_name
    )
    failed = sorted(
        (
            (tp, e)
            for tp, e in results.items()
            if e is not None and not isinstance(e, ElectionNotNeededError)
        ),
        key=lambda item: _name(item[0]),
    )
    label = kind.upper()
    if done:
        names = ", ".join(_name(tp) for tp in done)
        print(f"Successfully completed leader election ({label}) for partitions {names}", file=out)
    if not_needed:
        names = ", ".join(_name(tp) for tp in not_needed)
        print(f"Valid replica already elected for partitions {names}", file=out)
    for tp, error in failed:
        print(
            f"Error completing leader election ({label}) for partition: {_name(tp)}: "
            f"{error.name}: {error.message}",
            file=out,
        )
    if failed:
        print(f"{args.prog}: error: {len(failed)} replica(s) could not be elected", file=err)
        return 1
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``leader-election``."""
    p = sub.add_parser(
        "leader-election",
        help="elect preferred or unclean leaders (kafka-leader-election.sh)",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    add_bootstrap_option(p, top_level=False)
    p.add_argument(
        "--election-type",
        type=_election_type,
        required=True,
        metavar="PREFERRED|UNCLEAN",
        help="preferred: the first assigned replica takes over if in sync; unclean: a "
        "leaderless partition gets any live replica (it may lose records)",
    )
    p.add_argument("--topic", metavar="TOPIC", help="the topic of --partition")
    p.add_argument("--partition", type=non_negative_int, metavar="P", help="with --topic")
    p.add_argument(
        "--all-topic-partitions", action="store_true", help="every partition of every topic"
    )
    p.add_argument(
        "--path-to-json-file",
        metavar="FILE",
        help='partitions as Kafka\'s JSON: {"partitions": [{"topic": "t", "partition": 0}]}',
    )
    p.add_argument(
        "--admin.timeout.ms",
        "--timeout-ms",
        dest="admin_timeout_ms",
        type=non_negative_int,
        default=60_000,
        metavar="MS",
        help="how long to wait for the controller (default 60000)",
    )
    p.set_defaults(handler=run, prog=p.prog, parser=p)
