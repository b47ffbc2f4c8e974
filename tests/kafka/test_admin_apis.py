"""The admin APIs on the Kafka door, through Kafka clients none of us wrote, against a real
three-node cluster (and a one-node cluster with an authorizer for the ACL calls):
confluent-kafka's AdminClient (topics, partitions, configs, the cluster, ACLs, SCRAM
credentials, elections), kafka-python 3's KafkaAdminClient (reassignments, log dirs, producers,
and its topics and configs), aiokafka's AIOKafkaAdminClient and kafkajs' admin client."""

from __future__ import annotations

import asyncio
import json
import subprocess
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin import NewTopic as AioNewTopic
from aiokafka.admin.config_resource import (
    ConfigResource as AioConfigResource,
)
from aiokafka.admin.config_resource import ConfigResourceType as AioConfigResourceType
from confluent_kafka import (
    ElectionType,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from tests.kafka.conftest import JS_CLIENTS, require, running_cluster, wait_for
from tests.kafka.test_confluent_kafka import create_topic, produce, unique

# kafka-python 3 reads its JSON schemas with importlib.resources.read_text, deprecated on 3.11
# (and undeprecated on 3.13): not ours to fix, and an error under filterwarnings = ["error"]
_KAFKA_PYTHON_WARNING = "ignore:read_text is deprecated:DeprecationWarning"
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KpTopicPartition
    from kafka import errors as kafka_errors
    from kafka.admin import ConfigResource as KpConfigResource
    from kafka.admin import ConfigResourceType as KpConfigResourceType
    from kafka.admin import ScramMechanism as KpScramMechanism
    from kafka.admin import UserScramCredentialDeletion as ScramDeletion
    from kafka.admin import UserScramCredentialUpsertion as ScramUpsertion

pytestmark = pytest.mark.filterwarnings(_KAFKA_PYTHON_WARNING)


CLUSTER_OPERATIONS = (
    "CREATE",
    "ALTER",
    "DESCRIBE",
    "CLUSTER_ACTION",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
    "IDEMPOTENT_WRITE",
)
"""Kafka's operations on the cluster resource (``AclEntry.supportedOperations``)."""


def admin_client(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def error_of(future: Any) -> KafkaError | None:
    """The KafkaError a future failed with (``None`` if it succeeded)."""
    try:
        future.result(timeout=60)
    except KafkaException as e:
        error: KafkaError = e.args[0]
        return error
    return None


def failure(future: Any) -> KafkaError:
    """The KafkaError a future must fail with."""
    error = error_of(future)
    assert error is not None, "succeeded"
    return error


@pytest.fixture(scope="module")
def admin(bootstrap: str, kafka_cluster: LocalCluster) -> AdminClient:
    """confluent-kafka's admin client, once the nodes know each other (a node answers Metadata
    without brokers until the controller's first update reaches it, and librdkafka's admin
    calls then wait for their next metadata refresh)."""
    client = admin_client(bootstrap)
    wait_for(
        lambda: len(client.list_topics(timeout=10).brokers) == len(kafka_cluster.nodes),
        "every node in the metadata",
    )
    return client


@pytest.fixture(scope="module")
def kp_admin(bootstrap: str) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=60_000)
    try:
        yield client
    finally:
        client.close()


# -- confluent-kafka: topics and partitions ------------------------------------------------------


def test_create_topics_with_configs_defaults_and_validate_only(admin, bootstrap):
    with_configs, defaults, validated = unique("cfg"), unique("dflt"), unique("val")
    futures = admin.create_topics(
        [
            NewTopic(with_configs, 2, 3, config={"retention.ms": "123456"}),
            # -1 / -1: the node's num.partitions (3) and default.replication.factor (3)
            NewTopic(defaults),
        ],
        operation_timeout=30,
    )
    assert [error_of(f) for f in futures.values()] == [None, None]
    md = wait_for(
        lambda: (
            (t := admin.list_topics(timeout=10).topics).keys() >= {with_configs, defaults} and t
        ),
        "both topics in the metadata",
    )
    assert len(md[with_configs].partitions) == 2
    assert len(md[defaults].partitions) == 3
    assert all(len(p.replicas) == 3 for p in md[defaults].partitions.values())
    configs = admin.describe_configs([ConfigResource("TOPIC", with_configs)])
    described = next(iter(configs.values())).result(timeout=60)
    assert described["retention.ms"].value == "123456"

    check = admin.create_topics([NewTopic(validated, 1, 1)], validate_only=True)
    assert error_of(check[validated]) is None
    assert validated not in admin.list_topics(timeout=10).topics


def test_create_topic_errors_are_kafkas(admin, bootstrap):
    existing = unique("exists")
    create_topic(bootstrap, existing, partitions=1)
    too_many = unique("rf")
    bad_config = unique("bad-config")
    futures = admin.create_topics(
        [
            NewTopic(existing, 1, 3),
            NewTopic(too_many, 1, 4),
            NewTopic(bad_config, 1, 1, config={"cleanup.policy": "nonsense"}),
        ],
        operation_timeout=30,
    )
    errors = {name: failure(f) for name, f in futures.items()}
    assert errors[existing].code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert errors[too_many].code() == KafkaError.INVALID_REPLICATION_FACTOR
    assert "4" in errors[too_many].str()
    assert errors[bad_config].code() == KafkaError.INVALID_CONFIG
    for e in errors.values():
        assert "Traceback" not in e.str() and "Error(" not in e.str()


def test_delete_topics_and_an_unknown_one(admin, bootstrap):
    name = unique("del")
    create_topic(bootstrap, name, partitions=1)
    missing = unique("never")
    futures = admin.delete_topics([name, missing], operation_timeout=30)
    assert error_of(futures[name]) is None
    assert failure(futures[missing]).code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    wait_for(lambda: name not in admin.list_topics(timeout=10).topics, f"{name} deleted")


def test_create_partitions_grows_a_topic_and_refuses_to_shrink(admin, bootstrap):
    name = unique("grow")
    create_topic(bootstrap, name, partitions=1)
    futures = admin.create_partitions([NewPartitions(name, 4)], operation_timeout=30)
    assert error_of(futures[name]) is None
    wait_for(
        lambda: len(admin.list_topics(name, timeout=10).topics[name].partitions) == 4,
        "four partitions",
    )
    futures = admin.create_partitions([NewPartitions(name, 2)], validate_only=True)
    assert failure(futures[name]).code() == KafkaError.INVALID_PARTITIONS


# -- confluent-kafka: configs -------------------------------------------------------------------


def test_describe_configs_of_a_topic_and_a_broker(admin, kafka_cluster, bootstrap):
    name = unique("desc")
    create_topic(bootstrap, name, partitions=1, **{"retention.ms": "60000"})
    broker = str(kafka_cluster.nodes[0].node_id)
    futures = admin.describe_configs(
        [ConfigResource("TOPIC", name), ConfigResource("BROKER", broker)],
        request_timeout=60,
    )
    topic_configs, broker_configs = (f.result(timeout=60) for f in futures.values())
    retention = topic_configs["retention.ms"]
    assert retention.value == "60000"
    assert retention.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert not retention.is_default
    # include_synonyms (librdkafka asks for them): the override, then the broker default
    assert [(s.name, s.source) for s in retention.synonyms.values()] == [
        ("retention.ms", ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
        ("log.retention.ms", ConfigSource.DEFAULT_CONFIG.value),
    ]
    segment = topic_configs["segment.bytes"]
    assert segment.is_default and segment.source == ConfigSource.DEFAULT_CONFIG.value
    # server.properties' num.partitions=3 (the conftest's override): a static broker config
    partitions = broker_configs["num.partitions"]
    assert partitions.value == "3"
    assert partitions.source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert not partitions.is_default and partitions.is_read_only

    missing = admin.describe_configs([ConfigResource("TOPIC", unique("none"))])
    assert failure(next(iter(missing.values()))).code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_alter_configs_and_incremental_alter_configs(admin, bootstrap):
    name = unique("alter")
    create_topic(bootstrap, name, partitions=1, **{"retention.ms": "60000"})

    def overrides() -> dict[str, str]:
        configs = admin.describe_configs([ConfigResource("TOPIC", name)])
        entries = next(iter(configs.values())).result(timeout=60)
        return {
            k: e.value
            for k, e in entries.items()
            if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
        }

    # the legacy call replaces every override
    with pytest.warns(DeprecationWarning, match="alter_configs has been deprecated"):
        legacy = admin.alter_configs(
            [ConfigResource("TOPIC", name, set_config={"segment.ms": "1000"})]
        )
    assert error_of(next(iter(legacy.values()))) is None
    assert overrides() == {"segment.ms": "1000"}

    incremental = admin.incremental_alter_configs(
        [
            ConfigResource(
                "TOPIC",
                name,
                incremental_configs=[
                    ConfigEntry(
                        "retention.ms", "5000", incremental_operation=AlterConfigOpType.SET
                    ),
                    ConfigEntry("segment.ms", None, incremental_operation=AlterConfigOpType.DELETE),
                    ConfigEntry(
                        "cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND
                    ),
                ],
            )
        ]
    )
    assert error_of(next(iter(incremental.values()))) is None
    assert overrides() == {"retention.ms": "5000", "cleanup.policy": "delete,compact"}

    checked = admin.incremental_alter_configs(
        [
            ConfigResource(
                "TOPIC",
                name,
                incremental_configs=[
                    ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)
                ],
            )
        ],
        validate_only=True,
    )
    assert error_of(next(iter(checked.values()))) is None
    bad = admin.incremental_alter_configs(
        [
            ConfigResource(
                "TOPIC",
                name,
                incremental_configs=[
                    ConfigEntry("retention.ms", "x", incremental_operation=AlterConfigOpType.APPEND)
                ],
            )
        ]
    )
    assert failure(next(iter(bad.values()))).code() == KafkaError.INVALID_CONFIG
    assert overrides() == {"retention.ms": "5000", "cleanup.policy": "delete,compact"}


# -- confluent-kafka: the cluster, elections, SCRAM credentials, ACLs without an authorizer -------


def test_describe_cluster_answers_with_the_kafka_listeners(kp_admin, kafka_cluster):
    # kafka-python sends DescribeCluster (confluent-kafka's describe_cluster sends Metadata)
    result = kp_admin.describe_cluster()
    print(result)
    assert sorted((b["broker_id"], b["host"], b["port"]) for b in result["brokers"]) == sorted(
        (n.node_id, "127.0.0.1", n.kafka_port) for n in kafka_cluster.nodes
    )
    assert result["controller_id"] in {n.node_id for n in kafka_cluster.nodes}
    assert result["cluster_id"]
    # no authorizer: every cluster operation is allowed (it asked for them)
    assert set(result["authorized_operations"]) == set(CLUSTER_OPERATIONS)


def test_confluent_kafka_gets_the_authorized_operations_it_asks_for(admin, bootstrap):
    # Metadata v10's cluster and topic operations (KIP-430); no authorizer: all of them
    name = unique("ops")
    create_topic(bootstrap, name, partitions=1)
    cluster = admin.describe_cluster(include_authorized_operations=True).result(timeout=60)
    assert {op.name for op in cluster.authorized_operations} == set(CLUSTER_OPERATIONS)
    (topic,) = admin.describe_topics(
        TopicCollection([name]), include_authorized_operations=True
    ).values()
    assert {op.name for op in topic.result(timeout=60).authorized_operations} == {
        *("READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER", "DESCRIBE_CONFIGS"),
        "ALTER_CONFIGS",
    }
    assert not admin.describe_cluster().result(timeout=60).authorized_operations


def test_elect_leaders_answers_election_not_needed_for_a_preferred_leader(admin, bootstrap):
    name = unique("elect")
    create_topic(bootstrap, name, partitions=1)
    result = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(name, 0)]).result(
        timeout=60
    )
    assert result[TopicPartition(name, 0)].code() == KafkaError.ELECTION_NOT_NEEDED
    missing = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(name, 9)]).result(
        timeout=60
    )
    assert missing[TopicPartition(name, 9)].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_scram_credentials_are_described_after_kafka_python_alters_them(admin, kp_admin):
    user = unique("alice")
    done = kp_admin.alter_user_scram_credentials(
        [ScramUpsertion(user, KpScramMechanism.SCRAM_SHA_256, "secret", iterations=8192)]
    )
    assert done == {user: None}
    described = admin.describe_user_scram_credentials([user])[user].result(timeout=60)
    assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_256, 8192)
    ]
    everyone = admin.describe_user_scram_credentials().result(timeout=60)
    assert user in everyone
    gone = kp_admin.alter_user_scram_credentials(
        [ScramDeletion(user, KpScramMechanism.SCRAM_SHA_256)]
    )
    assert gone == {user: None}
    again = admin.describe_user_scram_credentials([user])[user]
    assert failure(again).code() == KafkaError.RESOURCE_NOT_FOUND
    refused = kp_admin.alter_user_scram_credentials(
        [ScramUpsertion(user, KpScramMechanism.SCRAM_SHA_512, "secret", iterations=1)]
    )
    assert "iterations" in str(refused[user])


def test_confluent_kafka_alters_scram_credentials(admin):
    # librdkafka writes one more tag buffer after the body, which Kafka (and the door) ignore
    user = unique("bob")
    upsert = UserScramCredentialUpsertion(
        user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"secret"
    )
    futures = admin.alter_user_scram_credentials([upsert], request_timeout=10)
    assert error_of(futures[user]) is None


def test_acl_calls_without_an_authorizer_answer_security_disabled(admin):
    binding = AclBinding(
        ResourceType.TOPIC,
        "t",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    futures = admin.create_acls([binding])
    assert failure(futures[binding]).code() == KafkaError.SECURITY_DISABLED


# -- confluent-kafka: ACLs on a cluster with an authorizer --------------------------------------


@pytest.fixture(scope="module")
def acl_bootstrap(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[str]:
    """One node with Kafka's ACL authorizer; a resource without ACLs is open to everyone."""
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "kafka-acl-cluster",
        nodes=1,
        overrides={
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "allow.everyone.if.no.acl.found": "true",
        },
    ) as cluster:
        # the node answers Metadata without brokers until the controller's first update
        # reaches it; librdkafka's admin calls would wait for their next metadata refresh
        probe = admin_client(cluster.kafka_bootstrap_servers)

        def brokers() -> bool:
            # librdkafka raises _PARTIAL for an answer with neither brokers nor topics
            try:
                return bool(probe.list_topics(timeout=10).brokers)
            except KafkaException:
                return False

        wait_for(brokers, "the node in its metadata")
        yield cluster.kafka_bootstrap_servers


def _binding(name: str, pattern: ResourcePatternType, operation: AclOperation) -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC, name, pattern, "User:alice", "*", operation, AclPermissionType.ALLOW
    )


def _filter(name: str | None, pattern: ResourcePatternType) -> AclBindingFilter:
    return AclBindingFilter(
        ResourceType.TOPIC,
        name,  # type: ignore[arg-type]
        pattern,
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        AclOperation.ANY,
        AclPermissionType.ANY,
    )


def test_acls_are_created_described_by_filters_and_deleted(acl_bootstrap):
    admin = admin_client(acl_bootstrap)
    prefix = unique("orders")
    literal = _binding(f"{prefix}-eu", ResourcePatternType.LITERAL, AclOperation.READ)
    prefixed = _binding(f"{prefix}-", ResourcePatternType.PREFIXED, AclOperation.WRITE)
    other = _binding(unique("payments"), ResourcePatternType.LITERAL, AclOperation.READ)
    created = admin.create_acls([literal, prefixed, other])
    assert [error_of(f) for f in created.values()] == [None, None, None]

    def described(flt: AclBindingFilter) -> set[AclBinding]:
        return set(admin.describe_acls(flt).result(timeout=60))

    assert described(_filter(None, ResourcePatternType.ANY)) >= {literal, prefixed, other}
    # MATCH: the literal name and the prefixed patterns covering it
    assert described(_filter(f"{prefix}-eu", ResourcePatternType.MATCH)) == {literal, prefixed}
    assert described(_filter(f"{prefix}-", ResourcePatternType.PREFIXED)) == {prefixed}
    assert described(_filter(f"{prefix}-eu", ResourcePatternType.LITERAL)) == {literal}

    deleted = admin.delete_acls([_filter(f"{prefix}-eu", ResourcePatternType.MATCH)])
    assert set(next(iter(deleted.values())).result(timeout=60)) == {literal, prefixed}
    assert described(_filter(None, ResourcePatternType.ANY)) & {literal, prefixed} == set()
    assert other in described(_filter(None, ResourcePatternType.ANY))


def test_an_invalid_acl_is_refused_with_invalid_request(acl_bootstrap):
    admin = admin_client(acl_bootstrap)
    # a cluster ACL must name kafka-cluster
    wrong = AclBinding(
        ResourceType.BROKER,
        "not-the-cluster",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.ALTER,
        AclPermissionType.ALLOW,
    )
    futures = admin.create_acls([wrong])
    error = failure(futures[wrong])
    assert error.code() == KafkaError.INVALID_REQUEST
    assert "kafka-cluster" in error.str()


def test_the_door_checks_acls_for_the_connections_principal(acl_bootstrap):
    """A DENY for the PLAINTEXT listener's principal (User:ANONYMOUS) on one topic: deleting it
    and describing its configs are refused per resource, the rest of the request is served."""
    admin = admin_client(acl_bootstrap)
    locked, free = unique("locked"), unique("free")
    futures = admin.create_topics([NewTopic(locked, 1, 1), NewTopic(free, 1, 1)])
    assert [error_of(f) for f in futures.values()] == [None, None]
    deny = AclBinding(
        ResourceType.TOPIC,
        locked,
        ResourcePatternType.LITERAL,
        "User:ANONYMOUS",
        "*",
        AclOperation.DELETE,
        AclPermissionType.DENY,
    )
    assert error_of(admin.create_acls([deny])[deny]) is None
    # an ACL on the topic: allow.everyone.if.no.acl.found no longer applies to it
    configs = admin.describe_configs(
        [ConfigResource("TOPIC", locked), ConfigResource("TOPIC", free)]
    )
    locked_configs, free_configs = configs.values()
    assert failure(locked_configs).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert free_configs.result(timeout=60)["retention.ms"].value
    deleted = admin.delete_topics([locked, free], operation_timeout=30)
    assert failure(deleted[locked]).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert error_of(deleted[free]) is None
    # hidden from the principal's Metadata while the ACL names it (no DESCRIBE), and still there
    assert locked not in admin.list_topics(timeout=10).topics
    admin.delete_acls([_filter(locked, ResourcePatternType.LITERAL)])[
        _filter(locked, ResourcePatternType.LITERAL)
    ].result(timeout=60)
    wait_for(lambda: locked in admin.list_topics(timeout=10).topics, f"{locked} kept")


def test_group_configs_need_alter_configs_on_the_group(acl_bootstrap):
    """Kafka 4's rule for a GROUP config resource: ALTER_CONFIGS / DESCRIBE_CONFIGS on the
    group itself; refused, GROUP_AUTHORIZATION_FAILED for that resource alone."""
    admin = admin_client(acl_bootstrap)
    locked, free = unique("glocked"), unique("gfree")
    deny = AclBinding(
        ResourceType.GROUP,
        locked,
        ResourcePatternType.LITERAL,
        "User:ANONYMOUS",
        "*",
        AclOperation.ALTER_CONFIGS,
        AclPermissionType.DENY,
    )
    assert error_of(admin.create_acls([deny])[deny]) is None
    try:
        resources = [ConfigResource(ResourceType.GROUP, g) for g in (locked, free)]
        for resource in resources:
            resource.add_incremental_config(
                ConfigEntry(
                    "consumer.session.timeout.ms",
                    "50000",
                    incremental_operation=AlterConfigOpType.SET,
                )
            )
        altered = list(admin.incremental_alter_configs(resources).values())
        assert failure(altered[0]).code() == KafkaError.GROUP_AUTHORIZATION_FAILED
        assert error_of(altered[1]) is None
        # the other group's configs were written (no ACL names it: everyone may)
        (described,) = admin.describe_configs([ConfigResource(ResourceType.GROUP, free)]).values()
        assert described.result(timeout=60)["consumer.session.timeout.ms"].value == "50000"
    finally:
        group_acls = AclBindingFilter(
            ResourceType.GROUP,
            locked,
            ResourcePatternType.LITERAL,
            None,  # type: ignore[arg-type]
            None,  # type: ignore[arg-type]
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        admin.delete_acls([group_acls])[group_acls].result(timeout=60)


# -- kafka-python 3: reassignments, elections, log dirs, producers ------------------------------


def _replicas(admin: AdminClient, topic: str, partition: int) -> tuple[int, list[int]]:
    """The partition's leader and replicas (``-1, []`` while the answering node does not
    know the partition)."""
    md = admin.list_topics(topic, timeout=10).topics[topic].partitions.get(partition)
    return (-1, []) if md is None else (md.leader, list(md.replicas))


def test_reassignment_then_preferred_election_moves_the_leader(admin, kp_admin, bootstrap):
    name = unique("move")
    create_topic(bootstrap, name, partitions=1)

    def known() -> tuple[int, list[int]] | None:
        found = _replicas(admin, name, 0)
        return found if found[1] else None

    leader, replicas = wait_for(known, "the partition in the metadata")
    assert leader == replicas[0]
    reordered = [*replicas[1:], replicas[0]]
    tp = KpTopicPartition(name, 0)
    kp_admin.alter_partition_reassignments({tp: reordered}, timeout_ms=30_000)
    wait_for(
        lambda: (
            _replicas(admin, name, 0)[1] == reordered
            and not kp_admin.list_partition_reassignments({name: [0]})
        ),
        "the reassignment done",
    )
    result = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(name, 0)]).result(
        timeout=60
    )
    assert result[TopicPartition(name, 0)] is None
    wait_for(lambda: _replicas(admin, name, 0)[0] == reordered[0], "the preferred leader")


def test_cancelling_no_reassignment_answers_no_reassignment_in_progress(kp_admin, bootstrap):
    name = unique("cancel")
    create_topic(bootstrap, name, partitions=1)
    result = kp_admin.alter_partition_reassignments({KpTopicPartition(name, 0): None})
    assert result == {KpTopicPartition(name, 0): kafka_errors.NoReassignmentInProgressError}
    assert kp_admin.list_partition_reassignments() == {}


def test_describe_log_dirs_shows_every_replicas_size(kp_admin, bootstrap):
    name = unique("dirs")
    create_topic(bootstrap, name, partitions=1)
    produce(bootstrap, name, [{"value": b"x" * 100, "partition": 0}] * 10, acks="all")
    answers = kp_admin.describe_log_dirs({name: [0]})
    sizes = {}
    for broker in answers:
        for log_dir in broker["log_dirs"]:
            assert log_dir["error_code"] == 0
            for topic in log_dir["topics"]:
                assert topic["name"] == name  # only the partition asked for
                for p in topic["partitions"]:
                    sizes[broker["broker"]] = p["partition_size"]
    assert len(sizes) == 3, answers
    # ten records of 100 bytes in batches: at least the values, and the same on each replica
    assert min(sizes.values()) > 1000
    wait_for(
        lambda: (
            len(
                {
                    p["partition_size"]
                    for broker in kp_admin.describe_log_dirs({name: [0]})
                    for d in broker["log_dirs"]
                    for t in d["topics"]
                    for p in t["partitions"]
                }
            )
            == 1
        ),
        "the replicas caught up",
    )


def test_describe_producers_after_an_idempotent_produce(admin, kp_admin, bootstrap):
    name = unique("pids")
    create_topic(bootstrap, name, partitions=1)
    produce(bootstrap, name, [{"value": b"v", "partition": 0}] * 3, **{"enable.idempotence": True})
    states = kp_admin.describe_producers([KpTopicPartition(name, 0)])
    (producer,) = states[KpTopicPartition(name, 0)].active_producers
    assert producer.producer_id >= 0
    assert producer.last_sequence == 2
    assert producer.coordinator_epoch == -1


def test_describe_producers_on_a_node_without_the_partition(admin, kp_admin, kafka_cluster):
    name = unique("one-replica")
    first, other = (n.node_id for n in kafka_cluster.nodes[:2])
    futures = admin.create_topics([NewTopic(name, 1, replica_assignment=[[first]])])
    assert error_of(futures[name]) is None

    def refused_as_not_hosted() -> bool:
        try:
            kp_admin.describe_producers([KpTopicPartition(name, 0)], broker_id=other)
        except kafka_errors.UnknownTopicOrPartitionError:
            return False  # that node has not learnt of the topic yet
        except kafka_errors.NotLeaderForPartitionError:
            return True
        raise AssertionError(f"node {other} described a partition it has no replica of")

    wait_for(refused_as_not_hosted, "NOT_LEADER_OR_FOLLOWER from a node without a replica")


# -- kafka-python 3 and aiokafka: topics and configs ---------------------------------------------


def test_kafka_python_creates_describes_and_deletes_topics(kp_admin, admin):
    name = unique("kp")
    kp_admin.create_topics(
        {name: {"num_partitions": 2, "replication_factor": 3, "configs": {"retention.ms": "70000"}}}
    )
    wait_for(lambda: name in admin.list_topics(timeout=10).topics, "the topic")
    described = kp_admin.describe_configs([KpConfigResource(KpConfigResourceType.TOPIC, name)])
    retention = described["topic"][name]["retention.ms"]
    assert retention["value"] == "70000"
    assert retention["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    kp_admin.delete_topics([name])
    wait_for(lambda: name not in admin.list_topics(timeout=10).topics, "the topic gone")


def test_aiokafka_creates_describes_and_deletes_topics(bootstrap, admin):
    name = unique("aio")

    async def run() -> Any:
        client = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await client.start()
        try:
            await client.create_topics(
                [AioNewTopic(name, 2, 3, topic_configs={"retention.ms": "80000"})]
            )
            described = await client.describe_configs(
                [AioConfigResource(AioConfigResourceType.TOPIC, name)]
            )
            await client.delete_topics([name])
            return described
        finally:
            await client.close()

    (response,) = asyncio.run(run())
    (resource,) = response.resources
    assert resource[0] == 0  # error_code
    entries = {e[0]: (e[1], e[3]) for e in resource[4]}  # name: (value, config source)
    assert entries["retention.ms"] == ("80000", 1)  # DYNAMIC_TOPIC_CONFIG
    assert entries["segment.bytes"][1] == 5  # DEFAULT_CONFIG
    wait_for(lambda: name not in admin.list_topics(timeout=10).topics, "the topic gone")


# -- kafkajs ------------------------------------------------------------------------------------


def test_kafkajs_admin_creates_grows_describes_and_deletes(bootstrap):
    if not (JS_CLIENTS / "node_modules" / "kafkajs").is_dir():
        raise RuntimeError("kafkajs is not installed: run bash scripts/setup.sh")
    name = unique("js-admin")
    result = subprocess.run(
        [require("node"), str(JS_CLIENTS / "admin.js"), bootstrap, name],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    out = json.loads(result.stdout)
    print(out)
    assert out["created"] is True
    assert out["partitions"] == 3
    assert out["retention"] == "90000"
    assert out["deleted"] is True
