"""What the admin handlers share: the caller as the admin room takes it, the request's timeout
in milliseconds, grouping per-partition answers by topic, the refusal when the node has no
admin room, and the ``authorized_operations`` bit fields (KIP-430).

Pure helpers; thread-safe.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from node.admin.authorization import AuthorizedAdmin
from node.kafka_door.context import RequestContext
from node.kafka_door.services import DoorServices
from odradek.acl import CLUSTER_NAME, SUPPORTED_OPERATIONS, AclOperation, ResourceType

__all__ = [
    "NO_OPERATIONS",
    "admin_of",
    "authorized_operations",
    "by_topic",
    "caller",
    "cluster_authorized_operations",
    "timeout_ms",
]

NO_OPERATIONS = -(2**31)
"""``authorized_operations`` when not asked for (Kafka's ``Int32.MinValue``)."""

T = TypeVar("T")


def admin_of(services: DoorServices) -> AuthorizedAdmin:
    """The node's admin room (every node serving the Kafka door has one)."""
    if services.admin is None:
        raise RuntimeError("this node serves the Kafka door without an admin room")
    return services.admin


def caller(ctx: RequestContext) -> tuple[str, str]:
    """``(principal, client host)``: the first two arguments of every admin-room call."""
    return str(ctx.principal), ctx.connection.peer_host


def authorized_operations(
    services: DoorServices, ctx: RequestContext, resource_type: ResourceType, name: str
) -> int:
    """Kafka's ``AuthHelper.authorizedOperations``: a bit field with bit ``op`` set for each
    operation the resource type supports that the caller may do on it (every one without an
    authorizer; implied operations count, as the authorizer decides them)."""
    decisions = admin_of(services).decisions
    principal, host = caller(ctx)
    return sum(
        1 << int(op)
        for op in SUPPORTED_OPERATIONS[resource_type]
        if decisions.allowed(principal, host, op, resource_type, name)
    )


def cluster_authorized_operations(services: DoorServices, ctx: RequestContext) -> int:
    """The cluster's, as Metadata v8-v10 and DescribeCluster answer them: 0 for a caller that
    may not DESCRIBE the cluster."""
    principal, host = caller(ctx)
    if not admin_of(services).decisions.cluster(principal, host, AclOperation.DESCRIBE):
        return 0
    return authorized_operations(services, ctx, ResourceType.CLUSTER, CLUSTER_NAME)


def timeout_ms(value: Any) -> int:
    """A request's ``timeout`` (kio's ``timedelta``) in milliseconds."""
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


def by_topic(items: Iterable[T], topic: Callable[[T], str]) -> list[tuple[str, list[T]]]:
    """``items`` grouped by topic, topics in the order first seen."""
    out: dict[str, list[T]] = {}
    for item in items:
        out.setdefault(topic(item), []).append(item)
    return list(out.items())
