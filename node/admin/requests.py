"""The admin room's requests and answers: plain values in Kafka's field names.

Each answer carries what Kafka's response of the same API carries, per resource: an
``error_code`` (Kafka's number, 0 for none) and an ``error_message`` (``""`` for none), so
either door can encode it: CreateTopics (19), DeleteTopics (20), DescribeConfigs (32),
AlterConfigs (33), CreatePartitions (37), IncrementalAlterConfigs (44), ElectLeaders (43),
AlterPartitionReassignments (45), ListPartitionReassignments (46), DescribeAcls (29),
CreateAcls (30), DeleteAcls (31), DescribeLogDirs (35), DescribeUserScramCredentials (50),
AlterUserScramCredentials (51), DescribeCluster (60), DescribeProducers (61).

All values are immutable (frozen dataclasses; mappings are never mutated after construction).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from odradek.acl import AclBinding
from odradek.errors import ElectionNotNeededError

__all__ = [
    "AlterConfigOp",
    "AlterConfigOpType",
    "AlterConfigsResource",
    "AlterConfigsResult",
    "AlterPartitionReassignmentsResult",
    "AlterUserScramCredentialsResult",
    "ClusterBroker",
    "ConfigResource",
    "ConfigResourceType",
    "ConfigSource",
    "ConfigSynonym",
    "ConfigType",
    "CreatableTopicResult",
    "CreatePartitionsTopic",
    "DeleteAclsFilterResult",
    "DescribeAclsResult",
    "DescribeClusterResult",
    "DescribeConfigsResource",
    "DescribeConfigsResult",
    "DescribeLogDirsResult",
    "DescribeUserScramCredentialsResponse",
    "DescribeUserScramCredentialsResult",
    "DescribedConfig",
    "ElectLeadersResult",
    "ElectionType",
    "IncrementalAlterConfigsResource",
    "InvalidAcl",
    "ListPartitionReassignmentsResult",
    "LogDirDescription",
    "LogDirPartition",
    "LogDirTopic",
    "NewTopicSpec",
    "OngoingReassignment",
    "PartitionProducers",
    "PartitionResult",
    "ProducerState",
    "ReassignablePartition",
    "ScramCredentialDeletion",
    "ScramCredentialInfo",
    "ScramCredentialUpsertion",
    "AclCreationResult",
    "TopicResult",
]


# -- topics -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NewTopicSpec:
    """One topic of CreateTopics (Kafka's ``CreatableTopic``). ``num_partitions`` and
    ``replication_factor`` are -1 for the node's ``num.partitions`` /
    ``default.replication.factor``, or with explicit ``assignments`` (``(partition index,
    broker ids)`` pairs, preferred leader first; a partition given twice is
    INVALID_REPLICA_ASSIGNMENT)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: tuple[tuple[int, tuple[int, ...]], ...] = ()
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TopicResult:
    """One topic's answer to DeleteTopics or CreatePartitions."""

    name: str
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class CreatableTopicResult:
    """One topic's answer to CreateTopics (Kafka's ``CreatableTopicResult``, v5+ fields
    included): on success the topic's id, partition count, replication factor and configs;
    ``topic_config_error_code`` is TOPIC_AUTHORIZATION_FAILED (29) when the caller may not
    DESCRIBE_CONFIGS the topic (its configs are then left out)."""

    name: str
    error_code: int = 0
    error_message: str = ""
    topic_id: str = ""
    num_partitions: int = -1
    replication_factor: int = -1
    topic_config_error_code: int = 0
    configs: tuple[DescribedConfig, ...] = ()


@dataclass(frozen=True, slots=True)
class CreatePartitionsTopic:
    """One topic of CreatePartitions: the new total ``count``; ``assignments`` one broker list
    per new partition (``None``: assigned by the cluster)."""

    name: str
    count: int
    assignments: tuple[tuple[int, ...], ...] | None = None


# -- configs ------------------------------------------------------------------------------------


class ConfigResourceType(enum.IntEnum):
    """Kafka's ``ConfigResource.Type`` ids."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    GROUP = 32


class ConfigSource(enum.IntEnum):
    """Kafka's ``DescribeConfigsResponse.ConfigSource`` ids."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ConfigType(enum.IntEnum):
    """Kafka's ``DescribeConfigsResponse.ConfigType`` ids (DescribeConfigs v3+)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


@dataclass(frozen=True, slots=True, order=True)
class ConfigResource:
    """A topic (by name), a broker (by id as a string; ``""`` for the cluster default) or a
    group (by id)."""

    resource_type: ConfigResourceType
    resource_name: str


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    """Where else a config's value could come from, most specific first."""

    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class DescribedConfig:
    """One config of a described resource (Kafka's ``DescribeConfigsResourceResult``)."""

    name: str
    value: str | None
    config_source: ConfigSource
    read_only: bool = False
    is_sensitive: bool = False
    synonyms: tuple[ConfigSynonym, ...] = ()
    config_type: ConfigType = ConfigType.UNKNOWN
    documentation: str | None = None

    @property
    def is_default(self) -> bool:
        """DescribeConfigs v0's flag: the value is no override."""
        return self.config_source in (
            ConfigSource.DEFAULT_CONFIG,
            ConfigSource.STATIC_BROKER_CONFIG,
        )


@dataclass(frozen=True, slots=True)
class DescribeConfigsResource:
    """What DescribeConfigs asks of one resource: ``configuration_keys`` ``None`` for all."""

    resource: ConfigResource
    configuration_keys: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class DescribeConfigsResult:
    resource: ConfigResource
    error_code: int = 0
    error_message: str = ""
    configs: tuple[DescribedConfig, ...] = ()


@dataclass(frozen=True, slots=True)
class AlterConfigsResource:
    """Legacy AlterConfigs: the resource's complete set of overrides (those not named return
    to their defaults)."""

    resource: ConfigResource
    configs: Mapping[str, str]


class AlterConfigOpType(enum.IntEnum):
    """Kafka's ``AlterConfigOp.OpType`` ids."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True, slots=True)
class AlterConfigOp:
    """One IncrementalAlterConfigs operation; ``value`` is ``None`` only for DELETE."""

    name: str
    op: AlterConfigOpType
    value: str | None = None


@dataclass(frozen=True, slots=True)
class IncrementalAlterConfigsResource:
    resource: ConfigResource
    ops: tuple[AlterConfigOp, ...]


@dataclass(frozen=True, slots=True)
class AlterConfigsResult:
    """One resource's answer to AlterConfigs or IncrementalAlterConfigs."""

    resource: ConfigResource
    error_code: int = 0
    error_message: str = ""


# -- leaders and reassignments ------------------------------------------------------------------


class ElectionType(enum.IntEnum):
    """Kafka's ``ElectionType`` ids."""

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True, slots=True)
class PartitionResult:
    """One partition's answer to ElectLeaders or AlterPartitionReassignments."""

    topic: str
    partition: int
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class ElectLeadersResult:
    """ElectLeaders: a top-level error (CLUSTER_AUTHORIZATION_FAILED) or one result per
    partition, ELECTION_NOT_NEEDED (84) included."""

    error_code: int = 0
    error_message: str = ""
    partitions: tuple[PartitionResult, ...] = ()

    def needed(self) -> tuple[PartitionResult, ...]:
        """The results without ELECTION_NOT_NEEDED: what Kafka answers to an election of
        every partition (a request with null ``topic_partitions``)."""
        return tuple(p for p in self.partitions if p.error_code != ElectionNotNeededError.code)


@dataclass(frozen=True, slots=True)
class ReassignablePartition:
    """One partition of AlterPartitionReassignments: the target ``replicas``, or ``None`` to
    cancel (revert) an ongoing reassignment (Kafka's null replicas)."""

    topic: str
    partition: int
    replicas: tuple[int, ...] | None


@dataclass(frozen=True, slots=True)
class AlterPartitionReassignmentsResult:
    error_code: int = 0
    error_message: str = ""
    partitions: tuple[PartitionResult, ...] = ()


@dataclass(frozen=True, slots=True)
class OngoingReassignment:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ListPartitionReassignmentsResult:
    error_code: int = 0
    error_message: str = ""
    reassignments: tuple[OngoingReassignment, ...] = ()


# -- ACLs ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InvalidAcl:
    """An ACL creation or filter a door could not decode into an ``AclBinding`` /
    ``AclBindingFilter`` (an unknown resource type, a malformed principal): INVALID_REQUEST
    (42) with ``message`` once the request is authorized, as Kafka's ``AclApis`` validates
    after the cluster check."""

    message: str


@dataclass(frozen=True, slots=True)
class AclCreationResult:
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class DescribeAclsResult:
    error_code: int = 0
    error_message: str = ""
    acls: tuple[AclBinding, ...] = ()


@dataclass(frozen=True, slots=True)
class DeleteAclsFilterResult:
    """One filter's answer to DeleteAcls: the ACLs it matched (and deleted)."""

    error_code: int = 0
    error_message: str = ""
    matching_acls: tuple[AclBinding, ...] = ()


# -- SCRAM credentials --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScramCredentialInfo:
    mechanism: str
    """``SCRAM-SHA-256`` or ``SCRAM-SHA-512`` (Kafka's wire has 1 and 2)."""
    iterations: int


@dataclass(frozen=True, slots=True)
class DescribeUserScramCredentialsResult:
    user: str
    error_code: int = 0
    error_message: str = ""
    credential_infos: tuple[ScramCredentialInfo, ...] = ()


@dataclass(frozen=True, slots=True)
class DescribeUserScramCredentialsResponse:
    """A top-level error, or one result per user."""

    error_code: int = 0
    error_message: str = ""
    results: tuple[DescribeUserScramCredentialsResult, ...] = ()


@dataclass(frozen=True, slots=True)
class ScramCredentialDeletion:
    name: str
    mechanism: str


@dataclass(frozen=True, slots=True)
class ScramCredentialUpsertion:
    name: str
    mechanism: str
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclass(frozen=True, slots=True)
class AlterUserScramCredentialsResult:
    user: str
    error_code: int = 0
    error_message: str = ""


# -- the cluster, log dirs, producers -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClusterBroker:
    broker_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class DescribeClusterResult:
    """DescribeCluster: the brokers as seen on the asking listener, and the controller (-1 when
    unknown or not reachable on that listener)."""

    cluster_id: str
    controller_id: int
    brokers: tuple[ClusterBroker, ...]
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class LogDirPartition:
    partition_index: int
    partition_size: int
    offset_lag: int = 0
    is_future_key: bool = False


@dataclass(frozen=True, slots=True)
class LogDirTopic:
    name: str
    partitions: tuple[LogDirPartition, ...]


@dataclass(frozen=True, slots=True)
class LogDirDescription:
    """One log directory (DescribeLogDirs v4 fields: ``total_bytes`` / ``usable_bytes`` of
    its file system)."""

    log_dir: str
    error_code: int = 0
    topics: tuple[LogDirTopic, ...] = ()
    total_bytes: int = -1
    usable_bytes: int = -1


@dataclass(frozen=True, slots=True)
class DescribeLogDirsResult:
    """DescribeLogDirs: a top-level error (CLUSTER_AUTHORIZATION_FAILED) or every log dir."""

    error_code: int = 0
    results: tuple[LogDirDescription, ...] = ()


@dataclass(frozen=True, slots=True)
class ProducerState:
    """One active idempotent producer of a partition (DescribeProducers)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int = -1
    current_txn_start_offset: int = -1


@dataclass(frozen=True, slots=True)
class PartitionProducers:
    topic: str
    partition_index: int
    error_code: int = 0
    error_message: str = ""
    active_producers: tuple[ProducerState, ...] = ()
