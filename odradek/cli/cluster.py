"""``odradek cluster describe``: the brokers, the active controller, and every partition with its
leader, leader epoch, replicas and ISR, marking the under-replicated (ISR smaller than the
replica list) and the offline (no leader) ones.

The output is for people: aligned columns under headers, a summary line last. Exit code 0
even when partitions are unhealthy (the marks say so); 1 when the cluster cannot be asked.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from odradek.cli.common import add_bootstrap_option, client_security, table

if TYPE_CHECKING:
    from odradek.client.metadata import ClusterMetadata, PartitionMetadata

__all__ = ["add_parser", "describe", "partition_status"]


def partition_status(p: PartitionMetadata) -> str:
    """``offline``, ``under-replicated``, both, or ``ok``."""
    marks = []
    if p.offline:
        marks.append("offline")
    if p.under_replicated:
        marks.append("under-replicated")
    return ",".join(marks) or "ok"


def _ids(ids: tuple[int, ...]) -> str:
    return ",".join(str(i) for i in ids) or "-"


def describe(cluster: ClusterMetadata, out: TextIO) -> None:
    """Print ``cluster`` as the command does."""
    controller = str(cluster.controller_id) if cluster.controller_id >= 0 else "none"
    print(f"Cluster id: {cluster.cluster_id or '-'}", file=out)
    print(f"Controller: {controller}", file=out)
    print(f"Brokers ({len(cluster.brokers)}):", file=out)
    broker_rows = [
        [
            str(b.node_id),
            b.address,
            b.rack or "-",
            "controller" if b.node_id == cluster.controller_id else "",
        ]
        for b in (cluster.brokers[i] for i in sorted(cluster.brokers))
    ]
    for line in table(["ID", "ADDRESS", "RACK", "ROLE"], broker_rows, indent="  "):
        print(line, file=out)
    rows = []
    under = offline = 0
    for name in sorted(cluster.topics):
        for p in cluster.topics[name].partitions:
            under += p.under_replicated
            offline += p.offline
            rows.append(
                [
                    name,
                    str(p.partition),
                    str(p.leader) if p.leader >= 0 else "none",
                    str(p.leader_epoch),
                    _ids(p.replicas),
                    _ids(p.isr),
                    partition_status(p),
                ]
            )
    print(f"Partitions ({len(rows)}):", file=out)
    header = ["TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "STATUS"]
    for line in table(header, rows, indent="  "):
        print(line, file=out)
    print(
        f"{_count(len(cluster.brokers), 'broker')}, {_count(len(cluster.topics), 'topic')}, "
        f"{_count(len(rows), 'partition')}: {under} under-replicated, {offline} offline",
        file=out,
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def run_describe(args: argparse.Namespace) -> int:
    from odradek.admin import Admin

    with Admin(args.bootstrap_server, **client_security(args)) as admin:
        cluster = admin.cluster_metadata()
    describe(cluster, sys.stdout)
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``cluster`` and its subcommands on the ``odradek`` command's subparsers."""
    cluster = sub.add_parser(
        "cluster", help="describe the cluster", description="Inspect the cluster."
    )
    actions = cluster.add_subparsers(
        dest="cluster_command", metavar="ACTION", required=True, parser_class=type(cluster)
    )
    p = actions.add_parser("describe", help=__doc__.splitlines()[0], description=__doc__)
    add_bootstrap_option(p, top_level=False)
    p.set_defaults(handler=run_describe, prog=p.prog, parser=p)
