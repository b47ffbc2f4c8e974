"""A node's Prometheus endpoint (``metrics.port``): the request metrics
(:mod:`node.metrics.request_metrics`), the transaction coordinator's
(:mod:`node.metrics.transaction_metrics`) and the gauges and counters read from the node's state
at scrape time (:class:`NodeCollector`). Thread-safe; the HTTP endpoint serves from a thread of
its own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from node.metrics.request_metrics import RequestMetrics
from node.metrics.share_coordinator_metrics import ShareCoordinatorMetrics
from node.metrics.transaction_metrics import TransactionMetrics
from storage.flush_stats import FLUSH_BUCKETS_MS

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from kazoo.client import KazooClient

    from node.core.metadata_cache import MetadataCache
    from node.core.replica_manager import ReplicaManager
    from storage import LogManager

__all__ = ["MetricsEndpoint", "NodeCollector", "NodeView", "ShareGroupCounts"]

log = logging.getLogger(__name__)


class IsrChangeCounts(Protocol):
    """ISR shrinks and expands committed by the controller for partitions this node leads."""

    @property
    def isr_shrinks(self) -> int: ...
    @property
    def isr_expands(self) -> int: ...


class ControllerView(Protocol):
    """Whether this node's controller candidate is the active controller."""

    @property
    def is_active(self) -> bool: ...


class ShareGroupCounts(Protocol):
    """The group coordinator's share groups (KIP-932)."""

    def share_group_counts(self) -> tuple[dict[str, int], int]: ...


class NodeView(Protocol):
    """What the collector reads of a node (:class:`node.server.Node` has it)."""

    @property
    def replicas(self) -> ReplicaManager | None: ...
    @property
    def alter_partitions(self) -> IsrChangeCounts | None: ...
    @property
    def controller(self) -> ControllerView | None: ...
    @property
    def metadata(self) -> MetadataCache: ...
    @property
    def log_manager(self) -> LogManager | None: ...
    @property
    def zk(self) -> KazooClient | None: ...
    @property
    def groups(self) -> ShareGroupCounts | None: ...


class NodeCollector(Collector):
    """The gauges and counters read from a node's state at scrape time."""

    def __init__(self, node: NodeView) -> None:
        self._node = node
        self.zookeeper_events: dict[str, int] = {"expires": 0, "disconnects": 0, "syncconnects": 0}
        self._zk_lock = threading.Lock()
        self._suspended = False

    def on_zookeeper_state(self, state: str) -> None:
        """A kazoo connection listener: counts session expiries, disconnections and
        reconnections (Kafka's ``ZooKeeper{Expires,Disconnects,SyncConnects}PerSec``)."""
        with self._zk_lock:
            if state == "LOST":
                self.zookeeper_events["expires"] += 1
            elif state == "SUSPENDED":
                self.zookeeper_events["disconnects"] += 1
                self._suspended = True
            elif state == "CONNECTED" and self._suspended:
                self.zookeeper_events["syncconnects"] += 1
                self._suspended = False

    def describe(self) -> Iterable[Any]:
        return []  # computed at scrape time: nothing to check at registration

    def collect(self) -> Iterable[Any]:
        node = self._node
        replicas = node.replicas
        partitions = replicas.partitions() if replicas is not None else {}
        lead = under = under_min = 0
        size = GaugeMetricFamily(
            "kafka_log_log_size",
            "Bytes of a partition's log (Log Size)",
            labels=["topic", "partition"],
        )
        end = GaugeMetricFamily(
            "kafka_log_log_logendoffset",
            "A partition's log end offset",
            labels=["topic", "partition"],
        )
        start = GaugeMetricFamily(
            "kafka_log_log_logstartoffset",
            "A partition's log start offset",
            labels=["topic", "partition"],
        )
        for (topic, index), p in partitions.items():
            labels = [topic, str(index)]
            try:
                size.add_metric(labels, p.log.size)
                end.add_metric(labels, p.log.log_end_offset)
                start.add_metric(labels, p.log.log_start_offset)
            except Exception:  # a log closed (deleted, stopped) between the listing and here
                continue
            if p.is_leader:
                lead += 1
                isr = len(p.isr)
                under += isr < len(p.replicas)
                under_min += isr < p.min_isr
        yield size
        yield end
        yield start
        yield _gauge(
            "kafka_server_replicamanager_partitioncount", "Partitions on this node", len(partitions)
        )
        yield _gauge("kafka_server_replicamanager_leadercount", "Partitions this node leads", lead)
        yield _gauge(
            "kafka_server_replicamanager_underreplicatedpartitions",
            "Led partitions whose ISR is smaller than their replica set",
            under,
        )
        yield _gauge(
            "kafka_server_replicamanager_underminisrpartitioncount",
            "Led partitions whose ISR is below min.insync.replicas",
            under_min,
        )
        alter = node.alter_partitions
        yield _counter(
            "kafka_server_replicamanager_isrshrinks",
            "ISR shrinks of partitions this node leads (IsrShrinksPerSec)",
            alter.isr_shrinks if alter is not None else 0,
        )
        yield _counter(
            "kafka_server_replicamanager_isrexpands",
            "ISR expansions of partitions this node leads (IsrExpandsPerSec)",
            alter.isr_expands if alter is not None else 0,
        )
        controller = node.controller
        active = controller is not None and controller.is_active
        yield _gauge(
            "kafka_controller_kafkacontroller_activecontrollercount",
            "1 on the active controller, else 0 (the cluster's sum must be 1)",
            int(active),
        )
        offline = 0
        if active:  # as in Kafka, only the active controller reports offline partitions
            snapshot = node.metadata.snapshot
            live = set(snapshot.brokers)
            offline = sum(1 for s in snapshot.partitions.values() if s.leader not in live)
        yield _gauge(
            "kafka_controller_kafkacontroller_offlinepartitionscount",
            "Partitions without a live leader (reported by the active controller)",
            offline,
        )
        purgatory = GaugeMetricFamily(
            "kafka_server_delayedoperationpurgatory_purgatorysize",
            "Requests waiting in purgatory (acks=-1 produces, long-polling fetches)",
            labels=["delayedOperation"],
        )
        sizes = replicas.purgatory_sizes() if replicas is not None else {}
        for operation in ("Produce", "Fetch"):
            purgatory.add_metric([operation], sizes.get(operation, 0))
        yield purgatory
        if node.log_manager is not None:
            snap = node.log_manager.flush_stats.snapshot()
            buckets: list[tuple[str, float]] = []
            running = 0
            for bound, count in zip(
                (*map(str, FLUSH_BUCKETS_MS), "+Inf"), snap.bucket_counts, strict=True
            ):
                running += count
                buckets.append((bound, running))
            yield HistogramMetricFamily(
                "kafka_log_logflushstats_logflushrateandtimems",
                "Log flush (fsync) durations, ms (LogFlushRateAndTimeMs)",
                buckets=buckets,
                sum_value=snap.sum_ms,
            )
        state = GaugeMetricFamily(
            "kafka_server_sessionexpirelistener_sessionstate",
            "The ZooKeeper session's state (kazoo's CONNECTED, SUSPENDED, LOST): 1 for the current",
            labels=["state"],
        )
        current = str(node.zk.state) if node.zk is not None else "LOST"
        for name in ("CONNECTED", "SUSPENDED", "LOST"):
            state.add_metric([name], int(current == name))
        yield state
        yield from _share_group_metrics(node.groups)
        with self._zk_lock:
            events = dict(self.zookeeper_events)
        for event, value in events.items():
            yield _counter(
                f"kafka_server_sessionexpirelistener_zookeeper{event}",
                f"ZooKeeper session events: {event} (ZooKeeper{event.capitalize()}PerSec)",
                value,
            )


def _share_group_metrics(groups: ShareGroupCounts | None) -> Iterable[Any]:
    """Kafka's group-coordinator-metrics for share groups: group-count (protocol share) and
    share-group-count by state; and the share groups' members (odradek's)."""
    by_state, members = groups.share_group_counts() if groups is not None else ({}, 0)
    count = GaugeMetricFamily(
        "kafka_server_group_coordinator_metrics_group_count",
        "Groups this node coordinates, by protocol (share groups counted here)",
        labels=["protocol"],
    )
    count.add_metric(["share"], sum(by_state.values()))
    yield count
    states = GaugeMetricFamily(
        "kafka_server_group_coordinator_metrics_share_group_count",
        "Share groups this node coordinates, by state",
        labels=["state"],
    )
    for state in ("Empty", "Stable"):
        states.add_metric([state], by_state.get(state, 0))
    yield states
    yield _gauge(
        "kafka_server_group_coordinator_metrics_share_group_member_count",
        "Members of the share groups this node coordinates",
        members,
    )


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _counter(name: str, documentation: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, documentation, value=value)


class MetricsEndpoint:
    """The node's metrics: a registry with the request metrics, the transaction metrics, the
    share coordinator's metrics and the node's collector, and the HTTP endpoint serving it
    (``start``/``stop``)."""

    def __init__(self, node: NodeView) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.requests = RequestMetrics()
        self.registry.register(self.requests)
        self.transactions = TransactionMetrics()
        self.registry.register(self.transactions)
        self.share_coordinator = ShareCoordinatorMetrics()
        self.registry.register(self.share_coordinator)
        self.collector = NodeCollector(node)
        self.registry.register(self.collector)
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None
        self.port: int | None = None

    def start(self, host: str, port: int) -> int:
        """Serve ``/metrics`` on ``host:port`` (0: any free port); returns the port. Raises
        ``OSError`` if the port is taken."""
        server, thread = start_http_server(port, addr=host, registry=self.registry)
        self._server, self._thread = server, thread
        self.port = int(server.server_port)
        log.info("metrics on http://%s:%d/metrics", host, self.port)
        return self.port

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
