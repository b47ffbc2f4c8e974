"""``odradek reassign``, as ``kafka-reassign-partitions.sh``, with Kafka's JSON plan format.

- ``--generate --topics-to-move-json-file F --broker-list 1,2,3 [--disable-rack-aware]``
  reads ``{"topics": [{"topic": "t"}], "version": 1}`` and prints the current assignment and a
  proposed one over the listed brokers (Kafka's rack-aware round robin, each topic keeping its
  partition count and replication factor). It changes nothing.
- ``--execute --reassignment-json-file F`` reads a plan
  ``{"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2]}]}``
  (``log_dirs`` may be present: only ``"any"`` is accepted, odradek nodes have one log
  directory each), prints the current assignment to keep for a rollback, and starts the
  reassignments. ``--throttle`` is refused: odradek nodes have no replication quotas yet.
- ``--verify --reassignment-json-file F`` says, per partition, whether its reassignment is
  completed or still in progress.
- ``--cancel --reassignment-json-file F`` cancels the plan's ongoing reassignments;
  ``--list`` shows every ongoing one.

Exit codes: 0 done, 1 an operation or input error (one line), 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from odradek.cli.common import InputError, add_bootstrap_option

if TYPE_CHECKING:
    from odradek.admin import Admin
    from odradek.client.types import TopicPartition

__all__ = ["add_parser", "plan_json", "read_plan", "read_topics_to_move"]


def _broker_list(text: str) -> list[int]:
    try:
        ids = [int(b) for b in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected broker ids like 1,2,3, not {text!r}") from None
    if len(set(ids)) != len(ids):
        raise argparse.ArgumentTypeError(f"Duplicate broker in broker list: {text!r}")
    return ids


def plan_json(assignment: Mapping[TopicPartition, Sequence[int]]) -> str:
    """Kafka's reassignment JSON on one line, partitions sorted."""
    partitions = [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "replicas": list(replicas),
            "log_dirs": ["any"] * len(replicas),
        }
        for tp, replicas in sorted(assignment.items(), key=lambda i: (i[0].topic, i[0].partition))
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def read_topics_to_move(path: str) -> list[str]:
    """The topics of ``{"topics": [{"topic": "t"}], "version": 1}``. Raises ``InputError``."""
    from odradek.cli.offsets import _load_json

    data = _load_json(path)
    entries = data.get("topics") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise InputError(f'{path}: expected {{"topics": [{{"topic": "t"}}], "version": 1}}')
    out: list[str] = []
    for entry in entries:
        topic = entry.get("topic") if isinstance(entry, dict) else None
        if not isinstance(topic, str) or not topic:
            raise InputError(f"{path}: each entry needs a 'topic' string")
        if topic in out:
            raise InputError(f"{path}: List of topics to reassign contains duplicate: {topic}")
        out.append(topic)
    return out


def read_plan(path: str) -> dict[TopicPartition, list[int]]:
    """A reassignment plan as partition → target replicas. Raises ``InputError``."""
    from odradek.cli.offsets import _int_field, _load_json
    from odradek.client.types import TopicPartition

    data = _load_json(path)
    entries = data.get("partitions") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise InputError(
            f'{path}: expected {{"version": 1, "partitions": [{{"topic", "partition", '
            '"replicas"}]}'
        )
    out: dict[TopicPartition, list[int]] = {}
    for entry in entries:
        topic = entry.get("topic") if isinstance(entry, dict) else None
        if not isinstance(topic, str) or not topic:
            raise InputError(f"{path}: each partition needs a 'topic' string")
        tp = TopicPartition(topic, _int_field(entry, "partition", path, 0))
        replicas = entry.get("replicas")
        if (
            not isinstance(replicas, list)
            or not replicas
            or not all(isinstance(r, int) and not isinstance(r, bool) for r in replicas)
        ):
            raise InputError(f"{path}: {tp} needs a non-empty 'replicas' list of broker ids")
        if len(set(replicas)) != len(replicas):
            raise InputError(f"{path}: Duplicate replica assignment found: {tp} -> {replicas}")
        log_dirs = entry.get("log_dirs")
        if log_dirs is not None and (
            not isinstance(log_dirs, list)
            or len(log_dirs) != len(replicas)
            or any(d != "any" for d in log_dirs)
        ):
            raise InputError(
                f"{path}: {tp}: log_dirs must list 'any' once per replica (odradek nodes have "
                "one log directory each)"
            )
        if tp in out:
            raise InputError(f"{path}: Duplicate partition in the plan: {tp}")
        out[tp] = list(replicas)
    return out


def _current(admin: Admin, topics: Sequence[str]) -> dict[TopicPartition, list[int]]:
    from odradek.client.types import TopicPartition

    described = admin.describe_topics(topics)
    return {
        TopicPartition(t.name, p.partition): list(p.replicas)
        for t in described.values()
        for p in t.partitions
    }


def run(args: argparse.Namespace) -> int:
    return reassign(args, sys.stdout)


def reassign(args: argparse.Namespace, out: TextIO) -> int:
    """Run the chosen action; the exit code."""
    from odradek.admin import Admin

    parser: argparse.ArgumentParser = args.parser
    if args.throttle is not None:
        parser.error(
            "--throttle is not supported: odradek nodes have no replication quotas "
            "(leader/follower.replication.throttled.rate) yet"
        )
    if args.generate:
        if args.topics_to_move_json_file is None or args.broker_list is None:
            parser.error("--generate needs --topics-to-move-json-file and --broker-list")
    elif not args.list and args.reassignment_json_file is None:
        parser.error("--execute, --verify and --cancel need --reassignment-json-file")
    with Admin(args.bootstrap_server) as admin:
        if args.generate:
            return _generate(args, admin, out)
        if args.list:
            return _list(admin, out)
        plan = read_plan(args.reassignment_json_file)
        if args.execute:
            return _execute(plan, admin, out, args.timeout_ms)
        if args.verify:
            return _verify(plan, admin, out)
        return _cancel(plan, admin, out, args.timeout_ms)


def _generate(args: argparse.Namespace, admin: Admin, out: TextIO) -> int:
    from controller.assignment import assign_replicas
    from odradek.client.types import TopicPartition
    from odradek.errors import InvalidReplicaAssignmentError

    topics = read_topics_to_move(args.topics_to_move_json_file)
    live = {b.node_id: b for b in admin.describe_cluster().brokers}
    unknown = sorted(set(args.broker_list) - set(live))
    if unknown:
        raise InvalidReplicaAssignmentError(
            f"The given broker list contains brokers that are not live: {unknown}"
        )
    brokers = [
        (b, None if args.disable_rack_aware else live[b].rack) for b in sorted(args.broker_list)
    ]
    current = _current(admin, topics)
    proposed: dict[TopicPartition, list[int]] = {}
    for topic in topics:
        partitions = sorted(tp.partition for tp in current if tp.topic == topic)
        rf = len(current[TopicPartition(topic, 0)])
        for p, replicas in assign_replicas(len(partitions), rf, brokers).items():
            proposed[TopicPartition(topic, p)] = replicas
    print("Current partition replica assignment", file=out)
    print(plan_json(current), file=out)
    print("", file=out)
    print("Proposed partition reassignment configuration", file=out)
    print(plan_json(proposed), file=out)
    return 0


def _execute(
    plan: Mapping[TopicPartition, Sequence[int]], admin: Admin, out: TextIO, timeout_ms: int
) -> int:
    current = _current(admin, sorted({tp.topic for tp in plan}))
    missing = [tp for tp in plan if tp not in current]
    if missing:
        from odradek.errors import UnknownTopicOrPartitionError

        raise UnknownTopicOrPartitionError(f"Topic-partitions that do not exist: {missing}")
    print("Current partition replica assignment", file=out)
    print("", file=out)
    print(plan_json({tp: current[tp] for tp in plan}), file=out)
    print("", file=out)
    print("Save this to use as the --reassignment-json-file option during rollback", file=out)
    results = admin.alter_partition_reassignments(dict(plan), timeout_ms=timeout_ms)
    return _report(results, "Successfully started partition reassignment", out)


def _report(results: Mapping[TopicPartition, Any], done_text: str, out: TextIO) -> int:
    ok = sorted(f"{tp.topic}-{tp.partition}" for tp, e in results.items() if e is None)
    failed = sorted(
        ((tp, e) for tp, e in results.items() if e is not None),
        key=lambda i: (i[0].topic, i[0].partition),
    )
    if ok:
        print(f"{done_text}s for {','.join(ok)}", file=out)
    if failed:
        tp, first = failed[0]
        names = ", ".join(f"{t.topic}-{t.partition}: {e.name}: {e.message}" for t, e in failed)
        print(f"Error reassigning partition(s): {names}", file=out)
        raise type(first)(
            f"{len(failed)} partition reassignment(s) failed; first {tp}: {first.message}"
        )
    return 0


def _verify(plan: Mapping[TopicPartition, Sequence[int]], admin: Admin, out: TextIO) -> int:
    ongoing = admin.list_partition_reassignments(list(plan))
    current = _current(admin, sorted({tp.topic for tp in plan}))
    print("Status of partition reassignment:", file=out)
    for tp in sorted(plan, key=lambda t: (t.topic, t.partition)):
        name = f"{tp.topic}-{tp.partition}"
        if tp in ongoing:
            print(f"Reassignment of partition {name} is still in progress.", file=out)
        elif current.get(tp) == list(plan[tp]):
            print(f"Reassignment of partition {name} is completed.", file=out)
        else:
            now = ",".join(str(r) for r in current.get(tp, []))
            target = ",".join(str(r) for r in plan[tp])
            print(
                f"There is no active reassignment of partition {name}, but replica set is "
                f"{now} rather than {target}.",
                file=out,
            )
    return 0


def _cancel(
    plan: Mapping[TopicPartition, Sequence[int]], admin: Admin, out: TextIO, timeout_ms: int
) -> int:
    results = admin.alter_partition_reassignments(dict.fromkeys(plan), timeout_ms=timeout_ms)
    return _report(results, "Successfully cancelled partition reassignment", out)


def _list(admin: Admin, out: TextIO) -> int:
    ongoing = admin.list_partition_reassignments()
    if not ongoing:
        print("No partition reassignments found.", file=out)
        return 0
    print("Current partition reassignments:", file=out)
    for tp, r in sorted(ongoing.items(), key=lambda i: (i[0].topic, i[0].partition)):
        replicas = ",".join(str(b) for b in r.replicas)
        adding = ",".join(str(b) for b in r.adding_replicas)
        removing = ",".join(str(b) for b in r.removing_replicas)
        print(
            f"{tp.topic}-{tp.partition}: replicas: {replicas}. adding: {adding}. "
            f"removing: {removing}.",
            file=out,
        )
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``reassign``."""
    p = sub.add_parser(
        "reassign",
        help="move partitions between brokers (kafka-reassign-partitions.sh)",
        description="Generate, execute, verify, cancel or list partition reassignments with "
        "Kafka's JSON plan format.",
    )
    add_bootstrap_option(p, top_level=False)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--generate", action="store_true", help="propose a plan (no change)")
    action.add_argument("--execute", action="store_true", help="start the plan's moves")
    action.add_argument("--verify", action="store_true", help="are the plan's moves done?")
    action.add_argument("--cancel", action="store_true", help="cancel the plan's moves")
    action.add_argument("--list", action="store_true", help="list ongoing reassignments")
    p.add_argument(
        "--topics-to-move-json-file",
        metavar="FILE",
        help='with --generate: {"topics": [{"topic": "t"}], "version": 1}',
    )
    p.add_argument(
        "--broker-list",
        type=_broker_list,
        metavar="1,2,3",
        help="with --generate: the brokers to spread the topics over",
    )
    p.add_argument(
        "--disable-rack-aware", action="store_true", help="with --generate: ignore racks"
    )
    p.add_argument(
        "--reassignment-json-file",
        metavar="FILE",
        help='the plan: {"version": 1, "partitions": [{"topic": "t", "partition": 0, '
        '"replicas": [1, 2]}]}',
    )
    p.add_argument(
        "--throttle",
        type=int,
        metavar="BYTES/S",
        help="not supported: odradek nodes have no replication quotas yet",
    )
    p.add_argument(
        "--timeout",
        "--timeout-ms",
        dest="timeout_ms",
        type=int,
        default=30_000,
        metavar="MS",
        help="how long to wait for the controller to take the plan up (default 30000)",
    )
    p.set_defaults(handler=run, prog=p.prog, parser=p)
