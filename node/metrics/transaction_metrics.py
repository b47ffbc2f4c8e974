"""The transaction coordinator's metrics on the node's Prometheus endpoint, under the names
Prometheus's JMX exporter would give them in Kafka's ``kafka.coordinator.transaction`` domain
(``kafka_coordinator_transaction_<type>_<name>``), and Kafka's own partition load times:

* ``..._transactionstatemanager_opentransactions{state}`` (gauge): the transactions open on this
  node's coordinator (the ``__transaction_state`` partitions it leads) by state, ``Ongoing``,
  ``PrepareCommit`` and ``PrepareAbort``; read at scrape time
  (:meth:`~node.transaction.txn_coordinator.TransactionCoordinator.open_transactions`).
* ``..._transactioncoordinator_completedtransactions_total{result}`` (counter, ``commit`` or
  ``abort``): transactions this coordinator completed (CompleteCommit / CompleteAbort written,
  after every marker); ``rate()`` of it is the commit and the abort rate.
* ``..._transactioncoordinator_timedouttransactions_total`` (counter): open transactions the
  coordinator aborted because they outlived their ``transaction.timeout.ms`` (their aborts are
  counted in the completed aborts too).
* ``..._transactionmarkerchannelmanager_markerlatencyms`` (histogram, ms): from a transaction's
  markers handed to the marker sender (PrepareCommit / PrepareAbort written) to every
  partition's marker written — the time read_committed consumers of those partitions wait
  past EndTxn's answer.
* ``..._transactionmarkerchannelmanager_pendingtransactions`` (gauge): transactions whose
  markers are not all written (non-zero for long: a partition's leader is unreachable and its
  last stable offset stalls; Kafka's closest gauges are ``UnknownDestinationQueueSize`` and
  ``LogAppendRetryQueueSize``, which count other queues).
* ``kafka_server_transaction_coordinator_metrics_partition_load_time_max`` and ``..._avg``
  (gauges, ms; Kafka's own ``transaction-coordinator-metrics`` ``partition-load-time-max`` /
  ``-avg``): the longest and the mean time this node took to replay a ``__transaction_state``
  partition it came to lead, over the loads that ended in the last 30 s (NaN when none did, as
  Kafka's ``Max`` and ``Avg`` of an empty window). Requests for a loading partition are
  answered COORDINATOR_LOAD_IN_PROGRESS meanwhile.

The load times are Kafka's own metrics. Kafka's broker has no open-transaction gauge, commit
or abort rate or marker latency metric (its producers report ``txn-commit-time-ns`` and kin):
those names are odradek's, made in Kafka's JMX-exporter style. Thread-safe: the counts are
integers under one lock.
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

__all__ = ["TransactionMetrics"]

_PREFIX = "kafka_coordinator_transaction_"
LOAD_WINDOW_MS = 30_000
"""The window of the partition load times (Kafka's: ``metrics.sample.window.ms``)."""


class TransactionMetrics(Collector):
    """Counts the coordinator's completed and timed-out transactions (it calls
    :meth:`transaction_completed` and :meth:`transaction_timed_out`: it is its
    :class:`~node.transaction.txn_coordinator.TransactionEvents`) and the marker sender's
    latencies (:meth:`observe_marker_latency`, its ``on_latency`` hook), and reads the open
    transactions and pending markers at scrape time from what :meth:`watch` gave. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._committed = 0
        self._aborted = 0
        self._timed_out = 0
        self._latency_counts = [0] * (len(REQUEST_BUCKETS_MS) + 1)  # the last: overflow
        self._latency_sum = 0
        self._loads: list[tuple[int, int]] = []  # (ended at, took), ms, the last window's
        self._open: Callable[[], Mapping[str, int]] | None = None
        self._pending: Callable[[], int] | None = None
        self._now_ms: Callable[[], int] | None = None

    def watch(
        self,
        open_transactions: Callable[[], Mapping[str, int]],
        pending_markers: Callable[[], int],
        now_ms: Callable[[], int],
    ) -> None:
        """Read the open transactions by state and the transactions with markers pending from
        these at each scrape (the coordinator and the marker sender exist after the endpoint),
        and the node clock's monotonic time from ``now_ms`` (the load times' window)."""
        self._open, self._pending, self._now_ms = open_transactions, pending_markers, now_ms

    def partition_loaded(self, load_ms: int, now_ms: int) -> None:
        with self._lock:
            self._loads = [(at, took) for at, took in self._loads if at > now_ms - LOAD_WINDOW_MS]
            self._loads.append((now_ms, load_ms))

    def transaction_completed(self, commit: bool) -> None:
        with self._lock:
            if commit:
                self._committed += 1
            else:
                self._aborted += 1

    def transaction_timed_out(self) -> None:
        with self._lock:
            self._timed_out += 1

    def observe_marker_latency(self, latency_ms: int) -> None:
        with self._lock:
            self._latency_counts[bisect.bisect_left(REQUEST_BUCKETS_MS, latency_ms)] += 1
            self._latency_sum += latency_ms

    def describe(self) -> Iterable[Any]:
        return []  # computed at scrape time

    def collect(self) -> Iterable[Any]:
        with self._lock:
            committed, aborted, timed_out = self._committed, self._aborted, self._timed_out
            counts, latency_sum = list(self._latency_counts), self._latency_sum
            loads = list(self._loads)
        states = GaugeMetricFamily(
            _PREFIX + "transactionstatemanager_opentransactions",
            "Transactions open on this node's coordinator, by state",
            labels=["state"],
        )
        for state, count in sorted((self._open() if self._open is not None else {}).items()):
            states.add_metric([state], count)
        yield states
        completed = CounterMetricFamily(
            _PREFIX + "transactioncoordinator_completedtransactions",
            "Transactions completed by this coordinator (CompleteCommit / CompleteAbort "
            "written), by result",
            labels=["result"],
        )
        completed.add_metric(["commit"], committed)
        completed.add_metric(["abort"], aborted)
        yield completed
        yield CounterMetricFamily(
            _PREFIX + "transactioncoordinator_timedouttransactions",
            "Open transactions aborted by the coordinator past their transaction.timeout.ms",
            value=timed_out,
        )
        buckets: list[tuple[str, float]] = []
        running = 0
        for bound, count in zip((*map(str, REQUEST_BUCKETS_MS), "+Inf"), counts, strict=True):
            running += count
            buckets.append((bound, running))
        yield HistogramMetricFamily(
            _PREFIX + "transactionmarkerchannelmanager_markerlatencyms",
            "From a transaction's markers handed to the sender to all of them written, ms",
            buckets=buckets,
            sum_value=latency_sum,
        )
        since = (self._now_ms() if self._now_ms is not None else 0) - LOAD_WINDOW_MS
        recent = [took for at, took in loads if at > since]
        yield GaugeMetricFamily(
            "kafka_server_transaction_coordinator_metrics_partition_load_time_max",
            "The longest time a __transaction_state partition took to load in the last 30 s, ms",
            value=max(recent) if recent else math.nan,
        )
        yield GaugeMetricFamily(
            "kafka_server_transaction_coordinator_metrics_partition_load_time_avg",
            "The mean time a __transaction_state partition took to load in the last 30 s, ms",
            value=sum(recent) / len(recent) if recent else math.nan,
        )
        yield GaugeMetricFamily(
            _PREFIX + "transactionmarkerchannelmanager_pendingtransactions",
            "Transactions whose markers are not all written yet",
            value=self._pending() if self._pending is not None else 0,
        )
