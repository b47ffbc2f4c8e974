"""The node's view of the cluster: the last full snapshot the controller sent (UpdateMetadata).

Kafka's ``ZkMetadataCache``. Every node answers Metadata requests from it, finds the active
controller and live brokers in it, and takes topic config changes from it. A snapshot from an
older controller epoch than the newest seen is refused. Thread-safe: a snapshot is replaced
whole under a lock and read as an immutable value.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from odradek.errors import (
    LeaderNotAvailableError,
    StaleControllerEpochError,
    UnknownTopicOrPartitionError,
)
from odradek.v1 import odradek_pb2 as pb


@dataclass(frozen=True, slots=True)
class Snapshot:
    controller_id: int = -1
    controller_epoch: int = -1
    cluster_id: str = ""
    brokers: dict[int, pb.BrokerInfo] = field(default_factory=dict)
    partitions: dict[tuple[str, int], pb.PartitionState] = field(default_factory=dict)
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)


class MetadataCache:
    """The latest UpdateMetadata snapshot. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshot = Snapshot()

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def update(self, request: pb.UpdateMetadataRequest) -> Snapshot:
        """Replace the view with ``request``; raises STALE_CONTROLLER_EPOCH for an old one."""
        snapshot = Snapshot(
            controller_id=request.controller_id,
            controller_epoch=request.controller_epoch,
            cluster_id=request.cluster_id,
            brokers={b.node_id: b for b in request.live_brokers},
            partitions={(p.topic, p.partition): p for p in request.partition_states},
            topic_configs={t.name: dict(t.configs) for t in request.topic_configs},
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

    def broker(self, node_id: int) -> pb.BrokerInfo | None:
        return self._snapshot.brokers.get(node_id)

    def controller(self) -> pb.BrokerInfo | None:
        s = self._snapshot
        return s.brokers.get(s.controller_id)

    def metadata_response(self, topics: list[str], all_topics: bool) -> pb.MetadataResponse:
        """The Metadata answer: live brokers, the controller, and the asked-for topics."""
        s = self._snapshot
        by_topic: dict[str, list[pb.PartitionState]] = {}
        for (topic, _), state in s.partitions.items():
            by_topic.setdefault(topic, []).append(state)
        names = sorted(by_topic) if all_topics else list(dict.fromkeys(topics))
        out = []
        for name in names:
            states = sorted(by_topic.get(name, []), key=lambda p: p.partition)
            if not states:
                out.append(
                    pb.TopicMetadata(name=name, error_code=UnknownTopicOrPartitionError.code)
                )
                continue
            partitions = []
            for p in states:
                offline = [r for r in p.replicas if r not in s.brokers]
                partitions.append(
                    pb.PartitionMetadata(
                        partition=p.partition,
                        error_code=LeaderNotAvailableError.code if p.leader < 0 else 0,
                        leader=p.leader,
                        leader_epoch=p.leader_epoch,
                        replicas=list(p.replicas),
                        isr=list(p.isr),
                        offline_replicas=offline,
                    )
                )
            out.append(
                pb.TopicMetadata(name=name, partitions=partitions, topic_id=states[0].topic_id)
            )
        return pb.MetadataResponse(
            brokers=[s.brokers[i] for i in sorted(s.brokers)],
            controller_id=s.controller_id if s.controller_id in s.brokers else -1,
            cluster_id=s.cluster_id,
            topics=out,
        )
