"""The share coordinator's client-facing API, whatever the front door: FindCoordinator with key
type 2 (SHARE, KIP-932), the share coordinator of share partitions ``group:topicId:partition``
— the leader of each key's ``__share_group_state`` partition, on the listener the request came
in on. Only brokers ask it (a partition leader's persister finds its share coordinator), so its
policy is Kafka's ``handleFindCoordinatorRequestV4AndAbove`` for SHARE: CLUSTER_ACTION on the
cluster, else CLUSTER_AUTHORIZATION_FAILED (31) for every key; a key that is not
``group:topicId:partition`` is INVALID_REQUEST (42); COORDINATOR_NOT_AVAILABLE (15) while
``__share_group_state`` is created (the first lookup creates it) or leaderless.

The share-state calls themselves (Initialize, Read, Write, Delete, ReadSummary) are not here:
they are inter-broker only (the Replication service, :mod:`node.grpc_door.share_state_service`),
never on the Kafka door. Thread-safe (no state of its own).
"""

from __future__ import annotations

from collections.abc import Sequence

from node.coordinator.group_requests import Coordinator
from node.security.auth_helper import AuthHelper, Caller
from node.share_coordinator.share_coordinator import ShareCoordinator

__all__ = ["ShareStateApis"]


class ShareStateApis:
    def __init__(self, coordinator: ShareCoordinator, auth: AuthHelper | None) -> None:
        self.coordinator = coordinator
        self.auth = auth

    def find_coordinator(
        self, caller: Caller, keys: Sequence[str], listener_name: str | None
    ) -> list[Coordinator]:
        """One answer per key, in request order."""
        refusal = None if self.auth is None else self.auth.cluster_action(caller)
        if refusal is not None:
            return [
                Coordinator(k, error_code=refusal.error_code, error_message=refusal.error_message)
                for k in keys
            ]
        return self.coordinator.find_coordinator(keys, listener_name)
