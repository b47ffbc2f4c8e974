"""Topic configs as DescribeConfigs shows them, and IncrementalAlterConfigs' operations.

Pure functions over Kafka-named config maps (``{"retention.ms": "60000"}``):

- :func:`describe_topic_configs`: every topic config with its value and where it comes from
  (Kafka's ``ConfigSource``: the topic's override, the node's ``server.properties``, or the
  built-in default) and its synonyms, most specific first (Kafka's
  ``ConfigHelper.createTopicConfigEntry``);
- :func:`apply_incremental_ops`: SET / DELETE / APPEND / SUBTRACT on a topic's overrides, as
  Kafka's ``ConfigAdminManager.prepareIncrementalConfigs`` (APPEND and SUBTRACT only on a list
  config; an unknown name is INVALID_CONFIG);
- :func:`check_incremental_ops`: Kafka's ``ConfigAdminManager.preprocess`` checks (a name
  twice, a value missing) — INVALID_REQUEST.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from node.admin.requests import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    DescribedConfig,
)
from node.kafka_config import BROKER_TOPIC_NAMES
from odradek.errors import InvalidConfigError, InvalidRequestError
from storage.config import LogConfig

__all__ = [
    "LIST_CONFIGS",
    "apply_incremental_ops",
    "broker_synonym",
    "check_incremental_ops",
    "config_type",
    "describe_topic_configs",
    "topic_config_names",
]

LIST_CONFIGS = frozenset({"cleanup.policy"})
"""The topic configs of Kafka's type LIST (the only ones APPEND and SUBTRACT apply to)."""

_INT_CONFIGS = frozenset(
    {
        "segment.bytes",
        "segment.index.bytes",
        "index.interval.bytes",
        "max.message.bytes",
        "min.insync.replicas",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
    }
)
"""Kafka's INT topic configs (the other numbers are LONG, the ratio DOUBLE)."""

_UNPREFIXED = frozenset(
    {
        "min.insync.replicas",
        "unclean.leader.election.enable",
        "compression.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
    }
)
_KAFKA_BROKER_NAME = {ours: kafka for kafka, ours in BROKER_TOPIC_NAMES.items()}


def topic_config_names() -> frozenset[str]:
    """Every topic config odradek knows (Kafka's names)."""
    return frozenset(LogConfig().to_kafka())


def broker_synonym(name: str) -> str:
    """The broker config Kafka reads a topic config's default from (``retention.ms`` →
    ``log.retention.ms``, ``segment.ms`` → ``log.roll.ms``, ``max.message.bytes`` →
    ``message.max.bytes``)."""
    if name in _UNPREFIXED:
        return name
    ours = f"log.{name}"
    return _KAFKA_BROKER_NAME.get(ours, ours)


def config_type(name: str, value: object) -> ConfigType:
    """The Kafka type of topic config ``name`` whose built-in default is ``value``."""
    if name in LIST_CONFIGS:
        return ConfigType.LIST
    if isinstance(value, bool):
        return ConfigType.BOOLEAN
    if isinstance(value, float):
        return ConfigType.DOUBLE
    if isinstance(value, int):
        return ConfigType.INT if name in _INT_CONFIGS else ConfigType.LONG
    return ConfigType.STRING


def describe_topic_configs(
    overrides: Mapping[str, str],
    node_defaults: LogConfig,
    keys: Sequence[str] | None = None,
    *,
    include_synonyms: bool = True,
    dynamic_broker: Mapping[str, str] | None = None,
    dynamic_default: Mapping[str, str] | None = None,
) -> tuple[DescribedConfig, ...]:
    """Every topic config (or those in ``keys``, unknown ones left out, as Kafka), sorted by
    name: the topic's override (DYNAMIC_TOPIC_CONFIG), else this node's dynamic broker config
    (``dynamic_broker``, broker names: DYNAMIC_BROKER_CONFIG), else the cluster-wide one
    (``dynamic_default``: DYNAMIC_DEFAULT_BROKER_CONFIG), else the node's ``server.properties``
    value where it differs from the built-in default (STATIC_BROKER_CONFIG), else the built-in
    default (DEFAULT_CONFIG). None is read-only or sensitive."""
    builtin = LogConfig().to_kafka()
    node = node_defaults.to_kafka()
    typed = {f"{k}": getattr(LogConfig(), k.replace(".", "_"), None) for k in builtin}
    wanted = sorted(set(builtin) | set(overrides)) if keys is None else list(dict.fromkeys(keys))
    out = []
    for name in wanted:
        if name not in builtin and name not in overrides:
            continue
        broker_name = broker_synonym(name)
        synonyms: list[ConfigSynonym] = []
        if name in overrides:
            synonyms.append(ConfigSynonym(name, overrides[name], ConfigSource.DYNAMIC_TOPIC_CONFIG))
        for dynamic, source in (
            (dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
            (dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ):
            if dynamic and broker_name in dynamic and name in builtin:
                synonyms.append(ConfigSynonym(broker_name, dynamic[broker_name], source))
        if name in node and node[name] != builtin.get(name):
            synonyms.append(
                ConfigSynonym(broker_name, node[name], ConfigSource.STATIC_BROKER_CONFIG)
            )
        if name in builtin:
            synonyms.append(ConfigSynonym(broker_name, builtin[name], ConfigSource.DEFAULT_CONFIG))
        first = synonyms[0]
        out.append(
            DescribedConfig(
                name=name,
                value=first.value,
                config_source=first.source,
                synonyms=tuple(synonyms) if include_synonyms else (),
                config_type=config_type(name, typed.get(name)),
            )
        )
    return tuple(out)


def check_incremental_ops(ops: Sequence[AlterConfigOp]) -> None:
    """Kafka's preprocessing of one resource's operations: raises ``InvalidRequestError`` for a
    config named twice or a SET / APPEND / SUBTRACT without a value."""
    names = [op.name for op in ops]
    if len(set(names)) != len(names):
        raise InvalidRequestError("Error due to duplicate config keys")
    missing = [op.name for op in ops if op.op is not AlterConfigOpType.DELETE and op.value is None]
    if missing:
        raise InvalidRequestError(f"Null value not supported for : {', '.join(missing)}")


def _list_value(name: str, current: Mapping[str, str], defaults: Mapping[str, str]) -> list[str]:
    text = current.get(name, defaults.get(name, ""))
    return [v for v in text.split(",") if v]


def apply_incremental_ops(
    current: Mapping[str, str],
    ops: Iterable[AlterConfigOp],
    defaults: Mapping[str, str],
    known: Iterable[str],
    list_configs: Iterable[str] = LIST_CONFIGS,
) -> dict[str, str]:
    """The overrides after ``ops`` (Kafka's ``prepareIncrementalConfigs``): SET sets, DELETE
    removes (the default applies again), APPEND adds the values a list config does not hold
    yet (starting from its default when not overridden), SUBTRACT removes values from it.
    Raises ``InvalidConfigError`` for APPEND / SUBTRACT on a config that is no list, or an
    unknown name (DELETE included: odradek refuses to delete a name no topic can have; Kafka
    lets it pass). ``list_configs``: the names of type LIST (a topic's by default). The result
    is not validated here (``LogConfig.from_kafka`` does, and names an unknown SET)."""
    names = frozenset(known)
    lists = frozenset(list_configs)
    out = dict(current)
    for op in ops:
        if op.name not in names and op.op is not AlterConfigOpType.SET:
            raise InvalidConfigError(f"Unknown config name: {op.name}")
        if op.op is AlterConfigOpType.SET:
            assert op.value is not None
            out[op.name] = op.value
        elif op.op is AlterConfigOpType.DELETE:
            out.pop(op.name, None)
        else:
            if op.name not in lists:
                verb = "append" if op.op is AlterConfigOpType.APPEND else "subtract"
                raise InvalidConfigError(
                    f"Config value {verb} is not allowed for config key: {op.name}"
                )
            old = _list_value(op.name, out, defaults)
            given = (op.value or "").split(",")
            if op.op is AlterConfigOpType.APPEND:
                new = old + [v for v in given if v and v not in old]
            else:
                new = [v for v in old if v not in given]
            out[op.name] = ",".join(new)
    return out
