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
    ListenerNotFoundError,
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

    def metadata_response(
        self, topics: list[str], all_topics: bool, listener_name: str | None = None
    ) -> pb.MetadataResponse:
        """The Metadata answer: live brokers, the controller, and the asked-for topics.

        With ``listener_name`` (the listener the request came in on), each broker is given
        with its endpoint on that listener, and brokers without one are left out, as Kafka
        does; a partition whose leader is left out has LISTENER_NOT_FOUND (72)."""
        s = self._snapshot
        brokers = {
            node_id: b
            for node_id, b in (
                (i, _on_listener(b, listener_name)) for i, b in sorted(s.brokers.items())
            )
            if b is not None
        }
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
                if p.leader < 0:
                    error = LeaderNotAvailableError.code
                elif p.leader in s.brokers and p.leader not in brokers:
                    error = ListenerNotFoundError.code
                else:
                    error = 0
                partitions.append(
                    pb.PartitionMetadata(
                        partition=p.partition,
                        error_code=error,
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
            brokers=list(brokers.values()),
            controller_id=s.controller_id if s.controller_id in brokers else -1,
            cluster_id=s.cluster_id,
            topics=out,
        )


def _on_listener(broker: pb.BrokerInfo, listener_name: str | None) -> pb.BrokerInfo | None:
    """``broker`` as a client of ``listener_name`` reaches it, without its other listeners;
    ``None`` if it has no such listener. A broker registered without endpoints (one PLAINTEXT
    listener) is reached at its host and port."""
    if listener_name is None or not broker.endpoints:
        return pb.BrokerInfo(
            node_id=broker.node_id, host=broker.host, port=broker.port, rack=broker.rack
        )
    for e in broker.endpoints:
        if e.listener == listener_name:
            return pb.BrokerInfo(node_id=broker.node_id, host=e.host, port=e.port, rack=broker.rack)
    return None
