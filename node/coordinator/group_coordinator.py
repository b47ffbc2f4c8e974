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
* **Writes.** Every change is decided by the pure functions of :mod:`node.coordinator.group_state`,
which
  return records; the records are appended to the local leader with acks=-1 through the
  replica manager's produce path (the same purgatory as clients' produce requests) and replayed
  into the shard only once the high watermark has passed them. A request is answered only
  after that, so an answered commit survives a coordinator failover. Writes to one shard are
  serialised by the shard's lock (Kafka's coordinator runtime runs one event at a time per
  partition).
* **Timers.** A member's session expires ``group.consumer.session.timeout.ms`` (or its
  group's ``consumer.session.timeout.ms``, :mod:`node.coordinator.group_config`) after its last
  heartbeat (also restarted for every member when a shard is loaded); a member still revoking
  partitions after its rebalance timeout is fenced. Both remove it, bumping the group epoch.
  Offsets of topics the group no longer subscribes to expire after
  ``offsets.retention.minutes`` (KIP-848 groups: counted from the commit), and an empty group
  without offsets is deleted, with tombstones.
* **The topic.** ``__consumer_offsets`` is created on first use, by FindCoordinator, with
  Kafka's defaults: 50 partitions, replication factor min(3, live brokers),
  ``cleanup.policy=compact``, ``min.insync.replicas`` min(2, replication factor).
* **Classic groups** (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) live in the same shards,
  served by :attr:`GroupCoordinator.classic`
  (:class:`~node.coordinator.classic_coordinator.ClassicCoordinator`); offsets, ListGroups,
  DescribeGroups and DeleteGroups here serve both kinds. A group id is one kind at a time.

Thread-safe: the shard map has a lock; each shard has its own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

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
from node.core.metadata_cache import MetadataCache
from node.core.replica_manager import ReplicaManager
from node.core.requests import ProducePartition, records_bytes
from odradek.clock import Clock
from odradek.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    CorruptRecordError,
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    NonEmptyGroupError,
    NotCoordinatorError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OdradekError,
    RequestTimedOutError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
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
from odradek.records import Record, build_batch, read_batches

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


class _Shard:
    """One ``__consumer_offsets`` partition this node leads."""

    def __init__(self, partition: int, leader_epoch: int) -> None:
        self.partition = partition
        self.leader_epoch = leader_epoch
        self.loaded = False
        self.lock = threading.Lock()
        self.state = GroupShard()
        self.sessions: dict[tuple[str, str], int] = {}
        """(group, member) → monotonic deadline of its session."""
        self.revocations: dict[tuple[str, str], int] = {}
        """(group, member) → deadline for a member in UNREVOKED_PARTITIONS."""
        self.classic: dict[str, ClassicGroup] = {}
        """Classic groups (:mod:`node.coordinator.classic_coordinator`)."""
        self.classic_waiters: dict[tuple[str, str, str], list[Any]] = {}


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
            self._shards.clear()

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
                    self.classic.unloaded(current)
                return
            if current is not None and current.leader_epoch == epoch:
                return
            shard = _Shard(partition, epoch)
            self._shards[partition] = shard
        threading.Thread(
            target=self._load, args=(shard,), name=f"group-load-{partition}", daemon=True
        ).start()

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
                            continue
                        for record in batch.records():
                            count += self._replay_raw(shard, record.key, record.value, True)
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
            if loading:
                self.classic.replay(shard, decoded_key, decoded)
            shard.state.replay(decoded_key, decoded)
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

    def _write(self, shard: _Shard, records: list[GroupRecord]) -> None:
        """Append ``records`` with acks=-1, then replay them. Caller holds ``shard.lock``.
        Raises NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or UNKNOWN_SERVER_ERROR as Kafka's
        coordinator maps produce errors."""
        if not records:
            return
        now = self._clock.wall_ms()
        encoded = [(encode_key(k), None if v is None else encode_value(v)) for k, v in records]
        batch = build_batch([Record(k, v, timestamp=now) for k, v in encoded])
        (result,) = self._replicas.append_records(
            [
                ProducePartition(
                    topic=OFFSETS_TOPIC,
                    partition=shard.partition,
                    records=batch,
                    current_leader_epoch=shard.leader_epoch,
                )
            ],
            acks=-1,
            timeout_ms=self.config.offsets_commit_timeout_ms,
        )
        if result.error_code:
            error = error_for_code(result.error_code, result.error_message)
            if isinstance(error, NotLeaderOrFollowerError | UnknownTopicOrPartitionError):
                raise NotCoordinatorError(f"the write to the group's partition failed: {error}")
            if isinstance(
                error,
                NotEnoughReplicasError | NotEnoughReplicasAfterAppendError | RequestTimedOutError,
            ):
                raise CoordinatorNotAvailableError(f"the write was not replicated: {error}")
            if error.code == 74:  # FENCED_LEADER_EPOCH: a newer leadership took over
                raise NotCoordinatorError(f"the group's partition has a new leader: {error}")
            raise UnknownServerError(f"the write failed: {error}")
        for k, v in encoded:
            self._replay_raw(shard, k, v)

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
        when it changed. Errors in the answer (never raised)."""
        interval = self._heartbeat_interval_ms(request.group_id)
        try:
            shard = self._shard(request.group_id)
            topics = self.topics()
            by_id = {t.topic_id: t.name for t in topics.values()}
            with shard.lock:
                result, converted = self.mixed.consumer_heartbeat(shard, request, topics)
                if not converted:
                    self._track(shard, request.group_id, result.member_id, result.removed_member_id)
        except OdradekError as e:
            return HeartbeatResponse(
                request.member_id, request.member_epoch, interval, e.code, e.message
            )
        assignment = None
        if result.assignment is not None:
            assignment = topic_partitions(result.assignment, by_id)
        return HeartbeatResponse(
            result.member_id, result.member_epoch, interval, assignment=assignment
        )

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
        only to a group without members). One result per partition in request order; a
        group-level error is set on the answer and on every partition. For a classic group
        ``member_epoch`` is the member's generation id (and ``instance_id`` its
        ``group.instance.id``), checked as Kafka's ``ClassicGroup.validateOffsetCommit``.
        ``api_version``: the Kafka request's version (a KIP-848 member's commit below v9 is
        UNSUPPORTED_VERSION)."""
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
        except OdradekError as e:
            return OffsetCommitResult(
                e.code,
                tuple(PartitionResult(t, p, e.code, e.message) for t, p, *_ in commits),
            )
        return OffsetCommitResult(
            0,
            tuple(
                PartitionResult(topic, partition, error.code, error.message)
                if isinstance(error, OdradekError)
                else PartitionResult(topic, partition)
                for topic, partition, error in outcome
            ),
        )

    def offset_fetch(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        partitions: Sequence[tuple[str, int]] | None,
    ) -> OffsetFetchResult:
        """The committed offsets of ``partitions`` (``None``: every committed offset of the
        group, as Kafka's null topics); -1 for a partition without one."""
        out: list[OffsetFetchPartition] = []
        try:
            shard = self._shard(group_id)
            with shard.lock:
                if group_id not in shard.state.groups and group_id in shard.classic:
                    pass  # classic members fetch without a member id (OffsetFetch < v9)
                else:
                    validate_offset_fetch(shard.state.groups.get(group_id), member_id, member_epoch)
                committed = dict(shard.state.offsets.get(group_id, {}))
            wanted: Iterable[tuple[str, int]] = (
                sorted(committed) if partitions is None else partitions
            )
            for topic, partition in wanted:
                value = committed.get((topic, partition))
                if value is None:
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
                names = set(shard.state.groups) | set(shard.state.offsets)
                for gid in sorted(names - set(shard.classic)):
                    group = shard.state.groups.get(gid)
                    state = "Empty" if group is None else group.state_name()
                    if wanted and state.lower() not in wanted:
                        continue
                    if group is None:
                        # committed offsets alone: Kafka's "simple" group, an empty classic one
                        out.append(ListedGroup(gid, state, "", group_type="classic"))
                    else:
                        out.append(ListedGroup(gid, state))
        return ListGroupsResult(groups=tuple(out))

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
                    classic = shard.classic.get(gid)
                    if classic is not None and gid not in shard.state.groups:
                        out.append(described_classic_group(classic, topics))
                        continue
                    group = shard.state.groups.get(gid)
                    if group is None:
                        if gid not in shard.state.offsets:
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
                    offsets = list(shard.state.offsets.get(gid, {}))
                    if self.classic.delete(shard, gid, delete_group_records(group, gid, offsets)):
                        out.append(DeletedGroup(gid))
                        continue
                    if group is None and not offsets:
                        raise GroupIdNotFoundError(f"Group {gid} not found.")
                    if group is not None and group.members:
                        raise NonEmptyGroupError(f"Group {gid} is not empty.")
                    self._write(shard, delete_group_records(group, gid, offsets))
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
                self.classic.tick(shard, now)
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
                and (
                    now >= value.expire_timestamp
                    if value.expire_timestamp != -1
                    else now - value.commit_timestamp >= retention_ms
                )
            ]
            records += [(OffsetCommitKey(gid, t, p), None) for t, p in expired]
            if len(expired) == len(offsets) and group is not None and not group.members:
                records += delete_group_records(group, gid, [])
        try:
            self._write(shard, records)
        except OdradekError as e:
            log.info("could not expire offsets: %s", e)
