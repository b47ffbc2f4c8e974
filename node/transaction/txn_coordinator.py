"""The transaction coordinator: transactional ids served from ``__transaction_state``.

Kafka's ``TransactionCoordinator`` with its ``TransactionStateManager`` and
``TransactionMarkerChannelManager`` for one node. The coordinator of transactional id ``t`` is
the leader of partition ``abs(javaHash(t)) % transaction.state.log.num.partitions`` of the
internal compacted topic ``__transaction_state``; for each such partition this node leads it
keeps a *shard*: the ids of that partition and their :class:`~node.transaction.txn_state.
TxnMetadata`, loaded by replaying the partition when the node becomes its leader (requests
meanwhile: COORDINATOR_LOAD_IN_PROGRESS; a partition it does not lead: NOT_COORDINATOR). The
*coordinator epoch* written into markers is the partition's leader epoch.

* **Decisions** are :mod:`node.transaction.txn_state`'s pure functions. A change is prepared
  under the shard's lock (the id's metadata marked pending, so a concurrent request for it is
  CONCURRENT_TRANSACTIONS), written to ``__transaction_state`` with acks=-1 *outside* the
  lock (a slow write of one id never holds another's), then completed — or, if the write
  failed, undone.
* **Ending a transaction.** EndTxn's PrepareCommit / PrepareAbort is written, the client is
  answered, and the markers go to every partition's leader
  (:class:`~node.transaction.txn_marker_sender.TxnMarkerSender`), retried until each is
  written or its partition is gone; then CompleteCommit / CompleteAbort is written. A
  coordinator that loads a transaction left in PrepareCommit / PrepareAbort (its predecessor
  failed) sends its markers and completes it.
* **Timers** (:meth:`tick`): a transaction open longer than its timeout is aborted under a
  bumped epoch (its producer's next call is PRODUCER_FENCED); an id idle for
  ``transactional.id.expiration.ms`` is removed with a tombstone.
* **The topic** is created on first use, by FindCoordinator, with Kafka's
  ``transaction.state.log.*`` settings (50 partitions, replication min(3, live brokers),
  ``cleanup.policy=compact``, ``min.insync.replicas`` min(2, replication)).
* **Metrics.** :meth:`open_transactions` counts the open transactions of the loaded shards by
  state (read at scrape time); each completed commit and abort, each transaction aborted for its
  timeout and each shard's load time is told to the :class:`TransactionEvents` given (the
  node's :class:`~node.metrics.transaction_metrics.TransactionMetrics`).

Thread-safe: the shard map has a lock; each shard has its own. Requests block their thread while
their write replicates.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from node.coordinator.group_coordinator import partition_for
from node.coordinator.group_requests import Coordinator
from node.coordinator.producer_id_manager import ProducerIdManager
from node.core.metadata_cache import MetadataCache
from node.core.replica_manager import ReplicaManager
from node.core.requests import InitProducerIdResult, ProducePartition, records_bytes
from node.transaction import txn_state as ts
from node.transaction.txn_config import TransactionConfig
from odradek.clock import Clock
from odradek.errors import (
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    InvalidRequestError,
    NotCoordinatorError,
    OdradekError,
    TransactionalIdNotFoundError,
    error_for_code,
)
from odradek.records import Record, build_batch, read_batches
from odradek.txn_records import (
    TRANSACTION_STATE_TOPIC,
    TransactionLogKey,
    TransactionStatus,
    decode_txn_key,
    decode_txn_value,
    encode_txn_key,
    encode_txn_value,
)

__all__ = [
    "DescribedTransaction",
    "ListedTransaction",
    "MarkerSender",
    "TransactionCoordinator",
    "TransactionEvents",
]

log = logging.getLogger(__name__)

S = TransactionStatus
_LOAD_READ_BYTES = 1 << 20
Partition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class DescribedTransaction:
    """DescribeTransactions' answer for one id."""

    transactional_id: str
    error_code: int = 0
    state: str = ""
    producer_id: int = -1
    producer_epoch: int = -1
    timeout_ms: int = 0
    start_ms: int = -1
    partitions: tuple[Partition, ...] = ()


@dataclass(frozen=True, slots=True)
class ListedTransaction:
    transactional_id: str
    producer_id: int
    state: str
    duration_ms: int
    """How long the transaction has been open (0 when none is)."""


class MarkerSender(Protocol):
    """What the coordinator needs of the marker channel
    (:class:`~node.transaction.txn_marker_sender.TxnMarkerSender`)."""

    def send(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Iterable[Partition],
        on_done: Callable[[], None],
    ) -> None:
        """Write the markers, retrying, then call ``on_done`` (on the sender's thread)."""
        ...


class TransactionEvents(Protocol):
    """What the coordinator tells its metrics. Called on the marker sender's and the request
    threads: must be thread-safe and never block."""

    def transaction_completed(self, commit: bool) -> None:
        """CompleteCommit (``commit``) or CompleteAbort was written."""
        ...

    def transaction_timed_out(self) -> None:
        """An open transaction past its timeout is being aborted by the coordinator."""
        ...

    def partition_loaded(self, load_ms: int, now_ms: int) -> None:
        """A ``__transaction_state`` partition this node now leads was replayed in ``load_ms``
        (``now_ms``: the node clock's monotonic time when it ended)."""
        ...


class _Shard:
    """One ``__transaction_state`` partition this node leads."""

    def __init__(self, partition: int, epoch: int) -> None:
        self.partition = partition
        self.epoch = epoch
        self.loaded = False
        self.lock = threading.Lock()
        self.txns: dict[str, ts.TxnMetadata] = {}


CreateTopic = Callable[[str, int, int, Mapping[str, str]], None]


class TransactionCoordinator:
    """Serves the transactional calls for the ``__transaction_state`` partitions this node
    leads. Thread-safe."""

    def __init__(
        self,
        config: TransactionConfig,
        replicas: ReplicaManager,
        metadata: MetadataCache,
        clock: Clock,
        create_topic: CreateTopic,
        producer_ids: ProducerIdManager | None,
        markers: MarkerSender,
        events: TransactionEvents | None = None,
    ) -> None:
        self.config = config
        self._events = events
        self._replicas = replicas
        self._metadata = metadata
        self._clock = clock
        self._create_topic = create_topic
        self._producer_ids = producer_ids
        self._markers = markers
        self._lock = threading.Lock()
        self._shards: dict[int, _Shard] = {}
        self._next_create_ms = 0
        self._next_abort_ms = 0
        self._next_expire_ms = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def shutdown(self) -> None:
        with self._lock:
            self._shards.clear()

    def on_leadership_change(self, topic: str, partition: int, leader: bool, epoch: int) -> None:
        """The replica manager's callback: load the shard of a partition this node now leads,
        drop the one of a partition it no longer leads. Never blocks for long."""
        if topic != TRANSACTION_STATE_TOPIC:
            return
        with self._lock:
            current = self._shards.get(partition)
            if not leader:
                if current is not None:
                    log.info("unloading transactions of %s-%d", topic, partition)
                    del self._shards[partition]
                return
            if current is not None and current.epoch == epoch:
                return
            shard = _Shard(partition, epoch)
            self._shards[partition] = shard
        threading.Thread(
            target=self._load, args=(shard,), name=f"txn-load-{partition}", daemon=True
        ).start()

    def _load(self, shard: _Shard) -> None:
        hosted = self._replicas.partition(TRANSACTION_STATE_TOPIC, shard.partition)
        if hosted is None:
            return
        completing: list[ts.TxnMetadata] = []
        started_ms = self._clock.monotonic_ms()
        with shard.lock:
            try:
                log_ = hosted.log
                offset, end = log_.log_start_offset, log_.log_end_offset
                while offset < end:
                    data = log_.read(offset, _LOAD_READ_BYTES).records
                    progressed = False
                    for batch in read_batches(records_bytes(data)):
                        if batch.last_offset < offset:
                            continue
                        progressed = True
                        offset = batch.last_offset + 1
                        if batch.is_control:
                            continue
                        for record in batch.records():
                            self._replay(shard, record.key, record.value)
                    if not progressed:
                        break
            except Exception:
                log.exception(
                    "loading transactions of %s-%d failed", TRANSACTION_STATE_TOPIC, shard.partition
                )
                return
            completing = [
                m for m in shard.txns.values() if m.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT)
            ]
            shard.loaded = True
        if self._events is not None:
            now_ms = self._clock.monotonic_ms()
            self._events.partition_loaded(now_ms - started_ms, now_ms)
        log.info(
            "loaded %d transactional ids of %s-%d (coordinator epoch %d); %d to complete",
            len(shard.txns),
            TRANSACTION_STATE_TOPIC,
            shard.partition,
            shard.epoch,
            len(completing),
        )
        for meta in completing:
            self._send_markers(shard, meta)

    def _replay(self, shard: _Shard, key: bytes | None, value: bytes | None) -> None:
        if key is None:
            return
        try:
            tid = decode_txn_key(key).transactional_id
            decoded = decode_txn_value(value)
        except OdradekError as exc:
            log.warning(
                "skipping a record of %s-%d: %s", TRANSACTION_STATE_TOPIC, shard.partition, exc
            )
            return
        if decoded is None:
            shard.txns.pop(tid, None)
        else:
            shard.txns[tid] = ts.metadata_from_log(tid, decoded)

    # -- helpers -----------------------------------------------------------------------------

    def _num_partitions(self) -> int:
        count = sum(
            1 for t, _ in self._metadata.snapshot.partitions if t == TRANSACTION_STATE_TOPIC
        )
        return count or self.config.transaction_state_log_num_partitions

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self._num_partitions())

    def _shard(self, transactional_id: str) -> _Shard:
        """The loaded shard of ``transactional_id``. Raises INVALID_REQUEST (empty id),
        NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS."""
        if not transactional_id:
            raise InvalidRequestError("the transactional id must not be empty")
        partition = self.partition_for(transactional_id)
        with self._lock:
            shard = self._shards.get(partition)
        if shard is None:
            raise NotCoordinatorError(
                f"node {self._replicas.node_id} is not the coordinator of transactional id "
                f"{transactional_id}"
            )
        if not shard.loaded:
            raise CoordinatorLoadInProgressError(
                f"the transactions of partition {partition} are loading"
            )
        return shard

    def _current(self, shard: _Shard) -> bool:
        with self._lock:
            return self._shards.get(shard.partition) is shard

    def _append(
        self, shard: _Shard, transactional_id: str, value: bytes | None
    ) -> OdradekError | None:
        """Append one record with acks=-1 and wait for it; the error, as Kafka's coordinator
        maps produce errors (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE)."""
        key = encode_txn_key(TransactionLogKey(transactional_id))
        batch = build_batch([Record(key, value, timestamp=self._clock.wall_ms())])
        (result,) = self._replicas.append_records(
            [
                ProducePartition(
                    TRANSACTION_STATE_TOPIC,
                    shard.partition,
                    batch,
                    current_leader_epoch=shard.epoch,
                )
            ],
            acks=-1,
            timeout_ms=self.config.request_timeout_ms,
        )
        if result.error_code == 0:
            return None
        error = error_for_code(result.error_code, result.error_message)
        if error.code in (6, 3, 74):  # NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, FENCED
            return NotCoordinatorError(f"the write to the transaction log failed: {error}")
        if error.code in (19, 20, 7):  # NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT
            return CoordinatorNotAvailableError(f"the write was not replicated: {error}")
        return error

    def _run(
        self,
        transactional_id: str,
        decide: Callable[[_Shard, ts.TxnMetadata | None], ts.Decision],
    ) -> tuple[int, str, ts.TxnMetadata | None, ts.Transition | None]:
        """Decide under the shard's lock, write outside it, complete under it. Returns the
        error code and message, the metadata after, and the transition written (if any)."""
        shard = self._shard(transactional_id)
        with shard.lock:
            decision = decide(shard, shard.txns.get(transactional_id))
            if isinstance(decision, ts.Refuse):
                return decision.error_code, decision.message, shard.txns.get(transactional_id), None
            shard.txns[transactional_id] = decision.current
        error = self._append(shard, transactional_id, encode_txn_value(decision.target.log_value()))
        with shard.lock:
            meta = shard.txns.get(transactional_id)
            if not self._current(shard) or meta is None:
                return NotCoordinatorError.code, "the coordinator moved", None, None
            if error is not None:
                shard.txns[transactional_id] = ts.abort_transition(meta, decision)
                return error.code, error.message, shard.txns[transactional_id], None
            after = ts.complete_transition(meta, decision)
            shard.txns[transactional_id] = after
        return 0, "", after, decision

    def _new_producer_id(self) -> int:
        if self._producer_ids is None:
            raise InvalidRequestError("this node hands out no producer ids")
        return self._producer_ids.generate_producer_id()

    # -- FindCoordinator ---------------------------------------------------------------------

    def find_coordinator(
        self, transactional_ids: Sequence[str], listener_name: str | None = None
    ) -> list[Coordinator]:
        """The leader of each id's ``__transaction_state`` partition on ``listener_name``, in
        request order (COORDINATOR_NOT_AVAILABLE while the topic is created or leaderless)."""
        snapshot = self._metadata.snapshot
        exists = any(t == TRANSACTION_STATE_TOPIC for t, _ in snapshot.partitions)
        if not exists and any(transactional_ids):
            self._maybe_create_topic()
        out: list[Coordinator] = []
        for tid in transactional_ids:
            try:
                if not tid:
                    raise InvalidRequestError("the transactional id must not be empty")
                if not exists:
                    raise CoordinatorNotAvailableError(
                        f"{TRANSACTION_STATE_TOPIC} is being created"
                    )
                state = snapshot.partitions.get((TRANSACTION_STATE_TOPIC, self.partition_for(tid)))
                broker = None if state is None else snapshot.brokers.get(state.leader)
                endpoint = None if broker is None else broker.on_listener(listener_name)
                if endpoint is None:
                    raise CoordinatorNotAvailableError(
                        f"the partition of transactional id {tid} has no leader on this listener"
                    )
                out.append(Coordinator(tid, endpoint.node_id, endpoint.host, endpoint.port))
            except OdradekError as e:
                out.append(Coordinator(tid, error_code=e.code, error_message=e.message))
        return out

    def _maybe_create_topic(self) -> None:
        live = len(self._metadata.snapshot.brokers)
        now = self._clock.monotonic_ms()
        with self._lock:
            if live == 0 or now < self._next_create_ms:
                return
            self._next_create_ms = now + 1000
        c = self.config
        rf = min(c.transaction_state_log_replication_factor, live)
        configs = {
            "cleanup.policy": "compact",
            "compression.type": "uncompressed",
            "segment.bytes": str(c.transaction_state_log_segment_bytes),
            "min.insync.replicas": str(min(c.transaction_state_log_min_isr, rf)),
        }
        self._create_topic(
            TRANSACTION_STATE_TOPIC, c.transaction_state_log_num_partitions, rf, configs
        )

    # -- InitProducerId ----------------------------------------------------------------------

    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected: tuple[int, int] | None = None,
    ) -> InitProducerIdResult:
        """A producer id and bumped epoch for ``transactional_id`` (see
        :func:`~node.transaction.txn_state.prepare_init_producer_id`). An open transaction of
        the previous producer is aborted first and CONCURRENT_TRANSACTIONS answered: the client
        retries."""
        try:
            code, message, meta, done = self._run(
                transactional_id,
                lambda _shard, meta: ts.prepare_init_producer_id(
                    meta,
                    transactional_id,
                    timeout_ms,
                    max_timeout_ms=self.config.transaction_max_timeout_ms,
                    expected=expected,
                    new_producer_id=self._new_producer_id,
                    now_ms=self._clock.wall_ms(),
                ),
            )
        except OdradekError as e:
            return InitProducerIdResult(e.code, error_message=e.message)
        if code:
            return InitProducerIdResult(code, error_message=message)
        assert meta is not None and done is not None
        if done.fence:
            self._send_markers(self._shard(transactional_id), meta)
            return InitProducerIdResult(
                ConcurrentTransactionsError.code,
                error_message="the previous producer's transaction is being aborted",
            )
        log.info(
            "initialized transactional id %s with producer id %d epoch %d",
            transactional_id,
            meta.producer_id,
            meta.producer_epoch,
        )
        return InitProducerIdResult(0, meta.producer_id, meta.producer_epoch)

    # -- AddPartitionsToTxn, AddOffsetsToTxn --------------------------------------------------

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[Partition],
    ) -> int:
        """AddPartitionsToTxn's one error code for every partition asked."""
        try:
            code, _, _, _ = self._run(
                transactional_id,
                lambda _shard, meta: ts.prepare_add_partitions(
                    meta, producer_id, producer_epoch, partitions, self._clock.wall_ms()
                ),
            )
        except OdradekError as e:
            return e.code
        return code

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[Partition],
    ) -> dict[Partition, int]:
        """KIP-890's verification (AddPartitionsToTxn v4's ``verify_only``): 0 for each
        partition already in the producer's open transaction, else INVALID_TXN_STATE (or
        the id's error: PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING, NOT_COORDINATOR, ...).
        Writes nothing."""
        try:
            shard = self._shard(transactional_id)
        except OdradekError as e:
            return dict.fromkeys(partitions, e.code)
        with shard.lock:
            meta = shard.txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return dict.fromkeys(partitions, 49)  # INVALID_PRODUCER_ID_MAPPING
        if meta.producer_epoch != producer_epoch:
            return dict.fromkeys(partitions, 90)  # PRODUCER_FENCED
        inside = meta.state is S.ONGOING
        return {p: 0 if inside and p in meta.partitions else 48 for p in partitions}

    # -- EndTxn --------------------------------------------------------------------------------

    def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> int:
        """EndTxn's error code. Answered once PrepareCommit / PrepareAbort is written; the
        markers follow."""
        try:
            code, _, meta, done = self._run(
                transactional_id,
                lambda _shard, meta: ts.prepare_end_txn(
                    meta, producer_id, producer_epoch, commit, self._clock.wall_ms()
                ),
            )
            if code == 0 and done is not None and meta is not None:
                self._send_markers(self._shard(transactional_id), meta)
        except OdradekError as e:
            return e.code
        return code

    def _send_markers(self, shard: _Shard, meta: ts.TxnMetadata) -> None:
        """Send ``meta``'s markers (it is PrepareCommit or PrepareAbort), then complete it."""
        tid = meta.transactional_id

        def complete() -> None:
            try:
                code, message, _, _ = self._run(tid, lambda _s, m: self._complete(m, meta))
            except OdradekError as e:
                code, message = e.code, e.message
            if code:
                log.warning("completing the transaction of %s failed: %s (%d)", tid, message, code)
            elif self._events is not None:
                self._events.transaction_completed(meta.state is S.PREPARE_COMMIT)

        self._markers.send(
            tid,
            meta.producer_id,
            meta.producer_epoch,
            meta.state is S.PREPARE_COMMIT,
            shard.epoch,
            sorted(meta.partitions),
            complete,
        )

    def _complete(self, meta: ts.TxnMetadata | None, sent: ts.TxnMetadata) -> ts.Decision:
        if (
            meta is None
            or meta.producer_id != sent.producer_id
            or meta.producer_epoch != sent.producer_epoch
            or meta.state is not sent.state
        ):
            return ts.Refuse(NotCoordinatorError.code, "the transaction changed meanwhile")
        if meta.pending is not None:
            return ts.Refuse(ConcurrentTransactionsError.code, "a state change is in progress")
        return ts.prepare_complete(meta, self._clock.wall_ms())

    # -- describing and listing ----------------------------------------------------------------

    def describe_transactions(self, transactional_ids: Sequence[str]) -> list[DescribedTransaction]:
        out = []
        for tid in transactional_ids:
            try:
                shard = self._shard(tid)
                with shard.lock:
                    meta = shard.txns.get(tid)
                if meta is None or meta.state is S.DEAD:
                    raise TransactionalIdNotFoundError(f"no transactional id {tid}")
                out.append(
                    DescribedTransaction(
                        tid,
                        0,
                        meta.state.kafka_name,
                        meta.producer_id,
                        meta.producer_epoch,
                        meta.timeout_ms,
                        meta.start_ms,
                        tuple(sorted(meta.partitions)),
                    )
                )
            except OdradekError as e:
                out.append(DescribedTransaction(tid, e.code))
        return out

    def list_transactions(
        self,
        states: Sequence[str] = (),
        producer_ids: Sequence[int] = (),
        min_duration_ms: int = -1,
    ) -> list[ListedTransaction]:
        """The ids of every loaded shard, filtered by state name, producer id and (KIP-994)
        the open transaction's duration. Raises ``ValueError`` for an unknown state name."""
        wanted = {S.from_kafka_name(s) for s in states}
        pids = set(producer_ids)
        now = self._clock.wall_ms()
        with self._lock:
            shards = [s for s in self._shards.values() if s.loaded]
        out = []
        for shard in shards:
            with shard.lock:
                metas = list(shard.txns.values())
            for m in metas:
                if m.state is S.DEAD or (wanted and m.state not in wanted):
                    continue
                if pids and m.producer_id not in pids:
                    continue
                duration = now - m.start_ms if m.ongoing and m.start_ms >= 0 else 0
                if min_duration_ms >= 0 and duration < min_duration_ms:
                    continue
                out.append(
                    ListedTransaction(
                        m.transactional_id, m.producer_id, m.state.kafka_name, duration
                    )
                )
        return sorted(out, key=lambda t: t.transactional_id)

    def open_transactions(self) -> dict[str, int]:
        """How many transactions of the loaded shards are open, by state (``Ongoing``,
        ``PrepareCommit``, ``PrepareAbort``: each named, 0 when none)."""
        counts = dict.fromkeys(
            (s.kafka_name for s in (S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT)), 0
        )
        for shard in self._loaded_shards():
            with shard.lock:
                states = [m.state for m in shard.txns.values() if m.ongoing]
            for state in states:
                counts[state.kafka_name] += 1
        return counts

    # -- timers ----------------------------------------------------------------------------------

    def tick(self) -> None:
        """Abort timed-out transactions and expire idle ids when due (the node's ticker)."""
        now = self._clock.monotonic_ms()
        c = self.config
        if now >= self._next_abort_ms:
            self._next_abort_ms = (
                now + c.transaction_abort_timed_out_transaction_cleanup_interval_ms
            )
            self._abort_timed_out()
        if now >= self._next_expire_ms:
            self._next_expire_ms = (
                now + c.transaction_remove_expired_transaction_cleanup_interval_ms
            )
            self._expire_ids()

    def _loaded_shards(self) -> list[_Shard]:
        with self._lock:
            return [s for s in self._shards.values() if s.loaded]

    def _abort_timed_out(self) -> None:
        now = self._clock.wall_ms()
        for shard in self._loaded_shards():
            with shard.lock:
                expired = ts.timed_out(shard.txns.values(), now)
            for meta in expired:
                tid = meta.transactional_id

                def decide(
                    _shard: _Shard, current: ts.TxnMetadata | None, seen: ts.TxnMetadata = meta
                ) -> ts.Decision:
                    if (
                        current is None
                        or current.producer_id != seen.producer_id
                        or current.pending is not None
                        or current.state is not S.ONGOING
                    ):
                        return ts.Refuse(ConcurrentTransactionsError.code)
                    return ts.prepare_timeout_abort(current, self._clock.wall_ms())

                try:
                    code, _, after, done = self._run(tid, decide)
                except OdradekError:
                    continue
                if code == 0 and after is not None and done is not None:
                    if self._events is not None:
                        self._events.transaction_timed_out()
                    log.info(
                        "aborting the transaction of %s (producer id %d): open longer than its "
                        "timeout of %d ms",
                        tid,
                        after.producer_id,
                        after.timeout_ms,
                    )
                    self._send_markers(shard, after)

    def _expire_ids(self) -> None:
        now = self._clock.wall_ms()
        for shard in self._loaded_shards():
            with shard.lock:
                idle = ts.expired_transactional_ids(
                    shard.txns.values(), now, self.config.transactional_id_expiration_ms
                )
                for meta in idle:
                    shard.txns[meta.transactional_id] = dataclasses.replace(meta, pending=S.DEAD)
            for meta in idle:
                error = self._append(shard, meta.transactional_id, None)
                with shard.lock:
                    if error is None:
                        shard.txns.pop(meta.transactional_id, None)
                        log.info("expired transactional id %s", meta.transactional_id)
                    elif meta.transactional_id in shard.txns:
                        shard.txns[meta.transactional_id] = meta
