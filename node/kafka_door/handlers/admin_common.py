"""What the admin handlers share: the caller as the admin room takes it, the request's timeout
in milliseconds, grouping per-partition answers by topic, and the refusal when the node has no
admin room.

Pure helpers; thread-safe.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from node.admin.authorization import AuthorizedAdmin
from node.kafka_door.context import RequestContext
from node.kafka_door.services import DoorServices

__all__ = ["admin_of", "by_topic", "caller", "timeout_ms"]

T = TypeVar("T")


def admin_of(services: DoorServices) -> AuthorizedAdmin:
    """The node's admin room (every node serving the Kafka door has one)."""
    if services.admin is None:
        raise RuntimeError("this node serves the Kafka door without an admin room")
    return services.admin


def caller(ctx: RequestContext) -> tuple[str, str]:
    """``(principal, client host)``: the first two arguments of every admin-room call."""
    return str(ctx.principal), ctx.connection.peer_host


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
