"""``odradek.Producer``: send records to topics, batched per partition, with delivery futures.

Kafka's producer::

    with odradek.Producer("127.0.0.1:9092") as producer:
        future = producer.send("events", b"hello", key=b"user-1")
        metadata = future.result()      # RecordMetadata(topic, partition, offset, timestamp)
        producer.send_many("events", [b"a", b"b", b"c"]).result()   # the bulk path

and its transactions (``transactional_id``; :mod:`odradek.client.transactional`)::

    producer = odradek.Producer("127.0.0.1:9092", transactional_id="orders-1")
    producer.init_transactions()        # fences older producers of the id
    producer.begin_transaction()
    producer.send("orders", b"...")
    producer.commit_transaction()       # or abort_transaction(): read_committed readers skip it

How it works (``docs/sdk.md`` has the long form, with the figures behind the defaults):

* :meth:`Producer.send` picks the partition (the one given; Kafka's murmur2 hash of the key;
  or the topic's sticky partition), encodes the record straight into that partition's open
  batch in the :class:`~odradek.client.accumulator.RecordAccumulator` and returns a
  :class:`~odradek.client.futures.FutureRecordMetadata`: a three-slot handle on the batch's one
  result, no lock or thread object per record. The topic's partitions are looked up once (up
  to ``max_block_ms``) and then kept current by the I/O thread's metadata refreshes.
* **Back-pressure.** The records not yet acknowledged are bounded by ``buffer_memory``: a
  ``send()`` that finds the buffer full blocks up to ``max_block_ms``, then raises
  :class:`~odradek.client.errors.BufferExhaustedError`. Nothing accepted is dropped.
* :meth:`Producer.send_many` is the bulk path: many values (with keys, or not) encoded in one
  call into as few batches as fit, with one future for all of them.
* A background thread (:class:`~odradek.client.sender.Sender`) sends a batch when it is full,
  ``linger_ms`` after its first record, or on :meth:`Producer.flush` / :meth:`Producer.close`;
  the ready batches of all partitions one node leads go in one ``Produce`` request.
* Retriable errors (``NOT_LEADER_OR_FOLLOWER``, ``LEADER_NOT_AVAILABLE``,
  ``UNKNOWN_TOPIC_OR_PARTITION``, ``NOT_ENOUGH_REPLICAS``, ``REQUEST_TIMED_OUT``, an unreachable
  node, …) refresh the metadata when the leader may have moved and retry after a backoff,
  up to ``retries`` times and within ``delivery_timeout_ms`` of the record's send; each retry
  is logged at WARNING on the ``odradek.producer`` logger with the broker's error, and a
  record that runs out of time fails with that error named. Other errors fail the record's
  future with the typed error of :mod:`odradek.errors`.
* Transactions: with ``transactional_id`` the producer is idempotent and its records are sent
  inside transactions only: each partition joins the transaction (AddPartitionsToTxn) before
  its first batch is sent, ``commit_transaction`` flushes before EndTxn, the epoch comes from
  InitProducerId at the id's coordinator, and errors are abortable
  (:class:`~odradek.client.errors.TransactionAbortableError`: abort and try again) or fatal
  (:class:`~odradek.errors.ProducerFencedError`: close).
* Idempotence and order: by default the producer is idempotent (``acks=-1``, producer id and
  sequence numbers, :mod:`odradek.client.idempotence`): up to five batches of a partition are
  in flight, a retry is stored once, and records of a partition are stored in send order even
  across retries. Without idempotence one batch per partition is in flight by default, which
  keeps the order; more in flight may then store a retried batch after a later one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self, Unpack

from odradek.client.accumulator import RecordAccumulator
from odradek.client.connection import ConnectionPool, parse_bootstrap_servers
from odradek.client.errors import ProducerClosedError, TransactionStateError
from odradek.client.futures import FutureRecordMetadata, ProduceRequestResult, wait_all
from odradek.client.idempotence import MAX_IN_FLIGHT_FOR_IDEMPOTENCE, IdempotenceState
from odradek.client.metadata import ClusterMetadata, MetadataCache
from odradek.client.security import SecurityConfig, SecurityOptions
from odradek.client.sender import Sender
from odradek.client.transaction_manager import TransactionManager
from odradek.client.transactional import ConsumerGroupMetadata, ProducerTransactions
from odradek.client.transactions import TransactionCoordinatorClient
from odradek.client.types import RecordMetadata, TopicPartition
from odradek.clock import Clock, SystemClock
from odradek.errors import MessageTooLargeError, OdradekError
from odradek.partitioner import DefaultPartitioner, Partitioner, murmur2
from odradek.records import RECORD_BATCH_OVERHEAD, Compression
from odradek.records.appender import encoded_headers

__all__ = ["Producer", "ProducerConfig", "SendManyFuture"]

log = logging.getLogger("odradek.producer")

_INT32_MAX = 2**31 - 1
# Upper bound of a record's bytes beyond its key, value and encoded headers (the varints of
# its length, deltas and key and value lengths, and its attributes byte).
_RECORD_BOUND = 31
# How many keys' partition hashes the producer remembers (keys repeat: users, devices, …).
_KEY_HASH_CACHE = 65_536

# The defaults chosen by measurement (docs/sdk.md gives the figures).
DEFAULT_BATCH_SIZE = 1_048_576
DEFAULT_LINGER_MS = 5
DEFAULT_MAX_IN_FLIGHT = 5  # with idempotence (the default); 1 without it, to keep order
DEFAULT_BUFFER_MEMORY = 33_554_432


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    """A producer's settings, with Kafka's names (``linger.ms`` → ``linger_ms``) and defaults.

    Raises ``ValueError`` for a value out of range or an unknown codec.
    """

    # host:port of one or more nodes to learn the cluster from.
    bootstrap_servers: tuple[str, ...]
    # 0: do not wait for the leader; 1: the leader appended; -1: the whole ISR has the record.
    acks: int = -1
    # How long a batch waits for more records before it is sent.
    linger_ms: int = DEFAULT_LINGER_MS
    # The size in bytes (before compression) at which a partition's batch is full.
    batch_size: int = DEFAULT_BATCH_SIZE
    # none, gzip, snappy, lz4 or zstd: how batches are compressed.
    compression: str = "none"
    # How often a batch is retried after a retriable error (Kafka's default: unbounded, with
    # delivery_timeout_ms the real limit).
    retries: int = _INT32_MAX
    # The longest a record may take from send() to success or failure, retries included.
    delivery_timeout_ms: int = 120_000
    # The wait before the first retry; it doubles with each retry up to retry_backoff_max_ms.
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    # How long to wait for a node's answer (and, with acks=-1, how long the leader waits for
    # the ISR).
    request_timeout_ms: int = 30_000
    # Batches of one partition in flight at once. The idempotent producer keeps send order
    # across retries with up to 5; without idempotence only 1 does.
    max_in_flight_per_partition: int = DEFAULT_MAX_IN_FLIGHT
    # The largest Produce request in bytes; a record that cannot fit fails with
    # MESSAGE_TOO_LARGE.
    max_request_size: int = 1_048_576
    # The bytes of records the producer holds that are not yet acknowledged; a send() that
    # finds it full blocks (up to max_block_ms) until the brokers acknowledge some.
    buffer_memory: int = DEFAULT_BUFFER_MEMORY
    # How long send() may block: to learn a topic's partitions, and for buffer_memory.
    max_block_ms: int = 60_000
    # Metadata older than this is refreshed even without errors.
    metadata_max_age_ms: int = 300_000
    # Producer id and sequence numbers on every batch, so that a retry is stored once and in
    # order (Kafka's enable.idempotence, on by default since 3.0; needs acks=-1).
    enable_idempotence: bool = True
    # The id of a transactional producer (Kafka's transactional.id): its records are sent in
    # transactions, and a newer producer with the same id fences it. None: no transactions.
    transactional_id: str | None = None
    # The longest a transaction may stay open before its coordinator aborts it (Kafka's
    # transaction.timeout.ms; at most the brokers' transaction.max.timeout.ms).
    transaction_timeout_ms: int = 60_000

    def __post_init__(self) -> None:
        if self.acks not in (-1, 0, 1):
            raise ValueError(f"acks must be -1, 0 or 1, not {self.acks!r}")
        if self.transactional_id is not None:
            if not isinstance(self.transactional_id, str) or not self.transactional_id:
                raise ValueError("transactional_id must be a non-empty str")
            if not self.enable_idempotence:
                raise ValueError(
                    "a transactional producer is idempotent: transactional_id needs "
                    "enable_idempotence=True"
                )
        if self.enable_idempotence:
            if self.acks != -1:
                raise ValueError(
                    f"enable_idempotence=True needs acks=-1 (all), not acks={self.acks}: "
                    "set enable_idempotence=False to send with acks 0 or 1"
                )
            if self.max_in_flight_per_partition > MAX_IN_FLIGHT_FOR_IDEMPOTENCE:
                raise ValueError(
                    "enable_idempotence=True needs max_in_flight_per_partition of at most "
                    f"{MAX_IN_FLIGHT_FOR_IDEMPOTENCE}, not {self.max_in_flight_per_partition}"
                )
            if self.retries == 0:
                raise ValueError("enable_idempotence=True needs retries > 0")
        try:
            Compression.from_name(self.compression)
        except OdradekError:
            names = ", ".join(c.label for c in Compression)
            raise ValueError(
                f"compression must be one of {names}, not {self.compression!r}"
            ) from None
        checks = {
            "linger_ms": (self.linger_ms, 0),
            "batch_size": (self.batch_size, 1),
            "retries": (self.retries, 0),
            "delivery_timeout_ms": (self.delivery_timeout_ms, 1),
            "retry_backoff_ms": (self.retry_backoff_ms, 0),
            "retry_backoff_max_ms": (self.retry_backoff_max_ms, 0),
            "request_timeout_ms": (self.request_timeout_ms, 1),
            "max_in_flight_per_partition": (self.max_in_flight_per_partition, 1),
            "max_request_size": (self.max_request_size, RECORD_BATCH_OVERHEAD + 1),
            "buffer_memory": (self.buffer_memory, 1),
            "max_block_ms": (self.max_block_ms, 0),
            "metadata_max_age_ms": (self.metadata_max_age_ms, 1),
            "transaction_timeout_ms": (self.transaction_timeout_ms, 1),
        }
        for name, (value, low) in checks.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, not {value!r}")
        if self.request_timeout_ms > _INT32_MAX:
            raise ValueError("request_timeout_ms must fit in 32 bits")
        if self.delivery_timeout_ms < self.linger_ms + self.request_timeout_ms:
            raise ValueError(
                "delivery_timeout_ms must be at least linger_ms + request_timeout_ms "
                f"({self.linger_ms + self.request_timeout_ms}), not {self.delivery_timeout_ms}"
            )


class _TopicInfo:
    """What ``send()`` needs of a topic, looked up once: its partition count, the partitions
    with a leader, and the sticky partition of unkeyed records (a cache of the partitioner's
    choice). Replaced, never changed, when the metadata changes, except ``sticky``."""

    __slots__ = ("available", "num_partitions", "sticky")

    def __init__(self, num_partitions: int, available: tuple[int, ...], sticky: int) -> None:
        self.num_partitions = num_partitions
        self.available = available
        self.sticky = sticky


class SendManyFuture:
    """The future of the records of one :meth:`Producer.send_many` call, together.

    :meth:`result` waits for every batch they went into and returns how many were delivered,
    or raises the first batch's error; :meth:`metadata` gives each record's
    :class:`RecordMetadata` in the order they were given. Thread-safe.
    """

    __slots__ = ("_parts", "_timestamp", "count")

    def __init__(self, parts: list[tuple[ProduceRequestResult, int, int, int]], timestamp: int):
        # (batch result, index in the batch of the first record, how many, index in the input)
        self._parts = parts
        self._timestamp = timestamp
        self.count = sum(part[2] for part in parts)

    def done(self) -> bool:
        return all(part[0].is_done for part in self._parts)

    def _wait(self, timeout: float | None) -> None:
        if not wait_all([part[0] for part in self._parts], timeout):
            raise TimeoutError(
                f"{self.count} record(s) of send_many not all delivered within {timeout} s"
            )

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The first error among the records' batches (``None``: all delivered). Raises
        ``TimeoutError`` if they are not all settled after ``timeout`` seconds."""
        self._wait(timeout)
        for part in self._parts:
            if part[0].error is not None:
                return part[0].error
        return None

    def errors(self, timeout: float | None = None) -> dict[int, BaseException]:
        """Each failed record's error by its index in the records given to ``send_many``
        (empty: all delivered): its batch's error, or where the broker named the batch's
        invalid records (KIP-467) each named record's own ``InvalidRecordError`` and
        ``InvalidDifferentRecordError`` for the others, as :meth:`FutureRecordMetadata.exception`
        gives them. Raises ``TimeoutError`` if they are not all settled after ``timeout``
        seconds."""
        self._wait(timeout)
        out: dict[int, BaseException] = {}
        for result, first, count, position in self._parts:
            if result.error is None:
                continue
            for i in range(count):
                error = result.error_of(first + i)
                if error is not None:
                    out[position + i] = error
        return out

    def result(self, timeout: float | None = None) -> int:
        """How many records were delivered (all of them), once they are. Raises the first
        batch's typed error if any failed, ``TimeoutError`` after ``timeout`` seconds."""
        error = self.exception(timeout)
        if error is not None:
            raise error
        return self.count

    def metadata(self, timeout: float | None = None) -> list[RecordMetadata]:
        """Each record's metadata, in the order given to ``send_many``. Raises as
        :meth:`result`."""
        self.result(timeout)
        out: list[RecordMetadata | None] = [None] * self.count
        for result, first, count, position in self._parts:
            tp = result.tp
            base = result.base_offset
            timestamp = (
                result.log_append_time_ms if result.log_append_time_ms >= 0 else self._timestamp
            )
            for i in range(count):
                offset = base + first + i if base >= 0 else -1
                out[position + i] = RecordMetadata(tp.topic, tp.partition, offset, timestamp)
        return [m for m in out if m is not None]

    def add_done_callback(self, fn: object) -> None:
        """Call ``fn(self)`` once every batch is settled (on the producer's I/O thread, or at
        once). An exception it raises is logged and ignored."""
        remaining = [len(self._parts)]
        lock = threading.Lock()
        callback = fn
        assert callable(callback)

        def one_done(_: object) -> None:
            with lock:
                remaining[0] -= 1
                last = remaining[0] == 0
            if last:
                try:
                    callback(self)
                except Exception:
                    log.exception("a send_many() callback raised")

        if not self._parts:
            one_done(None)
            return
        for result, first, _count, _position in self._parts:
            result.add_callback(one_done, FutureRecordMetadata(result, first, self._timestamp))


class Producer:
    """Sends records to odradek; thread-safe (share one producer between threads).

    Construct with the bootstrap servers and any :class:`ProducerConfig` field as a keyword,
    plus ``partitioner`` (a :class:`~odradek.partitioner.Partitioner`) and ``clock``. Creating
    a producer starts its I/O thread but does not connect yet. Raises ``ValueError`` for bad
    settings.
    """

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        acks: int = -1,
        linger_ms: int = DEFAULT_LINGER_MS,
        batch_size: int = DEFAULT_BATCH_SIZE,
        compression: str = "none",
        retries: int = _INT32_MAX,
        delivery_timeout_ms: int = 120_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1_000,
        request_timeout_ms: int = 30_000,
        max_in_flight_per_partition: int | None = None,
        max_request_size: int = 1_048_576,
        buffer_memory: int = DEFAULT_BUFFER_MEMORY,
        max_block_ms: int = 60_000,
        metadata_max_age_ms: int = 300_000,
        enable_idempotence: bool | None = None,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60_000,
        partitioner: Partitioner | None = None,
        clock: Clock | None = None,
        **security: Unpack[SecurityOptions],
    ) -> None:
        if enable_idempotence is None and transactional_id is not None:
            enable_idempotence = True  # Kafka's rule: a transactional producer is idempotent
        if enable_idempotence is None:
            # Kafka's rule: on by default, but settings that conflict with it, given without
            # asking for idempotence, turn it off rather than fail.
            enable_idempotence = (
                acks == -1
                and retries != 0
                and (
                    max_in_flight_per_partition is None
                    or max_in_flight_per_partition <= MAX_IN_FLIGHT_FOR_IDEMPOTENCE
                )
            )
            if not enable_idempotence:
                log.info(
                    "idempotence is off: acks=%s, retries=%s, max_in_flight_per_partition=%s",
                    acks,
                    retries,
                    max_in_flight_per_partition,
                )
        if max_in_flight_per_partition is None:
            max_in_flight_per_partition = DEFAULT_MAX_IN_FLIGHT if enable_idempotence else 1
        self.config = ProducerConfig(
            bootstrap_servers=tuple(parse_bootstrap_servers(bootstrap_servers)),
            acks=acks,
            linger_ms=linger_ms,
            batch_size=batch_size,
            compression=compression,
            retries=retries,
            delivery_timeout_ms=delivery_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            retry_backoff_max_ms=retry_backoff_max_ms,
            request_timeout_ms=request_timeout_ms,
            max_in_flight_per_partition=max_in_flight_per_partition,
            max_request_size=max_request_size,
            buffer_memory=buffer_memory,
            max_block_ms=max_block_ms,
            metadata_max_age_ms=metadata_max_age_ms,
            enable_idempotence=enable_idempotence,
            transactional_id=transactional_id,
            transaction_timeout_ms=transaction_timeout_ms,
        )
        cfg = self.config
        self._clock: Clock = clock or SystemClock()
        self._wall_ms = self._clock.wall_ms
        self._partitioner: Partitioner = partitioner or DefaultPartitioner()
        self._default_partitioner = type(self._partitioner) is DefaultPartitioner
        self._key_hashes: dict[bytes, int] = {}
        self._pool = ConnectionPool(SecurityConfig(**security))
        self._metadata = MetadataCache(
            cfg.bootstrap_servers,
            self._pool,
            self._clock,
            request_timeout_ms=cfg.request_timeout_ms,
            max_age_ms=cfg.metadata_max_age_ms,
            retry_backoff_ms=cfg.retry_backoff_ms,
        )
        self._topics: dict[str, _TopicInfo] = {}
        self._topics_lock = threading.Lock()
        # partitions that cannot take records now (the sender's leader_watch.unavailable)
        self._unavailable: frozenset[TopicPartition] = frozenset()
        # The largest record (its upper bound, without the batch header) that can be sent.
        self._max_record = min(cfg.max_request_size, cfg.buffer_memory) - RECORD_BATCH_OVERHEAD
        self._accumulator = RecordAccumulator(
            batch_size=cfg.batch_size,
            linger_ms=cfg.linger_ms,
            retry_backoff_ms=cfg.retry_backoff_ms,
            retry_backoff_max_ms=cfg.retry_backoff_max_ms,
            delivery_timeout_ms=cfg.delivery_timeout_ms,
            max_in_flight_per_partition=cfg.max_in_flight_per_partition,
            buffer_memory=cfg.buffer_memory,
            max_block_ms=cfg.max_block_ms,
            now_ms=self._clock.monotonic_ms,
        )
        idempotence = IdempotenceState() if cfg.enable_idempotence else None
        self._accumulator.idempotence = idempotence
        self._txn_manager: TransactionManager | None = None
        txn_client: TransactionCoordinatorClient | None = None
        if cfg.transactional_id is not None:
            self._txn_manager = TransactionManager(cfg.transactional_id, cfg.transaction_timeout_ms)
            txn_client = TransactionCoordinatorClient(
                cfg.transactional_id,
                self._pool,
                self._metadata,
                self._clock,
                request_timeout_ms=cfg.request_timeout_ms,
                retry_backoff_ms=cfg.retry_backoff_ms,
            )
        self._sender = Sender(
            self._accumulator,
            self._metadata,
            self._pool,
            self._clock,
            acks=cfg.acks,
            compression=Compression.from_name(cfg.compression),
            retries=cfg.retries,
            request_timeout_ms=cfg.request_timeout_ms,
            max_request_size=cfg.max_request_size,
            on_metadata=self._on_metadata,
            idempotence=idempotence,
            retry_backoff_ms=cfg.retry_backoff_ms,
            retry_backoff_max_ms=cfg.retry_backoff_max_ms,
            on_unavailable=self._on_unavailable,
            transaction_manager=self._txn_manager,
            transactions=txn_client,
        )
        self._transactions: ProducerTransactions | None = None
        if self._txn_manager is not None:
            assert txn_client is not None and idempotence is not None
            self._transactions = ProducerTransactions(
                self._txn_manager,
                txn_client,
                idempotence,
                self._accumulator,
                self.flush,
                self._clock,
                max_block_ms=cfg.max_block_ms,
            )
        self._accumulator.on_batch_change = self._sender.wakeup
        self._closed = False
        self._close_lock = threading.Lock()
        self._sender.start()

    # --- sending ---------------------------------------------------------------------------

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[tuple[str, bytes | None]] = (),
        partition: int | None = None,
        timestamp_ms: int | None = None,
        callback: Callable[[FutureRecordMetadata], object] | None = None,
    ) -> FutureRecordMetadata:
        """Queue a record for ``topic`` and return the future of its :class:`RecordMetadata`.

        ``value`` ``None`` is a tombstone. ``timestamp_ms`` defaults to the wall clock now.
        ``callback`` (Kafka's ``send(record, callback)``) is called with the future once the
        record is delivered or failed, as ``send(...).add_done_callback(callback)`` would, for
        less: it is registered while the record is appended, without a lock of its own.
        Blocks up to ``max_block_ms`` to learn the topic's partitions, and while
        ``buffer_memory`` is full.

        The future fails with the typed :class:`~odradek.errors.OdradekError` of a failed
        delivery, :class:`~odradek.errors.MessageTooLargeError` for a record that cannot fit in
        ``max_request_size`` (or ``buffer_memory``), or
        :class:`~odradek.errors.UnknownTopicOrPartitionError` if the topic is not known within
        ``max_block_ms``. Raises at once ``TypeError`` for a topic, key, value or header of the
        wrong type, ``ValueError`` for a partition out of range or a negative timestamp,
        :class:`~odradek.client.errors.BufferExhaustedError` if ``buffer_memory`` stayed full
        for ``max_block_ms`` (the record was not accepted), and
        :class:`~odradek.client.errors.ProducerClosedError` after :meth:`close`. A
        transactional producer raises :class:`~odradek.client.errors.TransactionStateError`
        outside a transaction, :class:`~odradek.client.errors.TransactionAbortableError` once
        the transaction failed, and the fatal error once the producer was fenced. Thread-safe.
        """
        # The hot path: every check is a type test first, the general case after it.
        if value is not None and type(value) is not bytes:
            value = _as_bytes("value", value)
        if key is not None and type(key) is not bytes:
            key = _as_bytes("key", key)
        header_bytes = encoded_headers(_check_headers(headers)) if headers else b"\x00"
        if timestamp_ms is None:
            timestamp_ms = self._wall_ms()
        elif type(timestamp_ms) is not int or timestamp_ms < 0:
            raise ValueError(f"invalid timestamp {timestamp_ms!r}")
        if self._txn_manager is not None:
            self._txn_manager.check_send()
        info = self._topics.get(topic) if type(topic) is str else None
        if info is None:
            info_or_error = self._learn_topic(topic, timestamp_ms)
            if type(info_or_error) is FutureRecordMetadata:
                if callback is not None:
                    info_or_error.add_done_callback(callback)
                return info_or_error
            assert isinstance(info_or_error, _TopicInfo)
            info = info_or_error
        estimate = _RECORD_BOUND + len(header_bytes)
        if value is not None:
            estimate += len(value)
        if key is not None:
            estimate += len(key)
        if estimate > self._max_record:
            failed = self._too_large(topic, estimate, timestamp_ms)
            if callback is not None:
                failed.add_done_callback(callback)
            return failed
        append = self._accumulator.append
        if partition is None:
            if key is None and self._default_partitioner:
                chosen = info.sticky
                future = append(
                    topic,
                    chosen,
                    timestamp_ms,
                    None,
                    value,
                    header_bytes,
                    estimate,
                    callback,
                    abort_on_new_batch=True,
                )
                if future is not None:
                    return future
                # The sticky partition's batch is done: move on to another one (KIP-480).
                chosen = self._next_sticky(topic, info, chosen)
                future = append(
                    topic, chosen, timestamp_ms, None, value, header_bytes, estimate, callback
                )
                assert future is not None
                return future
            partition = self._choose(topic, key, info)
        elif type(partition) is not int or not 0 <= partition < info.num_partitions:
            raise ValueError(
                f"partition {partition} of topic {topic!r} is not in [0, {info.num_partitions})"
            )
        future = append(
            topic, partition, timestamp_ms, key, value, header_bytes, estimate, callback
        )
        assert future is not None
        return future

    def send_many(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None = None,
        *,
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> SendManyFuture:
        """Queue many records of ``topic`` in one call: the bulk path for data engineers.

        ``values`` (and ``keys``, of the same length, if given) are sequences of ``bytes`` or
        ``None``; every record gets ``timestamp_ms`` (default: the wall clock now) and no
        headers. Records go to ``partition``, or by key hash (as :meth:`send`), or — without
        keys — into the sticky partition a batch at a time. Back-pressure, retries and
        delivery are those of :meth:`send`; the records of one partition are stored in the
        order given. Returns one :class:`SendManyFuture` for all of them.

        ``Producer.send_arrow`` takes a ``pyarrow`` table instead. Raises as :meth:`send`
        (``TypeError`` for an item that is not bytes or ``None``, or keys of another length);
        a record too large fails the returned future with ``MessageTooLargeError`` and none of
        the call's records is queued.
        """
        if keys is not None and len(keys) != len(values):
            raise TypeError(f"{len(keys)} keys for {len(values)} values")
        if timestamp_ms is None:
            timestamp_ms = self._wall_ms()
        elif type(timestamp_ms) is not int or timestamp_ms < 0:
            raise ValueError(f"invalid timestamp {timestamp_ms!r}")
        if self._txn_manager is not None:
            self._txn_manager.check_send()
        largest = 0
        for column, name in ((values, "value"), (keys, "key")):
            if column is None:
                continue
            for item in column:
                if item is None:
                    continue
                if type(item) is not bytes:
                    raise TypeError(f"a {name} must be bytes or None, not {type(item).__name__}")
                if len(item) > largest:
                    largest = len(item)
        if 2 * largest + _RECORD_BOUND > self._max_record:
            # Exact check only when the quick bound fails.
            for i in range(len(values)):
                key_bytes = keys[i] if keys is not None else None
                size = _RECORD_BOUND + len(values[i] or b"") + len(key_bytes or b"")
                if size > self._max_record:
                    # As send() answers a record too large with a failed future: the call's
                    # future fails, and none of its records is queued.
                    error = MessageTooLargeError(
                        f"record {i} is {size + RECORD_BATCH_OVERHEAD} bytes when serialised, "
                        f"more than max_request_size / buffer_memory allow "
                        f"({self._max_record + RECORD_BATCH_OVERHEAD}); none of the "
                        f"{len(values)} records was sent"
                    )
                    failed = ProduceRequestResult(TopicPartition(topic, -1))
                    failed.complete(-1, -1, error)
                    return SendManyFuture([(failed, 0, len(values), 0)], timestamp_ms)
        info = self._topics.get(topic) if type(topic) is str else None
        if info is None:
            learned = self._learn_topic(topic, timestamp_ms)
            if type(learned) is FutureRecordMetadata:
                unknown = learned.exception()
                assert unknown is not None
                raise unknown
            assert isinstance(learned, _TopicInfo)
            info = learned
        if partition is not None and (
            type(partition) is not int or not 0 <= partition < info.num_partitions
        ):
            raise ValueError(
                f"partition {partition} of topic {topic!r} is not in [0, {info.num_partitions})"
            )
        parts: list[tuple[ProduceRequestResult, int, int, int]] = []
        append_many = self._accumulator.append_many
        if partition is not None or keys is None:
            # One partition at a time: the given one, or the sticky one (which moves on when
            # a batch fills, as for send()).
            start = 0
            while start < len(values):
                chosen = partition if partition is not None else info.sticky
                stop, moved = append_many(
                    topic, chosen, timestamp_ms, keys, values, start, len(values), parts
                )
                if moved and partition is None:
                    self._next_sticky(topic, info, chosen)
                start = stop
        else:
            by_partition: dict[int, list[int]] = {}
            for i, key in enumerate(keys):
                p = self._choose(topic, key, info)
                group = by_partition.get(p)
                if group is None:
                    by_partition[p] = [i]
                else:
                    group.append(i)
            for p, indexes in by_partition.items():
                group_keys = [keys[i] for i in indexes]
                group_values = [values[i] for i in indexes]
                first_part = len(parts)
                start = 0
                while start < len(indexes):
                    start, _ = append_many(
                        topic, p, timestamp_ms, group_keys, group_values, start, len(indexes), parts
                    )
                # The parts name positions in the group; map them back to the input's order
                # (consecutive within a part only if the group's indexes are: split otherwise).
                parts[first_part:] = [
                    (result, first + j, 1, indexes[position + j])
                    for result, first, count, position in parts[first_part:]
                    for j in range(count)
                ]
        return SendManyFuture(parts, timestamp_ms)

    def send_arrow(
        self,
        topic: str,
        table: object,
        *,
        value_column: str = "value",
        key_column: str | None = "key",
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> SendManyFuture:
        """:meth:`send_many` for a ``pyarrow`` table (or record batch): its ``value_column``
        (binary or string, nulls are tombstones) and, if present, its ``key_column``. Strings
        are encoded as UTF-8. Needs ``pyarrow`` (``pip install 'odradek[spark]'``); raises
        ``TypeError`` for a column of another type and ``KeyError`` for a missing value column.
        """
        try:
            import pyarrow as pa  # type: ignore[import-untyped]
        except ImportError as exc:  # pragma: no cover - the dev install has it
            raise ImportError("send_arrow needs pyarrow: pip install 'odradek[spark]'") from exc
        if not isinstance(table, pa.Table | pa.RecordBatch):
            raise TypeError(f"send_arrow takes a pyarrow Table or RecordBatch, not {type(table)}")
        names = table.schema.names
        if value_column not in names:
            raise KeyError(f"the table has no column {value_column!r} (it has {names})")
        values = _arrow_bytes(table.column(value_column), value_column)
        keys = (
            _arrow_bytes(table.column(key_column), key_column)
            if key_column is not None and key_column in names
            else None
        )
        return self.send_many(topic, values, keys, partition=partition, timestamp_ms=timestamp_ms)

    # --- topics and partitions --------------------------------------------------------------

    def _learn_topic(self, topic: object, timestamp_ms: int) -> _TopicInfo | FutureRecordMetadata:
        """The slow path of a topic not yet known: check the name, wait for its metadata.
        Returns a failed future if it does not come within ``max_block_ms``."""
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"topic must be a non-empty str, not {topic!r}")
        if self._closed:
            raise ProducerClosedError("cannot send after the producer is closed")
        try:
            self._metadata.wait_for_topic(topic, self.config.max_block_ms)
        except OdradekError as exc:
            return _failed(topic, exc, timestamp_ms)
        self._on_metadata(self._metadata.snapshot())
        info = self._topics.get(topic)
        if info is None:  # the topic went away between the two reads
            self._metadata.wait_for_topic(topic, self.config.max_block_ms)
            self._on_metadata(self._metadata.snapshot())
            info = self._topics[topic]
        return info

    def _on_unavailable(self, tps: frozenset[TopicPartition]) -> None:
        """The sender's report of the partitions that cannot take records now
        (``odradek.client.leader_watch.unavailable``): unkeyed records go to the others."""
        with self._topics_lock:
            self._unavailable = tps
        self._on_metadata(self._metadata.snapshot())

    def _on_metadata(self, cluster: ClusterMetadata) -> None:
        """Rebuild the topic infos that changed with ``cluster`` (the I/O thread calls this
        after each refresh and when partitions become unavailable or available again; ``send``
        after learning a topic). The sticky partition of unkeyed records is among the
        partitions with a leader that are not unavailable (all with a leader if none is)."""
        with self._topics_lock:
            topics = dict(self._topics)
            unavailable = self._unavailable
            changed = False
            for name, meta in cluster.topics.items():
                if meta.error_code or not meta.partitions:
                    continue
                led = tuple(p.partition for p in meta.partitions if p.leader >= 0)
                available = (
                    tuple(p for p in led if TopicPartition(name, p) not in unavailable) or led
                )
                count = len(meta.partitions)
                old = topics.get(name)
                if old is not None and old.num_partitions == count and old.available == available:
                    continue
                sticky = old.sticky if old is not None and old.sticky < count else -1
                if sticky >= 0 and available and sticky not in available:
                    self._partitioner.on_new_batch(name, count, available, sticky)
                    sticky = -1
                if sticky < 0:
                    sticky = self._partitioner.partition(name, None, count, available)
                topics[name] = _TopicInfo(count, available, sticky)
                changed = True
            if changed:
                self._topics = topics

    def _choose(self, topic: str, key: bytes | None, info: _TopicInfo) -> int:
        if key is not None and self._default_partitioner:
            hashed = self._key_hashes.get(key)
            if hashed is None:
                if len(self._key_hashes) >= _KEY_HASH_CACHE:
                    self._key_hashes.clear()
                hashed = self._key_hashes[key] = murmur2(key) & 0x7FFFFFFF
            return hashed % info.num_partitions
        chosen = self._partitioner.partition(topic, key, info.num_partitions, info.available)
        if type(chosen) is not int or not 0 <= chosen < info.num_partitions:
            raise ValueError(f"the partitioner chose partition {chosen!r} of {topic!r}")
        return chosen

    def _next_sticky(self, topic: str, info: _TopicInfo, previous: int) -> int:
        partitioner = self._partitioner
        partitioner.on_new_batch(topic, info.num_partitions, info.available, previous)
        info.sticky = partitioner.partition(topic, None, info.num_partitions, info.available)
        return info.sticky

    def _too_large(self, topic: str, estimate: int, timestamp_ms: int) -> FutureRecordMetadata:
        limit = self._max_record + RECORD_BATCH_OVERHEAD
        return _failed(
            topic,
            MessageTooLargeError(
                f"the record is {estimate + RECORD_BATCH_OVERHEAD} bytes when serialised, more "
                f"than max_request_size / buffer_memory allow ({limit})"
            ),
            timestamp_ms,
        )

    # --- transactions ------------------------------------------------------------------------

    def _txn(self) -> ProducerTransactions:
        if self._transactions is None:
            raise TransactionStateError(
                "transactional methods need a transactional producer: pass transactional_id"
            )
        if self._closed:
            raise ProducerClosedError("the producer is closed")
        return self._transactions

    def init_transactions(self, timeout: float | None = None) -> None:
        """Once, before the first transaction: the transactional id's producer id and a new
        epoch from its coordinator, fencing older producers of the id and aborting a
        transaction one left open. Blocks up to ``timeout`` seconds (``None``:
        ``max_block_ms``); raises ``TimeoutError`` (call it again), or a fatal error
        (:class:`~odradek.errors.TransactionalIdAuthorizationFailedError`, …)."""
        self._txn().init_transactions(timeout)

    def begin_transaction(self) -> None:
        """Start a transaction: the records sent until it is committed or aborted belong to it.
        Raises :class:`~odradek.client.errors.TransactionStateError` before
        :meth:`init_transactions` or inside a transaction, the fatal error."""
        self._txn().begin_transaction()

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int],
        group_metadata: ConsumerGroupMetadata,
        timeout: float | None = None,
    ) -> None:
        """Commit a consumer's positions (``offsets``: the next offset to read per partition)
        with the transaction, for ``consumer.group_metadata()``'s group: a
        consume-transform-produce step is then stored once (the offsets are committed with
        the transaction, dropped with its abort). Raises
        :class:`~odradek.client.errors.TransactionAbortableError` (abort the transaction), the
        fatal error (``ProducerFencedError``, an authorization error), ``TimeoutError``."""
        self._txn().send_offsets_to_transaction(offsets, group_metadata, timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Send every record of the transaction, wait for them, then commit it: read_committed
        consumers read its records. Raises
        :class:`~odradek.client.errors.TransactionAbortableError` if a record of it failed
        (abort, then try again in a new transaction), ``ProducerFencedError`` and other fatal
        errors (close the producer), ``TimeoutError`` after ``timeout`` seconds (``None``:
        ``max_block_ms``; call it again)."""
        self._txn().commit_transaction(timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort the transaction: records not yet sent fail with
        :class:`~odradek.client.errors.TransactionAbortedError`, those sent are never read by
        read_committed consumers. Raises as :meth:`commit_transaction`, except abortable."""
        self._txn().abort_transaction(timeout)

    def partitions_for(self, topic: str) -> list[int]:
        """The partition ids of ``topic``, learning them if needed (blocks up to
        ``max_block_ms``). Raises the topic's typed error."""
        meta = self._metadata.wait_for_topic(topic, self.config.max_block_ms)
        return [p.partition for p in meta.partitions]

    # --- flush and close ---------------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> None:
        """Send every queued record now and wait until each one sent so far is delivered or
        failed. Raises ``TimeoutError`` if that takes longer than ``timeout`` seconds.
        Thread-safe."""
        pending = self._accumulator.pending_results()
        if not pending:
            return
        self._accumulator.begin_flush()
        try:
            self._sender.wakeup()
            if not wait_all([result for result, _count in pending], timeout):
                left = sum(count for result, count in pending if not result.is_done)
                raise TimeoutError(
                    f"{left} record(s) not delivered within the flush timeout of {timeout} s"
                )
        finally:
            self._accumulator.end_flush()

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued, wait up to ``timeout`` seconds (``None``: without limit) for
        every record to be delivered or fail, then stop. Records still pending after the
        timeout fail with :class:`~odradek.client.errors.ProducerClosedError`. Idempotent;
        thread-safe. From a delivery callback it does not wait (pending records fail)."""
        with self._close_lock:
            already = self._closed
            self._closed = True
        if not already:
            self._accumulator.close()
            self._sender.initiate_close()
        if self._sender.in_sender_thread:
            # Called from a delivery callback: the I/O thread cannot wait for itself. Pending
            # records fail and the thread ends after this callback (as Kafka's close(0)).
            log.warning("Producer.close() from a delivery callback: not waiting for delivery")
            self._sender.on_exit = self._pool.close
            self._sender.force_close()
            return
        if not self._sender.join(timeout):
            self._sender.force_close()
            self._sender.join()
        self._pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _failed(topic: str, error: BaseException, timestamp_ms: int) -> FutureRecordMetadata:
    result = ProduceRequestResult(TopicPartition(topic, -1))
    result.complete(-1, -1, error)
    return FutureRecordMetadata(result, 0, timestamp_ms)


def _arrow_bytes(column: Any, name: str) -> list[bytes | None]:
    import pyarrow as pa
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    assert isinstance(column, pa.ChunkedArray | pa.Array)
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        column = pc.cast(column, pa.binary() if pa.types.is_string(kind) else pa.large_binary())
    elif not (
        pa.types.is_binary(column.type)
        or pa.types.is_large_binary(column.type)
        or pa.types.is_fixed_size_binary(column.type)
    ):
        raise TypeError(f"column {name!r} must be binary or string, not {kind}")
    values: list[bytes | None] = column.to_pylist()
    return values


def _as_bytes(what: str, data: object) -> bytes | None:
    if data is None or type(data) is bytes:
        return data
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    hint = " (encode text first, e.g. s.encode())" if isinstance(data, str) else ""
    raise TypeError(f"{what} must be bytes or None, not {type(data).__name__}{hint}")


def _check_headers(
    headers: Sequence[tuple[str, bytes | None]],
) -> tuple[tuple[str, bytes | None], ...]:
    out: list[tuple[str, bytes | None]] = []
    for item in headers:
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError(f"a header is a (str, bytes | None) pair, not {item!r}")
        header_key, header_value = item
        if not isinstance(header_key, str):
            raise TypeError(f"header key {header_key!r} is not a str")
        header_key.encode("utf-8")  # raises UnicodeEncodeError (a ValueError) for lone surrogates
        out.append((header_key, _as_bytes(f"header {header_key!r}", header_value)))
    return tuple(out)
