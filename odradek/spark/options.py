"""The connector's options, parsed and checked with the names and meanings of Spark's Kafka source.

Spark hands a data source its options as a case-insensitive map of strings (keys arrive
lower-cased), so every parser here takes a ``Mapping[str, str]`` with lower-case keys and
returns frozen values. Anything wrong raises :class:`OdradekSparkOptionError` naming the
option, which the data source raises from ``schema()`` or the reader's constructor so that the
error surfaces at ``load()``, before a job is planned — as Spark's ``KafkaSourceProvider``
validates in ``validateBatchOptions`` / ``validateStreamOptions``.

Offsets in JSON follow Spark: ``{"topic": {"0": 23, "1": -2}}`` with -2 for earliest and -1
for latest; timestamps in JSON the same shape with milliseconds since the epoch.

Pure: no I/O, no pyspark import (unit-tested without Spark). Thread-safe.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from odradek.client.connection import parse_bootstrap_servers
from odradek.client.security import SecurityConfig, from_kafka_properties
from odradek.client.types import TopicPartition

__all__ = [
    "EARLIEST",
    "LATEST",
    "OdradekSparkOptionError",
    "OffsetSpec",
    "ReadOptions",
    "Subscription",
    "WriteOptions",
    "parse_bool",
    "parse_read_options",
    "parse_write_options",
    "parse_servers",
    "parse_security",
]

EARLIEST = -2
"""In offsets JSON: the partition's log start offset (Spark's ``-2``)."""
LATEST = -1
"""In offsets JSON: the partition's high watermark (Spark's ``-1``)."""


class OdradekSparkOptionError(ValueError):
    """An option of the ``odradek`` data source is missing, malformed or contradicts another.

    ``option`` names the offending option as users spell it (Spark's camelCase).
    """

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


@dataclass(frozen=True, slots=True)
class Subscription:
    """What to read: ``subscribe`` (topics), ``subscribePattern`` (a regex over topic names)
    or ``assign`` (explicit topic-partitions)."""

    kind: Literal["subscribe", "subscribePattern", "assign"]
    topics: tuple[str, ...] = ()
    pattern: str = ""
    partitions: tuple[TopicPartition, ...] = ()

    def matches(self, topic: str) -> bool:
        """Whether a ``subscribePattern`` subscription takes ``topic`` (whole-name match, as
        Java's ``Pattern.matcher(topic).matches()``)."""
        return re.fullmatch(self.pattern, topic) is not None


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """Where a read starts or ends.

    ``kind`` is ``earliest``, ``latest``, ``offsets`` (``offsets`` per partition, -2/-1
    allowed), ``timestamp`` (one ``timestamp`` for every partition) or ``timestamps``
    (``timestamps`` per partition). ``option`` is the option it came from, for messages.
    """

    kind: Literal["earliest", "latest", "offsets", "timestamp", "timestamps"]
    option: str
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    timestamp: int = -1
    timestamps: Mapping[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """Every option a read (batch or streaming) uses, checked."""

    # host:port list of the nodes to learn the cluster from.
    bootstrap_servers: str
    subscription: Subscription
    starting: OffsetSpec
    # None for streaming reads (Spark refuses endingOffsets there).
    ending: OffsetSpec | None
    # Raise when offsets the read needs were deleted (retention, DeleteRecords); else skip.
    fail_on_data_loss: bool = True
    # Split the read into at least this many Spark partitions.
    min_partitions: int | None = None
    # Split ranges so no Spark partition reads more than this many records.
    max_records_per_partition: int | None = None
    # Add the headers column.
    include_headers: bool = False
    # Streaming: the most records one micro-batch reads, spread over partitions.
    max_offsets_per_trigger: int | None = None
    # When no record is at or after a starting timestamp: "error" (Spark's default) or "latest".
    by_timestamp_strategy: Literal["error", "latest"] = "error"
    # How long a read task keeps retrying a partition that cannot be fetched.
    poll_timeout_ms: int = 120_000
    # The most bytes one fetch asks for per partition.
    fetch_max_bytes: int = 8 * 1024 * 1024
    # How to connect: kafka.security.protocol, kafka.ssl.*, kafka.sasl.* (TLS, mTLS, SCRAM).
    security: SecurityConfig = field(default_factory=SecurityConfig)
    # Streaming: the consumer group each finished micro-batch's end offsets are committed to
    # (commitOffsetsToGroup), so that lag tools see the query's progress; None: no commits.
    # kafka.group.id, else groupIdPrefix (default "spark-kafka-source") and a random suffix,
    # as Spark's Kafka source names its consumer groups.
    commit_group_id: str | None = None
    # Streaming: wait for at least this many new records before a micro-batch...
    min_offsets_per_trigger: int | None = None
    # ...but no longer than this since the last one (Spark's maxTriggerDelay, default 15m).
    max_trigger_delay_ms: int = 15 * 60_000
    # kafka.isolation.level: "read_committed" plans ranges up to the last stable offset and
    # drops aborted transactions' records; "read_uncommitted" (Kafka's default) reads up to
    # the high watermark, aborted and open transactions' records included.
    isolation_level: Literal["read_uncommitted", "read_committed"] = "read_uncommitted"


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """Every option a write uses, checked."""

    bootstrap_servers: str
    # The topic of every row (overrides a topic column, as Spark's Kafka sink does).
    topic: str | None = None
    # -1 (all in-sync replicas), 1 (the leader) or 0 (do not wait).
    acks: int = -1
    linger_ms: int = 5
    batch_size: int = 1_048_576  # the SDK producer's default (docs/sdk.md: chosen by bench/sdk.py)
    compression: str = "none"
    # How to connect: kafka.security.protocol, kafka.ssl.* (TLS, mTLS).
    security: SecurityConfig = field(default_factory=SecurityConfig)


# --- small parsers ------------------------------------------------------------------------------


def parse_bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    """``true``/``false`` (any case) under ``name`` (camelCase; looked up lower-cased)."""
    raw = options.get(name.lower())
    if raw is None:
        return default
    value = str(raw).strip().lower()
    if value in ("true", "false"):
        return value == "true"
    raise OdradekSparkOptionError(name, f"option '{name}' must be 'true' or 'false', not {raw!r}")


def _positive_int(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name.lower())
    if raw is None:
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise OdradekSparkOptionError(
            name, f"option '{name}' must be a positive integer, not {raw!r}"
        ) from None
    if value <= 0:
        raise OdradekSparkOptionError(
            name, f"option '{name}' must be a positive integer, not {raw!r}"
        )
    return value


_SECURITY_PREFIXES = ("kafka.security.", "kafka.ssl.", "kafka.sasl.")


def parse_security(options: Mapping[str, str]) -> SecurityConfig:
    """Kafka's client security properties with Spark's ``kafka.`` prefix, as Spark's Kafka
    source passes them on: ``kafka.security.protocol``, ``kafka.ssl.truststore.location``
    (PEM CA file), ``kafka.ssl.keystore.location`` (PEM key and chain), ``kafka.sasl.*``.
    Raises :class:`OdradekSparkOptionError` naming the first bad option; the files are read
    when a client is made."""
    props = {
        key[len("kafka.") :]: value
        for key, value in options.items()
        if key.startswith(_SECURITY_PREFIXES)
    }
    try:
        return SecurityConfig(**from_kafka_properties(props))
    except ValueError as exc:
        name = "kafka." + next(iter(props), "security.protocol")
        raise OdradekSparkOptionError(name, f"option '{name}': {exc}") from None


def parse_servers(options: Mapping[str, str]) -> str:
    """``odradek.bootstrap.servers``, or Spark's ``kafka.bootstrap.servers``: required."""
    raw = options.get("odradek.bootstrap.servers") or options.get("kafka.bootstrap.servers")
    if not raw:
        raise OdradekSparkOptionError(
            "odradek.bootstrap.servers",
            "option 'odradek.bootstrap.servers' (or 'kafka.bootstrap.servers') must be specified",
        )
    try:
        return ",".join(parse_bootstrap_servers(raw))
    except ValueError as exc:
        raise OdradekSparkOptionError(
            "odradek.bootstrap.servers",
            f"option 'odradek.bootstrap.servers' is not a host:port list: {exc}",
        ) from None


def _json_object(name: str, raw: str) -> dict[str, object]:
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise OdradekSparkOptionError(
            name, f"option '{name}' is not valid JSON ({exc.msg} at {exc.pos}): {raw!r}"
        ) from None
    if not isinstance(parsed, dict):
        raise OdradekSparkOptionError(
            name, f'option \'{name}\' must be a JSON object like {{"topic": {{"0": 23}}}}'
        )
    return parsed


def _per_partition(name: str, raw: str, *, low: int) -> dict[TopicPartition, int]:
    """``{"topic": {"0": n, ...}, ...}`` with every n an integer >= ``low``."""
    out: dict[TopicPartition, int] = {}
    for topic, parts in _json_object(name, raw).items():
        if not topic or not isinstance(parts, dict):
            raise OdradekSparkOptionError(
                name,
                f"option '{name}': topic {topic!r} must map to an object of partition -> value",
            )
        for key, value in parts.items():
            try:
                partition = int(key)
            except ValueError:
                partition = -1
            if partition < 0:
                raise OdradekSparkOptionError(
                    name, f"option '{name}': {key!r} of topic {topic!r} is not a partition number"
                )
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise OdradekSparkOptionError(
                    name,
                    f"option '{name}': the value for {topic}-{partition} must be an integer "
                    f">= {low}, not {value!r}",
                )
            out[TopicPartition(topic, partition)] = value
    return out


def _timestamp(name: str, raw: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        value = -1
    if value < 0:
        raise OdradekSparkOptionError(
            name, f"option '{name}' must be milliseconds since the epoch, not {raw!r}"
        )
    return value


def _offset_spec(options: Mapping[str, str], edge: Literal["starting", "ending"]) -> OffsetSpec:
    """Spark's precedence: ``<edge>Timestamp``, then ``<edge>OffsetsByTimestamp``, then
    ``<edge>Offsets``; earliest (starting) or latest (ending) when none is given."""
    ts_name = f"{edge}Timestamp"
    by_ts_name = f"{edge}OffsetsByTimestamp"
    offsets_name = f"{edge}Offsets"
    if (raw := options.get(ts_name.lower())) is not None:
        return OffsetSpec("timestamp", ts_name, timestamp=_timestamp(ts_name, raw))
    if (raw := options.get(by_ts_name.lower())) is not None:
        return OffsetSpec(
            "timestamps", by_ts_name, timestamps=_per_partition(by_ts_name, raw, low=0)
        )
    raw = options.get(offsets_name.lower())
    if raw is None:
        return OffsetSpec("earliest" if edge == "starting" else "latest", offsets_name)
    text = raw.strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec("earliest" if text.lower() == "earliest" else "latest", offsets_name)
    if not text.startswith("{"):
        raise OdradekSparkOptionError(
            offsets_name,
            f"option '{offsets_name}' must be 'earliest', 'latest' or JSON like "
            f'{{"topic": {{"0": 23}}}}, not {raw!r}',
        )
    return OffsetSpec(
        "offsets", offsets_name, offsets=_per_partition(offsets_name, text, low=LATEST - 1)
    )


def _subscription(options: Mapping[str, str]) -> Subscription:
    names = ("subscribe", "subscribePattern", "assign")
    given = [name for name in names if name.lower() in options]
    if len(given) != 1:
        which = f"{', '.join(given)} were" if given else "none was"
        raise OdradekSparkOptionError(
            "subscribe",
            "exactly one of the options 'subscribe', 'subscribePattern' and 'assign' must be "
            f"specified ({which} given)",
        )
    kind = given[0]
    raw = options[kind.lower()].strip()
    if kind == "subscribe":
        topics = tuple(dict.fromkeys(t.strip() for t in raw.split(",") if t.strip()))
        if not topics:
            raise OdradekSparkOptionError(
                "subscribe", f"option 'subscribe' must list one or more topics, not {raw!r}"
            )
        return Subscription("subscribe", topics=topics)
    if kind == "subscribePattern":
        if not raw:
            raise OdradekSparkOptionError(
                "subscribePattern", "option 'subscribePattern' must not be empty"
            )
        try:
            re.compile(raw)
        except re.error as exc:
            raise OdradekSparkOptionError(
                "subscribePattern", f"option 'subscribePattern' is not a valid regex: {exc}"
            ) from None
        return Subscription("subscribePattern", pattern=raw)
    assigned: list[TopicPartition] = []
    for topic, parts in _json_object("assign", raw).items():
        if (
            not topic
            or not isinstance(parts, list)
            or not parts
            or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in parts)
        ):
            raise OdradekSparkOptionError(
                "assign",
                f"option 'assign' must be JSON like {{\"topic\": [0, 1]}}; topic {topic!r} maps "
                f"to {parts!r}",
            )
        assigned.extend(TopicPartition(topic, p) for p in parts)
    if not assigned:
        raise OdradekSparkOptionError("assign", "option 'assign' names no partition")
    return Subscription("assign", partitions=tuple(dict.fromkeys(assigned)))


def _check_json_topics(spec: OffsetSpec, subscription: Subscription) -> None:
    """Per-partition offsets or timestamps may only name partitions the subscription reads."""
    named = list(spec.offsets) + list(spec.timestamps)
    for tp in named:
        if subscription.kind == "assign":
            ok = tp in subscription.partitions
        elif subscription.kind == "subscribe":
            ok = tp.topic in subscription.topics
        else:
            ok = subscription.matches(tp.topic)
        if not ok:
            raise OdradekSparkOptionError(
                spec.option,
                f"option '{spec.option}' names {tp}, which the {subscription.kind} option "
                "does not read",
            )


def parse_read_options(options: Mapping[str, str], *, streaming: bool | None) -> ReadOptions:
    """The options of a batch (``streaming=False``) or streaming read; ``None`` checks what
    both have in common (the data source's ``schema()`` does not know which it serves).

    Follows Spark's Kafka source: batch reads start at ``earliest`` by default and streaming
    reads at ``latest``; batch reads cannot start at ``latest`` (nor -1 in JSON) nor
    end at ``earliest`` (nor -2); streaming reads take no ending option.
    Raises :class:`OdradekSparkOptionError`.
    """
    servers = parse_servers(options)
    security = parse_security(options)
    subscription = _subscription(options)
    starting = _offset_spec(options, "starting")
    starting_given = any(
        name in options
        for name in ("startingoffsets", "startingtimestamp", "startingoffsetsbytimestamp")
    )
    if streaming and not starting_given:
        starting = OffsetSpec("latest", "startingOffsets")  # Spark's streaming default
    ending: OffsetSpec | None = None
    if streaming:
        for name in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
            if name.lower() in options:
                raise OdradekSparkOptionError(
                    name, f"option '{name}' is not valid in streaming queries"
                )
    elif streaming is None:
        ending = _offset_spec(options, "ending")
        _check_json_topics(ending, subscription)
    else:
        ending = _offset_spec(options, "ending")
        if starting.kind == "latest" or LATEST in starting.offsets.values():
            raise OdradekSparkOptionError(
                "startingOffsets",
                "option 'startingOffsets' cannot be 'latest' (or -1) for batch queries",
            )
        if ending.kind == "earliest" or EARLIEST in ending.offsets.values():
            raise OdradekSparkOptionError(
                "endingOffsets",
                "option 'endingOffsets' cannot be 'earliest' (or -2) for batch queries",
            )
        _check_json_topics(ending, subscription)
    _check_json_topics(starting, subscription)
    strategy = options.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise OdradekSparkOptionError(
            "startingOffsetsByTimestampStrategy",
            "option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', "
            f"not {strategy!r}",
        )
    min_offsets = _positive_int(options, "minOffsetsPerTrigger")
    max_offsets = _positive_int(options, "maxOffsetsPerTrigger")
    if min_offsets is not None and max_offsets is not None and min_offsets > max_offsets:
        raise OdradekSparkOptionError(
            "minOffsetsPerTrigger",
            f"value of minOffsetsPerTrigger ({min_offsets}) is higher than the "
            f"maxOffsetsPerTrigger ({max_offsets})",
        )
    poll_timeout = _positive_int(options, "kafkaConsumer.pollTimeoutMs")
    fetch_max_bytes = _positive_int(options, "fetch.max.bytes")
    return ReadOptions(
        bootstrap_servers=servers,
        subscription=subscription,
        starting=starting,
        ending=ending,
        fail_on_data_loss=parse_bool(options, "failOnDataLoss", True),
        min_partitions=_positive_int(options, "minPartitions"),
        max_records_per_partition=_positive_int(options, "maxRecordsPerPartition"),
        include_headers=parse_bool(options, "includeHeaders", False),
        max_offsets_per_trigger=_positive_int(options, "maxOffsetsPerTrigger"),
        by_timestamp_strategy="latest" if strategy == "latest" else "error",
        poll_timeout_ms=poll_timeout if poll_timeout is not None else 120_000,
        fetch_max_bytes=fetch_max_bytes if fetch_max_bytes is not None else 8 * 1024 * 1024,
        security=security,
        commit_group_id=_commit_group_id(options, streaming),
        min_offsets_per_trigger=min_offsets,
        max_trigger_delay_ms=_duration_ms(options, "maxTriggerDelay", 15 * 60_000),
        isolation_level=_isolation_level(options),
    )


def _isolation_level(options: Mapping[str, str]) -> Literal["read_uncommitted", "read_committed"]:
    """``kafka.isolation.level`` (Kafka's consumer property, which Spark's Kafka source passes
    on): ``read_uncommitted`` (the default) or ``read_committed``, any case."""
    raw = options.get("kafka.isolation.level")
    if raw is None:
        return "read_uncommitted"
    value = str(raw).strip().lower()
    if value == "read_committed":
        return "read_committed"
    if value == "read_uncommitted":
        return "read_uncommitted"
    raise OdradekSparkOptionError(
        "kafka.isolation.level",
        "option 'kafka.isolation.level' must be 'read_uncommitted' or 'read_committed', "
        f"not {raw!r}",
    )


_DURATION = re.compile(r"\s*(\d+)\s*(us|ms|s|m|min|h|d)?\s*", re.IGNORECASE)
_UNIT_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}


def _duration_ms(options: Mapping[str, str], name: str, default: int) -> int:
    """A duration as Spark's ``JavaUtils.timeStringAsMs`` reads it: a number with an optional
    unit (us, ms, s, m or min, h, d; none: milliseconds)."""
    raw = options.get(name.lower())
    if raw is None:
        return default
    match = _DURATION.fullmatch(str(raw))
    if match is None:
        raise OdradekSparkOptionError(
            name, f"option '{name}' must be a duration such as 15m, 30s or 500ms, not {raw!r}"
        )
    unit = (match.group(2) or "ms").lower()
    scale = 86_400_000 if unit == "d" else _UNIT_MS[unit]
    return int(int(match.group(1)) * scale)


def _commit_group_id(options: Mapping[str, str], streaming: bool | None) -> str | None:
    """``commitOffsetsToGroup``'s group: ``kafka.group.id``, else ``groupIdPrefix`` (Spark's
    default ``spark-kafka-source``) and a random suffix. Raises for an empty group id or
    prefix, and for the option on a batch read (only micro-batches are committed)."""
    group_id = options.get("kafka.group.id")
    prefix = options.get("groupidprefix")
    if group_id is not None and not group_id.strip():
        raise OdradekSparkOptionError("kafka.group.id", "option 'kafka.group.id' is empty")
    if prefix is not None and not prefix.strip():
        raise OdradekSparkOptionError("groupIdPrefix", "option 'groupIdPrefix' is empty")
    if not parse_bool(options, "commitOffsetsToGroup", False):
        return None
    if streaming is False:
        raise OdradekSparkOptionError(
            "commitOffsetsToGroup",
            "option 'commitOffsetsToGroup' commits micro-batches: it is for streaming queries",
        )
    if group_id is not None:
        return group_id.strip()
    return f"{(prefix or 'spark-kafka-source').strip()}-{uuid.uuid4()}"


def parse_write_options(options: Mapping[str, str]) -> WriteOptions:
    """The options of a batch or streaming write. Producer settings may be given with the
    ``kafka.`` or ``odradek.`` prefix and Kafka's names (``kafka.acks``, ``kafka.linger.ms``,
    ``kafka.batch.size``, ``kafka.compression.type``). Raises
    :class:`OdradekSparkOptionError`."""
    servers = parse_servers(options)
    topic = options.get("topic")
    if topic is not None and not topic.strip():
        raise OdradekSparkOptionError("topic", "option 'topic' must not be empty")

    def producer_option(name: str) -> tuple[str, str] | None:
        for prefix in ("odradek.", "kafka."):
            raw = options.get(prefix + name)
            if raw is not None:
                return prefix + name, raw.strip()
        return None

    acks = -1
    if (found := producer_option("acks")) is not None:
        name, raw = found
        if raw.lower() == "all":
            raw = "-1"
        if raw not in ("-1", "0", "1"):
            raise OdradekSparkOptionError(
                name, f"option '{name}' must be 'all', -1, 0 or 1, not {raw!r}"
            )
        acks = int(raw)
    numbers = {"linger.ms": 5, "batch.size": 1_048_576}
    for key in numbers:
        if (found := producer_option(key)) is not None:
            name, raw = found
            if not raw.isdigit():
                raise OdradekSparkOptionError(
                    name, f"option '{name}' must be a non-negative integer, not {raw!r}"
                )
            numbers[key] = int(raw)
    compression = "none"
    if (found := producer_option("compression.type")) is not None:
        name, compression = found[0], found[1].lower()
        if compression not in ("none", "gzip", "snappy", "lz4", "zstd"):
            raise OdradekSparkOptionError(
                name,
                f"option '{name}' must be none, gzip, snappy, lz4 or zstd, not {compression!r}",
            )
    if numbers["batch.size"] < 1:
        raise OdradekSparkOptionError("kafka.batch.size", "option 'kafka.batch.size' must be > 0")
    return WriteOptions(
        security=parse_security(options),
        bootstrap_servers=servers,
        topic=topic.strip() if topic is not None else None,
        acks=acks,
        linger_ms=numbers["linger.ms"],
        batch_size=numbers["batch.size"],
        compression=compression,
    )
