"""A transactional read-process-write workload (Kafka's exactly-once loop) recording a history.

On the nodes' Kafka listeners, all clients confluent-kafka's (librdkafka):

* a **feeder**: one idempotent producer (acks=all) writing unique values ``in-<n>`` to the
  input topic, ``n % 3`` its partition, at a bounded rate until ``stop_input``;
* **processors** (``PROCESSORS``), one consumer group (``GROUP``, ``read_committed``, no
  automatic commits) whose members each own a transactional producer (``transactional.id``
  ``txn-etl-<i>``): per batch of at most ``BATCH`` records read, one transaction writing each
  input ``v`` as ``v|<processor>.<transaction>`` to the same partition of the output topic and
  sending the batch's next offsets to the transaction (``send_offsets_to_transaction``, with
  the consumer's group metadata: KIP-447's generation check). On an error that requires an
  abort they abort and rewind the consumer to the group's committed offsets; on a fatal one
  (fenced) they make a new producer (``init_transactions`` fences and finishes the old one) and
  rewind; a retriable commit is retried: Kafka's EOS loop. Each transaction is recorded with
  its values and its outcome (committed, aborted, or unknown: a commit that never answered);
* a **reader**: a ``read_committed`` consumer of the output recording every record it is given
  while everything runs (what an application downstream sees during the faults).

The output value names its attempt, so the checker (``txn_checker.py``) can tell a committed
attempt from an aborted one and an input processed once from one processed twice.

Thread-safety: each client runs in a thread of its own and appends to its own list; the lists
are read only after ``stop`` has joined the threads (``committed`` counts racily, for progress
waits only). librdkafka calls delivery callbacks from the owning thread's ``poll``/``flush``.
The one exception: a report of a stalled processor polls its producer from the test thread
for the log lines waiting in its queue (librdkafka's poll may be called from any thread).
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
import time
import traceback
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Literal

import confluent_kafka
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from tests.containers.cluster import now_s

INPUT = "txn-input"
OUTPUT = "txn-output"
GROUP = "txn-etl"
PARTITIONS = 3
PROCESSORS = 3
BATCH = 20
SEND_INTERVAL_S = 0.01
"""The feeder's pace: about 100 inputs a second."""
TRANSACTION_TIMEOUT_MS = 60_000
"""The processors' ``transaction.timeout.ms``: a transaction left open by a processor that
lost its coordinator is aborted by the coordinator after this (plus its cleanup interval)."""
REQUEST_TIMEOUT_MS = 5_000
SOCKET_TIMEOUT_MS = 10_000
"""librdkafka's timeout of every request but Produce (``request.timeout.ms`` is Produce's):
FindCoordinator, AddOffsetsToTxn, TxnOffsetCommit, EndTxn, OffsetFetch sent to a paused node
are given up after 10 s rather than the default 60 s (with the default, the first passing run's
paused group coordinator left no transaction committed for 63 s, and three commits timed out)."""
OPERATION_TIMEOUT_S = 20.0
"""How long one transactional call (init, send offsets, commit, abort) may block."""
COMMIT_ATTEMPTS = 3
"""A commit whose error is retriable is tried this often before the producer is replaced."""
DEBUG = "eos"
"""What the processors' producers log (librdkafka's ``debug``) into a ring each: a call that
never returns is reported with its producer's last words (``LOG_LINES``)."""
LOG_LINES = 400
Outcome = Literal["committed", "aborted", "unknown"]


class _Ring(logging.Handler):
    """The last ``LOG_LINES`` log lines of one client (its librdkafka ``logger``)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: deque[str] = deque(maxlen=LOG_LINES)
        self._last = ""
        self._repeats = 0

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message == self._last:  # a thread looping (a terminating broker logs each turn)
            self._repeats += 1
            return
        if self._repeats:
            self.lines.append(f"  (the line above {self._repeats} times more)")
        self._last, self._repeats = message, 0
        self.lines.append(f"{now_s():.3f} {message}")


def transactional_id(processor: int) -> str:
    return f"txn-etl-{processor}"


def output_value(value: bytes, processor: int, number: int) -> bytes:
    return value + f"|{processor}.{number}".encode()


def input_of(output: bytes) -> bytes:
    """The input an output value was made from."""
    return output.rpartition(b"|")[0]


@dataclass
class Txn:
    """One transaction of one processor: the values it wrote, the input offsets it sent (input
    partition -> next offset), its outcome and when that was known."""

    processor: int
    number: int
    values: list[bytes] = field(default_factory=list)
    offsets: dict[int, int] = field(default_factory=dict)
    outcome: Outcome = "unknown"
    ended_at: float | None = None
    error: str | None = None


@dataclass
class TxnHistory:
    """Everything the clients did and saw, and when the faults were."""

    inputs: list[bytes] = field(default_factory=list)
    """Input values the feeder's producer acknowledged."""
    input_errors: int = 0
    txns: list[Txn] = field(default_factory=list)
    reads: list[tuple[int, int, bytes]] = field(default_factory=list)
    """The live read_committed reader's (partition, offset, value), in order."""
    errors: Counter[str] = field(default_factory=Counter)
    """The processors' transactional errors, by name."""
    producers_replaced: int = 0
    rewinds: int = 0
    faults: list[tuple[str, float, float]] = field(default_factory=list)
    """(what, start, healed) of each fault, in ``now_s()`` seconds."""


class TxnWorkload:
    """The feeder, the processors and the reader against ``bootstrap`` (Kafka listeners) until
    ``stop``. Not thread-safe: one test thread calls every method."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.history = TxnHistory()
        self._stop_input = threading.Event()
        self._stop = threading.Event()
        self._inputs: list[bytes] = []
        self._input_errors: list[str] = []
        self._txns: list[list[Txn]] = [[] for _ in range(PROCESSORS)]
        self._errors: list[Counter[str]] = [Counter() for _ in range(PROCESSORS)]
        self._replaced = [0] * PROCESSORS
        self._rewinds = [0] * PROCESSORS
        self._reads: list[tuple[int, int, bytes]] = []
        self._feeder = threading.Thread(target=self._feed, name="txn-feeder")
        self._processors = [
            threading.Thread(target=self._process, args=(i,), name=f"txn-processor-{i}")
            for i in range(PROCESSORS)
        ]
        self._reader = threading.Thread(target=self._read, name="txn-reader")
        self._fault: tuple[str, float] | None = None
        self._logs = [_Ring() for _ in range(PROCESSORS)]
        self._producers: list[confluent_kafka.Producer | None] = [None] * PROCESSORS
        self._loggers = []
        for index, ring in enumerate(self._logs):
            # a logger of its own, outside logging's registry (no parent: nothing propagates,
            # and it goes with the workload)
            logger = logging.Logger(f"txn-processor-{index}", logging.DEBUG)
            logger.addHandler(ring)
            self._loggers.append(logger)

    def start(self) -> None:
        for thread in (self._feeder, *self._processors, self._reader):
            thread.start()

    def fault(self, what: str) -> None:
        self._fault = (what, now_s())

    def healed(self) -> None:
        assert self._fault is not None
        what, started = self._fault
        self.history.faults.append((what, started, now_s()))
        self._fault = None

    def committed(self) -> int:
        """Transactions committed so far (racy, for progress waits)."""
        return sum(1 for txns in self._txns for t in list(txns) if t.outcome == "committed")

    def stop_input(self, timeout_s: float = 150.0) -> None:
        """Stops feeding; returns once every input sent is answered."""
        self._stop_input.set()
        self._feeder.join(timeout_s)
        assert not self._feeder.is_alive(), f"the feeder did not stop, in:\n{_stack(self._feeder)}"

    def stop(self, timeout_s: float = 150.0) -> TxnHistory:
        """Stops the processors (each after its current transaction) and the reader."""
        self.stop_input(timeout_s)
        self._stop.set()
        for thread in (*self._processors, self._reader):
            thread.join(timeout_s)
            assert not thread.is_alive(), (
                f"{thread.name} did not stop, in:\n{_stack(thread)}\n{self._last_words(thread)}"
            )
        history = self.history
        history.inputs = list(self._inputs)
        history.input_errors = len(self._input_errors)
        history.txns = sorted(
            (t for txns in self._txns for t in txns), key=lambda t: (t.processor, t.number)
        )
        history.reads = list(self._reads)
        for errors in self._errors:
            history.errors.update(errors)
        history.producers_replaced = sum(self._replaced)
        history.rewinds = sum(self._rewinds)
        return history

    def report(self) -> str:
        """Each processor's transactions so far, errors, and its producer's last log lines
        (why the loop makes no progress)."""
        out = []
        for index, thread in enumerate(self._processors):
            txns = list(self._txns[index])
            last = f"#{txns[-1].number} {txns[-1].outcome} ({txns[-1].error})" if txns else "-"
            out.append(
                f"processor {index}: {len(txns)} transactions, the last {last}; errors "
                f"{dict(self._errors[index])}; replaced {self._replaced[index]}; now in:\n"
                f"{_stack(thread)}\n{self._last_words(thread, 60)}"
            )
        return "\n".join(out)

    def _last_words(self, thread: threading.Thread, count: int = LOG_LINES) -> str:
        """What the producer of processor ``thread`` logged last (librdkafka's debug)."""
        if thread not in self._processors:
            return ""
        index = self._processors.index(thread)
        producer = self._producers[index]
        if producer is not None:  # the logs wait in its queue for a poll
            producer.poll(0)
        lines = list(self._logs[index].lines)[-count:]
        return f"its producer's last {len(lines)} log lines:\n" + "\n".join(lines)

    # -- the feeder ---------------------------------------------------------------------------

    def _feed(self) -> None:
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "client.id": "txn-feeder",
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "request.timeout.ms": REQUEST_TIMEOUT_MS,
                "message.timeout.ms": 120_000,
            }
        )
        seq = 0
        while not self._stop_input.is_set():
            value = f"in-{seq}".encode()
            try:
                producer.produce(
                    INPUT,
                    value,
                    partition=seq % PARTITIONS,
                    on_delivery=functools.partial(self._delivered, value),
                )
            except (BufferError, KafkaException) as exc:
                self._input_errors.append(repr(exc))
            producer.poll(0)
            seq += 1
            time.sleep(SEND_INTERVAL_S)
        producer.flush(150)

    def _delivered(self, value: bytes, error: KafkaError | None, _: Any) -> None:
        if error is None:
            self._inputs.append(value)
        else:
            self._input_errors.append(f"{error.name()}: {error.str()}")

    # -- the processors -----------------------------------------------------------------------

    def _process(self, index: int) -> None:
        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "client.id": f"txn-processor-{index}",
                "group.id": GROUP,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10_000,
                "heartbeat.interval.ms": 1_000,
                "socket.timeout.ms": SOCKET_TIMEOUT_MS,
            }
        )
        consumer.subscribe([INPUT])
        producer = self._producer(index)
        number = 0
        try:
            while not self._stop.is_set():
                records = [m for m in consumer.consume(BATCH, 0.5) if m.error() is None]
                if producer is not None:
                    producer.poll(0)  # serves its log lines to the ring
                if not records or producer is None:
                    if producer is None:
                        producer = self._producer(index)
                    continue
                number += 1
                txn = Txn(index, number)
                self._txns[index].append(txn)
                try:
                    self._transact(producer, consumer, records, txn)
                except KafkaException as exc:
                    error: KafkaError = exc.args[0]
                    self._errors[index][error.name()] += 1
                    txn.error = f"{error.name()}: {error.str()}"
                    if error.txn_requires_abort() and self._abort(producer, index):
                        txn.outcome = "aborted"
                    else:  # fatal (fenced), or a commit or abort that never answered
                        producer = self._replace(producer, index)
                    txn.ended_at = now_s()
                    self._rewind(consumer, index)
        finally:
            consumer.close()
            self._producers[index] = None  # the last producer goes with the thread

    def _transact(
        self,
        producer: confluent_kafka.Producer,
        consumer: confluent_kafka.Consumer,
        records: list[confluent_kafka.Message],
        txn: Txn,
    ) -> None:
        producer.begin_transaction()
        for message in records:
            partition, offset = _placed(message)
            value = output_value(message.value() or b"", txn.processor, txn.number)
            producer.produce(OUTPUT, value, partition=partition)
            txn.values.append(value)
            txn.offsets[partition] = offset + 1
        producer.send_offsets_to_transaction(
            [TopicPartition(INPUT, p, o) for p, o in sorted(txn.offsets.items())],
            consumer.consumer_group_metadata(),
            OPERATION_TIMEOUT_S,
        )
        for attempt in range(COMMIT_ATTEMPTS):
            try:
                producer.commit_transaction(OPERATION_TIMEOUT_S)
                break
            except KafkaException as exc:
                error: KafkaError = exc.args[0]
                if not error.retriable() or attempt == COMMIT_ATTEMPTS - 1:
                    raise
                self._errors[txn.processor][error.name()] += 1
        txn.outcome = "committed"
        txn.ended_at = now_s()

    def _config(self, index: int) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.bootstrap,
            "client.id": f"txn-processor-{index}",
            "transactional.id": transactional_id(index),
            "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
            "request.timeout.ms": REQUEST_TIMEOUT_MS,
            "socket.timeout.ms": SOCKET_TIMEOUT_MS,
            "linger.ms": 5,
            # librdkafka (2.16) can leave send_offsets_to_transaction blocked for good when the
            # group coordinator it cached leaves the metadata (a broker fenced while paused):
            # it drops that broker's handle but its coordinator request keeps waiting for the
            # handle to come up, past the call's timeout, woken only by a broker's connection
            # going up or down (confluentinc/librdkafka#5511 and #5456, open). Seen here: a
            # processor blocked for good in one run of four. With sparse connections off and
            # the metadata refreshed every 5 s (not 5 min) it learns the broker is back and
            # connects to it, and that wakes the request.
            "enable.sparse.connections": False,
            "topic.metadata.refresh.interval.ms": 5_000,
            "debug": DEBUG,
            "logger": self._loggers[index],
        }

    def _producer(self, index: int) -> confluent_kafka.Producer | None:
        """A transactional producer with ``index``'s id, initialised (None if it could not be
        before the workload stopped: the caller tries again)."""
        producer = self._producers[index] = confluent_kafka.Producer(self._config(index))
        while not self._stop.is_set():
            try:
                producer.init_transactions(OPERATION_TIMEOUT_S)
                return producer
            except KafkaException as exc:
                error: KafkaError = exc.args[0]
                self._errors[index][f"init: {error.name()}"] += 1
                if not error.retriable():  # a fatal error: this handle is done
                    producer = self._producers[index] = confluent_kafka.Producer(
                        self._config(index)
                    )
        return None

    def _replace(
        self, old: confluent_kafka.Producer, index: int
    ) -> confluent_kafka.Producer | None:
        """A new producer for the same transactional id (its InitProducerId fences ``old`` and
        has the coordinator finish whatever ``old`` left open)."""
        del old
        self._replaced[index] += 1
        return self._producer(index)

    def _abort(self, producer: confluent_kafka.Producer, index: int) -> bool:
        """Aborts the open transaction; False if that failed (the producer is then replaced)."""
        for _ in range(COMMIT_ATTEMPTS):
            try:
                producer.abort_transaction(OPERATION_TIMEOUT_S)
                return True
            except KafkaException as exc:
                error: KafkaError = exc.args[0]
                self._errors[index][f"abort: {error.name()}"] += 1
                if not error.retriable():
                    return False
        return False

    def _rewind(self, consumer: confluent_kafka.Consumer, index: int) -> None:
        """Seeks every assigned partition back to the group's committed offset (the beginning
        where none is committed): what was read since is read again and processed anew."""
        self._rewinds[index] += 1
        while not self._stop.is_set():
            try:
                assignment = consumer.assignment()
                for tp in consumer.committed(assignment, OPERATION_TIMEOUT_S):
                    offset = tp.offset if tp.offset >= 0 else confluent_kafka.OFFSET_BEGINNING
                    consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
                return
            except KafkaException as exc:
                error: KafkaError = exc.args[0]
                self._errors[index][f"rewind: {error.name()}"] += 1

    # -- the reader ---------------------------------------------------------------------------

    def _read(self) -> None:
        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "client.id": "txn-reader",
                "group.id": "txn-reader",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            }
        )
        consumer.assign(
            [TopicPartition(OUTPUT, p, confluent_kafka.OFFSET_BEGINNING) for p in range(PARTITIONS)]
        )
        try:
            while not self._stop.is_set():
                for message in consumer.consume(500, 0.5):
                    if message.error() is None:
                        self._reads.append((*_placed(message), message.value() or b""))
        finally:
            consumer.close()


def _placed(message: confluent_kafka.Message) -> tuple[int, int]:
    """A consumed message's (partition, offset): always known for one without an error."""
    partition, offset = message.partition(), message.offset()
    assert partition is not None and offset is not None
    return partition, offset


def _stack(thread: threading.Thread) -> str:
    """Where ``thread`` is now (what a client call that never returned was)."""
    frame = sys._current_frames().get(thread.ident or -1)
    return "".join(traceback.format_stack(frame)) if frame is not None else "(gone)"
