"""``odradek.Admin``: create, delete, describe and configure topics; inspect the cluster.

Kafka's ``Admin`` client over the ``Admin`` and ``Broker`` services::

    with odradek.Admin("127.0.0.1:9092") as admin:
        results = admin.create_topics([odradek.NewTopic("events", 3, 2)])
        if results["events"] is not None:
            raise results["events"]
        print(admin.describe_topics(["events"])["events"].partitions)

Errors, one rule for every method:

* Operations that change several items at once (:meth:`Admin.create_topics`,
  :meth:`Admin.create_partitions`, :meth:`Admin.delete_topics`, :meth:`Admin.alter_configs`,
  :meth:`Admin.elect_leaders`, :meth:`Admin.alter_partition_reassignments`,
  :meth:`Admin.delete_records`) return one result per item: ``None`` (or the new value) on
  success, the typed :class:`~odradek.errors.OdradekError` otherwise. One item failing does
  not hide the others' outcome — as Kafka's per-topic result futures.
* Questions (:meth:`Admin.list_topics`, :meth:`Admin.describe_topics`,
  :meth:`Admin.describe_configs`, :meth:`Admin.describe_broker_configs`,
  :meth:`Admin.describe_cluster`, :meth:`Admin.describe_log_dirs`,
  :meth:`Admin.list_partition_reassignments`) raise the typed error of the first item that
  could not be answered.
* Either kind raises :class:`~odradek.client.errors.NetworkError` when no node answers, and
  the typed error of a request-level error code.

Requests go to any node (the last one that answered first, then the others); ``DeleteRecords``
goes to each partition's leader; what only a node knows of itself (its log dirs, its broker
configs) is asked of that node, as Kafka's ``AdminClient`` does. Thread-safe.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal, Self, TypeVar, Unpack

import grpc

from odradek import scram
from odradek.acl import (
    AclBinding,
    AclBindingFilter,
    acl_binding_from_wire,
    acl_binding_to_wire,
    acl_filter_to_wire,
)
from odradek.client.connection import ConnectionPool, call, parse_bootstrap_servers, wait
from odradek.client.errors import NetworkError, error_from_code
from odradek.client.group_admin import ConsumerGroupAdmin
from odradek.client.leaders import Answer, LeaderTarget, send_to_leaders
from odradek.client.metadata import BrokerInfo, ClusterMetadata, MetadataCache, TopicMetadata
from odradek.client.security import SecurityConfig, SecurityOptions
from odradek.client.share_group_admin import ShareGroupAdmin
from odradek.client.txn_admin import TransactionAdmin
from odradek.client.types import TopicPartition
from odradek.clock import Clock, SystemClock
from odradek.errors import BrokerNotAvailableError, OdradekError
from odradek.v1 import odradek_pb2 as pb

__all__ = [
    "Admin",
    "ClusterDescription",
    "ConfigChange",
    "ConfigEntry",
    "DescribeTopicsResult",
    "LogDirDescription",
    "NewPartitions",
    "NewTopic",
    "OngoingReassignment",
    "ReplicaInfo",
    "ScramDeletion",
    "ScramUpsertion",
]

Resp = TypeVar("Resp")

_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class ScramUpsertion:
    """Set ``user``'s credential for ``mechanism`` (SCRAM-SHA-256 or SCRAM-SHA-512) from
    ``password``, with ``iterations`` (4096 to 16384)."""

    user: str
    mechanism: str
    password: str = field(repr=False)
    iterations: int = 4096


@dataclass(frozen=True, slots=True)
class ScramDeletion:
    """Delete ``user``'s credential for ``mechanism``."""

    user: str
    mechanism: str


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create.

    Give ``num_partitions`` and ``replication_factor`` (-1: the broker's default), or
    ``assignments`` (partition → broker ids, the first being the preferred leader) and leave
    both at -1. ``configs`` are topic config overrides by Kafka name
    (``{"cleanup.policy": "compact"}``). Raises ``ValueError`` for an empty name, both forms
    at once, or counts below -1 or 0.
    """

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str] = field(default_factory=dict)
    assignments: Mapping[int, Sequence[int]] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a topic name is a non-empty str, not {self.name!r}")
        for what, value in (
            ("num_partitions", self.num_partitions),
            ("replication_factor", self.replication_factor),
        ):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{what} must be an integer, not {value!r}")
            if value == 0 or value < -1 or value > _INT32_MAX:
                raise ValueError(f"{what} must be positive (or -1 for the default), not {value}")
        if self.assignments is not None:
            if self.num_partitions != -1 or self.replication_factor != -1:
                raise ValueError(
                    "give either assignments or num_partitions and replication_factor, not both"
                )
            if not self.assignments:
                raise ValueError("assignments must name at least one partition")

    def to_proto(self) -> pb.CreatableTopic:
        assignments = [
            pb.ReplicaAssignment(partition=p, broker_ids=list(brokers))
            for p, brokers in sorted((self.assignments or {}).items())
        ]
        return pb.CreatableTopic(
            name=self.name,
            num_partitions=self.num_partitions,
            replication_factor=self.replication_factor,
            assignments=assignments,
            configs=dict(self.configs),
        )


@dataclass(frozen=True, slots=True)
class NewPartitions:
    """Kafka's ``NewPartitions.increaseTo``: grow a topic to ``total_count`` partitions.

    ``new_assignments`` optionally places the new partitions: one broker id list per new
    partition (preferred leader first); ``None`` lets the cluster assign them rack-aware,
    continuing the existing spread. Raises ``ValueError`` for a count below 1 or an empty
    broker list (the cluster checks the rest: INVALID_PARTITIONS for a count that does not
    grow, INVALID_REPLICA_ASSIGNMENT for a bad placement).
    """

    total_count: int
    new_assignments: Sequence[Sequence[int]] | None = None

    def __post_init__(self) -> None:
        count = self.total_count
        if isinstance(count, bool) or not isinstance(count, int) or not 0 < count <= _INT32_MAX:
            raise ValueError(f"total_count must be a positive integer, not {count!r}")
        for brokers in self.new_assignments or ():
            if not brokers:
                raise ValueError("every new partition's assignment must name a broker")

    def to_proto(self, topic: str) -> pb.CreatePartitionsTopic:
        return pb.CreatePartitionsTopic(
            name=topic,
            count=self.total_count,
            assignments=[
                pb.CreatePartitionsAssignment(broker_ids=list(b))
                for b in self.new_assignments or ()
            ],
        )


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """A config as :meth:`Admin.describe_configs` (a topic's) or
    :meth:`Admin.describe_broker_configs` (a broker's) reports it. ``is_default``: the topic
    has no override of it. ``source``: where the value comes from, Kafka's ``ConfigSource``
    name (``DYNAMIC_TOPIC_CONFIG`` a topic's override, ``STATIC_BROKER_CONFIG`` the node's
    ``server.properties``, ``DEFAULT_CONFIG`` the built-in default; ``UNKNOWN`` from a node
    that does not say)."""

    name: str
    value: str
    is_default: bool
    source: str = "UNKNOWN"
    read_only: bool = False


def _config_entry(e: pb.ConfigEntry) -> ConfigEntry:
    source = "UNKNOWN" if e.source == pb.CONFIG_SOURCE_UNKNOWN else pb.ConfigSource.Name(e.source)
    return ConfigEntry(e.name, e.value, e.is_default, source, e.read_only)


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    """One replica's log in a log dir (Kafka's ``ReplicaInfo``): its size in bytes, its lag
    behind the current replica (0: odradek has no future replicas), whether it is one."""

    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True, slots=True)
class LogDirDescription:
    """One log directory of a node (Kafka's ``LogDirDescription``): ``error`` ``None`` unless
    the directory is offline; the replicas in it; its file system's total and usable bytes
    (``None``: unknown)."""

    path: str
    error: OdradekError | None
    replica_infos: Mapping[TopicPartition, ReplicaInfo]
    total_bytes: int | None
    usable_bytes: int | None


@dataclass(frozen=True, slots=True)
class ConfigChange:
    """An incremental config change of one topic: keys to set, and keys to return to their
    defaults."""

    set: Mapping[str, str] = field(default_factory=dict)
    delete: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class ClusterDescription:
    """The cluster: its id, the active controller (-1: none), the live brokers by id."""

    cluster_id: str
    controller_id: int
    brokers: tuple[BrokerInfo, ...]


@dataclass(frozen=True, slots=True)
class OngoingReassignment:
    """A partition being moved: its replicas now, and those being added and removed."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


class DescribeTopicsResult(Mapping[str, TopicMetadata]):
    """What :meth:`Admin.describe_topics` answers, per topic (Kafka's ``DescribeTopicsResult``):
    a mapping over every topic asked for, in the order asked, whose ``result[name]`` is the
    topic's :class:`TopicMetadata` or raises the topic's typed error (as the per-topic future's
    ``get()`` does in Kafka). ``errors`` holds the topics that could not be described and
    ``described`` the others; iterating ``items()`` or ``values()`` raises the first error
    (Kafka's ``allTopicNames().get()``). Immutable."""

    __slots__ = ("_order", "described", "errors")

    def __init__(
        self,
        order: Sequence[str],
        described: Mapping[str, TopicMetadata],
        errors: Mapping[str, OdradekError],
    ) -> None:
        self._order = tuple(order)
        self.described: Mapping[str, TopicMetadata] = dict(described)
        self.errors: Mapping[str, OdradekError] = dict(errors)

    def __getitem__(self, name: str) -> TopicMetadata:
        error = self.errors.get(name)
        if error is not None:
            raise error
        return self.described[name]

    def __contains__(self, name: object) -> bool:
        return name in self.described or name in self.errors

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __repr__(self) -> str:
        return f"DescribeTopicsResult(described={self.described!r}, errors={self.errors!r})"


class Admin(ConsumerGroupAdmin, ShareGroupAdmin, TransactionAdmin):
    """Administers an odradek cluster (see the module docstring for the error rules); the
    consumer group methods come from :class:`~odradek.client.group_admin.ConsumerGroupAdmin`,
    the share group methods (KIP-932) from
    :class:`~odradek.client.share_group_admin.ShareGroupAdmin`,
    the transaction methods from :class:`~odradek.client.txn_admin.TransactionAdmin`.

    ``request_timeout_ms`` bounds each call; ``default_api_timeout_ms`` bounds operations that
    retry (``delete_records``); operations that wait on the cluster (create, delete, elect,
    reassign) take a ``timeout_ms`` they pass to the broker, defaulting to
    ``request_timeout_ms``. Raises ``ValueError`` for bad settings. Thread-safe.
    """

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        request_timeout_ms: int = 30_000,
        default_api_timeout_ms: int = 60_000,
        retry_backoff_ms: int = 100,
        clock: Clock | None = None,
        **security: Unpack[SecurityOptions],
    ) -> None:
        for name, value in (
            ("request_timeout_ms", request_timeout_ms),
            ("default_api_timeout_ms", default_api_timeout_ms),
            ("retry_backoff_ms", retry_backoff_ms),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, not {value!r}")
        self._request_timeout_ms = request_timeout_ms
        self._default_api_timeout_ms = default_api_timeout_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._clock: Clock = clock or SystemClock()
        self._pool = ConnectionPool(SecurityConfig(**security))
        self._metadata = MetadataCache(
            parse_bootstrap_servers(bootstrap_servers),
            self._pool,
            self._clock,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
        )

    # --- topics ------------------------------------------------------------------------------

    def create_topics(
        self,
        new_topics: Iterable[NewTopic],
        *,
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> dict[str, OdradekError | None]:
        """Create topics; per topic ``None`` or its error (e.g.
        :class:`~odradek.errors.TopicAlreadyExistsError`,
        :class:`~odradek.errors.InvalidReplicationFactorError`). The broker waits up to
        ``timeout_ms`` for every partition to have a leader. ``validate_only`` checks without
        creating."""
        topics = list(new_topics)
        wait_ms = self._wait_ms(timeout_ms)
        request = pb.CreateTopicsRequest(
            topics=[t.to_proto() for t in topics], timeout_ms=wait_ms, validate_only=validate_only
        )
        response = self._call_any(
            lambda stub_address: self._pool.admin(stub_address).CreateTopics.future(
                request, timeout=self._deadline_s(wait_ms)
            )
        )
        return self._topic_results([t.name for t in topics], response.topics)

    def create_partitions(
        self,
        new_partitions: Mapping[str, NewPartitions],
        *,
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> dict[str, OdradekError | None]:
        """Add partitions to topics; per topic ``None`` or its error
        (:class:`~odradek.errors.InvalidPartitionsError` when the count would not grow,
        :class:`~odradek.errors.InvalidReplicaAssignmentError`,
        :class:`~odradek.errors.UnknownTopicOrPartitionError`). The broker waits up to
        ``timeout_ms`` for every new partition to have a leader. ``validate_only`` checks
        without adding. Producers and consumers learn the new partitions at their next
        metadata refresh (``metadata_max_age_ms``)."""
        wait_ms = self._wait_ms(timeout_ms)
        request = pb.CreatePartitionsRequest(
            topics=[n.to_proto(topic) for topic, n in new_partitions.items()],
            timeout_ms=wait_ms,
            validate_only=validate_only,
        )
        response = self._call_any(
            lambda address: self._pool.admin(address).CreatePartitions.future(
                request, timeout=self._deadline_s(wait_ms)
            )
        )
        return self._topic_results(list(new_partitions), response.topics)

    def delete_topics(
        self, names: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, OdradekError | None]:
        """Delete topics; per topic ``None`` or its error (e.g.
        :class:`~odradek.errors.UnknownTopicOrPartitionError`). The broker waits up to
        ``timeout_ms`` for the deletion to complete."""
        wanted = list(names)
        wait_ms = self._wait_ms(timeout_ms)
        request = pb.DeleteTopicsRequest(names=wanted, timeout_ms=wait_ms)
        response = self._call_any(
            lambda address: self._pool.admin(address).DeleteTopics.future(
                request, timeout=self._deadline_s(wait_ms)
            )
        )
        return self._topic_results(wanted, response.topics)

    def list_topics(self) -> list[str]:
        """The names of every topic, sorted."""
        return sorted(self._cluster(None).topics)

    def describe_topics(self, names: Iterable[str] | None = None) -> DescribeTopicsResult:
        """Topics with their partitions (leader, leader epoch, replicas, ISR); every topic when
        ``names`` is ``None``. A result per topic, as Kafka's ``describeTopics``: a topic that
        cannot be described does not hide the others; ``result[name]`` raises its error
        (:class:`~odradek.errors.UnknownTopicOrPartitionError` for a missing one,
        ``TopicAuthorizationFailedError`` for one the caller may not describe), and
        ``result.errors`` maps each such topic to its error."""
        wanted = None if names is None else list(dict.fromkeys(names))
        cluster = self._cluster(wanted)
        described: dict[str, TopicMetadata] = {}
        errors: dict[str, OdradekError] = {}
        order = tuple(wanted if wanted is not None else sorted(cluster.topics))
        for name in order:
            topic = cluster.topics.get(name)
            if topic is None:
                errors[name] = error_from_code(3, f"topic {name!r} does not exist")
                continue
            error = topic.error()
            if error is not None:
                errors[name] = type(error)(f"topic {name!r} {_describe_code(topic.error_code)}")
                continue
            described[name] = topic
        return DescribeTopicsResult(order, described, errors)

    def describe_cluster(self) -> ClusterDescription:
        """The cluster id, the active controller's id (-1: none) and the live brokers."""
        cluster = self._cluster([])
        brokers = tuple(cluster.brokers[i] for i in sorted(cluster.brokers))
        return ClusterDescription(cluster.cluster_id, cluster.controller_id, brokers)

    def describe_log_dirs(
        self, broker_ids: Iterable[int] | None = None
    ) -> dict[int, dict[str, LogDirDescription]]:
        """Per broker (every live broker when ``broker_ids`` is ``None``) its log directories
        by path, with the size in bytes of each replica's log in them (Kafka's
        ``describeLogDirs``: one request per broker, since log dirs are per node). Raises
        :class:`~odradek.errors.BrokerNotAvailableError` for an id that is no live broker,
        :class:`~odradek.errors.ClusterAuthorizationFailedError` without DESCRIBE on the
        cluster, or the error of a broker that could not be asked."""
        out: dict[int, dict[str, LogDirDescription]] = {}
        for broker in self._brokers(broker_ids):
            response = call(
                self._pool.admin(broker.address).DescribeLogDirs,
                pb.DescribeLogDirsRequest(),
                address=broker.address,
                timeout_ms=self._request_timeout_ms,
            )
            if response.error_code:
                raise error_from_code(response.error_code, "", f"broker {broker.node_id}")
            out[broker.node_id] = {
                d.path: LogDirDescription(
                    path=d.path,
                    error=error_from_code(d.error_code, "", f"log dir {d.path}")
                    if d.error_code
                    else None,
                    replica_infos={
                        TopicPartition(t.name, p.partition): ReplicaInfo(
                            p.size_bytes, p.offset_lag, p.is_future
                        )
                        for t in d.topics
                        for p in t.partitions
                    },
                    total_bytes=d.total_bytes if d.total_bytes >= 0 else None,
                    usable_bytes=d.usable_bytes if d.usable_bytes >= 0 else None,
                )
                for d in response.log_dirs
            }
        return out

    def _brokers(self, broker_ids: Iterable[int] | None) -> list[BrokerInfo]:
        """The live brokers named (all when ``None``), in id order."""
        cluster = self._metadata.refresh()
        if broker_ids is None:
            return [cluster.brokers[i] for i in sorted(cluster.brokers)]
        out = []
        for node_id in dict.fromkeys(broker_ids):
            broker = cluster.brokers.get(node_id)
            if broker is None:
                raise BrokerNotAvailableError(f"broker {node_id} is not a live broker")
            out.append(broker)
        return out

    def cluster_metadata(self) -> ClusterMetadata:
        """Everything at once: brokers, controller and every topic's partitions."""
        return self._cluster(None)

    def _cluster(self, topics: list[str] | None) -> ClusterMetadata:
        if topics is None:
            request = pb.MetadataRequest(all_topics=True)
        else:
            request = pb.MetadataRequest(topics=topics)
        response = self._call_any(
            lambda address: self._pool.broker(address).Metadata.future(
                request, timeout=self._request_timeout_ms / 1000
            )
        )
        return ClusterMetadata.from_response(response)

    # --- configs -----------------------------------------------------------------------------

    def describe_configs(self, topics: Iterable[str]) -> dict[str, dict[str, ConfigEntry]]:
        """Each topic's configs by name, defaults included (``is_default``). Raises the error
        of the first topic that cannot be described."""
        wanted = list(topics)
        request = pb.DescribeConfigsRequest(topics=wanted)
        response = self._call_any(
            lambda address: self._pool.admin(address).DescribeConfigs.future(
                request, timeout=self._request_timeout_ms / 1000
            )
        )
        found = {t.name: t for t in response.topics}
        out: dict[str, dict[str, ConfigEntry]] = {}
        for name in wanted:
            t = found.get(name)
            if t is None:
                raise error_from_code(-1, "the answer has no result for it", f"topic {name!r}")
            if t.error_code:
                raise error_from_code(t.error_code, t.error_message, f"topic {name!r}")
            out[name] = {e.name: _config_entry(e) for e in t.entries}
        return out

    def describe_broker_configs(
        self, broker_ids: Iterable[int] | None = None
    ) -> dict[int, dict[str, ConfigEntry]]:
        """Each broker's configs by name (every live broker when ``broker_ids`` is ``None``),
        each asked of the broker itself as Kafka's ``AdminClient`` does. A value the node's
        ``server.properties`` sets away from the built-in default has ``source``
        ``STATIC_BROKER_CONFIG``; all are read-only (odradek has no dynamic broker configs).
        Raises :class:`~odradek.errors.BrokerNotAvailableError` for an id that is no live
        broker, or the error of the first broker that cannot be described."""
        out: dict[int, dict[str, ConfigEntry]] = {}
        for broker in self._brokers(broker_ids):
            wire = pb.ConfigResource(type=pb.CONFIG_RESOURCE_BROKER, name=str(broker.node_id))
            response = call(
                self._pool.admin(broker.address).DescribeConfigs,
                pb.DescribeConfigsRequest(resources=[wire]),
                address=broker.address,
                timeout_ms=self._request_timeout_ms,
            )
            what = f"broker {broker.node_id}"
            if len(response.resources) != 1:
                raise error_from_code(-1, "the answer has no result for it", what)
            r = response.resources[0]
            if r.error_code:
                raise error_from_code(r.error_code, r.error_message, what)
            out[broker.node_id] = {e.name: _config_entry(e) for e in r.entries}
        return out

    def alter_configs(
        self, changes: Mapping[str, ConfigChange], *, validate_only: bool = False
    ) -> dict[str, OdradekError | None]:
        """Change topic configs incrementally: per topic ``None`` or its error (e.g.
        :class:`~odradek.errors.InvalidConfigError`)."""
        request = pb.AlterConfigsRequest(
            topics=[
                pb.AlterableTopicConfig(name=name, set=dict(c.set), delete=list(c.delete))
                for name, c in changes.items()
            ],
            validate_only=validate_only,
        )
        response = self._call_any(
            lambda address: self._pool.admin(address).AlterConfigs.future(
                request, timeout=self._request_timeout_ms / 1000
            )
        )
        return self._topic_results(list(changes), response.topics)

    # --- partitions --------------------------------------------------------------------------

    def elect_leaders(
        self,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        election_type: Literal["preferred", "unclean"] = "preferred",
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, OdradekError | None]:
        """Elect leaders for ``partitions`` (every partition when ``None``): per partition
        ``None`` or its error (:class:`~odradek.errors.ElectionNotNeededError` when it is
        already led as asked). Raises ``ValueError`` for an unknown election type."""
        kinds = {"preferred": pb.ElectionType.PREFERRED, "unclean": pb.ElectionType.UNCLEAN}
        if election_type not in kinds:
            raise ValueError(
                f"election_type must be 'preferred' or 'unclean', not {election_type!r}"
            )
        wanted = None if partitions is None else list(partitions)
        wait_ms = self._wait_ms(timeout_ms)
        request = pb.ElectLeadersRequest(
            election_type=kinds[election_type],
            partitions=[
                pb.TopicPartition(topic=tp.topic, partition=tp.partition) for tp in wanted or ()
            ],
            timeout_ms=wait_ms,
        )
        response = self._call_any(
            lambda address: self._pool.admin(address).ElectLeaders.future(
                request, timeout=self._deadline_s(wait_ms)
            )
        )
        if response.error_code:
            raise error_from_code(response.error_code, "", "elect leaders")
        return self._partition_results(wanted, response.partitions)

    def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, OdradekError | None]:
        """Move partitions to new replica lists (``None`` cancels an ongoing move): per
        partition ``None`` or its error (e.g.
        :class:`~odradek.errors.NoReassignmentInProgressError`)."""
        wait_ms = self._wait_ms(timeout_ms)
        request = pb.AlterPartitionReassignmentsRequest(
            partitions=[
                pb.ReassignablePartition(
                    topic=tp.topic,
                    partition=tp.partition,
                    replicas=list(replicas or ()),
                    cancel=replicas is None,
                )
                for tp, replicas in reassignments.items()
            ],
            timeout_ms=wait_ms,
        )
        response = self._call_any(
            lambda address: self._pool.admin(address).AlterPartitionReassignments.future(
                request, timeout=self._deadline_s(wait_ms)
            )
        )
        if response.error_code:
            raise error_from_code(response.error_code, "", "alter partition reassignments")
        return self._partition_results(list(reassignments), response.partitions)

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OngoingReassignment]:
        """The ongoing reassignments among ``partitions`` (all of them when ``None``)."""
        request = pb.ListPartitionReassignmentsRequest(
            partitions=[
                pb.TopicPartition(topic=tp.topic, partition=tp.partition) for tp in partitions or ()
            ]
        )
        response = self._call_any(
            lambda address: self._pool.admin(address).ListPartitionReassignments.future(
                request, timeout=self._request_timeout_ms / 1000
            )
        )
        if response.error_code:
            raise error_from_code(response.error_code, "", "list partition reassignments")
        return {
            TopicPartition(r.topic, r.partition): OngoingReassignment(
                tuple(r.replicas), tuple(r.adding_replicas), tuple(r.removing_replicas)
            )
            for r in response.reassignments
        }

    # --- ACLs (docs/security.md) ---------------------------------------------------------------

    def create_acls(self, acls: Iterable[AclBinding]) -> list[OdradekError | None]:
        """Add ACLs: per ACL, in order, ``None`` or its error
        (:class:`~odradek.errors.ClusterAuthorizationFailedError` without ALTER on the
        cluster, :class:`~odradek.errors.SecurityDisabledError` without an authorizer)."""
        wanted = list(acls)
        request = pb.CreateAclsRequest(creations=[acl_binding_to_wire(a) for a in wanted])
        response = self._call_any(
            lambda address: self._pool.admin(address).CreateAcls.future(
                request, timeout=self._request_timeout_ms / 1000
            )
        )
        results = list(response.results)
        return [
            error_from_code(r.error_code, r.error_message, str(a.pattern)) if r.error_code else None
            for a, r in zip(wanted, results, strict=False)
        ] + [
            error_from_code(-1, "the answer has no result for it", str(a.pattern))
            for a in wanted[len(results) :]
        ]

    def describe_acls(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        """The ACLs matching ``acl_filter`` (all of them by default). Raises the answer's
        error."""
        request = pb.DescribeAclsRequest(
            filter=acl_filter_to_wire(acl_filter or AclBindingFilter())
        )
        response = self._call_any(
            lambda address: self._pool.admin(address).DescribeAcls.future(
                request, timeout=self._request_timeout_ms / 1000
            )
        )
        if response.error_code:
            raise error_from_code(response.error_code, response.error_message, "describe ACLs")
        return [acl_binding_from_wire(a) for a in response.acls]

    def delete_acls(self, filters: Iterable[AclBindingFilter]) -> list[list[AclBinding]]:
        """Delete the ACLs each filter matches; returns the deleted ACLs per filter. Raises the
        first filter's error."""
        wanted = list(filters)
        request = pb.DeleteAclsRequest(filters=[acl_filter_to_wire(f) for f in wanted])
        response = self._call_any(
            lambda address: self._pool.admin(address).DeleteAcls.future(
                request, timeout=self._request_timeout_ms / 1000
            )
        )
        out = []
        for r in response.filter_results:
            if r.error_code:
                raise error_from_code(r.error_code, r.error_message, "delete ACLs")
            out.append([acl_binding_from_wire(a) for a in r.matching_acls])
        return out

    # --- SCRAM credentials (docs/security.md) -----------------------------------------------

    def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None
    ) -> dict[str, dict[str, int]]:
        """Per user, mechanism → iterations of its SCRAM credentials (every user with some
        when ``users`` is ``None``). Raises the first error (e.g.
        :class:`~odradek.errors.ResourceNotFoundError` for a user without any)."""
        request = pb.DescribeUserScramCredentialsRequest(users=list(users or ()))
        response = self._call_any(
            lambda address: self._pool.admin(address).DescribeUserScramCredentials.future(
                request, timeout=self._request_timeout_ms / 1000
            )
        )
        if response.error_code:
            raise error_from_code(response.error_code, response.error_message, "describe users")
        out: dict[str, dict[str, int]] = {}
        for r in response.results:
            if r.error_code:
                raise error_from_code(r.error_code, r.error_message, f"user {r.user!r}")
            out[r.user] = {i.mechanism: i.iterations for i in r.credential_infos}
        return out

    def alter_user_scram_credentials(
        self,
        upsertions: Iterable[ScramUpsertion] = (),
        deletions: Iterable[ScramDeletion] = (),
    ) -> dict[str, OdradekError | None]:
        """Set and delete SCRAM credentials: per user ``None`` or its error. The password is
        salted here (Kafka's KIP-554): only the salted password goes to the node."""
        wire_upsertions = []
        for u in upsertions:
            salt = secrets.token_bytes(32)
            hash_name = scram.MECHANISMS[u.mechanism][0] if u.mechanism in scram.MECHANISMS else ""
            salted = (
                scram.salted_password(u.password, salt, u.iterations, hash_name)
                if hash_name and u.iterations > 0
                else b""
            )
            wire_upsertions.append(
                pb.ScramCredentialUpsertion(
                    name=u.user,
                    mechanism=u.mechanism,
                    iterations=u.iterations,
                    salt=salt,
                    salted_password=salted,
                )
            )
        request = pb.AlterUserScramCredentialsRequest(
            deletions=[
                pb.ScramCredentialDeletion(name=d.user, mechanism=d.mechanism) for d in deletions
            ],
            upsertions=wire_upsertions,
        )
        response = self._call_any(
            lambda address: self._pool.admin(address).AlterUserScramCredentials.future(
                request, timeout=self._request_timeout_ms / 1000
            )
        )
        return {
            r.user: error_from_code(r.error_code, r.error_message, f"user {r.user!r}")
            if r.error_code
            else None
            for r in response.results
        }

    def delete_records(
        self, offsets: Mapping[TopicPartition, int], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, int | OdradekError]:
        """Move each partition's log start offset up to the offset given (-1: the high
        watermark), at its leader: per partition the new log start offset (low watermark) or
        the error (:class:`~odradek.errors.OffsetOutOfRangeError` beyond the high watermark).
        Retriable errors are retried for ``timeout_ms`` (default ``default_api_timeout_ms``).
        Raises ``ValueError`` for an offset below -1."""
        for tp, offset in offsets.items():
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < -1:
                raise ValueError(f"the offset for {tp} must be an integer >= -1, not {offset!r}")
        wait_ms = self._wait_ms(timeout_ms)

        def start(
            address: str, targets: list[LeaderTarget[int]]
        ) -> grpc.Future[pb.DeleteRecordsResponse]:
            request = pb.DeleteRecordsRequest(
                partitions=[
                    pb.DeleteRecordsPartition(
                        topic=t.tp.topic, partition=t.tp.partition, offset=t.item
                    )
                    for t in targets
                ],
                timeout_ms=wait_ms,
            )
            return self._pool.broker(address).DeleteRecords.future(
                request, timeout=self._deadline_s(wait_ms)
            )

        def answers(response: pb.DeleteRecordsResponse) -> Iterable[Answer[int]]:
            for p in response.partitions:
                tp = TopicPartition(p.topic, p.partition)
                yield Answer(tp, p.error_code, p.error_message, p.low_watermark)

        return send_to_leaders(
            self._metadata,
            self._clock,
            offsets,
            start,
            answers,
            timeout_ms=self._default_api_timeout_ms if timeout_ms is None else timeout_ms,
            retry_backoff_ms=self._retry_backoff_ms,
        )

    # --- plumbing ----------------------------------------------------------------------------

    def _wait_ms(self, timeout_ms: int | None) -> int:
        wait_ms = self._request_timeout_ms if timeout_ms is None else timeout_ms
        if (
            isinstance(wait_ms, bool)
            or not isinstance(wait_ms, int)
            or not 0 <= wait_ms <= _INT32_MAX
        ):
            raise ValueError(f"timeout_ms must be an integer in [0, 2**31), not {timeout_ms!r}")
        return wait_ms

    def _deadline_s(self, wait_ms: int) -> float:
        """The gRPC deadline of a call the broker may hold for ``wait_ms``."""
        return (wait_ms + self._request_timeout_ms) / 1000

    def _call_any(self, start: Callable[[str], grpc.Future[Resp]]) -> Resp:
        """Start the call on one node after another until one answers.

        Only an unreachable node moves on to the next (a timed-out call may have taken effect,
        so it is not repeated elsewhere); a node's error answer is returned or raised. Raises
        :class:`NetworkError` if no node answers.
        """
        tried: list[str] = []
        last: OdradekError | None = None
        for address in self._metadata.candidates():
            tried.append(address)
            try:
                response = wait(start(address), address)
            except NetworkError as exc:
                last = exc
                continue
            self._metadata.prefer(address)
            return response
        reason = f": {last.message}" if last is not None else ""
        raise NetworkError(f"no node answered (tried {', '.join(tried)}){reason}")

    @staticmethod
    def _topic_results(
        names: list[str], results: Iterable[pb.TopicResult]
    ) -> dict[str, OdradekError | None]:
        by_name = {r.name: r for r in results}
        out: dict[str, OdradekError | None] = {}
        for name in names:
            r = by_name.get(name)
            if r is None:
                out[name] = error_from_code(
                    -1, "the answer has no result for it", f"topic {name!r}"
                )
            elif r.error_code:
                out[name] = error_from_code(r.error_code, r.error_message, f"topic {name!r}")
            else:
                out[name] = None
        return out

    @staticmethod
    def _partition_results(
        wanted: list[TopicPartition] | None, results: Iterable[pb.PartitionResult]
    ) -> dict[TopicPartition, OdradekError | None]:
        out: dict[TopicPartition, OdradekError | None] = {}
        for r in results:
            tp = TopicPartition(r.topic, r.partition)
            out[tp] = (
                error_from_code(r.error_code, r.error_message, str(tp)) if r.error_code else None
            )
        for tp in wanted or ():
            if tp not in out:
                out[tp] = error_from_code(-1, "the answer has no result for it", str(tp))
        return out

    # --- security ---------------------------------------------------------------------------

    def sasl_salted_password(self) -> scram.SaltedPassword | None:
        """On SASL_SSL, SCRAM's salted password this client proves its user with once its
        first exchange with a node succeeded (the password is dropped then): give it to other
        clients as ``sasl_salted_password`` so that they never see the password. ``None``
        before that, or without SASL."""
        secret = self._pool.scram
        return None if secret is None else secret.salted_password

    # --- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connections. Idempotent."""
        self._pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _describe_code(code: int) -> str:
    return {3: "does not exist", 5: "has no leader yet"}.get(code, f"failed with error {code}")
