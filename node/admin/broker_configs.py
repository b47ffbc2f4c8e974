"""Dynamic broker configs (Kafka's ``DynamicBrokerConfig``, KIP-226): which broker configs an
AlterConfigs / IncrementalAlterConfigs on a BROKER resource may change, Kafka's validation of
them, and how DescribeConfigs shows a broker's configs.

What is dynamic (Kafka's ``DynamicBrokerConfig.AllDynamicConfigs``, for what odradek has),
per broker (``/config/brokers/<id>``) and cluster-wide (``/config/brokers/<default>``) alike:

* the topic config defaults under their broker names (Kafka's ``DynamicLogConfig``:
  ``log.retention.ms``, ``log.retention.bytes``, ``log.segment.bytes``, ``log.roll.ms``,
  ``min.insync.replicas``, ``log.cleanup.policy``, ``message.max.bytes``, ...; every
  ``ServerTopicConfigSynonyms`` name): applied to every hosted log without an override of its
  own at once, so retention deletes by the new limits on its next pass;
* the log cleaner's (``LogCleaner.ReconfigurableConfigs``): ``log.cleaner.threads`` (Kafka's
  bounds: at least 1, at least half and at most double the current value),
  ``log.cleaner.dedupe.buffer.size``, ``log.cleaner.io.buffer.size``,
  ``log.cleaner.io.buffer.load.factor``, ``log.cleaner.io.max.bytes.per.second``,
  ``log.cleaner.backoff.ms``.

A per-broker value wins over the cluster-wide one, which wins over ``server.properties``
(STATIC_BROKER_CONFIG), which wins over the built-in default (DEFAULT_CONFIG); DescribeConfigs
lists the synonyms in that order (Kafka's ``DynamicBrokerConfig.brokerConfigSynonyms`` with
``ConfigHelper.createBrokerConfigEntry``).

Errors, as Kafka's ``ConfigAdminManager.validateBrokerConfigChange`` answers them, all
INVALID_REQUEST (42): a known broker config that is not dynamic (``Cannot update these configs
dynamically: Set(log.dirs)``), a value that does not parse or is out of range, a cleaner thread
count out of its bounds. An unknown name is INVALID_REQUEST too (``Unknown broker config name:
...``): Kafka stores a name it does not know (for plugins); odradek has none, and a misspelt
name silently kept would change nothing.

Pure functions over Kafka-named string maps; no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from node.admin.config_ops import broker_synonym, config_type, topic_config_names
from node.admin.requests import ConfigSource, ConfigSynonym, ConfigType, DescribedConfig
from odradek.errors import InvalidConfigError, InvalidRequestError
from storage.config import LogConfig

__all__ = [
    "CLEANER_CONFIGS",
    "DYNAMIC_LOG_CONFIGS",
    "cleaner_threads",
    "describe_broker_configs",
    "dynamic_broker_config_names",
    "effective_log_defaults",
    "validate_broker_configs",
]

DYNAMIC_LOG_CONFIGS: Mapping[str, str] = {
    broker_synonym(name): name for name in sorted(topic_config_names())
}
"""A dynamic topic default's broker name → the topic config it is the default of."""

_DOUBLE_MAX = "1.7976931348623157E308"
CLEANER_CONFIGS: Mapping[str, tuple[ConfigType, str, float]] = {
    # name -> (type, built-in default, minimum)
    "log.cleaner.threads": (ConfigType.INT, "1", 0),
    "log.cleaner.dedupe.buffer.size": (ConfigType.LONG, str(128 * 1024 * 1024), 0),
    "log.cleaner.io.buffer.size": (ConfigType.INT, str(512 * 1024), 0),
    "log.cleaner.io.buffer.load.factor": (ConfigType.DOUBLE, "0.9", float("-inf")),
    "log.cleaner.io.max.bytes.per.second": (ConfigType.DOUBLE, _DOUBLE_MAX, float("-inf")),
    "log.cleaner.backoff.ms": (ConfigType.LONG, "15000", 0),
}  # fmt: skip
"""The log cleaner's dynamic configs: type, Kafka's default, Kafka's minimum."""

_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)


def dynamic_broker_config_names() -> frozenset[str]:
    """Every broker config a BROKER resource may set dynamically."""
    return frozenset(DYNAMIC_LOG_CONFIGS) | frozenset(CLEANER_CONFIGS)


def _number(name: str, text: str, kind: ConfigType, minimum: float) -> float:
    type_name = kind.name
    try:
        value: float = float(text.strip()) if kind is ConfigType.DOUBLE else int(text.strip())
    except ValueError:
        raise InvalidRequestError(
            f"Invalid value {text} for configuration {name}: Not a number of type {type_name}"
        ) from None
    if kind is not ConfigType.DOUBLE:
        low, high = _INT_RANGE if kind is ConfigType.INT else _LONG_RANGE
        if not low <= value <= high:
            raise InvalidRequestError(
                f"Invalid value {text} for configuration {name}: Not a number of type {type_name}"
            )
    if value < minimum:
        shown = int(minimum) if kind is not ConfigType.DOUBLE else minimum
        raise InvalidRequestError(
            f"Invalid value {text} for configuration {name}: Value must be at least {shown}"
        )
    return value


def cleaner_threads(props: Mapping[str, str]) -> int:
    """``log.cleaner.threads`` in ``props`` (1 when absent or not a number)."""
    try:
        return max(1, int(props.get("log.cleaner.threads", "1")))
    except ValueError:
        return 1


def validate_broker_configs(
    props: Mapping[str, str],
    *,
    static_names: Collection[str],
    base: LogConfig,
    current_cleaner_threads: int,
) -> None:
    """Check the dynamic configs ``props`` a BROKER resource would hold (Kafka's
    ``DynamicBrokerConfig.validate`` and ``LogCleaner.validateReconfiguration``):
    ``static_names`` are the broker configs that exist but are read-only, ``base`` the log
    defaults the topic defaults apply over, ``current_cleaner_threads`` the cleaner threads the
    broker runs now. Raises ``InvalidRequestError`` (see the module)."""
    dynamic = dynamic_broker_config_names()
    read_only = sorted(n for n in props if n not in dynamic and n in static_names)
    if read_only:
        raise InvalidRequestError(
            f"Cannot update these configs dynamically: Set({', '.join(read_only)})"
        )
    unknown = sorted(n for n in props if n not in dynamic)
    if unknown:
        raise InvalidRequestError(f"Unknown broker config name: {', '.join(unknown)}")
    topic = {DYNAMIC_LOG_CONFIGS[n]: v for n, v in props.items() if n in DYNAMIC_LOG_CONFIGS}
    try:
        LogConfig.from_kafka(
            topic, base=base, spelled={t: b for b, t in DYNAMIC_LOG_CONFIGS.items()}, kind="config"
        )
    except InvalidConfigError as e:
        raise InvalidRequestError(e.message) from None
    for name, text in props.items():
        if name in CLEANER_CONFIGS:
            kind, _, minimum = CLEANER_CONFIGS[name]
            _number(name, text, kind, minimum)
    load_factor = props.get("log.cleaner.io.buffer.load.factor")
    if load_factor is not None and not 0.0 < float(load_factor) <= 1.0:
        raise InvalidRequestError(
            f"Invalid value {load_factor} for configuration log.cleaner.io.buffer.load.factor: "
            "Value must be in (0, 1]"
        )
    if "log.cleaner.threads" in props:
        threads = int(props["log.cleaner.threads"])
        current = current_cleaner_threads
        if threads < 1:
            raise InvalidRequestError("Log cleaner threads should be at least 1")
        if threads < current // 2:
            raise InvalidRequestError(
                "Log cleaner threads cannot be reduced to less than half the current value "
                f"{current}"
            )
        if threads > current * 2:
            raise InvalidRequestError(
                "Log cleaner threads cannot be increased to more than double the current value "
                f"{current}"
            )


def effective_log_defaults(static: LogConfig, dynamic: Mapping[str, str]) -> LogConfig:
    """The topic config defaults with the dynamic ones (broker names, the per-broker ones
    already laid over the cluster-wide ones) over ``static``. A stored value that does not
    apply (written by another version, or no longer valid) is left out, as Kafka's
    ``DynamicBrokerConfig`` skips an invalid dynamic config and keeps the rest."""
    topic = {DYNAMIC_LOG_CONFIGS[n]: v for n, v in dynamic.items() if n in DYNAMIC_LOG_CONFIGS}
    try:
        return LogConfig.from_kafka(topic, base=static)
    except InvalidConfigError:
        pass
    out = static
    for name, value in sorted(topic.items()):
        try:
            out = LogConfig.from_kafka({name: value}, base=out)
        except InvalidConfigError:
            continue
    return out


def describe_broker_configs(
    *,
    static_log: LogConfig,
    static_other: Mapping[str, tuple[str, ConfigType]],
    default: Mapping[str, str],
    broker: Mapping[str, str] | None,
    static_cleaner: Mapping[str, str] | None = None,
    keys: Sequence[str] | None,
    include_synonyms: bool,
) -> tuple[DescribedConfig, ...]:
    """A BROKER resource's configs, sorted by name (or in ``keys``' order, unknown ones left
    out). ``broker`` ``None``: the cluster-wide default resource, which shows only the configs
    set at the default level, each DYNAMIC_DEFAULT_BROKER_CONFIG (Kafka's
    ``currentDynamicDefaultConfigs``); else one broker (``broker``: its own dynamic configs):
    every dynamic config with the most specific source, and ``static_other`` (read-only
    settings: value and type, STATIC_BROKER_CONFIG). ``static_cleaner``: the cleaner configs
    ``server.properties`` sets to other than Kafka's default (a STATIC_BROKER_CONFIG synonym
    under the dynamic ones)."""
    builtin = LogConfig().to_kafka()
    static_topic = static_log.to_kafka()
    typed = {f"{k}": getattr(LogConfig(), k.replace(".", "_"), None) for k in builtin}
    entries: dict[str, DescribedConfig] = {}
    names = set(DYNAMIC_LOG_CONFIGS) | set(CLEANER_CONFIGS)
    if broker is None:
        names &= set(default)
    for name in names:
        synonyms: list[ConfigSynonym] = []
        if broker is not None and name in broker:
            synonyms.append(ConfigSynonym(name, broker[name], ConfigSource.DYNAMIC_BROKER_CONFIG))
        if name in default:
            synonyms.append(
                ConfigSynonym(name, default[name], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
            )
        if name in DYNAMIC_LOG_CONFIGS:
            topic = DYNAMIC_LOG_CONFIGS[name]
            kind = config_type(topic, typed.get(topic))
            if static_topic[topic] != builtin[topic]:
                synonyms.append(
                    ConfigSynonym(name, static_topic[topic], ConfigSource.STATIC_BROKER_CONFIG)
                )
            synonyms.append(ConfigSynonym(name, builtin[topic], ConfigSource.DEFAULT_CONFIG))
        else:
            kind, value, _ = CLEANER_CONFIGS[name]
            if static_cleaner and name in static_cleaner:
                synonyms.append(
                    ConfigSynonym(name, static_cleaner[name], ConfigSource.STATIC_BROKER_CONFIG)
                )
            synonyms.append(ConfigSynonym(name, value, ConfigSource.DEFAULT_CONFIG))
        first = synonyms[0]
        entries[name] = DescribedConfig(
            name,
            first.value,
            first.source,
            read_only=False,
            synonyms=tuple(synonyms) if include_synonyms else (),
            config_type=kind,
        )
    if broker is not None:
        for name, (value, kind) in static_other.items():
            synonym = (ConfigSynonym(name, value, ConfigSource.STATIC_BROKER_CONFIG),)
            entries[name] = DescribedConfig(
                name,
                value,
                ConfigSource.STATIC_BROKER_CONFIG,
                read_only=True,
                synonyms=synonym if include_synonyms else (),
                config_type=kind,
            )
    wanted = sorted(entries) if keys is None else [k for k in keys if k in entries]
    return tuple(entries[k] for k in dict.fromkeys(wanted))
