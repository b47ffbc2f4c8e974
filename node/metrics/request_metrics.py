"""A node's Prometheus endpoint (``metrics.port``): Kafka's key broker metrics under the names
Prometheus's JMX exporter gives Kafka's MBeans (lower case, ``kafka_<domain>_<type>_<name>``),
so Kafka dashboards and alerts read them as they are.

Two kinds of metric, by cost:

* **Computed at scrape time** by :class:`~node.metrics.endpoint.NodeCollector` from the node's
state, so the produce
  and fetch paths pay nothing for them: partition, leader, under-replicated, under-min-ISR and
  offline partition counts, the active controller count, log size and offsets per partition,
  purgatory sizes, flush latency (``storage.flush_stats``), ISR shrinks and expands (counted by
  the ``AlterPartitionManager`` as the controller commits them), ZooKeeper session state.
* **Counted per request** by each front door (the gRPC door's
  :class:`~node.grpc_door.metrics_interceptor.RequestMetricsInterceptor`):
  the request count and total time per RPC, and bytes and records in (produce requests, per
  topic, partitions appended without error) and bytes out (consumer fetches, per topic): a few
  integer additions per request under one lock (:class:`RequestMetrics`), made into metric
  families at scrape time too.

Request times are what odradek can measure honestly with a synchronous gRPC server:
``totaltimems`` is from the handler's start to its answer; ``remotetimems`` is the part spent
waiting in purgatory (an acks=-1 produce waiting for the ISR, a fetch long-polling for data);
``localtimems`` is the rest. Kafka's ``RequestQueueTimeMs`` (waiting for a handler thread) is not
measured: gRPC does not say when a request arrived before a worker thread took it. Times have
the node clock's resolution (1 ms).

This module holds the per-request counts; :mod:`node.metrics.endpoint` serves them.
Thread-safety: everything here is thread-safe.
"""

from __future__ import annotations

import bisect
import struct
import threading
from collections.abc import Iterable
from typing import Any

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

REQUEST_BUCKETS_MS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)

_RECORDS_COUNT = struct.Struct(">i")
_BATCH_LENGTH = struct.Struct(">i")


def record_count(records: bytes) -> int:
    """Records in a produce request's batches, from their headers (record batch v2: the batch
    length at byte 8, the records count at byte 57); a torn tail counts nothing."""
    count, position, end = 0, 0, len(records)
    while position + 61 <= end:
        (length,) = _BATCH_LENGTH.unpack_from(records, position + 8)
        (n,) = _RECORDS_COUNT.unpack_from(records, position + 57)
        count += max(0, n)
        position += 12 + max(length, 49)
    return count


class _Histogram:
    """Bucket counts (not cumulative; the last is the overflow) and a sum. Not thread-safe:
    :class:`RequestMetrics` holds its lock around every use."""

    __slots__ = ("counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(REQUEST_BUCKETS_MS) + 1)
        self.sum = 0

    def observe(self, value: int) -> None:
        self.counts[bisect.bisect_left(REQUEST_BUCKETS_MS, value)] += 1
        self.sum += value

    def add_to(self, family: HistogramMetricFamily, labels: list[str]) -> None:
        buckets: list[tuple[str, float]] = []
        running = 0
        for bound, count in zip((*map(str, REQUEST_BUCKETS_MS), "+Inf"), self.counts, strict=True):
            running += count
            buckets.append((bound, running))
        family.add_metric(labels, buckets, self.sum)


_TRAFFIC = (
    # (index in a topic's counters, metric name, help)
    (
        0,
        "kafka_server_brokertopicmetrics_bytesin",
        "Bytes of record batches appended by produce requests (BytesInPerSec)",
    ),
    (
        1,
        "kafka_server_brokertopicmetrics_messagesin",
        "Records appended by produce requests (MessagesInPerSec)",
    ),
    (
        2,
        "kafka_server_brokertopicmetrics_bytesout",
        "Bytes of records returned to consumer fetches (BytesOutPerSec)",
    ),
    (
        3,
        "kafka_server_brokertopicmetrics_replicationbytesout",
        "Bytes of records returned to follower fetches (ReplicationBytesOutPerSec)",
    ),
)


class RequestMetrics(Collector):
    """The per-request metrics of one node: plain counts under one lock (a few hundred
    nanoseconds per request; prometheus_client's labelled metrics cost tens of microseconds),
    turned into metric families when Prometheus scrapes. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # request name -> (count, total, local, remote)
        self._requests: dict[str, tuple[list[int], _Histogram, _Histogram, _Histogram]] = {}
        self._errors: dict[tuple[str, str], int] = {}
        self._topics: dict[str, list[int]] = {}  # bytes in, records in, bytes out, replication

    def observe(self, name: str, total_ms: int, remote_ms: int) -> None:
        with self._lock:
            stat = self._requests.get(name)
            if stat is None:
                stat = self._requests[name] = ([0], _Histogram(), _Histogram(), _Histogram())
            stat[0][0] += 1
            stat[1].observe(total_ms)
            stat[2].observe(max(0, total_ms - remote_ms))
            stat[3].observe(remote_ms)

    def error(self, name: str, code: str, count: int = 1) -> None:
        with self._lock:
            self._errors[(name, code)] = self._errors.get((name, code), 0) + count

    def _add(self, topic: str, index: int, amount: int) -> None:
        counters = self._topics.get(topic)
        if counters is None:
            counters = self._topics[topic] = [0, 0, 0, 0]
        counters[index] += amount

    def count_produced(self, appended: Iterable[tuple[str, int, int]]) -> None:
        """Bytes and records appended by a produce request: ``(topic, bytes, records)`` for each
        partition appended without error."""
        with self._lock:
            for topic, size, count in appended:
                self._add(topic, 0, size)
                self._add(topic, 1, count)

    def count_fetched(self, sizes: Iterable[tuple[str, int]], *, from_follower: bool) -> None:
        """Bytes of records a fetch returned: ``(topic, bytes)`` for each partition."""
        index = 3 if from_follower else 2
        with self._lock:
            for topic, size in sizes:
                if size:
                    self._add(topic, index, size)

    def describe(self) -> Iterable[Any]:
        return []

    def collect(self) -> Iterable[Any]:
        with self._lock:
            requests = {
                name: (count[0], [self._copy(h) for h in hists])
                for name, (count, *hists) in self._requests.items()
            }
            errors = dict(self._errors)
            topics = {topic: list(values) for topic, values in self._topics.items()}
        count_family = CounterMetricFamily(
            "kafka_network_requestmetrics_requests",
            "Requests handled, by Kafka request name (RequestsPerSec)",
            labels=["request"],
        )
        times = [
            HistogramMetricFamily(
                f"kafka_network_requestmetrics_{kind}timems", doc, labels=["request"]
            )
            for kind, doc in (
                ("total", "Time from a handler's start to its answer, ms (TotalTimeMs)"),
                ("local", "Time processing outside purgatory, ms (LocalTimeMs)"),
                (
                    "remote",
                    "Time waiting in purgatory: acks=-1 replication, fetch long-poll, "
                    "ms (RemoteTimeMs)",
                ),
            )
        ]
        for name, (count, hists) in sorted(requests.items()):
            count_family.add_metric([name], count)
            for family, hist in zip(times, hists, strict=True):
                hist.add_to(family, [name])
        yield count_family
        yield from times
        error_family = CounterMetricFamily(
            "kafka_network_requestmetrics_errors",
            "Errors by request and error (ErrorsPerSec): a gRPC request that ended with an "
            "error status, and each error code in a Kafka-protocol answer",
            labels=["request", "error"],
        )
        for (name, code), value in sorted(errors.items()):
            error_family.add_metric([name, code], value)
        yield error_family
        for index, metric, doc in _TRAFFIC:
            traffic = CounterMetricFamily(metric, doc, labels=["topic"])
            for topic, values in sorted(topics.items()):
                if index != 1 or values[0]:  # records in only where bytes came in
                    traffic.add_metric([topic], values[index])
            yield traffic

    @staticmethod
    def _copy(hist: _Histogram) -> _Histogram:
        copy = _Histogram()
        copy.counts, copy.sum = list(hist.counts), hist.sum
        return copy
