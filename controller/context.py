"""What the active controller knows (Kafka's ``ControllerContext``).

Rebuilt from ZooKeeper each time a node becomes the active controller, then kept current by the
controller's own writes and by the ZooKeeper watches it processes. Plain data and queries, no
I/O.

Thread-safety: none. Only the controller's event thread touches a context.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from controller.reassignment import ReplicaAssignment
from controller.zk_data import BrokerRegistrationInfo, LeaderIsrAndControllerEpoch, TopicPartition

__all__ = ["LiveBroker", "ControllerContext"]


@dataclass(frozen=True, slots=True)
class LiveBroker:
    """A registered broker and its broker epoch (the czxid of its registration znode)."""

    info: BrokerRegistrationInfo
    epoch: int


@dataclass
class ControllerContext:
    """The cluster as the controller of ``epoch`` sees it."""

    epoch: int
    """This controller's epoch."""
    epoch_zk_version: int
    """The zkVersion of ``/controller_epoch`` this controller wrote; every write checks it."""
    cluster_id: str = ""
    live_brokers: dict[int, LiveBroker] = field(default_factory=dict)
    """Registered brokers, including those in controlled shutdown."""
    shutting_down: set[int] = field(default_factory=set)
    """Brokers in controlled shutdown: not eligible to lead or join an ISR."""
    topic_ids: dict[str, str] = field(default_factory=dict)
    assignments: dict[TopicPartition, ReplicaAssignment] = field(default_factory=dict)
    states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = field(default_factory=dict)
    """Partition states; a partition without one is new and not yet started (no live replica
    when it was created)."""
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    """Config overrides per topic (Kafka names), as in ``/config/topics/<t>``."""
    topics_to_delete: set[str] = field(default_factory=set)
    deletion_in_flight: set[tuple[int, TopicPartition]] = field(default_factory=set)
    """(broker, partition) whose StopReplica(delete) was sent and not yet answered."""
    deletion_done: set[tuple[int, TopicPartition]] = field(default_factory=set)
    """(broker, partition) whose replica has been deleted."""

    # -- brokers ----------------------------------------------------------------------------

    @property
    def live_or_shutting_down_ids(self) -> set[int]:
        return set(self.live_brokers)

    @property
    def live_broker_ids(self) -> set[int]:
        """Brokers that may lead and be in an ISR: registered and not shutting down."""
        return set(self.live_brokers) - self.shutting_down

    def broker_epoch(self, broker_id: int) -> int:
        broker = self.live_brokers.get(broker_id)
        return broker.epoch if broker is not None else -1

    # -- topics and partitions ----------------------------------------------------------------

    @property
    def topics(self) -> set[str]:
        return set(self.topic_ids)

    def partitions_of(self, topic: str) -> list[TopicPartition]:
        return sorted(tp for tp in self.assignments if tp.topic == topic)

    def partitions_on_broker(self, broker_id: int) -> list[TopicPartition]:
        """Partitions with a replica (in the full replica set) on ``broker_id``."""
        return sorted(tp for tp, a in self.assignments.items() if broker_id in a.replicas)

    def replicas(self, tp: TopicPartition) -> tuple[int, ...]:
        assignment = self.assignments.get(tp)
        return assignment.replicas if assignment is not None else ()

    def live_replicas(self, tp: TopicPartition) -> list[int]:
        """Replicas of ``tp`` on registered brokers (shutting-down ones included)."""
        return [r for r in self.replicas(tp) if r in self.live_brokers]

    def offline_replicas(self, tp: TopicPartition) -> list[int]:
        return [r for r in self.replicas(tp) if r not in self.live_brokers]

    def is_deleting(self, topic: str) -> bool:
        return topic in self.topics_to_delete

    def partitions_being_reassigned(self) -> list[TopicPartition]:
        return sorted(tp for tp, a in self.assignments.items() if a.is_being_reassigned)

    def unclean_leader_election_enable(self, topic: str, default: bool) -> bool:
        """The topic's ``unclean.leader.election.enable``, or ``default`` when not overridden
        (or when the override is not a boolean)."""
        value = self.topic_configs.get(topic, {}).get("unclean.leader.election.enable")
        if value is None or value.strip().lower() not in ("true", "false"):
            return default
        return value.strip().lower() == "true"

    def add_topic(
        self,
        topic: str,
        topic_id: str,
        assignments: dict[int, ReplicaAssignment],
        config: dict[str, str],
    ) -> None:
        self.topic_ids[topic] = topic_id
        self.topic_configs[topic] = dict(config)
        for partition, assignment in assignments.items():
            self.assignments[TopicPartition(topic, partition)] = assignment

    def remove_topic(self, topic: str) -> None:
        self.topic_ids.pop(topic, None)
        self.topic_configs.pop(topic, None)
        self.topics_to_delete.discard(topic)
        for tp in self.partitions_of(topic):
            self.assignments.pop(tp, None)
            self.states.pop(tp, None)
        self.deletion_in_flight = {x for x in self.deletion_in_flight if x[1].topic != topic}
        self.deletion_done = {x for x in self.deletion_done if x[1].topic != topic}

    def partitions_needing_leader(
        self, topics: Iterable[str] | None = None
    ) -> list[TopicPartition]:
        """New partitions without state, and partitions whose leader is none or not live
        (Kafka's New and Offline partitions), outside topics being deleted."""
        wanted = None if topics is None else set(topics)
        live = self.live_broker_ids
        out = []
        for tp in self.assignments:
            if self.is_deleting(tp.topic) or (wanted is not None and tp.topic not in wanted):
                continue
            state = self.states.get(tp)
            if state is None or state.leader not in live:
                out.append(tp)
        return sorted(out)
