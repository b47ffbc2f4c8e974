"""Kafka's ACL checks in front of the admin calls, for either door (``KafkaApis``' admin
handlers with ``AuthHelper``; apache/kafka 3.9, ``core/src/main/scala/kafka/server``).

A door gives the caller's principal (``User:alice``) and client host with the domain request;
:class:`AuthorizedAdmin` asks the authorizer, passes what is allowed to the
:class:`~node.admin.admin_manager.AdminManager`, and answers the rest per resource:

=====================================  ==========================================  =========
call                                   needs                                        refused
=====================================  ==========================================  =========
create_topics                          CREATE on the cluster, else on each topic    29 each
                                       (and DESCRIBE_CONFIGS on the topic for its
                                       configs in the answer: topic_config_error 29)
delete_topics                          DELETE on each topic                         29 each
create_partitions                      ALTER on each topic                          29 each
describe_configs                       DESCRIBE_CONFIGS on the topic / the cluster  29 / 31
                                       (for a broker) / the group                   / 30
alter_configs, incremental_alter_      ALTER_CONFIGS on the topic / the cluster     29 / 31
configs                                (for a broker) / the group                   / 30
elect_leaders, alter_partition_        ALTER on the cluster                         31
reassignments
list_partition_reassignments           DESCRIBE on the cluster                      31
create_acls / delete_acls /            ALTER / ALTER / DESCRIBE on the cluster      31
describe_acls
describe / alter_user_scram_           DESCRIBE / ALTER on the cluster              31
credentials
describe_log_dirs                      DESCRIBE on the cluster                      31
describe_producers                     READ on each topic                           29 each
auto_create_topics                     CREATE on the cluster, else on each topic    29 each
describe_cluster                       nothing                                      —
=====================================  ==========================================  =========

Without an authorizer every call is allowed (and the ACL calls answer SECURITY_DISABLED, 54,
from the manager). Kafka's order of checks is kept where it shows: a topic named twice in
CreateTopics / CreatePartitions is INVALID_REQUEST whatever the ACLs (the manager's answer:
it goes there unchecked, and is not created), DeleteTopics answers TOPIC_AUTHORIZATION_FAILED
before UNKNOWN_TOPIC_OR_PARTITION, the cluster-wide calls answer the refusal before anything
else (SECURITY_DISABLED, UNSUPPORTED_VERSION or a request's INVALID_REQUEST).

Thread-safe: no state of its own.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Protocol, TypeVar

from node.admin.admin_manager import AdminManager
from node.admin.requests import (
    AclCreationResult,
    AlterConfigsResource,
    AlterConfigsResult,
    AlterPartitionReassignmentsResult,
    AlterUserScramCredentialsResult,
    ConfigResource,
    ConfigResourceType,
    CreatableTopicResult,
    CreatePartitionsTopic,
    DeleteAclsFilterResult,
    DescribeAclsResult,
    DescribeClusterResult,
    DescribeConfigsResource,
    DescribeConfigsResult,
    DescribeLogDirsResult,
    DescribeUserScramCredentialsResponse,
    ElectionType,
    ElectLeadersResult,
    IncrementalAlterConfigsResource,
    InvalidAcl,
    ListPartitionReassignmentsResult,
    NewTopicSpec,
    PartitionProducers,
    PartitionResult,
    ReassignablePartition,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
    TopicResult,
)
from odradek.acl import CLUSTER_NAME, AclBinding, AclBindingFilter, AclOperation, ResourceType
from odradek.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
)

__all__ = ["AdminAuthorization", "AuthorizedAdmin", "Authorizing"]

TOPIC_DENIED = TopicAuthorizationFailedError.code
CLUSTER_DENIED = ClusterAuthorizationFailedError.code
GROUP_DENIED = GroupAuthorizationFailedError.code


class _HasResource(Protocol):
    @property
    def resource(self) -> ConfigResource: ...


class _HasName(Protocol):
    @property
    def name(self) -> str: ...


_R = TypeVar("_R", bound=_HasResource)
_N = TypeVar("_N", bound=_HasName)


def _repeated(names: Sequence[str]) -> set[str]:
    """The names given more than once: the manager answers them INVALID_REQUEST whoever asks
    (Kafka checks duplicates before authorization in CreateTopics and CreatePartitions)."""
    return {n for n, count in Counter(names).items() if count > 1}


def _by_name(results: Iterable[_N]) -> dict[str, _N]:
    return {r.name: r for r in results}


class Authorizing(Protocol):
    """The node's authorizer (:class:`node.security.authorizer.AclAuthorizer`)."""

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool: ...


def topic_denied(principal: str, operation: AclOperation, topic: str) -> str:
    return f"{principal} may not {operation.kafka_name} topic {topic!r}"


def cluster_denied(principal: str, operation: AclOperation) -> str:
    return f"{principal} may not {operation.kafka_name} on the cluster"


class AdminAuthorization:
    """The decisions alone: which resources of a request ``principal`` from ``host`` may act
    on. ``authorizer`` ``None``: everything is allowed."""

    def __init__(self, authorizer: Authorizing | None) -> None:
        self.authorizer = authorizer

    def allowed(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        if self.authorizer is None:
            return True
        return self.authorizer.authorize(principal, host, operation, resource_type, name)

    def cluster(self, principal: str, host: str, operation: AclOperation) -> bool:
        return self.allowed(principal, host, operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def topics(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        names: Iterable[str],
        *,
        or_cluster: bool = False,
    ) -> set[str]:
        """The names ``operation`` is allowed on; with ``or_cluster``, all of them when it is
        allowed on the cluster (CreateTopics' and auto-creation's CREATE)."""
        distinct = set(names)
        if or_cluster and self.cluster(principal, host, operation):
            return distinct
        return {
            n for n in distinct if self.allowed(principal, host, operation, ResourceType.TOPIC, n)
        }

    def config_resource(
        self, principal: str, host: str, operation: AclOperation, resource: ConfigResource
    ) -> tuple[int, str]:
        """``(0, "")`` when ``operation`` (DESCRIBE_CONFIGS or ALTER_CONFIGS) is allowed on the
        resource: a topic by its name, a group by its id, a broker (or broker logger) through
        the cluster
        (Kafka's ``configsAuthorizationApiError``); else the error code and message."""
        if resource.resource_type is ConfigResourceType.TOPIC:
            name = resource.resource_name
            if self.allowed(principal, host, operation, ResourceType.TOPIC, name):
                return 0, ""
            return TOPIC_DENIED, topic_denied(principal, operation, name)
        if resource.resource_type is ConfigResourceType.GROUP:
            name = resource.resource_name
            if self.allowed(principal, host, operation, ResourceType.GROUP, name):
                return 0, ""
            return GROUP_DENIED, f"{principal} may not {operation.kafka_name} group {name!r}"
        if self.cluster(principal, host, operation):
            return 0, ""
        return CLUSTER_DENIED, cluster_denied(principal, operation)


class AuthorizedAdmin:
    """The admin calls behind Kafka's ACL checks: each method takes the caller's principal
    and client host first, then the manager's arguments, and answers as the manager does with
    the denied resources refused (see the module's table)."""

    def __init__(self, admin: AdminManager, authorizer: Authorizing | None) -> None:
        self.admin = admin
        self.decisions = AdminAuthorization(authorizer)

    # -- topics -----------------------------------------------------------------------------

    def create_topics(
        self,
        principal: str,
        host: str,
        topics: Sequence[NewTopicSpec],
        *,
        validate_only: bool = False,
        timeout_ms: int = 0,
    ) -> list[CreatableTopicResult]:
        names = [t.name for t in topics]
        d = self.decisions
        allowed = d.topics(principal, host, AclOperation.CREATE, names, or_cluster=True)
        allowed |= _repeated(names)  # INVALID_REQUEST before authorization, as Kafka
        may_describe = d.topics(principal, host, AclOperation.DESCRIBE_CONFIGS, names)
        answered = _by_name(
            self.admin.create_topics(
                [t for t in topics if t.name in allowed],
                validate_only=validate_only,
                timeout_ms=timeout_ms,
            )
            if allowed
            else []
        )
        out = []
        for name in dict.fromkeys(names):
            result = answered.get(name)
            if result is None:
                denied = topic_denied(principal, AclOperation.CREATE, name)
                out.append(CreatableTopicResult(name, TOPIC_DENIED, denied))
            elif name not in may_describe and result.error_code == 0:
                out.append(
                    dataclasses.replace(
                        result,
                        topic_config_error_code=TOPIC_DENIED,
                        num_partitions=-1,
                        replication_factor=-1,
                        configs=(),
                    )
                )
            else:
                out.append(result)
        return out

    def delete_topics(
        self, principal: str, host: str, names: Sequence[str], *, timeout_ms: int = 0
    ) -> list[TopicResult]:
        op = AclOperation.DELETE
        allowed = self.decisions.topics(principal, host, op, names)
        return self._per_topic(
            names,
            allowed,
            lambda ok: self.admin.delete_topics(
                [n for n in names if n in ok], timeout_ms=timeout_ms
            ),
            lambda n: TopicResult(n, TOPIC_DENIED, topic_denied(principal, op, n)),
        )

    def create_partitions(
        self,
        principal: str,
        host: str,
        topics: Sequence[CreatePartitionsTopic],
        *,
        validate_only: bool = False,
        timeout_ms: int = 0,
    ) -> list[TopicResult]:
        op = AclOperation.ALTER
        names = [t.name for t in topics]
        allowed = self.decisions.topics(principal, host, op, names) | _repeated(names)
        return self._per_topic(
            names,
            allowed,
            lambda ok: self.admin.create_partitions(
                [t for t in topics if t.name in ok],
                validate_only=validate_only,
                timeout_ms=timeout_ms,
            ),
            lambda n: TopicResult(n, TOPIC_DENIED, topic_denied(principal, op, n)),
        )

    @staticmethod
    def _per_topic(
        names: Sequence[str],
        allowed: Collection[str],
        call: Callable[[Collection[str]], list[TopicResult]],
        refuse: Callable[[str], TopicResult],
    ) -> list[TopicResult]:
        answered = _by_name(call(allowed)) if allowed else {}
        return [answered.get(n) or refuse(n) for n in dict.fromkeys(names)]

    def auto_create_topics(self, principal: str, host: str, names: Iterable[str]) -> dict[str, int]:
        """Metadata's auto-creation: CREATE on the cluster or the topic, else
        TOPIC_AUTHORIZATION_FAILED (29), as Kafka's ``handleTopicMetadataRequest``."""
        wanted = list(dict.fromkeys(names))
        allowed = self.decisions.topics(
            principal, host, AclOperation.CREATE, wanted, or_cluster=True
        )
        created = self.admin.auto_create_topics([n for n in wanted if n in allowed])
        return {n: created[n] if n in allowed else TOPIC_DENIED for n in wanted}

    # -- configs ----------------------------------------------------------------------------

    def describe_configs(
        self,
        principal: str,
        host: str,
        resources: Sequence[DescribeConfigsResource],
        *,
        include_synonyms: bool = False,
    ) -> list[DescribeConfigsResult]:
        op = AclOperation.DESCRIBE_CONFIGS
        refusals = {
            r.resource: self.decisions.config_resource(principal, host, op, r.resource)
            for r in resources
        }
        allowed = [r for r in resources if refusals[r.resource][0] == 0]
        answered = iter(
            self.admin.describe_configs(allowed, include_synonyms=include_synonyms)
            if allowed
            else []
        )
        return [
            next(answered)
            if refusals[r.resource][0] == 0
            else DescribeConfigsResult(r.resource, *refusals[r.resource])
            for r in resources
        ]

    def alter_configs(
        self,
        principal: str,
        host: str,
        resources: Sequence[AlterConfigsResource],
        *,
        validate_only: bool = False,
    ) -> list[AlterConfigsResult]:
        return self._alter(
            principal,
            host,
            resources,
            lambda allowed: self.admin.alter_configs(allowed, validate_only=validate_only),
        )

    def incremental_alter_configs(
        self,
        principal: str,
        host: str,
        resources: Sequence[IncrementalAlterConfigsResource],
        *,
        validate_only: bool = False,
    ) -> list[AlterConfigsResult]:
        return self._alter(
            principal,
            host,
            resources,
            lambda allowed: self.admin.incremental_alter_configs(
                allowed, validate_only=validate_only
            ),
        )

    def _alter(
        self,
        principal: str,
        host: str,
        resources: Sequence[_R],
        call: Callable[[list[_R]], list[AlterConfigsResult]],
    ) -> list[AlterConfigsResult]:
        op = AclOperation.ALTER_CONFIGS
        refusals = [
            self.decisions.config_resource(principal, host, op, r.resource) for r in resources
        ]
        allowed = [r for r, refusal in zip(resources, refusals, strict=True) if refusal[0] == 0]
        answered = iter(call(allowed) if allowed else [])
        return [
            next(answered) if refusal[0] == 0 else AlterConfigsResult(r.resource, *refusal)
            for r, refusal in zip(resources, refusals, strict=True)
        ]

    # -- the cluster-wide calls -------------------------------------------------------------

    def _cluster_refusal(
        self, principal: str, host: str, operation: AclOperation
    ) -> tuple[int, str] | None:
        if self.decisions.cluster(principal, host, operation):
            return None
        return CLUSTER_DENIED, cluster_denied(principal, operation)

    def elect_leaders(
        self,
        principal: str,
        host: str,
        election_type: ElectionType,
        partitions: Sequence[tuple[str, int]] | None,
        *,
        timeout_ms: int = 0,
    ) -> ElectLeadersResult:
        """Refused: the top-level error, and each named partition with it (as Kafka)."""
        refusal = self._cluster_refusal(principal, host, AclOperation.ALTER)
        if refusal is not None:
            return ElectLeadersResult(
                *refusal,
                partitions=tuple(
                    PartitionResult(t, p, refusal[0]) for t, p in dict.fromkeys(partitions or ())
                ),
            )
        return self.admin.elect_leaders(election_type, partitions, timeout_ms=timeout_ms)

    def alter_partition_reassignments(
        self,
        principal: str,
        host: str,
        partitions: Sequence[ReassignablePartition],
        *,
        timeout_ms: int = 0,
    ) -> AlterPartitionReassignmentsResult:
        refusal = self._cluster_refusal(principal, host, AclOperation.ALTER)
        if refusal is not None:
            result = AlterPartitionReassignmentsResult(*refusal)
        else:
            result = self.admin.alter_partition_reassignments(partitions, timeout_ms=timeout_ms)
        if result.error_code and not result.partitions:
            # a request-level error is every partition's too (Kafka's getErrorResponse)
            result = dataclasses.replace(
                result,
                partitions=tuple(
                    PartitionResult(p.topic, p.partition, result.error_code, result.error_message)
                    for p in partitions
                ),
            )
        return result

    def list_partition_reassignments(
        self, principal: str, host: str, partitions: Collection[tuple[str, int]] | None = None
    ) -> ListPartitionReassignmentsResult:
        refusal = self._cluster_refusal(principal, host, AclOperation.DESCRIBE)
        if refusal is not None:
            return ListPartitionReassignmentsResult(*refusal)
        return self.admin.list_partition_reassignments(partitions)

    def create_acls(
        self, principal: str, host: str, creations: Sequence[AclBinding | InvalidAcl]
    ) -> list[AclCreationResult]:
        refusal = self._cluster_refusal(principal, host, AclOperation.ALTER)
        if refusal is not None:
            return [AclCreationResult(*refusal)] * len(creations)
        return self.admin.create_acls(creations)

    def describe_acls(
        self, principal: str, host: str, acl_filter: AclBindingFilter | InvalidAcl
    ) -> DescribeAclsResult:
        refusal = self._cluster_refusal(principal, host, AclOperation.DESCRIBE)
        if refusal is not None:
            return DescribeAclsResult(*refusal)
        return self.admin.describe_acls(acl_filter)

    def delete_acls(
        self, principal: str, host: str, filters: Sequence[AclBindingFilter | InvalidAcl]
    ) -> list[DeleteAclsFilterResult]:
        refusal = self._cluster_refusal(principal, host, AclOperation.ALTER)
        if refusal is not None:
            return [DeleteAclsFilterResult(*refusal)] * len(filters)
        return self.admin.delete_acls(filters)

    def describe_user_scram_credentials(
        self, principal: str, host: str, users: Sequence[str] | None = None
    ) -> DescribeUserScramCredentialsResponse:
        refusal = self._cluster_refusal(principal, host, AclOperation.DESCRIBE)
        if refusal is not None:
            return DescribeUserScramCredentialsResponse(*refusal)
        return self.admin.describe_user_scram_credentials(users)

    def alter_user_scram_credentials(
        self,
        principal: str,
        host: str,
        deletions: Sequence[ScramCredentialDeletion],
        upsertions: Sequence[ScramCredentialUpsertion],
    ) -> list[AlterUserScramCredentialsResult]:
        refusal = self._cluster_refusal(principal, host, AclOperation.ALTER)
        if refusal is not None:
            users = dict.fromkeys([d.name for d in deletions] + [u.name for u in upsertions])
            return [AlterUserScramCredentialsResult(u, *refusal) for u in users]
        return self.admin.alter_user_scram_credentials(deletions, upsertions)

    # -- this node --------------------------------------------------------------------------

    def describe_cluster(
        self, principal: str, host: str, listener_name: str | None = None
    ) -> DescribeClusterResult:
        return self.admin.describe_cluster(listener_name)

    def describe_log_dirs(
        self, principal: str, host: str, partitions: Collection[tuple[str, int]] | None = None
    ) -> DescribeLogDirsResult:
        refusal = self._cluster_refusal(principal, host, AclOperation.DESCRIBE)
        if refusal is not None:
            return DescribeLogDirsResult(error_code=refusal[0])
        return self.admin.describe_log_dirs(partitions)

    def describe_producers(
        self, principal: str, host: str, partitions: Sequence[tuple[str, int]]
    ) -> list[PartitionProducers]:
        op = AclOperation.READ
        allowed = self.decisions.topics(principal, host, op, (t for t, _ in partitions))
        answered = iter(
            self.admin.describe_producers([tp for tp in partitions if tp[0] in allowed])
        )
        return [
            next(answered)
            if topic in allowed
            else PartitionProducers(topic, p, TOPIC_DENIED, topic_denied(principal, op, topic))
            for topic, p in partitions
        ]
