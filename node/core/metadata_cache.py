"""The node's view of the cluster: the last full snapshot the controller sent (UpdateMetadata).

Kafka's ``ZkMetadataCache``. Every node answers Metadata requests from it, finds the active
controller and live brokers in it, and takes topic config changes from it. A snapshot from an
older controller epoch than the newest seen is refused. Thread-safe: a snapshot is replaced
whole under a lock and read as an immutable value.

**Departed brokers.** A broker that leaves the live set (fenced, or gone from ZooKeeper) is
remembered, with when it left, for :data:`DEPARTED_LISTING_MS`; a Metadata answer asked with
``list_departed`` (the Kafka door's) still lists it for that long, though it leads nothing and
counts as an offline replica. The controller moves a dead leader's partitions in the same
update that drops the leader from the live set, so a Kafka answer names the new leader and
drops the old broker at once; librdkafka (2.16) then decommissions the old broker's handle
while the partition is migrating off it, the handle's teardown takes the partition back to no
leader, and the producer waits for its next leader query, a second later
(docs/operations.md, Failover). Listed a little longer, the old broker is dropped by a later
answer, once nothing is on it.
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
from odradek.clock import Clock, SystemClock
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
    departed: dict[int, tuple[Broker, int]] = field(default_factory=dict)
    """Brokers that left the live set within :data:`DEPARTED_LISTING_MS` of this snapshot:
    (the broker as last registered, monotonic ms when it left)."""


DEPARTED_LISTING_MS = 5000
"""How long a broker that left the live set is still listed in the Kafka door's Metadata
answers: longer than librdkafka's leader re-query (every second while a leader is down), so
that a producer learns the new leader from an answer that still lists the old one."""


def departed_brokers(
    previous: Snapshot, live: dict[int, Broker], now_ms: int
) -> dict[int, tuple[Broker, int]]:
    """The brokers not in ``live`` that left it within :data:`DEPARTED_LISTING_MS` of
    ``now_ms``: those ``previous`` had departed and still recent, and those it had live."""
    out = {
        b: (broker, at)
        for b, (broker, at) in previous.departed.items()
        if b not in live and now_ms - at < DEPARTED_LISTING_MS
    }
    for b, broker in previous.brokers.items():
        if b not in live:
            out[b] = (broker, now_ms)
    return out


class MetadataCache:
    """The latest UpdateMetadata snapshot. Thread-safe."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._snapshot = Snapshot()

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def update(self, request: UpdateMetadataRequest) -> Snapshot:
        """Replace the view with ``request``; raises STALE_CONTROLLER_EPOCH for an old one."""
        live = {b.node_id: b for b in request.live_brokers}
        with self._lock:
            if request.controller_epoch < self._snapshot.controller_epoch:
                raise StaleControllerEpochError(
                    f"UpdateMetadata from controller epoch {request.controller_epoch}, "
                    f"older than {self._snapshot.controller_epoch}"
                )
            snapshot = Snapshot(
                controller_id=request.controller_id,
                controller_epoch=request.controller_epoch,
                cluster_id=request.cluster_id,
                brokers=live,
                partitions={(p.topic, p.partition): p for p in request.partition_states},
                topic_configs={name: dict(c) for name, c in request.topic_configs.items()},
                departed=departed_brokers(self._snapshot, live, self._clock.monotonic_ms()),
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
        self,
        topics: Sequence[str],
        all_topics: bool,
        listener_name: str | None = None,
        *,
        list_departed: bool = False,
    ) -> MetadataResult:
        """The Metadata answer: live brokers, the controller, and the asked-for topics (each
        once, in the order asked; all of them, by name, with ``all_topics``).

        With ``listener_name`` (the listener the request came in on), each broker is given
        with its endpoint on that listener, and brokers without one are left out, as Kafka
        does; a partition whose leader is left out has LISTENER_NOT_FOUND (72). With
        ``list_departed``, brokers that left the live set less than
        :data:`DEPARTED_LISTING_MS` ago are listed too (see the module's docstring)."""
        s = self._snapshot
        brokers = {
            node_id: b
            for node_id, b in (
                (i, b.on_listener(listener_name)) for i, b in sorted(s.brokers.items())
            )
            if b is not None
        }
        listed = dict(brokers)
        if list_departed:
            now_ms = self._clock.monotonic_ms()
            for i, (b, at) in sorted(s.departed.items()):
                reachable = b.on_listener(listener_name)
                if now_ms - at < DEPARTED_LISTING_MS and reachable is not None:
                    listed[i] = reachable
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
            brokers=tuple(listed[i] for i in sorted(listed)),
            controller_id=s.controller_id if s.controller_id in brokers else -1,
            cluster_id=s.cluster_id,
            topics=tuple(out),
        )
