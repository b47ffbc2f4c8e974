"""The Admin service of a node: the topic calls behind ACLs (with an authorizer), the ACL calls
and the SCRAM credential calls, in front of the controller's
:class:`~node.admin.admin_manager.AdminServicer`.

=====================================  ==========================================  =========
call                                   needs                                        refused
=====================================  ==========================================  =========
CreateTopics                           CREATE on the cluster, else on the topic     29 each
DeleteTopics                           DELETE on each topic                         29 each
DescribeConfigs / AlterConfigs         DESCRIBE_CONFIGS / ALTER_CONFIGS on topic    29 each
CreatePartitions                       ALTER on each topic                          29 each
ElectLeaders, AlterPartition-          ALTER on the cluster                         31
Reassignments
ListPartitionReassignments             DESCRIBE on the cluster                      31
CreateAcls / DeleteAcls / DescribeAcls ALTER / ALTER / DESCRIBE on the cluster      31
Describe/AlterUserScramCredentials     DESCRIBE / ALTER on the cluster              31
=====================================  ==========================================  =========

The ACL calls answer SECURITY_DISABLED (54) when the node has no authorizer. Thread-safe (no
state of its own).
"""

from __future__ import annotations

from collections.abc import Callable

import grpc

from node.admin.admin_manager import AdminServicer
from node.grpc_door.authentication import current_request
from node.grpc_door.request_checks import (
    CLUSTER_DENIED,
    TOPIC_DENIED,
    RequestChecks,
    denied_message,
)
from node.security.authorizer import AclAuthorizer
from node.security.principal import ANONYMOUS
from node.security.scram_store import ScramCredentialStore
from odradek.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    acl_binding_from_wire,
    acl_binding_to_wire,
    acl_filter_from_wire,
)
from odradek.errors import (
    InvalidRequestError,
    ResourceNotFoundError,
    SecurityDisabledError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
    UnsupportedVersionError,
)
from odradek.scram import MECHANISMS, credential_from_salted_password
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = ["AclAdminServicer"]


class AclAdminServicer(pb_grpc.AdminServicer):
    """The Admin service: the topic calls behind ACLs (with an authorizer), and the ACL
    calls."""

    def __init__(
        self,
        inner: AdminServicer,
        authorizer: AclAuthorizer | None,
        credentials: ScramCredentialStore | None = None,
    ) -> None:
        """``credentials``: where users' SCRAM credentials live (``None``: the SCRAM calls
        answer UNSUPPORTED_VERSION)."""
        self._inner = inner
        self._credentials = credentials
        self._authorizer = authorizer
        self._checks = RequestChecks(authorizer) if authorizer is not None else None

    def _topic_results(
        self,
        names: list[str],
        op: AclOperation,
        call: Callable[[list[str]], list[pb.TopicResult]],
        *,
        cluster_wide: bool = False,
    ) -> list[pb.TopicResult]:
        checks = self._checks
        if checks is None or (cluster_wide and checks.cluster(op)):
            return call(names)
        ok = checks.topics(op, names)
        answered = (
            {r.name: r for r in call([n for n in names if ok[n]])} if any(ok.values()) else {}
        )
        return [
            answered.get(n)
            or pb.TopicResult(name=n, error_code=TOPIC_DENIED, error_message=denied_message(n, op))
            for n in names
        ]

    def CreateTopics(  # noqa: N802
        self, request: pb.CreateTopicsRequest, context: grpc.ServicerContext
    ) -> pb.CreateTopicsResponse:
        by_name = {t.name: t for t in request.topics}

        def call(names: list[str]) -> list[pb.TopicResult]:
            sub = pb.CreateTopicsRequest(
                topics=[by_name[n] for n in names],
                timeout_ms=request.timeout_ms,
                validate_only=request.validate_only,
            )
            return list(self._inner.CreateTopics(sub, context).topics) if names else []

        names = [t.name for t in request.topics]
        return pb.CreateTopicsResponse(
            topics=self._topic_results(names, AclOperation.CREATE, call, cluster_wide=True)
        )

    def DeleteTopics(  # noqa: N802
        self, request: pb.DeleteTopicsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteTopicsResponse:
        def call(names: list[str]) -> list[pb.TopicResult]:
            sub = pb.DeleteTopicsRequest(names=names, timeout_ms=request.timeout_ms)
            return list(self._inner.DeleteTopics(sub, context).topics) if names else []

        return pb.DeleteTopicsResponse(
            topics=self._topic_results(list(request.names), AclOperation.DELETE, call)
        )

    def DescribeConfigs(  # noqa: N802
        self, request: pb.DescribeConfigsRequest, context: grpc.ServicerContext
    ) -> pb.DescribeConfigsResponse:
        checks = self._checks
        if checks is None:
            return self._inner.DescribeConfigs(request, context)
        op = AclOperation.DESCRIBE_CONFIGS
        ok = checks.topics(op, request.topics)
        allowed = [t for t in request.topics if ok[t]]
        found = {}
        if allowed:
            sub = pb.DescribeConfigsRequest(topics=allowed)
            found = {t.name: t for t in self._inner.DescribeConfigs(sub, context).topics}
        return pb.DescribeConfigsResponse(
            topics=[
                found.get(n)
                or pb.TopicConfigs(
                    name=n, error_code=TOPIC_DENIED, error_message=denied_message(n, op)
                )
                for n in request.topics
            ]
        )

    def AlterConfigs(  # noqa: N802
        self, request: pb.AlterConfigsRequest, context: grpc.ServicerContext
    ) -> pb.AlterConfigsResponse:
        by_name = {t.name: t for t in request.topics}

        def call(names: list[str]) -> list[pb.TopicResult]:
            sub = pb.AlterConfigsRequest(
                topics=[by_name[n] for n in names], validate_only=request.validate_only
            )
            return list(self._inner.AlterConfigs(sub, context).topics) if names else []

        names = [t.name for t in request.topics]
        return pb.AlterConfigsResponse(
            topics=self._topic_results(names, AclOperation.ALTER_CONFIGS, call)
        )

    def CreatePartitions(  # noqa: N802
        self, request: pb.CreatePartitionsRequest, context: grpc.ServicerContext
    ) -> pb.CreatePartitionsResponse:
        """Kafka's rule: ALTER on each topic (TOPIC_AUTHORIZATION_FAILED for the others)."""
        by_name = {t.name: t for t in request.topics}

        def call(names: list[str]) -> list[pb.TopicResult]:
            sub = pb.CreatePartitionsRequest(
                topics=[by_name[n] for n in names],
                timeout_ms=request.timeout_ms,
                validate_only=request.validate_only,
            )
            return list(self._inner.CreatePartitions(sub, context).topics) if names else []

        names = [t.name for t in request.topics]
        return pb.CreatePartitionsResponse(
            topics=self._topic_results(names, AclOperation.ALTER, call)
        )

    def _cluster_denied(self, op: AclOperation) -> bool:
        return self._checks is not None and not self._checks.cluster(op)

    def ElectLeaders(  # noqa: N802
        self, request: pb.ElectLeadersRequest, context: grpc.ServicerContext
    ) -> pb.ElectLeadersResponse:
        if self._cluster_denied(AclOperation.ALTER):
            return pb.ElectLeadersResponse(error_code=CLUSTER_DENIED)
        return self._inner.ElectLeaders(request, context)

    def AlterPartitionReassignments(  # noqa: N802
        self, request: pb.AlterPartitionReassignmentsRequest, context: grpc.ServicerContext
    ) -> pb.AlterPartitionReassignmentsResponse:
        if self._cluster_denied(AclOperation.ALTER):
            return pb.AlterPartitionReassignmentsResponse(error_code=CLUSTER_DENIED)
        return self._inner.AlterPartitionReassignments(request, context)

    def ListPartitionReassignments(  # noqa: N802
        self, request: pb.ListPartitionReassignmentsRequest, context: grpc.ServicerContext
    ) -> pb.ListPartitionReassignmentsResponse:
        if self._cluster_denied(AclOperation.DESCRIBE):
            return pb.ListPartitionReassignmentsResponse(error_code=CLUSTER_DENIED)
        return self._inner.ListPartitionReassignments(request, context)

    # -- ACLs -------------------------------------------------------------------------------

    def _acl_refusal(self, op: AclOperation) -> tuple[int, str] | None:
        if self._authorizer is None:
            return SecurityDisabledError.code, "no authorizer is configured (authorizer.class.name)"
        if self._cluster_denied(op):
            ctx = current_request()
            who = ctx.principal if ctx is not None else ANONYMOUS
            return CLUSTER_DENIED, f"{who} may not {op.kafka_name} on the cluster"
        return None

    def CreateAcls(  # noqa: N802
        self, request: pb.CreateAclsRequest, context: grpc.ServicerContext
    ) -> pb.CreateAclsResponse:
        refusal = self._acl_refusal(AclOperation.ALTER)
        if refusal is not None:
            code, message = refusal
            return pb.CreateAclsResponse(
                results=[pb.AclResult(error_code=code, error_message=message)]
                * len(request.creations)
            )
        assert self._authorizer is not None
        results: list[pb.AclResult] = []
        valid: list[AclBinding] = []
        for wire in request.creations:
            try:
                valid.append(acl_binding_from_wire(wire))
                results.append(pb.AclResult())
            except ValueError as e:
                results.append(
                    pb.AclResult(error_code=InvalidRequestError.code, error_message=str(e))
                )
        self._authorizer.create_acls(valid)
        return pb.CreateAclsResponse(results=results)

    def DescribeAcls(  # noqa: N802
        self, request: pb.DescribeAclsRequest, context: grpc.ServicerContext
    ) -> pb.DescribeAclsResponse:
        refusal = self._acl_refusal(AclOperation.DESCRIBE)
        if refusal is not None:
            return pb.DescribeAclsResponse(error_code=refusal[0], error_message=refusal[1])
        assert self._authorizer is not None
        try:
            wanted = acl_filter_from_wire(request.filter)
        except ValueError as e:
            return pb.DescribeAclsResponse(
                error_code=InvalidRequestError.code, error_message=str(e)
            )
        return pb.DescribeAclsResponse(
            acls=[acl_binding_to_wire(b) for b in self._authorizer.bindings() if wanted.matches(b)]
        )

    def DeleteAcls(  # noqa: N802
        self, request: pb.DeleteAclsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteAclsResponse:
        refusal = self._acl_refusal(AclOperation.ALTER)
        if refusal is not None:
            code, message = refusal
            return pb.DeleteAclsResponse(
                filter_results=[pb.DeleteAclsFilterResult(error_code=code, error_message=message)]
                * len(request.filters)
            )
        assert self._authorizer is not None
        results: list[pb.DeleteAclsFilterResult | None] = []
        filters: list[AclBindingFilter] = []
        for wire in request.filters:
            try:
                filters.append(acl_filter_from_wire(wire))
                results.append(None)
            except ValueError as e:
                results.append(
                    pb.DeleteAclsFilterResult(
                        error_code=InvalidRequestError.code, error_message=str(e)
                    )
                )
        deleted = iter(self._authorizer.delete_acls(filters))
        return pb.DeleteAclsResponse(
            filter_results=[
                r
                if r is not None
                else pb.DeleteAclsFilterResult(
                    matching_acls=[acl_binding_to_wire(b) for b in next(deleted)]
                )
                for r in results
            ]
        )

    # -- SCRAM credentials ------------------------------------------------------------------

    def DescribeUserScramCredentials(  # noqa: N802
        self, request: pb.DescribeUserScramCredentialsRequest, context: grpc.ServicerContext
    ) -> pb.DescribeUserScramCredentialsResponse:
        store = self._credentials
        if store is None:
            return pb.DescribeUserScramCredentialsResponse(error_code=UnsupportedVersionError.code)
        if self._cluster_denied(AclOperation.DESCRIBE):
            return pb.DescribeUserScramCredentialsResponse(
                error_code=CLUSTER_DENIED, error_message="may not Describe on the cluster"
            )
        named = list(dict.fromkeys(request.users))
        results = []
        for user in named or store.users():
            infos = store.describe(user)
            if not infos and not named:
                continue
            results.append(
                pb.DescribeUserScramCredentialsResult(
                    user=user,
                    error_code=0 if infos else ResourceNotFoundError.code,
                    error_message="" if infos else f"user {user!r} has no SCRAM credentials",
                    credential_infos=[
                        pb.ScramCredentialInfo(mechanism=m, iterations=i)
                        for m, i in sorted(infos.items())
                    ],
                )
            )
        return pb.DescribeUserScramCredentialsResponse(results=results)

    def AlterUserScramCredentials(  # noqa: N802
        self, request: pb.AlterUserScramCredentialsRequest, context: grpc.ServicerContext
    ) -> pb.AlterUserScramCredentialsResponse:
        users = list(
            dict.fromkeys(
                [d.name for d in request.deletions] + [u.name for u in request.upsertions]
            )
        )
        store = self._credentials
        refused: tuple[int, str] | None = None
        if store is None:
            refused = (UnsupportedVersionError.code, "this node keeps no credentials")
        elif self._cluster_denied(AclOperation.ALTER):
            refused = (CLUSTER_DENIED, "may not Alter on the cluster")
        if refused is not None:
            return pb.AlterUserScramCredentialsResponse(
                results=[
                    pb.AlterUserScramCredentialsResult(
                        user=u, error_code=refused[0], error_message=refused[1]
                    )
                    for u in users
                ]
            )
        assert store is not None
        results = []
        for user in users:
            code, message = 0, ""
            deletions = {d.mechanism for d in request.deletions if d.name == user}
            upsertions = [u for u in request.upsertions if u.name == user]
            upsert = {}
            for u in upsertions:
                if u.mechanism not in MECHANISMS:
                    code, message = UnsupportedSaslMechanismError.code, f"{u.mechanism!r}"
                    break
                _, least, most = MECHANISMS[u.mechanism]
                if not least <= u.iterations <= most or not u.salt or not u.salted_password:
                    code = UnacceptableCredentialError.code
                    message = f"{u.mechanism} needs iterations in [{least}, {most}] and a salt"
                    break
                upsert[u.mechanism] = credential_from_salted_password(
                    u.mechanism, u.salted_password, u.salt, u.iterations
                )
            unknown = deletions - set(MECHANISMS)
            if not code and (unknown or deletions & set(upsert) or not user):
                code = InvalidRequestError.code
                message = "an empty user, an unknown mechanism, or one both set and deleted"
            if not code and deletions - set(store.describe(user)):
                code = ResourceNotFoundError.code
                message = f"user {user!r} has no {', '.join(sorted(deletions))} credential"
            if not code:
                store.alter(user, upsert, deletions)
            results.append(
                pb.AlterUserScramCredentialsResult(
                    user=user, error_code=code, error_message=message
                )
            )
        return pb.AlterUserScramCredentialsResponse(results=results)
