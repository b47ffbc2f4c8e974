"""The node's view of the cluster: the last full snapshot the controller sent (UpdateMetadata).

Kafka's ``ZkMetadataCache``. Every node answers Metadata requests from it, finds the active
controller and live brokers in it, and takes topic config changes from it. A snapshot from an
older controller epoch than the newest seen is refused. Thread-safe: a snapshot is replaced
whole under a lock and read as an immutable value.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from node.core.requests import (
    Broker,
    LeaderAndIsrPartition,
    MetadataResult,
    PartitionMetadata,
    TopicMetadata,
    UpdateMetadataRequest,
)
from odradek.errors import (
    LeaderNotAvailableError,
    ListenerNotFoundError,
    StaleControllerEpochError,
    UnknownTopicOrPartitionError,
)


@dataclass(frozen=True, slots=True)
class Snapshot:
    controller_id: int = -1
    controller_epoch: int = -1
    cluster_id: str = ""
    brokers: dict[int, Broker] = field(default_factory=dict)
    partitions: dict[tuple[str, int], LeaderAndIsrPartition] = field(default_factory=dict)
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)


class MetadataCache:
    """The latest UpdateMetadata snapshot. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshot = Snapshot()

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def update(self, request: UpdateMetadataRequest) -> Snapshot:
        """Replace the view with ``request``; raises STALE_CONTROLLER_EPOCH for an old one."""
        snapshot = Snapshot(
            controller_id=request.controller_id,
            controller_epoch=request.controller_epoch,
            cluster_id=request.cluster_id,
            brokers={b.node_id: b for b in request.live_brokers},
            partitions={(p.topic, p.partition): p for p in request.partition_states},
            topic_configs={name: dict(c) for name, c in request.topic_configs.items()},
        )
        with self._lock:
            if request.controller_epoch < self._snapshot.controller_epoch:
                raise StaleControllerEpochError(
                    f"UpdateMetadata from controller epoch {request.controller_epoch}, "
                    f"older than {self._snapshot.controller_epoch}"
                )
            self._snapshot = snapshot
        return snapshot

    def live_broker_ids(self) -> set[int]:
        return set(self._snapshot.brokers)

    def broker(self, node_id: int) -> Broker | None:
        return self._snapshot.brokers.get(node_id)

    def controller(self) -> Broker | None:
        s = self._snapshot
        return s.brokers.get(s.controller_id)

    def metadata(
        self, topics: Sequence[str], all_topics: bool, listener_name: str | None = None
    ) -> MetadataResult:
        """The Metadata answer: live brokers, the controller, and the asked-for topics (each
        once, in the order asked; all of them, by name, with ``all_topics``).

        With ``listener_name`` (the listener the request came in on), each broker is given
        with its endpoint on that listener, and brokers without one are left out, as Kafka
        does; a partition whose leader is left out has LISTENER_NOT_FOUND (72)."""
        s = self._snapshot
        brokers = {
            node_id: b
            for node_id, b in (
                (i, b.on_listener(listener_name)) for i, b in sorted(s.brokers.items())
            )
            if b is not None
        }
        by_topic: dict[str, list[LeaderAndIsrPartition]] = {}
        for (topic, _), state in s.partitions.items():
            by_topic.setdefault(topic, []).append(state)
        names = sorted(by_topic) if all_topics else list(dict.fromkeys(topics))
        out = []
        for name in names:
            states = sorted(by_topic.get(name, []), key=lambda p: p.partition)
            if not states:
                out.append(TopicMetadata(name=name, error_code=UnknownTopicOrPartitionError.code))
                continue
            partitions = []
            for p in states:
                offline = tuple(r for r in p.replicas if r not in s.brokers)
                if p.leader < 0:
                    error = LeaderNotAvailableError.code
                elif p.leader in s.brokers and p.leader not in brokers:
                    error = ListenerNotFoundError.code
                else:
                    error = 0
                partitions.append(
                    PartitionMetadata(
                        partition=p.partition,
                        error_code=error,
                        leader=p.leader,
                        leader_epoch=p.leader_epoch,
                        replicas=tuple(p.replicas),
                        isr=tuple(p.isr),
                        offline_replicas=offline,
                    )
                )
            out.append(
                TopicMetadata(name=name, partitions=tuple(partitions), topic_id=states[0].topic_id)
            )
        return MetadataResult(
            brokers=tuple(brokers.values()),
            controller_id=s.controller_id if s.controller_id in brokers else -1,
            cluster_id=s.cluster_id,
            topics=tuple(out),
        )
