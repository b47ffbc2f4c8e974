"""The group coordinator: consumer groups (KIP-848) served from ``__consumer_offsets``.

Kafka's ``GroupCoordinatorService`` and ``CoordinatorRuntime`` for one node. The coordinator of
group ``g`` is the leader of partition ``abs(javaHash(g)) % offsets.topic.num.partitions`` of
the internal compacted topic ``__consumer_offsets`` (:func:`partition_for`). For each such
partition this node leads it keeps a *shard*: the groups and committed offsets of that
partition (:class:`node.coordinator.group_state.GroupShard`).

* **Load / unload.** When the node becomes leader of a ``__consumer_offsets`` partition (the
  replica manager's leadership callback) the shard is rebuilt by replaying the partition's log
  from its start, on a thread of its own; requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS.
  When the node stops leading it, the shard is dropped, and requests get NOT_COORDINATOR.
* **Writes.** Every change is decided by the pure functions of
  :mod:`node.coordinator.group_state`, which return records, under the shard's lock (Kafka's
  coordinator runtime runs one event at a time per partition); the records are appended to
  the local leader (acks=-1, through the replica manager's produce path) and replayed into the
  shard's state at once, and the lock is released. The *answer* waits, without the lock, until
  the high watermark has passed the shard's last write (its own, or for a request that wrote
  nothing the one its answer may show): :mod:`node.coordinator.shard_writer`, Kafka's
  deferred event queue. So an answered commit survives a coordinator failover, and one slow
  replication holds the answers that depend on it, not the next writes of the shard, its
  heartbeats and timers, or other shards. Not replicated within ``offsets.commit.timeout.ms``:
  COORDINATOR_NOT_AVAILABLE, the write kept in memory (it is in the log, as Kafka keeps it);
  an append that fails outright changes nothing. Reads (OffsetFetch, ListGroups,
  DescribeGroups of consumer groups) answer the shard's *committed* state, the writes known
  replicated (Kafka reads at the last committed offset), without waiting.
* **Timers.** A member's session expires ``group.consumer.session.timeout.ms`` (or its
  group's ``consumer.session.timeout.ms``, :mod:`node.coordinator.group_config`) after its last
  heartbeat (also restarted for every member when a shard is loaded); a member still revoking
  partitions after its rebalance timeout is fenced. Both remove it, bumping the group epoch.
  Offsets of topics the group no longer subscribes to expire after
  ``offsets.retention.minutes`` (KIP-848 groups: counted from the commit), except while an open
  transaction holds an offset of the partition, and an empty group without offsets (committed
  or pending) is deleted, with tombstones.
* **The topic.** ``__consumer_offsets`` is created on first use, by FindCoordinator, with
  Kafka's defaults: 50 partitions, replication factor min(3, live brokers),
  ``cleanup.policy=compact``, ``min.insync.replicas`` min(2, replication factor).
* **Transactional offsets** (TxnOffsetCommit): written in the producer's transactional batch,
  pending until its COMMIT marker reaches the partition (:meth:`GroupCoordinator.on_txn_marker`,
  the marker writer's hook), dropped at an ABORT or by a tombstone of their partition
  (DeleteGroups deletes them too); replayed the same way when a shard loads
  (:mod:`node.coordinator.txn_offsets`).
* **Share groups** (KIP-932: ShareGroupHeartbeat, ShareGroupDescribe) live in the same shards
  too, served by :attr:`GroupCoordinator.share`
  (:class:`~node.share_group.share_group_coordinator.ShareGroupCoordinator`): each shard holds
  their state, routes their records to it and ticks their sessions; ListGroups,
  DescribeGroups and DeleteGroups here include them.
* **Classic groups** (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) live in the same shards,
  served by :attr:`GroupCoordinator.classic`
  (:class:`~node.coordinator.classic_coordinator.ClassicCoordinator`); offsets, ListGroups,
  DescribeGroups and DeleteGroups here serve both kinds. A group id is one kind at a time.

Thread-safe: the shard map has a lock; each shard has its own (reentrant), and a writer
thread waiting for its replication.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from node.coordinator.classic_coordinator import ClassicCoordinator, classic_config
from node.coordinator.classic_group import ClassicGroup
from node.coordinator.group_config import GroupConfig
from node.coordinator.group_coordinator_config import (
    GROUP_COORDINATOR_PROPERTIES,
    GroupCoordinatorConfig,
)
from node.coordinator.group_requests import (
    Coordinator,
    DeletedGroup,
    DescribedGroup,
    HeartbeatResponse,
    ListedGroup,
    ListGroupsResult,
    OffsetCommitPartition,
    OffsetCommitResult,
    OffsetDeleteResult,
    OffsetFetchPartition,
    OffsetFetchResult,
    PartitionResult,
    described_classic_group,
    described_member,
    topic_partitions,
)
from node.coordinator.group_state import (
    ConsumerGroup,
    GroupRecord,
    GroupShard,
    HeartbeatRequest,
    TopicInfo,
    check_group_id,
    delete_group_records,
    offset_commit_records,
    validate_offset_fetch,
)
from node.coordinator.mixed_coordinator import MixedGroups
from node.coordinator.shard_writer import PendingWrite, ShardWriter, write_error
from node.coordinator.txn_offsets import (
    PendingTxnOffsets,
    check_txn_offset_commit,
    txn_offset_commit_records,
)
from node.core.metadata_cache import MetadataCache
from node.core.replica_manager import ReplicaManager
from node.core.requests import ProducePartition, records_bytes
from node.share_group.share_group_coordinator import ShareGroupCoordinator, ShareGroupShard
from odradek.clock import Clock
from odradek.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    CorruptRecordError,
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    NonEmptyGroupError,
    NotCoordinatorError,
    OdradekError,
    ProducerFencedError,
    error_for_code,
)
from odradek.group_records import (
    MemberState,
    OffsetCommitKey,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    key_type,
)
from odradek.records import (
    ControlRecordType,
    Record,
    build_batch,
    end_txn_marker_of,
    read_batches,
)

log = logging.getLogger(__name__)

__all__ = [
    "GROUP_COORDINATOR_PROPERTIES",
    "OFFSETS_TOPIC",
    "GroupCoordinator",
    "GroupCoordinatorConfig",
    "java_string_hash",
    "partition_for",
]

OFFSETS_TOPIC = "__consumer_offsets"
TICK_MS = 100
UNSTABLE_OFFSET_COMMIT = 88
_LOAD_READ_BYTES = 1024 * 1024


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``31*h + c`` over UTF-16 code units, wrapped to int32."""
    h = 0
    raw = text.encode("utf-16-be")
    for i in range(0, len(raw), 2):
        h = (31 * h + (raw[i] << 8 | raw[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode()) % numPartitions`` (``Utils.abs`` maps
    Integer.MIN_VALUE to 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


def _replay_into(state: GroupShard, key: bytes | None, value: bytes | None) -> None:
    """Replay one record into ``state`` (the committed state: consumer groups and offsets;
    a record that does not decode was logged by the other replay)."""
    if key is None:
        return
    try:
        state.replay(decode_key(key), decode_value(key_type(key), value))
    except CorruptRecordError:
        pass


_T = TypeVar("_T")


def _done(answer: _T) -> Future[_T]:
    future: Future[_T] = Future()
    future.set_result(answer)
    return future


def _then(
    durable: Future[OdradekError | None], answer: Callable[[OdradekError | None], _T]
) -> Future[_T]:
    """A future of ``answer(error)`` once the write ``durable`` stands for is resolved."""
    out: Future[_T] = Future()

    def done(f: Future[OdradekError | None]) -> None:
        try:
            out.set_result(answer(f.result()))
        except Exception as e:  # surfaces where the answer is awaited
            out.set_exception(e)

    durable.add_done_callback(done)
    return out


def _answer_after(durable: Future[OdradekError | None]) -> None:
    """Wait (no lock held) until the write a request's answer depends on is replicated; raise
    the error to answer if it was not (the shard writer resolves every wait, at the latest at
    ``offsets.commit.timeout.ms`` or when the shard is unloaded)."""
    error = durable.result()
    if error is not None:
        raise error


class _Shard:
    """One ``__consumer_offsets`` partition this node leads."""

    def __init__(
        self,
        partition: int,
        leader_epoch: int,
        on_durable: Callable[[_Shard, list[PendingWrite]], None],
    ) -> None:
        self.partition = partition
        self.leader_epoch = leader_epoch
        self.loaded = False
        self.lock = threading.RLock()
        self.state = GroupShard()
        """Every write applied, replicated or not: what requests decide on."""
        self.committed = GroupShard()
        """The writes the high watermark is known to have passed: what reads answer."""
        self.writer = ShardWriter(
            f"{OFFSETS_TOPIC}-{partition}", lambda writes: on_durable(self, writes)
        )
        """The shard's writes waiting for replication (:mod:`node.coordinator.shard_writer`)."""
        self.sessions: dict[tuple[str, str], int] = {}
        """(group, member) → monotonic deadline of its session."""
        self.revocations: dict[tuple[str, str], int] = {}
        """(group, member) → deadline for a member in UNREVOKED_PARTITIONS."""
        self.classic: dict[str, ClassicGroup] = {}
        """Classic groups (:mod:`node.coordinator.classic_coordinator`)."""
        self.classic_waiters: dict[tuple[str, str, str], list[Any]] = {}
        self.txn_offsets = PendingTxnOffsets()
        """Offsets of open transactions (:mod:`node.coordinator.txn_offsets`)."""
        self.share = ShareGroupShard()
        """Share groups (:mod:`node.share_group.share_group_coordinator`)."""


CreateTopic = Callable[[str, int, int, Mapping[str, str]], None]
"""(name, partitions, replication factor, configs): create a topic (errors: logged)."""


class GroupCoordinator:
    """Serves the consumer group RPCs for the ``__consumer_offsets`` partitions this node
    leads. ``start()`` runs the timers; ``shutdown()`` stops them. Thread-safe."""

    def __init__(
        self,
        config: GroupCoordinatorConfig,
        replicas: ReplicaManager,
        metadata: MetadataCache,
        clock: Clock,
        create_topic: CreateTopic,
        group_configs: Callable[[str], GroupConfig] | None = None,
    ) -> None:
        """``group_configs``: a group's configs (its ``consumer.session.timeout.ms`` and
        ``consumer.heartbeat.interval.ms`` over ``config``'s; Kafka's ``GroupConfigManager``),
        asked on every heartbeat; ``None``: every group has ``config``'s."""
        self.config = config
        self._group_configs = group_configs
        self._replicas = replicas
        self._metadata = metadata
        self._clock = clock
        self._create_topic = create_topic
        self._lock = threading.Lock()
        self._shards: dict[int, _Shard] = {}
        self._stopped = threading.Event()
        self._ticker: threading.Thread | None = None
        self._next_retention_ms = 0
        self._next_create_ms = 0
        self.mixed = MixedGroups(config, classic_config(config), clock, self._write, self.topics)
        """Classic members in consumer groups; the conversions between the protocols."""
        self.classic = ClassicCoordinator(
            classic_config(config), clock, self._shard, self._write, self.mixed
        )
        """JoinGroup, SyncGroup, Heartbeat, LeaveGroup (the classic protocol)."""
        self.share = ShareGroupCoordinator(
            config, clock, self._shard, self._write, self._durable, self.topics, group_configs
        )
        """ShareGroupHeartbeat, ShareGroupDescribe (KIP-932's share groups)."""

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        self._next_retention_ms = (
            self._clock.monotonic_ms() + self.config.offsets_retention_check_interval_ms
        )
        self._ticker = threading.Thread(target=self._tick_loop, name="group-coordinator")
        self._ticker.daemon = True
        self._ticker.start()

    def shutdown(self) -> None:
        self._stopped.set()
        if self._ticker is not None:
            self._ticker.join(timeout=5)
        with self._lock:
            shards = list(self._shards.values())
            self._shards.clear()
        for shard in shards:
            shard.writer.close(NotCoordinatorError("the node is shutting down"))

    def on_leadership_change(self, topic: str, partition: int, leader: bool, epoch: int) -> None:
        """The replica manager's callback: load the shard of a partition this node now leads,
        drop the one of a partition it no longer leads. Never blocks for long."""
        if topic != OFFSETS_TOPIC:
            return
        with self._lock:
            current = self._shards.get(partition)
            if not leader:
                if current is not None:
                    log.info("unloading groups of %s-%d", OFFSETS_TOPIC, partition)
                    del self._shards[partition]
                    self._unloaded(current)
                return
            if current is not None and current.leader_epoch == epoch:
                return
            if current is not None:
                self._unloaded(current)
            shard = _Shard(partition, epoch, self._replay_committed)
            self._shards[partition] = shard
        threading.Thread(
            target=self._load, args=(shard,), name=f"group-load-{partition}", daemon=True
        ).start()

    def _unloaded(self, shard: _Shard) -> None:
        """The shard is no longer this node's (or a newer leadership reloads it): requests
        waiting on its writes and classic requests waiting in it get NOT_COORDINATOR."""
        shard.writer.close(
            NotCoordinatorError(f"{OFFSETS_TOPIC}-{shard.partition} is no longer led here")
        )
        self.classic.unloaded(shard)

    def _load(self, shard: _Shard) -> None:
        hosted = self._replicas.partition(OFFSETS_TOPIC, shard.partition)
        if hosted is None:
            return
        with shard.lock:
            try:
                log_ = hosted.log
                offset = log_.log_start_offset
                end = log_.log_end_offset
                count = 0
                while offset < end:
                    data = log_.read(offset, _LOAD_READ_BYTES).records
                    progressed = False
                    for batch in read_batches(records_bytes(data)):
                        if batch.last_offset < offset:
                            continue
                        progressed = True
                        offset = batch.last_offset + 1
                        if batch.is_control:
                            marker = end_txn_marker_of(batch)
                            if marker is not None:
                                commit = marker.control_type is ControlRecordType.COMMIT
                                self._end_txn(shard, batch.producer_id, commit, True)
                            continue
                        decoded = batch.records()
                        records = [(r.key, r.value) for r in decoded]
                        # each keyed record with its offset (the order a COMMIT compares)
                        keyed = [(r.key, r.value) for r in decoded if r.key is not None]
                        at = [int(r.offset or 0) for r in decoded if r.key is not None]
                        if batch.is_transactional:
                            shard.txn_offsets.add(batch.producer_id, keyed, at)
                            continue
                        for key, value in records:
                            count += self._replay_raw(shard, key, value, True)
                        shard.txn_offsets.replayed(keyed, at)
                    if not progressed:
                        break
            except Exception:
                log.exception("loading groups of %s-%d failed", OFFSETS_TOPIC, shard.partition)
                return
            now = self._clock.monotonic_ms()
            for group in shard.state.groups.values():
                for member_id, member in group.members.items():
                    shard.sessions[(group.group_id, member_id)] = now + (
                        self._session_timeout_ms(group.group_id)
                        if member.classic is None
                        else member.classic.session_timeout_ms
                    )
            shard.loaded = True
        log.info(
            "loaded %d groups from %d records of %s-%d (leader epoch %d)",
            len(shard.state.groups),
            count,
            OFFSETS_TOPIC,
            shard.partition,
            shard.leader_epoch,
        )

    def _replay_raw(
        self, shard: _Shard, key: bytes | None, value: bytes | None, loading: bool = False
    ) -> int:
        if key is None:
            return 0
        try:
            decoded_key, decoded = decode_key(key), decode_value(key_type(key), value)
            if loading:  # the log read back: committed too (Kafka's load, as a new leader)
                self.classic.replay(shard, decoded_key, decoded)
                shard.committed.replay(decoded_key, decode_value(key_type(key), value))
            shard.state.replay(decoded_key, decoded)
            shard.share.replay(decoded_key, decoded)
        except CorruptRecordError as exc:
            log.warning("skipping a record of %s-%d: %s", OFFSETS_TOPIC, shard.partition, exc)
            return 0
        return 1

    # -- helpers -----------------------------------------------------------------------------

    def _shard(self, group_id: str) -> _Shard:
        """The loaded shard of ``group_id``. Raises INVALID_GROUP_ID, NOT_COORDINATOR,
        COORDINATOR_LOAD_IN_PROGRESS."""
        check_group_id(group_id)
        partition = partition_for(group_id, self._num_partitions())
        with self._lock:
            shard = self._shards.get(partition)
        if shard is None:
            raise NotCoordinatorError(
                f"node {self._replicas.node_id} is not the coordinator of group {group_id}"
            )
        if not shard.loaded:
            raise CoordinatorLoadInProgressError(f"the groups of partition {partition} are loading")
        return shard

    def _num_partitions(self) -> int:
        """Partitions of ``__consumer_offsets``: the topic's own count once it exists."""
        count = sum(1 for t, _ in self._metadata.snapshot.partitions if t == OFFSETS_TOPIC)
        return count or self.config.offsets_topic_num_partitions

    def topics(self) -> dict[str, TopicInfo]:
        """Every topic of the metadata cache as the assignors see it."""
        counts: dict[str, int] = {}
        ids: dict[str, str] = {}
        for (topic, _), state in self._metadata.snapshot.partitions.items():
            counts[topic] = counts.get(topic, 0) + 1
            ids[topic] = state.topic_id
        return {t: TopicInfo(t, ids[t], n) for t, n in counts.items() if ids[t]}

    def _write(
        self, shard: _Shard, records: list[GroupRecord], producer: tuple[int, int] | None = None
    ) -> None:
        """Append ``records`` (acks=-1) and replay them into the shard's state at once; the
        wait for the high watermark is the shard writer's (:meth:`_durable`). Caller holds
        ``shard.lock``. Raises, nothing replayed, when the append itself fails:
        NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE (an ISR below ``min.insync.replicas``) or
        UNKNOWN_SERVER_ERROR, as Kafka's coordinator maps produce errors.

        ``producer`` (id, epoch): a transactional offset commit, written in a transactional
        batch of that producer and kept pending (not replayed) until its transaction ends;
        the log's INVALID_PRODUCER_EPOCH, PRODUCER_FENCED or INVALID_TXN_STATE is raised as
        is."""
        if not records:
            return
        now = self._clock.wall_ms()
        encoded = [(encode_key(k), None if v is None else encode_value(v)) for k, v in records]
        if producer is None:
            batch = build_batch([Record(k, v, timestamp=now) for k, v in encoded])
        else:
            batch = build_batch(
                [Record(k, v, timestamp=now) for k, v in encoded],
                producer_id=producer[0],
                producer_epoch=producer[1],
                base_sequence=0,  # the coordinator's own append: sequences are not checked
                is_transactional=True,
            )
        appended = self._replicas.start_append(
            [
                ProducePartition(
                    topic=OFFSETS_TOPIC,
                    partition=shard.partition,
                    records=batch,
                    current_leader_epoch=shard.leader_epoch,
                    from_coordinator=producer is not None,
                )
            ],
            acks=-1,
            timeout_ms=self.config.offsets_commit_timeout_ms,
        )
        if not appended.waits:  # not appended (or nothing to wait for): its answer is ready
            answer = appended.poll()
            error = write_error(answer[0]) if answer else None
            if answer and error is not None and producer is not None:
                raw = error_for_code(answer[0].error_code, answer[0].error_message)
                if isinstance(
                    raw, InvalidProducerEpochError | ProducerFencedError | InvalidTxnStateError
                ):
                    raise raw
            if error is not None:
                raise error
        if producer is not None:
            shard.txn_offsets.add(producer[0], encoded)
            shard.writer.appended(PendingWrite(appended, []))
            return
        for k, v in encoded:
            self._replay_raw(shard, k, v)
        shard.txn_offsets.replayed(encoded)
        shard.writer.appended(PendingWrite(appended, encoded))

    def _end_txn(self, shard: _Shard, producer_id: int, commit: bool, loading: bool) -> None:
        """``producer_id``'s transaction ended on the shard's partition (its marker replicated,
        or read back by a load): its pending offsets become the committed ones (COMMIT) or are
        dropped (ABORT). Caller holds ``shard.lock``."""
        for k, v in shard.txn_offsets.end(producer_id, commit):
            self._replay_raw(shard, k, v, loading)
            if not loading:
                _replay_into(shard.committed, k, v)

    def on_txn_marker(self, topic: str, partition: int, producer_id: int, commit: bool) -> None:
        """The marker writer's hook (:func:`node.core.txn_markers.write_txn_markers`'
        ``on_written``): a COMMIT or ABORT marker of ``producer_id`` is written and replicated
        on ``topic``-``partition``; on a ``__consumer_offsets`` partition this node's shard
        ends the producer's pending offsets."""
        if topic != OFFSETS_TOPIC:
            return
        with self._lock:
            shard = self._shards.get(partition)
        if shard is None:
            return
        with shard.lock:
            if shard.loaded:
                self._end_txn(shard, producer_id, commit, False)

    def _durable(self, shard: _Shard) -> Future[OdradekError | None]:
        """A future of the shard's last write so far: None once the high watermark passed it,
        else the error to answer (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR). Called under
        ``shard.lock`` at the end of a request, waited for (:func:`_answer_after`) after
        releasing it: the request is answered only once what it wrote, or what its answer
        shows, is replicated."""
        return shard.writer.durable()

    def _replay_committed(self, shard: _Shard, writes: list[PendingWrite]) -> None:
        """The shard writer's callback: these writes are replicated; the reads' state takes
        them."""
        with shard.lock:
            for write in writes:
                for k, v in write.records:
                    _replay_into(shard.committed, k, v)

    # -- FindCoordinator ---------------------------------------------------------------------

    def find_coordinator(
        self, group_ids: Sequence[str], listener_name: str | None = None
    ) -> list[Coordinator]:
        """The leader of each group's partition, with its endpoint on ``listener_name`` (the
        listener the request came in on; ``None``: the registered host and port), one answer
        per group in request order. INVALID_GROUP_ID for an empty id;
        COORDINATOR_NOT_AVAILABLE while the topic is being created (this request creates it),
        the partition has no leader, or the leader has no endpoint on the listener."""
        out: list[Coordinator] = []
        snapshot = self._metadata.snapshot
        exists = any(t == OFFSETS_TOPIC for t, _ in snapshot.partitions)
        if not exists and any(group_ids):
            self._maybe_create_topic()
        for group_id in group_ids:
            try:
                check_group_id(group_id)
                if not exists:
                    raise CoordinatorNotAvailableError(f"{OFFSETS_TOPIC} is being created")
                state = snapshot.partitions.get(
                    (OFFSETS_TOPIC, partition_for(group_id, self._num_partitions()))
                )
                broker = None if state is None else snapshot.brokers.get(state.leader)
                if broker is None:
                    raise CoordinatorNotAvailableError(
                        f"the partition of group {group_id} has no leader"
                    )
                endpoint = broker.on_listener(listener_name)
                if endpoint is None:
                    raise CoordinatorNotAvailableError(
                        f"the coordinator of group {group_id} (node {broker.node_id}) has no "
                        f"listener {listener_name}"
                    )
                out.append(Coordinator(group_id, endpoint.node_id, endpoint.host, endpoint.port))
            except OdradekError as e:
                out.append(Coordinator(group_id, error_code=e.code, error_message=e.message))
        return out

    def _maybe_create_topic(self) -> None:
        """Create the topic, at most once a second (the next FindCoordinators meanwhile find
        it being created)."""
        live = len(self._metadata.snapshot.brokers)
        now = self._clock.monotonic_ms()
        with self._lock:
            if live == 0 or now < self._next_create_ms:
                return
            self._next_create_ms = now + 1000
        rf = min(self.config.offsets_topic_replication_factor, live)
        configs = {
            "cleanup.policy": "compact",
            "segment.bytes": str(self.config.offsets_topic_segment_bytes),
            "min.insync.replicas": str(min(2, rf)),
        }
        self._create_topic(OFFSETS_TOPIC, self.config.offsets_topic_num_partitions, rf, configs)

    # -- ConsumerGroupHeartbeat --------------------------------------------------------------

    def consumer_group_heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        """KIP-848's ConsumerGroupHeartbeat: join, heartbeat, leave; the member's assignment
        when it changed. Errors in the answer (never raised). Blocks until the answer may be
        given (:meth:`consumer_group_heartbeat_later`)."""
        return self.consumer_group_heartbeat_later(request).result()

    def consumer_group_heartbeat_later(
        self, request: HeartbeatRequest
    ) -> Future[HeartbeatResponse]:
        """:meth:`consumer_group_heartbeat` as a future, completed once the shard's write it
        depends on is replicated: the request is processed (its member's session restarted)
        at once, and no thread waits for the answer (the Kafka door awaits it on its loop)."""
        interval = self._heartbeat_interval_ms(request.group_id)

        def failed(e: OdradekError) -> HeartbeatResponse:
            return HeartbeatResponse(
                request.member_id, request.member_epoch, interval, e.code, e.message
            )

        try:
            shard = self._shard(request.group_id)
            topics = self.topics()
            by_id = {t.topic_id: t.name for t in topics.values()}
            with shard.lock:
                self.share.check_not_share(shard, request.group_id)
                result, converted = self.mixed.consumer_heartbeat(shard, request, topics)
                if not converted:
                    self._track(shard, request.group_id, result.member_id, result.removed_member_id)
                durable = self._durable(shard)
        except OdradekError as e:
            return _done(failed(e))
        assignment = None
        if result.assignment is not None:
            assignment = topic_partitions(result.assignment, by_id)
        answer = HeartbeatResponse(
            result.member_id, result.member_epoch, interval, assignment=assignment
        )
        return _then(durable, lambda error: answer if error is None else failed(error))

    def _session_timeout_ms(self, group_id: str) -> int:
        if self._group_configs is None:
            return self.config.group_consumer_session_timeout_ms
        return self._group_configs(group_id).consumer_session_timeout_ms

    def _heartbeat_interval_ms(self, group_id: str) -> int:
        if self._group_configs is None:
            return self.config.group_consumer_heartbeat_interval_ms
        return self._group_configs(group_id).consumer_heartbeat_interval_ms

    def _track(self, shard: _Shard, group_id: str, member_id: str, removed: str | None) -> None:
        """Restart the member's session timer (or drop it once it left); start or clear its
        revocation deadline. Caller holds ``shard.lock``."""
        now = self._clock.monotonic_ms()
        key = (group_id, member_id)
        if removed is not None:
            shard.sessions.pop((group_id, removed), None)
            shard.revocations.pop((group_id, removed), None)
        group = shard.state.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if member is None:
            shard.sessions.pop(key, None)
            shard.revocations.pop(key, None)
            return
        shard.sessions[key] = now + self._session_timeout_ms(group_id)
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            timeout = max(member.rebalance_timeout_ms, 0)
            shard.revocations.setdefault(key, now + timeout)
        else:
            shard.revocations.pop(key, None)

    # -- offsets -----------------------------------------------------------------------------

    def offset_commit(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        partitions: Sequence[OffsetCommitPartition],
        instance_id: str | None = None,
        api_version: int | None = None,
    ) -> OffsetCommitResult:
        """Commit offsets for ``group_id`` (``member_epoch`` -1: an admin or simple commit,
        only to a group without members, whatever ``member_id`` says). One result per
        partition in request order; a group-level error is set on the answer and on every
        partition. For a classic group
        ``member_epoch`` is the member's generation id (and ``instance_id`` its
        ``group.instance.id``), checked as Kafka's ``ClassicGroup.validateOffsetCommit``.
        ``api_version``: the Kafka request's version (a KIP-848 member's commit below v9 is
        UNSUPPORTED_VERSION). Blocks until the commit is replicated (or its wait failed):
        :meth:`offset_commit_later` holds no thread meanwhile."""
        return self.offset_commit_later(
            group_id, member_id, member_epoch, partitions, instance_id, api_version
        ).result()

    def offset_commit_later(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        partitions: Sequence[OffsetCommitPartition],
        instance_id: str | None = None,
        api_version: int | None = None,
    ) -> Future[OffsetCommitResult]:
        """:meth:`offset_commit` as a future, completed once the commit is replicated (or with
        the error of its wait: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR)."""
        commits = [
            (
                p.topic,
                p.partition,
                p.committed_offset,
                p.committed_leader_epoch,
                p.committed_metadata,
            )
            for p in partitions
        ]

        def failed(e: OdradekError) -> OffsetCommitResult:
            return OffsetCommitResult(
                e.code,
                tuple(PartitionResult(t, p, e.code, e.message) for t, p, *_ in commits),
            )

        try:
            shard = self._shard(group_id)
            with shard.lock:
                member_id, member_epoch = self.classic.check_offset_commit(
                    shard, group_id, member_id, member_epoch, instance_id
                )
                records, outcome = offset_commit_records(
                    shard.state.groups.get(group_id),
                    group_id,
                    member_id,
                    member_epoch,
                    commits,
                    self.topics(),
                    self._clock.wall_ms(),
                    api_version,
                )
                self._write(shard, records)
                durable = self._durable(shard)
        except OdradekError as e:
            return _done(failed(e))
        answer = OffsetCommitResult(
            0,
            tuple(
                PartitionResult(topic, partition, error.code, error.message)
                if isinstance(error, OdradekError)
                else PartitionResult(topic, partition)
                for topic, partition, error in outcome
            ),
        )
        return _then(durable, lambda error: answer if error is None else failed(error))

    def txn_offset_commit_later(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[OffsetCommitPartition],
        member_id: str = "",
        generation_id: int = -1,
        instance_id: str | None = None,
    ) -> Future[OffsetCommitResult]:
        """TxnOffsetCommit: write the offsets in ``producer_id``'s transaction, pending until
        it ends (:mod:`node.coordinator.txn_offsets`); checked first as KIP-447 says
        (:func:`check_txn_offset_commit`). A future of one result per partition in request
        order, done once the write is replicated; a request-level error is on every
        partition."""
        commits = [
            (
                p.topic,
                p.partition,
                p.committed_offset,
                p.committed_leader_epoch,
                p.committed_metadata,
            )
            for p in partitions
        ]

        def failed(e: OdradekError) -> OffsetCommitResult:
            return OffsetCommitResult(
                e.code,
                tuple(PartitionResult(t, p, e.code, e.message) for t, p, *_ in commits),
            )

        try:
            shard = self._shard(group_id)
            with shard.lock:
                group = shard.state.groups.get(group_id)
                classic = None if group is not None else shard.classic.get(group_id)
                check_txn_offset_commit(classic, group, member_id, generation_id, instance_id)
                records, outcome = txn_offset_commit_records(
                    group_id, commits, self.topics(), self._clock.wall_ms()
                )
                self._write(shard, records, (producer_id, producer_epoch))
                durable = self._durable(shard)
        except OdradekError as e:
            return _done(failed(e))
        answer = OffsetCommitResult(
            0,
            tuple(
                PartitionResult(topic, partition, error.code, error.message)
                if isinstance(error, OdradekError)
                else PartitionResult(topic, partition)
                for topic, partition, error in outcome
            ),
        )
        return _then(durable, lambda error: answer if error is None else failed(error))

    def offset_fetch(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        partitions: Sequence[tuple[str, int]] | None,
        require_stable: bool = False,
    ) -> OffsetFetchResult:
        """The committed offsets of ``partitions`` (``None``: every committed offset of the
        group, as Kafka's null topics); -1 for a partition without one. A consumer group checks
        a fetch that names a member (:func:`validate_offset_fetch`); a classic, simple or unknown
        group answers any fetch, as Kafka's ``ClassicGroup.validateOffsetFetch``.
        ``require_stable`` (KIP-447): a partition with offsets pending in an open transaction
        answers UNSTABLE_OFFSET_COMMIT (offset -1); without it, its last committed offset."""
        out: list[OffsetFetchPartition] = []
        try:
            shard = self._shard(group_id)
            with shard.lock:  # the committed state: Kafka reads at the last committed offset
                view = shard.committed
                if group_id in view.groups:
                    validate_offset_fetch(view.groups[group_id], member_id, member_epoch)
                # else a classic group (whose fetch Kafka does not check), a simple one or none:
                # answered whatever the member id and epoch (-1 where nothing is committed)
                committed = dict(view.offsets.get(group_id, {}))
                wanted: Iterable[tuple[str, int]] = (
                    sorted(committed) if partitions is None else partitions
                )
                unstable = (
                    {tp for tp in wanted if shard.txn_offsets.is_pending(group_id, *tp)}
                    if require_stable
                    else set()
                )
            for topic, partition in wanted:
                value = committed.get((topic, partition))
                if (topic, partition) in unstable:
                    out.append(
                        OffsetFetchPartition(
                            topic,
                            partition,
                            error_code=UNSTABLE_OFFSET_COMMIT,
                            error_message="an open transaction holds offsets of the partition",
                        )
                    )
                elif value is None:
                    out.append(OffsetFetchPartition(topic, partition))
                else:
                    out.append(
                        OffsetFetchPartition(
                            topic, partition, value.offset, value.leader_epoch, value.metadata
                        )
                    )
        except OdradekError as e:
            return OffsetFetchResult(e.code, e.message)
        return OffsetFetchResult(partitions=tuple(out))

    def offset_delete(
        self, group_id: str, partitions: Sequence[tuple[str, int]]
    ) -> OffsetDeleteResult:
        """Delete committed offsets; GROUP_SUBSCRIBED_TO_TOPIC for a topic a member of the
        group subscribes to; GROUP_ID_NOT_FOUND for a group with neither state nor offsets."""
        out: list[PartitionResult] = []
        try:
            shard = self._shard(group_id)
            with shard.lock:
                group = shard.state.groups.get(group_id)
                committed = shard.state.offsets.get(group_id, {})
                classic = shard.classic.get(group_id)
                if group is None and not committed and classic is None:
                    raise GroupIdNotFoundError(f"Group {group_id} not found.")
                subscribed = set() if group is None else group.subscribed_topics(self.topics())
                if classic is not None:
                    subscribed |= classic.subscribed_topics()
                records: list[GroupRecord] = []
                for topic, p in partitions:
                    if topic in subscribed:
                        err = GroupSubscribedToTopicError(f"the group subscribes to topic {topic}")
                        out.append(PartitionResult(topic, p, err.code, err.message))
                        continue
                    out.append(PartitionResult(topic, p))
                    if (topic, p) in committed:
                        records.append((OffsetCommitKey(group_id, topic, p), None))
                self._write(shard, records)
                durable = self._durable(shard)
            _answer_after(durable)
        except OdradekError as e:
            return OffsetDeleteResult(e.code, e.message, tuple(out))
        return OffsetDeleteResult(partitions=tuple(out))

    # -- groups ------------------------------------------------------------------------------

    def _loaded_shards(self) -> list[_Shard]:
        with self._lock:
            return [s for s in self._shards.values() if s.loaded]

    def list_groups(self, states_filter: Sequence[str] = ()) -> ListGroupsResult:
        """The groups of every shard this node has loaded (ask every node for all groups),
        those in one of ``states_filter`` (Kafka's state names, any case; empty: all)."""
        wanted = {s.lower() for s in states_filter}
        out: list[ListedGroup] = []
        for shard in self._loaded_shards():
            with shard.lock:
                out += self.classic.listed(shard, wanted)
                out += self.share.listed(shard, wanted)
                view = shard.committed
                names = set(view.groups) | set(view.offsets)
                for gid in sorted(names - set(shard.classic)):
                    group = view.groups.get(gid)
                    state = "Empty" if group is None else group.state_name()
                    if wanted and state.lower() not in wanted:
                        continue
                    if group is None:
                        # committed offsets alone: Kafka's "simple" group, an empty classic one
                        out.append(ListedGroup(gid, state, "", group_type="classic"))
                    else:
                        out.append(ListedGroup(gid, state))
        return ListGroupsResult(groups=tuple(out))

    def share_group_counts(self) -> tuple[dict[str, int], int]:
        """The share groups this node coordinates, by state, and their members (metrics)."""
        return self.share.counts(self._loaded_shards())

    def describe_groups(self, group_ids: Sequence[str]) -> list[DescribedGroup]:
        """ConsumerGroupDescribe (and DescribeGroups): each group's state and members, in
        request order; a classic group with ``group_type`` "classic", its protocol type and
        protocol, and its members' metadata and assignment bytes."""
        out: list[DescribedGroup] = []
        topics = self.topics()
        by_id = {t.topic_id: t.name for t in topics.values()}
        for gid in group_ids:
            try:
                shard = self._shard(gid)
                with shard.lock:
                    shared = self.share.described(shard, gid)
                    if shared is not None:
                        out.append(shared)
                        continue
                    view = shard.committed
                    classic = shard.classic.get(gid)
                    if classic is not None and gid not in view.groups:
                        out.append(described_classic_group(classic, topics))
                        continue
                    group = view.groups.get(gid)
                    if group is None:
                        if gid not in view.offsets:
                            raise GroupIdNotFoundError(f"Group {gid} not found.")
                        group = ConsumerGroup(gid)
                    assignor = "uniform"
                    members = []
                    for m in sorted(group.members.values(), key=lambda m: m.member_id):
                        target = group.target.get(m.member_id, {})
                        members.append(described_member(m, target, by_id))
                        if m.server_assignor:
                            assignor = m.server_assignor
                    out.append(
                        DescribedGroup(
                            group_id=gid,
                            group_state=group.state_name(),
                            group_epoch=group.group_epoch,
                            assignment_epoch=group.assignment_epoch,
                            assignor_name=assignor,
                            members=tuple(members),
                        )
                    )
            except OdradekError as e:
                out.append(DescribedGroup(gid, e.code, e.message))
        return out

    def delete_groups(self, group_ids: Sequence[str]) -> list[DeletedGroup]:
        """Delete empty groups and their offsets (tombstones); NON_EMPTY_GROUP otherwise."""
        out: list[DeletedGroup] = []
        for gid in group_ids:
            try:
                shard = self._shard(gid)
                with shard.lock:
                    group = shard.state.groups.get(gid)
                    offsets = shard.txn_offsets.with_pending(gid, shard.state.offsets.get(gid, {}))
                    if self.share.delete(shard, gid):
                        pass
                    elif not self.classic.delete(
                        shard, gid, delete_group_records(group, gid, offsets)
                    ):
                        if group is None and not offsets:
                            raise GroupIdNotFoundError(f"Group {gid} not found.")
                        if group is not None and group.members:
                            raise NonEmptyGroupError(f"Group {gid} is not empty.")
                        self._write(shard, delete_group_records(group, gid, offsets))
                    durable = self._durable(shard)
                _answer_after(durable)
                out.append(DeletedGroup(gid))
            except OdradekError as e:
                out.append(DeletedGroup(gid, e.code, e.message))
        return out

    # -- timers ------------------------------------------------------------------------------

    def _tick_loop(self) -> None:
        while not self._stopped.wait(TICK_MS / 1000):
            try:
                self.tick()
            except Exception:
                log.exception("group coordinator timer failed")

    def tick(self) -> None:
        """Expire sessions and revocations; every retention interval, expire offsets."""
        now = self._clock.monotonic_ms()
        retention_due = now >= self._next_retention_ms
        if retention_due:
            self._next_retention_ms = now + self.config.offsets_retention_check_interval_ms
        for shard in self._loaded_shards():
            with shard.lock:
                shard.writer.recheck()
                self.classic.tick(shard, now)
                self.share.tick(shard, now)
                expired = {k for k, deadline in shard.sessions.items() if deadline <= now}
                expired |= {k for k, deadline in shard.revocations.items() if deadline <= now}
                for group_id, member_id in sorted(expired):
                    shard.sessions.pop((group_id, member_id), None)
                    shard.revocations.pop((group_id, member_id), None)
                    group = shard.state.groups.get(group_id)
                    if group is None or member_id not in group.members:
                        continue
                    log.info("member %s of group %s expired: removing it", member_id, group_id)
                    try:
                        self.mixed.remove_expired(shard, group, member_id)
                    except OdradekError as e:
                        log.info("could not remove member %s: %s", member_id, e)
                if retention_due:
                    self._expire_offsets(shard)

    def _expire_offsets(self, shard: _Shard) -> None:
        """KIP-848 groups: offsets of topics the group does not subscribe to expire
        ``offsets.retention.minutes`` after their commit (or at a legacy expire timestamp);
        an empty group left without offsets is deleted. Caller holds ``shard.lock``."""
        now = self._clock.wall_ms()
        retention_ms = self.config.offsets_retention_minutes * 60_000
        records: list[GroupRecord] = []
        for gid, offsets in shard.state.offsets.items():
            if gid in shard.classic and not shard.classic[gid].is_empty():
                continue  # a classic group's offsets expire only once it is empty
            group = shard.state.groups.get(gid)
            subscribed = set() if group is None else group.subscribed_topics(self.topics())
            expired = [
                tp
                for tp, value in offsets.items()
                if tp[0] not in subscribed
                and not shard.txn_offsets.is_pending(gid, *tp)  # Kafka waits for the txn
                and (
                    now >= value.expire_timestamp
                    if value.expire_timestamp != -1
                    else now - value.commit_timestamp >= retention_ms
                )
            ]
            records += [(OffsetCommitKey(gid, t, p), None) for t, p in expired]
            if (
                len(expired) == len(offsets)
                and group is not None
                and not group.members
                and not shard.txn_offsets.pending_partitions(gid)
            ):
                records += delete_group_records(group, gid, [])
        try:
            self._write(shard, records)
        except OdradekError as e:
            log.info("could not expire offsets: %s", e)
