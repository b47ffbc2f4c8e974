"""``odradek transactions list|describe|find-hanging|abort``: transactions, as
``kafka-transactions.sh``.

* ``list [--state S[,S...]] [--producer-id P[,P...]] [--duration-ms D]`` prints every
  transactional id of the cluster (asking every node), Kafka's columns: ``TransactionalId
  Coordinator ProducerId TransactionState``; only those in the states (Kafka's names: Empty,
  Ongoing, PrepareCommit, ...), of the producer ids, and open at least D ms, if given.
* ``describe --transactional-id T`` prints the id's state at its coordinator, Kafka's columns:
  ``CoordinatorId TransactionalId ProducerId ProducerEpoch TransactionState
  TransactionTimeoutMs CurrentTransactionStartTimeMs TransactionDurationMs TopicPartitions``
  (``None`` for the start and duration with no transaction open, as Kafka's tool).

* ``find-hanging (--broker-id B | --topic T [--partition P]) [--max-transaction-timeout M]``
  prints the transactions partitions hold open that no coordinator will end
  (:mod:`odradek.cli.hanging`).

* ``abort --topic T --partition P (--start-offset O | --producer-id I --producer-epoch E
  --coordinator-epoch C)`` writes an ABORT marker for a producer's open transaction on the
  partition at its leader (a hanging one: CLUSTER_ACTION on the cluster needed); with
  ``--start-offset`` the producer, its epoch and coordinator epoch are the partition's producer
  whose open transaction starts there (DescribeProducers), as Kafka's tool finds them.

Errors print one line and exit 1 (TRANSACTIONAL_ID_NOT_FOUND, ...); a bad state is a usage
error (exit 2).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from odradek.cli.common import InputError, add_bootstrap_option, non_negative_int, table
from odradek.clock import SystemClock

if TYPE_CHECKING:
    from odradek.admin import Admin
    from odradek.client.txn_admin import TransactionDescription, TransactionListing

__all__ = ["add_parser", "describe_table", "list_table"]

PROG = "odradek transactions"
LIST_HEADER = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADER = (
    "CoordinatorId",
    "TransactionalId",
    "ProducerId",
    "ProducerEpoch",
    "TransactionState",
    "TransactionTimeoutMs",
    "CurrentTransactionStartTimeMs",
    "TransactionDurationMs",
    "TopicPartitions",
)


def _admin(args: argparse.Namespace) -> Admin:
    from odradek.admin import Admin

    return Admin(args.bootstrap_server)


def list_table(listings: list[TransactionListing]) -> list[str]:
    """Kafka's ``list`` columns, one line per transactional id."""
    return table(
        LIST_HEADER,
        [
            [t.transactional_id, str(t.coordinator_id), str(t.producer_id), t.state]
            for t in listings
        ],
    )


def describe_table(d: TransactionDescription, now_ms: int) -> list[str]:
    """Kafka's ``describe`` columns for one transactional id at wall time ``now_ms``."""
    start = d.transaction_start_time_ms
    partitions = ",".join(f"{tp.topic}-{tp.partition}" for tp in sorted(d.topic_partitions))
    return table(
        DESCRIBE_HEADER,
        [
            [
                str(d.coordinator_id),
                d.transactional_id,
                str(d.producer_id),
                str(d.producer_epoch),
                d.state,
                str(d.transaction_timeout_ms),
                "None" if start is None else str(start),
                "None" if start is None else str(max(0, now_ms - start)),
                partitions,
            ]
        ],
    )


def _states(text: str) -> list[str]:
    from odradek.client.txn_admin import TRANSACTION_STATES

    states = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in states if s not in TRANSACTION_STATES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown state {', '.join(unknown)} (one of {', '.join(TRANSACTION_STATES)})"
        )
    return states


def _producer_ids(text: str) -> list[int]:
    try:
        return [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected producer ids P[,P...], got {text!r}") from None


def run_list(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        listings = admin.list_transactions(
            states=args.state, producer_ids=args.producer_id, duration_ms=args.duration_ms
        )
    for line in list_table(listings):
        print(line)
    return 0


def run_describe(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        described = admin.describe_transactions([args.transactional_id])
    for line in describe_table(described[args.transactional_id], SystemClock().wall_ms()):
        print(line)
    return 0


def run_find_hanging(args: argparse.Namespace) -> int:
    from odradek.cli.hanging import find_hanging, hanging_table
    from odradek.client.types import TopicPartition

    if args.broker_id is None and args.topic is None:
        raise InputError("find-hanging needs --broker-id or --topic")
    if args.partition is not None and args.topic is None:
        raise InputError("--partition needs --topic")
    now_ms = SystemClock().wall_ms()
    with _admin(args) as admin:
        partitions = None
        if args.topic is not None:
            if args.partition is not None:
                partitions = [TopicPartition(args.topic, args.partition)]
            else:
                topic = admin.describe_topics([args.topic])[args.topic]
                partitions = [TopicPartition(args.topic, p.partition) for p in topic.partitions]
        found = find_hanging(
            admin,
            broker_id=args.broker_id,
            partitions=partitions,
            max_timeout_ms=args.max_transaction_timeout * 60_000,
            now_ms=now_ms,
        )
    for line in hanging_table(found, now_ms):
        print(line)
    return 0


def run_abort(args: argparse.Namespace) -> int:
    from odradek.client.types import TopicPartition

    by_producer = (args.producer_id, args.producer_epoch, args.coordinator_epoch)
    if args.start_offset is None and None in by_producer:
        raise InputError(
            "abort needs --start-offset, or --producer-id, --producer-epoch and --coordinator-epoch"
        )
    if args.start_offset is not None and by_producer != (None, None, None):
        raise InputError(
            "--start-offset goes without --producer-id, --producer-epoch and --coordinator-epoch"
        )
    tp = TopicPartition(args.topic, args.partition)
    with _admin(args) as admin:
        if args.start_offset is not None:
            producers = admin.describe_producers([tp])[tp].active_producers
            found = [
                p for p in producers if p.current_transaction_start_offset == args.start_offset
            ]
            if not found:
                raise InputError(
                    f"no open transaction of {tp.topic}-{tp.partition} starts at offset "
                    f"{args.start_offset}"
                )
            (p,) = found
            by_producer = (
                p.producer_id,
                p.producer_epoch,
                -1 if p.coordinator_epoch is None else p.coordinator_epoch,
            )
        producer_id, producer_epoch, coordinator_epoch = by_producer
        admin.abort_transaction(tp, producer_id, producer_epoch, coordinator_epoch)
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``transactions`` on the ``odradek`` command's subparsers."""
    p = sub.add_parser(
        "transactions",
        help="list and describe transactions",
        description="Transactions, as kafka-transactions.sh.",
    )
    add_bootstrap_option(p, top_level=False)
    cmds = p.add_subparsers(dest="transactions_command", metavar="ACTION", required=True)

    ls = cmds.add_parser("list", help="list the transactional ids of every node")
    add_bootstrap_option(ls, top_level=False)
    ls.add_argument("--state", type=_states, default=[], metavar="S1,S2", help="only these states")
    ls.add_argument(
        "--producer-id",
        type=_producer_ids,
        default=[],
        metavar="P1,P2",
        help="only these producer ids",
    )
    ls.add_argument(
        "--duration-ms",
        type=non_negative_int,
        default=None,
        metavar="D",
        help="only transactions open at least D ms",
    )
    ls.set_defaults(handler=run_list, prog=f"{PROG} list")

    d = cmds.add_parser("describe", help="one transactional id's state at its coordinator")
    add_bootstrap_option(d, top_level=False)
    d.add_argument("--transactional-id", required=True, metavar="T")
    d.set_defaults(handler=run_describe, prog=f"{PROG} describe")

    h = cmds.add_parser(
        "find-hanging", help="transactions partitions hold open that no coordinator will end"
    )
    add_bootstrap_option(h, top_level=False)
    h.add_argument("--broker-id", type=non_negative_int, metavar="B", help="every partition on B")
    h.add_argument("--topic", metavar="T", help="the partitions of T (at their leaders)")
    h.add_argument("--partition", type=non_negative_int, metavar="P", help="only partition P")
    h.add_argument(
        "--max-transaction-timeout",
        type=non_negative_int,
        default=15,
        metavar="M",
        help="minutes since a transaction's last batch before it may be hanging (default 15)",
    )
    h.set_defaults(handler=run_find_hanging, prog=f"{PROG} find-hanging")

    a = cmds.add_parser("abort", help="write an ABORT marker for an open (hanging) transaction")
    add_bootstrap_option(a, top_level=False)
    a.add_argument("--topic", required=True, metavar="T")
    a.add_argument("--partition", required=True, type=non_negative_int, metavar="P")
    a.add_argument(
        "--start-offset",
        type=non_negative_int,
        metavar="O",
        help="the open transaction's first offset (find-hanging's StartOffset)",
    )
    a.add_argument("--producer-id", type=int, metavar="I")
    a.add_argument("--producer-epoch", type=int, metavar="E")
    a.add_argument("--coordinator-epoch", type=int, metavar="C")
    a.set_defaults(handler=run_abort, prog=f"{PROG} abort")
