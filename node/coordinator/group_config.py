"""A group's configs (Kafka 4's ``GroupConfig``): what IncrementalAlterConfigs sets on a GROUP
resource (type 32) and the coordinator applies to that group alone.

=================================  ======  =========================================  ========
name                               type    default (the broker's setting)             at least
=================================  ======  =========================================  ========
consumer.session.timeout.ms        INT     group.consumer.session.timeout.ms          1
consumer.heartbeat.interval.ms     INT     group.consumer.heartbeat.interval.ms       1
share.session.timeout.ms           INT     group.share.session.timeout.ms             1
share.heartbeat.interval.ms        INT     group.share.heartbeat.interval.ms          1
share.record.lock.duration.ms      INT     group.share.record.lock.duration.ms        1000
share.auto.offset.reset            STRING  ``latest`` (or ``earliest``, ``by_duration:<ISO-8601>``)
share.isolation.level              STRING  ``read_uncommitted`` (or ``read_committed``)
streams.session.timeout.ms         INT     group.streams.session.timeout.ms           1
streams.heartbeat.interval.ms      INT     group.streams.heartbeat.interval.ms        1
streams.num.standby.replicas       INT     group.streams.num.standby.replicas         0
=================================  ======  =========================================  ========

:func:`validate_group_config` is Kafka's ``GroupConfig.validate``: an unknown name, a value
that does not parse or is below its minimum, a value outside the broker's bounds
(``group.consumer.min.session.timeout.ms`` .. ``group.consumer.max.session.timeout.ms`` and the
like; the message names the bound: ``consumer.session.timeout.ms must be greater than or equal
to group.consumer.min.session.timeout.ms``), or a session timeout not above its heartbeat
interval: ``InvalidConfigError`` (INVALID_CONFIG, 40), with Kafka's messages.
:func:`group_config` reads stored overrides leniently (a value that no longer fits is still
applied; one that does not parse falls back to the default), as Kafka's ``GroupConfigManager``
applies what was validated when it was written.

Pure functions over Kafka-named string maps; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from node.coordinator.group_coordinator_config import GroupCoordinatorConfig
from odradek.errors import InvalidConfigError

__all__ = [
    "GROUP_CONFIG_NAMES",
    "STRING_GROUP_CONFIGS",
    "GroupConfig",
    "broker_synonym",
    "group_config",
    "group_config_defaults",
    "validate_group_config",
]


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """One group's effective configs (its overrides over the broker's defaults)."""

    consumer_session_timeout_ms: int
    """A consumer (KIP-848) member without a heartbeat for this long is removed."""
    consumer_heartbeat_interval_ms: int
    """The heartbeat interval a consumer group's members are told to keep."""
    share_session_timeout_ms: int
    share_heartbeat_interval_ms: int
    share_record_lock_duration_ms: int
    """How long a share group's consumer holds a delivered record's lock."""
    share_auto_offset_reset: str
    share_isolation_level: str
    streams_session_timeout_ms: int
    streams_heartbeat_interval_ms: int
    streams_num_standby_replicas: int


_SYNONYMS: Mapping[str, str | None] = {
    # the group config -> the broker setting its default comes from (None: a fixed default)
    "consumer.session.timeout.ms": "group.consumer.session.timeout.ms",
    "consumer.heartbeat.interval.ms": "group.consumer.heartbeat.interval.ms",
    "share.session.timeout.ms": "group.share.session.timeout.ms",
    "share.heartbeat.interval.ms": "group.share.heartbeat.interval.ms",
    "share.record.lock.duration.ms": "group.share.record.lock.duration.ms",
    "share.auto.offset.reset": None,
    "share.isolation.level": None,
    "streams.session.timeout.ms": "group.streams.session.timeout.ms",
    "streams.heartbeat.interval.ms": "group.streams.heartbeat.interval.ms",
    "streams.num.standby.replicas": "group.streams.num.standby.replicas",
}
GROUP_CONFIG_NAMES = frozenset(_SYNONYMS)
"""Every group config's name."""
STRING_GROUP_CONFIGS = frozenset({"share.auto.offset.reset", "share.isolation.level"})
"""The group configs of type STRING (the others are INT)."""
_FIXED_DEFAULTS = {"share.auto.offset.reset": "latest", "share.isolation.level": "read_uncommitted"}
_AT_LEAST = {"share.record.lock.duration.ms": 1000, "streams.num.standby.replicas": 0}
_ISOLATION_LEVELS = ("read_committed", "read_uncommitted")
_INT_MAX = 2**31 - 1
# Java's Duration.parse, as Kafka's ShareGroupAutoOffsetResetStrategy reads by_duration:
_ISO_DURATION = re.compile(
    r"[-+]?P(?:[-+]?\d+D)?(?:T(?:[-+]?\d+H)?(?:[-+]?\d+M)?(?:[-+]?\d+(?:[.,]\d{0,9})?S)?)?",
    re.IGNORECASE,
)


def broker_synonym(name: str) -> str | None:
    """The broker setting a group config's default comes from (``None``: a fixed default)."""
    return _SYNONYMS.get(name)


def group_config_defaults(broker: GroupCoordinatorConfig) -> dict[str, str]:
    """Every group config's default on a broker with ``broker``'s settings."""
    out = {}
    for name, synonym in _SYNONYMS.items():
        if synonym is None:
            out[name] = _FIXED_DEFAULTS[name]
        else:
            out[name] = str(getattr(broker, synonym.replace(".", "_")))
    return out


def _int(name: str, text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise InvalidConfigError(
            f"Invalid value {text} for configuration {name}: Not a number of type INT"
        ) from None
    if not -(2**31) <= value <= _INT_MAX:
        raise InvalidConfigError(
            f"Invalid value {text} for configuration {name}: Not a number of type INT"
        )
    minimum = _AT_LEAST.get(name, 1)
    if value < minimum:
        raise InvalidConfigError(
            f"Invalid value {value} for configuration {name}: Value must be at least {minimum}"
        )
    return value


def _string(name: str, text: str) -> str:
    value = text.strip()
    if name == "share.isolation.level":
        if value.lower() not in _ISOLATION_LEVELS:
            raise InvalidConfigError(
                f"Invalid value {text} for configuration {name}: "
                f"String must be one of: {', '.join(_ISOLATION_LEVELS)}"
            )
        return value.lower()
    lowered = value.lower()
    if lowered in ("latest", "earliest"):
        return lowered
    if lowered.startswith("by_duration:"):
        duration = value[len("by_duration:") :].strip()
        if _ISO_DURATION.fullmatch(duration) and not duration.startswith("-"):
            return value
        raise InvalidConfigError(
            f"Invalid value {text} for configuration {name}: Invalid duration format "
            f"{duration!r} for by_duration reset strategy"
        )
    raise InvalidConfigError(
        f"Invalid value {text} for configuration {name}: Invalid value `{text}` for configuration "
        f"{name}. The value must be either 'earliest', 'latest' or of the format "
        "'by_duration:<PnDTnHnMn.nS.>'."
    )


def _parse(values: Mapping[str, str]) -> GroupConfig:
    fields: dict[str, Any] = {}
    for name, text in values.items():
        parse = _string if name in STRING_GROUP_CONFIGS else _int
        fields[name.replace(".", "_")] = parse(name, text)
    return GroupConfig(**fields)


def validate_group_config(
    overrides: Mapping[str, str], broker: GroupCoordinatorConfig
) -> GroupConfig:
    """The group config ``overrides`` make on a broker with ``broker``'s settings, checked as
    Kafka's ``GroupConfig.validate``; raises ``InvalidConfigError`` (see the module)."""
    for name in overrides:
        if name not in GROUP_CONFIG_NAMES:
            raise InvalidConfigError(f"Unknown group config name: {name}")
    # the names not given take Kafka's built-in defaults (GroupConfig's ConfigDef), not the
    # broker's: the check is of the overrides, as Kafka's GroupConfig.validate parses them
    c = _parse({**group_config_defaults(GroupCoordinatorConfig()), **overrides})
    bounds = [
        (f"{kind}.{what}.ms", getattr(c, f"{kind}_{what.replace('.', '_')}_ms"), kind, what)
        for kind, what in (
            ("consumer", "heartbeat.interval"),
            ("consumer", "session.timeout"),
            ("share", "heartbeat.interval"),
            ("share", "session.timeout"),
            ("share", "record.lock.duration"),
            ("streams", "heartbeat.interval"),
            ("streams", "session.timeout"),
        )
    ]
    for name, value, kind, what in bounds:
        low = f"group.{kind}.min.{what}.ms"
        high = f"group.{kind}.max.{what}.ms"
        if value < getattr(broker, low.replace(".", "_")):
            raise InvalidConfigError(f"{name} must be greater than or equal to {low}")
        if value > getattr(broker, high.replace(".", "_")):
            raise InvalidConfigError(f"{name} must be less than or equal to {high}")
    if c.streams_num_standby_replicas > broker.group_streams_max_standby_replicas:
        raise InvalidConfigError(
            "streams.num.standby.replicas must be less than or equal to "
            "group.streams.max.standby.replicas"
        )
    for kind in ("consumer", "share", "streams"):
        session = getattr(c, f"{kind}_session_timeout_ms")
        if session <= getattr(c, f"{kind}_heartbeat_interval_ms"):
            raise InvalidConfigError(
                f"{kind}.session.timeout.ms must be greater than {kind}.heartbeat.interval.ms"
            )
    return c


def group_config(overrides: Mapping[str, str], broker: GroupCoordinatorConfig) -> GroupConfig:
    """The group's effective configs from its stored ``overrides``, leniently: an unknown name
    is ignored, a value that does not parse falls back to the broker's default (bounds are not
    checked again: they were when the value was written)."""
    values = group_config_defaults(broker)
    for name, text in overrides.items():
        if name not in GROUP_CONFIG_NAMES:
            continue
        try:
            _parse({**values, name: text})
        except InvalidConfigError:
            continue
        values[name] = text
    return _parse(values)
