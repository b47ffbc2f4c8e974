"""The Admin gRPC service, served by every node (Kafka's ZooKeeper-era ``AdminZkClient`` and
``ZkAdminManager``).

Administration is a conversation through ZooKeeper: the node validates a request, writes what
it asks for into the znodes the active controller watches, and waits (up to the request's
timeout) until ZooKeeper shows the outcome.

- CreateTopics writes ``/config/topics/<t>`` and ``/brokers/topics/<t>``, then waits for
  every partition to have a leader;
- DeleteTopics writes ``/admin/delete_topics/<t>`` and waits for the topic znode to go;
- AlterConfigs writes ``/config/topics/<t>`` and a ``/config/changes`` notification;
- ElectLeaders writes ``/admin/preferred_replica_election`` (or odradek's
  ``/admin/unclean_leader_election``), waits for the controller to consume it, then reads
  the leaders;
- AlterPartitionReassignments writes ``/admin/reassign_partitions`` and waits for the
  controller to consume it;
- CreatePartitions writes the grown partition map into ``/brokers/topics/<t>`` (a conditional
  set) and waits for every new partition to have a leader;
- DescribeConfigs and ListPartitionReassignments only read.

A hand-off znode that already exists (another node's request in flight) is waited out first.
``timeout_ms <= 0`` means "do not wait" for CreateTopics and DeleteTopics (as in Kafka); for
ElectLeaders and AlterPartitionReassignments, whose answer needs the controller, it means the
default of 30 s.

Errors are Kafka's, per topic or partition: INVALID_TOPIC_EXCEPTION (17), TOPIC_ALREADY_EXISTS
(36), INVALID_PARTITIONS (37), INVALID_REPLICATION_FACTOR (38), INVALID_REPLICA_ASSIGNMENT (39),
INVALID_CONFIG (40), INVALID_REQUEST (42), POLICY_VIOLATION (44: more than 10,000 new
partitions in one request, or a topic too large for its znode; see
:mod:`controller.partition_creation`), UNKNOWN_TOPIC_OR_PARTITION (3), REQUEST_TIMED_OUT
(7), ELECTION_NOT_NEEDED (84), PREFERRED_LEADER_NOT_AVAILABLE (80),
ELIGIBLE_LEADERS_NOT_AVAILABLE (83), NO_REASSIGNMENT_IN_PROGRESS (85), REASSIGNMENT_IN_PROGRESS
(60: CreatePartitions on a topic being reassigned, as Kafka's ZooKeeper mode refuses it).

Thread-safety: the servicer keeps no mutable state; every method is thread-safe.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence

import grpc
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
from odradek.clock import Clock
from odradek.errors import (
    ElectionNotNeededError,
    EligibleLeadersNotAvailableError,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    NoReassignmentInProgressError,
    OdradekError,
    PreferredLeaderNotAvailableError,
    ReassignmentInProgressError,
    RequestTimedOutError,
    TopicAlreadyExistsError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from storage.config import LogConfig
from storage.log_manager import validate_topic_name

__all__ = ["AdminServicer", "validate_replica_assignment", "has_collision"]

_log = logging.getLogger(__name__)

DEFAULT_CONTROLLER_WAIT_MS = 30_000


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


class AdminServicer(pb_grpc.AdminServicer):
    """Serves the Admin service from one node's ZooKeeper client."""

    def __init__(
        self,
        zk: KazooClient,
        clock: Clock,
        *,
        default_num_partitions: int = 1,
        default_replication_factor: int = 1,
        log_defaults: LogConfig | None = None,
        poll_interval_ms: int = 20,
    ) -> None:
        """``default_*`` apply when a CreateTopics request gives -1 (Kafka's
        ``num.partitions`` and ``default.replication.factor``); ``log_defaults`` are the
        broker's topic config defaults (Kafka's ``log.*`` and ``min.insync.replicas``
        properties; ``LogConfig()`` when not given), which DescribeConfigs reports for every
        config a topic does not override; ``poll_interval_ms`` is how often waits re-read
        ZooKeeper (the deadlines are measured with ``clock``)."""
        self._zk = zk
        self._clock = clock
        self._default_num_partitions = default_num_partitions
        self._default_replication_factor = default_replication_factor
        self._log_defaults = log_defaults if log_defaults is not None else LogConfig()
        self._poll_s = poll_interval_ms / 1000
        self._pause = threading.Event()

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

    def CreateTopics(  # noqa: N802 - gRPC method name
        self, request: pb.CreateTopicsRequest, context: grpc.ServicerContext
    ) -> pb.CreateTopicsResponse:
        """Validate, assign replicas (rack-aware) and write each topic; then wait up to
        ``timeout_ms`` for every partition to have a leader (REQUEST_TIMED_OUT otherwise; the
        topic exists anyway)."""
        names = [t.name for t in request.topics]
        existing = set(self._children(TopicsZNode.path))
        existing |= set(self._children(DeleteTopicsZNode.path))
        brokers = self._brokers()
        results: dict[str, pb.TopicResult] = {}
        created: dict[str, list[int]] = {}
        try:
            check_partitions_per_request(sum(self._requested(t) for t in request.topics))
        except OdradekError as e:
            for name in names:
                results[name] = pb.TopicResult(
                    name=name, error_code=e.code, error_message=e.message
                )
            return pb.CreateTopicsResponse(topics=[results[n] for n in dict.fromkeys(names)])
        for topic in request.topics:
            result = pb.TopicResult(name=topic.name)
            try:
                if names.count(topic.name) > 1:
                    raise InvalidRequestError(f"Topic {topic.name!r} appears more than once.")
                assignment, config = self._validate_new_topic(topic, brokers, existing)
                if not request.validate_only:
                    self._write_new_topic(topic.name, assignment, config)
                    created[topic.name] = sorted(assignment)
                    existing.add(topic.name)
            except OdradekError as e:
                result.error_code = e.code
                result.error_message = e.message
            results.setdefault(topic.name, result)
        if created and request.timeout_ms > 0:
            deadline = self._deadline(request.timeout_ms)
            for name, partitions in created.items():
                led = self._wait_for_leaders(name, partitions, deadline)
                if not led:
                    results[name].error_code = RequestTimedOutError.code
                    results[
                        name
                    ].error_message = (
                        "the topic was created but not every partition has a leader yet"
                    )
        return pb.CreateTopicsResponse(topics=[results[n] for n in dict.fromkeys(names)])

    def _requested(self, topic: pb.CreatableTopic) -> int:
        """How many partitions a CreateTopics entry asks for (Kafka's count for its cap)."""
        if topic.assignments:
            return len(topic.assignments)
        if topic.num_partitions == -1:
            return self._default_num_partitions
        return max(0, topic.num_partitions)

    def _validate_new_topic(
        self,
        topic: pb.CreatableTopic,
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
                [(a.partition, list(a.broker_ids)) for a in topic.assignments], broker_ids
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
    ) -> None:
        """Config then assignment, in one multi (the assignment is what the controller sees)."""
        self._zk.ensure_path(ConfigEntityTypeZNode.path)
        self._zk.ensure_path(TopicsZNode.path)
        topic_data = TopicZNode.encode(
            TopicAssignment(
                partitions={p: tuple(r) for p, r in assignment.items()}, topic_id=new_topic_id()
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
                return
            if isinstance(results[1], NodeExistsError):
                raise TopicAlreadyExistsError(f"Topic '{topic}' already exists.")
        raise UnknownServerError(f"could not write topic {topic!r}: concurrent config writes")

    def DeleteTopics(  # noqa: N802 - gRPC method name
        self, request: pb.DeleteTopicsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteTopicsResponse:
        """Mark each topic for deletion; wait up to ``timeout_ms`` for the controller to have
        removed it (REQUEST_TIMED_OUT otherwise: the deletion carries on)."""
        names = list(request.names)
        results: dict[str, pb.TopicResult] = {}
        pending = []
        for name in names:
            result = pb.TopicResult(name=name)
            results.setdefault(name, result)
            if names.count(name) > 1:
                result.error_code = InvalidRequestError.code
                result.error_message = f"Topic {name!r} appears more than once."
            elif not name or "/" in name or not self._exists(TopicZNode.path(name)):
                result.error_code = UnknownTopicOrPartitionError.code
                result.error_message = f"Topic {name!r} does not exist."
            else:
                try:
                    self._zk.create(DeleteTopicsTopicZNode.path(name), b"", makepath=True)
                except NodeExistsError:
                    pass
                pending.append(name)
        if pending and request.timeout_ms > 0:
            deadline = self._deadline(request.timeout_ms)
            for name in pending:
                gone = self._wait_until(
                    lambda name=name: not self._exists(TopicZNode.path(name)),  # type: ignore[misc]
                    deadline,
                )
                if not gone:
                    results[name].error_code = RequestTimedOutError.code
                    results[name].error_message = "the topic is marked for deletion"
        return pb.DeleteTopicsResponse(topics=[results[n] for n in dict.fromkeys(names)])

    # -- configs ----------------------------------------------------------------------------

    def DescribeConfigs(  # noqa: N802 - gRPC method name
        self, request: pb.DescribeConfigsRequest, context: grpc.ServicerContext
    ) -> pb.DescribeConfigsResponse:
        """Every topic config with its value: the topic's override, or else the broker's
        default (``is_default``), as in effect on the brokers."""
        defaults = self._log_defaults.to_kafka()
        out = []
        for name in request.topics:
            item = pb.TopicConfigs(name=name)
            if not name or "/" in name or not self._exists(TopicZNode.path(name)):
                item.error_code = UnknownTopicOrPartitionError.code
                item.error_message = f"Topic {name!r} does not exist."
                out.append(item)
                continue
            overrides, _ = self._topic_config(name)
            for key in sorted(set(defaults) | set(overrides)):
                item.entries.append(
                    pb.ConfigEntry(
                        name=key,
                        value=overrides.get(key, defaults.get(key, "")),
                        is_default=key not in overrides,
                    )
                )
            out.append(item)
        return pb.DescribeConfigsResponse(topics=out)

    def AlterConfigs(  # noqa: N802 - gRPC method name
        self, request: pb.AlterConfigsRequest, context: grpc.ServicerContext
    ) -> pb.AlterConfigsResponse:
        """Incrementally set and delete topic config overrides, validated as a whole; the
        controller is told through a ``/config/changes`` notification and passes the new
        overrides on in UpdateMetadata."""
        names = [t.name for t in request.topics]
        known = set(LogConfig().to_kafka())
        out = []
        for item in request.topics:
            result = pb.TopicResult(name=item.name)
            try:
                if names.count(item.name) > 1:
                    raise InvalidRequestError(f"Topic {item.name!r} appears more than once.")
                if (
                    not item.name
                    or "/" in item.name
                    or not self._exists(TopicZNode.path(item.name))
                ):
                    raise UnknownTopicOrPartitionError(f"Topic {item.name!r} does not exist.")
                both = sorted(set(item.set) & set(item.delete))
                if both:
                    raise InvalidRequestError(f"configs both set and deleted: {both}")
                unknown = sorted(k for k in item.delete if k not in known)
                if unknown:
                    raise InvalidConfigError(f"unknown topic configs {unknown}")
                self._alter_config(item, request.validate_only)
            except OdradekError as e:
                result.error_code = e.code
                result.error_message = e.message
            out.append(result)
        return pb.AlterConfigsResponse(topics=out)

    def _alter_config(self, item: pb.AlterableTopicConfig, validate_only: bool) -> None:
        self._zk.ensure_path(ConfigEntityChangeNotificationZNode.path)
        path = ConfigEntityZNode.path(item.name)
        for _ in range(10):
            current, version = self._topic_config(item.name)
            new = {**current, **dict(item.set)}
            for key in item.delete:
                new.pop(key, None)
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
                ConfigEntityChangeNotificationSequenceZNode.encode(item.name),
                sequence=True,
            )
            results = txn.commit()
            if not any(isinstance(r, Exception) for r in results):
                return
            if not isinstance(results[0], (BadVersionError, NodeExistsError)):
                raise UnknownServerError(f"could not write the config of {item.name!r}: {results}")
        raise UnknownServerError(f"could not write the config of {item.name!r}: too many races")

    # -- leaders ----------------------------------------------------------------------------

    def ElectLeaders(  # noqa: N802 - gRPC method name
        self, request: pb.ElectLeadersRequest, context: grpc.ServicerContext
    ) -> pb.ElectLeadersResponse:
        """Preferred: the first assigned replica, if live and in the ISR, takes over
        (ELECTION_NOT_NEEDED if it leads, PREFERRED_LEADER_NOT_AVAILABLE if it cannot).
        Unclean: a leaderless partition gets any live replica (ELECTION_NOT_NEEDED if it has a
        leader, ELIGIBLE_LEADERS_NOT_AVAILABLE if no replica is live). An empty partition list
        means every partition."""
        unclean = request.election_type == pb.UNCLEAN
        deadline = self._deadline(request.timeout_ms, DEFAULT_CONTROLLER_WAIT_MS)
        if request.partitions:
            wanted = list(
                dict.fromkeys(TopicPartition(p.topic, p.partition) for p in request.partitions)
            )
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
                assignments[tp.topic] = None if tp.topic in deleting else self._assignment(tp.topic)
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
        results = []
        for tp in wanted:
            result = pb.PartitionResult(topic=tp.topic, partition=tp.partition)
            error = errors.get(tp)
            if error is not None:
                result.error_code = error.code
                result.error_message = error.message
            results.append(result)
        return pb.ElectLeadersResponse(partitions=results)

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

    def AlterPartitionReassignments(  # noqa: N802 - gRPC method name
        self, request: pb.AlterPartitionReassignmentsRequest, context: grpc.ServicerContext
    ) -> pb.AlterPartitionReassignmentsResponse:
        """Start (or, with ``cancel``, revert) reassignments; answers once the controller has
        taken them up, not when they complete (ListPartitionReassignments shows progress)."""
        deadline = self._deadline(request.timeout_ms, DEFAULT_CONTROLLER_WAIT_MS)
        live = {b for b, _ in self._brokers()}
        deleting = set(self._children(DeleteTopicsZNode.path))
        keys = [TopicPartition(p.topic, p.partition) for p in request.partitions]
        errors: dict[TopicPartition, OdradekError | None] = {}
        entries: dict[TopicPartition, tuple[int, ...] | None] = {}
        for p, tp in zip(request.partitions, keys, strict=True):
            try:
                if keys.count(tp) > 1:
                    raise InvalidRequestError(f"{tp} appears more than once")
                assignment = None if tp.topic in deleting else self._assignment(tp.topic)
                if assignment is None or tp.partition not in assignment.partitions:
                    raise UnknownTopicOrPartitionError(f"{tp} does not exist")
                current = ReplicaAssignment(
                    replicas=assignment.partitions[tp.partition],
                    adding_replicas=tuple(assignment.adding_replicas.get(tp.partition, ())),
                    removing_replicas=tuple(assignment.removing_replicas.get(tp.partition, ())),
                )
                if p.cancel:
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
        results = []
        for tp in dict.fromkeys(keys):
            result = pb.PartitionResult(topic=tp.topic, partition=tp.partition)
            error = errors.get(tp)
            if error is not None:
                result.error_code = error.code
                result.error_message = error.message
            results.append(result)
        return pb.AlterPartitionReassignmentsResponse(partitions=results)

    def _reflects(self, tp: TopicPartition, target: Sequence[int]) -> bool:
        """Whether the topic znode shows ``target`` as the reassignment's (or the finished)
        replica list."""
        assignment = self._assignment(tp.topic)
        if assignment is None or tp.partition not in assignment.partitions:
            return False
        current = ReplicaAssignment(
            replicas=assignment.partitions[tp.partition],
            adding_replicas=tuple(assignment.adding_replicas.get(tp.partition, ())),
            removing_replicas=tuple(assignment.removing_replicas.get(tp.partition, ())),
        )
        return current.target_replicas == tuple(target)

    def ListPartitionReassignments(  # noqa: N802 - gRPC method name
        self, request: pb.ListPartitionReassignmentsRequest, context: grpc.ServicerContext
    ) -> pb.ListPartitionReassignmentsResponse:
        """Ongoing reassignments (of the requested partitions, or all): the full replica set
        with the replicas being added and removed."""
        wanted = {TopicPartition(p.topic, p.partition) for p in request.partitions}
        topics = sorted({tp.topic for tp in wanted}) if wanted else self._children(TopicsZNode.path)
        out = []
        for topic in topics:
            assignment = self._assignment(topic) if "/" not in topic and topic else None
            if assignment is None:
                continue
            for p in sorted(assignment.partitions):
                adding = assignment.adding_replicas.get(p, ())
                removing = assignment.removing_replicas.get(p, ())
                if not (adding or removing) or (wanted and TopicPartition(topic, p) not in wanted):
                    continue
                out.append(
                    pb.OngoingReassignment(
                        topic=topic,
                        partition=p,
                        replicas=assignment.partitions[p],
                        adding_replicas=adding,
                        removing_replicas=removing,
                    )
                )
        return pb.ListPartitionReassignmentsResponse(reassignments=out)

    # -- partitions -------------------------------------------------------------------------

    def CreatePartitions(  # noqa: N802 - gRPC method name
        self, request: pb.CreatePartitionsRequest, context: grpc.ServicerContext
    ) -> pb.CreatePartitionsResponse:
        """Raise each topic's partition count (Kafka's rules:
        :mod:`controller.partition_creation`); then wait up to ``timeout_ms`` for every new
        partition to have a leader (REQUEST_TIMED_OUT otherwise; the partitions exist anyway).
        A topic being deleted is INVALID_TOPIC_EXCEPTION, an unknown one
        UNKNOWN_TOPIC_OR_PARTITION, a topic named twice INVALID_REQUEST."""
        names = [t.name for t in request.topics]
        deleting = set(self._children(DeleteTopicsZNode.path))
        brokers = self._brokers()
        results: dict[str, pb.TopicResult] = {}
        added: dict[str, list[int]] = {}
        planned = 0
        for item in request.topics:
            result = results.setdefault(item.name, pb.TopicResult(name=item.name))
            try:
                if names.count(item.name) > 1:
                    raise InvalidRequestError(
                        f"Duplicate topic in request: {item.name!r} appears more than once."
                    )
                if not item.name or "/" in item.name:
                    raise UnknownTopicOrPartitionError(f"Topic {item.name!r} does not exist.")
                if item.name in deleting:
                    raise InvalidTopicError(f"The topic '{item.name}' is queued for deletion.")
                explicit = [list(a.broker_ids) for a in item.assignments]
                new = self._add_partitions(
                    item.name, item.count, brokers, explicit, request.validate_only, planned
                )
                planned += len(new)
                if not request.validate_only:
                    added[item.name] = sorted(new)
            except OdradekError as e:
                result.error_code = e.code
                result.error_message = e.message
        if added and request.timeout_ms > 0:
            deadline = self._deadline(request.timeout_ms)
            for name, partitions in added.items():
                led = self._wait_for_leaders(name, partitions, deadline)
                if not led:
                    results[name].error_code = RequestTimedOutError.code
                    results[
                        name
                    ].error_message = (
                        "the partitions were created but not every new one has a leader yet"
                    )
        return pb.CreatePartitionsResponse(topics=[results[n] for n in dict.fromkeys(names)])

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

    # -- ACLs: served by the node's authorizer (node/grpc_door/acl_admin_service.py); here, with
    # none

    def CreateAcls(  # noqa: N802
        self, request: pb.CreateAclsRequest, context: grpc.ServicerContext
    ) -> pb.CreateAclsResponse:
        """SECURITY_DISABLED (54) for every ACL: this servicer has no authorizer."""
        return pb.CreateAclsResponse(
            results=[pb.AclResult(error_code=_SECURITY_DISABLED)] * len(request.creations)
        )

    def DescribeAcls(  # noqa: N802
        self, request: pb.DescribeAclsRequest, context: grpc.ServicerContext
    ) -> pb.DescribeAclsResponse:
        """SECURITY_DISABLED (54): this servicer has no authorizer."""
        return pb.DescribeAclsResponse(error_code=_SECURITY_DISABLED)

    def DeleteAcls(  # noqa: N802
        self, request: pb.DeleteAclsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteAclsResponse:
        """SECURITY_DISABLED (54) for every filter: this servicer has no authorizer."""
        return pb.DeleteAclsResponse(
            filter_results=[pb.DeleteAclsFilterResult(error_code=_SECURITY_DISABLED)]
            * len(request.filters)
        )

    # -- SCRAM credentials: served by the node (node/grpc_door/acl_admin_service.py)

    def DescribeUserScramCredentials(  # noqa: N802
        self, request: pb.DescribeUserScramCredentialsRequest, context: grpc.ServicerContext
    ) -> pb.DescribeUserScramCredentialsResponse:
        """UNSUPPORTED_VERSION (35): this servicer does not keep credentials."""
        return pb.DescribeUserScramCredentialsResponse(error_code=35)

    def AlterUserScramCredentials(  # noqa: N802
        self, request: pb.AlterUserScramCredentialsRequest, context: grpc.ServicerContext
    ) -> pb.AlterUserScramCredentialsResponse:
        """UNSUPPORTED_VERSION (35) per user: this servicer does not keep credentials."""
        users = dict.fromkeys(
            [d.name for d in request.deletions] + [u.name for u in request.upsertions]
        )
        return pb.AlterUserScramCredentialsResponse(
            results=[pb.AlterUserScramCredentialsResult(user=u, error_code=35) for u in users]
        )


_SECURITY_DISABLED = 54  # SECURITY_DISABLED (odradek.errors.SecurityDisabledError)
