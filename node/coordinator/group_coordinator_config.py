"""The group coordinator's broker settings (``offsets.*``, ``group.consumer.*``,
``group.share.*`` and ``group.streams.*``, Kafka's ``GroupCoordinatorConfig`` and
``ShareGroupConfig``; the ``min`` / ``max`` ones bound the group configs of
:mod:`node.coordinator.group_config`), apart from :mod:`node.coordinator.group_coordinator` so that
:mod:`node.config` can hold them without importing the coordinator."""

from __future__ import annotations

from dataclasses import dataclass, fields

from odradek.errors import InvalidConfigError

__all__ = ["GROUP_COORDINATOR_PROPERTIES", "STRING_PROPERTIES", "GroupCoordinatorConfig"]


_AT_LEAST_ZERO = frozenset(
    {
        "group_initial_rebalance_delay_ms",
        "group_streams_num_standby_replicas",
        "group_streams_max_standby_replicas",
    }
)


@dataclass(frozen=True, slots=True)
class GroupCoordinatorConfig:
    """The group coordinator's broker settings (Kafka's names in
    :data:`GROUP_COORDINATOR_PROPERTIES`). Raises ``InvalidConfigError`` for a non-positive
    value."""

    offsets_topic_num_partitions: int = 50
    """Partitions of ``__consumer_offsets`` when it is created."""
    offsets_topic_replication_factor: int = 3
    """Its replication factor, capped at the live brokers when it is created."""
    offsets_topic_segment_bytes: int = 104_857_600
    """Its ``segment.bytes``."""
    offsets_retention_minutes: int = 10_080
    """Committed offsets of topics a group no longer subscribes to expire after this."""
    offsets_retention_check_interval_ms: int = 600_000
    """How often expired offsets are looked for."""
    offsets_commit_timeout_ms: int = 5_000
    """How long a write waits for the high watermark (then COORDINATOR_NOT_AVAILABLE)."""
    group_consumer_session_timeout_ms: int = 45_000
    """A member without a heartbeat for this long is removed."""
    group_consumer_heartbeat_interval_ms: int = 5_000
    """The heartbeat interval members are told to keep."""
    group_consumer_max_size: int = 2**31 - 1
    """Members per group (GROUP_MAX_SIZE_REACHED beyond)."""
    group_consumer_min_session_timeout_ms: int = 45_000
    """The shortest ``consumer.session.timeout.ms`` a group config may set."""
    group_consumer_max_session_timeout_ms: int = 60_000
    """The longest ``consumer.session.timeout.ms`` a group config may set."""
    group_consumer_min_heartbeat_interval_ms: int = 5_000
    """The shortest ``consumer.heartbeat.interval.ms`` a group config may set."""
    group_consumer_max_heartbeat_interval_ms: int = 15_000
    """The longest ``consumer.heartbeat.interval.ms`` a group config may set."""
    group_share_session_timeout_ms: int = 45_000
    """Share groups' default ``share.session.timeout.ms`` (and its bounds below)."""
    group_share_min_session_timeout_ms: int = 45_000
    group_share_max_session_timeout_ms: int = 60_000
    group_share_heartbeat_interval_ms: int = 5_000
    """Share groups' default ``share.heartbeat.interval.ms`` (and its bounds below)."""
    group_share_min_heartbeat_interval_ms: int = 5_000
    group_share_max_heartbeat_interval_ms: int = 15_000
    group_share_max_size: int = 200
    """Members per share group (GROUP_MAX_SIZE_REACHED beyond; Kafka's default)."""
    group_share_record_lock_duration_ms: int = 30_000
    """Share groups' default ``share.record.lock.duration.ms`` (and its bounds below)."""
    group_share_min_record_lock_duration_ms: int = 15_000
    group_share_max_record_lock_duration_ms: int = 60_000
    # -- share partitions (node.share; Kafka's ShareGroupConfig) --
    group_share_delivery_count_limit: int = 5
    """Deliveries of a record to a share group before it is archived."""
    group_share_partition_max_record_locks: int = 2000
    """In-flight records of one share partition (no new records are acquired beyond)."""
    group_share_max_share_sessions: int = 2000
    """Share sessions on one broker (SHARE_SESSION_LIMIT_REACHED beyond)."""
    group_streams_session_timeout_ms: int = 45_000
    """Streams groups' default ``streams.session.timeout.ms`` (and its bounds below)."""
    group_streams_min_session_timeout_ms: int = 45_000
    group_streams_max_session_timeout_ms: int = 60_000
    group_streams_heartbeat_interval_ms: int = 5_000
    """Streams groups' default ``streams.heartbeat.interval.ms`` (and its bounds below)."""
    group_streams_min_heartbeat_interval_ms: int = 5_000
    group_streams_max_heartbeat_interval_ms: int = 15_000
    group_streams_num_standby_replicas: int = 0
    """Streams groups' default ``streams.num.standby.replicas`` (at most the maximum below)."""
    group_streams_max_standby_replicas: int = 2
    group_min_session_timeout_ms: int = 6_000
    """Classic groups: the shortest ``session.timeout.ms`` a member may ask for."""
    group_max_session_timeout_ms: int = 1_800_000
    """Classic groups: the longest ``session.timeout.ms`` a member may ask for."""
    group_initial_rebalance_delay_ms: int = 3_000
    """Classic groups: how long the first rebalance of an empty group waits for more members
    (again for each new one, up to the rebalance timeout); 0: none."""
    group_max_size: int = 2**31 - 1
    """Classic groups: members per group (GROUP_MAX_SIZE_REACHED beyond)."""
    group_consumer_migration_policy: str = "bidirectional"
    """Which online conversions between a classic group and a consumer (KIP-848) group the
    coordinator makes: ``bidirectional`` (Kafka 4.0's default), ``upgrade``, ``downgrade`` or
    ``disabled``, any case; an unknown name disables both, as Kafka's ``parse``."""

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name == "group_consumer_migration_policy":
                continue
            if f.name in _AT_LEAST_ZERO:
                if getattr(self, f.name) < 0:
                    raise InvalidConfigError(f"{f.name.replace('_', '.')} must be >= 0")
                continue
            if getattr(self, f.name) <= 0:
                raise InvalidConfigError(f"{f.name.replace('_', '.')} must be positive")


GROUP_COORDINATOR_PROPERTIES = {
    f.name.replace("_", "."): f.name for f in fields(GroupCoordinatorConfig)
}
"""Kafka property name → :class:`GroupCoordinatorConfig` field."""

STRING_PROPERTIES = frozenset({"group.consumer.migration.policy"})
"""The properties whose value is a string (the others are integers)."""
