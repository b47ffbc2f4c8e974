"""The share coordinator's metrics on the node's Prometheus endpoint, under the names
Prometheus's JMX exporter would give Kafka's ``share-coordinator-metrics`` group
(``kafka_server_share_coordinator_metrics_<name>``; Kafka's ``ShareCoordinatorMetrics``):

* ``..._num_partitions{state}`` (gauge): the ``__share_group_state`` partitions this node
  leads, ``active`` (loaded: served) or ``loading`` (replayed now: calls are answered
  COORDINATOR_LOAD_IN_PROGRESS); read at scrape time
  (:meth:`~node.share_coordinator.share_coordinator.ShareCoordinator.partition_counts`).
* ``..._write_total{result}`` (counter, ``durable`` or ``failed``): the snapshot and tombstone
  records the coordinator wrote (each an Initialize, a Write, a newer leader's Read or a Delete),
  by whether they were replicated in time; ``rate()`` of it is Kafka's ``write-rate``.
* ``..._write_latency_ms`` (histogram, ms): from a record's append to its answer (its
  replication to the ISR: acks=-1), Kafka's ``write-latency-avg`` / ``-max``.
* ``..._partition_load_time_max`` and ``..._avg`` (gauges, ms): the longest and the mean time
  this node took to replay a ``__share_group_state`` partition it came to lead, over the loads
  that ended in the last 30 s (NaN when none did).

Thread-safe: the counts are integers under one lock.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from node.metrics.request_metrics import REQUEST_BUCKETS_MS

__all__ = ["ShareCoordinatorMetrics"]

_PREFIX = "kafka_server_share_coordinator_metrics_"
LOAD_WINDOW_MS = 30_000


class ShareCoordinatorMetrics(Collector):
    """The share coordinator's :class:`~node.share_coordinator.share_coordinator.
    ShareCoordinatorEvents`; reads the partitions by state at scrape time from what
    :meth:`watch` gave. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._durable = 0
        self._failed = 0
        self._latency_counts = [0] * (len(REQUEST_BUCKETS_MS) + 1)  # the last: overflow
        self._latency_sum = 0
        self._loads: list[tuple[int, int]] = []  # (ended at, took), ms, the last window's
        self._partitions: Callable[[], Mapping[str, int]] | None = None
        self._now_ms: Callable[[], int] | None = None

    def watch(self, partitions: Callable[[], Mapping[str, int]], now_ms: Callable[[], int]) -> None:
        """Read the partitions by state from ``partitions`` at each scrape, and the node
        clock's monotonic time from ``now_ms``."""
        self._partitions, self._now_ms = partitions, now_ms

    def partition_loaded(self, load_ms: int, now_ms: int) -> None:
        with self._lock:
            self._loads = [(at, took) for at, took in self._loads if at > now_ms - LOAD_WINDOW_MS]
            self._loads.append((now_ms, load_ms))

    def write_done(self, latency_ms: int, durable: bool) -> None:
        with self._lock:
            if durable:
                self._durable += 1
            else:
                self._failed += 1
            self._latency_counts[bisect.bisect_left(REQUEST_BUCKETS_MS, latency_ms)] += 1
            self._latency_sum += latency_ms

    def describe(self) -> Iterable[Any]:
        return []  # computed at scrape time

    def collect(self) -> Iterable[Any]:
        with self._lock:
            durable, failed = self._durable, self._failed
            counts, latency_sum = list(self._latency_counts), self._latency_sum
            loads = list(self._loads)
        partitions = GaugeMetricFamily(
            _PREFIX + "num_partitions",
            "__share_group_state partitions this node leads, by state (active, loading)",
            labels=["state"],
        )
        found = self._partitions() if self._partitions is not None else {}
        for state in ("active", "loading"):
            partitions.add_metric([state], found.get(state, 0))
        yield partitions
        writes = CounterMetricFamily(
            _PREFIX + "write",
            "Records the share coordinator wrote to __share_group_state, by result",
            labels=["result"],
        )
        writes.add_metric(["durable"], durable)
        writes.add_metric(["failed"], failed)
        yield writes
        buckets: list[tuple[str, float]] = []
        running = 0
        for bound, count in zip((*map(str, REQUEST_BUCKETS_MS), "+Inf"), counts, strict=True):
            running += count
            buckets.append((bound, running))
        yield HistogramMetricFamily(
            _PREFIX + "write_latency_ms",
            "From a share state record's append to its replication (acks=-1), ms",
            buckets=buckets,
            sum_value=latency_sum,
        )
        since = (self._now_ms() if self._now_ms is not None else 0) - LOAD_WINDOW_MS
        recent = [took for at, took in loads if at > since]
        yield GaugeMetricFamily(
            _PREFIX + "partition_load_time_max",
            "The longest time a __share_group_state partition took to load in the last 30 s, ms",
            value=max(recent) if recent else math.nan,
        )
        yield GaugeMetricFamily(
            _PREFIX + "partition_load_time_avg",
            "The mean time a __share_group_state partition took to load in the last 30 s, ms",
            value=sum(recent) / len(recent) if recent else math.nan,
        )
