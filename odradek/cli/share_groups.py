"""``odradek share-groups list|describe|reset-offsets|delete-offsets|delete``: share groups
(KIP-932), as ``kafka-share-groups.sh``.

* ``list`` prints the share groups' ids; ``--state`` adds each group's state (``GROUP STATE``),
  only those in the list if given.
* ``describe G`` prints the offsets view, one line per partition the group has share state
  for or is assigned: ``GROUP TOPIC PARTITION START-OFFSET LAG`` (the share-partition start
  offset: every record below it is done with; the lag: the high watermark minus it, from the
  coordinator for the partitions it leads and from the partitions' own ends for the others;
  ``-`` where unknown). ``--members`` prints ``GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS`` (with
  ``--verbose`` the member epoch and ``ASSIGNMENT``), ``--state`` ``GROUP COORDINATOR (ID)
  ASSIGNMENT-STRATEGY STATE #MEMBERS``.
* ``reset-offsets G --topic T[:P,P...] | --all-topics SPEC`` computes new start offsets
  (``--to-earliest``, ``--to-latest``, ``--to-offset N``, ``--shift-by N``, ``--to-datetime``,
  as ``odradek groups reset-offsets``), prints them (a dry run, Kafka's default) and sets them
  only with ``--execute``. ``--all-topics``: the partitions the group has share state for.
  Refused while the group has members (NON_EMPTY_GROUP), as Kafka does.
* ``delete-offsets G --topic T`` forgets the group's share state of the topics (the next
  consumer starts where ``share.auto.offset.reset`` says).
* ``delete --group G`` deletes empty share groups.

Errors print one line and exit 1 (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from odradek.cli.common import InputError, add_bootstrap_option, client_security, table
from odradek.cli.groups import (
    _spec_action,
    _topic_spec,
    assignment_cell,
    parse_datetime,
    reset_plan,
)

if TYPE_CHECKING:
    from odradek.admin import Admin
    from odradek.client.types import TopicPartition

__all__ = ["add_parser"]

PROG = "odradek share-groups"
MISSING = "-"


def _admin(args: argparse.Namespace) -> Admin:
    from odradek.admin import Admin

    return Admin(args.bootstrap_server, **client_security(args))


def run_list(args: argparse.Namespace) -> int:
    states = [s for s in (args.state or "").split(",") if s]
    with _admin(args) as admin:
        groups = admin.list_share_groups(states)
    if args.state is None:
        for g in groups:
            print(g.group_id)
        return 0
    for line in table(["GROUP", "STATE"], [[g.group_id, g.state] for g in groups]):
        print(line)
    return 0


def run_describe(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        d = admin.describe_share_groups([args.group])[args.group]
        if args.state:
            host = d.coordinator
            rows = [
                [
                    d.group_id,
                    f"{host} ({d.coordinator_id})",
                    d.assignor,
                    d.state,
                    str(len(d.members)),
                ]
            ]
            header = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
            if args.verbose:
                header += ["GROUP-EPOCH", "ASSIGNMENT-EPOCH"]
                rows[0] += [str(d.group_epoch), str(d.assignment_epoch)]
            for line in table(header, rows):
                print(line)
            return 0
        if args.members:
            if not d.members:
                print(f"Share group '{args.group}' has no active members.")
                return 0
            header = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
            if args.verbose:
                header += ["MEMBER-EPOCH", "ASSIGNMENT"]
            rows = []
            for m in d.members:
                row = [d.group_id, m.member_id, m.host, m.client_id, str(len(m.assignment))]
                if args.verbose:
                    row += [str(m.member_epoch), assignment_cell(m.assignment)]
                rows.append(row)
            for line in table(header, rows):
                print(line)
            return 0
        offsets = admin.list_share_group_offsets(args.group)
        assigned = {tp for m in d.members for tp in m.assignment}
        missing = sorted(assigned - set(offsets))
        if missing:
            offsets.update(admin.list_share_group_offsets(args.group, missing))
    # the coordinator knows the lag only of partitions it leads: the others' from their ends
    unknown = sorted(tp for tp, o in offsets.items() if o.lag is None and o.start_offset >= 0)
    ends: dict[TopicPartition, int] = {}
    if unknown:
        from odradek.consumer import Consumer

        with Consumer(args.bootstrap_server, **client_security(args)) as consumer:
            ends = consumer.end_offsets(unknown)
    rows = []
    for tp, o in sorted(offsets.items()):
        lag = o.lag
        if lag is None and tp in ends:
            lag = max(ends[tp] - o.start_offset, 0)
        rows.append(
            [
                args.group,
                tp.topic,
                str(tp.partition),
                MISSING if o.start_offset < 0 else str(o.start_offset),
                MISSING if lag is None else str(lag),
            ]
        )
    if not rows:
        print(f"Share group '{args.group}' has no offset information.")
        return 0
    for line in table(["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"], rows):
        print(line)
    return 0


def run_reset(args: argparse.Namespace) -> int:
    from odradek.client.types import TopicPartition
    from odradek.consumer import Consumer
    from odradek.errors import UnknownTopicOrPartitionError

    spec, value = args.spec
    with _admin(args) as admin:
        description = admin.describe_share_groups([args.group])[args.group]
        if description.members:
            raise InputError(
                f"Share group '{args.group}' is not empty: its offsets can only be reset while "
                f"it has no members, but the current state is {description.state}."
            )
        current = {
            tp: o.start_offset
            for tp, o in admin.list_share_group_offsets(args.group).items()
            if o.start_offset >= 0
        }
        partitions: list[TopicPartition] = []
        if args.all_topics:
            partitions = sorted(current)
        for topic, chosen in args.topic or ():
            info = admin.describe_topics([topic])[topic]
            ids = [p.partition for p in info.partitions]
            for p in chosen if chosen is not None else ids:
                if p not in ids:
                    raise UnknownTopicOrPartitionError(f"topic {topic!r} has no partition {p}")
                partitions.append(TopicPartition(topic, p))
        plan: dict[TopicPartition, int] = {}
        if partitions:
            with Consumer(args.bootstrap_server, **client_security(args)) as consumer:
                starts = consumer.beginning_offsets(partitions)
                ends = consumer.end_offsets(partitions)
                by_time: dict[TopicPartition, int | None] = {}
                if spec == "to-datetime":
                    assert value is not None
                    found = consumer.offsets_for_times(dict.fromkeys(partitions, value))
                    by_time = {tp: None if f is None else f.offset for tp, f in found.items()}
            plan = reset_plan(spec, value, partitions, starts, ends, current, by_time)
        if args.execute and plan:
            for error in admin.alter_share_group_offsets(args.group, plan).values():
                if error is not None:
                    raise error
    rows = [[args.group, tp.topic, str(tp.partition), str(o)] for tp, o in sorted(plan.items())]
    for line in table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], rows):
        print(line)
    if not args.execute:
        print("(dry run: nothing was changed; add --execute to set these start offsets)")
    return 0


def run_delete_offsets(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        results = admin.delete_share_group_offsets(args.group, args.topic)
    for error in results.values():
        if error is not None:
            raise error
    rows = [[t, "Successful"] for t in results]
    for line in table(["TOPIC", "STATUS"], rows):
        print(line)
    return 0


def run_delete(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        results = admin.delete_share_groups(args.group)
    for error in results.values():
        if error is not None:
            raise error
    names = ", ".join(f"'{g}'" for g in results)
    print(f"Deletion of requested share groups ({names}) was successful.")
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``share-groups`` on the ``odradek`` command's subparsers."""
    p = sub.add_parser(
        "share-groups",
        help="list, describe, delete share groups and reset their start offsets",
        description="Share groups (KIP-932), as kafka-share-groups.sh.",
    )
    add_bootstrap_option(p, top_level=False)
    cmds = p.add_subparsers(dest="share_groups_command", metavar="ACTION", required=True)

    ls = cmds.add_parser("list", help="list the share groups")
    add_bootstrap_option(ls, top_level=False)
    ls.add_argument(
        "--state",
        nargs="?",
        const="",
        default=None,
        metavar="S1,S2",
        help="show each group's state (only those in the list, if given)",
    )
    ls.set_defaults(handler=run_list, prog=f"{PROG} list")

    d = cmds.add_parser("describe", help="start offsets and lag (default), members or state")
    add_bootstrap_option(d, top_level=False)
    d.add_argument("group", metavar="GROUP")
    view = d.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="one line per member")
    view.add_argument("--state", action="store_true", help="the group's state")
    view.add_argument("--offsets", action="store_true", help="start offsets (the default)")
    d.add_argument(
        "--verbose",
        action="store_true",
        help="with --members: epochs and assignments; with --state: the group's epochs",
    )
    d.set_defaults(handler=run_describe, prog=f"{PROG} describe")

    r = cmds.add_parser(
        "reset-offsets",
        help="compute (and with --execute set) new start offsets for an empty share group",
    )
    add_bootstrap_option(r, top_level=False)
    r.add_argument("group", metavar="GROUP")
    which = r.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--topic",
        action="append",
        type=_topic_spec,
        metavar="TOPIC[:P,P...]",
        help="a topic, or some of its partitions (may be repeated)",
    )
    which.add_argument(
        "--all-topics",
        action="store_true",
        help="every partition the group has share state for",
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
    r.add_argument("--execute", action="store_true", help="set the offsets (default: dry run)")
    r.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")

    def check(args: argparse.Namespace) -> int:
        if args.spec is None:
            r.error(
                "give one of --to-earliest, --to-latest, --to-offset, --shift-by, --to-datetime"
            )
        return run_reset(args)

    r.set_defaults(handler=check, prog=f"{PROG} reset-offsets", spec=None)

    do = cmds.add_parser(
        "delete-offsets", help="forget an empty share group's share state of topics"
    )
    add_bootstrap_option(do, top_level=False)
    do.add_argument("group", metavar="GROUP")
    do.add_argument("--topic", action="append", required=True, metavar="TOPIC")
    do.set_defaults(handler=run_delete_offsets, prog=f"{PROG} delete-offsets")

    rm = cmds.add_parser("delete", help="delete empty share groups")
    add_bootstrap_option(rm, top_level=False)
    rm.add_argument("--group", action="append", required=True, metavar="GROUP")
    rm.set_defaults(handler=run_delete, prog=f"{PROG} delete")
