"""``odradek topics create|list|describe|delete|alter``: manage topics, as ``kafka-topics.sh``.

``alter --partitions N`` adds partitions (Kafka's CreatePartitions: the count only grows).

``describe`` prints Kafka's layout (one ``Topic:`` line with the non-default configs, then one
indented line per partition), so a Kafka operator's eyes and scripts find what they expect.
Errors print one line (``odradek topics create: error: TOPIC_ALREADY_EXISTS: …``) and exit 1;
usage errors exit 2.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from odradek.cli.common import (
    add_bootstrap_option,
    client_security,
    config_pair,
    positive_int,
)

if TYPE_CHECKING:
    from odradek.admin import Admin
    from odradek.client.metadata import PartitionMetadata, TopicMetadata

__all__ = ["add_parser", "format_partition", "format_topic", "parse_replica_assignment"]


def _admin(args: argparse.Namespace) -> Admin:
    from odradek.admin import Admin

    return Admin(args.bootstrap_server, **client_security(args))


def _ids(ids: tuple[int, ...] | list[int]) -> str:
    return ",".join(str(i) for i in ids)


def format_topic(topic: TopicMetadata, configs: dict[str, str]) -> str:
    """Kafka's topic line: name, id, partition count, replication factor, overrides."""
    rf = max((len(p.replicas) for p in topic.partitions), default=0)
    shown = ",".join(f"{k}={v}" for k, v in sorted(configs.items()))
    return (
        f"Topic: {topic.name}\tTopicId: {topic.topic_id or '-'}\t"
        f"PartitionCount: {len(topic.partitions)}\tReplicationFactor: {rf}\tConfigs: {shown}"
    )


def format_partition(p: PartitionMetadata) -> str:
    """Kafka's partition line, with odradek's leader epoch and offline replicas."""
    leader = "none" if p.leader < 0 else str(p.leader)
    line = (
        f"\tTopic: {p.topic}\tPartition: {p.partition}\tLeader: {leader}\t"
        f"LeaderEpoch: {p.leader_epoch}\tReplicas: {_ids(p.replicas)}\tIsr: {_ids(p.isr)}"
    )
    if p.offline_replicas:
        line += f"\tOffline: {_ids(p.offline_replicas)}"
    return line


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """Kafka's ``--replica-assignment``: ``1:2,2:3`` is partition 0 on brokers 1 and 2, partition
    1 on brokers 2 and 3. Raises ``argparse.ArgumentTypeError``."""
    out: dict[int, list[int]] = {}
    for partition, group in enumerate(text.split(",")):
        try:
            brokers = [int(b) for b in group.split(":")]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"partition {partition}: broker ids must be integers, got {group!r}"
            ) from None
        if len(set(brokers)) != len(brokers):
            raise argparse.ArgumentTypeError(
                f"partition {partition}: duplicate broker in {group!r}"
            )
        out[partition] = brokers
    return out


# --- handlers ------------------------------------------------------------------------------


def run_create(args: argparse.Namespace) -> int:
    from odradek.admin import NewTopic
    from odradek.errors import TopicAlreadyExistsError

    assignment = args.replica_assignment
    if assignment is not None and (args.partitions is not None or args.replication_factor):
        args.parser.error(
            "--replica-assignment cannot be combined with --partitions or --replication-factor"
        )
    topic = NewTopic(
        args.name,
        num_partitions=args.partitions if args.partitions is not None else -1,
        replication_factor=args.replication_factor or -1,
        configs=dict(args.config),
        assignments=assignment,
    )
    with _admin(args) as admin:
        error = admin.create_topics([topic], timeout_ms=args.timeout_ms)[args.name]
    if error is not None:
        if isinstance(error, TopicAlreadyExistsError) and args.if_not_exists:
            return 0
        raise error
    print(f"Created topic {args.name}.")
    return 0


def run_list(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        for name in admin.list_topics():
            print(name)
    return 0


def run_describe(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        result = admin.describe_topics(args.names or None)
        for error in result.errors.values():
            raise error  # one line, as before: the first topic that cannot be described
        topics = dict(result)
        configs = admin.describe_configs(list(topics)) if topics else {}
    for name, topic in topics.items():
        overrides = {k: e.value for k, e in configs.get(name, {}).items() if not e.is_default}
        print(format_topic(topic, overrides))
        for p in topic.partitions:
            print(format_partition(p))
    return 0


def run_delete(args: argparse.Namespace) -> int:
    from odradek.errors import UnknownTopicOrPartitionError

    with _admin(args) as admin:
        error = admin.delete_topics([args.name], timeout_ms=args.timeout_ms)[args.name]
    if error is not None:
        if isinstance(error, UnknownTopicOrPartitionError) and args.if_exists:
            return 0
        raise error
    print(f"Deleted topic {args.name}.")
    return 0


def run_alter(args: argparse.Namespace) -> int:
    from odradek.admin import ConfigChange

    if args.replica_assignment is not None and args.partitions is None:
        args.parser.error("--replica-assignment needs --partitions")
    if not args.config and not args.delete_config and args.partitions is None:
        args.parser.error(
            "nothing to change: give --partitions N, --config KEY=VALUE or --delete-config KEY"
        )
    both = set(dict(args.config)) & set(args.delete_config)
    if both:
        args.parser.error(f"config {sorted(both)[0]!r} is both set and deleted")
    with _admin(args) as admin:
        if args.partitions is not None:
            _add_partitions(args, admin)
        if args.config or args.delete_config:
            change = ConfigChange(set=dict(args.config), delete=list(args.delete_config))
            error = admin.alter_configs({args.name: change})[args.name]
            if error is not None:
                raise error
            print(f"Altered the configs of topic {args.name}.")
    return 0


def _add_partitions(args: argparse.Namespace, admin: Admin) -> None:
    """kafka-topics --alter --partitions N [--replica-assignment]: the assignment lists every
    partition, as at creation; the entries past the current count place the new ones."""
    from odradek.admin import NewPartitions

    new_assignments = None
    if args.replica_assignment is not None:
        current = len(admin.describe_topics([args.name])[args.name].partitions)
        listed = [args.replica_assignment[p] for p in sorted(args.replica_assignment)]
        if len(listed) != args.partitions:
            args.parser.error(
                f"--replica-assignment lists {len(listed)} partitions, --partitions says "
                f"{args.partitions}"
            )
        new_assignments = listed[current:]
    request = NewPartitions(args.partitions, new_assignments)
    error = admin.create_partitions({args.name: request}, timeout_ms=args.timeout_ms)[args.name]
    if error is not None:
        raise error
    print(f"Topic {args.name} now has {args.partitions} partitions.")


# --- parsers -------------------------------------------------------------------------------


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``topics`` and its subcommands on the ``odradek`` command's subparsers."""
    topics = sub.add_parser(
        "topics", help="create, list, describe, delete and alter topics", description=__doc__
    )
    actions = topics.add_subparsers(
        dest="topics_command", metavar="ACTION", required=True, parser_class=type(topics)
    )

    def action(name: str, handler: object, help_text: str) -> argparse.ArgumentParser:
        p = actions.add_parser(name, help=help_text, description=help_text)
        add_bootstrap_option(p, top_level=False)
        p.set_defaults(handler=handler, prog=p.prog, parser=p)
        return p

    create = action("create", run_create, "create a topic")
    create.add_argument("name", metavar="NAME")
    create.add_argument(
        "--partitions",
        type=positive_int,
        metavar="N",
        help="number of partitions (default: the broker's)",
    )
    create.add_argument(
        "--replication-factor",
        type=positive_int,
        metavar="R",
        help="replicas per partition (default: the broker's)",
    )
    create.add_argument(
        "--replica-assignment",
        type=parse_replica_assignment,
        metavar="B:B,B:B,...",
        help="explicit placement: per partition, colon-separated broker ids (leader first)",
    )
    create.add_argument(
        "--config",
        type=config_pair,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a topic config override, e.g. cleanup.policy=compact (repeatable)",
    )
    create.add_argument(
        "--if-not-exists", action="store_true", help="succeed if the topic already exists"
    )
    create.add_argument(
        "--timeout-ms",
        type=positive_int,
        default=30_000,
        metavar="MS",
        help="how long the cluster may take to elect the new partitions' leaders (default 30000)",
    )

    action("list", run_list, "list the topics")

    describe = action(
        "describe", run_describe, "partitions (leader, epoch, replicas, ISR) and config overrides"
    )
    describe.add_argument("names", nargs="*", metavar="NAME", help="topics (default: all)")

    delete = action("delete", run_delete, "delete a topic")
    delete.add_argument("name", metavar="NAME")
    delete.add_argument(
        "--if-exists", action="store_true", help="succeed if there is no such topic"
    )
    delete.add_argument(
        "--timeout-ms",
        type=positive_int,
        default=30_000,
        metavar="MS",
        help="how long the cluster may take to delete it (default 30000)",
    )

    alter = action("alter", run_alter, "add partitions to a topic or change its configs")
    alter.add_argument("name", metavar="NAME")
    alter.add_argument(
        "--partitions",
        type=positive_int,
        metavar="N",
        help="the new number of partitions (it can only grow)",
    )
    alter.add_argument(
        "--replica-assignment",
        type=parse_replica_assignment,
        metavar="B:B,B:B,...",
        help="with --partitions: per partition (all of them, existing first), colon-separated "
        "broker ids; the entries past the current count place the new partitions",
    )
    alter.add_argument(
        "--timeout-ms",
        type=positive_int,
        default=30_000,
        metavar="MS",
        help="how long the cluster may take to elect the new partitions' leaders (default 30000)",
    )
    alter.add_argument(
        "--config",
        type=config_pair,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a config (repeatable)",
    )
    alter.add_argument(
        "--delete-config",
        action="append",
        default=[],
        metavar="KEY",
        help="return a config to its default (repeatable)",
    )
