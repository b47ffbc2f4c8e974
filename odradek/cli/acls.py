"""``odradek acls add | list | remove``: ACLs, with the options of Kafka's ``kafka-acls``.

::

    odradek acls add --allow-principal User:alice --operation Read --operation Describe \\
        --topic orders
    odradek acls add --allow-principal User:etl --operation Write --topic orders- \\
        --resource-pattern-type prefixed
    odradek acls add --deny-principal User:mallory --deny-host 10.0.0.9 --operation All --topic '*'
    odradek acls list [--topic orders] [--principal User:alice] [--resource-pattern-type match]
    odradek acls remove --allow-principal User:alice --operation Read --topic orders

``add`` creates, for each resource, each principal and each operation, one ACL (``--operation``
defaults to All, the hosts to ``*``). ``remove`` deletes the ACLs matching the options
(without a principal or an operation: every ACL of the resource). ``list`` prints the ACLs,
grouped by resource pattern. The resource is ``--topic``, ``--group``, ``--transactional-id`` or
``--cluster`` (repeatable; ``list`` without one lists all). Needs ALTER (add, remove) or
DESCRIBE (list) on the cluster; a cluster without an authorizer answers SECURITY_DISABLED.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from odradek.cli.common import InputError, add_bootstrap_option, client_security

if TYPE_CHECKING:
    from odradek.acl import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        PatternType,
        ResourcePattern,
        ResourceType,
    )

__all__ = ["add_parser"]


def _patterns(
    args: argparse.Namespace, *, for_filter: bool
) -> list[tuple[ResourceType, str | None]]:
    """``(resource type, name)`` of every resource option; for a filter without any, ANY."""
    from odradek.acl import CLUSTER_NAME, ResourceType

    out: list[tuple[ResourceType, str | None]] = []
    out += [(ResourceType.TOPIC, t) for t in args.topic]
    out += [(ResourceType.GROUP, g) for g in args.group]
    out += [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id]
    if args.cluster:
        out.append((ResourceType.CLUSTER, CLUSTER_NAME))
    if not out and for_filter:
        out.append((ResourceType.ANY, None))
    if not out:
        raise InputError("name a resource: --topic, --group, --transactional-id or --cluster")
    return out


def _entries(args: argparse.Namespace) -> list[tuple[str, str, AclPermissionType]]:
    """``(principal, host, permission)`` of the --allow-/--deny- options."""
    from odradek.acl import AclPermissionType

    return [
        (principal, host, permission)
        for principals, hosts, permission in (
            (args.allow_principal, args.allow_host, AclPermissionType.ALLOW),
            (args.deny_principal, args.deny_host, AclPermissionType.DENY),
        )
        for principal in principals
        for host in hosts or ["*"]
    ]


def _operations(args: argparse.Namespace, default: str) -> list[AclOperation]:
    from odradek.acl import AclOperation

    try:
        return [AclOperation.parse(o) for o in args.operation or [default]]
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _pattern_type(args: argparse.Namespace, default: str) -> PatternType:
    from odradek.acl import PatternType

    try:
        return PatternType.parse(args.resource_pattern_type or default)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _describe(pattern: ResourcePattern) -> str:
    return (
        f"ResourcePattern(resourceType={pattern.resource_type.name}, name={pattern.name}, "
        f"patternType={pattern.pattern_type.name})"
    )


def _print(bindings: list[AclBinding], verb: str) -> None:
    by_pattern: dict[ResourcePattern, list[AclBinding]] = {}
    for b in sorted(bindings):
        by_pattern.setdefault(b.pattern, []).append(b)
    for pattern, acls in by_pattern.items():
        print(f"{verb} ACLs for resource `{_describe(pattern)}`:")
        for b in acls:
            e = b.entry
            print(
                f" \t(principal={e.principal}, host={e.host}, operation={e.operation.name}, "
                f"permissionType={e.permission_type.name})"
            )
        print()


def run_add(args: argparse.Namespace) -> int:
    from odradek.acl import AccessControlEntry, AclBinding, ResourcePattern
    from odradek.admin import Admin

    entries = _entries(args)
    if not entries:
        raise InputError("name a principal: --allow-principal or --deny-principal")
    pattern_type = _pattern_type(args, "literal")
    operations = _operations(args, "All")
    try:
        bindings = [
            AclBinding(
                ResourcePattern(resource_type, name or "", pattern_type),
                AccessControlEntry(principal, host, operation, permission),
            )
            for resource_type, name in _patterns(args, for_filter=False)
            for principal, host, permission in entries
            for operation in operations
        ]
    except ValueError as exc:
        raise InputError(str(exc)) from None
    with Admin(args.bootstrap_server, **client_security(args)) as admin:
        errors = admin.create_acls(bindings)
    failed = next((e for e in errors if e is not None), None)
    if failed is not None:
        raise failed
    _print(bindings, "Adding")
    return 0


def _filters(args: argparse.Namespace, default_pattern: str) -> list[AclBindingFilter]:
    from odradek.acl import AclBindingFilter, AclPermissionType

    pattern_type = _pattern_type(args, default_pattern)
    operations = _operations(args, "Any")
    entries: list[tuple[str | None, str | None, AclPermissionType]] = [
        (p, None if h == "*" and not _host_given(args) else h, perm)
        for p, h, perm in _entries(args)
    ]
    if getattr(args, "principal", None):
        entries = [(p, None, AclPermissionType.ANY) for p in args.principal]
    if not entries:
        entries = [(None, None, AclPermissionType.ANY)]
    return [
        AclBindingFilter(
            resource_type=resource_type,
            name=name,
            pattern_type=pattern_type,
            principal=principal,
            host=host,
            operation=operation,
            permission_type=permission,
        )
        for resource_type, name in _patterns(args, for_filter=True)
        for principal, host, permission in entries
        for operation in operations
    ]


def _host_given(args: argparse.Namespace) -> bool:
    return bool(args.allow_host or args.deny_host)


def run_list(args: argparse.Namespace) -> int:
    from odradek.admin import Admin

    filters = _filters(args, "any")
    found: set[AclBinding] = set()
    with Admin(args.bootstrap_server, **client_security(args)) as admin:
        for f in filters:
            found.update(admin.describe_acls(f))
    _print(sorted(found), "Current")
    return 0


def run_remove(args: argparse.Namespace) -> int:
    from odradek.admin import Admin

    if not (args.topic or args.group or args.transactional_id or args.cluster):
        raise InputError("name a resource: --topic, --group, --transactional-id or --cluster")
    with Admin(args.bootstrap_server, **client_security(args)) as admin:
        removed = [b for group in admin.delete_acls(_filters(args, "literal")) for b in group]
    _print(removed, "Removed")
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``acls`` and its subcommands on the ``odradek`` command's subparsers."""
    acls = sub.add_parser(
        "acls", help="add, list and remove ACLs", description=__doc__.split("\n\n")[0]
    )
    actions = acls.add_subparsers(
        dest="acls_command", metavar="ACTION", required=True, parser_class=type(acls)
    )
    for name, handler, help_text in (
        ("add", run_add, "add ACLs"),
        ("list", run_list, "list ACLs"),
        ("remove", run_remove, "remove ACLs"),
    ):
        p = actions.add_parser(name, help=help_text, description=help_text)
        add_bootstrap_option(p, top_level=False)
        p.add_argument("--topic", action="append", default=[], metavar="TOPIC")
        p.add_argument("--group", action="append", default=[], metavar="GROUP")
        p.add_argument("--transactional-id", action="append", default=[], metavar="ID")
        p.add_argument("--cluster", action="store_true", help="the cluster resource")
        p.add_argument(
            "--resource-pattern-type",
            metavar="TYPE",
            help="literal (add, remove: default) or prefixed; list and remove also take any "
            "and match (list: default any)",
        )
        p.add_argument("--allow-principal", action="append", default=[], metavar="PRINCIPAL")
        p.add_argument("--deny-principal", action="append", default=[], metavar="PRINCIPAL")
        p.add_argument("--allow-host", action="append", default=[], metavar="HOST")
        p.add_argument("--deny-host", action="append", default=[], metavar="HOST")
        p.add_argument(
            "--operation",
            action="append",
            default=[],
            metavar="OP",
            help="All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
            "DescribeConfigs, AlterConfigs, IdempotentWrite (repeatable)",
        )
        if name == "list":
            p.add_argument("--principal", action="append", default=[], metavar="PRINCIPAL")
        p.set_defaults(handler=handler, prog=p.prog, parser=p)
