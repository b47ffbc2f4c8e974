"""The admin handlers' translation between kio entities and the admin room's values, over a
recording stand-in for the room (its decisions and answers are the room's own tests' business):
ACL creations and filters, config resources of unknown types, SCRAM mechanism ids, version
differences of the answers (DescribeLogDirs v1 has no top-level error; ElectLeaders v0 no
election type), grouping per topic, Kafka's error response repeated on every partition."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, cast

from kio.schema.errors import ErrorCode

from node.admin.authorization import AdminAuthorization
from node.admin.requests import (
    AlterPartitionReassignmentsResult,
    ConfigResource,
    ConfigResourceType,
    CreatableTopicResult,
    DescribeConfigsResult,
    DescribeLogDirsResult,
    ElectionType,
    ElectLeadersResult,
    InvalidAcl,
    LogDirDescription,
    PartitionResult,
)
from node.kafka_door.build import make, nested
from node.kafka_door.context import Connection, RequestContext
from node.kafka_door.frames import request_class
from node.kafka_door.handlers.acls import _binding, _filter
from node.kafka_door.handlers.cluster import handle_describe_log_dirs
from node.kafka_door.handlers.configs import (
    handle_describe_configs,
    handle_incremental_alter_configs,
)
from node.kafka_door.handlers.partitions import (
    handle_alter_partition_reassignments,
    handle_elect_leaders,
)
from node.kafka_door.handlers.topics import handle_create_topics
from node.kafka_door.services import DoorServices
from odradek.acl import AclBinding, AclBindingFilter, PatternType, ResourceType


@dataclass
class Room:
    """Answers what the test sets and records each call's arguments."""

    answers: dict[str, Any] = field(default_factory=dict)
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = field(default_factory=list)
    decisions: AdminAuthorization = field(default_factory=lambda: AdminAuthorization(None))

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args, kwargs))
            return self.answers[name]

        return call


def services(room: Room) -> DoorServices:
    return DoorServices(
        node_id=0,
        replicas=cast(Any, None),
        metadata=cast(Any, None),
        auth=None,
        producer_ids=None,
        groups=None,
        admin=cast(Any, room),
    )


def context(key: int, version: int) -> RequestContext:
    return RequestContext(Connection("KAFKA", "PLAINTEXT", "127.0.0.9", 5000), key, version, 7, "t")


def test_an_acl_creation_becomes_a_binding_or_a_sentence():
    cls = nested(request_class(30, 2), "AclCreation")
    good = make(
        cls,
        resource_type=2,
        resource_name="orders",
        resource_pattern_type=4,
        principal="User:alice",
        host="*",
        operation=3,
        permission_type=3,
    )
    binding = _binding(good)
    assert isinstance(binding, AclBinding)
    assert binding.pattern.pattern_type is PatternType.PREFIXED
    bad = dataclasses.replace(good, principal="alice")
    refused = _binding(bad)
    assert isinstance(refused, InvalidAcl)
    assert "principal" in refused.message


def test_a_filter_with_match_and_null_fields_or_an_unknown_value():
    cls = request_class(29, 1)
    matching = make(
        cls,
        resource_type_filter=2,
        resource_name_filter="orders-eu",
        pattern_type_filter=2,
        principal_filter=None,
        host_filter=None,
        operation=1,
        permission_type=1,
    )
    parsed = _filter(matching)
    assert isinstance(parsed, AclBindingFilter)
    assert parsed.pattern_type is PatternType.MATCH and parsed.principal is None
    assert parsed.resource_type is ResourceType.TOPIC
    unknown = make(
        cls,
        resource_type_filter=0,
        resource_name_filter=None,
        pattern_type_filter=1,
        principal_filter=None,
        host_filter=None,
        operation=1,
        permission_type=1,
    )
    assert isinstance(_filter(unknown), InvalidAcl)


def test_describe_configs_answers_an_unknown_resource_type_with_invalid_request():
    room = Room(answers={"describe_configs": []})
    cls = request_class(32, 1)
    resource_cls = nested(cls, "DescribeConfigsResource")
    request = make(
        cls,
        resources=(
            make(resource_cls, resource_type=16, resource_name="x", configuration_keys=None),
        ),
        include_synonyms=False,
    )
    response = handle_describe_configs(services(room), context(32, 1), request)
    (result,) = response.results
    assert result.error_code is ErrorCode.invalid_request
    assert result.error_message == "Unsupported resource type: 16"
    assert result.resource_type == 16 and result.resource_name == "x"
    assert room.calls == []  # nothing valid reached the room


def test_describe_configs_passes_null_keys_and_synonyms_through():
    topic = ConfigResource(ConfigResourceType.TOPIC, "t")
    room = Room(
        answers={"describe_configs": [DescribeConfigsResult(topic, 3, "Topic 't' does not exist.")]}
    )
    cls = request_class(32, 2)
    resource_cls = nested(cls, "DescribeConfigsResource")
    request = make(
        cls,
        resources=(
            make(resource_cls, resource_type=2, resource_name="t", configuration_keys=None),
        ),
        include_synonyms=True,
    )
    response = handle_describe_configs(services(room), context(32, 2), request)
    ((name, args, kwargs),) = room.calls
    assert name == "describe_configs"
    assert args[0] == "User:ANONYMOUS" and args[1] == "127.0.0.9"
    assert args[2][0].configuration_keys is None
    assert kwargs == {"include_synonyms": True}
    assert response.results[0].error_code is ErrorCode.unknown_topic_or_partition


def test_describe_log_dirs_v1_has_no_top_level_error_and_refused_answers_no_dir():
    room = Room(answers={"describe_log_dirs": DescribeLogDirsResult(error_code=31)})
    request = make(request_class(35, 1), topics=None)
    response = handle_describe_log_dirs(services(room), context(35, 1), request)
    assert response.results == ()
    assert not hasattr(response, "error_code")
    assert room.calls[0][1][2] is None  # null topics: every partition
    room.answers["describe_log_dirs"] = DescribeLogDirsResult(results=(LogDirDescription("/data"),))
    response = handle_describe_log_dirs(services(room), context(35, 2), request)
    assert [d.log_dir for d in response.results] == ["/data"]


def test_elect_leaders_v0_elects_the_preferred_leader_and_groups_by_topic():
    room = Room(
        answers={
            "elect_leaders": ElectLeadersResult(
                partitions=(
                    PartitionResult("a", 0),
                    PartitionResult("b", 1, 84, "not needed"),
                    PartitionResult("a", 2),
                )
            )
        }
    )
    cls = request_class(43, 0)
    topic_cls = nested(cls, "TopicPartitions")
    request = make(
        cls,
        topic_partitions=(
            make(topic_cls, topic="a", partitions=(0, 2)),
            make(topic_cls, topic="b", partitions=(1,)),
        ),
        timeout=1000,
    )
    response = handle_elect_leaders(services(room), context(43, 0), request)
    (_, args, kwargs) = room.calls[0]
    assert args[2] is ElectionType.PREFERRED
    assert args[3] == [("a", 0), ("a", 2), ("b", 1)]
    assert kwargs == {"timeout_ms": 1000}
    assert [
        (t.topic, [p.partition_id for p in t.partition_result])
        for t in response.replica_election_results
    ] == [("a", [0, 2]), ("b", [1])]


def test_elect_leaders_of_every_partition_leaves_out_the_elections_not_needed():
    room = Room(
        answers={
            "elect_leaders": ElectLeadersResult(
                partitions=(PartitionResult("a", 0), PartitionResult("b", 1, 84, "not needed"))
            )
        }
    )
    request = make(request_class(43, 1), election_type=0, topic_partitions=None, timeout=1000)
    response = handle_elect_leaders(services(room), context(43, 1), request)
    assert room.calls[0][1][3] is None
    assert [t.topic for t in response.replica_election_results] == ["a"]


def test_a_refused_reassignment_is_encoded_with_its_partitions():
    refusal = "User:ANONYMOUS may not Alter on the cluster"
    room = Room(
        answers={
            "alter_partition_reassignments": AlterPartitionReassignmentsResult(
                31,
                refusal,
                (PartitionResult("t", 0, 31, refusal), PartitionResult("t", 1, 31, refusal)),
            )
        }
    )
    cls = request_class(45, 0)
    topic_cls = nested(cls, "ReassignableTopic")
    partition_cls = nested(cls, "ReassignablePartition")
    request = make(
        cls,
        timeout=1000,
        topics=(
            make(
                topic_cls,
                name="t",
                partitions=(
                    make(partition_cls, partition_index=0, replicas=(1, 2)),
                    make(partition_cls, partition_index=1, replicas=None),
                ),
            ),
        ),
    )
    response = handle_alter_partition_reassignments(services(room), context(45, 0), request)
    wanted = room.calls[0][1][2]
    assert [(p.partition, p.replicas) for p in wanted] == [(0, (1, 2)), (1, None)]
    assert response.error_code is ErrorCode.cluster_authorization_failed
    (topic,) = response.responses
    assert [(p.partition_index, p.error_code) for p in topic.partitions] == [
        (0, ErrorCode.cluster_authorization_failed),
        (1, ErrorCode.cluster_authorization_failed),
    ]


def test_a_topic_config_without_a_value_is_invalid_config_and_the_rest_is_created():
    room = Room(answers={"create_topics": [CreatableTopicResult("good")]})
    cls = request_class(19, 4)
    topic_cls = nested(cls, "CreatableTopic")
    config_cls = nested(cls, "CreatableTopicConfig")

    def topic(name: str, value: str | None) -> Any:
        return make(
            topic_cls,
            name=name,
            num_partitions=-1,
            replication_factor=-1,
            assignments=(),
            configs=(make(config_cls, name="retention.ms", value=value),),
        )

    request = make(
        cls, topics=(topic("bad", None), topic("good", "1000")), timeout=5000, validate_only=False
    )
    response = handle_create_topics(services(room), context(19, 4), request)
    ((_, args, kwargs),) = room.calls
    assert [(t.name, dict(t.configs), t.num_partitions) for t in args[2]] == [
        ("good", {"retention.ms": "1000"}, -1)
    ]
    assert kwargs == {"validate_only": False, "timeout_ms": 5000}
    assert [(t.name, t.error_code, t.error_message) for t in response.topics] == [
        (
            "bad",
            ErrorCode.invalid_config,
            "Null value not supported for topic configs: retention.ms",
        ),
        ("good", ErrorCode.none, None),
    ]


def test_an_unknown_incremental_operation_is_invalid_request_for_its_resource():
    room = Room(answers={"incremental_alter_configs": []})
    cls = request_class(44, 1)
    resource_cls = nested(cls, "AlterConfigsResource")
    config_cls = nested(cls, "AlterableConfig")
    request = make(
        cls,
        resources=(
            make(
                resource_cls,
                resource_type=2,
                resource_name="t",
                configs=(make(config_cls, name="retention.ms", config_operation=9, value="1"),),
            ),
        ),
        validate_only=False,
    )
    response = handle_incremental_alter_configs(services(room), context(44, 1), request)
    (result,) = response.responses
    assert result.error_code is ErrorCode.invalid_request
    assert result.error_message == "Unknown alter config operation 9"
    assert room.calls == []
