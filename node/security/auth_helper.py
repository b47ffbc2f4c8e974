"""The ACL checks of the client APIs, whatever the front door (Kafka's ``AuthHelper`` and the
checks of ``KafkaApis``' handlers).

Each check takes the caller (:class:`Caller`: principal and host) and the request's plain
values (:mod:`node.core.requests`, :mod:`node.coordinator.group_requests`), and splits them
into what may go on to the core and what is refused, the refusals already answered with
Kafka's error codes, so the gRPC door and the Kafka door refuse alike:

==========================  =================================================  ==========
API                         needs                                              refused
==========================  =================================================  ==========
Produce                     WRITE on each topic                                29 each
Fetch (consumer)            READ on each topic                                 29 each
ListOffsets                 DESCRIBE on each topic                             29 each
Metadata                    DESCRIBE on each topic (all topics: hidden)        29 each
DeleteRecords               DELETE on each topic                               29 each
InitProducerId              IDEMPOTENT_WRITE on the cluster or WRITE on any    31
                            topic (KIP-679)
FindCoordinator             DESCRIBE on each group                             30
ConsumerGroupHeartbeat      READ on the group                                  30
JoinGroup, SyncGroup,       READ on the group                                  30
Heartbeat, LeaveGroup
OffsetCommit                READ on the group                                  30
OffsetFetch                 DESCRIBE on the group                              30
ConsumerGroupDescribe       DESCRIBE on each group                             30
DeleteGroups                DELETE on each group                               30
OffsetDelete                DELETE on the group                                30
ListGroups                  DESCRIBE on the cluster, else per group (hidden)   —
inter-broker APIs           CLUSTER_ACTION on the cluster                      31
==========================  =================================================  ==========

A refused topic is refused whether it exists or not: its existence does not leak. Thread-safe
(no state of its own; the authorizer is thread-safe).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from node.coordinator.group_requests import ListedGroup
from node.core.requests import (
    DeleteRecordsPartition,
    DeleteRecordsResult,
    FetchPartition,
    FetchResult,
    InitProducerIdResult,
    ListOffsetsPartition,
    ListOffsetsResult,
    MetadataResult,
    ProducePartition,
    ProduceResult,
    TopicMetadata,
)
from node.security.principal import ANONYMOUS, KafkaPrincipal
from odradek.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourceType,
)
from odradek.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
)

__all__ = [
    "CLUSTER_DENIED",
    "GROUP_DENIED",
    "TOPIC_DENIED",
    "AuthHelper",
    "Authorizer",
    "Caller",
    "Refusal",
]

TOPIC_DENIED = TopicAuthorizationFailedError.code
CLUSTER_DENIED = ClusterAuthorizationFailedError.code
GROUP_DENIED = GroupAuthorizationFailedError.code

_T = TypeVar("_T")
_R = TypeVar("_R")


class Authorizer(Protocol):
    """What the checks ask of the authorizer (:class:`node.security.authorizer.AclAuthorizer`)."""

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """Whether ``principal`` from ``host`` may do ``operation`` on the resource."""
        ...

    def bindings(self) -> list[AclBinding]:
        """Every ACL known."""
        ...


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sends a request, as the authorizer needs it (parts of Kafka's ``RequestContext``):
    the principal and the client's host address (``127.0.0.1``, ``::1``; "" if unknown)."""

    principal: KafkaPrincipal = ANONYMOUS
    host: str = ""


@dataclass(frozen=True, slots=True)
class Refusal:
    """A refused resource: its name, Kafka's error code and a sentence saying why."""

    name: str
    error_code: int
    error_message: str


class AuthHelper:
    """The ACL checks of the client APIs over one authorizer. Thread-safe."""

    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer

    # -- single decisions ----------------------------------------------------------------------

    def allowed(
        self, caller: Caller, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        return self.authorizer.authorize(
            str(caller.principal), caller.host, operation, resource_type, name
        )

    def topics(
        self, caller: Caller, operation: AclOperation, names: Iterable[str]
    ) -> dict[str, bool]:
        """Each distinct topic of ``names``: allowed or not."""
        return {n: self.allowed(caller, operation, ResourceType.TOPIC, n) for n in set(names)}

    def cluster(self, caller: Caller, operation: AclOperation) -> bool:
        return self.allowed(caller, operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def may_write_a_topic(self, caller: Caller) -> bool:
        """Whether the caller may WRITE some topic (Kafka's ``authorizeByResourceType``, as
        InitProducerId asks it): a topic pattern an ACL allows WRITE (or ALL) on, for which
        the authorizer's whole decision (denials included) allows it."""
        candidates = {
            binding.pattern.name
            for binding in self.authorizer.bindings()
            if binding.pattern.resource_type is ResourceType.TOPIC
            and binding.entry.permission_type is AclPermissionType.ALLOW
            and binding.entry.operation in (AclOperation.WRITE, AclOperation.ALL)
        }
        return any(
            self.allowed(caller, AclOperation.WRITE, ResourceType.TOPIC, n) for n in candidates
        )

    @staticmethod
    def topic_message(caller: Caller, operation: AclOperation, topic: str) -> str:
        return f"{caller.principal} may not {operation.kafka_name} topic {topic!r}"

    def _split(
        self,
        caller: Caller,
        operation: AclOperation,
        items: Sequence[_T],
        topic: Callable[[_T], str],
        refuse: Callable[[_T, str], _R],
    ) -> tuple[list[_T], list[_R]]:
        ok = self.topics(caller, operation, (topic(i) for i in items))
        allowed = [i for i in items if ok[topic(i)]]
        refused = [
            refuse(i, self.topic_message(caller, operation, topic(i)))
            for i in items
            if not ok[topic(i)]
        ]
        return allowed, refused

    # -- the topic APIs: (what may go on to the core, the refusals) -----------------------------

    def produce(
        self, caller: Caller, partitions: Sequence[ProducePartition]
    ) -> tuple[list[ProducePartition], list[ProduceResult]]:
        """WRITE on each topic."""
        return self._split(
            caller,
            AclOperation.WRITE,
            partitions,
            lambda p: p.topic,
            lambda p, m: ProduceResult(p.topic, p.partition, TOPIC_DENIED, error_message=m),
        )

    def fetch(
        self, caller: Caller, partitions: Sequence[FetchPartition]
    ) -> tuple[list[FetchPartition], list[FetchResult]]:
        """A consumer's fetch: READ on each topic (followers: :meth:`cluster_action`)."""
        return self._split(
            caller,
            AclOperation.READ,
            partitions,
            lambda p: p.topic,
            lambda p, m: FetchResult(p.topic, p.partition, TOPIC_DENIED, error_message=m),
        )

    def list_offsets(
        self, caller: Caller, partitions: Sequence[ListOffsetsPartition]
    ) -> tuple[list[ListOffsetsPartition], list[ListOffsetsResult]]:
        """DESCRIBE on each topic."""
        return self._split(
            caller,
            AclOperation.DESCRIBE,
            partitions,
            lambda p: p.topic,
            lambda p, m: ListOffsetsResult(p.topic, p.partition, TOPIC_DENIED, error_message=m),
        )

    def delete_records(
        self, caller: Caller, partitions: Sequence[DeleteRecordsPartition]
    ) -> tuple[list[DeleteRecordsPartition], list[DeleteRecordsResult]]:
        """DELETE on each topic."""
        return self._split(
            caller,
            AclOperation.DELETE,
            partitions,
            lambda p: p.topic,
            lambda p, m: DeleteRecordsResult(p.topic, p.partition, TOPIC_DENIED, error_message=m),
        )

    def metadata(
        self,
        caller: Caller,
        topics: Sequence[str] | None,
        answer: Callable[[Sequence[str] | None], MetadataResult],
    ) -> MetadataResult:
        """Metadata for ``topics`` (``None``: all) as the caller may see it: ``answer`` (the
        core's Metadata) is asked for the allowed topics only; all topics: those the caller may
        not DESCRIBE are left out; named topics: each refused one is answered
        TOPIC_AUTHORIZATION_FAILED (whether it exists or not), in the order asked."""
        op = AclOperation.DESCRIBE
        if topics is None:
            result = answer(None)
            ok = self.topics(caller, op, (t.name for t in result.topics))
            return _with_topics(result, tuple(t for t in result.topics if ok[t.name]))
        ok = self.topics(caller, op, topics)
        result = answer([t for t in topics if ok[t]])
        found = {t.name: t for t in result.topics}
        return _with_topics(
            result,
            tuple(
                found.get(name) or TopicMetadata(name=name, error_code=TOPIC_DENIED)
                for name in dict.fromkeys(topics)
            ),
        )

    def init_producer_id(self, caller: Caller) -> InitProducerIdResult | None:
        """Kafka's rule for an idempotent producer (KIP-679): IDEMPOTENT_WRITE on the cluster,
        or WRITE on any topic; ``None`` when allowed, else the CLUSTER_AUTHORIZATION_FAILED
        answer."""
        if self.cluster(caller, AclOperation.IDEMPOTENT_WRITE) or self.may_write_a_topic(caller):
            return None
        return InitProducerIdResult(
            error_code=CLUSTER_DENIED,
            error_message=(
                f"{caller.principal} may not IdempotentWrite on the cluster nor Write any topic "
                "(KIP-679)"
            ),
        )

    # -- groups: the refused groups (GROUP_AUTHORIZATION_FAILED each) ---------------------------

    def _groups(
        self, caller: Caller, operation: AclOperation, group_ids: Iterable[str]
    ) -> list[Refusal]:
        return [
            Refusal(
                g,
                GROUP_DENIED,
                f"{GroupAuthorizationFailedError.name} ({GROUP_DENIED}): {caller.principal} may "
                f"not {operation.kafka_name} group {g!r}",
            )
            for g in dict.fromkeys(group_ids)
            if not self.allowed(caller, operation, ResourceType.GROUP, g)
        ]

    def find_coordinator(self, caller: Caller, group_ids: Sequence[str]) -> list[Refusal]:
        return self._groups(caller, AclOperation.DESCRIBE, group_ids)

    def consumer_group_heartbeat(self, caller: Caller, group_id: str) -> list[Refusal]:
        return self._groups(caller, AclOperation.READ, [group_id])

    def classic_group(self, caller: Caller, group_id: str) -> list[Refusal]:
        """JoinGroup, SyncGroup, Heartbeat, LeaveGroup (Kafka's ``handleJoinGroupRequest``
        and kin)."""
        return self._groups(caller, AclOperation.READ, [group_id])

    def offset_commit(self, caller: Caller, group_id: str) -> list[Refusal]:
        return self._groups(caller, AclOperation.READ, [group_id])

    def offset_fetch(self, caller: Caller, group_id: str) -> list[Refusal]:
        return self._groups(caller, AclOperation.DESCRIBE, [group_id])

    def describe_groups(self, caller: Caller, group_ids: Sequence[str]) -> list[Refusal]:
        return self._groups(caller, AclOperation.DESCRIBE, group_ids)

    def delete_groups(self, caller: Caller, group_ids: Sequence[str]) -> list[Refusal]:
        return self._groups(caller, AclOperation.DELETE, group_ids)

    def offset_delete(self, caller: Caller, group_id: str) -> list[Refusal]:
        return self._groups(caller, AclOperation.DELETE, [group_id])

    def list_groups(self, caller: Caller, groups: Sequence[ListedGroup]) -> tuple[ListedGroup, ...]:
        """Every group with DESCRIBE on the cluster, else those the caller may describe."""
        if self.cluster(caller, AclOperation.DESCRIBE):
            return tuple(groups)
        return tuple(
            g
            for g in groups
            if self.allowed(caller, AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id)
        )

    # -- the cluster -------------------------------------------------------------------------

    def cluster_refusal(self, caller: Caller, operation: AclOperation) -> Refusal | None:
        """``None`` if ``operation`` on the cluster is allowed, else the refusal
        (CLUSTER_AUTHORIZATION_FAILED)."""
        if self.cluster(caller, operation):
            return None
        return Refusal(
            CLUSTER_NAME,
            CLUSTER_DENIED,
            f"{ClusterAuthorizationFailedError.name} ({CLUSTER_DENIED}): {caller.principal} may "
            f"not {operation.kafka_name} on the cluster",
        )

    def cluster_action(self, caller: Caller) -> Refusal | None:
        """The inter-broker APIs (follower fetch, OffsetForLeaderEpoch, LeaderAndIsr,
        StopReplica, UpdateMetadata, AlterPartition, ControlledShutdown): CLUSTER_ACTION."""
        return self.cluster_refusal(caller, AclOperation.CLUSTER_ACTION)


def _with_topics(result: MetadataResult, topics: tuple[TopicMetadata, ...]) -> MetadataResult:
    return MetadataResult(result.brokers, result.controller_id, result.cluster_id, topics)
