"""What the Kafka door's handlers reach of the node: the broker core and its rooms.

The same objects serve the gRPC door, so a produce, a fetch or an ACL check means the same thing
through either door. Built once by the node (:mod:`node.server`); read-only afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from node.admin.authorization import AuthorizedAdmin
from node.apis import BrokerApis, GroupApis, RecordApis, ShareAdminApis, ShareGroupApis
from node.coordinator.producer_id_manager import ProducerIdManager
from node.core.metadata_cache import MetadataCache
from node.core.replica_manager import ReplicaManager
from node.metrics.request_metrics import RequestMetrics
from node.security.auth_helper import AuthHelper

__all__ = ["DoorServices", "broker_apis"]


@dataclass(frozen=True, slots=True)
class DoorServices:
    node_id: int
    replicas: ReplicaManager
    metadata: MetadataCache
    auth: AuthHelper | None
    """The ACL checks (``None``: no authorizer, everything allowed)."""
    producer_ids: ProducerIdManager | None
    groups: Any
    """The group coordinator (:class:`node.coordinator.group_coordinator.GroupCoordinator`)."""
    admin: AuthorizedAdmin | None
    """The admin room behind its ACL checks (topics, configs, ACLs, SCRAM credentials,
    elections, Metadata's auto-creation)."""
    auto_create_topics: bool = True
    """``auto.create.topics.enable``."""
    metrics: RequestMetrics | None = None
    """Bytes and records in and out per topic (``metrics.port``; ``None``: not counted)."""
    apis: BrokerApis | None = None
    """The APIs' policy layer (:mod:`node.apis`): the handlers call it, never ``auth``,
    ``groups`` or ``replicas`` directly for a client API. Built from the fields above when not
    given."""

    def __post_init__(self) -> None:
        if self.apis is None:
            object.__setattr__(self, "apis", broker_apis(self))

    @property
    def api(self) -> BrokerApis:
        assert self.apis is not None
        return self.apis

    @property
    def group_apis(self) -> GroupApis:
        """The group APIs (a door registers them only with a group coordinator)."""
        groups = self.api.groups
        assert groups is not None, "no group coordinator"
        return groups

    @property
    def share_group_apis(self) -> ShareGroupApis:
        """The share group APIs (a door registers them only with a group coordinator)."""
        share_groups = self.api.share_groups
        assert share_groups is not None, "no group coordinator"
        return share_groups

    @property
    def share_admin_apis(self) -> ShareAdminApis:
        """The share group offset APIs (a door registers them only with a group coordinator
        and share partitions)."""
        share_admin = self.api.share_admin
        assert share_admin is not None, "no group coordinator or share partitions"
        return share_admin


def broker_apis(services: DoorServices) -> BrokerApis:
    """The policy layer over ``services``' objects."""
    records = RecordApis(
        services.replicas,
        services.metadata,
        services.auth,
        services.producer_ids,
        services.admin,
        auto_create_topics=services.auto_create_topics,
        metrics=services.metrics,
    )
    groups = (
        None
        if services.groups is None
        else GroupApis(services.groups, services.metadata, services.auth)
    )
    share_groups = (
        None if services.groups is None else ShareGroupApis(services.groups, services.auth)
    )
    return BrokerApis(records, groups, services.admin, share_groups=share_groups)
