"""The share coordinator's broker settings (Kafka's ``ShareCoordinatorConfig``:
``share.coordinator.*``), apart from the coordinator so that :mod:`node.config` can hold them
without importing it."""

from __future__ import annotations

from dataclasses import dataclass, fields

from odradek.errors import InvalidConfigError

__all__ = ["SHARE_COORDINATOR_PROPERTIES", "ShareCoordinatorConfig"]


@dataclass(frozen=True, slots=True)
class ShareCoordinatorConfig:
    """Kafka's names in :data:`SHARE_COORDINATOR_PROPERTIES`. Raises ``InvalidConfigError``
    for a non-positive value."""

    share_coordinator_state_topic_num_partitions: int = 50
    """Partitions of ``__share_group_state`` when it is created."""
    share_coordinator_state_topic_replication_factor: int = 3
    """Its replication factor, capped at the live brokers when it is created."""
    share_coordinator_state_topic_min_isr: int = 2
    """Its ``min.insync.replicas`` (capped at the replication factor)."""
    share_coordinator_state_topic_segment_bytes: int = 104_857_600
    """Its ``segment.bytes``."""
    share_coordinator_write_timeout_ms: int = 5_000
    """How long a write to ``__share_group_state`` waits for its replicas (else
    COORDINATOR_NOT_AVAILABLE, and the caller retries)."""

    def __post_init__(self) -> None:
        for f in fields(self):
            if getattr(self, f.name) <= 0:
                raise InvalidConfigError(f"{f.name.replace('_', '.')} must be positive")


SHARE_COORDINATOR_PROPERTIES = {
    f.name.replace("_", "."): f.name for f in fields(ShareCoordinatorConfig)
}
"""Kafka property name → :class:`ShareCoordinatorConfig` field."""
