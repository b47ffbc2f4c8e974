"""The workload run through every fault: producers and consumers recording a history.

Several producers (each its own ``Producer``, acks=-1, retrying) send unique values
``p<producer>-<seq>`` to a topic with three partitions, replication factor 3 and
min.insync.replicas 2 at a bounded rate, not waiting for answers; each send is recorded
with its send and acknowledgement times and the (partition, offset) it was acknowledged at, or
its error. The producers are the odradek SDK's (gRPC; ``producer="sdk"``), librdkafka's
through confluent-kafka on the nodes' Kafka listeners (``producer="librdkafka"``: Kafka's wire
protocol, its idempotent producer and its own retries), kafka-python's there
(``producer="kafka-python"``), or one of each (``producer="every"``: the three clients through
the same faults, told apart by ``History.producer_kinds``), sending the same values at the same
rate into the same history. Consumers (the SDK's) read every partition from the beginning,
recording each (partition, offset, value) they are given. The checker (``checker.py``) judges
the history against the log read after the fault has healed.

Thread-safety: each producer and consumer runs in a thread of its own and appends to its own
list; the lists are read only after ``stop`` has joined the threads. (librdkafka calls a
producer's delivery callbacks from that producer's own ``poll``/``flush``, in its thread.)
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Literal

import confluent_kafka
import kafka
import kafka.errors

from odradek import Consumer, Producer, RecordMetadata, TopicPartition
from tests.containers.cluster import now_s

TOPIC = "workload"
PARTITIONS = 3
PRODUCERS = 3
CONSUMERS = 2
SEND_INTERVAL_S = 0.01  # per producer: about 100 sends a second each, 300 in all
REQUEST_TIMEOUT_MS = 5_000
"""Clients give up on a request to a node that stopped answering (paused, partitioned) after
5 s and retry elsewhere, rather than after the default 30 s."""
METADATA_MAX_AGE_MS = 5_000
DELIVERY_TIMEOUT_MS = 120_000
"""How long a send may take, retries included (Kafka's ``delivery.timeout.ms`` default): long
enough to ride out every fault of the suite."""
ProducerKind = Literal["sdk", "librdkafka", "kafka-python"]
EVERY_CLIENT: tuple[ProducerKind, ...] = ("sdk", "librdkafka", "kafka-python")


@dataclass
class Send:
    """One send: ``ok`` once acknowledged at (``partition``, ``offset``), else ``error``."""

    producer: int
    value: bytes
    sent_at: float
    acked_at: float | None = None
    partition: int = -1
    offset: int = -1
    error: str | None = None
    offset_reported: bool = True
    """False for an acknowledgement that came without its offset: librdkafka's idempotent
    producer reports a message as delivered without one when the success of a later batch of
    the same producer and partition implies it (the broker accepted the next sequence number)
    while its own answer was an error or never came (its ``IMPLICITACK``). The checker judges
    such a value acknowledged (it must be in the final log, in ``partition``) but cannot judge
    its offset."""

    @property
    def ok(self) -> bool:
        return self.acked_at is not None


@dataclass(frozen=True, slots=True)
class Read:
    partition: int
    offset: int
    value: bytes


@dataclass
class History:
    """Everything the clients did and saw, and when the faults were."""

    sends: list[Send] = field(default_factory=list)
    reads: dict[int, list[Read]] = field(default_factory=dict)
    """Per consumer, the records it was given, in order."""
    consumer_errors: int = 0
    faults: list[tuple[float, float]] = field(default_factory=list)
    """(start, healed) of each fault, in ``now_s()`` seconds."""
    fault_roles: list[dict[int, str]] = field(default_factory=list)
    """Per fault (as ``faults``), partition -> the faulted node's role in it (``leader``,
    ``follower``, ...); partitions it had no part in are left out."""
    idempotent: bool = True
    """Whether the producers were idempotent (the SDK's default)."""
    producer_kinds: dict[int, ProducerKind] = field(default_factory=dict)
    """Producer id -> whose producer it was."""


class Workload:
    """Producers and consumers against ``bootstrap_servers`` until ``stop``. Not thread-safe:
    one test thread calls ``start``, ``fault``/``healed`` and ``stop``."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        idempotent: bool = True,
        client_config: Mapping[str, Any] | None = None,
        producer: ProducerKind | Literal["every"] = "sdk",
        kafka_bootstrap_servers: str | None = None,
    ) -> None:
        """``client_config``: the SDK's security keywords (a TLS cluster's). ``producer``: whose
        producers send (module docstring); librdkafka's and kafka-python's reach
        ``kafka_bootstrap_servers`` (the nodes' Kafka listeners). The consumers are the SDK's
        either way."""
        kinds = EVERY_CLIENT if producer == "every" else (producer,) * PRODUCERS
        if set(kinds) != {"sdk"} and kafka_bootstrap_servers is None:
            raise ValueError("Kafka clients' producers need kafka_bootstrap_servers")
        self.bootstrap_servers = bootstrap_servers
        self.kafka_bootstrap_servers = kafka_bootstrap_servers
        self.client_config = dict(client_config or {})
        self.producer = producer
        self.history = History(idempotent=idempotent, producer_kinds=dict(enumerate(kinds)))
        self._stop = threading.Event()
        self._sends: list[list[Send]] = [[] for _ in kinds]
        self._reads: list[list[Read]] = [[] for _ in range(CONSUMERS)]
        self._consumer_errors = [0] * CONSUMERS
        run = {
            "sdk": self._produce,
            "librdkafka": self._produce_librdkafka,
            "kafka-python": self._produce_kafka_python,
        }
        self._threads = [
            threading.Thread(target=run[kind], args=(p,), name=f"producer-{p}-{kind}")
            for p, kind in enumerate(kinds)
        ] + [
            threading.Thread(target=self._consume, args=(c,), name=f"consumer-{c}")
            for c in range(CONSUMERS)
        ]
        self._fault_started: float | None = None
        self._fault_roles: dict[int, str] = {}

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def fault(self, roles: Mapping[int, str] | None = None) -> None:
        """Marks the start of a fault (the unavailability window is measured around it);
        ``roles`` maps each partition the fault touches to the faulted node's role in it."""
        self._fault_started = now_s()
        self._fault_roles = dict(roles or {})

    def healed(self) -> None:
        """Marks the end of the fault begun by the last ``fault``."""
        assert self._fault_started is not None
        self.history.faults.append((self._fault_started, now_s()))
        self.history.fault_roles.append(self._fault_roles)
        self._fault_started = None

    def acked(self) -> int:
        """Acknowledged sends so far (a racy count, for progress checks)."""
        return sum(1 for sends in self._sends for s in list(sends) if s.ok)

    def stop(self, timeout_s: float = 150.0) -> History:
        """Stops sending, waits for every outstanding send to be answered, stops reading."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout_s)
            assert not thread.is_alive(), f"{thread.name} did not stop"
        for sends in self._sends:
            self.history.sends.extend(sends)
        self.history.reads = dict(enumerate(self._reads))
        self.history.consumer_errors = sum(self._consumer_errors)
        return self.history

    def _produce(self, producer_id: int) -> None:
        sends = self._sends[producer_id]
        with Producer(
            self.bootstrap_servers,
            acks=-1,
            linger_ms=2,
            request_timeout_ms=REQUEST_TIMEOUT_MS,
            delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
            metadata_max_age_ms=METADATA_MAX_AGE_MS,
            enable_idempotence=self.history.idempotent,
            **self.client_config,
        ) as producer:
            seq = 0
            while not self._stop.is_set():
                send = Send(producer_id, f"p{producer_id}-{seq}".encode(), now_s())
                sends.append(send)
                producer.send(TOPIC, send.value).add_done_callback(functools.partial(_record, send))
                seq += 1
                time.sleep(SEND_INTERVAL_S)
            producer.flush(120)

    def _produce_librdkafka(self, producer_id: int) -> None:
        """``_produce`` with librdkafka's producer on the Kafka listeners: acks=all, idempotent
        as the history says, the same timeouts; each send's outcome comes from its delivery
        report, served by ``poll``/``flush`` in this thread."""
        sends = self._sends[producer_id]
        assert self.kafka_bootstrap_servers is not None
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": self.kafka_bootstrap_servers,
                "client.id": f"workload-producer-{producer_id}",
                "acks": "all",
                "enable.idempotence": self.history.idempotent,
                "linger.ms": 2,
                "request.timeout.ms": REQUEST_TIMEOUT_MS,
                "message.timeout.ms": DELIVERY_TIMEOUT_MS,
                "topic.metadata.refresh.interval.ms": METADATA_MAX_AGE_MS,
                "error_cb": functools.partial(_fatal, sends),
            }
        )
        seq = 0
        while not self._stop.is_set():
            send = Send(producer_id, f"p{producer_id}-{seq}".encode(), now_s())
            sends.append(send)
            try:
                producer.produce(
                    TOPIC, send.value, on_delivery=functools.partial(_record_delivery, send)
                )
            except (BufferError, confluent_kafka.KafkaException) as exc:  # e.g. after a fatal
                send.error = repr(exc)
            producer.poll(0)
            seq += 1
            time.sleep(SEND_INTERVAL_S)
        producer.flush(DELIVERY_TIMEOUT_MS / 1000)

    def _produce_kafka_python(self, producer_id: int) -> None:
        """``_produce`` with kafka-python's producer on the Kafka listeners: acks=all,
        idempotent as the history says, the same timeouts, retrying until the delivery timeout;
        each send's outcome comes from its future's callbacks (kafka-python's sender thread)."""
        sends = self._sends[producer_id]
        assert self.kafka_bootstrap_servers is not None
        producer = kafka.KafkaProducer(
            bootstrap_servers=self.kafka_bootstrap_servers.split(","),
            client_id=f"workload-producer-{producer_id}",
            acks="all",
            enable_idempotence=self.history.idempotent,
            linger_ms=2,
            retries=2**31 - 1,
            request_timeout_ms=REQUEST_TIMEOUT_MS,
            delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
            metadata_max_age_ms=METADATA_MAX_AGE_MS,
        )
        try:
            seq = 0
            while not self._stop.is_set():
                send = Send(producer_id, f"p{producer_id}-{seq}".encode(), now_s())
                sends.append(send)
                try:
                    future = producer.send(TOPIC, send.value)
                except kafka.errors.KafkaError as exc:
                    send.error = repr(exc)
                else:
                    future.add_callback(functools.partial(_record_kafka_python, send))
                    future.add_errback(functools.partial(_record_kafka_python_error, send))
                seq += 1
                time.sleep(SEND_INTERVAL_S)
            producer.flush(DELIVERY_TIMEOUT_MS / 1000)
        finally:
            try:
                producer.close(timeout=10)
            except kafka.errors.KafkaTimeoutError:
                # kafka-python's close flushes first and, on a timeout, raises without closing:
                # the garbage collector would close it again later, raising in whatever test
                # runs then (an unraisable exception); a cluster that broke leaves sends unsent
                producer._sender.force_close()  # no public way to abandon them
                producer._closed = True

    def _consume(self, consumer_id: int) -> None:
        """Reads from the beginning; after an error, a fresh consumer resumes after the last
        record read (what a consumer that commits offsets would do)."""
        reads = self._reads[consumer_id]
        tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        next_offset = dict.fromkeys(range(PARTITIONS), 0)
        while not self._stop.is_set():
            try:
                with Consumer(
                    self.bootstrap_servers,
                    auto_offset_reset="earliest",
                    request_timeout_ms=REQUEST_TIMEOUT_MS,
                    metadata_max_age_ms=METADATA_MAX_AGE_MS,
                    **self.client_config,
                ) as consumer:
                    consumer.assign(tps)
                    for tp in tps:
                        consumer.seek(tp, next_offset[tp.partition])
                    while not self._stop.is_set():
                        for record in consumer.poll(timeout_ms=500):
                            reads.append(Read(record.partition, record.offset, record.value or b""))
                            next_offset[record.partition] = record.offset + 1
            except Exception:  # a node down or unreachable: start again where we were
                self._consumer_errors[consumer_id] += 1
                time.sleep(0.5)


def _record(send: Send, future: Future[RecordMetadata]) -> None:
    error = future.exception()
    if error is not None:
        send.error = repr(error)
        return
    meta = future.result()
    send.partition, send.offset = meta.partition, meta.offset
    send.acked_at = now_s()


def _record_delivery(
    send: Send, error: confluent_kafka.KafkaError | None, message: confluent_kafka.Message
) -> None:
    """librdkafka's delivery report for ``send``: its (partition, offset), or its error."""
    if error is not None:
        send.error = f"{error.name()}: {error.str()}"
        return
    partition, offset = message.partition(), message.offset()
    if partition is None:  # librdkafka assigns the partition before it sends
        send.error = "a delivery report without a partition"
        return
    send.partition = partition
    if offset is None:  # delivered, the offset unknown (``Send.offset_reported``)
        send.offset_reported = False
    else:
        send.offset = offset
    send.acked_at = now_s()


def _record_kafka_python(send: Send, metadata: Any) -> None:
    """kafka-python's acknowledgement of ``send`` (its ``RecordMetadata``)."""
    send.partition, send.offset = metadata.partition, metadata.offset
    send.acked_at = now_s()


def _record_kafka_python_error(send: Send, error: BaseException) -> None:
    send.error = repr(error)


def _fatal(sends: list[Send], error: confluent_kafka.KafkaError) -> None:
    """librdkafka's error callback: transient errors (a node down) it retries by itself; a
    fatal one (the idempotent producer's guarantee broken) fails every later send, so it is
    printed where the scenario's output shows it."""
    if error.fatal():
        print(f"librdkafka fatal error after {len(sends)} sends: {error.name()}: {error.str()}")
