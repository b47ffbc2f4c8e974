"""The admin manager of a node (Kafka's ZooKeeper-era ``ZkAdminManager`` with ``AdminZkClient``,
the ACL and SCRAM admin, and the broker-local DescribeCluster / DescribeLogDirs /
DescribeProducers / auto topic creation), on plain domain values (:mod:`node.admin.requests`).

Administration is a conversation through ZooKeeper: the node validates a request, writes what
it asks for into the znodes the active controller watches, and waits (up to the request's
timeout) until ZooKeeper shows the outcome.

- create_topics writes ``/config/topics/<t>`` and ``/brokers/topics/<t>``, then waits for
  every partition to have a leader;
- delete_topics writes ``/admin/delete_topics/<t>`` and waits for the topic znode to go;
- alter_configs / incremental_alter_configs write ``/config/topics/<t>`` and a
  ``/config/changes`` notification (a broker's or a group's configs:
  :mod:`node.admin.dynamic_config_admin`);
- elect_leaders writes ``/admin/preferred_replica_election`` (or odradek's
  ``/admin/unclean_leader_election``), waits for the controller to consume it, then reads
  the leaders;
- alter_partition_reassignments writes ``/admin/reassign_partitions`` and waits for the
  controller to consume it;
- create_partitions writes the grown partition map into ``/brokers/topics/<t>`` (a conditional
  set) and waits for every new partition to have a leader;
- describe_configs and list_partition_reassignments only read.

A hand-off znode that already exists (another node's request in flight) is waited out first.
``timeout_ms <= 0`` means "do not wait" for create_topics, create_partitions and delete_topics
(odradek answers 0 then; Kafka answers REQUEST_TIMED_OUT for what it did start); for
elect_leaders and alter_partition_reassignments, whose answer needs the controller, it means
the default of 30 s.

Errors are Kafka's, per topic or partition: INVALID_TOPIC_EXCEPTION (17), TOPIC_ALREADY_EXISTS
(36), INVALID_PARTITIONS (37), INVALID_REPLICATION_FACTOR (38), INVALID_REPLICA_ASSIGNMENT (39),
INVALID_CONFIG (40), INVALID_REQUEST (42), POLICY_VIOLATION (44: more than 10,000 new
partitions in one request, or a topic too large for its znode; see
:mod:`controller.partition_creation`), UNKNOWN_TOPIC_OR_PARTITION (3), REQUEST_TIMED_OUT
(7), ELECTION_NOT_NEEDED (84), PREFERRED_LEADER_NOT_AVAILABLE (80),
ELIGIBLE_LEADERS_NOT_AVAILABLE (83), NO_REASSIGNMENT_IN_PROGRESS (85), REASSIGNMENT_IN_PROGRESS
(60: CreatePartitions on a topic being reassigned, as Kafka's ZooKeeper mode refuses it),
SECURITY_DISABLED (54: the ACL calls without an authorizer), UNSUPPORTED_VERSION (35: the SCRAM
calls without a credential store), RESOURCE_NOT_FOUND (91), UNSUPPORTED_SASL_MECHANISM (33),
UNACCEPTABLE_CREDENTIAL (93).

No authorization here: :class:`node.admin.authorization.AuthorizedAdmin` puts Kafka's ACL
checks in front, for either door.

Thread-safety: the manager keeps no mutable state but the set of topics being auto-created
(under a lock); every method is thread-safe.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from controller.assignment import assign_replicas
from controller.election import offline_leader, preferred_leader
from controller.partition_creation import (
    check_partitions_per_request,
    check_topic_znode_size,
    plan_new_partitions,
)
from controller.reassignment import ReplicaAssignment, validate_target_replicas
from controller.zk_data import (
    NO_LEADER,
    BrokerIdsZNode,
    BrokerIdZNode,
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityChangeNotificationZNode,
    ConfigEntityTypeZNode,
    ConfigEntityZNode,
    DeleteTopicsTopicZNode,
    DeleteTopicsZNode,
    LeaderIsrAndControllerEpoch,
    PreferredReplicaElectionZNode,
    ReassignPartitionsZNode,
    TopicAssignment,
    TopicPartition,
    TopicPartitionStateZNode,
    TopicsZNode,
    TopicZNode,
    UncleanLeaderElectionZNode,
    new_topic_id,
)
from node.admin.config_ops import (
    apply_incremental_ops,
    check_incremental_ops,
    describe_topic_configs,
    topic_config_names,
)
from node.admin.dynamic_config_admin import DynamicConfigAdmin
from node.admin.local_admin import LocalAdmin
from node.admin.requests import (
    AclCreationResult,
    AlterConfigsResource,
    AlterConfigsResult,
    AlterPartitionReassignmentsResult,
    AlterUserScramCredentialsResult,
    ConfigResource,
    ConfigResourceType,
    ConfigType,
    CreatableTopicResult,
    CreatePartitionsTopic,
    DeleteAclsFilterResult,
    DescribeAclsResult,
    DescribeClusterResult,
    DescribeConfigsResource,
    DescribeConfigsResult,
    DescribeLogDirsResult,
    DescribeUserScramCredentialsResponse,
    ElectionType,
    ElectLeadersResult,
    IncrementalAlterConfigsResource,
    InvalidAcl,
    ListPartitionReassignmentsResult,
    NewTopicSpec,
    OngoingReassignment,
    PartitionProducers,
    PartitionResult,
    ReassignablePartition,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
    TopicResult,
)
from node.admin.security_admin import SecurityAdmin
from node.admin.views import AclStore, ClusterView, CredentialStore, LocalLogs
from odradek.acl import AclBinding, AclBindingFilter
from odradek.clock import Clock
from odradek.errors import (
    ElectionNotNeededError,
    EligibleLeadersNotAvailableError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    LeaderNotAvailableError,
    NoReassignmentInProgressError,
    OdradekError,
    PreferredLeaderNotAvailableError,
    ReassignmentInProgressError,
    RequestTimedOutError,
    TopicAlreadyExistsError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from storage.config import LogConfig
from storage.log_manager import validate_topic_name

__all__ = [
    "DEFAULT_CONTROLLER_WAIT_MS",
    "AclStore",
    "AdminManager",
    "ClusterView",
    "CredentialStore",
    "LocalLogs",
    "has_collision",
    "validate_replica_assignment",
]

_log = logging.getLogger(__name__)

DEFAULT_CONTROLLER_WAIT_MS = 30_000
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
"""Kafka's internal topics: created by their coordinators with their own settings, never by
auto-creation with the node's defaults."""
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
"""KRaft's metadata log: Kafka refuses to create it (INVALID_REQUEST) in either mode."""


# -- pure topic rules ---------------------------------------------------------------------------


def has_collision(topic: str, other: str) -> bool:
    """Kafka's ``Topic.hasCollision``: names equal once '.' is read as '_' (metric names)."""
    return topic.replace(".", "_") == other.replace(".", "_")


def validate_replica_assignment(
    assignments: Sequence[tuple[int, Sequence[int]]], brokers: Collection[int]
) -> dict[int, list[int]]:
    """Check an explicit assignment for a new topic; returns it as partition → replicas.

    Partitions must be 0..n-1, each listed once, with the same non-zero number of distinct
    replicas on registered brokers. Raises ``InvalidReplicaAssignmentError``.
    """
    out: dict[int, list[int]] = {}
    for partition, replicas in assignments:
        if partition in out:
            raise InvalidReplicaAssignmentError(f"Partition {partition} is assigned twice.")
        if not replicas:
            raise InvalidReplicaAssignmentError(f"Partition {partition} has no replicas.")
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(
                f"Duplicate replica assignment found: {partition} -> {list(replicas)}"
            )
        out[partition] = list(replicas)
    if sorted(out) != list(range(len(out))):
        raise InvalidReplicaAssignmentError(
            f"Partitions should be a consecutive 0-based integer sequence, not {sorted(out)}"
        )
    if len({len(r) for r in out.values()}) > 1:
        raise InvalidReplicaAssignmentError(
            "All partitions should have the same number of replicas"
        )
    unknown = sorted({b for r in out.values() for b in r} - set(brokers))
    if unknown:
        raise InvalidReplicaAssignmentError(f"Unknown broker(s) in replica assignment: {unknown}")
    return out


_DYNAMIC_RESOURCES = (ConfigResourceType.BROKER, ConfigResourceType.GROUP)
"""The config resources :class:`DynamicConfigAdmin` serves."""


def _error(e: OdradekError) -> tuple[int, str]:
    return e.code, e.message


class AdminManager:
    """Serves the admin calls from one node's ZooKeeper client (and, for the calls that need
    them, its metadata cache, log manager, ACL store and credential store)."""

    def __init__(
        self,
        zk: KazooClient,
        clock: Clock,
        *,
        node_id: int = -1,
        default_num_partitions: int = 1,
        default_replication_factor: int = 1,
        log_defaults: LogConfig | None = None,
        poll_interval_ms: int = 20,
        acls: AclStore | None = None,
        credentials: CredentialStore | None = None,
        metadata: ClusterView | None = None,
        logs: LocalLogs | None = None,
        dynamic_configs: DynamicConfigAdmin | None = None,
    ) -> None:
        """``default_*`` apply when a CreateTopics request gives -1 (Kafka's
        ``num.partitions`` and ``default.replication.factor``); ``log_defaults`` are the
        broker's topic config defaults (Kafka's ``log.*`` and ``min.insync.replicas``
        properties; ``LogConfig()`` when not given), which describe_configs reports for every
        config a topic does not override; ``poll_interval_ms`` is how often waits re-read
        ZooKeeper (the deadlines are measured with ``clock``). ``acls`` ``None``: the ACL
        calls answer SECURITY_DISABLED; ``credentials`` ``None``: the SCRAM calls answer
        UNSUPPORTED_VERSION; ``metadata`` and ``logs`` are needed by describe_cluster,
        describe_log_dirs and describe_producers (``ValueError`` without them);
        ``dynamic_configs`` serves the BROKER and GROUP config resources (``None``: one with
        ``log_defaults`` and the built-in group coordinator settings)."""
        self._zk = zk
        self._clock = clock
        self.node_id = node_id
        self._default_num_partitions = default_num_partitions
        self._default_replication_factor = default_replication_factor
        self._log_defaults = log_defaults if log_defaults is not None else LogConfig()
        self._poll_s = poll_interval_ms / 1000
        self._pause = threading.Event()
        self._security = SecurityAdmin(acls, credentials)
        self._local = LocalAdmin(node_id, metadata, logs)
        self._inflight_lock = threading.Lock()
        self._inflight: set[str] = set()
        self.dynamic_configs = dynamic_configs or DynamicConfigAdmin(
            zk,
            node_id=node_id,
            log_defaults=self._log_defaults,
            static_other={
                "num.partitions": (str(default_num_partitions), ConfigType.INT),
                "default.replication.factor": (str(default_replication_factor), ConfigType.INT),
            },
        )

    # -- helpers ----------------------------------------------------------------------------

    def _wait_until(self, done: Callable[[], bool], deadline_ms: int) -> bool:
        while True:
            if done():
                return True
            if self._clock.monotonic_ms() >= deadline_ms:
                return False
            self._pause.wait(self._poll_s)

    def _deadline(self, timeout_ms: int, default_ms: int = 0) -> int:
        wait = timeout_ms if timeout_ms > 0 else default_ms
        return self._clock.monotonic_ms() + wait

    def _children(self, path: str) -> list[str]:
        try:
            return sorted(self._zk.get_children(path))
        except NoNodeError:
            return []

    def _brokers(self) -> list[tuple[int, str | None]]:
        """Registered brokers as ``(id, rack)``."""
        out = []
        for child in self._children(BrokerIdsZNode.path):
            try:
                node_id = int(child)
                data, _ = self._zk.get(BrokerIdZNode.path(node_id))
                out.append((node_id, BrokerIdZNode.decode(node_id, data).rack))
            except (ValueError, NoNodeError):
                continue
        return sorted(out)

    def _assignment(self, topic: str) -> TopicAssignment | None:
        try:
            data, _ = self._zk.get(TopicZNode.path(topic))
        except NoNodeError:
            return None
        return TopicZNode.decode(topic, data)

    def _state(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        try:
            data, stat = self._zk.get(TopicPartitionStateZNode.path(tp))
        except NoNodeError:
            return None
        return TopicPartitionStateZNode.decode(data, int(stat.version))

    def _topic_config(self, topic: str) -> tuple[dict[str, str], int | None]:
        """The overrides and the znode's version (``None``: no znode)."""
        try:
            data, stat = self._zk.get(ConfigEntityZNode.path(topic))
        except NoNodeError:
            return {}, None
        return ConfigEntityZNode.decode(data), int(stat.version)

    def _exists(self, path: str) -> bool:
        return self._zk.exists(path) is not None

    def _topic_exists(self, name: str) -> bool:
        return _could_be_topic(name) and self._exists(TopicZNode.path(name))

    def _wait_for_leaders(self, topic: str, partitions: Sequence[int], deadline_ms: int) -> bool:
        """Wait until every one of ``partitions`` has a leader. A partition seen led is not read
        again (a new partition's first leader is not taken back before it is noticed), so a
        wait on many partitions reads each state about once, not once per poll."""
        pending = list(partitions)

        def done() -> bool:
            nonlocal pending
            for i, p in enumerate(pending):
                state = self._state(TopicPartition(topic, p))
                if state is None or state.leader == NO_LEADER:
                    pending = pending[i:]  # the ones before are led: do not read them again
                    return False
            pending = []
            return True

        return self._wait_until(done, deadline_ms)

    def _hand_off(self, path: str, data: bytes, deadline_ms: int) -> int | None:
        """Create the hand-off znode ``path`` once no other is pending; returns its czxid, or
        ``None`` if another stayed pending until the deadline."""
        while True:
            try:
                _, stat = self._zk.create(path, data, include_data=True, makepath=True)
                return int(stat.czxid)
            except NodeExistsError:
                if not self._wait_until(lambda: not self._exists(path), deadline_ms):
                    return None

    def _consumed(self, path: str, czxid: int) -> bool:
        stat = self._zk.exists(path)
        return stat is None or int(stat.czxid) != czxid

    # -- topics -----------------------------------------------------------------------------

    def create_topics(
        self, topics: Sequence[NewTopicSpec], *, validate_only: bool = False, timeout_ms: int = 0
    ) -> list[CreatableTopicResult]:
        """Validate, assign replicas (rack-aware) and write each topic; then wait up to
        ``timeout_ms`` for every partition to have a leader (REQUEST_TIMED_OUT otherwise; the
        topic exists anyway). One result per distinct name, in the order asked; a successful
        one carries the topic's id (empty with ``validate_only``), partition count,
        replication factor and configs."""
        names = [t.name for t in topics]
        existing = set(self._children(TopicsZNode.path))
        existing |= set(self._children(DeleteTopicsZNode.path))
        brokers = self._brokers()
        dynamic_default, dynamic_own = self.dynamic_configs.broker_configs()
        results: dict[str, CreatableTopicResult] = {}
        created: dict[str, list[int]] = {}
        try:
            check_partitions_per_request(sum(self._requested(t) for t in topics))
        except OdradekError as e:
            return [CreatableTopicResult(n, *_error(e)) for n in dict.fromkeys(names)]
        for topic in topics:
            if topic.name in results:
                continue
            try:
                if names.count(topic.name) > 1:
                    raise InvalidRequestError(f"Topic {topic.name!r} appears more than once.")
                if topic.name == CLUSTER_METADATA_TOPIC:
                    raise InvalidRequestError(
                        f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited."
                    )
                assignment, config = self._validate_new_topic(topic, brokers, existing)
                topic_id = ""
                if not validate_only:
                    topic_id = self._write_new_topic(topic.name, assignment, config)
                    created[topic.name] = sorted(assignment)
                    existing.add(topic.name)
                results[topic.name] = CreatableTopicResult(
                    topic.name,
                    topic_id=topic_id,
                    num_partitions=len(assignment),
                    replication_factor=len(assignment[0]) if assignment else -1,
                    configs=describe_topic_configs(
                        config,
                        self._log_defaults,
                        include_synonyms=False,
                        dynamic_broker=dynamic_own,
                        dynamic_default=dynamic_default,
                    ),
                )
            except OdradekError as e:
                results[topic.name] = CreatableTopicResult(topic.name, *_error(e))
        if created and timeout_ms > 0:
            deadline = self._deadline(timeout_ms)
            for name, partitions in created.items():
                if not self._wait_for_leaders(name, partitions, deadline):
                    results[name] = dataclasses.replace(
                        results[name],
                        error_code=RequestTimedOutError.code,
                        error_message=(
                            "the topic was created but not every partition has a leader yet"
                        ),
                    )
        return [results[n] for n in dict.fromkeys(names)]

    def _requested(self, topic: NewTopicSpec) -> int:
        """How many partitions a CreateTopics entry asks for (Kafka's count for its cap)."""
        if topic.assignments:
            return len(topic.assignments)
        if topic.num_partitions == -1:
            return self._default_num_partitions
        return max(0, topic.num_partitions)

    def _validate_new_topic(
        self,
        topic: NewTopicSpec,
        brokers: Sequence[tuple[int, str | None]],
        existing: Collection[str],
    ) -> tuple[dict[int, list[int]], dict[str, str]]:
        validate_topic_name(topic.name)
        if topic.name in existing:
            raise TopicAlreadyExistsError(f"Topic '{topic.name}' already exists.")
        for other in existing:
            if has_collision(topic.name, other):
                raise InvalidTopicError(
                    f"Topic '{topic.name}' collides with existing topic: {other}"
                )
        config = dict(topic.configs)
        LogConfig.from_kafka(config)
        broker_ids = [b for b, _ in brokers]
        if topic.assignments:
            if topic.num_partitions != -1 or topic.replication_factor != -1:
                raise InvalidRequestError(
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time."
                )
            assignment = validate_replica_assignment(
                [(p, list(r)) for p, r in topic.assignments], broker_ids
            )
            self._check_size(topic.name, assignment)
            return assignment, config
        n = topic.num_partitions if topic.num_partitions != -1 else self._default_num_partitions
        rf = (
            topic.replication_factor
            if topic.replication_factor != -1
            else self._default_replication_factor
        )
        if n <= 0:
            raise InvalidPartitionsError("Number of partitions must be larger than 0.")
        if rf <= 0:
            raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
        if rf > len(brokers):
            raise InvalidReplicationFactorError(
                f"Replication factor: {rf} larger than available brokers: {len(brokers)}."
            )
        assignment = assign_replicas(n, rf, brokers)
        self._check_size(topic.name, assignment)
        return assignment, config

    @staticmethod
    def _check_size(topic: str, assignment: Mapping[int, Sequence[int]]) -> None:
        encoded = TopicZNode.encode(
            TopicAssignment(
                partitions={p: tuple(r) for p, r in assignment.items()}, topic_id=new_topic_id()
            )
        )
        check_topic_znode_size(topic, encoded, len(assignment))

    def _write_new_topic(
        self, topic: str, assignment: Mapping[int, Sequence[int]], config: Mapping[str, str]
    ) -> str:
        """Config then assignment, in one multi (the assignment is what the controller sees).
        Returns the new topic's id."""
        self._zk.ensure_path(ConfigEntityTypeZNode.path)
        self._zk.ensure_path(TopicsZNode.path)
        topic_id = new_topic_id()
        topic_data = TopicZNode.encode(
            TopicAssignment(
                partitions={p: tuple(r) for p, r in assignment.items()}, topic_id=topic_id
            )
        )
        config_data = ConfigEntityZNode.encode(config)
        config_path = ConfigEntityZNode.path(topic)
        for _ in range(5):
            _, version = self._topic_config(topic)
            txn = self._zk.transaction()
            if version is None:
                txn.create(config_path, config_data)
            else:
                txn.set_data(config_path, config_data, version)
            txn.create(TopicZNode.path(topic), topic_data)
            results = txn.commit()
            if not any(isinstance(r, Exception) for r in results):
                return topic_id
            if isinstance(results[1], NodeExistsError):
                raise TopicAlreadyExistsError(f"Topic '{topic}' already exists.")
        raise UnknownServerError(f"could not write topic {topic!r}: concurrent config writes")

    def delete_topics(self, names: Sequence[str], *, timeout_ms: int = 0) -> list[TopicResult]:
        """Mark each topic for deletion; wait up to ``timeout_ms`` for the controller to have
        removed it (REQUEST_TIMED_OUT otherwise: the deletion carries on)."""
        results: dict[str, TopicResult] = {}
        pending = []
        for name in names:
            if name in results:
                continue
            if names.count(name) > 1:
                results[name] = TopicResult(
                    name, InvalidRequestError.code, f"Topic {name!r} appears more than once."
                )
            elif not self._topic_exists(name):
                results[name] = TopicResult(
                    name, UnknownTopicOrPartitionError.code, f"Topic {name!r} does not exist."
                )
            else:
                results[name] = TopicResult(name)
                try:
                    self._zk.create(DeleteTopicsTopicZNode.path(name), b"", makepath=True)
                except NodeExistsError:
                    pass
                pending.append(name)
        if pending and timeout_ms > 0:
            deadline = self._deadline(timeout_ms)
            for name in pending:
                path = TopicZNode.path(name)
                if not self._wait_until(lambda path=path: not self._exists(path), deadline):  # type: ignore[misc]
                    results[name] = TopicResult(
                        name, RequestTimedOutError.code, "the topic is marked for deletion"
                    )
        return [results[n] for n in dict.fromkeys(names)]

    def auto_create_topics(self, names: Iterable[str]) -> dict[str, int]:
        """Metadata's ``auto.create.topics.enable`` (Kafka's ``AutoTopicCreationManager`` in
        ZooKeeper mode): create each topic with the node's ``num.partitions`` and
        ``default.replication.factor``, without waiting. Per name an error code:
        LEADER_NOT_AVAILABLE (5) for a topic created now or already existing (its leaders are
        not known yet), INVALID_TOPIC_EXCEPTION (17) for a bad name, UNKNOWN_TOPIC_OR_PARTITION
        (3) for a topic this node is creating already, else create_topics' error (e.g.
        INVALID_REPLICATION_FACTOR, 38). An internal topic (``__consumer_offsets``,
        ``__transaction_state``) is left to its coordinator, which creates it with its own
        settings (the group coordinator on FindCoordinator): UNKNOWN_TOPIC_OR_PARTITION until
        then (Kafka creates it here with the coordinator's settings). Thread-safe."""
        out: dict[str, int] = {}
        mine: list[str] = []
        for name in dict.fromkeys(names):
            try:
                validate_topic_name(name)
            except InvalidTopicError:
                out[name] = InvalidTopicError.code
                continue
            if name in INTERNAL_TOPICS:
                out[name] = UnknownTopicOrPartitionError.code
                continue
            with self._inflight_lock:
                if name in self._inflight:
                    out[name] = UnknownTopicOrPartitionError.code
                    continue
                self._inflight.add(name)
            mine.append(name)
        try:
            if mine:
                for result in self.create_topics([NewTopicSpec(n) for n in mine], timeout_ms=0):
                    code = result.error_code
                    if code in (0, TopicAlreadyExistsError.code, RequestTimedOutError.code):
                        code = LeaderNotAvailableError.code
                    else:
                        _log.info("auto-creating %s failed: %s", result.name, result.error_message)
                    out[result.name] = code
        finally:
            with self._inflight_lock:
                self._inflight.difference_update(mine)
        return out

    # -- configs ----------------------------------------------------------------------------

    def describe_configs(
        self, resources: Sequence[DescribeConfigsResource], *, include_synonyms: bool = False
    ) -> list[DescribeConfigsResult]:
        """Per resource, its configs. A topic: every topic config with its value and source
        (its override, the node's ``server.properties``, or the built-in default),
        UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist. A broker (this node's id,
        or ``""`` for the cluster default) or a group: :mod:`node.admin.dynamic_config_admin`.
        BROKER_LOGGER: INVALID_REQUEST (not supported)."""
        out = []
        for item in resources:
            resource = item.resource
            keys = item.configuration_keys
            try:
                if resource.resource_type is ConfigResourceType.TOPIC:
                    validate_topic_name(resource.resource_name)  # Kafka's Topic.validate
                    if not self._topic_exists(resource.resource_name):
                        raise UnknownTopicOrPartitionError(
                            f"Topic {resource.resource_name!r} does not exist."
                        )
                    overrides, _ = self._topic_config(resource.resource_name)
                    default, own = self.dynamic_configs.broker_configs()
                    configs = describe_topic_configs(
                        overrides,
                        self._log_defaults,
                        keys,
                        include_synonyms=include_synonyms,
                        dynamic_broker=own,
                        dynamic_default=default,
                    )
                elif resource.resource_type in _DYNAMIC_RESOURCES:
                    configs = self.dynamic_configs.describe(resource, keys, include_synonyms)
                else:
                    raise InvalidRequestError(
                        f"DescribeConfigs is not supported for {resource.resource_type.name}"
                    )
                out.append(DescribeConfigsResult(resource, configs=configs))
            except OdradekError as e:
                out.append(DescribeConfigsResult(resource, *_error(e)))
        return out

    def alter_configs(
        self, resources: Sequence[AlterConfigsResource], *, validate_only: bool = False
    ) -> list[AlterConfigsResult]:
        """Kafka's legacy AlterConfigs: each topic's overrides become exactly ``configs``
        (validated as a whole). A resource named twice is INVALID_REQUEST (both); a broker or
        a group: :mod:`node.admin.dynamic_config_admin`."""
        out = []
        for item in resources:
            resource = item.resource
            try:
                self._check_once(resource, [r.resource for r in resources])
                if resource.resource_type in _DYNAMIC_RESOURCES:
                    self.dynamic_configs.alter(resource, item.configs, validate_only)
                    out.append(AlterConfigsResult(resource))
                    continue
                self._check_topic_resource(resource)
                overrides = dict(item.configs)
                self._write_config(resource.resource_name, lambda _, o=overrides: o, validate_only)  # type: ignore[misc]
                out.append(AlterConfigsResult(resource))
            except OdradekError as e:
                out.append(AlterConfigsResult(resource, *_error(e)))
        return out

    def incremental_alter_configs(
        self, resources: Sequence[IncrementalAlterConfigsResource], *, validate_only: bool = False
    ) -> list[AlterConfigsResult]:
        """Kafka's IncrementalAlterConfigs: per topic, SET / DELETE / APPEND / SUBTRACT on its
        overrides (:func:`node.admin.config_ops.apply_incremental_ops`), validated as a whole,
        written conditionally on the version read. INVALID_REQUEST for a resource named twice,
        a config named twice or a value missing; INVALID_CONFIG for an unknown name, a list
        operation on a config that is no list, or an invalid result."""
        known = topic_config_names()
        defaults = self._log_defaults.to_kafka()
        out = []
        for item in resources:
            resource = item.resource
            try:
                self._check_once(resource, [r.resource for r in resources])
                check_incremental_ops(item.ops)
                if resource.resource_type in _DYNAMIC_RESOURCES:
                    self.dynamic_configs.incremental_alter(resource, item.ops, validate_only)
                    out.append(AlterConfigsResult(resource))
                    continue
                self._check_topic_resource(resource)
                ops = item.ops
                self._write_config(
                    resource.resource_name,
                    lambda current, ops=ops: apply_incremental_ops(current, ops, defaults, known),  # type: ignore[misc]
                    validate_only,
                )
                out.append(AlterConfigsResult(resource))
            except OdradekError as e:
                out.append(AlterConfigsResult(resource, *_error(e)))
        return out

    @staticmethod
    def _check_once(resource: ConfigResource, all_resources: Sequence[ConfigResource]) -> None:
        if all_resources.count(resource) > 1:
            raise InvalidRequestError("Each resource must appear at most once.")

    def _check_topic_resource(self, resource: ConfigResource) -> None:
        if resource.resource_type is not ConfigResourceType.TOPIC:
            raise InvalidRequestError(
                "AlterConfigs is only supported for topics and brokers, but resource type is "
                f"{resource.resource_type.name}"
            )
        if not resource.resource_name:
            raise InvalidRequestError("Default topic resources are not allowed.")
        validate_topic_name(resource.resource_name)  # Kafka's Topic.validate
        if not self._topic_exists(resource.resource_name):
            raise UnknownTopicOrPartitionError(f"Topic {resource.resource_name!r} does not exist.")

    def _write_config(
        self,
        topic: str,
        change: Callable[[dict[str, str]], dict[str, str]],
        validate_only: bool,
    ) -> None:
        """Read the overrides, ``change`` them, validate, and (unless ``validate_only``) write
        them with a ``/config/changes`` notification, conditionally on the version read."""
        self._zk.ensure_path(ConfigEntityChangeNotificationZNode.path)
        path = ConfigEntityZNode.path(topic)
        for _ in range(10):
            current, version = self._topic_config(topic)
            new = change(dict(current))
            LogConfig.from_kafka(new)
            if validate_only:
                return
            txn = self._zk.transaction()
            if version is None:
                txn.create(path, ConfigEntityZNode.encode(new))
            else:
                txn.set_data(path, ConfigEntityZNode.encode(new), version)
            txn.create(
                ConfigEntityChangeNotificationSequenceZNode.path_prefix(),
                ConfigEntityChangeNotificationSequenceZNode.encode(topic),
                sequence=True,
            )
            results = txn.commit()
            if not any(isinstance(r, Exception) for r in results):
                return
            if not isinstance(results[0], (BadVersionError, NodeExistsError)):
                raise UnknownServerError(f"could not write the config of {topic!r}: {results}")
        raise UnknownServerError(f"could not write the config of {topic!r}: too many races")

    # -- leaders ----------------------------------------------------------------------------

    def elect_leaders(
        self,
        election_type: ElectionType,
        partitions: Sequence[tuple[str, int]] | None,
        *,
        timeout_ms: int = 0,
    ) -> ElectLeadersResult:
        """Preferred: the first assigned replica, if live and in the ISR, takes over
        (ELECTION_NOT_NEEDED if it leads, PREFERRED_LEADER_NOT_AVAILABLE if it cannot).
        Unclean: a leaderless partition gets any live replica (ELECTION_NOT_NEEDED if it has a
        leader, ELIGIBLE_LEADERS_NOT_AVAILABLE if no replica is live). ``partitions`` ``None``
        (or empty) means every partition; the answer holds every partition's result
        (:meth:`ElectLeadersResult.needed` drops ELECTION_NOT_NEEDED, as Kafka does for
        ``None``)."""
        unclean = election_type is ElectionType.UNCLEAN
        deadline = self._deadline(timeout_ms, DEFAULT_CONTROLLER_WAIT_MS)
        if partitions:
            wanted = list(dict.fromkeys(TopicPartition(t, p) for t, p in partitions))
        else:
            wanted = []
            for topic in self._children(TopicsZNode.path):
                assignment = self._assignment(topic)
                if assignment is not None:
                    wanted.extend(TopicPartition(topic, p) for p in sorted(assignment.partitions))
        live = {b for b, _ in self._brokers()}
        deleting = set(self._children(DeleteTopicsZNode.path))
        assignments: dict[str, TopicAssignment | None] = {}
        errors: dict[TopicPartition, OdradekError | None] = {}
        candidates: dict[TopicPartition, tuple[int, ...]] = {}
        for tp in wanted:
            if tp.topic not in assignments:
                assignments[tp.topic] = (
                    None
                    if tp.topic in deleting or not _could_be_topic(tp.topic)
                    else self._assignment(tp.topic)
                )
            assignment = assignments[tp.topic]
            replicas = assignment.partitions.get(tp.partition) if assignment else None
            if not replicas:
                errors[tp] = UnknownTopicOrPartitionError(f"{tp} does not exist")
                continue
            state = self._state(tp)
            isr = state.isr if state is not None else ()
            leader = state.leader if state is not None else NO_LEADER
            if unclean:
                if leader != NO_LEADER and leader in live:
                    errors[tp] = ElectionNotNeededError(f"{tp} has a leader ({leader})")
                elif state is None or offline_leader(replicas, isr, live, True) is None:
                    errors[tp] = EligibleLeadersNotAvailableError(f"no live replica of {tp}")
                else:
                    candidates[tp] = replicas
            elif leader == replicas[0]:
                errors[tp] = ElectionNotNeededError(f"{tp} is led by its preferred replica")
            elif state is None or preferred_leader(replicas, isr, live) is None:
                errors[tp] = PreferredLeaderNotAvailableError(
                    f"the preferred replica {replicas[0]} of {tp} is not live or not in the ISR"
                )
            else:
                candidates[tp] = replicas
        if candidates:
            self._run_election(candidates, unclean, deadline, errors)
        return ElectLeadersResult(
            partitions=tuple(self._partition_result(tp, errors.get(tp)) for tp in wanted)
        )

    @staticmethod
    def _partition_result(tp: TopicPartition, error: OdradekError | None) -> PartitionResult:
        if error is None:
            return PartitionResult(tp.topic, tp.partition)
        return PartitionResult(tp.topic, tp.partition, *_error(error))

    def _run_election(
        self,
        candidates: Mapping[TopicPartition, tuple[int, ...]],
        unclean: bool,
        deadline_ms: int,
        errors: dict[TopicPartition, OdradekError | None],
    ) -> None:
        if unclean:
            path = UncleanLeaderElectionZNode.path
            data = UncleanLeaderElectionZNode.encode(candidates)
        else:
            path = PreferredReplicaElectionZNode.path
            data = PreferredReplicaElectionZNode.encode(candidates)

        def elected(tp: TopicPartition) -> bool:
            state = self._state(tp)
            if state is None:
                return False
            return state.leader != NO_LEADER if unclean else state.leader == candidates[tp][0]

        czxid = self._hand_off(path, data, deadline_ms)
        consumed = czxid is not None and self._wait_until(
            lambda: self._consumed(path, czxid), deadline_ms
        )
        for tp in candidates:
            if elected(tp):
                continue
            if not consumed:
                errors[tp] = RequestTimedOutError("the controller has not acted on the election")
            elif unclean:
                errors[tp] = EligibleLeadersNotAvailableError(
                    f"no replica of {tp} could be elected"
                )
            else:
                errors[tp] = PreferredLeaderNotAvailableError(
                    f"the preferred replica of {tp} could not be elected"
                )

    # -- reassignments ----------------------------------------------------------------------

    def alter_partition_reassignments(
        self, partitions: Sequence[ReassignablePartition], *, timeout_ms: int = 0
    ) -> AlterPartitionReassignmentsResult:
        """Start (or, with ``replicas`` ``None``, revert) reassignments; answers once the
        controller has taken them up, not when they complete (list_partition_reassignments
        shows progress). One result per distinct partition, in the order asked."""
        deadline = self._deadline(timeout_ms, DEFAULT_CONTROLLER_WAIT_MS)
        live = {b for b, _ in self._brokers()}
        deleting = set(self._children(DeleteTopicsZNode.path))
        keys = [TopicPartition(p.topic, p.partition) for p in partitions]
        errors: dict[TopicPartition, OdradekError | None] = {}
        entries: dict[TopicPartition, tuple[int, ...] | None] = {}
        for p, tp in zip(partitions, keys, strict=True):
            try:
                if keys.count(tp) > 1:
                    raise InvalidRequestError(f"{tp} appears more than once")
                valid_name = _could_be_topic(tp.topic) and tp.topic not in deleting
                assignment = self._assignment(tp.topic) if valid_name else None
                if assignment is None or tp.partition not in assignment.partitions:
                    raise UnknownTopicOrPartitionError(f"{tp} does not exist")
                current = _replica_assignment(assignment, tp.partition)
                if p.replicas is None:
                    if not current.is_being_reassigned:
                        raise NoReassignmentInProgressError(f"no reassignment of {tp} to cancel")
                    entries[tp] = None
                else:
                    validate_target_replicas(list(p.replicas), live)
                    entries[tp] = tuple(p.replicas)
            except OdradekError as e:
                errors[tp] = e
        if entries:
            czxid = self._hand_off(
                ReassignPartitionsZNode.path, ReassignPartitionsZNode.encode(entries), deadline
            )
            consumed = czxid is not None and self._wait_until(
                lambda: self._consumed(ReassignPartitionsZNode.path, czxid), deadline
            )
            for tp, target in entries.items():
                if not consumed:
                    errors[tp] = RequestTimedOutError("the controller has not taken it up")
                elif target is not None and not self._reflects(tp, target):
                    errors[tp] = UnknownServerError(
                        f"the controller did not start the reassignment of {tp} (see its log)"
                    )
        return AlterPartitionReassignmentsResult(
            partitions=tuple(
                self._partition_result(tp, errors.get(tp)) for tp in dict.fromkeys(keys)
            )
        )

    def _reflects(self, tp: TopicPartition, target: Sequence[int]) -> bool:
        """Whether the topic znode shows ``target`` as the reassignment's (or the finished)
        replica list."""
        assignment = self._assignment(tp.topic)
        if assignment is None or tp.partition not in assignment.partitions:
            return False
        return _replica_assignment(assignment, tp.partition).target_replicas == tuple(target)

    def list_partition_reassignments(
        self, partitions: Collection[tuple[str, int]] | None = None
    ) -> ListPartitionReassignmentsResult:
        """Ongoing reassignments (of ``partitions``, or all when ``None`` or empty): the full
        replica set with the replicas being added and removed."""
        wanted = {TopicPartition(t, p) for t, p in partitions or ()}
        topics = sorted({tp.topic for tp in wanted}) if wanted else self._children(TopicsZNode.path)
        out = []
        for topic in topics:
            assignment = self._assignment(topic) if _could_be_topic(topic) else None
            if assignment is None:
                continue
            for p in sorted(assignment.partitions):
                adding = tuple(assignment.adding_replicas.get(p, ()))
                removing = tuple(assignment.removing_replicas.get(p, ()))
                if not (adding or removing) or (wanted and TopicPartition(topic, p) not in wanted):
                    continue
                out.append(
                    OngoingReassignment(topic, p, tuple(assignment.partitions[p]), adding, removing)
                )
        return ListPartitionReassignmentsResult(reassignments=tuple(out))

    # -- partitions -------------------------------------------------------------------------

    def create_partitions(
        self,
        topics: Sequence[CreatePartitionsTopic],
        *,
        validate_only: bool = False,
        timeout_ms: int = 0,
    ) -> list[TopicResult]:
        """Raise each topic's partition count (Kafka's rules:
        :mod:`controller.partition_creation`); then wait up to ``timeout_ms`` for every new
        partition to have a leader (REQUEST_TIMED_OUT otherwise; the partitions exist anyway).
        A topic being deleted is INVALID_TOPIC_EXCEPTION, an unknown one
        UNKNOWN_TOPIC_OR_PARTITION, a topic named twice INVALID_REQUEST."""
        names = [t.name for t in topics]
        deleting = set(self._children(DeleteTopicsZNode.path))
        brokers = self._brokers()
        results: dict[str, TopicResult] = {}
        added: dict[str, list[int]] = {}
        planned = 0
        for item in topics:
            if item.name in results:
                continue
            try:
                if names.count(item.name) > 1:
                    raise InvalidRequestError(
                        f"Duplicate topic in request: {item.name!r} appears more than once."
                    )
                if not _could_be_topic(item.name):
                    raise UnknownTopicOrPartitionError(f"Topic {item.name!r} does not exist.")
                if item.name in deleting:
                    raise InvalidTopicError(f"The topic '{item.name}' is queued for deletion.")
                explicit = [list(a) for a in item.assignments or ()]
                new = self._add_partitions(
                    item.name, item.count, brokers, explicit, validate_only, planned
                )
                planned += len(new)
                if not validate_only:
                    added[item.name] = sorted(new)
                results[item.name] = TopicResult(item.name)
            except OdradekError as e:
                results[item.name] = TopicResult(item.name, *_error(e))
        if added and timeout_ms > 0:
            deadline = self._deadline(timeout_ms)
            for name, new_partitions in added.items():
                if not self._wait_for_leaders(name, new_partitions, deadline):
                    results[name] = TopicResult(
                        name,
                        RequestTimedOutError.code,
                        "the partitions were created but not every new one has a leader yet",
                    )
        return [results[n] for n in dict.fromkeys(names)]

    def _add_partitions(
        self,
        topic: str,
        count: int,
        brokers: Sequence[tuple[int, str | None]],
        explicit: Sequence[Sequence[int]],
        validate_only: bool,
        planned: int = 0,
    ) -> dict[int, list[int]]:
        """Plan the new partitions and (unless ``validate_only``) write them with a set
        conditional on the version read, re-planning if another writer came between.
        ``planned`` partitions are already being added by this request (its cap counts them).
        """
        for _ in range(10):
            try:
                data, stat = self._zk.get(TopicZNode.path(topic))
            except NoNodeError:
                raise UnknownTopicOrPartitionError(f"Topic '{topic}' does not exist.") from None
            current = TopicZNode.decode(topic, data)
            if current.adding_replicas or current.removing_replicas:
                # the controller rewrites the topic znode as the reassignment moves on
                raise ReassignmentInProgressError("A partition reassignment is in progress.")
            new = plan_new_partitions(topic, current.partitions, count, brokers, explicit)
            check_partitions_per_request(planned + len(new))
            grown = dataclasses.replace(
                current,
                partitions={**current.partitions, **{p: tuple(r) for p, r in new.items()}},
            )
            encoded = TopicZNode.encode(grown)
            check_topic_znode_size(topic, encoded, len(grown.partitions))
            if validate_only:
                return new
            try:
                self._zk.set(TopicZNode.path(topic), encoded, int(stat.version))
            except BadVersionError:
                continue
            except NoNodeError:
                raise UnknownTopicOrPartitionError(f"Topic '{topic}' does not exist.") from None
            _log.info("topic %s: partitions %s added", topic, sorted(new))
            return new
        raise UnknownServerError(f"could not add partitions to {topic!r}: too many races")

    # -- ACLs and SCRAM credentials (node.admin.security_admin) ------------------------------

    def create_acls(self, creations: Sequence[AclBinding | InvalidAcl]) -> list[AclCreationResult]:
        """See :meth:`SecurityAdmin.create_acls`."""
        return self._security.create_acls(creations)

    def describe_acls(self, acl_filter: AclBindingFilter | InvalidAcl) -> DescribeAclsResult:
        """See :meth:`SecurityAdmin.describe_acls`."""
        return self._security.describe_acls(acl_filter)

    def delete_acls(
        self, filters: Sequence[AclBindingFilter | InvalidAcl]
    ) -> list[DeleteAclsFilterResult]:
        """See :meth:`SecurityAdmin.delete_acls`."""
        return self._security.delete_acls(filters)

    def describe_user_scram_credentials(
        self, users: Sequence[str] | None = None
    ) -> DescribeUserScramCredentialsResponse:
        """See :meth:`SecurityAdmin.describe_user_scram_credentials`."""
        return self._security.describe_user_scram_credentials(users)

    def alter_user_scram_credentials(
        self,
        deletions: Sequence[ScramCredentialDeletion],
        upsertions: Sequence[ScramCredentialUpsertion],
    ) -> list[AlterUserScramCredentialsResult]:
        """See :meth:`SecurityAdmin.alter_user_scram_credentials`."""
        return self._security.alter_user_scram_credentials(deletions, upsertions)

    # -- this node (node.admin.local_admin) -------------------------------------------------

    def describe_cluster(self, listener_name: str | None = None) -> DescribeClusterResult:
        """See :meth:`LocalAdmin.describe_cluster`."""
        return self._local.describe_cluster(listener_name)

    def describe_log_dirs(
        self, partitions: Collection[tuple[str, int]] | None = None
    ) -> DescribeLogDirsResult:
        """See :meth:`LocalAdmin.describe_log_dirs`."""
        return self._local.describe_log_dirs(partitions)

    def describe_producers(self, partitions: Sequence[tuple[str, int]]) -> list[PartitionProducers]:
        """See :meth:`LocalAdmin.describe_producers`."""
        return self._local.describe_producers(partitions)


def _replica_assignment(assignment: TopicAssignment, partition: int) -> ReplicaAssignment:
    return ReplicaAssignment(
        replicas=assignment.partitions[partition],
        adding_replicas=tuple(assignment.adding_replicas.get(partition, ())),
        removing_replicas=tuple(assignment.removing_replicas.get(partition, ())),
    )


def _could_be_topic(name: str) -> bool:
    """Whether ``name`` is a legal topic name (Kafka's ``Topic.validate``). Only such a name
    becomes part of a znode path: any other ("", ".", "..", a slash) names no topic, and
    would make a path ZooKeeper refuses."""
    try:
        validate_topic_name(name)
    except InvalidTopicError:
        return False
    return True
