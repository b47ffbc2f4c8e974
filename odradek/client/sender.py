"""The producer's I/O thread: sends ready batches to partition leaders and settles the answers.

Kafka's ``Sender``. One background thread loops:

1. settle the answers of finished ``Produce`` calls: resolve the futures of delivered batches;
   put back batches that failed with a retriable error (they wait out their backoff, and the
   metadata is refreshed first when the error says the leader moved); fail the others;
2. fail batches that waited ``delivery_timeout_ms``;
3. refresh the metadata if due (asked for, or older than ``metadata_max_age_ms``);
4. drain the batches of ready leaders and send one ``Produce`` request per leader,
   asynchronously (a slow node does not hold up the others);
5. sleep until the next batch may be ready, a call finishes, or a send wakes it.

The futures of :meth:`odradek.Producer.send` are resolved on this thread, so their callbacks
run here: they should be quick.

A transactional producer's sender (``transaction_manager``) gets its producer id from
``init_transactions`` rather than asking itself; before draining it adds the transaction's new
partitions with AddPartitionsToTxn (a partition's batches are drained only once it is added),
marks its batches transactional, and names the transactional id in each Produce. It never bumps
the epoch itself: a batch that fails for good makes the transaction abortable (or the producer
fenced, :meth:`~odradek.client.transaction_manager.TransactionManager.batch_failed`), and the
batches still queued in an error state fail with that error.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc

from odradek.client.accumulator import ProducerBatch, RecordAccumulator
from odradek.client.connection import ConnectionPool
from odradek.client.errors import (
    NetworkError,
    ProducerClosedError,
    TransactionAbortedError,
    error_from_code,
    error_from_rpc,
    is_invalid_metadata,
)
from odradek.client.idempotence import BUMP_AND_RETRY, FAIL, RETRY, IdempotenceState
from odradek.client.leader_watch import (
    deposed,
    moved_partitions,
    stuck_addresses,
    unavailable,
    watch_due,
)
from odradek.client.metadata import ClusterMetadata, MetadataCache
from odradek.client.producer_id import ProducerIdAndEpoch, init_producer_id
from odradek.client.transaction_manager import LOOKUP, TransactionManager, classify
from odradek.client.transaction_manager import RETRY as TXN_RETRY
from odradek.client.transactions import TransactionCoordinatorClient
from odradek.client.types import TopicPartition
from odradek.clock import Clock
from odradek.errors import (
    InvalidRecordError,
    NotLeaderOrFollowerError,
    OdradekError,
    OutOfOrderSequenceError,
    RecordError,
    RequestTimedOutError,
    UnknownProducerIdError,
    UnknownServerError,
)
from odradek.records import Compression
from odradek.v1 import odradek_pb2 as pb

__all__ = ["Sender"]

log = logging.getLogger("odradek.producer")

# The gRPC deadline exceeds the broker's own timeout (acks=-1 waits up to request_timeout_ms
# for the high watermark) so that the broker's REQUEST_TIMED_OUT answer normally arrives first.
_DEADLINE_MARGIN_MS = 1_000
# The longest the thread sleeps with nothing scheduled (so expiry and metadata age are noticed).
_MAX_IDLE_MS = 1_000


@dataclass(eq=False)
class _InFlight:
    node: int
    address: str
    batches: list[ProducerBatch]
    sent_ms: int = 0
    epochs: dict[TopicPartition, int] = field(default_factory=dict)
    """Each partition's leader epoch when sent (``leader_watch.deposed``)."""
    call: grpc.Future[pb.ProduceResponse] | None = field(default=None)
    superseded: bool = False
    """Cancelled because a newer leader took over: its batches are retried there."""


class Sender:
    """The background thread of one producer. Its methods are safe to call from any thread."""

    def __init__(
        self,
        accumulator: RecordAccumulator,
        metadata: MetadataCache,
        pool: ConnectionPool,
        clock: Clock,
        *,
        acks: int,
        compression: Compression,
        retries: int,
        request_timeout_ms: int,
        max_request_size: int,
        on_metadata: Callable[[ClusterMetadata], None] | None = None,
        idempotence: IdempotenceState | None = None,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1_000,
        on_unavailable: Callable[[frozenset[TopicPartition]], None] | None = None,
        transaction_manager: TransactionManager | None = None,
        transactions: TransactionCoordinatorClient | None = None,
    ) -> None:
        self._accumulator = accumulator
        self._txn = transaction_manager
        self._txn_client = transactions
        self._next_add_ms = 0  # when to try AddPartitionsToTxn again after a retriable error
        if transaction_manager is not None:
            accumulator.send_allowed = transaction_manager.is_send_allowed
            accumulator.on_new_batch = transaction_manager.maybe_add_partition
        self._metadata = metadata
        self._pool = pool
        self._clock = clock
        self._acks = acks
        self._compression = compression
        self._retries = retries
        self._request_timeout_ms = request_timeout_ms
        self._max_request_size = max_request_size
        self._on_metadata = on_metadata
        self._idempotence = idempotence
        self._retry_backoff_ms = retry_backoff_ms
        self._retry_backoff_max_ms = max(retry_backoff_max_ms, retry_backoff_ms)
        self._last_watch_ms = -(2**62)  # the last refresh asked for by leader_watch.watch_due
        self._on_unavailable = on_unavailable
        self._failing: set[TopicPartition] = set()  # last attempt failed, none succeeded since
        self._unavailable: frozenset[TopicPartition] = frozenset()
        self._next_init_ms = 0  # when to ask InitProducerId again after a failure
        self._seen_metadata: ClusterMetadata | None = None
        self._wakeup = threading.Event()
        self._completions: queue.SimpleQueue[_InFlight] = queue.SimpleQueue()
        self._in_flight: set[_InFlight] = set()  # touched by the sender thread only
        self._running = True
        self._forced = False
        self._thread = threading.Thread(target=self._run, name="odradek-producer", daemon=True)
        # Run by the thread as it ends, when the producer could not wait for it (close() from
        # a delivery callback): releases what the thread was still using.
        self.on_exit: Callable[[], None] | None = None

    def start(self) -> None:
        self._thread.start()

    def wakeup(self) -> None:
        """Make the thread look at the accumulator now."""
        self._wakeup.set()

    def initiate_close(self) -> None:
        """Stop after every queued and in-flight batch is settled."""
        self._running = False
        self._wakeup.set()

    def force_close(self) -> None:
        """Stop now: pending records fail with :class:`ProducerClosedError`."""
        self._forced = True
        self._running = False
        self._wakeup.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end; ``True`` if it did. From the thread itself (a delivery
        callback closing the producer) it cannot wait: ``False`` at once."""
        if threading.current_thread() is self._thread:
            return False
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def in_sender_thread(self) -> bool:
        return threading.current_thread() is self._thread

    # --- the loop --------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while self._running:
                self._run_once()
            while not self._forced and (self._accumulator.has_undrained() or self._in_flight):
                self._run_once()
        except Exception:  # pragma: no cover - a bug: fail the records rather than hang
            log.exception("the producer's sender thread failed")
            self._forced = True
        if self._forced:
            error = ProducerClosedError("the producer was closed before the record was delivered")
            for inflight in list(self._in_flight):
                if inflight.call is not None:
                    inflight.call.cancel()
                for batch in inflight.batches:
                    batch.fail(error)
                    self._accumulator.done(batch)
            self._in_flight.clear()
            self._accumulator.abort_undrained(error)
        if self.on_exit is not None:
            self.on_exit()

    def _run_once(self) -> None:
        self._settle_answers()
        if self._forced:
            return
        now = self._clock.monotonic_ms()
        for batch in self._accumulator.expired(now):
            self._expire(batch, now)
        # odradek.client.leader_watch: while a call is stuck or a batch backs off, watch the
        # metadata, asking nodes without a stuck call first
        stuck = stuck_addresses(
            ((f.address, f.sent_ms) for f in self._in_flight),
            now_ms=now,
            stuck_after_ms=self._retry_backoff_max_ms,
        )
        backing_off = self._accumulator.backing_off(now)
        in_trouble = bool(stuck or backing_off)
        if self._on_unavailable is not None:
            # a failing partition stays so only while a batch of it waits or is in flight:
            # one with nothing pending is tried again by the next record sent to it
            pending = backing_off.union(*((b.tp for b in f.batches) for f in self._in_flight))
            self._failing &= pending
            now_unavailable = unavailable(
                self._failing,
                ((f.address, (b.tp for b in f.batches)) for f in self._in_flight),
                stuck,
            )
            if now_unavailable != self._unavailable:
                self._unavailable = now_unavailable
                self._on_unavailable(now_unavailable)
        watch_interval = 2 * max(self._retry_backoff_ms, 1)
        if watch_due(
            in_trouble=in_trouble,
            now_ms=now,
            last_watch_ms=self._last_watch_ms,
            interval_ms=watch_interval,
        ):
            self._last_watch_ms = now
            self._metadata.request_update()
        self._metadata.maybe_refresh(avoid=stuck)
        cluster = self._metadata.snapshot()
        if cluster is not self._seen_metadata:
            before = self._seen_metadata
            self._seen_metadata = cluster
            if self._on_metadata is not None:
                self._on_metadata(cluster)
            if before is not None:
                self._follow_new_leaders(before, cluster, backing_off)
        if self._txn is not None:
            self._maybe_add_partitions()
        elif self._idempotence is not None and not self._idempotence.has_id:
            self._init_producer_id()
        now = self._clock.monotonic_ms()
        check = self._accumulator.ready(cluster.leader_id, now)
        if check.unknown_leader_topics:
            self._metadata.add_topics(check.unknown_leader_topics)
            self._metadata.request_update()
        drained = self._accumulator.drain(
            cluster.leader_id, check.nodes, self._max_request_size, now
        )
        for node, batches in drained.items():
            self._send(cluster, node, batches)
        if not self._running and not self._in_flight and not self._accumulator.has_undrained():
            return  # closing, and nothing is left to wait for
        waits = [_MAX_IDLE_MS]
        deadline = self._accumulator.next_deadline_ms()
        if deadline is not None:
            waits.append(max(deadline - now, 0))
        if check.next_check_ms is not None:
            waits.append(check.next_check_ms)
        if self._txn is not None and self._txn.pending_partitions():
            waits.append(max(self._next_add_ms - now, 1))
        if check.unknown_leader_topics or self._metadata.time_to_update_ms(now) < _MAX_IDLE_MS:
            waits.append(self._metadata.time_to_update_ms(now))
        if in_trouble:
            waits.append(max(self._last_watch_ms + watch_interval - now, 1))
        # After sending, look again at once: a drain takes one batch per partition, and more
        # may be sendable (up to max_in_flight_per_partition).
        wait_ms = 0 if drained else max(min(waits), 1)
        if wait_ms > 0 and self._completions.empty():
            self._wakeup.wait(wait_ms / 1000)
        self._wakeup.clear()

    def _follow_new_leaders(
        self, before: ClusterMetadata, cluster: ClusterMetadata, backing_off: set[TopicPartition]
    ) -> None:
        """``leader_watch``'s "go at once": cancel the calls waiting on a deposed leader (their
        batches are retried when settled), and end the backoff of batches whose partition has
        a new leader."""
        for inflight in self._in_flight:
            if inflight.superseded or inflight.call is None:
                continue
            if deposed(inflight.node, inflight.epochs, cluster) and inflight.call.cancel():
                inflight.superseded = True
                log.info(
                    "node %s was replaced as leader while a produce call to it was waiting; "
                    "sending its %d batch(es) to the new leader",
                    inflight.address,
                    len(inflight.batches),
                )
        moved = moved_partitions(before, cluster, backing_off)
        if moved:
            self._accumulator.skip_backoff(moved, self._clock.monotonic_ms())

    def _send(self, cluster: ClusterMetadata, node: int, batches: list[ProducerBatch]) -> None:
        broker = cluster.brokers[node]
        partitions: list[pb.ProducePartitionData] = []
        sendable: list[ProducerBatch] = []
        epochs: dict[TopicPartition, int] = {}
        for batch in batches:
            try:
                payload = batch.build(self._compression, transactional=self._txn is not None)
            except (ValueError, TypeError, OdradekError) as exc:
                error = exc if isinstance(exc, OdradekError) else InvalidRecordError(str(exc))
                batch.fail(error)
                self._accumulator.done(batch)
                continue
            part = cluster.partition(batch.tp)
            epochs[batch.tp] = part.leader_epoch if part is not None else -1
            partitions.append(
                pb.ProducePartitionData(
                    topic=batch.tp.topic,
                    partition=batch.tp.partition,
                    records=payload,
                    current_leader_epoch=part.leader_epoch if part is not None else -1,
                )
            )
            sendable.append(batch)
        if not sendable:
            return
        request = pb.ProduceRequest(
            acks=self._acks, timeout_ms=self._request_timeout_ms, partitions=partitions
        )
        if self._txn is not None:
            request.transactional_id = self._txn.transactional_id
        inflight = _InFlight(
            node, broker.address, sendable, sent_ms=self._clock.monotonic_ms(), epochs=epochs
        )
        self._in_flight.add(inflight)
        try:
            call = self._pool.broker(broker.address).Produce.future(
                request, timeout=(self._request_timeout_ms + _DEADLINE_MARGIN_MS) / 1000
            )
        except Exception as exc:  # the pool is closed, or the channel could not be made
            self._in_flight.discard(inflight)
            error = NetworkError(f"cannot call node {broker.address}: {exc}")
            now = self._clock.monotonic_ms()
            for batch in sendable:
                self._retry_or_fail(batch, error, now)
            return
        inflight.call = call

        def finished(_: object) -> None:
            self._completions.put(inflight)
            self._wakeup.set()

        call.add_done_callback(finished)

    def _settle_answers(self) -> None:
        while True:
            try:
                inflight = self._completions.get_nowait()
            except queue.Empty:
                return
            if inflight not in self._in_flight:
                continue  # already failed by a forced close
            self._in_flight.discard(inflight)
            self._settle(inflight)

    def _settle(self, inflight: _InFlight) -> None:
        assert inflight.call is not None
        now = self._clock.monotonic_ms()
        try:
            response = inflight.call.result()
        except grpc.RpcError as exc:
            error = error_from_rpc(exc, inflight.address)
            log.debug("produce to node %s failed: %s", inflight.address, error)
            self._metadata.request_update()
            for batch in inflight.batches:
                self._retry_or_fail(batch, error, now)
            return
        except grpc.FutureCancelledError:
            if inflight.superseded:
                moved = NotLeaderOrFollowerError(
                    f"node {inflight.address} was replaced as leader while the call waited"
                )
                for batch in inflight.batches:
                    self._retry_or_fail(batch, moved, now, leader_moved=True)
                return
            closed = ProducerClosedError("the producer was closed before the record was delivered")
            for batch in inflight.batches:
                batch.fail(closed)
                self._accumulator.done(batch)
            return
        if self._acks == 0:
            for batch in inflight.batches:
                batch.complete(-1, -1)
                self._accumulator.done(batch)
            return
        results = {(p.topic, p.partition): p for p in response.partitions}
        for batch in inflight.batches:
            result = results.get((batch.tp.topic, batch.tp.partition))
            if result is None:
                missing = UnknownServerError(f"{batch.tp}: the produce answer has no result for it")
                self._retry_or_fail(batch, missing, now)
            elif result.error_code == 0:
                idempotence = self._idempotence
                if idempotence is not None and idempotence.is_current(
                    batch.producer_id, batch.producer_epoch
                ):
                    idempotence.acknowledged(batch.tp, batch.base_sequence, batch.record_count)
                batch.complete(result.base_offset, result.log_append_time_ms)
                self._accumulator.done(batch)
                self._failing.discard(batch.tp)
            else:
                error = error_from_code(
                    result.error_code,
                    result.error_message,
                    str(batch.tp),
                    tuple(RecordError(e.batch_index, e.message) for e in result.record_errors),
                )
                self._retry_or_fail(batch, error, now)

    def _init_producer_id(self) -> None:
        """Ask a node for a producer id (the idempotent producer sends nothing before it has
        one); on failure try again after ``retry_backoff_ms``, the batches waiting."""
        idempotence = self._idempotence
        assert idempotence is not None
        now = self._clock.monotonic_ms()
        if now < self._next_init_ms:
            return
        current = (idempotence.producer_id, idempotence.epoch)
        last: OdradekError | None = None
        for address in self._metadata.candidates():
            try:
                ids = init_producer_id(
                    self._pool.broker(address),
                    address=address,
                    timeout_ms=self._request_timeout_ms,
                    producer_id=current[0],
                    producer_epoch=current[1],
                )
            except OdradekError as exc:
                last = exc
                if not exc.retriable:
                    break  # a refusal (CLUSTER_AUTHORIZATION_FAILED, KIP-679): every node says so
                continue
            idempotence.set_id(ids)
            log.debug("producer id %d, epoch %d (from %s)", ids.producer_id, ids.epoch, address)
            return
        self._next_init_ms = now + self._retry_backoff_ms
        if last is not None and not last.retriable:
            # Kafka's producer raises the authorization error promptly rather than waiting out
            # delivery_timeout_ms: the records waiting for a producer id fail with it; a later
            # send asks again (an operator may grant the ACL meanwhile)
            failed = self._accumulator.abort_undrained(last)
            log.warning("could not get a producer id: %s (%d records failed)", last, failed)
            return
        log.warning("could not get a producer id, retrying: %s", last)

    def _maybe_add_partitions(self) -> None:
        """A transactional producer's AddPartitionsToTxn for the partitions new to its
        transaction (one attempt; a retriable error tries again after ``retry_backoff_ms``);
        in an error state, the batches still queued fail with the error."""
        txn, client, idempotence = self._txn, self._txn_client, self._idempotence
        assert txn is not None and client is not None and idempotence is not None
        if txn.is_aborting:
            if self._accumulator.has_undrained():
                if self._accumulator.undrained_sequenced():
                    txn.require_epoch_bump()
                error = txn.last_error or TransactionAbortedError(
                    "the transaction was aborted before the record was sent"
                )
                self._accumulator.abort_undrained(error)
            return
        pending = txn.pending_partitions()
        now = self._clock.monotonic_ms()
        if not pending or now < self._next_add_ms:
            return
        ids = ProducerIdAndEpoch(idempotence.producer_id, idempotence.epoch)
        try:
            client.add_partitions(ids, pending, deadline_ms=now)
        except TimeoutError as exc:  # retriable: the deadline was this one attempt
            self._next_add_ms = now + self._retry_backoff_ms
            log.debug("AddPartitionsToTxn %s: %s; retrying", pending, exc.__cause__)
            return
        except OdradekError as exc:
            verdict = classify(exc)
            if verdict in (LOOKUP, TXN_RETRY):  # pragma: no cover - raised as TimeoutError
                self._next_add_ms = now + self._retry_backoff_ms
                return
            error = txn.error(exc, verdict)
            log.warning("adding %s to the transaction failed: %s", pending, error)
            self._accumulator.abort_undrained(error)
            return
        txn.partitions_added(pending)
        log.debug("partitions %s added to the transaction", pending)

    def _idempotence_verdict(self, batch: ProducerBatch, error: OdradekError) -> str:
        idempotence = self._idempotence
        if idempotence is None or batch.base_sequence < 0:
            return FAIL
        verdict = idempotence.on_error(
            batch.tp,
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence,
            error,
            sent_first_in_line=batch.sent_first_in_line,
        )
        if verdict == BUMP_AND_RETRY and self._txn is not None:
            # the coordinator owns a transactional producer's epoch: the transaction is
            # aborted and the epoch bumped then (KIP-360)
            return FAIL
        if verdict == BUMP_AND_RETRY:
            log.warning(
                "%s: the leader lost this producer's sequence state (%s); bumping the producer "
                "epoch and sending again (KIP-360)",
                batch.tp,
                error,
            )
            idempotence.bump_epoch()
        return verdict

    def _retry_or_fail(
        self, batch: ProducerBatch, error: OdradekError, now_ms: int, *, leader_moved: bool = False
    ) -> None:
        """Put ``batch`` back for another attempt if ``error`` and the limits allow (at once
        when ``leader_moved``: the new leader is known), else fail it."""
        verdict = self._idempotence_verdict(batch, error)
        if error.retriable and verdict == FAIL:
            self._failing.add(batch.tp)  # its leader could not take it (leader_watch.unavailable)
        can_retry = (
            (error.retriable or verdict != FAIL)
            and not self._forced
            and batch.attempts < self._retries
            and not self._accumulator.delivery_expired(batch, now_ms)
        )
        batch.last_error = error
        if can_retry:
            batch.attempts += 1
            # As Kafka's Sender: a retry is worth a warning, naming the broker's error — but
            # not a batch refused only because the one before it is being retried.
            log.log(
                logging.DEBUG if verdict == RETRY else logging.WARNING,
                "retrying %d record(s) for %s (attempt %d) after %s",
                batch.record_count,
                batch.tp,
                batch.attempts + 1,
                error,
            )
            if is_invalid_metadata(error):
                self._metadata.request_update()
            self._accumulator.reenqueue(batch, now_ms, backoff=verdict == FAIL and not leader_moved)
            return
        self._accumulator.done(batch)
        if self._txn is not None:
            self._transaction_batch_failed(batch, error)
        elif self._idempotence is not None and batch.base_sequence >= 0:
            # The batches behind it were numbered after it: a new epoch numbers them anew.
            self._idempotence.bump_epoch()
        if error.retriable:
            reason = (
                "delivery_timeout_ms passed"
                if self._accumulator.delivery_expired(batch, now_ms)
                else "retries exhausted"
            )
            error = type(error)(
                f"{error.message} (gave up after {batch.attempts + 1} attempts: {reason})"
            )
        batch.fail(error)

    def _expire(self, batch: ProducerBatch, now_ms: int) -> None:
        """Fail a batch whose ``delivery_timeout_ms`` passed while it was queued: with the
        broker's error if an attempt failed (e.g. NOT_ENOUGH_REPLICAS), else as timed out."""
        if self._txn is not None:
            self._transaction_batch_failed(
                batch, batch.last_error or RequestTimedOutError("expired")
            )
        elif self._idempotence is not None and batch.base_sequence >= 0:
            self._idempotence.bump_epoch()  # as for a batch that failed for good
        text = (
            f"{batch.record_count} record(s) for {batch.tp} expired: {now_ms - batch.created_ms}"
            f" ms passed since the batch was created (delivery_timeout_ms)"
        )
        last = batch.last_error
        if isinstance(last, OdradekError):
            batch.fail(type(last)(f"{last.message}; {text} after {batch.attempts} attempt(s)"))
        else:
            batch.fail(RequestTimedOutError(text))

    def _transaction_batch_failed(self, batch: ProducerBatch, error: BaseException) -> None:
        """A transactional batch failed for good: the transaction is abortable, or the
        producer fenced. A batch that had a sequence number leaves a gap in its partition's
        sequences (or the leader lost them): the abort bumps the epoch, which numbers every
        partition from 0 again (Kafka's producer adjusts the sequences of the batches behind
        it instead; a new epoch is KIP-360's way and needs no bookkeeping)."""
        txn = self._txn
        assert txn is not None
        if not isinstance(error, OdradekError):
            error = UnknownServerError(str(error))
        if batch.base_sequence >= 0 or isinstance(
            error, OutOfOrderSequenceError | UnknownProducerIdError
        ):
            txn.require_epoch_bump()
        txn.batch_failed(error)
