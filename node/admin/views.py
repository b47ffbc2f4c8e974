"""What the admin room reads of the rest of the node, as small structural protocols: the node's
own objects fit them (the metadata cache, the log manager, the authorizer, the SCRAM credential
store) and the room imports none of them, nor their wire types.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from odradek.acl import AclBinding, AclBindingFilter
from odradek.scram import ScramCredential
from storage.log import Log

__all__ = [
    "AclStore",
    "BrokerView",
    "ClusterView",
    "CredentialStore",
    "EndpointView",
    "LocalLogs",
    "SnapshotView",
]


class EndpointView(Protocol):
    @property
    def listener(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...


class BrokerView(Protocol):
    @property
    def node_id(self) -> int: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def rack(self) -> str: ...
    @property
    def endpoints(self) -> Iterable[EndpointView]: ...


class SnapshotView(Protocol):
    @property
    def controller_id(self) -> int: ...
    @property
    def cluster_id(self) -> str: ...
    @property
    def brokers(self) -> Mapping[int, BrokerView]: ...
    @property
    def partitions(self) -> Mapping[tuple[str, int], Any]: ...


class ClusterView(Protocol):
    """The node's metadata cache (:class:`node.core.metadata_cache.MetadataCache`)."""

    @property
    def snapshot(self) -> SnapshotView: ...


class LocalLogs(Protocol):
    """The node's log manager (:class:`storage.log_manager.LogManager`)."""

    @property
    def log_dirs(self) -> Sequence[Path]: ...
    def all_logs(self) -> Mapping[tuple[str, int], Log]: ...
    def get_log(self, topic: str, partition: int) -> Log | None: ...


class AclStore(Protocol):
    """Where ACLs live (:class:`node.security.authorizer.AclAuthorizer`)."""

    def bindings(self) -> list[AclBinding]: ...
    def create_acls(self, bindings: Iterable[AclBinding]) -> None: ...
    def delete_acls(self, filters: Iterable[AclBindingFilter]) -> list[list[AclBinding]]: ...


class CredentialStore(Protocol):
    """Where SCRAM credentials live (:class:`node.security.scram_store.ScramCredentialStore`)."""

    def users(self) -> list[str]: ...
    def describe(self, user: str) -> dict[str, int]: ...
    def alter(self, user: str, upsert: dict[str, ScramCredential], delete: set[str]) -> None: ...
