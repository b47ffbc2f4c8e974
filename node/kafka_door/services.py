"""What the Kafka door's handlers reach of the node: the broker core and its rooms.

The same objects serve the gRPC door, so a produce, a fetch or an ACL check means the same thing
through either door. Built once by the node (:mod:`node.server`); read-only afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["DoorServices"]


@dataclass(frozen=True, slots=True)
class DoorServices:
    node_id: int
    replicas: Any
    """The replica manager (:class:`node.core.replica_manager.ReplicaManager`)."""
    metadata: Any
    """The metadata cache (:class:`node.core.metadata_cache.MetadataCache`)."""
    auth: Any
    """The authorization helper of the security room (ACL checks on domain values)."""
    producer_ids: Any
    """The producer id manager (InitProducerId)."""
    groups: Any
    """The group coordinator (FindCoordinator's partition of ``__consumer_offsets``)."""
    admin: Any
    """The admin manager (topics, configs, ACLs, SCRAM credentials, elections)."""
    auto_create_topics: bool = True
    """``auto.create.topics.enable``."""
