"""The ACL and SCRAM credential calls of the admin room (Kafka's ``AclApis`` and
``ZkAdminManager.describe/alterUserScramCredentials``), over the node's ACL store and
credential store. Thread-safe (no state of its own; the stores are).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from node.admin.requests import (
    AclCreationResult,
    AlterUserScramCredentialsResult,
    DeleteAclsFilterResult,
    DescribeAclsResult,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResult,
    InvalidAcl,
    ScramCredentialDeletion,
    ScramCredentialInfo,
    ScramCredentialUpsertion,
)
from node.admin.views import AclStore, CredentialStore
from odradek.acl import AclBinding, AclBindingFilter
from odradek.errors import (
    InvalidRequestError,
    ResourceNotFoundError,
    SecurityDisabledError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
    UnsupportedVersionError,
)
from odradek.scram import MECHANISMS, ScramCredential, credential_from_salted_password

__all__ = ["SecurityAdmin"]


class SecurityAdmin:
    """ACLs and SCRAM credentials. ``acls`` ``None``: the ACL calls answer SECURITY_DISABLED
    (54); ``credentials`` ``None``: the SCRAM calls answer UNSUPPORTED_VERSION (35)."""

    def __init__(self, acls: AclStore | None, credentials: CredentialStore | None) -> None:
        self._acls = acls
        self._credentials = credentials

    def create_acls(self, creations: Sequence[AclBinding | InvalidAcl]) -> list[AclCreationResult]:
        """Store the ACLs; one result per creation, INVALID_REQUEST (42) for one a door could
        not decode (SECURITY_DISABLED, 54, for each without an authorizer)."""
        if self._acls is None:
            return [_security_disabled(AclCreationResult)] * len(creations)
        self._acls.create_acls([c for c in creations if isinstance(c, AclBinding)])
        return [
            AclCreationResult(InvalidRequestError.code, c.message)
            if isinstance(c, InvalidAcl)
            else AclCreationResult()
            for c in creations
        ]

    def describe_acls(self, acl_filter: AclBindingFilter | InvalidAcl) -> DescribeAclsResult:
        """The ACLs ``acl_filter`` matches (SECURITY_DISABLED without an authorizer)."""
        if self._acls is None:
            return _security_disabled(DescribeAclsResult)
        if isinstance(acl_filter, InvalidAcl):
            return DescribeAclsResult(InvalidRequestError.code, acl_filter.message)
        return DescribeAclsResult(
            acls=tuple(b for b in self._acls.bindings() if acl_filter.matches(b))
        )

    def delete_acls(
        self, filters: Sequence[AclBindingFilter | InvalidAcl]
    ) -> list[DeleteAclsFilterResult]:
        """Delete what each filter matches; per filter the ACLs it deleted, INVALID_REQUEST for
        one a door could not decode (SECURITY_DISABLED for each without an authorizer)."""
        if self._acls is None:
            return [_security_disabled(DeleteAclsFilterResult)] * len(filters)
        deleted = iter(
            self._acls.delete_acls([f for f in filters if isinstance(f, AclBindingFilter)])
        )
        return [
            DeleteAclsFilterResult(InvalidRequestError.code, f.message)
            if isinstance(f, InvalidAcl)
            else DeleteAclsFilterResult(matching_acls=tuple(next(deleted)))
            for f in filters
        ]

    # -- SCRAM credentials ------------------------------------------------------------------

    def describe_user_scram_credentials(
        self, users: Sequence[str] | None = None
    ) -> DescribeUserScramCredentialsResponse:
        """Per user (each once; every user with a credential for ``None`` or empty) the
        mechanisms and iterations; RESOURCE_NOT_FOUND for a named user without any. Without a
        credential store: UNSUPPORTED_VERSION at the top."""
        store = self._credentials
        if store is None:
            return DescribeUserScramCredentialsResponse(
                UnsupportedVersionError.code, "this node keeps no credentials"
            )
        named = list(dict.fromkeys(users or ()))
        results = []
        for user in named or store.users():
            infos = store.describe(user)
            if not infos and not named:
                continue
            if not infos:
                results.append(
                    DescribeUserScramCredentialsResult(
                        user, ResourceNotFoundError.code, f"user {user!r} has no SCRAM credentials"
                    )
                )
                continue
            results.append(
                DescribeUserScramCredentialsResult(
                    user,
                    credential_infos=tuple(
                        ScramCredentialInfo(m, i) for m, i in sorted(infos.items())
                    ),
                )
            )
        return DescribeUserScramCredentialsResponse(results=tuple(results))

    def alter_user_scram_credentials(
        self,
        deletions: Sequence[ScramCredentialDeletion],
        upsertions: Sequence[ScramCredentialUpsertion],
    ) -> list[AlterUserScramCredentialsResult]:
        """Per user (in the order first named): set and delete credentials in one write.
        UNSUPPORTED_SASL_MECHANISM for an unknown upserted mechanism, UNACCEPTABLE_CREDENTIAL
        for iterations out of the mechanism's range or an empty salt or password,
        INVALID_REQUEST for an empty user, an unknown deleted mechanism or one both set and
        deleted, RESOURCE_NOT_FOUND for deleting a credential the user lacks;
        UNSUPPORTED_VERSION for every user without a credential store."""
        users = list(dict.fromkeys([d.name for d in deletions] + [u.name for u in upsertions]))
        store = self._credentials
        if store is None:
            return [
                AlterUserScramCredentialsResult(
                    u, UnsupportedVersionError.code, "this node keeps no credentials"
                )
                for u in users
            ]
        results = []
        for user in users:
            code, message = 0, ""
            deleting = {d.mechanism for d in deletions if d.name == user}
            upsert: dict[str, ScramCredential] = {}
            for u in (u for u in upsertions if u.name == user):
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
            unknown = deleting - set(MECHANISMS)
            if not code and (unknown or deleting & set(upsert) or not user):
                code = InvalidRequestError.code
                message = "an empty user, an unknown mechanism, or one both set and deleted"
            if not code and deleting - set(store.describe(user)):
                code = ResourceNotFoundError.code
                message = f"user {user!r} has no {', '.join(sorted(deleting))} credential"
            if not code:
                store.alter(user, upsert, deleting)
            results.append(AlterUserScramCredentialsResult(user, code, message))
        return results


_R = TypeVar("_R")


def _security_disabled(cls: Callable[[int, str], _R]) -> _R:
    return cls(SecurityDisabledError.code, "no authorizer is configured (authorizer.class.name)")
