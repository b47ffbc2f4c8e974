"""``odradek groups list|describe|delete|reset-offsets``: consumer groups, as
``kafka-consumer-groups.sh``; and ``odradek consume --group`` (:func:`consume_group`).

* ``list`` prints the group ids of both types, ``consumer`` (KIP-848) and ``classic``; ``--type``
  and ``--state`` add each group's type and state (``GROUP TYPE STATE``, as Kafka 4's tool), and
  filter with values; ``--protocol`` adds its protocol type (``PROTOCOL``, as kafka-groups.sh).
* ``describe G`` prints Kafka's offsets view, one line per partition the group owns or has an
  offset for: ``GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST
  CLIENT-ID`` (``-`` where unknown); ``--members`` and ``--state`` print Kafka's other views
  (:func:`members_table`, :func:`state_table`), with ``--verbose`` Kafka 4's epochs and
  assignments.
* ``delete G`` deletes an empty group and its offsets.
* ``reset-offsets G --topic T[:P,P...] SPEC`` computes new committed offsets (``--to-earliest``,
  ``--to-latest``, ``--to-offset N``, ``--shift-by N``, ``--to-datetime
  YYYY-MM-DDTHH:mm:SS[.sss][zone]``; a time without a zone is local time, as Kafka's tool reads
  it), clamped to each partition's [log start, end]; prints them (a dry run, Kafka's default)
  and commits them only with ``--execute``. Kafka refuses to reset a group with active members,
  and so does this.

Errors print one line and exit 1 (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...).
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, TextIO

from odradek.cli.common import InputError, add_bootstrap_option, client_security, table

if TYPE_CHECKING:
    from odradek.admin import Admin
    from odradek.client.group_admin import ConsumerGroupDescription
    from odradek.client.types import TopicPartition

__all__ = [
    "add_parser",
    "assignment_cell",
    "consume_group",
    "members_table",
    "parse_datetime",
    "reset_plan",
    "state_table",
]

PROG = "odradek groups"
MISSING = "-"
"""Kafka's MISSING_COLUMN_VALUE: a cell with nothing to show."""


def _admin(args: argparse.Namespace) -> Admin:
    from odradek.admin import Admin

    return Admin(args.bootstrap_server, **client_security(args))


def parse_datetime(text: str) -> int:
    """Milliseconds since the epoch of Kafka's ``YYYY-MM-DDTHH:mm:SS.sss`` (zone optional:
    local time without one). Raises ``argparse.ArgumentTypeError``."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a date-time (YYYY-MM-DDTHH:mm:SS.sss): {text!r}"
        ) from None
    return int(when.timestamp() * 1000)


def _topic_spec(text: str) -> tuple[str, list[int] | None]:
    topic, sep, parts = text.partition(":")
    if not topic:
        raise argparse.ArgumentTypeError(f"expected TOPIC or TOPIC:P,P..., got {text!r}")
    if not sep:
        return topic, None
    try:
        return topic, [int(p) for p in parts.split(",") if p.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad partition list in {text!r}") from None


# --- list / describe / delete ------------------------------------------------------------------


def _types(text: str) -> list[str]:
    """argparse type of ``--type``: a comma-separated list of Kafka's group types, any case."""
    from odradek.client.group_admin import GROUP_TYPES

    types = [t.strip().lower() for t in text.split(",") if t.strip()]
    unknown = [t for t in types if t not in GROUP_TYPES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"invalid group type {', '.join(map(repr, unknown))} (valid: {', '.join(GROUP_TYPES)})"
        )
    return types


def run_list(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        states = [s for s in (args.state or "").split(",") if s]
        groups = admin.list_consumer_groups(states, args.type or ())
    if args.state is None and args.type is None and not args.protocol:
        for g in groups:
            print(g.group_id)
        return 0
    # kafka-consumer-groups.sh --list [--type] [--state]: GROUP [TYPE] [STATE]; --protocol adds
    # kafka-groups.sh's PROTOCOL (the protocol type) after TYPE
    header = ["GROUP"]
    if args.type is not None:
        header.append("TYPE")
    if args.protocol:
        header.append("PROTOCOL")
    if args.state is not None:
        header.append("STATE")
    rows = []
    for g in groups:
        row = [g.group_id]
        if args.type is not None:
            row.append(g.type)
        if args.protocol:
            row.append(g.protocol_type or MISSING)
        if args.state is not None:
            row.append(g.state)
        rows.append(row)
    for line in table(header, rows):
        print(line)
    return 0


def assignment_cell(tps: Iterable[TopicPartition]) -> str:
    """Kafka 4's ASSIGNMENT cell: ``topic:p,p;topic:p`` (topics and partitions sorted), ``-``
    for none."""
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if not by_topic:
        return MISSING
    return ";".join(
        f"{t}:{','.join(str(p) for p in sorted(ps))}" for t, ps in sorted(by_topic.items())
    )


def state_table(d: ConsumerGroupDescription, verbose: bool = False) -> list[str]:
    """``--state [--verbose]``: kafka-consumer-groups.sh's columns; the epochs (verbose) are a
    consumer group's, ``-`` for a classic one."""
    consumer = d.type == "consumer"
    row = [
        d.group_id,
        f"{d.coordinator} ({d.coordinator_id})",  # Kafka's "host:port (id)" cell
        d.assignor or MISSING,
        d.state,
    ]
    header = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE"]
    if verbose:
        header += ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]
        row += [str(d.group_epoch), str(d.assignment_epoch)] if consumer else [MISSING] * 2
    header.append("#MEMBERS")
    row.append(str(len(d.members)))
    return table(header, [row])


def members_table(d: ConsumerGroupDescription, verbose: bool = False) -> list[str]:
    """``--members [--verbose]``: kafka-consumer-groups.sh's columns, GROUP-INSTANCE-ID only when
    a member has one; verbose adds a consumer group's member epoch, assignment, target epoch
    and target assignment (``-`` for the epochs and target of a classic group's member) and,
    for a consumer group, UPGRADED: whether the member speaks KIP-848 (false: a classic member
    of a group being migrated)."""
    consumer = d.type == "consumer"
    with_instance = any(m.instance_id for m in d.members)
    header = ["GROUP", "CONSUMER-ID"]
    if with_instance:
        header.append("GROUP-INSTANCE-ID")
    header += ["HOST", "CLIENT-ID", "#PARTITIONS"]
    if verbose:
        header += ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
        if consumer:
            header.append("UPGRADED")
    rows = []
    for m in d.members:
        row = [d.group_id, m.member_id]
        if with_instance:
            row.append(m.instance_id or MISSING)
        row += [m.host or MISSING, m.client_id or MISSING, str(len(m.assignment))]
        if verbose:
            row += [
                str(m.member_epoch) if consumer else MISSING,
                assignment_cell(m.assignment),
                str(d.assignment_epoch) if consumer else MISSING,
                assignment_cell(m.target_assignment) if consumer else MISSING,
            ]
            if consumer:
                row.append(MISSING if m.upgraded is None else str(m.upgraded).lower())
        rows.append(row)
    return table(header, rows)


def run_describe(args: argparse.Namespace) -> int:
    from odradek.consumer import Consumer

    with _admin(args) as admin:
        description = admin.describe_consumer_groups([args.group])[args.group]
        if args.state or args.members:
            view = state_table if args.state else members_table
            for line in view(description, args.verbose):
                print(line)
            return 0
        committed = admin.list_consumer_group_offsets(args.group)
    owners: dict[TopicPartition, tuple[str, str, str]] = {}
    for m in description.members:
        for tp in m.assignment:
            owners[tp] = (m.member_id, m.host, m.client_id)
    partitions = sorted(set(owners) | set(committed))
    ends: dict[TopicPartition, int] = {}
    if partitions:
        # read_committed: the group's lag ends at the last stable offset (its consumers read
        # no further), as a read_committed consumer's own end offsets do
        with Consumer(
            args.bootstrap_server,
            isolation_level=args.isolation_level,
            **client_security(args),
        ) as consumer:
            ends = consumer.end_offsets(partitions)
    rows = []
    for tp in partitions:
        current = committed.get(tp)
        end = ends.get(tp)
        lag = MISSING if current is None or end is None else str(max(end - current.offset, 0))
        member, host, client = owners.get(tp, (MISSING, MISSING, MISSING))
        rows.append(
            [
                args.group,
                tp.topic,
                str(tp.partition),
                MISSING if current is None else str(current.offset),
                MISSING if end is None else str(end),
                lag,
                member,
                host,
                client,
            ]
        )
    header = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
    header += ["CONSUMER-ID", "HOST", "CLIENT-ID"]
    if not rows:
        print(f"Consumer group '{args.group}' has no active members and no committed offsets.")
        return 0
    for line in table(header, rows):
        print(line)
    return 0


def run_delete(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        error = admin.delete_consumer_groups([args.group])[args.group]
    if error is not None:
        raise error
    print(f"Deletion of requested consumer groups ('{args.group}') was successful.")
    return 0


# --- reset-offsets -----------------------------------------------------------------------------


def reset_plan(
    spec: str,
    value: int | None,
    partitions: list[TopicPartition],
    starts: dict[TopicPartition, int],
    ends: dict[TopicPartition, int],
    committed: dict[TopicPartition, int],
    by_time: dict[TopicPartition, int | None],
) -> dict[TopicPartition, int]:
    """The new offset of each partition for a reset ``spec`` (``to-earliest``, ``to-latest``,
    ``to-offset``, ``shift-by``, ``to-datetime``), clamped to [log start, end] as Kafka's tool
    does. A shift of a partition without a committed offset shifts from its end."""
    out: dict[TopicPartition, int] = {}
    for tp in partitions:
        start, end = starts[tp], ends[tp]
        if spec == "to-earliest":
            target = start
        elif spec == "to-latest":
            target = end
        elif spec == "to-offset":
            assert value is not None
            target = value
        elif spec == "shift-by":
            assert value is not None
            target = committed.get(tp, end) + value
        else:
            found = by_time.get(tp)
            target = end if found is None else found
        out[tp] = min(max(target, start), end)
    return out


def run_reset(args: argparse.Namespace) -> int:
    from odradek.client.types import TopicPartition
    from odradek.consumer import Consumer
    from odradek.errors import GroupIdNotFoundError, UnknownTopicOrPartitionError

    spec, value = args.spec
    with _admin(args) as admin:
        try:
            description = admin.describe_consumer_groups([args.group])[args.group]
            if description.members:
                raise InputError(
                    f"Assignments can only be reset if the group '{args.group}' is inactive, "
                    f"but the current state is {description.state}."
                )
        except GroupIdNotFoundError:
            pass  # a new group: its offsets are created
        partitions: list[TopicPartition] = []
        for topic, chosen in args.topic:
            info = admin.describe_topics([topic])[topic]
            ids = [p.partition for p in info.partitions]
            for p in chosen if chosen is not None else ids:
                if p not in ids:
                    raise UnknownTopicOrPartitionError(f"topic {topic!r} has no partition {p}")
                partitions.append(TopicPartition(topic, p))
        committed = {
            tp: om.offset
            for tp, om in admin.list_consumer_group_offsets(args.group, partitions).items()
        }
        with Consumer(args.bootstrap_server, **client_security(args)) as consumer:
            starts = consumer.beginning_offsets(partitions)
            ends = consumer.end_offsets(partitions)
            by_time: dict[TopicPartition, int | None] = {}
            if spec == "to-datetime":
                assert value is not None
                found = consumer.offsets_for_times(dict.fromkeys(partitions, value))
                by_time = {tp: None if f is None else f.offset for tp, f in found.items()}
        plan = reset_plan(spec, value, partitions, starts, ends, committed, by_time)
        if args.execute:
            results = admin.alter_consumer_group_offsets(args.group, plan)
            for error in results.values():
                if error is not None:
                    raise error
    rows = [[args.group, tp.topic, str(tp.partition), str(o)] for tp, o in sorted(plan.items())]
    for line in table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], rows):
        print(line)
    if not args.execute:
        print("(dry run: nothing was changed; add --execute to commit these offsets)")
    return 0


# --- consume --group ---------------------------------------------------------------------------


def consume_group(
    args: argparse.Namespace,
    out: TextIO,
    err: TextIO,
    stop: threading.Event,
    format_record: object,
) -> int:
    """``odradek consume TOPIC --group G``: join G and print what it assigns to this member,
    committing as Kafka's console consumer does (auto-commit, and on exit). Without
    ``--follow`` it stops once its partitions are read up to the ends found when they were
    assigned; ``--from-beginning`` starts a new group at the log start (else at the end)."""
    from odradek.consumer import Consumer

    fmt = format_record  # consume.format_record(record, args)
    count = 0
    ends: dict[TopicPartition, int] = {}

    class Listener:
        def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
            if not args.follow:
                ends.update(consumer.end_offsets(assigned))

    consumer = Consumer(
        args.bootstrap_server,
        group_id=args.group,
        auto_offset_reset="earliest" if args.from_beginning else "latest",
        isolation_level=getattr(args, "isolation_level", None) or "read_uncommitted",
        **client_security(args),
    )
    try:
        consumer.subscribe([args.topic], Listener())
        while not stop.is_set() and (args.max_messages is None or count < args.max_messages):
            for record in consumer.poll(timeout_ms=500):
                print(fmt(record, args), file=out)  # type: ignore[operator]
                count += 1
                if args.max_messages is not None and count >= args.max_messages:
                    break
            out.flush()
            assigned = consumer.assignment()
            if (
                not args.follow
                and assigned
                and all(tp in ends and consumer.position(tp) >= ends[tp] for tp in assigned)
            ):
                break
    except KeyboardInterrupt:
        stop.set()
    finally:
        consumer.close()
    print(f"Processed a total of {count} messages", file=err)
    return 130 if stop.is_set() else 0


# --- parser ------------------------------------------------------------------------------------


def _spec_action(name: str, takes_value: bool) -> type[argparse.Action]:
    class Spec(argparse.Action):
        def __call__(
            self,
            parser: argparse.ArgumentParser,
            namespace: argparse.Namespace,
            values: object,
            option_string: str | None = None,
        ) -> None:
            if getattr(namespace, "spec", None) is not None:
                parser.error("give exactly one reset specification")
            namespace.spec = (name, values if takes_value else None)

    return Spec


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``groups`` on the ``odradek`` command's subparsers."""
    p = sub.add_parser(
        "groups",
        help="list, describe, delete consumer groups and reset their offsets",
        description="Consumer groups, as kafka-consumer-groups.sh.",
    )
    add_bootstrap_option(p, top_level=False)
    cmds = p.add_subparsers(dest="groups_command", metavar="ACTION", required=True)

    ls = cmds.add_parser("list", help="list the groups")
    add_bootstrap_option(ls, top_level=False)
    ls.add_argument(
        "--state",
        nargs="?",
        const="",
        default=None,
        metavar="S1,S2",
        help="show each group's state (only those in the list, if given)",
    )
    ls.add_argument(
        "--type",
        nargs="?",
        const=[],
        default=None,
        type=_types,
        metavar="T1,T2",
        help="show each group's type, classic or consumer (only those in the list, if given)",
    )
    ls.add_argument(
        "--protocol",
        action="store_true",
        help="show each group's protocol type (consumer; - for a group that only commits)",
    )
    ls.set_defaults(handler=run_list, prog=f"{PROG} list")

    d = cmds.add_parser("describe", help="offsets and lag (default), members or state")
    add_bootstrap_option(d, top_level=False)
    d.add_argument("group", metavar="GROUP")
    view = d.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="one line per member")
    view.add_argument("--state", action="store_true", help="the group's state")
    view.add_argument("--offsets", action="store_true", help="offsets and lag (the default)")
    d.add_argument(
        "--verbose",
        action="store_true",
        help="with --members: epochs and assignments; with --state: the group's epochs",
    )
    d.add_argument(
        "--isolation-level",
        choices=("read_uncommitted", "read_committed"),
        default="read_uncommitted",
        help="read_committed: LOG-END-OFFSET and LAG up to the last stable offset, where "
        "read_committed consumers stop (default: read_uncommitted, the high watermark)",
    )
    d.set_defaults(handler=run_describe, prog=f"{PROG} describe")

    rm = cmds.add_parser("delete", help="delete an empty group and its offsets")
    add_bootstrap_option(rm, top_level=False)
    rm.add_argument("group", metavar="GROUP")
    rm.set_defaults(handler=run_delete, prog=f"{PROG} delete")

    r = cmds.add_parser(
        "reset-offsets",
        help="compute (and with --execute commit) new offsets for an inactive group",
    )
    add_bootstrap_option(r, top_level=False)
    r.add_argument("group", metavar="GROUP")
    r.add_argument(
        "--topic",
        action="append",
        required=True,
        type=_topic_spec,
        metavar="TOPIC[:P,P...]",
        help="a topic, or some of its partitions (may be repeated)",
    )
    r.add_argument("--to-earliest", nargs=0, action=_spec_action("to-earliest", False))
    r.add_argument("--to-latest", nargs=0, action=_spec_action("to-latest", False))
    r.add_argument("--to-offset", type=int, metavar="N", action=_spec_action("to-offset", True))
    r.add_argument("--shift-by", type=int, metavar="N", action=_spec_action("shift-by", True))
    r.add_argument(
        "--to-datetime",
        type=parse_datetime,
        metavar="YYYY-MM-DDTHH:mm:SS.sss",
        action=_spec_action("to-datetime", True),
    )
    r.add_argument("--execute", action="store_true", help="commit the offsets (default: dry run)")
    r.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")
    r.set_defaults(handler=run_reset, prog=f"{PROG} reset-offsets", spec=None, parser=r)

    def check(args: argparse.Namespace) -> int:
        if args.spec is None:
            r.error(
                "give one of --to-earliest, --to-latest, --to-offset, --shift-by, --to-datetime"
            )
        return run_reset(args)

    r.set_defaults(handler=check)
