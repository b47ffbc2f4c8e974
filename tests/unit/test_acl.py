"""Kafka's ACL model and decision (AclAuthorizerTest's cases), and the znode formats."""

from __future__ import annotations

import json

import pytest

from controller.zk_data import AclChangeNotificationZNode, AclZNode
from odradek.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    acl_binding_from_wire,
    acl_binding_to_wire,
    acl_filter_from_wire,
    acl_filter_to_wire,
    authorize,
    matching_acls,
)

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
R, W, D = AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE
TOPIC = ResourceType.TOPIC


def acl(
    name: str,
    principal: str,
    op: AclOperation,
    permission: AclPermissionType = ALLOW,
    host: str = "*",
    pattern: PatternType = PatternType.LITERAL,
    resource_type: ResourceType = TOPIC,
) -> AclBinding:
    return AclBinding(
        ResourcePattern(resource_type, name, pattern),
        AccessControlEntry(principal, host, op, permission),
    )


def allowed(acls: list[AclBinding], principal: str, op: AclOperation, name: str, **kw) -> bool:
    host = kw.pop("host", "10.0.0.1")
    return authorize(matching_acls(acls, TOPIC, name), principal, host, op, **kw)


def test_no_acl_means_no_unless_allow_everyone():
    assert not allowed([], "User:alice", R, "orders")
    assert allowed([], "User:alice", R, "orders", allow_everyone_if_no_acl_found=True)
    # once a resource has an ACL, allow.everyone.if.no.acl.found no longer applies to it
    acls = [acl("orders", "User:bob", R)]
    assert not allowed(acls, "User:alice", R, "orders", allow_everyone_if_no_acl_found=True)


def test_deny_beats_allow():
    acls = [acl("*", "User:alice", AclOperation.ALL), acl("orders", "User:alice", W, DENY)]
    assert not allowed(acls, "User:alice", W, "orders")
    assert allowed(acls, "User:alice", R, "orders")
    assert allowed(acls, "User:alice", W, "payments")
    # a deny of every user from one host
    acls = [acl("orders", "User:alice", R), acl("orders", "User:*", R, DENY, host="10.0.0.9")]
    assert allowed(acls, "User:alice", R, "orders", host="10.0.0.1")
    assert not allowed(acls, "User:alice", R, "orders", host="10.0.0.9")


def test_prefixed_literal_and_wildcard_patterns():
    acls = [acl("logs-", "User:etl", W, pattern=PatternType.PREFIXED)]
    assert allowed(acls, "User:etl", W, "logs-app")
    assert allowed(acls, "User:etl", W, "logs-")
    assert not allowed(acls, "User:etl", W, "log")
    assert not allowed(acls, "User:etl", W, "other")
    assert not allowed([acl("orders", "User:a", R)], "User:a", R, "orders2")
    assert allowed([acl("*", "User:*", R)], "User:anyone", R, "whatever")


def test_implied_operations_and_super_users():
    for op in (R, W, AclOperation.DELETE, AclOperation.ALTER):
        assert allowed([acl("t", "User:a", op)], "User:a", D, "t")
    assert not allowed([acl("t", "User:a", AclOperation.CREATE)], "User:a", D, "t")
    alter = acl("t", "User:a", AclOperation.ALTER_CONFIGS)
    assert allowed([alter], "User:a", AclOperation.DESCRIBE_CONFIGS, "t")
    # a DENY READ does not deny DESCRIBE
    assert allowed([acl("t", "User:a", D), acl("t", "User:a", R, DENY)], "User:a", D, "t")
    assert allowed([], "User:admin", W, "t", super_users=frozenset({"User:admin"}))
    assert allowed(
        [acl("t", "User:admin", W, DENY)],
        "User:admin",
        W,
        "t",
        super_users=frozenset({"User:admin"}),
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda: acl("orders", "alice", R),  # not Type:name
        lambda: acl("orders", "User:a", AclOperation.CLUSTER_ACTION),  # not a topic operation
        lambda: acl("g", "User:a", W, resource_type=ResourceType.GROUP),
        lambda: acl(
            "other", "User:a", AclOperation.CLUSTER_ACTION, resource_type=ResourceType.CLUSTER
        ),
        lambda: acl("", "User:a", R),
        lambda: acl("t", "User:a", AclOperation.ANY),
        lambda: acl("t", "User:a", R, AclPermissionType.ANY),
        lambda: acl("t", "User:a", R, pattern=PatternType.MATCH),
    ],
)
def test_invalid_acls(make):
    with pytest.raises(ValueError):
        make()


def test_filters():
    literal = acl("orders", "User:a", R)
    prefixed = acl("ord", "User:b", W, DENY, pattern=PatternType.PREFIXED)
    wildcard = acl("*", "User:c", R)
    acls = [literal, prefixed, wildcard]
    assert [a for a in acls if AclBindingFilter().matches(a)] == acls
    match = AclBindingFilter(resource_type=TOPIC, name="orders", pattern_type=PatternType.MATCH)
    assert [a for a in acls if match.matches(a)] == acls
    exact = AclBindingFilter(resource_type=TOPIC, name="orders", pattern_type=PatternType.LITERAL)
    assert [a for a in acls if exact.matches(a)] == [literal]
    assert [a for a in acls if AclBindingFilter(principal="User:b").matches(a)] == [prefixed]
    assert [a for a in acls if AclBindingFilter(permission_type=DENY).matches(a)] == [prefixed]


def test_wire_round_trip():
    b = acl("logs-", "User:etl", W, DENY, host="10.0.0.1", pattern=PatternType.PREFIXED)
    assert acl_binding_from_wire(acl_binding_to_wire(b)) == b
    f = AclBindingFilter(resource_type=TOPIC, name="x", principal="User:a")
    assert acl_filter_from_wire(acl_filter_to_wire(f)) == f
    assert acl_filter_from_wire(acl_filter_to_wire(AclBindingFilter())) == AclBindingFilter()


def test_znodes_in_kafka_layout():
    literal = ResourcePattern(TOPIC, "orders")
    prefixed = ResourcePattern(TOPIC, "logs-", PatternType.PREFIXED)
    assert AclZNode.path(literal) == "/kafka-acl/Topic/orders"
    assert AclZNode.path(prefixed) == "/kafka-acl-extended/prefixed/Topic/logs-"
    group = ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx")
    assert AclZNode.path(group) == "/kafka-acl/TransactionalId/tx"
    entries = {
        AccessControlEntry("User:alice", "*", R, ALLOW),
        AccessControlEntry("User:bob", "10.0.0.1", AclOperation.CLUSTER_ACTION, DENY),
    }
    data = AclZNode.encode(entries)
    assert json.loads(data) == {
        "version": 1,
        "acls": [
            {
                "principal": "User:alice",
                "permissionType": "Allow",
                "operation": "Read",
                "host": "*",
            },
            {
                "principal": "User:bob",
                "permissionType": "Deny",
                "operation": "ClusterAction",
                "host": "10.0.0.1",
            },
        ],
    }
    assert AclZNode.decode(data, "x") == entries
    assert AclChangeNotificationZNode.encode(literal) == b"Topic:orders"
    assert json.loads(AclChangeNotificationZNode.encode(prefixed)) == {
        "version": 1,
        "resourceType": "Topic",
        "name": "logs-",
        "patternType": "PREFIXED",
    }
    for pattern, extended in ((literal, False), (prefixed, True)):
        data = AclChangeNotificationZNode.encode(pattern)
        assert AclChangeNotificationZNode.decode(data, extended) == pattern
    with pytest.raises(ValueError):
        AclZNode.decode(b'{"version":1,"acls":[{"principal":"User:a"}]}', "x")
