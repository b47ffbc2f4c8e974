"""DescribeConfigs (32) v1-v2, AlterConfigs (33) v0-v1 and IncrementalAlterConfigs (44) v0-v1:
the admin room's config calls, answered per resource (a topic by name, a broker by id or ``""``
for the cluster-wide dynamic default, a group by id: Kafka 4's GROUP resource, 32).

As Kafka's ``KafkaApis.handleDescribeConfigsRequest`` / ``handleAlterConfigsRequest`` /
``handleIncrementalAlterConfigsRequest`` (ZooKeeper mode, ``ConfigHelper``,
``ZkAdminManager``):

* DescribeConfigs: each config with its value, source (v1+), read-only and sensitive flags
  (a sensitive value is null), and its synonyms when ``include_synonyms``; null
  ``configuration_keys`` means every config; v1-v2 have no documentation or type (v3+);
* AlterConfigs replaces a resource's overrides; IncrementalAlterConfigs applies SET / DELETE /
  APPEND / SUBTRACT; both honour ``validate_only``;
* a resource type Kafka does not know here (or one whose configs odradek has no notion of),
  an unknown operation or a null value where Kafka refuses one: INVALID_REQUEST (42) for that
  resource, after the ACL check (a refusal still answers 29 / 31 first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from node.admin.authorization import AuthorizedAdmin
from node.admin.requests import (
    AlterConfigOp,
    AlterConfigOpType,
    AlterConfigsResource,
    AlterConfigsResult,
    ConfigResource,
    ConfigResourceType,
    DescribeConfigsResource,
    DescribeConfigsResult,
    IncrementalAlterConfigsResource,
)
from node.kafka_door import views
from node.kafka_door.build import make, nested, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.frames import response_class
from node.kafka_door.handlers.admin_common import admin_of, caller
from node.kafka_door.services import DoorServices
from odradek.acl import AclOperation
from odradek.errors import InvalidRequestError

__all__ = [
    "handle_alter_configs",
    "handle_describe_configs",
    "handle_incremental_alter_configs",
]

_V = TypeVar("_V")


def _resource(resource_type: int, name: str) -> tuple[ConfigResource, str]:
    """The resource, and ``""`` or why it cannot be served (a sentence)."""
    try:
        kind = ConfigResourceType(int(resource_type))
    except ValueError:
        return (
            ConfigResource(ConfigResourceType.UNKNOWN, name),
            f"Unsupported resource type: {resource_type}",
        )
    return ConfigResource(kind, name), ""


def _checked(
    admin: AuthorizedAdmin,
    principal: str,
    host: str,
    operation: AclOperation,
    items: Sequence[tuple[ConfigResource, str, _V | None]],
    call: Callable[[list[_V]], list[Any]],
    refuse: Callable[[ConfigResource, int, str], Any],
) -> list[Any]:
    """One answer per item: ``call`` on the valid values (the room checks their ACLs), and for
    the invalid ones (a reason, no value) the ACL refusal or INVALID_REQUEST with the reason."""
    valid = [value for _, reason, value in items if not reason and value is not None]
    answered = iter(call(valid) if valid else [])
    out = []
    for resource, reason, value in items:
        if not reason and value is not None:
            out.append(next(answered))
            continue
        code, message = admin.decisions.config_resource(principal, host, operation, resource)
        out.append(
            refuse(resource, code, message)
            if code
            else refuse(resource, InvalidRequestError.code, reason)
        )
    return out


def handle_describe_configs(
    services: DoorServices, ctx: RequestContext, request: views.DescribeConfigsRequestView
) -> Any:
    admin = admin_of(services)
    principal, host = caller(ctx)
    items: list[tuple[ConfigResource, str, DescribeConfigsResource | None]] = []
    for wanted in request.resources:
        resource, reason = _resource(wanted.resource_type, wanted.resource_name)
        keys = None if wanted.configuration_keys is None else tuple(wanted.configuration_keys)
        items.append((resource, reason, DescribeConfigsResource(resource, keys)))
    synonyms = bool(getattr(request, "include_synonyms", False))
    results: list[DescribeConfigsResult] = _checked(
        admin,
        principal,
        host,
        AclOperation.DESCRIBE_CONFIGS,
        items,
        lambda valid: admin.describe_configs(principal, host, valid, include_synonyms=synonyms),
        lambda resource, code, message: DescribeConfigsResult(resource, code, message),
    )
    cls = response_class_of(ctx)
    result_cls = nested(cls, "DescribeConfigsResult")
    config_cls = nested(cls, "DescribeConfigsResourceResult")
    synonym_cls = nested(cls, "DescribeConfigsSynonym")
    out = []
    for r, asked in zip(results, request.resources, strict=True):
        configs = tuple(
            make(
                config_cls,
                name=c.name,
                value=None if c.is_sensitive else c.value,
                read_only=c.read_only,
                is_default=c.is_default,
                config_source=int(c.config_source),
                is_sensitive=c.is_sensitive,
                synonyms=tuple(
                    make(
                        synonym_cls,
                        name=s.name,
                        value=None if c.is_sensitive else s.value,
                        source=int(s.source),
                    )
                    for s in (c.synonyms if synonyms else ())
                ),
                config_type=int(c.config_type),
                documentation=c.documentation,
            )
            for c in r.configs
        )
        out.append(
            make(
                result_cls,
                error_code=r.error_code,
                error_message=r.error_message or None,
                resource_type=asked.resource_type,
                resource_name=asked.resource_name,
                configs=configs,
            )
        )
    return make(cls, throttle_time=0, results=tuple(out))


def _alter_response(api_key: int, ctx: RequestContext, request: Any, results: list[Any]) -> Any:
    cls = response_class(api_key, ctx.api_version)
    result_cls = nested(cls, "AlterConfigsResourceResponse")
    return make(
        cls,
        throttle_time=0,
        responses=tuple(
            make(
                result_cls,
                error_code=r.error_code,
                error_message=r.error_message or None,
                resource_type=asked.resource_type,
                resource_name=asked.resource_name,
            )
            for r, asked in zip(results, request.resources, strict=True)
        ),
    )


def _refused(resource: ConfigResource, code: int, message: str) -> AlterConfigsResult:
    return AlterConfigsResult(resource, code, message)


def handle_alter_configs(
    services: DoorServices, ctx: RequestContext, request: views.AlterConfigsRequestView
) -> Any:
    admin = admin_of(services)
    principal, host = caller(ctx)
    items: list[tuple[ConfigResource, str, AlterConfigsResource | None]] = []
    for r in request.resources:
        resource, reason = _resource(r.resource_type, r.resource_name)
        nulls = [c.name for c in r.configs if c.value is None]
        if nulls and not reason:
            reason = f"Null value not supported for : {', '.join(nulls)}"
        configs = {c.name: c.value for c in r.configs if c.value is not None}
        items.append((resource, reason, AlterConfigsResource(resource, configs)))
    validate_only = bool(request.validate_only)
    results = _checked(
        admin,
        principal,
        host,
        AclOperation.ALTER_CONFIGS,
        items,
        lambda valid: admin.alter_configs(principal, host, valid, validate_only=validate_only),
        _refused,
    )
    return _alter_response(33, ctx, request, results)


def handle_incremental_alter_configs(
    services: DoorServices, ctx: RequestContext, request: views.IncrementalAlterConfigsRequestView
) -> Any:
    admin = admin_of(services)
    principal, host = caller(ctx)
    items: list[tuple[ConfigResource, str, IncrementalAlterConfigsResource | None]] = []
    for r in request.resources:
        resource, reason = _resource(r.resource_type, r.resource_name)
        ops = []
        for c in r.configs:
            try:
                op = AlterConfigOpType(int(c.config_operation))
            except ValueError:
                reason = reason or f"Unknown alter config operation {c.config_operation}"
                continue
            ops.append(AlterConfigOp(c.name, op, c.value))
        items.append((resource, reason, IncrementalAlterConfigsResource(resource, tuple(ops))))
    validate_only = bool(request.validate_only)
    results = _checked(
        admin,
        principal,
        host,
        AclOperation.ALTER_CONFIGS,
        items,
        lambda valid: admin.incremental_alter_configs(
            principal, host, valid, validate_only=validate_only
        ),
        _refused,
    )
    return _alter_response(44, ctx, request, results)
