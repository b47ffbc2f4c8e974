"""DescribeAcls (29), CreateAcls (30) and DeleteAcls (31), v1-v2: the admin room's ACL calls.

As Kafka's ``AclApis``: the cluster check first (DESCRIBE for DescribeAcls, ALTER for the
others: CLUSTER_AUTHORIZATION_FAILED, 31), then each creation or filter validated (an unknown
type, a malformed principal, an operation the resource type does not have: INVALID_REQUEST,
42, with a sentence). Filters match as Kafka's ``AclBindingFilter``: ANY matches every value,
a null name / principal / host matches any, pattern type MATCH matches the literal name, the
wildcard and the prefixed patterns covering the name. DescribeAcls answers the matching ACLs
grouped by resource pattern; DeleteAcls each filter's deleted ACLs. Without an authorizer:
SECURITY_DISABLED (54).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from node.admin.requests import InvalidAcl
from node.kafka_door import views
from node.kafka_door.build import make, nested, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.handlers.admin_common import admin_of, caller
from node.kafka_door.services import DoorServices
from odradek.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

__all__ = ["handle_create_acls", "handle_delete_acls", "handle_describe_acls"]

T = TypeVar("T")


def _enum(cls: Callable[[int], T], value: int, what: str) -> T:
    try:
        return cls(int(value))
    except ValueError:
        raise ValueError(f"unknown {what} {value}") from None


def _binding(c: Any) -> AclBinding | InvalidAcl:
    try:
        return AclBinding(
            ResourcePattern(
                _enum(ResourceType, c.resource_type, "resource type"),
                c.resource_name,
                _enum(PatternType, c.resource_pattern_type, "pattern type"),
            ),
            AccessControlEntry(
                c.principal,
                c.host,
                _enum(AclOperation, c.operation, "operation"),
                _enum(AclPermissionType, c.permission_type, "permission type"),
            ),
        )
    except ValueError as e:
        return InvalidAcl(f"Invalid ACL creation: {e}")


def _filter(f: Any) -> AclBindingFilter | InvalidAcl:
    values = (f.resource_type_filter, f.pattern_type_filter, f.operation, f.permission_type)
    if 0 in values:
        return InvalidAcl(
            "An ACL filter's resource type, pattern type, operation and permission type "
            "must not be UNKNOWN"
        )
    try:
        return AclBindingFilter(
            resource_type=_enum(ResourceType, f.resource_type_filter, "resource type"),
            name=f.resource_name_filter,
            pattern_type=_enum(PatternType, f.pattern_type_filter, "pattern type"),
            principal=f.principal_filter,
            host=f.host_filter,
            operation=_enum(AclOperation, f.operation, "operation"),
            permission_type=_enum(AclPermissionType, f.permission_type, "permission type"),
        )
    except ValueError as e:
        return InvalidAcl(f"Invalid ACL filter: {e}")


def handle_create_acls(
    services: DoorServices, ctx: RequestContext, request: views.CreateAclsRequestView
) -> Any:
    results = admin_of(services).create_acls(*caller(ctx), [_binding(c) for c in request.creations])
    cls = response_class_of(ctx)
    result_cls = nested(cls, "AclCreationResult")
    return make(
        cls,
        throttle_time=0,
        results=tuple(
            make(result_cls, error_code=r.error_code, error_message=r.error_message or None)
            for r in results
        ),
    )


def handle_describe_acls(
    services: DoorServices, ctx: RequestContext, request: views.DescribeAclsRequestView
) -> Any:
    result = admin_of(services).describe_acls(*caller(ctx), _filter(request))
    cls = response_class_of(ctx)
    resource_cls = nested(cls, "DescribeAclsResource")
    acl_cls = nested(cls, "AclDescription")
    by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for b in sorted(result.acls):
        by_pattern.setdefault(b.pattern, []).append(b.entry)
    return make(
        cls,
        throttle_time=0,
        error_code=result.error_code,
        error_message=result.error_message or None,
        resources=tuple(
            make(
                resource_cls,
                resource_type=int(p.resource_type),
                resource_name=p.name,
                pattern_type=int(p.pattern_type),
                acls=tuple(
                    make(
                        acl_cls,
                        principal=e.principal,
                        host=e.host,
                        operation=int(e.operation),
                        permission_type=int(e.permission_type),
                    )
                    for e in entries
                ),
            )
            for p, entries in by_pattern.items()
        ),
    )


def handle_delete_acls(
    services: DoorServices, ctx: RequestContext, request: views.DeleteAclsRequestView
) -> Any:
    results = admin_of(services).delete_acls(*caller(ctx), [_filter(f) for f in request.filters])
    cls = response_class_of(ctx)
    result_cls = nested(cls, "DeleteAclsFilterResult")
    acl_cls = nested(cls, "DeleteAclsMatchingAcl")
    return make(
        cls,
        throttle_time=0,
        filter_results=tuple(
            make(
                result_cls,
                error_code=r.error_code,
                error_message=r.error_message or None,
                matching_acls=tuple(
                    make(
                        acl_cls,
                        error_code=0,
                        error_message=None,
                        resource_type=int(b.pattern.resource_type),
                        resource_name=b.pattern.name,
                        pattern_type=int(b.pattern.pattern_type),
                        principal=b.entry.principal,
                        host=b.entry.host,
                        operation=int(b.entry.operation),
                        permission_type=int(b.entry.permission_type),
                    )
                    for b in r.matching_acls
                ),
            )
            for r in results
        ),
    )
