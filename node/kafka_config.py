"""Kafka's ``server.properties`` read by an odradek node: the file format and Kafka's names.

The file is a Java properties file, read with ``javaproperties`` (what
``java.util.Properties.load`` accepts: ``key=value``, ``key: value`` and ``key value``, ``#`` and
``!`` comments, ``\\`` line continuations, ``\\uXXXX`` and the other backslash escapes), so a
stock Kafka ``config/server.properties`` reads as Kafka reads it.

Kafka's broker names are accepted where odradek has the meaning:

* ``log.retention.hours`` / ``log.retention.minutes`` / ``log.retention.ms`` with Kafka's
  precedence (``ms`` over ``minutes`` over ``hours``; a negative result means no limit, -1), and
  the same for ``log.roll.hours`` / ``log.roll.ms`` and ``log.roll.jitter.hours`` /
  ``log.roll.jitter.ms`` (Kafka's ``KafkaConfig.logRetentionTimeMillis`` and ``logRollTimeMillis``);
* the broker names of topic defaults whose ``log.`` + topic-config name differs
  (``message.max.bytes``, ``log.index.size.max.bytes``, ``log.flush.interval.ms``,
  ``log.cleaner.delete.retention.ms``, ...), see :data:`BROKER_TOPIC_NAMES`;
* ``listeners`` and ``advertised.listeners`` pass through unchanged: the node reads them as
  Kafka does (:mod:`node.listeners`, several named listeners, PLAINTEXT, SSL or SASL_SSL).

A Kafka broker setting odradek has no use for (:data:`IGNORED_KAFKA_CONFIGS`, e.g.
``num.network.threads``) is accepted and reported once by the node at startup; any other unknown
name fails, suggesting the nearest known one (:func:`unknown_config_message`).

Pure functions; no I/O beyond what their callers pass in.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

import javaproperties

from odradek.errors import InvalidConfigError

BROKER_TOPIC_NAMES: Mapping[str, str] = {
    # Kafka's broker name -> odradek's ``log.<topic config>`` name (Kafka's LogConfig
    # ServerTopicConfigSynonyms, for the topic configs odradek has)
    "log.roll.ms": "log.segment.ms",
    "log.roll.jitter.ms": "log.segment.jitter.ms",
    "log.index.size.max.bytes": "log.segment.index.bytes",
    "log.index.interval.bytes": "log.index.interval.bytes",
    "message.max.bytes": "log.max.message.bytes",
    "log.segment.delete.delay.ms": "log.file.delete.delay.ms",
    "log.flush.interval.messages": "log.flush.messages",
    "log.flush.interval.ms": "log.flush.ms",
    "log.cleaner.min.cleanable.ratio": "log.min.cleanable.dirty.ratio",
    "log.cleaner.min.compaction.lag.ms": "log.min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "log.max.compaction.lag.ms",
    "log.cleaner.delete.retention.ms": "log.delete.retention.ms",
    "compression.type": "log.compression.type",
    "compression.gzip.level": "log.compression.gzip.level",
    "compression.lz4.level": "log.compression.lz4.level",
    "compression.zstd.level": "log.compression.zstd.level",
}
"""Kafka's broker names for topic defaults whose odradek spelling differs."""

_TIME_UNITS: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = (
    # the odradek name, then Kafka's names from the most to the least precise, with their unit
    (
        "log.retention.ms",
        (
            ("log.retention.ms", 1),
            ("log.retention.minutes", 60_000),
            ("log.retention.hours", 3_600_000),
        ),
    ),
    ("log.segment.ms", (("log.roll.ms", 1), ("log.roll.hours", 3_600_000))),
    ("log.segment.jitter.ms", (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", 3_600_000))),
)

IGNORED_KAFKA_CONFIGS = frozenset(
    {
        # threads, sockets, request queues: gRPC's server and odradek's thread pool do this
        "num.network.threads",
        "num.io.threads",
        "background.threads",
        "queued.max.requests",
        "queued.max.request.bytes",
        "socket.send.buffer.bytes",
        "socket.receive.buffer.bytes",
        "socket.listen.backlog.size",
        "max.connection.creation.rate",
        "num.recovery.threads.per.data.dir",
        "num.replica.fetchers",
        "num.replica.alter.log.dirs.threads",
        "replica.socket.timeout.ms",
        "replica.socket.receive.buffer.bytes",
        "replica.fetch.min.bytes",
        "fetch.purgatory.purge.interval.requests",
        "producer.purgatory.purge.interval.requests",
        "delete.records.purgatory.purge.interval.requests",
        "fetch.max.bytes",
        "max.incremental.fetch.session.cache.slots",
        # ZooKeeper client details kazoo handles its own way
        "zookeeper.connection.timeout.ms",
        "zookeeper.max.in.flight.requests",
        # broker features odradek does not have (yet)
        "broker.id.generation.enable",
        "reserved.broker.max.id",
        "auto.leader.rebalance.enable",
        "leader.imbalance.per.broker.percentage",
        "leader.imbalance.check.interval.seconds",
        "delete.topic.enable",
        "log.cleaner.enable",
        "log.cleaner.io.max.bytes.per.second",
        "log.cleaner.dedupe.buffer.size",
        "log.cleaner.io.buffer.size",
        "log.cleaner.io.buffer.load.factor",
        "log.cleaner.backoff.ms",
        "log.message.format.version",
        "log.message.downconversion.enable",
        "inter.broker.protocol.version",
        "controller.socket.timeout.ms",
        "replica.selector.class",
        "create.topic.policy.class.name",
        "alter.config.policy.class.name",
        "client.quota.callback.class",
        # group coordinator settings odradek does not use
        # (node/coordinator/group_coordinator_config.py
        # has those it does), and transactions: an internal topic odradek does not have
        "offsets.topic.compression.codec",
        "offsets.load.buffer.size",
        "offset.metadata.max.bytes",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
        "transaction.state.log.num.partitions",
        "transaction.state.log.segment.bytes",
        "transactional.id.expiration.ms",
        "transaction.max.timeout.ms",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        "producer.id.expiration.ms",
        # JMX metrics and quotas (odradek's metrics are Prometheus's: metrics.port)
        "metric.reporters",
        "metrics.num.samples",
        "metrics.sample.window.ms",
        "metrics.recording.level",
        "kafka.metrics.reporters",
        "kafka.metrics.polling.interval.secs",
        "auto.include.jmx.reporter",
        "quota.window.num",
        "quota.window.size.seconds",
        "replication.quota.window.num",
        "replication.quota.window.size.seconds",
        "alter.log.dirs.replication.quota.window.num",
        "alter.log.dirs.replication.quota.window.size.seconds",
    }
)
"""Kafka broker settings odradek accepts and ignores (logged once at startup): they tune parts
of Kafka's broker that odradek does not have or does another way."""

LISTENER_NAMES = ("listeners", "advertised.listeners")


def load_properties(text: str) -> dict[str, str]:
    """Parse a Java properties file (Kafka's ``server.properties``). Raises
    ``InvalidConfigError`` on what ``java.util.Properties`` would refuse (a bad ``\\u`` escape)."""
    try:
        return dict(javaproperties.loads(text))
    except ValueError as e:
        raise InvalidConfigError(f"invalid properties file: {e}") from None


def translate_kafka_names(props: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Rewrite Kafka's broker names into odradek's: returns ``(props, spelled)`` where
    ``spelled`` maps each rewritten odradek name to the name the user wrote (for error
    messages). Time settings in hours or minutes become milliseconds with Kafka's precedence.
    Raises ``InvalidConfigError`` for a non-integer time or a listener odradek cannot serve."""
    out = dict(props)
    spelled: dict[str, str] = {}
    for target, sources in _TIME_UNITS:
        given = [(name, unit) for name, unit in sources if name in out]
        if not given:
            continue
        name, unit = given[0]  # the most precise one wins, as in Kafka
        raw = out[name]
        for other, _ in sources:
            out.pop(other, None)
        try:
            value = int(raw) * unit
        except ValueError:
            raise InvalidConfigError(f"invalid value {raw!r} for node config {name!r}") from None
        out[target] = str(-1 if value < 0 and target == "log.retention.ms" else value)
        spelled[target] = name
    for kafka, ours in BROKER_TOPIC_NAMES.items():
        if kafka in out and kafka != ours:
            out[ours] = out.pop(kafka)
            spelled[ours] = kafka
    return out, spelled


def unknown_config_message(key: str, known: Iterable[str]) -> str:
    """``unknown node config 'nod.id' (did you mean 'node.id'?)``: the nearest known name by
    ``difflib``, when one is close enough."""
    match = difflib.get_close_matches(key, sorted(set(known)), n=1, cutoff=0.75)
    hint = f" (did you mean {match[0]!r}?)" if match else ""
    return f"unknown node config {key!r}{hint}"
