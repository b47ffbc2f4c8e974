"""``odradek.Producer``: send records to topics, batched per partition, with delivery futures.

Kafka's producer, without idempotence or transactions::

    with odradek.Producer("127.0.0.1:9092", linger_ms=5) as producer:
        future = producer.send("events", b"hello", key=b"user-1")
        metadata = future.result()      # RecordMetadata(topic, partition, offset, timestamp)

How it works (``docs/sdk.md`` has the long form):

* :meth:`Producer.send` picks the partition (the one given; Kafka's murmur2 hash of the key;
  or the topic's sticky partition), appends the record to that partition's open batch in the
  :class:`~odradek.client.accumulator.RecordAccumulator` and returns a
  ``concurrent.futures.Future``. It blocks only to learn a topic's partitions (up to
  ``max_block_ms``).
* A background thread (:class:`~odradek.client.sender.Sender`) sends a batch when it is full,
  ``linger_ms`` after its first record, or on :meth:`Producer.flush` / :meth:`Producer.close`;
  the ready batches of all partitions one node leads go in one ``Produce`` request.
* Retriable errors (``NOT_LEADER_OR_FOLLOWER``, ``LEADER_NOT_AVAILABLE``,
  ``UNKNOWN_TOPIC_OR_PARTITION``, ``NOT_ENOUGH_REPLICAS``, ``REQUEST_TIMED_OUT``, an unreachable
  node, …) refresh the metadata when the leader may have moved and retry after a backoff,
  up to ``retries`` times and within ``delivery_timeout_ms`` of the record's send; other errors
  fail the record's future with the typed error of :mod:`odradek.errors`.
* Order: with ``max_in_flight_per_partition=1`` (the default) a partition has one batch in
  flight at a time and a retried batch goes first, so records of a partition are stored in
  send order even across retries. More in flight raises throughput but a retried batch may
  then land after a later one. A retry after a lost answer may store a batch twice (there is
  no idempotent producer).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass
from types import TracebackType
from typing import Self, Unpack

from odradek.client.accumulator import RecordAccumulator, estimate_record_size
from odradek.client.connection import ConnectionPool, parse_bootstrap_servers
from odradek.client.errors import ProducerClosedError
from odradek.client.metadata import MetadataCache
from odradek.client.security import SecurityConfig, SecurityOptions
from odradek.client.sender import Sender
from odradek.client.types import RecordMetadata, TopicPartition
from odradek.clock import Clock, SystemClock
from odradek.errors import MessageTooLargeError, OdradekError
from odradek.partitioner import DefaultPartitioner, Partitioner
from odradek.records import RECORD_BATCH_OVERHEAD, Compression, Record

__all__ = ["Producer", "ProducerConfig"]

log = logging.getLogger("odradek.producer")

_INT32_MAX = 2**31 - 1


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
    linger_ms: int = 5
    # The size in bytes (before compression) at which a partition's batch is full.
    batch_size: int = 16_384
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
    # Batches of one partition in flight at once; 1 keeps send order across retries.
    max_in_flight_per_partition: int = 1
    # The largest Produce request in bytes; a record that cannot fit fails with
    # MESSAGE_TOO_LARGE.
    max_request_size: int = 1_048_576
    # How long send() may block to learn a topic's partitions.
    max_block_ms: int = 60_000
    # Metadata older than this is refreshed even without errors.
    metadata_max_age_ms: int = 300_000

    def __post_init__(self) -> None:
        if self.acks not in (-1, 0, 1):
            raise ValueError(f"acks must be -1, 0 or 1, not {self.acks!r}")
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
            "max_block_ms": (self.max_block_ms, 0),
            "metadata_max_age_ms": (self.metadata_max_age_ms, 1),
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
        linger_ms: int = 5,
        batch_size: int = 16_384,
        compression: str = "none",
        retries: int = _INT32_MAX,
        delivery_timeout_ms: int = 120_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1_000,
        request_timeout_ms: int = 30_000,
        max_in_flight_per_partition: int = 1,
        max_request_size: int = 1_048_576,
        max_block_ms: int = 60_000,
        metadata_max_age_ms: int = 300_000,
        partitioner: Partitioner | None = None,
        clock: Clock | None = None,
        **security: Unpack[SecurityOptions],
    ) -> None:
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
            max_block_ms=max_block_ms,
            metadata_max_age_ms=metadata_max_age_ms,
        )
        cfg = self.config
        self._clock: Clock = clock or SystemClock()
        self._partitioner: Partitioner = partitioner or DefaultPartitioner()
        self._pool = ConnectionPool(SecurityConfig(**security))
        self._metadata = MetadataCache(
            cfg.bootstrap_servers,
            self._pool,
            self._clock,
            request_timeout_ms=cfg.request_timeout_ms,
            max_age_ms=cfg.metadata_max_age_ms,
            retry_backoff_ms=cfg.retry_backoff_ms,
        )
        self._accumulator = RecordAccumulator(
            batch_size=cfg.batch_size,
            linger_ms=cfg.linger_ms,
            retry_backoff_ms=cfg.retry_backoff_ms,
            retry_backoff_max_ms=cfg.retry_backoff_max_ms,
            delivery_timeout_ms=cfg.delivery_timeout_ms,
            max_in_flight_per_partition=cfg.max_in_flight_per_partition,
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
        )
        self._lock = threading.Lock()
        self._pending: set[Future[RecordMetadata]] = set()
        self._closed = False
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
    ) -> Future[RecordMetadata]:
        """Queue a record for ``topic`` and return the future of its :class:`RecordMetadata`.

        ``value`` ``None`` is a tombstone. ``timestamp_ms`` defaults to the wall clock now.
        Blocks up to ``max_block_ms`` to learn the topic's partitions.

        The future fails with the typed :class:`~odradek.errors.OdradekError` of a failed
        delivery, :class:`~odradek.errors.MessageTooLargeError` for a record that cannot fit in
        ``max_request_size``, or :class:`~odradek.errors.UnknownTopicOrPartitionError` if the
        topic is not known within ``max_block_ms``. Raises at once ``TypeError`` for a key,
        value or header of the wrong type, ``ValueError`` for a partition out of range or a
        negative timestamp, and :class:`~odradek.client.errors.ProducerClosedError` after
        :meth:`close`. Thread-safe.
        """
        key = _as_bytes("key", key)
        value = _as_bytes("value", value)
        record_headers = _check_headers(headers)
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"topic must be a non-empty str, not {topic!r}")
        if timestamp_ms is not None and (isinstance(timestamp_ms, bool) or timestamp_ms < 0):
            raise ValueError(f"invalid timestamp {timestamp_ms!r}")
        if self._closed:
            raise ProducerClosedError("cannot send after the producer is closed")
        future: Future[RecordMetadata] = Future()
        future.set_running_or_notify_cancel()  # delivery cannot be cancelled once queued
        size = estimate_record_size(key, value, record_headers)
        if size + RECORD_BATCH_OVERHEAD > self.config.max_request_size:
            future.set_exception(
                MessageTooLargeError(
                    f"the record is {size + RECORD_BATCH_OVERHEAD} bytes when serialised, more "
                    f"than max_request_size ({self.config.max_request_size})"
                )
            )
            return future
        try:
            topic_meta = self._metadata.wait_for_topic(topic, self.config.max_block_ms)
        except OdradekError as exc:
            future.set_exception(exc)
            return future
        num_partitions = len(topic_meta.partitions)
        if partition is not None and not 0 <= partition < num_partitions:
            raise ValueError(
                f"partition {partition} of topic {topic!r} is not in [0, {num_partitions})"
            )
        available = [p.partition for p in topic_meta.partitions if p.leader >= 0]
        timestamp = timestamp_ms if timestamp_ms is not None else self._clock.wall_ms()
        record = Record(key, value, record_headers, timestamp=timestamp)
        sticky = partition is None and key is None
        chosen = (
            partition
            if partition is not None
            else self._partitioner.partition(topic, key, num_partitions, available)
        )
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._forget)
        try:
            now = self._clock.monotonic_ms()
            result = self._accumulator.append(
                TopicPartition(topic, chosen), record, future, now, abort_on_new_batch=sticky
            )
            if result.aborted:
                # The sticky partition's batch is done: move on to another partition (KIP-480).
                self._partitioner.on_new_batch(topic, num_partitions, available, chosen)
                chosen = self._partitioner.partition(topic, key, num_partitions, available)
                result = self._accumulator.append(
                    TopicPartition(topic, chosen), record, future, now
                )
        except ProducerClosedError as exc:
            future.set_exception(exc)
            raise
        if result.batch_full or result.new_batch:
            self._sender.wakeup()
        return future

    def _forget(self, future: Future[RecordMetadata]) -> None:
        with self._lock:
            self._pending.discard(future)

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
        with self._lock:
            pending = list(self._pending)
        if not pending:
            return
        self._accumulator.begin_flush()
        try:
            self._sender.wakeup()
            _, not_done = wait_futures(pending, timeout=timeout)
        finally:
            self._accumulator.end_flush()
        if not_done:
            raise TimeoutError(
                f"{len(not_done)} record(s) not delivered within the flush timeout of {timeout} s"
            )

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued, wait up to ``timeout`` seconds (``None``: without limit) for
        every record to be delivered or fail, then stop. Records still pending after the
        timeout fail with :class:`~odradek.client.errors.ProducerClosedError`. Idempotent;
        thread-safe. From a delivery callback it does not wait (pending records fail)."""
        with self._lock:
            if self._closed:
                already = True
            else:
                already = False
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
