"""Kafka's ACL checks in front of the admin calls (node.admin.authorization), decided by
odradek.acl's real decision function over a list of ACLs; the admin manager behind is a
recording stand-in (these tests are about who may call what)."""

from dataclasses import dataclass, field
from typing import Any

from node.admin.authorization import AdminAuthorization, AuthorizedAdmin
from node.admin.requests import (
    AclCreationResult,
    AlterConfigOp,
    AlterConfigOpType,
    AlterConfigsResult,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    CreatableTopicResult,
    DescribeConfigsResource,
    DescribeConfigsResult,
    DescribedConfig,
    DescribeLogDirsResult,
    ElectionType,
    ElectLeadersResult,
    IncrementalAlterConfigsResource,
    NewTopicSpec,
    PartitionProducers,
    PartitionResult,
    ReassignablePartition,
    TopicResult,
)
from odradek.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    authorize,
    matching_acls,
)

ALICE, HOST = "User:alice", "10.0.0.1"
TOPIC, CLUSTER = ResourceType.TOPIC, ResourceType.CLUSTER
Op = AclOperation


def allow(resource_type, name, operation, pattern=PatternType.LITERAL, principal=ALICE):
    return AclBinding(
        ResourcePattern(resource_type, name, pattern),
        AccessControlEntry(principal, "*", operation, AclPermissionType.ALLOW),
    )


@dataclass
class Acls:
    """The authorizer's decision over fixed ACLs (AclAuthorizer without ZooKeeper)."""

    bindings: list[AclBinding]

    def authorize(self, principal, host, operation, resource_type, name):
        acls = matching_acls(self.bindings, resource_type, name)
        return authorize(acls, principal, host, operation)


@dataclass
class RecordingAdmin:
    """Answers every call with success and records what reached it."""

    calls: list[tuple[str, Any]] = field(default_factory=list)

    def create_topics(self, topics, *, validate_only, timeout_ms):
        self.calls.append(("create_topics", [t.name for t in topics]))
        config = DescribedConfig("retention.ms", "1", ConfigSource.DEFAULT_CONFIG)
        return [
            CreatableTopicResult(
                t.name, topic_id="id", num_partitions=1, replication_factor=1, configs=(config,)
            )
            for t in topics
        ]

    def delete_topics(self, names, *, timeout_ms):
        self.calls.append(("delete_topics", list(names)))
        return [TopicResult(n) for n in dict.fromkeys(names)]

    def describe_configs(self, resources, *, include_synonyms):
        self.calls.append(("describe_configs", [r.resource for r in resources]))
        return [DescribeConfigsResult(r.resource) for r in resources]

    def incremental_alter_configs(self, resources, *, validate_only):
        self.calls.append(("incremental_alter_configs", [r.resource for r in resources]))
        return [AlterConfigsResult(r.resource) for r in resources]

    def elect_leaders(self, election_type, partitions, *, timeout_ms):
        self.calls.append(("elect_leaders", partitions))
        return ElectLeadersResult(partitions=tuple(PartitionResult(t, p) for t, p in partitions))

    def create_acls(self, creations):
        self.calls.append(("create_acls", list(creations)))
        return [AclCreationResult()] * len(creations)

    def describe_log_dirs(self, partitions):
        self.calls.append(("describe_log_dirs", partitions))
        return DescribeLogDirsResult()

    def describe_producers(self, partitions):
        self.calls.append(("describe_producers", list(partitions)))
        return [PartitionProducers(t, p) for t, p in partitions]

    def auto_create_topics(self, names):
        self.calls.append(("auto_create_topics", list(names)))
        return dict.fromkeys(names, 5)


def authorized(*bindings):
    admin = RecordingAdmin()
    return AuthorizedAdmin(admin, Acls(list(bindings))), admin  # type: ignore[arg-type]


def codes(results):
    return [(getattr(r, "name", None) or r.resource.resource_name, r.error_code) for r in results]


def test_create_topics_needs_create_on_the_cluster_or_the_topic():
    admin, inner = authorized(allow(TOPIC, "orders", Op.CREATE))
    topics = [NewTopicSpec("orders"), NewTopicSpec("payments")]
    results = admin.create_topics(ALICE, HOST, topics)
    assert codes(results) == [("orders", 0), ("payments", 29)]
    assert inner.calls == [("create_topics", ["orders"])]  # the refused one never got there
    assert results[1].error_message == "User:alice may not Create topic 'payments'"
    # CREATE on the cluster covers every topic
    admin, inner = authorized(allow(CLUSTER, "kafka-cluster", Op.CREATE))
    assert codes(admin.create_topics(ALICE, HOST, topics)) == [("orders", 0), ("payments", 0)]
    # another principal's ACL does not count
    admin, inner = authorized(allow(CLUSTER, "kafka-cluster", Op.CREATE, principal="User:bob"))
    assert codes(admin.create_topics(ALICE, HOST, topics)) == [("orders", 29), ("payments", 29)]
    assert inner.calls == []


def test_create_topics_hides_configs_without_describe_configs():
    admin, _ = authorized(allow(TOPIC, "*", Op.CREATE), allow(TOPIC, "see", Op.DESCRIBE_CONFIGS))
    blind, see = admin.create_topics(ALICE, HOST, [NewTopicSpec("blind"), NewTopicSpec("see")])
    assert (blind.error_code, blind.topic_config_error_code) == (0, 29)
    assert (blind.configs, blind.num_partitions, blind.replication_factor) == ((), -1, -1)
    assert blind.topic_id == "id"
    assert (see.topic_config_error_code, len(see.configs), see.num_partitions) == (0, 1, 1)


def test_delete_topics_needs_delete_on_each_topic_prefixes_included():
    admin, inner = authorized(allow(TOPIC, "logs-", Op.DELETE, PatternType.PREFIXED))
    results = admin.delete_topics(ALICE, HOST, ["logs-a", "orders", "logs-b"])
    assert codes(results) == [("logs-a", 0), ("orders", 29), ("logs-b", 0)]
    assert inner.calls == [("delete_topics", ["logs-a", "logs-b"])]


def test_configs_need_describe_or_alter_configs_on_the_topic_or_the_cluster_for_brokers():
    admin, inner = authorized(
        allow(TOPIC, "t", Op.DESCRIBE_CONFIGS), allow(TOPIC, "t", Op.ALTER_CONFIGS)
    )
    topic = ConfigResource(ConfigResourceType.TOPIC, "t")
    other = ConfigResource(ConfigResourceType.TOPIC, "u")
    broker = ConfigResource(ConfigResourceType.BROKER, "0")
    described = admin.describe_configs(
        ALICE, HOST, [DescribeConfigsResource(r) for r in (other, topic, broker)]
    )
    assert codes(described) == [("u", 29), ("t", 0), ("0", 31)]
    assert inner.calls == [("describe_configs", [topic])]
    op = (AlterConfigOp("retention.ms", AlterConfigOpType.SET, "1"),)
    altered = admin.incremental_alter_configs(
        ALICE, HOST, [IncrementalAlterConfigsResource(r, op) for r in (broker, topic, other)]
    )
    assert codes(altered) == [("0", 31), ("t", 0), ("u", 29)]
    # ALTER_CONFIGS implies DESCRIBE_CONFIGS (Kafka's implied operations)
    admin, _ = authorized(allow(CLUSTER, "kafka-cluster", Op.ALTER_CONFIGS))
    assert codes(admin.describe_configs(ALICE, HOST, [DescribeConfigsResource(broker)])) == [
        ("0", 0)
    ]


def test_group_configs_need_describe_or_alter_configs_on_the_group():
    # Kafka 4's rule for a GROUP config resource: the operation on the group itself, whatever
    # the cluster allows; a refusal is GROUP_AUTHORIZATION_FAILED (30)
    admin, inner = authorized(
        allow(ResourceType.GROUP, "g", Op.ALTER_CONFIGS),
        allow(CLUSTER, "kafka-cluster", Op.ALTER_CONFIGS),
    )
    mine = ConfigResource(ConfigResourceType.GROUP, "g")
    other = ConfigResource(ConfigResourceType.GROUP, "h")
    op = (AlterConfigOp("consumer.session.timeout.ms", AlterConfigOpType.SET, "50000"),)
    altered = admin.incremental_alter_configs(
        ALICE, HOST, [IncrementalAlterConfigsResource(r, op) for r in (mine, other)]
    )
    assert codes(altered) == [("g", 0), ("h", 30)]
    assert altered[1].error_message == "User:alice may not AlterConfigs group 'h'"
    described = admin.describe_configs(
        ALICE, HOST, [DescribeConfigsResource(r) for r in (other, mine)]
    )
    assert codes(described) == [("h", 30), ("g", 0)]  # ALTER_CONFIGS implies DESCRIBE_CONFIGS
    assert inner.calls[-1] == ("describe_configs", [mine])


def test_elections_need_alter_on_the_cluster():
    admin, inner = authorized(allow(CLUSTER, "kafka-cluster", Op.DESCRIBE))
    refused = admin.elect_leaders(ALICE, HOST, ElectionType.PREFERRED, [("t", 0), ("t", 1)])
    assert refused.error_code == 31
    assert [(p.partition, p.error_code) for p in refused.partitions] == [(0, 31), (1, 31)]
    assert inner.calls == []
    admin, inner = authorized(allow(CLUSTER, "kafka-cluster", Op.ALTER))
    assert admin.elect_leaders(ALICE, HOST, ElectionType.PREFERRED, [("t", 0)]).error_code == 0
    assert inner.calls == [("elect_leaders", [("t", 0)])]


def test_a_refused_reassignment_repeats_the_error_on_every_partition():
    """Kafka's AlterPartitionReassignmentsRequest.getErrorResponse, through either door."""
    admin, inner = authorized(allow(CLUSTER, "kafka-cluster", Op.DESCRIBE))
    wanted = [ReassignablePartition("t", 0, (1, 2)), ReassignablePartition("t", 1, None)]
    refused = admin.alter_partition_reassignments(ALICE, HOST, wanted)
    assert refused.error_code == 31
    assert [(p.partition, p.error_code) for p in refused.partitions] == [(0, 31), (1, 31)]
    assert inner.calls == []


def test_acl_calls_need_alter_or_describe_on_the_cluster():
    binding = allow(TOPIC, "t", Op.READ)
    admin, inner = authorized(allow(CLUSTER, "kafka-cluster", Op.DESCRIBE))
    [refused] = admin.create_acls(ALICE, HOST, [binding])
    assert (refused.error_code, refused.error_message) == (
        31,
        "User:alice may not Alter on the cluster",
    )
    assert inner.calls == []


def test_log_dirs_need_describe_on_the_cluster_and_producers_read_on_the_topic():
    admin, inner = authorized(allow(TOPIC, "t", Op.READ))
    assert admin.describe_log_dirs(ALICE, HOST).error_code == 31
    results = admin.describe_producers(ALICE, HOST, [("t", 0), ("u", 0), ("t", 1)])
    assert [(r.topic, r.partition_index, r.error_code) for r in results] == [
        ("t", 0, 0),
        ("u", 0, 29),
        ("t", 1, 0),
    ]
    assert inner.calls == [("describe_producers", [("t", 0), ("t", 1)])]


def test_auto_creation_needs_create_and_refuses_the_others_with_29():
    admin, inner = authorized(allow(TOPIC, "auto-", Op.CREATE, PatternType.PREFIXED))
    assert admin.auto_create_topics(ALICE, HOST, ["auto-x", "other", "auto-x"]) == {
        "auto-x": 5,
        "other": 29,
    }
    assert inner.calls == [("auto_create_topics", ["auto-x"])]


def test_without_an_authorizer_everything_is_allowed():
    inner = RecordingAdmin()
    admin = AuthorizedAdmin(inner, None)  # type: ignore[arg-type]
    assert codes(admin.delete_topics("User:ANONYMOUS", "", ["a"])) == [("a", 0)]
    assert admin.describe_log_dirs("User:ANONYMOUS", "").error_code == 0
    assert AdminAuthorization(None).cluster("User:x", "", Op.ALTER)


def test_a_topic_named_twice_reaches_the_manager_whatever_the_acls():
    admin, inner = authorized()
    admin.create_topics(ALICE, HOST, [NewTopicSpec("t"), NewTopicSpec("t"), NewTopicSpec("u")])
    # the manager answers INVALID_REQUEST for "t" (as Kafka, before authorization); "u" is refused
    assert inner.calls == [("create_topics", ["t", "t"])]
