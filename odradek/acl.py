"""Access control lists, with Kafka's model (``org.apache.kafka.common.acl``,
``org.apache.kafka.common.resource``) and its authorizer's decision (``AclAuthorizer``).

An ACL binds a *resource pattern* (type, name, LITERAL or PREFIXED) to an *entry* (principal,
host, operation, ALLOW or DENY). Deciding whether ``principal`` from ``host`` may perform
``operation`` on a resource:

1. a principal listed in ``super.users`` may do anything;
2. the ACLs that apply are those of the resource's literal name, of the literal wildcard
   ``*``, and of every PREFIXED pattern that is a prefix of the name;
3. with none, the answer is ``allow.everyone.if.no.acl.found`` (false by default);
4. a matching DENY (principal or ``User:*``, host or ``*``, operation or ALL) refuses: deny
   wins;
5. a matching ALLOW allows. DESCRIBE is implied by READ, WRITE, DELETE and ALTER, and
   DESCRIBE_CONFIGS by ALTER_CONFIGS;
6. otherwise the answer is no.

Pure and immutable: every function and class here is thread-safe. The ``*_wire`` functions
convert to and from the ``odradek.v1`` messages.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Self, TypeVar

from odradek.v1 import odradek_pb2 as pb

T = TypeVar("T")

__all__ = [
    "CLUSTER_NAME",
    "WILDCARD",
    "AccessControlEntry",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourcePattern",
    "ResourceType",
    "authorize",
    "matching_acls",
    "SUPPORTED_OPERATIONS",
    "acl_binding_from_wire",
    "acl_binding_to_wire",
    "acl_filter_from_wire",
    "acl_filter_to_wire",
]

WILDCARD = "*"
"""A literal resource name, principal or host that matches every one."""
CLUSTER_NAME = "kafka-cluster"
"""The one Cluster resource's name."""


class _Named(enum.IntEnum):
    """An enum with Kafka's codes and its Kafka spelling (``Topic``, ``TransactionalId``)."""

    @property
    def kafka_name(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def parse(cls, text: str) -> Self:
        """By Kafka's spelling in any case, with or without underscores (``transactional-id``,
        ``TransactionalId``, ``CLUSTER_ACTION``). Raises ``ValueError``."""
        key = text.strip().replace("-", "").replace("_", "").upper()
        for member in cls:
            if member.name.replace("_", "") == key:
                return member
        raise ValueError(f"unknown {cls.__name__} {text!r}")


class ResourceType(_Named):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_Named):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2  # filters only: literal, wildcard or prefixed patterns matching a name
    LITERAL = 3
    PREFIXED = 4


class AclOperation(_Named):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_Named):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


O = AclOperation  # noqa: E741 - short for the table below
SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset(
        {O.READ, O.WRITE, O.CREATE, O.DESCRIBE, O.DELETE, O.ALTER, O.DESCRIBE_CONFIGS}
        | {O.ALTER_CONFIGS}
    ),
    ResourceType.GROUP: frozenset(
        {O.READ, O.DESCRIBE, O.DELETE, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS}  # configs: Kafka 4
    ),
    ResourceType.CLUSTER: frozenset(
        {O.CREATE, O.CLUSTER_ACTION, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS, O.IDEMPOTENT_WRITE}
        | {O.ALTER, O.DESCRIBE}
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset({O.DESCRIBE, O.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({O.DESCRIBE}),
    ResourceType.USER: frozenset({O.CREATE_TOKENS, O.DESCRIBE_TOKENS}),
}
"""Operations an ACL may name per resource type, besides ALL (Kafka's ``AclEntry``)."""

_IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    O.DESCRIBE: frozenset({O.DESCRIBE, O.READ, O.WRITE, O.DELETE, O.ALTER}),
    O.DESCRIBE_CONFIGS: frozenset({O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS}),
}


@dataclass(frozen=True, slots=True, order=True)
class ResourcePattern:
    """``Topic:LITERAL:orders``, ``Topic:PREFIXED:orders-``, ``Cluster:LITERAL:kafka-cluster``.
    Raises ``ValueError`` for a filter-only type, an empty name, or a prefixed wildcard."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def __post_init__(self) -> None:
        if self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            raise ValueError(f"an ACL needs a resource type, not {self.resource_type.name}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise ValueError(f"an ACL's pattern is LITERAL or PREFIXED, not {self.pattern_type}")
        if not self.name:
            raise ValueError("an ACL's resource name must not be empty")
        if self.resource_type is ResourceType.CLUSTER and self.name != CLUSTER_NAME:
            raise ValueError(f"the cluster resource is named {CLUSTER_NAME!r}")

    def __str__(self) -> str:
        return f"{self.resource_type.kafka_name}:{self.pattern_type.name}:{self.name}"

    def matches(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this pattern covers the resource ``resource_type``/``name``."""
        if resource_type is not self.resource_type:
            return False
        if self.pattern_type is PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name in (name, WILDCARD)


@dataclass(frozen=True, slots=True, order=True)
class AccessControlEntry:
    """Who (``User:alice``, ``User:*``), from where (an IP address or ``*``), what, and
    whether it is allowed. Raises ``ValueError`` for a malformed principal or a filter-only
    value."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __post_init__(self) -> None:
        kind, sep, name = self.principal.partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"{self.principal!r} is not a principal (Type:name, e.g. User:alice)")
        if not self.host:
            raise ValueError("an ACL's host must not be empty (* for any)")
        if self.operation in (O.ANY, O.UNKNOWN):
            raise ValueError(f"an ACL's operation cannot be {self.operation.name}")
        if self.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            raise ValueError(f"an ACL's permission is ALLOW or DENY, not {self.permission_type}")

    def matches(self, principal: str, host: str, operation: AclOperation) -> bool:
        """Whether this entry speaks of ``principal`` from ``host`` doing ``operation``
        (ALLOW entries also of what implies ``operation``)."""
        if self.principal not in (principal, "User:*"):
            return False
        if self.host not in (host, WILDCARD):
            return False
        if self.operation is O.ALL or self.operation is operation:
            return True
        return (
            self.permission_type is AclPermissionType.ALLOW
            and self.operation in _IMPLIED_BY.get(operation, frozenset())
        )


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    """One ACL: a resource pattern and an entry."""

    pattern: ResourcePattern
    entry: AccessControlEntry

    def __post_init__(self) -> None:
        allowed = SUPPORTED_OPERATIONS.get(self.pattern.resource_type, frozenset())
        if self.entry.operation is not O.ALL and self.entry.operation not in allowed:
            names = ", ".join(sorted(o.kafka_name for o in allowed))
            raise ValueError(
                f"operation {self.entry.operation.kafka_name} does not apply to "
                f"{self.pattern.resource_type.kafka_name} (ALL, {names})"
            )


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """What DescribeAcls and DeleteAcls match: ``None`` fields and the ANY values match
    everything; pattern type MATCH matches the literal name, the wildcard and prefixes of
    ``name`` (Kafka's ``ResourcePatternFilter``)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, binding: AclBinding) -> bool:
        p, e = binding.pattern, binding.entry
        if self.resource_type is not ResourceType.ANY and p.resource_type is not self.resource_type:
            return False
        if self.pattern_type is PatternType.MATCH:
            if self.name is not None and not p.matches(p.resource_type, self.name):
                return False
        else:
            if self.pattern_type is not PatternType.ANY and p.pattern_type is not self.pattern_type:
                return False
            if self.name is not None and p.name != self.name:
                return False
        if self.principal is not None and e.principal != self.principal:
            return False
        if self.host is not None and e.host != self.host:
            return False
        if self.operation is not AclOperation.ANY and e.operation is not self.operation:
            return False
        return self.permission_type is AclPermissionType.ANY or (
            e.permission_type is self.permission_type
        )


def matching_acls(
    acls: Iterable[AclBinding], resource_type: ResourceType, name: str
) -> list[AclBinding]:
    """The ACLs whose pattern covers the resource (literal name, wildcard, prefixes)."""
    return [a for a in acls if a.pattern.matches(resource_type, name)]


def authorize(
    acls: Iterable[AclBinding],
    principal: str,
    host: str,
    operation: AclOperation,
    super_users: frozenset[str] = frozenset(),
    allow_everyone_if_no_acl_found: bool = False,
) -> bool:
    """Kafka's decision for ``principal`` from ``host`` doing ``operation`` on the resource
    whose matching ACLs are ``acls`` (see :func:`matching_acls`)."""
    if principal in super_users:
        return True
    entries = [a.entry for a in acls]
    if not entries:
        return allow_everyone_if_no_acl_found
    deny = AclPermissionType.DENY
    if any(e.permission_type is deny and e.matches(principal, host, operation) for e in entries):
        return False
    return any(
        e.permission_type is AclPermissionType.ALLOW and e.matches(principal, host, operation)
        for e in entries
    )


# -- ACLs on the wire --------------------------------------------------------------------------


def acl_binding_to_wire(b: AclBinding) -> pb.AclBinding:
    return pb.AclBinding(
        resource_type=b.pattern.resource_type,
        resource_name=b.pattern.name,
        pattern_type=b.pattern.pattern_type,
        principal=b.entry.principal,
        host=b.entry.host,
        operation=b.entry.operation,
        permission_type=b.entry.permission_type,
    )


def _enum(cls: Callable[[int], T], value: int, what: str) -> T:
    try:
        return cls(value)
    except ValueError:
        raise ValueError(f"unknown {what} {value}") from None


def acl_binding_from_wire(w: pb.AclBinding) -> AclBinding:
    """Raises ``ValueError`` for an invalid ACL."""
    return AclBinding(
        ResourcePattern(
            _enum(ResourceType, w.resource_type, "resource type"),
            w.resource_name,
            _enum(PatternType, w.pattern_type, "pattern type"),
        ),
        AccessControlEntry(
            w.principal,
            w.host,
            _enum(AclOperation, w.operation, "operation"),
            _enum(AclPermissionType, w.permission_type, "permission type"),
        ),
    )


def acl_filter_from_wire(w: pb.AclFilter) -> AclBindingFilter:
    """Raises ``ValueError`` for an unknown enum value (UNKNOWN, 0, included)."""
    values = (w.resource_type, w.pattern_type, w.operation, w.permission_type)
    if 0 in values:
        raise ValueError("a filter's resource, pattern, operation and permission types are needed")
    return AclBindingFilter(
        resource_type=_enum(ResourceType, w.resource_type, "resource type"),
        name=w.resource_name if w.HasField("resource_name") else None,
        pattern_type=_enum(PatternType, w.pattern_type, "pattern type"),
        principal=w.principal if w.HasField("principal") else None,
        host=w.host if w.HasField("host") else None,
        operation=_enum(AclOperation, w.operation, "operation"),
        permission_type=_enum(AclPermissionType, w.permission_type, "permission type"),
    )


def acl_filter_to_wire(f: AclBindingFilter) -> pb.AclFilter:
    out = pb.AclFilter(
        resource_type=f.resource_type,
        pattern_type=f.pattern_type,
        operation=f.operation,
        permission_type=f.permission_type,
    )
    if f.name is not None:
        out.resource_name = f.name
    if f.principal is not None:
        out.principal = f.principal
    if f.host is not None:
        out.host = f.host
    return out
