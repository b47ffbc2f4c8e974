"""Per-log configuration: Kafka's topic configs, in snake_case with units.

``LogConfig`` mirrors Kafka's ``LogConfig`` (``storage/.../log/LogConfig.java``): each field is
the topic config of the same name (``segment.bytes`` → ``segment_bytes``) with Kafka's default
and lower bound. Values are validated in ``__post_init__``; an invalid value raises
:class:`InvalidConfigValueError` (an :class:`odradek.errors.InvalidConfigError`) naming the
config: by its field name when built from Python, by the Kafka name the user wrote when built
with :meth:`LogConfig.from_kafka`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from odradek.errors import InvalidConfigError

__all__ = [
    "LONG_MAX",
    "CLEANUP_POLICIES",
    "COMPRESSION_LEVELS",
    "COMPRESSION_TYPES",
    "CleanerConfig",
    "InvalidConfigValueError",
    "LogConfig",
    "LogManagerConfig",
]

LONG_MAX = 2**63 - 1
"""Java's ``Long.MAX_VALUE``: Kafka's "never" for flush and lag settings."""

CLEANUP_POLICIES = ("delete", "compact", "compact,delete")
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
"""``compression.type``'s values, in the order Kafka's ``BrokerCompressionType`` lists them."""
COMPRESSION_LEVELS = {
    # field: (lowest, highest, default), as Kafka's CompressionType (KIP-390)
    "compression_gzip_level": (1, 9, -1),
    "compression_lz4_level": (1, 17, 9),
    "compression_zstd_level": (-131072, 22, 3),
}
"""The level configs' ranges; gzip also takes -1, zlib's default (level 6)."""
_KAFKA_WORDED = frozenset({"compression_type", *COMPRESSION_LEVELS})
"""Configs whose invalid values are refused in Kafka's own words (``Invalid value x for
configuration compression.type: String must be one of: ...``), as Kafka clients expect."""
_KAFKA_VALUES = {
    "message_timestamp_type": {"create_time": "CreateTime", "log_append_time": "LogAppendTime"}
}
"""Values Kafka spells differently from the fields: ``to_kafka`` writes Kafka's spelling,
``from_kafka`` reads either (case-insensitively)."""


class InvalidConfigValueError(InvalidConfigError):
    """A setting's value is out of its range. ``config`` is the field's name and
    ``requirement`` what it must be, so a caller that read the value under another name (a
    Kafka config, a node property) can say it in that name."""

    def __init__(self, config: str, value: object, requirement: str) -> None:
        super().__init__(f"{config} {requirement}, not {value!r}")
        self.config = config
        self.requirement = requirement


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The configuration of one partition log. Immutable; derive changes with ``replace``."""

    segment_bytes: int = 1024 * 1024 * 1024
    """Roll the active segment before it would grow past this many bytes (min 14)."""
    segment_ms: int = 7 * 24 * 3600 * 1000
    """Roll when the active segment's records span this long (record time, min 1)."""
    segment_jitter_ms: int = 0
    """Subtract a per-segment random jitter in [0, min(this, segment_ms)) from segment_ms."""
    segment_index_bytes: int = 10 * 1024 * 1024
    """Preallocated size of each offset and time index file (min 4)."""
    index_interval_bytes: int = 4096
    """Add an offset-index entry after at least this many bytes of batches (min 0)."""
    max_message_bytes: int = 1024 * 1024 + 12
    """Largest record batch a leader accepts, in bytes (min 0)."""
    retention_ms: int = 7 * 24 * 3600 * 1000
    """Delete segments whose newest record is older than this; -1 keeps them forever."""
    retention_bytes: int = -1
    """Delete old segments while the log is larger than this; -1 means no size limit."""
    file_delete_delay_ms: int = 60_000
    """Wait this long between renaming a segment ``.deleted`` and removing its files (min 0)."""
    flush_messages: int = LONG_MAX
    """fsync when this many messages are unflushed (min 1)."""
    flush_ms: int = LONG_MAX
    """fsync when the last flush is older than this (min 0)."""
    preallocate: bool = False
    """Create new ``.log`` files at ``segment_bytes`` length (trimmed on roll and close)."""
    cleanup_policy: str = "delete"
    """``delete``, ``compact`` or ``compact,delete``."""
    message_timestamp_type: str = "create_time"
    """``create_time`` keeps the producer's timestamps; ``log_append_time`` stamps the broker's."""
    min_cleanable_dirty_ratio: float = 0.5
    """Compact when dirty bytes exceed this share of the log (0 to 1)."""
    min_compaction_lag_ms: int = 0
    """Never compact records younger than this (min 0)."""
    max_compaction_lag_ms: int = LONG_MAX
    """Compact records older than this whatever the dirty ratio (min 1)."""
    delete_retention_ms: int = 24 * 3600 * 1000
    """Keep tombstones this long after the cleaning that first saw them (min 0)."""
    min_insync_replicas: int = 1
    """acks=all needs at least this many in-sync replicas (min 1)."""
    unclean_leader_election_enable: bool = False
    """Allow an out-of-sync replica to become leader (losing data)."""
    producer_id_expiration_ms: int = 86_400_000
    """Forget an idempotent producer this long after its last batch's timestamp (Kafka's
    broker config ``producer.id.expiration.ms``; min 1)."""
    message_timestamp_before_max_ms: int = LONG_MAX
    """With ``create_time``: refuse a batch holding a record whose timestamp is more than
    this before the leader's clock (min 0; INVALID_TIMESTAMP, the records named)."""
    message_timestamp_after_max_ms: int = LONG_MAX
    """With ``create_time``: refuse a batch holding a record whose timestamp is more than
    this after the leader's clock (min 0)."""
    compression_type: str = "producer"
    """The codec the leader stores batches with: ``producer`` keeps each batch's own;
    ``uncompressed``, ``gzip``, ``snappy``, ``lz4`` or ``zstd`` recompresses a batch sent with
    another codec (:mod:`storage.recompression`)."""
    compression_gzip_level: int = -1
    """The gzip level of recompressed batches: 1 to 9, or -1 (zlib's default, 6)."""
    compression_lz4_level: int = 9
    """The lz4 level of recompressed batches: 1 (fast) to 17 (3 and above: LZ4 HC)."""
    compression_zstd_level: int = 3
    """The zstd level of recompressed batches: -131072 to 22."""

    def __post_init__(self) -> None:
        _at_least("segment_bytes", self.segment_bytes, 14)
        _at_least("segment_ms", self.segment_ms, 1)
        _at_least("segment_jitter_ms", self.segment_jitter_ms, 0)
        _at_least("segment_index_bytes", self.segment_index_bytes, 4)
        _at_least("index_interval_bytes", self.index_interval_bytes, 0)
        _at_least("max_message_bytes", self.max_message_bytes, 0)
        _at_least("retention_ms", self.retention_ms, -1)
        _at_least("retention_bytes", self.retention_bytes, -1)
        _at_least("file_delete_delay_ms", self.file_delete_delay_ms, 0)
        _at_least("flush_messages", self.flush_messages, 1)
        _at_least("flush_ms", self.flush_ms, 0)
        _at_least("min_compaction_lag_ms", self.min_compaction_lag_ms, 0)
        _at_least("max_compaction_lag_ms", self.max_compaction_lag_ms, 1)
        _at_least("delete_retention_ms", self.delete_retention_ms, 0)
        _at_least("min_insync_replicas", self.min_insync_replicas, 1)
        _at_least("producer_id_expiration_ms", self.producer_id_expiration_ms, 1)
        _at_least("message_timestamp_before_max_ms", self.message_timestamp_before_max_ms, 0)
        _at_least("message_timestamp_after_max_ms", self.message_timestamp_after_max_ms, 0)
        if self.cleanup_policy not in CLEANUP_POLICIES:
            raise InvalidConfigValueError(
                "cleanup_policy",
                self.cleanup_policy,
                f"must be one of {', '.join(CLEANUP_POLICIES)}",
            )
        if self.message_timestamp_type not in _KAFKA_VALUES["message_timestamp_type"]:
            raise InvalidConfigValueError(
                "message_timestamp_type",
                self.message_timestamp_type,
                "must be create_time or log_append_time",
            )
        if not 0.0 <= self.min_cleanable_dirty_ratio <= 1.0:
            raise InvalidConfigValueError(
                "min_cleanable_dirty_ratio", self.min_cleanable_dirty_ratio, "must be 0 to 1"
            )
        if self.compression_type not in COMPRESSION_TYPES:
            raise InvalidConfigValueError(
                "compression_type",
                self.compression_type,
                f"String must be one of: {', '.join(COMPRESSION_TYPES)}",
            )
        for name, (lowest, highest, default) in COMPRESSION_LEVELS.items():
            level = getattr(self, name)
            if isinstance(level, bool) or not isinstance(level, int):
                raise InvalidConfigValueError(name, level, "must be an integer")
            if level == default or lowest <= level <= highest:
                continue
            if default < lowest:  # gzip: Kafka's own wording for its -1
                requirement = f"Value must be between {lowest} and {highest} or equal to {default}"
            elif level < lowest:
                requirement = f"Value must be at least {lowest}"
            else:
                requirement = f"Value must be no more than {highest}"
            raise InvalidConfigValueError(name, level, requirement)

    @property
    def compact(self) -> bool:
        """Whether the log is compacted (policy ``compact`` or ``compact,delete``)."""
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        """Whether time and size retention apply (policy ``delete`` or ``compact,delete``)."""
        return "delete" in self.cleanup_policy

    @property
    def max_segment_ms(self) -> int:
        """``segment_ms``, capped by ``max_compaction_lag_ms`` on compacted logs (Kafka)."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    def replace(self, **changes: Any) -> LogConfig:
        """A copy with ``changes`` applied (validated). Raises ``InvalidConfigError``."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_kafka(
        cls,
        props: Mapping[str, str],
        base: LogConfig | None = None,
        *,
        spelled: Mapping[str, str] | None = None,
        kind: str = "topic config",
    ) -> LogConfig:
        """Build from Kafka-style topic configs (``{"segment.bytes": "1048576"}``).

        Unknown names, unparsable values and values out of range raise
        ``InvalidConfigError`` naming the config as the user wrote it: its key, or
        ``spelled[key]`` where the caller read it under another name (a node's
        ``log.segment.bytes``), and calling it a ``kind``. ``cleanup.policy`` accepts
        ``delete,compact`` in either order; ``message.timestamp.type`` Kafka's ``CreateTime``
        and ``LogAppendTime``.
        """
        base = base or cls()
        fields = {f.name: f for f in dataclasses.fields(cls)}
        written = {key: (spelled or {}).get(key, key) for key in props}
        changes: dict[str, Any] = {}
        for key, raw in props.items():
            name = key.replace(".", "_")
            if name not in fields:
                raise InvalidConfigError(f"unknown {kind} {written[key]!r}")
            current = getattr(base, name)
            value: Any
            try:
                if isinstance(current, bool):
                    if raw.lower() not in ("true", "false"):
                        raise ValueError(raw)
                    value = raw.lower() == "true"
                elif isinstance(current, int):
                    value = int(raw)
                elif isinstance(current, float):
                    value = float(raw)
                elif name in _KAFKA_WORDED:
                    value = raw.strip()  # Kafka's ValidString is case-sensitive
                else:
                    value = raw.strip().lower()
            except ValueError:
                if name in _KAFKA_WORDED:
                    raise InvalidConfigError(
                        f"Invalid value {raw} for configuration {written[key]}: "
                        "Not a number of type INT"
                    ) from None
                raise InvalidConfigError(
                    f"invalid value {raw!r} for {kind} {written[key]!r}"
                ) from None
            if name == "cleanup_policy":
                value = ",".join(sorted(p.strip() for p in value.split(",")))
            if name in _KAFKA_VALUES:
                value = {k.lower(): v for v, k in _KAFKA_VALUES[name].items()}.get(value, value)
            changes[name] = value
        try:
            return base.replace(**changes)
        except InvalidConfigValueError as e:
            key = e.config.replace("_", ".")
            if key not in props:
                raise
            requirement = e.requirement
            if e.config in _KAFKA_WORDED:
                raise InvalidConfigError(
                    f"Invalid value {props[key]} for configuration {written[key]}: {requirement}"
                ) from None
            if e.config in _KAFKA_VALUES:
                requirement = "must be " + " or ".join(_KAFKA_VALUES[e.config].values())
            raise InvalidConfigError(
                f"invalid value {props[key]!r} for {kind} {written[key]!r}: {requirement}"
            ) from None

    def to_kafka(self) -> dict[str, str]:
        """The Kafka-style names and values of every setting (inverse of ``from_kafka``)."""
        out: dict[str, str] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            text = str(value).lower() if isinstance(value, bool) else str(value)
            out[f.name.replace("_", ".")] = _KAFKA_VALUES.get(f.name, {}).get(text, text)
        return out


@dataclass(frozen=True, slots=True)
class LogManagerConfig:
    """Broker-wide settings of the log manager's periodic tasks (Kafka's ``log.*`` configs)."""

    retention_check_interval_ms: int = 300_000
    """How often retention runs (``log.retention.check.interval.ms``)."""
    flush_scheduler_interval_ms: int = LONG_MAX
    """How often logs are checked against ``flush_ms`` (``log.flush.scheduler.interval.ms``)."""
    flush_offset_checkpoint_interval_ms: int = 60_000
    """How often ``recovery-point-offset-checkpoint`` is written."""
    flush_start_offset_checkpoint_interval_ms: int = 60_000
    """How often ``log-start-offset-checkpoint`` is written."""
    high_watermark_checkpoint_interval_ms: int = 5_000
    """How often ``replication-offset-checkpoint`` is written."""
    initial_task_delay_ms: int = 30_000
    """Delay before the first retention pass after startup (``log.initial.task.delay.ms``)."""
    producer_id_expiration_check_interval_ms: int = 600_000
    """How often idle idempotent producers are forgotten
    (``producer.id.expiration.check.interval.ms``)."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            _at_least(f.name, getattr(self, f.name), 1 if f.name.endswith("interval_ms") else 0)


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """Broker-wide settings of the log cleaner (Kafka's ``log.cleaner.*`` configs).

    ``dedupe_buffer_bytes`` is the whole memory budget of the offset map: a log whose dirty
    section holds more distinct keys than fit is cleaned in several passes.
    """

    enable: bool = True
    """Compact logs whose policy includes ``compact`` (``log.cleaner.enable``)."""
    dedupe_buffer_bytes: int = 128 * 1024 * 1024
    """Memory of the key → offset map (``log.cleaner.dedupe.buffer.size``, min 1024)."""
    dedupe_buffer_load_factor: float = 0.9
    """Fill the map's slots up to this share (``log.cleaner.io.buffer.load.factor``)."""
    io_buffer_bytes: int = 512 * 1024
    """Read and write chunk of the cleaner (``log.cleaner.io.buffer.size``, min 1024); a batch
    larger than a chunk is read on its own."""
    backoff_ms: int = 15_000
    """Wait this long after a round that found nothing to clean (``log.cleaner.backoff.ms``)."""

    def __post_init__(self) -> None:
        _at_least("dedupe_buffer_bytes", self.dedupe_buffer_bytes, 1024)
        _at_least("io_buffer_bytes", self.io_buffer_bytes, 1024)
        _at_least("backoff_ms", self.backoff_ms, 0)
        if not 0.0 < self.dedupe_buffer_load_factor <= 1.0:
            raise InvalidConfigValueError(
                "dedupe_buffer_load_factor", self.dedupe_buffer_load_factor, "must be in (0, 1]"
            )


def _at_least(name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidConfigValueError(name, value, "must be an integer")
    if value < minimum:
        raise InvalidConfigValueError(name, value, f"must be at least {minimum}")
