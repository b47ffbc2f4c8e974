"""Reading one offset range of one topic-partition from its leader, as Arrow batches.

This is what a Spark task runs (:func:`read_range`). It fetches raw record batches with
``Broker.Fetch`` from the partition's leader and decodes them with
:class:`~odradek.spark.arrow.ArrowBatchBuilder`, so no per-record Python object is made. The
rules follow Spark's ``KafkaDataConsumer``:

* one fetch is sent ahead: while an answer is decoded, the fetch of the records after it is
  already on its way (cancelled if the read ends or has to ask elsewhere);
* the first batch may start below the range (the leader reads from the batch holding the
  offset): records below it are skipped; records at or past the end are dropped;
* offsets may be missing inside the range (compaction, control batches): the next fetch starts
  after the last complete batch, so gaps are crossed, never waited on;
* ``NOT_LEADER_OR_FOLLOWER``, fenced or unknown epochs and unreachable nodes take the answer's
  leader hint or refresh the metadata and fetch again, until ``poll_timeout_ms`` passes
  without progress;
* with ``kafka.isolation.level=read_committed`` the fetches ask for read_committed: the leader
  answers up to the last stable offset with the aborted transactions overlapping the answer,
  and the batches of those transactions are dropped (:class:`AbortedTransactions`, Kafka's
  ``CompletedFetch`` rule); control batches (transaction markers) are never rows. The range's
  end was planned at or below the last stable offset, so nothing of an open transaction is
  waited for or returned;
* offsets below the log start offset (deleted by retention or ``DeleteRecords``) are data
  loss: :class:`OdradekDataLossError` names the topic-partition, the offsets, the earliest
  available and ``failOnDataLoss``; with ``failOnDataLoss=false`` a warning is logged and the
  read goes on from the earliest available offset.

Clients are made inside the task and kept per process (keyed by pid and servers) because
Spark pickles readers and reuses worker processes. Thread-safe.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import grpc

from odradek.client.connection import ConnectionPool, cancel, parse_bootstrap_servers, wait
from odradek.client.errors import error_from_code, is_invalid_metadata
from odradek.client.metadata import MetadataCache
from odradek.client.security import SecurityConfig
from odradek.client.types import TopicPartition
from odradek.clock import Clock, SystemClock
from odradek.errors import (
    MessageTooLargeError,
    OdradekError,
    OffsetOutOfRangeError,
    RequestTimedOutError,
)
from odradek.records import RecordBatch, read_batches
from odradek.records.control import ControlRecordType, end_txn_marker_of
from odradek.spark.arrow import ArrowBatchBuilder
from odradek.spark.per_process import PerProcess
from odradek.v1 import odradek_pb2 as pb

__all__ = [
    "AbortedTransactions",
    "OdradekDataLossError",
    "RangeRead",
    "fetch_client",
    "read_range",
]

log = logging.getLogger("odradek.spark")

ARROW_BATCH_ROWS = 65_536
"""Records per Arrow batch handed to Spark: big enough to amortise the hand-over, small enough
to keep a task's memory flat."""
_FETCH_MAX_WAIT_MS = 200
_RETRY_BACKOFF_MS = 100
_REQUEST_TIMEOUT_MS = 30_000
_READ_UNCOMMITTED = 0
_READ_COMMITTED = 1


class OdradekDataLossError(RuntimeError):
    """Offsets a read needed are gone (deleted by retention or ``DeleteRecords``, or lost with
    a replica), and ``failOnDataLoss`` is true."""


@dataclass(frozen=True, slots=True)
class RangeRead:
    """Everything a task needs to read records ``[start, end)`` of ``topic``-``partition``:
    it is pickled into the Spark partition, so it holds values only."""

    servers: str
    topic: str
    partition: int
    start: int
    end: int
    # The leader's address when the read was planned: the first fetch goes there without
    # asking for metadata first (a stale hint costs one NOT_LEADER answer and a refresh).
    leader: str | None = None
    include_headers: bool = False
    fail_on_data_loss: bool = True
    poll_timeout_ms: int = 120_000
    fetch_max_bytes: int = 8 * 1024 * 1024
    # How to connect (kafka.security.protocol, kafka.ssl.*, kafka.sasl.*).
    security: SecurityConfig = field(default_factory=SecurityConfig)
    # kafka.isolation.level=read_committed: fetch read_committed, drop aborted transactions.
    read_committed: bool = False


class AbortedTransactions:
    """Which batches of one read_committed fetch answer belong to aborted transactions.

    The answer names each aborted transaction overlapping it by producer id and first offset.
    Going through the answer's batches in offset order (:meth:`drops`), a producer is inside
    an aborted transaction from that first offset until its ABORT marker, and its
    transactional batches meanwhile are dropped — Kafka's ``CompletedFetch`` rule (and
    ``odradek.client.fetcher``'s). Control batches are always dropped. Not thread-safe: one
    per answer.
    """

    def __init__(self, aborted: Iterable[tuple[int, int]]) -> None:
        # (first offset, producer id), soonest last: popped as the batches reach them
        self._upcoming = sorted(((first, pid) for pid, first in aborted), reverse=True)
        self._aborting: set[int] = set()

    def drops(self, batch: RecordBatch) -> bool:
        """Whether ``batch`` (the next of the answer, in offset order) holds no committed
        record to return."""
        if not batch.is_transactional:
            return batch.is_control
        while self._upcoming and self._upcoming[-1][0] <= batch.last_offset:
            self._aborting.add(self._upcoming.pop()[1])
        if batch.is_control:
            marker = end_txn_marker_of(batch)
            if marker is not None and marker.control_type is ControlRecordType.ABORT:
                self._aborting.discard(batch.producer_id)
            return True
        return batch.producer_id in self._aborting


class FetchClient:
    """A connection pool and the metadata of one cluster, for the reads of one process.
    Thread-safe."""

    def __init__(self, servers: str, clock: Clock, security: SecurityConfig | None = None) -> None:
        self.clock = clock
        self.pool = ConnectionPool(security)
        self.metadata = MetadataCache(parse_bootstrap_servers(servers), self.pool, clock)

    def leader(self, tp: TopicPartition, hint: str | None = None) -> tuple[str, int] | None:
        """The address and epoch of ``tp``'s leader; when the metadata does not know it,
        ``hint`` (with epoch -1: not checked) if given, else after a metadata refresh;
        ``None`` if no leader is known yet."""
        snapshot = self.metadata.snapshot()
        address = snapshot.leader_address(tp)
        part = snapshot.partition(tp)
        if (address is None or part is None) and hint is not None:
            return hint, -1
        if address is None or part is None:
            try:
                snapshot = self.metadata.refresh([tp.topic])
            except OdradekError as exc:
                log.debug("metadata refresh for %s failed: %s", tp, exc)
                return None
            address = snapshot.leader_address(tp)
            part = snapshot.partition(tp)
            if address is None or part is None:
                return None
        return address, part.leader_epoch


_clients: PerProcess[tuple[str, SecurityConfig], FetchClient] = PerProcess(
    lambda key: FetchClient(key[0], SystemClock(), key[1])
)


def fetch_client(servers: str, security: SecurityConfig | None = None) -> FetchClient:
    """This process's :class:`FetchClient` for ``servers`` (made on first use)."""
    return _clients.get((servers, security or SecurityConfig()))


class _Fetch(NamedTuple):
    """What a fetch asks: ``tp`` from ``offset``, of the leader at ``address`` (its epoch),
    up to ``max_bytes``, read_committed or not."""

    tp: TopicPartition
    offset: int
    address: str
    epoch: int
    max_bytes: int
    read_committed: bool


class _Prefetch:
    """At most one fetch sent ahead of need: taken when the read asks for exactly it, else
    cancelled. Not thread-safe: one per read."""

    def __init__(self, client: FetchClient) -> None:
        self._client = client
        self._sent: tuple[_Fetch, grpc.Future[Any]] | None = None

    def start(self, fetch: _Fetch) -> None:
        self.cancel()
        self._sent = (fetch, _send_fetch(self._client, fetch))

    def take(self, fetch: _Fetch) -> grpc.Future[Any]:
        """The fetch sent ahead if it is this one, else a new one."""
        if self._sent is not None and self._sent[0] == fetch:
            future = self._sent[1]
            self._sent = None
            return future
        self.cancel()
        return _send_fetch(self._client, fetch)

    def cancel(self) -> None:
        if self._sent is not None:
            cancel(self._sent[1])
        self._sent = None


def _send_fetch(client: FetchClient, fetch: _Fetch) -> grpc.Future[Any]:
    """``fetch`` sent (its answer: :func:`wait`)."""
    tp, offset, address, epoch, max_bytes, read_committed = fetch
    request = pb.FetchRequest(
        replica_id=-1,
        broker_epoch=-1,
        max_wait_ms=_FETCH_MAX_WAIT_MS,
        min_bytes=1,
        max_bytes=max_bytes,
        isolation_level=_READ_COMMITTED if read_committed else _READ_UNCOMMITTED,
        partitions=[
            pb.FetchPartition(
                topic=tp.topic,
                partition=tp.partition,
                fetch_offset=offset,
                partition_max_bytes=max_bytes,
                current_leader_epoch=epoch,
                last_fetched_epoch=-1,
                log_start_offset=-1,
            )
        ],
    )
    timeout_s = (_REQUEST_TIMEOUT_MS + _FETCH_MAX_WAIT_MS) / 1000
    return client.pool.broker(address).Fetch.future(request, timeout=timeout_s)


def read_range(spec: RangeRead) -> Iterator[Any]:
    """The records ``[spec.start, spec.end)`` as ``pyarrow.RecordBatch``es of at most
    :data:`ARROW_BATCH_ROWS` rows (see the module docstring).

    Raises :class:`OdradekDataLossError` (see ``failOnDataLoss``), the typed
    :class:`~odradek.errors.OdradekError` of a non-retriable fetch failure, or
    :class:`~odradek.errors.RequestTimedOutError` when the partition could not be read for
    ``poll_timeout_ms``.
    """
    prefetch = _Prefetch(fetch_client(spec.servers, spec.security))
    try:
        yield from _read_range(spec, prefetch)
    finally:
        prefetch.cancel()


def _read_range(spec: RangeRead, prefetch: _Prefetch) -> Iterator[Any]:
    tp = TopicPartition(spec.topic, spec.partition)
    client = fetch_client(spec.servers, spec.security)
    clock = client.clock
    builder = ArrowBatchBuilder(spec.topic, spec.partition, spec.include_headers)
    offset = spec.start
    end = spec.end
    max_bytes = spec.fetch_max_bytes
    progress_deadline = clock.monotonic_ms() + spec.poll_timeout_ms
    last_problem = "no answer yet"
    # True while the leader answers but holds nothing at ``offset`` (its log ends before it).
    missing = False
    hint = spec.leader
    while offset < end:
        if clock.monotonic_ms() > progress_deadline:
            text = (
                f"could not read {tp} at offset {offset} for {spec.poll_timeout_ms} ms "
                f"(kafkaConsumer.pollTimeoutMs): {last_problem}"
            )
            if missing:
                # The leader's log ends before the range does: the records were lost with
                # a replica (an unclean election) or the topic was recreated.
                _data_loss(spec, tp, f"{text}; records [{offset}, {end}) are missing")
                break
            raise RequestTimedOutError(text)
        leader = client.leader(tp, hint)
        hint = None  # good for the first fetch only: after a failure, ask the metadata
        if leader is None:
            last_problem = "no leader known"
            missing = False
            client.metadata.request_update()
            time.sleep(_RETRY_BACKOFF_MS / 1000)
            continue
        address, epoch = leader
        try:
            fetch = _Fetch(tp, offset, address, epoch, max_bytes, spec.read_committed)
            response = wait(prefetch.take(fetch), address)
            if response.error_code:
                raise error_from_code(response.error_code, "", f"fetch from node {address}")
        except OdradekError as exc:
            if not exc.retriable:
                raise
            last_problem = f"fetch from {address} failed: {exc}"
            missing = False
            _refresh(client, tp)
            time.sleep(_RETRY_BACKOFF_MS / 1000)
            continue
        p = response.partitions[0]
        if p.error_code == OffsetOutOfRangeError.code:
            if offset < p.log_start_offset:
                lost_end = min(p.log_start_offset, end)
                _data_loss(
                    spec,
                    tp,
                    f"{tp}: offsets [{offset}, {lost_end}) were deleted (the earliest "
                    f"available offset is {p.log_start_offset}); requested offset {offset}",
                )
                offset = p.log_start_offset
                progress_deadline = clock.monotonic_ms() + spec.poll_timeout_ms
                continue
            missing = True
            last_problem = (
                f"offset {offset} is beyond the log end {p.log_end_offset} of the leader {address}"
            )
            _refresh(client, tp)
            time.sleep(_RETRY_BACKOFF_MS / 1000)
            continue
        if p.error_code:
            error = error_from_code(p.error_code, p.error_message, str(tp))
            if not error.retriable:
                raise error
            last_problem = f"{address} answered {error.name}"
            missing = False
            hinted = p.HasField("current_leader") and client.metadata.update_leader(
                tp, p.current_leader.leader_id, p.current_leader.leader_epoch
            )
            if is_invalid_metadata(error) or not hinted:
                _refresh(client, tp)
            if not hinted:
                time.sleep(_RETRY_BACKOFF_MS / 1000)
            continue
        batches = list(read_batches(p.records))
        if batches and batches[-1].next_offset < end:
            # The next records travel while these are decoded.
            prefetch.start(
                _Fetch(tp, batches[-1].next_offset, address, epoch, max_bytes, spec.read_committed)
            )
        aborted = (
            AbortedTransactions((a.producer_id, a.first_offset) for a in p.aborted_transactions)
            if spec.read_committed
            else None
        )
        complete = 0
        moved = False
        for batch in batches:
            complete += 1
            # every batch of the answer goes through ``aborted``, in order, even those before
            # ``offset``: an ABORT marker there ends its producer's aborted transaction
            dropped = aborted is not None and aborted.drops(batch)
            if batch.last_offset < offset:
                continue
            batch.validate()
            if not dropped:
                builder.add(batch, offset, end)
            offset = batch.next_offset
            moved = True
            if len(builder) >= ARROW_BATCH_ROWS:
                yield builder.build()
            if offset >= end:
                break
        if p.records and complete == 0:
            if max_bytes >= 1 << 30:
                raise MessageTooLargeError(f"{tp}: the batch at offset {offset} is over 1 GiB")
            max_bytes *= 2  # a batch bigger than the fetch size: ask for more
            continue
        missing = False
        if moved:
            progress_deadline = clock.monotonic_ms() + spec.poll_timeout_ms
        elif p.high_watermark <= offset:
            missing = True
            last_problem = f"the high watermark of {tp} at {address} is {p.high_watermark}"
            time.sleep(_RETRY_BACKOFF_MS / 1000)
            _refresh(client, tp)
    if len(builder):
        yield builder.build()


def _refresh(client: FetchClient, tp: TopicPartition) -> None:
    try:
        client.metadata.refresh([tp.topic])
    except OdradekError as exc:
        log.debug("metadata refresh for %s failed: %s", tp, exc)


def _data_loss(spec: RangeRead, tp: TopicPartition, text: str) -> None:
    if spec.fail_on_data_loss:
        raise OdradekDataLossError(
            f"{text}. Some data may have been lost because it is no longer available in "
            "odradek (deleted by retention or DeleteRecords, or lost with a replica). If you "
            "want your query to go on with the data that remains, set the option "
            "'failOnDataLoss' to 'false'."
        )
    log.warning("%s; skipping the missing records because failOnDataLoss is false", text)
