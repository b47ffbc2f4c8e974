"""A node's Prometheus endpoint (``metrics.port``): Kafka's key broker metrics under the names
Prometheus's JMX exporter gives Kafka's MBeans (lower case, ``kafka_<domain>_<type>_<name>``),
so Kafka dashboards and alerts read them as they are.

Two kinds of metric, by cost:

* **Computed at scrape time** by :class:`NodeCollector` from the node's state, so the produce
  and fetch paths pay nothing for them: partition, leader, under-replicated, under-min-ISR and
  offline partition counts, the active controller count, log size and offsets per partition,
  purgatory sizes, flush latency (``storage.flush_stats``), ISR shrinks and expands (counted by
  the ``AlterPartitionManager`` as the controller commits them), ZooKeeper session state.
* **Counted per request** by :class:`RequestMetricsInterceptor`, a gRPC server interceptor:
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

Thread-safety: everything here is thread-safe; the HTTP endpoint serves from a thread of its
own.
"""

from __future__ import annotations

import bisect
import logging
import struct
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import grpc
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from odradek.clock import Clock
from storage.flush_stats import FLUSH_BUCKETS_MS

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from node.server import Node

log = logging.getLogger(__name__)

REQUEST_BUCKETS_MS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)

# Kafka's request names (RequestMetrics' request= tag) for odradek's RPCs; Fetch is split by
# requester as Kafka does. Other RPCs go by their gRPC method name.
_REQUEST_NAMES = {
    "/odradek.v1.Broker/Fetch": "FetchConsumer",
    "/odradek.v1.Replication/Fetch": "FetchFollower",
    "/odradek.v1.Replication/FetchSession": "FetchFollower",
}

_remote = threading.local()


def add_remote_time_ms(ms: int) -> None:
    """Count ``ms`` of the current request's time as spent waiting in purgatory (called on the
    request's own thread by the replica manager)."""
    _remote.ms = getattr(_remote, "ms", 0) + ms


def _take_remote_time_ms() -> int:
    ms: int = getattr(_remote, "ms", 0)
    _remote.ms = 0
    return ms


def request_name(method: str) -> str:
    """``/odradek.v1.Broker/Produce`` → ``Produce``; Fetch → ``FetchConsumer`` or
    ``FetchFollower``."""
    return _REQUEST_NAMES.get(method) or method.rsplit("/", 1)[-1]


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

    def error(self, name: str, code: str) -> None:
        with self._lock:
            self._errors[(name, code)] = self._errors.get((name, code), 0) + 1

    def _add(self, topic: str, index: int, amount: int) -> None:
        counters = self._topics.get(topic)
        if counters is None:
            counters = self._topics[topic] = [0, 0, 0, 0]
        counters[index] += amount

    def count_traffic(self, name: str, request: Any, response: Any) -> None:
        """Bytes and records in and out of a produce or fetch, per topic."""
        if name == "Produce":
            failed = {(p.topic, p.partition) for p in response.partitions if p.error_code}
            appended = []
            for data in request.partitions:
                records = data.records  # a copy: read it once
                if records and (data.topic, data.partition) not in failed:
                    appended.append((data.topic, len(records), record_count(records)))
            with self._lock:
                for topic, size, count in appended:
                    self._add(topic, 0, size)
                    self._add(topic, 1, count)
        elif name in ("FetchConsumer", "FetchFollower"):
            index = 2 if name == "FetchConsumer" else 3
            sizes = [(p.topic, len(p.records)) for p in response.partitions]
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
            "Requests that ended with a gRPC error status, by request and status",
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


if TYPE_CHECKING:
    _ServerInterceptor = grpc.ServerInterceptor[Any, Any]
else:  # the stubs' generic is not subscriptable at run time
    _ServerInterceptor = grpc.ServerInterceptor


class RequestMetricsInterceptor(_ServerInterceptor):
    """Times and counts every RPC (see the module doc). Thread-safe."""

    def __init__(self, metrics: RequestMetrics, clock: Clock) -> None:
        self._metrics = metrics
        self._clock = clock
        # method -> its measured handler, built once (the services' handlers never change)
        self._wrapped: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        method = handler_call_details.method
        wrapped = self._wrapped.get(method)
        if wrapped is not None:
            return wrapped
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        wrapped = self._wrap(request_name(method), handler)
        self._wrapped[method] = wrapped  # a race builds the same handler twice: harmless
        return wrapped

    def _wrap(
        self, name: str, handler: grpc.RpcMethodHandler[Any, Any]
    ) -> grpc.RpcMethodHandler[Any, Any]:
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._unary(name, handler.unary_unary),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.stream_stream is not None:
            return grpc.stream_stream_rpc_method_handler(
                self._stream(name, handler.stream_stream),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler  # no unary-stream or stream-unary RPCs today: served unmeasured

    def _unary(self, name: str, behaviour: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        metrics, clock = self._metrics, self._clock

        def measured(request: Any, context: grpc.ServicerContext) -> Any:
            _take_remote_time_ms()
            started = clock.monotonic_ms()
            try:
                response = behaviour(request, context)
            except Exception:
                code = context.code() if hasattr(context, "code") else None
                metrics.error(name, getattr(code, "name", "UNKNOWN"))
                raise
            finally:
                metrics.observe(name, clock.monotonic_ms() - started, _take_remote_time_ms())
            metrics.count_traffic(name, request, response)
            return response

        return measured

    def _stream(
        self, name: str, behaviour: Callable[[Iterator[Any], Any], Iterator[Any]]
    ) -> Callable[[Iterator[Any], Any], Iterator[Any]]:
        """A fetch session: each request of the stream is timed from when the servicer takes
        it to when it yields the answer (it answers each in turn)."""
        metrics, clock = self._metrics, self._clock

        def measured(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
            pending: list[tuple[Any, int]] = []

            def timed() -> Iterator[Any]:
                for request in requests:
                    _take_remote_time_ms()
                    pending.append((request, clock.monotonic_ms()))
                    yield request

            for response in behaviour(timed(), context):
                if pending:
                    request, started = pending.pop(0)
                    metrics.observe(name, clock.monotonic_ms() - started, _take_remote_time_ms())
                    metrics.count_traffic(name, request, response)
                yield response

        return measured


class NodeCollector(Collector):
    """The gauges and counters read from a node's state at scrape time."""

    def __init__(self, node: Node) -> None:
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
        with self._zk_lock:
            events = dict(self.zookeeper_events)
        for event, value in events.items():
            yield _counter(
                f"kafka_server_sessionexpirelistener_zookeeper{event}",
                f"ZooKeeper session events: {event} (ZooKeeper{event.capitalize()}PerSec)",
                value,
            )


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _counter(name: str, documentation: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, documentation, value=value)


class MetricsEndpoint:
    """The node's metrics: a registry with the request metrics and the node's collector, and
    the HTTP endpoint serving it (``start``/``stop``)."""

    def __init__(self, node: Node, clock: Clock) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.requests = RequestMetrics()
        self.registry.register(self.requests)
        self.collector = NodeCollector(node)
        self.registry.register(self.collector)
        self.interceptor = RequestMetricsInterceptor(self.requests, clock)
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
