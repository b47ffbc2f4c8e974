"""KIP-951's fields on the Kafka wire: a partition's ``CurrentLeader`` and the answer's
``NodeEndpoints`` (Produce v10+, Fetch v16+), built from the door-neutral values of
:mod:`node.apis.current_leader` for whichever response class is being answered. Pure;
thread-safe."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kio.schema.types import BrokerId
from kio.static.primitive import i32

from node.core.requests import Broker, LeaderIdAndEpoch
from node.kafka_door.build import nested

__all__ = ["current_leader", "node_endpoints"]


def current_leader(cls: type[Any], leader: LeaderIdAndEpoch | None) -> dict[str, Any]:
    """``{"current_leader": ...}`` for a partition of ``cls``'s version, or nothing (the
    field's default, -1 and -1, which a tagged field leaves off the wire)."""
    if leader is None:
        return {}
    item = nested(cls, "LeaderIdAndEpoch")
    return {
        "current_leader": item(
            leader_id=BrokerId(leader.leader_id), leader_epoch=i32(leader.leader_epoch)
        )
    }


def node_endpoints(cls: type[Any], brokers: Sequence[Broker]) -> tuple[Any, ...]:
    """The ``NodeEndpoints`` of ``cls``'s version for ``brokers`` (a rack of "" is null)."""
    item = nested(cls, "NodeEndpoint")
    return tuple(
        item(node_id=BrokerId(b.node_id), host=b.host, port=i32(b.port), rack=b.rack or None)
        for b in brokers
    )
