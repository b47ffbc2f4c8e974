"""Exactly-once output of a streaming query's micro-batches: one transaction per batch, its id
committed with it, so a replayed batch whose output is already committed is recognised.

:class:`TransactionalBatchSink` is a ``foreachBatch`` function (``(DataFrame, batch_id)``). For
each micro-batch it collects the batch's ``key`` and ``value`` rows to the driver and writes
them in one transaction of a transactional producer, together with a *batch marker*: a record
keyed by the transactional id whose value names the batch (``{"batch_id": 7}``), appended to a
one-partition *marker topic*. Either the batch's records and its marker are both committed, or
neither is (docs/spark.md, "Exactly-once output", has the argument; in short):

* Spark runs a micro-batch again after a failure with the same batch id, the same input
  offsets and the same state (its offset log is written before the batch runs, its commit log
  after the sink returns). A driver that dies after the transaction commits and before Spark's
  commit log records the batch replays it on restart; the sink reads the last committed marker
  (read_committed, below the last stable offset) and skips every batch id at or below it.
* The transactional id is deterministic per query (default: the output topic and the
  checkpoint's path), so the restarted driver's ``init_transactions()`` fences the old one
  (a zombie's commit fails with ``ProducerFencedError``) and aborts the transaction it left
  open: a batch cut mid-write leaves no committed record, and its replay writes it whole.
* Spark's tasks only compute the batch; nothing is written from an executor, so a retried or
  speculative task cannot write twice.

Collecting to the driver fits outputs that are aggregates (the changed windows of a batch);
it is not meant for a batch of millions of rows. Not thread-safe: Spark calls ``foreachBatch``
functions one batch at a time.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from odradek.admin import Admin, NewTopic
from odradek.client.security import SecurityConfig
from odradek.client.types import ConsumerRecord, TopicPartition
from odradek.consumer import Consumer
from odradek.errors import OdradekError, TopicAlreadyExistsError
from odradek.producer import Producer

__all__ = [
    "BatchMarker",
    "TransactionalBatchSink",
    "default_transactional_id",
    "last_marker",
    "read_last_marker",
]

log = logging.getLogger("odradek.spark")

_SCAN_WINDOW = 64
"""Offsets of the marker partition read back at first when looking for the last marker (each
transaction takes two: its marker and the commit or abort marker)."""


@dataclass(frozen=True, slots=True)
class BatchMarker:
    """The record that says a transaction holds micro-batch ``batch_id`` of the query writing
    as ``transactional_id`` (the marker record's key)."""

    transactional_id: str
    batch_id: int

    def key(self) -> bytes:
        return self.transactional_id.encode("utf-8")

    def value(self) -> bytes:
        return json.dumps({"batch_id": self.batch_id}).encode("utf-8")

    @classmethod
    def parse(cls, key: bytes | None, value: bytes | None) -> BatchMarker | None:
        """The marker a record holds, or ``None`` for a record that is not one."""
        if key is None or value is None:
            return None
        try:
            data = json.loads(value)
        except ValueError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("batch_id"), int):
            return None
        return cls(key.decode("utf-8", "replace"), data["batch_id"])


def last_marker(records: Iterable[ConsumerRecord], transactional_id: str) -> BatchMarker | None:
    """The last marker of ``transactional_id`` among ``records`` (in offset order). Pure."""
    found = None
    for record in records:
        marker = BatchMarker.parse(record.key, record.value)
        if marker is not None and marker.transactional_id == transactional_id:
            found = marker
    return found


def read_last_marker(
    consumer: Consumer, tp: TopicPartition, transactional_id: str, timeout_ms: int = 60_000
) -> BatchMarker | None:
    """The last committed marker of ``transactional_id`` in ``tp``, read with ``consumer``
    (which must be read_committed) from the partition's last stable offset backwards, in
    growing windows. Raises the consumer's errors."""
    end = consumer.end_offsets([tp], timeout_ms)[tp]
    start = consumer.beginning_offsets([tp], timeout_ms)[tp]
    consumer.assign([tp])
    window = _SCAN_WINDOW
    upper = end
    while upper > start:
        lower = max(start, upper - window)
        consumer.seek(tp, lower)
        records: list[ConsumerRecord] = []
        while consumer.position(tp, timeout_ms) < upper:
            records.extend(r for r in consumer.poll(timeout_ms=200) if r.offset < upper)
        found = last_marker(records, transactional_id)
        if found is not None:
            return found
        upper = lower
        window *= 2
    return None


def default_transactional_id(output_topic: str, checkpoint: str) -> str:
    """A transactional id of the query writing ``output_topic`` from ``checkpoint``: the same
    for every run of that query (so a restart fences the previous driver), distinct between
    queries."""
    digest = hashlib.sha256(str(Path(checkpoint).resolve()).encode("utf-8")).hexdigest()[:16]
    return f"spark-{output_topic}-{digest}"


class TransactionalBatchSink:
    """``foreachBatch(sink)``: each micro-batch's ``key``/``value`` rows written to
    ``topic`` exactly once (see the module docstring).

    ``marker_topic`` (one partition; made, compacted, if missing) records the batches
    committed. ``after_write`` is a fault-injection seam for tests: called with the batch id
    and ``"before-commit"`` (records sent, transaction open) and ``"after-commit"``.

    Raises from ``__call__`` the producer's errors (the transaction is aborted first when it
    can be); Spark then fails the query, and its next run replays the batch.
    """

    def __init__(
        self,
        servers: str,
        topic: str,
        transactional_id: str,
        marker_topic: str,
        *,
        security: SecurityConfig | None = None,
        transaction_timeout_ms: int = 60_000,
        after_write: Callable[[int, str], None] | None = None,
    ) -> None:
        self.servers = servers
        self.topic = topic
        self.transactional_id = transactional_id
        self.marker_topic = marker_topic
        self._security = (security or SecurityConfig()).options()
        self._transaction_timeout_ms = transaction_timeout_ms
        self._after_write = after_write
        self._producer: Producer | None = None
        # The last batch id committed, once read from the marker topic: from then on this
        # sink's producer is the id's only live one, so it keeps the count itself.
        self._committed: int | None = None

    def _start(self) -> Producer:
        """The producer, after fencing any older one of the transactional id (and aborting
        its open transaction), and the last committed batch id read back."""
        if self._producer is not None:
            return self._producer
        _ensure_marker_topic(self.servers, self.marker_topic, self._security)
        producer = Producer(
            self.servers,
            transactional_id=self.transactional_id,
            transaction_timeout_ms=self._transaction_timeout_ms,
            linger_ms=5,
            **self._security,
        )
        try:
            producer.init_transactions(timeout=120)
            with Consumer(
                self.servers, isolation_level="read_committed", **self._security
            ) as consumer:
                marker = read_last_marker(
                    consumer, TopicPartition(self.marker_topic, 0), self.transactional_id
                )
        except BaseException:
            producer.close()
            raise
        self._committed = -1 if marker is None else marker.batch_id
        self._producer = producer
        log.info(
            "transactional sink %s: last committed micro-batch %s",
            self.transactional_id,
            self._committed,
        )
        return producer

    def __call__(self, batch: Any, batch_id: int) -> None:
        producer = self._start()
        assert self._committed is not None
        # Computed in full even for a replayed batch that is skipped: a stateful query's
        # micro-batch commits its state stores only when every partition ran (Spark
        # refuses, STATE_STORE_COMMIT_VALIDATION_FAILED, a foreachBatch that skips them).
        rows = batch.select("key", "value").collect()
        if batch_id <= self._committed:
            log.info(
                "micro-batch %d is already committed (last: %d): a replay, skipped",
                batch_id,
                self._committed,
            )
            return
        producer.begin_transaction()
        try:
            for row in rows:
                producer.send(self.topic, _bytes(row["value"]), key=_bytes(row["key"]))
            marker = BatchMarker(self.transactional_id, batch_id)
            producer.send(self.marker_topic, marker.value(), key=marker.key(), partition=0)
            if self._after_write is not None:
                producer.flush()
                self._after_write(batch_id, "before-commit")
            producer.commit_transaction()
        except BaseException:
            _abort_quietly(producer)
            raise
        self._committed = batch_id
        if self._after_write is not None:
            self._after_write(batch_id, "after-commit")

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close()
            self._producer = None


def _bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, bytearray):
        return bytes(value)
    return str(value).encode("utf-8")


def _abort_quietly(producer: Producer) -> None:
    try:
        producer.abort_transaction(timeout=60)
    except OdradekError as exc:  # fenced or fatal: the next run's init_transactions aborts
        log.warning("aborting the micro-batch's transaction failed: %s", exc)


def _ensure_marker_topic(servers: str, name: str, security: Any) -> None:
    with Admin(servers, **security) as admin:
        result = admin.create_topics([NewTopic(name, 1, -1, configs={"cleanup.policy": "compact"})])
    error = result.get(name)
    if error is not None and not isinstance(error, TopicAlreadyExistsError):
        raise error
