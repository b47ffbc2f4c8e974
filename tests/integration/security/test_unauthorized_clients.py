"""Clients refused by ACLs get the authorization error, promptly (issue 27, items 6 and 7),
after Kafka's EndToEndAuthorizationTest: a consumer without DESCRIBE (or with DESCRIBE but
without READ) on an assigned topic gets TOPIC_AUTHORIZATION_FAILED from ``poll()``
(testNoConsumeWithoutDescribeAclViaAssign, testNoConsumeWithDescribeAclViaAssign) instead of
empty polls forever; an idempotent producer that may describe a topic but not write it gets
the refusal of its producer id (CLUSTER_AUTHORIZATION_FAILED, KIP-679) instead of retrying
until its delivery timeout (testNoProduceWithDescribeAcl)."""

from __future__ import annotations

import pytest

from odradek import Admin, Consumer, Producer, TopicPartition
from odradek.acl import AclOperation, ResourcePattern, ResourceType
from odradek.errors import ClusterAuthorizationFailedError, TopicAuthorizationFailedError
from tests.integration.security.test_acls import Cluster, _allow, cluster  # noqa: F401

ORDERS = TopicPartition("orders", 0)


def _poll_until_raised(consumer: Consumer) -> None:
    # a bounded number of polls: before the fix every one returned [] (forever)
    for _ in range(20):
        consumer.poll(timeout_ms=500)


def test_no_consume_without_describe_acl_via_assign(cluster: Cluster) -> None:  # noqa: F811
    with Consumer(cluster.bootstrap, **cluster.security("alice")) as consumer:
        consumer.assign([ORDERS])
        with pytest.raises(TopicAuthorizationFailedError, match="orders"):
            _poll_until_raised(consumer)


def test_no_consume_with_describe_acl_via_assign(cluster: Cluster) -> None:  # noqa: F811
    with Admin(cluster.bootstrap, **cluster.security("admin")) as admin:
        _allow(admin, ResourcePattern(ResourceType.TOPIC, "orders"), AclOperation.DESCRIBE)
    with Consumer(cluster.bootstrap, **cluster.security("alice")) as consumer:
        consumer.assign([ORDERS])
        with pytest.raises(TopicAuthorizationFailedError, match="orders"):
            _poll_until_raised(consumer)
    # once allowed to read, the same consumer code reads
    with Admin(cluster.bootstrap, **cluster.security("admin")) as admin:
        _allow(admin, ResourcePattern(ResourceType.TOPIC, "orders"), AclOperation.READ)
    with Consumer(cluster.bootstrap, **cluster.security("alice")) as consumer:
        consumer.assign([ORDERS])
        consumer.poll(timeout_ms=500)


def test_no_consume_without_describe_acl_via_subscribe(cluster: Cluster) -> None:  # noqa: F811
    with Admin(cluster.bootstrap, **cluster.security("admin")) as admin:
        _allow(admin, ResourcePattern(ResourceType.GROUP, "g"), AclOperation.READ)
    with Consumer(cluster.bootstrap, group_id="g", **cluster.security("alice")) as consumer:
        consumer.subscribe(["orders"])
        with pytest.raises(TopicAuthorizationFailedError, match="orders"):
            _poll_until_raised(consumer)


def test_idempotent_producer_without_write_gets_the_refusal_promptly(
    cluster: Cluster,  # noqa: F811
) -> None:
    with Admin(cluster.bootstrap, **cluster.security("admin")) as admin:
        _allow(admin, ResourcePattern(ResourceType.TOPIC, "orders"), AclOperation.DESCRIBE)
    with Producer(cluster.bootstrap, **cluster.security("alice")) as producer:
        future = producer.send("orders", b"x")
        # far below the 120 s delivery timeout it waited out before the fix
        with pytest.raises(ClusterAuthorizationFailedError, match="IdempotentWrite"):
            future.result(timeout=30)
        # the next send asks again, and is refused again (the producer stays usable)
        with pytest.raises(ClusterAuthorizationFailedError):
            producer.send("orders", b"y").result(timeout=30)
