"""The APIs the Kafka door serves, with the versions it advertises: an explicit registry.

Each entry is one API key with the version range odradek implements and has tested against real
clients (kcat / librdkafka 2.0, confluent-kafka / librdkafka 2.16, kafka-python 3, aiokafka,
kafkajs; ``docs/kafka-protocol.md`` has the table). ApiVersions advertises exactly these ranges,
never the codec's whole range (Redpanda's handlers each declare their ``[min, max]``; Tansu
advertises "not a full descriptor range because a codec exists").

``refused_below``: versions advertised but answered only with an error. Produce is advertised
from v0 because librdkafka enables compression by an exact overlap with Produce v0
(KAFKA-18659); v0-v2 carry the old message formats, which odradek does not store.

Pure data and lookups; thread-safe (immutable after import).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from node.kafka_door.frames import request_class

__all__ = ["Api", "Registry"]


@dataclass(frozen=True, slots=True)
class Api:
    """One served API: its key, name, advertised versions and handler."""

    key: int
    name: str
    min_version: int
    max_version: int
    handler: Callable[..., Any]
    refused_below: int = -1
    """Versions below this are advertised but refused (see the module docstring)."""
    broker_only: bool = False
    """Never served to clients (replication stays on gRPC); listed to refuse explicitly."""
    on_loop: bool = False
    """The handler runs on the door's event loop, which every connection of the node shares:
    it must not block (Produce, whose append hands what would block to a request thread with
    :class:`~node.kafka_door.server.OnThread`). Other handlers run on a request thread."""

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


class Registry:
    """The door's APIs by key. Checks at construction that the codec has every advertised,
    served version (a registry entry the codec cannot decode is a programming error)."""

    def __init__(self, apis: Iterable[Api]) -> None:
        by_key: dict[int, Api] = {}
        for api in apis:
            if api.key in by_key:
                raise ValueError(f"API {api.key} registered twice")
            for version in range(max(api.min_version, api.refused_below), api.max_version + 1):
                request_class(api.key, version)  # raises LookupError if kio lacks it
            by_key[api.key] = api
        self._apis: Mapping[int, Api] = by_key

    def get(self, key: int) -> Api | None:
        return self._apis.get(key)

    def advertised(self) -> list[tuple[int, int, int]]:
        """``(api_key, min_version, max_version)`` for ApiVersions, by key."""
        return [(a.key, a.min_version, a.max_version) for _, a in sorted(self._apis.items())]

    def __iter__(self) -> Any:
        return iter(sorted(self._apis.values(), key=lambda a: a.key))
