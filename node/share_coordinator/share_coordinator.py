"""The share coordinator: share partitions' durable state served from ``__share_group_state``.

Kafka's ``ShareCoordinatorService`` with its ``ShareCoordinatorShard`` for one node. The
coordinator of share partition ``group:topicId:partition`` is the leader of partition
``abs(javaHash("group:topicId:partition")) % share.coordinator.state.topic.num.partitions`` of
the internal compacted topic ``__share_group_state``; for each such partition this node leads
it keeps a *shard*: the states of the share partitions mapped there, loaded by replaying the
partition when the node becomes its leader (calls meanwhile: COORDINATOR_LOAD_IN_PROGRESS; a
partition it does not lead, or no longer: NOT_COORDINATOR) and dropped when it stops leading it.

* **Decisions** are :mod:`node.share_coordinator.share_state`'s pure functions (the fencing:
  FENCED_STATE_EPOCH, FENCED_LEADER_EPOCH). A change is decided, written as a snapshot record
  (:mod:`odradek.share_state_records`) with acks=-1 to the shard's partition (at the shard's
  leader epoch, so a deposed coordinator's write is refused by its log) and applied in memory
  only once the high watermark passed it: **a call is answered only once its state is
  durable**. The shard's lock is held from the decision to the answer, so the writes of one
  shard are decided, written and applied in one order (a slow replication holds the other
  share partitions of the same ``__share_group_state`` partition; those of the 49 others go on).
  A write that failed (NOT_COORDINATOR when the leadership moved, COORDINATOR_NOT_AVAILABLE when
  not replicated within ``share.coordinator.write.timeout.ms``) changes nothing in memory; the
  caller retries.
* **Delete** writes a tombstone (a null value) under the share partition's key, so that
  compaction forgets it.
* **The topic** is created on first use (FindCoordinator with key type 2, or a persister call
  that finds no topic) with Kafka's ``share.coordinator.state.topic.*`` settings (50
  partitions, replication min(3, live brokers), ``cleanup.policy=compact``,
  ``min.insync.replicas`` min(2, replication)).
* **Metrics.** Each shard's load time and each write (its latency, whether it was durable) are
  told to the :class:`ShareCoordinatorEvents` given (the node's
  :class:`~node.metrics.share_coordinator_metrics.ShareCoordinatorMetrics`);
  :meth:`partition_counts` counts the shards loaded and loading (read at scrape time).

Thread-safe: the shard map has a lock; each shard has its own. Calls block their thread while
their write replicates.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from node.coordinator.group_coordinator import partition_for
from node.coordinator.group_requests import Coordinator
from node.core.metadata_cache import MetadataCache
from node.core.replica_manager import ReplicaManager
from node.core.requests import ProducePartition, records_bytes
from node.share.persister import ShareKey, ShareSnapshot, ShareSummary
from node.share_coordinator import share_state as ss
from node.share_coordinator.share_coordinator_config import ShareCoordinatorConfig
from odradek.clock import Clock
from odradek.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    InvalidRequestError,
    NotCoordinatorError,
    OdradekError,
    error_for_code,
)
from odradek.records import Record, build_batch, read_batches
from odradek.share_state_records import (
    SHARE_GROUP_STATE_TOPIC,
    SHARE_SNAPSHOT_KEY_TYPE,
    decode_share_key,
    decode_share_value,
    encode_share_key,
    encode_share_value,
)

__all__ = ["ShareCoordinator", "ShareCoordinatorEvents", "parse_share_key"]

log = logging.getLogger(__name__)

_LOAD_READ_BYTES = 1 << 20

CreateTopic = Callable[[str, int, int, Mapping[str, str]], None]


class ShareCoordinatorEvents(Protocol):
    """What the coordinator tells its metrics. Called on request and load threads: must be
    thread-safe and never block."""

    def partition_loaded(self, load_ms: int, now_ms: int) -> None:
        """A ``__share_group_state`` partition this node now leads was replayed in
        ``load_ms``."""
        ...

    def write_done(self, latency_ms: int, durable: bool) -> None:
        """A write to ``__share_group_state`` ended after ``latency_ms``: replicated
        (``durable``) or failed."""
        ...


def parse_share_key(key: str) -> ShareKey:
    """A FindCoordinator key of type 2, ``group:topicId:partition`` (Kafka's
    ``SharePartitionKey.validate``; the group id may itself hold colons). Raises
    ``InvalidRequestError``."""
    group_id, sep, rest = key.rpartition(":")
    group_id, sep2, topic_id = group_id.rpartition(":")
    if not sep or not sep2 or not group_id or not topic_id:
        raise InvalidRequestError(f"share coordinator key {key!r} is not group:topicId:partition")
    try:
        partition = int(rest)
    except ValueError:
        raise InvalidRequestError(f"share coordinator key {key!r}: bad partition") from None
    share_key = ShareKey(group_id, topic_id, partition)
    ss.check_key(share_key)
    return share_key


class _Shard:
    """One ``__share_group_state`` partition this node leads."""

    def __init__(self, partition: int, epoch: int) -> None:
        self.partition = partition
        self.epoch = epoch
        self.loaded = False
        self.lock = threading.Lock()
        self.states: dict[ShareKey, ss.StoredState] = {}


class ShareCoordinator:
    """Serves the persister's calls for the ``__share_group_state`` partitions this node
    leads. Thread-safe."""

    def __init__(
        self,
        config: ShareCoordinatorConfig,
        replicas: ReplicaManager,
        metadata: MetadataCache,
        clock: Clock,
        create_topic: CreateTopic,
        events: ShareCoordinatorEvents | None = None,
    ) -> None:
        self.config = config
        self._replicas = replicas
        self._metadata = metadata
        self._clock = clock
        self._create_topic = create_topic
        self._events = events
        self._lock = threading.Lock()
        self._shards: dict[int, _Shard] = {}
        self._next_create_ms = 0

    @property
    def node_id(self) -> int:
        return self._replicas.node_id

    # -- lifecycle ---------------------------------------------------------------------------

    def shutdown(self) -> None:
        with self._lock:
            self._shards.clear()

    def on_leadership_change(self, topic: str, partition: int, leader: bool, epoch: int) -> None:
        """The replica manager's callback: load the shard of a partition this node now leads,
        drop the one of a partition it no longer leads. Never blocks for long."""
        if topic != SHARE_GROUP_STATE_TOPIC:
            return
        with self._lock:
            current = self._shards.get(partition)
            if not leader:
                if current is not None:
                    log.info("unloading share states of %s-%d", topic, partition)
                    del self._shards[partition]
                return
            if current is not None and current.epoch == epoch:
                return
            shard = _Shard(partition, epoch)
            self._shards[partition] = shard
        threading.Thread(
            target=self._load, args=(shard,), name=f"share-state-load-{partition}", daemon=True
        ).start()

    def _load(self, shard: _Shard) -> None:
        hosted = self._replicas.partition(SHARE_GROUP_STATE_TOPIC, shard.partition)
        if hosted is None:
            return
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
                    "loading share states of %s-%d failed", SHARE_GROUP_STATE_TOPIC, shard.partition
                )
                return
            shard.loaded = True
        now_ms = self._clock.monotonic_ms()
        if self._events is not None:
            self._events.partition_loaded(now_ms - started_ms, now_ms)
        log.info(
            "loaded %d share partition states of %s-%d (leader epoch %d)",
            len(shard.states),
            SHARE_GROUP_STATE_TOPIC,
            shard.partition,
            shard.epoch,
        )

    def _replay(self, shard: _Shard, key: bytes | None, value: bytes | None) -> None:
        if key is None:
            return
        try:
            decoded_key = decode_share_key(key)
            ss.replay(shard.states, decoded_key, decode_share_value(decoded_key.record_type, value))
        except (OdradekError, ValueError) as exc:
            log.warning(
                "skipping a record of %s-%d: %s", SHARE_GROUP_STATE_TOPIC, shard.partition, exc
            )

    # -- helpers -----------------------------------------------------------------------------

    def num_partitions(self) -> int:
        """The partitions of ``__share_group_state`` (the configured count before it exists)."""
        count = sum(
            1 for t, _ in self._metadata.snapshot.partitions if t == SHARE_GROUP_STATE_TOPIC
        )
        return count or self.config.share_coordinator_state_topic_num_partitions

    def partition_for(self, key: ShareKey) -> int:
        return partition_for(key.coordinator_key(), self.num_partitions())

    def loaded_partitions(self) -> int:
        with self._lock:
            return sum(1 for s in self._shards.values() if s.loaded)

    def partition_counts(self) -> dict[str, int]:
        """The partitions this node leads by state: ``active`` (loaded) and ``loading``."""
        with self._lock:
            loaded = sum(1 for s in self._shards.values() if s.loaded)
            return {"active": loaded, "loading": len(self._shards) - loaded}

    def _shard(self, key: ShareKey) -> _Shard:
        """The loaded shard of ``key``. Raises INVALID_REQUEST, NOT_COORDINATOR,
        COORDINATOR_LOAD_IN_PROGRESS."""
        ss.check_key(key)
        partition = self.partition_for(key)
        with self._lock:
            shard = self._shards.get(partition)
        if shard is None:
            raise NotCoordinatorError(
                f"node {self.node_id} is not the share coordinator of {key.coordinator_key()}"
            )
        if not shard.loaded:
            raise CoordinatorLoadInProgressError(
                f"the share states of {SHARE_GROUP_STATE_TOPIC}-{partition} are loading"
            )
        return shard

    def _current(self, shard: _Shard) -> bool:
        with self._lock:
            return self._shards.get(shard.partition) is shard

    def _write(self, shard: _Shard, key: ShareKey, state: ss.StoredState | None) -> None:
        """Append ``state``'s snapshot (None: a tombstone) with acks=-1 and wait for it, then
        apply it. Caller holds the shard's lock. Raises NOT_COORDINATOR (the leadership
        moved), COORDINATOR_NOT_AVAILABLE (not replicated in time)."""
        record_key = encode_share_key(ss.record_key(key))
        value = encode_share_value(
            SHARE_SNAPSHOT_KEY_TYPE, None if state is None else ss.to_value(state)
        )
        batch = build_batch([Record(record_key, value, timestamp=self._clock.wall_ms())])
        started_ms = self._clock.monotonic_ms()
        (result,) = self._replicas.append_records(
            [
                ProducePartition(
                    SHARE_GROUP_STATE_TOPIC,
                    shard.partition,
                    batch,
                    current_leader_epoch=shard.epoch,
                )
            ],
            acks=-1,
            timeout_ms=self.config.share_coordinator_write_timeout_ms,
        )
        error = (
            None
            if result.error_code == 0
            else _write_error(result.error_code, result.error_message)
        )
        if error is None and not self._current(shard):
            error = NotCoordinatorError("the share coordinator moved during the write")
        if self._events is not None:
            self._events.write_done(self._clock.monotonic_ms() - started_ms, error is None)
        if error is not None:
            raise error
        if state is None:
            shard.states.pop(key, None)
        else:
            shard.states[key] = state

    # -- FindCoordinator ---------------------------------------------------------------------

    def find_coordinator(
        self, keys: Sequence[str], listener_name: str | None = None
    ) -> list[Coordinator]:
        """The leader of each key's ``__share_group_state`` partition on ``listener_name``, in
        request order (INVALID_REQUEST for a key that is not ``group:topicId:partition``,
        COORDINATOR_NOT_AVAILABLE while the topic is created or leaderless). A well-formed key
        creates ``__share_group_state`` if it does not exist."""
        parsed: list[ShareKey | OdradekError] = []
        for key in keys:
            try:
                parsed.append(parse_share_key(key))
            except OdradekError as e:
                parsed.append(e)
        snapshot = self._metadata.snapshot
        exists = any(t == SHARE_GROUP_STATE_TOPIC for t, _ in snapshot.partitions)
        if not exists and any(isinstance(k, ShareKey) for k in parsed):
            self.maybe_create_topic()
        out: list[Coordinator] = []
        for key, share_key in zip(keys, parsed, strict=True):
            try:
                if isinstance(share_key, OdradekError):
                    raise share_key
                if not exists:
                    raise CoordinatorNotAvailableError(
                        f"{SHARE_GROUP_STATE_TOPIC} is being created"
                    )
                state = snapshot.partitions.get(
                    (SHARE_GROUP_STATE_TOPIC, self.partition_for(share_key))
                )
                broker = None if state is None else snapshot.brokers.get(state.leader)
                endpoint = None if broker is None else broker.on_listener(listener_name)
                if endpoint is None:
                    raise CoordinatorNotAvailableError(
                        f"the share state partition of {key} has no leader on this listener"
                    )
                out.append(Coordinator(key, endpoint.node_id, endpoint.host, endpoint.port))
            except OdradekError as e:
                out.append(Coordinator(key, error_code=e.code, error_message=e.message))
        return out

    def maybe_create_topic(self) -> None:
        """Create ``__share_group_state`` unless it exists (at most once a second)."""
        snapshot = self._metadata.snapshot
        if any(t == SHARE_GROUP_STATE_TOPIC for t, _ in snapshot.partitions):
            return
        live = len(snapshot.brokers)
        now = self._clock.monotonic_ms()
        with self._lock:
            if live == 0 or now < self._next_create_ms:
                return
            self._next_create_ms = now + 1000
        c = self.config
        rf = min(c.share_coordinator_state_topic_replication_factor, live)
        configs = {
            "cleanup.policy": "compact",
            "compression.type": "uncompressed",
            "segment.bytes": str(c.share_coordinator_state_topic_segment_bytes),
            "min.insync.replicas": str(min(c.share_coordinator_state_topic_min_isr, rf)),
        }
        self._create_topic(
            SHARE_GROUP_STATE_TOPIC, c.share_coordinator_state_topic_num_partitions, rf, configs
        )

    # -- the persister's calls -----------------------------------------------------------------

    def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> None:
        """InitializeShareGroupState. Raises ``OdradekError`` (FENCED_STATE_EPOCH,
        NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
        INVALID_REQUEST)."""
        shard = self._shard(key)
        with shard.lock:
            after = ss.decide_initialize(
                shard.states.get(key), state_epoch, start_offset, self._clock.wall_ms()
            )
            self._write(shard, key, after)

    def read(self, key: ShareKey, leader_epoch: int) -> ShareSnapshot:
        """ReadShareGroupState; a newer leader's epoch is written first. Raises
        ``OdradekError`` (FENCED_LEADER_EPOCH and the coordinator's errors)."""
        shard = self._shard(key)
        with shard.lock:
            snapshot, after = ss.decide_read(
                shard.states.get(key), leader_epoch, self._clock.wall_ms()
            )
            if after is not None:
                self._write(shard, key, after)
            return snapshot

    def write(self, key: ShareKey, snapshot: ShareSnapshot) -> None:
        """WriteShareGroupState. Raises ``OdradekError`` (FENCED_LEADER_EPOCH,
        FENCED_STATE_EPOCH and the coordinator's errors)."""
        shard = self._shard(key)
        with shard.lock:
            after = ss.decide_write(shard.states.get(key), snapshot, self._clock.wall_ms())
            self._write(shard, key, after)

    def delete(self, key: ShareKey) -> None:
        """DeleteShareGroupState: a tombstone (nothing written for a state not stored)."""
        shard = self._shard(key)
        with shard.lock:
            if key in shard.states:
                self._write(shard, key, None)

    def read_summary(self, key: ShareKey) -> ShareSummary:
        """ReadShareGroupStateSummary (writes nothing)."""
        shard = self._shard(key)
        with shard.lock:
            return ss.summary(shard.states.get(key))


def _write_error(code: int, message: str) -> OdradekError:
    """Kafka's coordinator mapping of a produce error."""
    error = error_for_code(code, message)
    if error.code in (6, 3, 74):  # NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, FENCED
        return NotCoordinatorError(f"the write to {SHARE_GROUP_STATE_TOPIC} failed: {error}")
    if error.code in (19, 20, 7):  # NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT
        return CoordinatorNotAvailableError(f"the write was not replicated: {error}")
    return error
