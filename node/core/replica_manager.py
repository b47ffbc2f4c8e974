"""The partitions a node hosts, and the requests that act on them.

Kafka's ``ReplicaManager`` with its purgatories. It applies the controller's LeaderAndIsr,
StopReplica and UpdateMetadata requests, serves produce (acks 0 / 1 / -1), consumer and
follower fetches (long polls), ListOffsets, OffsetForLeaderEpoch and DeleteRecords, and runs the
ISR-shrink check. Requests that wait (acks=-1 until the high watermark passes their batch, a
fetch until min_bytes arrive, DeleteRecords until the followers follow) register with
:mod:`node.core.wakeups` for their partitions and the kinds of change that can complete them, and
the partitions report each change there; each request thread waits on its own, so a waiting
request never blocks another. Thread-safe.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from node.core.follower_sessions import FollowerSessions, session_lost_grace_ms
from node.core.metadata_cache import MetadataCache
from node.core.partition import IsrChange, LeaderAndIsrState, Partition
from node.core.pending_append import PendingAppend
from node.core.pending_fetch import PendingFetch
from node.core.requests import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    Broker,
    DeleteRecordsPartition,
    DeleteRecordsResult,
    EpochEndOffset,
    FetchPartition,
    FetchResult,
    LeaderAndIsrPartition,
    LeaderAndIsrRequest,
    LeaderIdAndEpoch,
    ListOffsetsPartition,
    ListOffsetsResult,
    OffsetForLeaderEpochPartition,
    OffsetForLeaderEpochResult,
    PartitionError,
    ProducePartition,
    ProduceResult,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from node.core.wakeups import DATA, HIGH_WATERMARK, LOG_START, Wakeups, add_remote_time_ms
from odradek.clock import Clock
from odradek.errors import (
    FencedLeaderEpochError,
    InvalidRequestError,
    InvalidRequiredAcksError,
    KafkaStorageError,
    NotLeaderOrFollowerError,
    OdradekError,
    RequestTimedOutError,
    StaleBrokerEpochError,
    StaleControllerEpochError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from storage import LogManager
from storage.config import LogConfig
from storage.errors import AppendWouldBlock

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

NO_EPOCH = -1
EPOCH_DURING_DELETE = -2
"""StopReplica's leader epoch while its topic is being deleted (Kafka's ``EpochDuringDelete``)."""


class ReplicaConfig(Protocol):
    """What the replica manager reads of the node's config (:class:`node.config.NodeConfig`
    has it; Kafka's names, in snake_case, with units)."""

    @property
    def node_id(self) -> int: ...
    @property
    def replica_lag_time_max_ms(self) -> int: ...
    @property
    def replica_fetch_silence_max_ms(self) -> int: ...
    @property
    def replica_fetch_wait_max_ms(self) -> int: ...
    @property
    def replica_fetch_backoff_ms(self) -> int: ...

    def topic_config(self, overrides: Mapping[str, str]) -> LogConfig:
        """The log config of a topic with ``overrides``; raises ``InvalidConfigError``."""
        ...


class FetcherManager(Protocol):
    """The follower side of replication (:class:`node.replication.fetcher.ReplicaFetcherManager`):
    what the replica manager tells it as partitions change leader."""

    def add_partition(self, partition: Partition, leader: Broker) -> None:
        """Start fetching ``partition`` from ``leader``."""

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> None:
        """Stop fetching ``tps``."""


class IsrChangeSubmitter(Protocol):
    """Sends a led partition's ISR changes to the controller
    (:class:`node.replication.alter_partition.AlterPartitionManager`)."""

    def submit(self, change: IsrChange) -> None:
        """Queue ``change`` (the latest per partition wins); never blocks for long."""


def error_of(exc: BaseException) -> OdradekError:
    """The typed error a request reports for ``exc``: itself if typed; KAFKA_STORAGE_ERROR for
    an I/O failure (its strerror, no path); else UNKNOWN_SERVER_ERROR with a fixed sentence,
    the exception and its traceback logged here: no Python exception text reaches a client
    (issue 27.4)."""
    if isinstance(exc, OdradekError):
        return exc
    if isinstance(exc, OSError):
        log.warning("I/O error answered as %s", KafkaStorageError.name, exc_info=exc)
        return KafkaStorageError(f"I/O error: {exc.strerror or 'unknown'}")
    log.error("unexpected error answered as %s", UnknownServerError.name, exc_info=exc)
    return UnknownServerError(UNKNOWN_SERVER_ERROR_MESSAGE)


UNKNOWN_SERVER_ERROR_MESSAGE = "the server failed to process the request; its log has the details"
"""The error message of every UNKNOWN_SERVER_ERROR the core answers."""


class ReplicaManager:
    """Hosts this node's partition replicas. Thread-safe."""

    def __init__(
        self,
        config: ReplicaConfig,
        log_manager: LogManager,
        metadata: MetadataCache,
        clock: Clock,
        broker_epoch: Callable[[], int],
    ) -> None:
        self.config = config
        self.node_id = config.node_id
        self.log_manager = log_manager
        self.metadata = metadata
        self._clock = clock
        self._broker_epoch = broker_epoch
        self._lock = threading.RLock()  # the partition map and the controller epoch
        self._partitions: dict[TopicPartition, Partition] = {}
        self._controller_epoch = -1
        self._wakeups = Wakeups()
        self.fetchers: FetcherManager | None = None
        self.alter_partitions: IsrChangeSubmitter | None = None
        self._shutting_down = False
        self.follower_sessions = FollowerSessions(clock)
        """The followers' fetch sessions to this node (the replication servicer reports them)."""
        self.session_lost_grace_ms = session_lost_grace_ms(
            silence_max_ms=config.replica_fetch_silence_max_ms,
            fetch_backoff_ms=config.replica_fetch_backoff_ms,
        )
        self.may_lead: Callable[[], bool] = lambda: True
        """Whether this node may take writes as leader at all: false while its session with
        the controller may have lapsed (:mod:`node.broker_lifecycle`); every produce is then
        answered NOT_LEADER_OR_FOLLOWER. Called before each produce's append."""
        self.leadership_listeners: list[Callable[[str, int, bool, int], None]] = []
        """Called with (topic, partition, is_leader, leader_epoch) after this node becomes
        leader or follower of a partition, or stops hosting it (the group coordinator loads
        and unloads its groups from them). They must not block."""

    def _leadership_changed(self, topic: str, partition: int, leader: bool, epoch: int) -> None:
        for listener in self.leadership_listeners:
            try:
                listener(topic, partition, leader, epoch)
            except Exception:
                log.exception("leadership listener failed for %s-%d", topic, partition)

    # -- waiting --
    def notify_progress(self) -> None:
        """Wake every waiting request to re-check its condition (metadata, leadership or
        replica changes that may touch any partition). Never blocks for long."""
        self._wakeups.notify_all()

    def wait_until(
        self,
        done: Callable[[], bool],
        deadline_ms: int,
        partitions: Iterable[TopicPartition],
        kinds: int,
        required: dict[TopicPartition, int] | None = None,
    ) -> bool:
        """Wait until ``done()`` (evaluated without any lock of ours held) or the deadline (True
        if done),
        re-checking when ``partitions`` report one of ``kinds`` (see :mod:`node.core.wakeups`;
        ``required`` holds back high watermark wake-ups below those offsets)."""
        with self._wakeups.waiting(partitions, kinds, required) as waiter:
            while True:
                waiter.clear()
                if done():
                    return True
                remaining = deadline_ms - self._clock.monotonic_ms()
                if remaining <= 0 or self._shutting_down:
                    return False
                waited_from = self._clock.monotonic_ms()
                waiter.wait(min(remaining, 1000) / 1000)
                add_remote_time_ms(self._clock.monotonic_ms() - waited_from)

    # -- partitions --
    def partition(self, topic: str, partition: int) -> Partition | None:
        return self._partitions.get((topic, partition))

    def partitions(self) -> dict[TopicPartition, Partition]:
        with self._lock:
            return dict(self._partitions)

    def _partition_or_error(self, topic: str, partition: int) -> Partition:
        p = self._partitions.get((topic, partition))
        if p is None:
            raise UnknownTopicOrPartitionError(
                f"node {self.node_id} hosts no replica of {topic}-{partition}"
            )
        return p

    def _get_or_create(self, topic: str, partition: int, overrides: dict[str, str]) -> Partition:
        key = (topic, partition)
        existing = self._partitions.get(key)
        log_config = self.config.topic_config(overrides)
        if existing is not None:
            if existing.log.config != log_config:
                existing.log.update_config(log_config)
            return existing
        log_ = self.log_manager.get_or_create_log(topic, partition, log_config)
        created = Partition(
            topic,
            partition,
            node_id=self.node_id,
            log=log_,
            clock=self._clock,
            replica_lag_time_max_ms=self.config.replica_lag_time_max_ms,
            replica_fetch_silence_max_ms=self.config.replica_fetch_silence_max_ms,
            replica_fetch_wait_max_ms=self.config.replica_fetch_wait_max_ms,
            follower_sessions=self.follower_sessions,
            session_lost_grace_ms=self.session_lost_grace_ms,
            live_brokers=self.metadata.live_broker_ids,
            on_progress=lambda kinds: self._wakeups.notify(
                key, kinds, log_.high_watermark if kinds & HIGH_WATERMARK else None
            ),
        )
        self._partitions[key] = created
        return created

    def _check_controller(self, controller_epoch: int, broker_epoch: int) -> None:
        if controller_epoch < self._controller_epoch:
            raise StaleControllerEpochError(
                f"controller epoch {controller_epoch} is older than {self._controller_epoch}"
            )
        # Only an older epoch is stale (Kafka's KafkaApis.isBrokerEpochStale): the controller
        # can learn a new registration's epoch from ZooKeeper and send with it before this node
        # has stored it, and refusing that request would leave the node with no partitions.
        ours = self._broker_epoch()
        if broker_epoch != -1 and broker_epoch < ours:
            raise StaleBrokerEpochError(
                f"broker epoch {broker_epoch} is older than this node's ({ours})"
            )
        self._controller_epoch = controller_epoch

    # -- controller requests --
    def become_leader_or_follower(
        self, req: LeaderAndIsrRequest
    ) -> tuple[int, list[PartitionError]]:
        """Apply a LeaderAndIsr request: stale partition states are ignored; new ones make this
        node leader (fetching stops) or follower (fetching starts from the new leader).
        Returns the request's error code (STALE_CONTROLLER_EPOCH, STALE_BROKER_EPOCH: nothing
        applied) and each partition's outcome."""
        leaders = {b.node_id: b for b in req.live_leaders}
        results: list[PartitionError] = []
        with self._lock:
            try:
                self._check_controller(req.controller_epoch, req.broker_epoch)
            except OdradekError as e:
                log.warning("LeaderAndIsr from controller %d refused: %s", req.controller_id, e)
                return e.code, []
            for ps in req.partition_states:
                code, message = 0, ""
                try:
                    self._apply_partition_state(ps, req.topic_configs, leaders)
                except Exception as e:  # one bad partition must not stop the others
                    err = error_of(e)
                    code, message = err.code, err.message
                    log.exception("LeaderAndIsr for %s-%d failed", ps.topic, ps.partition)
                results.append(PartitionError(ps.topic, ps.partition, code, message))
        self.notify_progress()
        return 0, results

    def _apply_partition_state(
        self,
        ps: LeaderAndIsrPartition,
        configs: Mapping[str, Mapping[str, str]],
        leaders: dict[int, Broker],
    ) -> None:
        if self.node_id not in ps.replicas:
            return
        known = (ps.topic, ps.partition) in self._partitions
        partition = self._get_or_create(ps.topic, ps.partition, dict(configs.get(ps.topic, {})))
        state = LeaderAndIsrState(
            leader=ps.leader,
            leader_epoch=ps.leader_epoch,
            isr=tuple(ps.isr),
            partition_epoch=ps.partition_epoch,
            replicas=tuple(ps.replicas),
            controller_epoch=ps.controller_epoch,
        )
        if known and not partition.is_newer(state):
            return
        tp = (ps.topic, ps.partition)
        if ps.leader == self.node_id:
            if self.fetchers is not None:
                self.fetchers.remove_partitions([tp])
            partition.make_leader(state)
            log.info("leader of %s-%d at epoch %d, ISR %s", *tp, ps.leader_epoch, list(ps.isr))
            self._leadership_changed(*tp, True, ps.leader_epoch)
        else:
            changed = partition.make_follower(state)
            self._leadership_changed(*tp, False, ps.leader_epoch)
            log.info(
                "follower of %s-%d, leader %d at epoch %d%s",
                *tp,
                ps.leader,
                ps.leader_epoch,
                "" if changed else " (unchanged)",
            )
            if changed and self.fetchers is not None:
                self.fetchers.remove_partitions([tp])
                leader = leaders.get(ps.leader) or self.metadata.broker(ps.leader)
                if ps.leader >= 0 and leader is not None:
                    self.fetchers.add_partition(partition, leader)

    def stop_replicas(self, req: StopReplicaRequest) -> tuple[int, list[PartitionError]]:
        """StopReplica: stop fetching and serving; with ``delete_partition``, delete the log.
        Returns the request's error code (nothing done unless 0) and each partition's."""
        results: list[PartitionError] = []
        with self._lock:
            try:
                self._check_controller(req.controller_epoch, req.broker_epoch)
            except OdradekError as e:
                return e.code, []
            for sp in req.partitions:
                tp = (sp.topic, sp.partition)
                code, message = 0, ""
                hosted = self._partitions.get(tp)
                if (
                    hosted is not None
                    and sp.leader_epoch not in (NO_EPOCH, EPOCH_DURING_DELETE)
                    and sp.leader_epoch < hosted.leader_epoch
                ):
                    # Kafka's stopReplicas (KIP-570): a StopReplica older than the replica's
                    # state (a late copy of one the controller retried) must not take a newer
                    # leadership offline
                    fenced = FencedLeaderEpochError(
                        f"StopReplica of leader epoch {sp.leader_epoch} for {sp.topic}-"
                        f"{sp.partition}, which is at epoch {hosted.leader_epoch}"
                    )
                    results.append(
                        PartitionError(sp.topic, sp.partition, fenced.code, fenced.message)
                    )
                    continue
                try:
                    if self.fetchers is not None:
                        self.fetchers.remove_partitions([tp])
                    partition = self._partitions.get(tp)
                    if partition is not None:
                        partition.make_offline()
                        self._leadership_changed(*tp, False, -1)
                    if sp.delete_partition:
                        self._partitions.pop(tp, None)
                        self.log_manager.delete_log(*tp)
                except Exception as e:
                    err = error_of(e)
                    code, message = err.code, err.message
                results.append(PartitionError(sp.topic, sp.partition, code, message))
        self.notify_progress()
        return 0, results

    def update_metadata(self, req: UpdateMetadataRequest) -> int:
        """Replace the metadata cache, and apply topic config changes to hosted logs. Returns
        the error code (STALE_CONTROLLER_EPOCH, STALE_BROKER_EPOCH: nothing changed)."""
        with self._lock:
            try:
                self._check_controller(req.controller_epoch, req.broker_epoch)
                snapshot = self.metadata.update(req)
            except OdradekError as e:
                return e.code
            self._apply_log_configs(snapshot.topic_configs, only_listed=True)
        self.notify_progress()
        return 0

    def refresh_log_configs(self) -> None:
        """Apply the config's current topic defaults (a dynamic broker config changed) to every
        hosted log, under its topic's overrides from the metadata cache. Thread-safe."""
        with self._lock:
            self._apply_log_configs(self.metadata.snapshot.topic_configs, only_listed=False)

    def _apply_log_configs(
        self, topic_configs: Mapping[str, Mapping[str, str]], *, only_listed: bool
    ) -> None:
        # Called with the lock held.
        for (topic, _), partition in self._partitions.items():
            overrides = topic_configs.get(topic)
            if overrides is None and only_listed:
                continue
            wanted = self.config.topic_config(overrides or {})
            if partition.log.config != wanted:
                partition.log.update_config(wanted)

    # -- produce --
    def append_records(
        self, partitions: Sequence[ProducePartition], *, acks: int, timeout_ms: int
    ) -> list[ProduceResult]:
        """Produce: append each partition's batches on its leader, one result per partition in
        request order (also for ``acks=0``: the door decides whether to answer; Kafka does not).

        acks=-1 waits (this thread only) until the high watermark passes every appended batch,
        the leadership moves, or ``timeout_ms`` passes (REQUEST_TIMED_OUT). ``acks`` other than
        -1, 0, 1: INVALID_REQUIRED_ACKS for every partition, nothing appended. Errors are
        answered per partition; never raises for one partition's failure."""
        return self.start_append(partitions, acks=acks, timeout_ms=timeout_ms).wait()

    def start_append(
        self,
        partitions: Sequence[ProducePartition],
        *,
        acks: int,
        timeout_ms: int,
        blocking: bool = True,
    ) -> PendingAppend:
        """:meth:`append_records` in two steps: this appends, and the answer's
        :meth:`PendingAppend.wait` waits for the replicas (acks=-1; at once otherwise). A door
        that answers a connection's requests in order may append the next request while this
        one waits, so that several waits share one round of follower fetches.

        With ``blocking`` False (the Kafka door's event loop) a partition whose append would
        wait for a lock, roll a segment or flush is left out, unwritten:
        :attr:`PendingAppend.blocked` says so, and :meth:`PendingAppend.append_blocked` (where
        blocking is allowed) appends it before the answer is polled or waited for."""
        if acks not in (-1, 0, 1):
            err = InvalidRequiredAcksError(f"acks must be -1, 0 or 1, not {acks}")
            return PendingAppend(
                self, [_produce_error(d.topic, d.partition, err) for d in partitions]
            )
        if not self.may_lead():
            fenced = NotLeaderOrFollowerError("this node's session with the controller lapsed")
            return PendingAppend(
                self, [_produce_error(d.topic, d.partition, fenced) for d in partitions]
            )
        results: list[ProduceResult | None] = []
        waiting: list[tuple[int, Partition, int, int]] = []  # (result index, partition, ...)
        blocked: list[tuple[int, ProducePartition]] = []
        for data in partitions:
            try:
                result, wait = self.append_one(data, acks, blocking)
            except AppendWouldBlock:
                blocked.append((len(results), data))
                results.append(None)
                continue
            results.append(result)
            if wait is not None:
                waiting.append((len(results) - 1, *wait))
        deadline = self._clock.monotonic_ms() + max(0, timeout_ms)
        return PendingAppend(self, results, waiting, deadline, timeout_ms, acks, blocked)

    def append_one(
        self, data: ProducePartition, acks: int, blocking: bool
    ) -> tuple[ProduceResult, tuple[Partition, int, int] | None]:
        """One partition's append: its result, and for acks=-1 what its answer waits for (the
        partition, the high watermark to reach, the leadership appended in). Raises
        :class:`AppendWouldBlock` only when not ``blocking``."""
        try:
            partition = self._partition_or_error(data.topic, data.partition)
            info, term = partition.append_records_to_leader(
                data.records,
                required_acks=acks,
                current_leader_epoch=data.current_leader_epoch,
                blocking=blocking,
                from_coordinator=data.from_coordinator,
            )
        except AppendWouldBlock:
            raise
        except Exception as e:
            return _produce_error(data.topic, data.partition, error_of(e)), None
        result = ProduceResult(
            topic=data.topic,
            partition=data.partition,
            base_offset=info.first_offset,
            log_append_time_ms=info.log_append_time,
            log_start_offset=info.log_start_offset,
        )
        return result, ((partition, info.last_offset + 1, term) if acks == -1 else None)

    # -- fetch --
    def fetch(
        self,
        partitions: Sequence[FetchPartition],
        *,
        from_follower: bool,
        replica_id: int = -1,
        max_wait_ms: int = 0,
        min_bytes: int = 0,
        max_bytes: int = 0,
        isolation_level: int = READ_UNCOMMITTED,
        broker_epoch: int = -1,
        as_slices: bool = False,
    ) -> list[FetchResult]:
        """A consumer's or follower's fetch (Kafka's ``FetchParams`` as keywords): long-polls
        until ``min_bytes`` are ready, an error or a divergence is found, or ``max_wait_ms``
        passes. One result per partition, in request order.

        ``from_follower``: a follower's fetch, ``replica_id`` its node id and ``broker_epoch``
        its broker epoch (-1: not checked); it reads up to the log end offset and updates the
        follower's state (ISR, high watermark). A consumer reads below the high watermark, or
        with ``isolation_level`` READ_COMMITTED below the last stable offset, with the aborted
        transactions overlapping what it may read.
        ``max_bytes`` 0: 50 MiB. ``as_slices``: a consumer's records as slices of the segment
        files (:class:`~storage.file_records.FileSlice`), not read, for a door that sends them
        with sendfile (Kafka's ``FileRecords.transferTo``). Raises
        :class:`InvalidRequestError` for a follower fetch without a replica id; answers every
        other error per partition."""
        if from_follower and replica_id < 0:
            raise InvalidRequestError("a follower fetch needs replica_id")
        if isolation_level not in (READ_UNCOMMITTED, READ_COMMITTED):
            raise InvalidRequestError(f"unknown isolation level {isolation_level}")
        params = _FetchParams(
            from_follower, replica_id, max(0, max_bytes), broker_epoch, as_slices, isolation_level
        )
        if max_wait_ms <= 0:
            return self._read_once(partitions, params, update_state=True)[0]
        deadline = self._clock.monotonic_ms() + max_wait_ms
        # followers wait for new data; consumers read below the high watermark, so they wait
        # for it to move
        kinds = DATA if from_follower else HIGH_WATERMARK
        keys = [(fp.topic, fp.partition) for fp in partitions]
        first = True
        with self._wakeups.waiting(keys, kinds) as waiter:
            while True:
                waiter.clear()
                results, total, stop = self._read_once(partitions, params, update_state=first)
                first = False
                if stop or total >= max(1, min_bytes):
                    return results
                remaining = deadline - self._clock.monotonic_ms()
                if remaining <= 0 or self._shutting_down:
                    return results
                waited_from = self._clock.monotonic_ms()
                waiter.wait(min(remaining, 1000) / 1000)
                add_remote_time_ms(self._clock.monotonic_ms() - waited_from)

    def start_fetch(
        self,
        partitions: Sequence[FetchPartition],
        *,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int = 0,
        isolation_level: int = READ_UNCOMMITTED,
        as_slices: bool = False,
    ) -> list[FetchResult] | PendingFetch:
        """A consumer's fetch that holds no thread while it waits: reads once now and returns
        the results when that completes it, else a :class:`~node.core.pending_fetch.PendingFetch`
        for its caller's loop to wait on. As Kafka's ``fetchMessages``, a ``min_bytes`` of 0 is
        answered at once (:meth:`fetch`, the gRPC door's, waits for one byte)."""
        if isolation_level not in (READ_UNCOMMITTED, READ_COMMITTED):
            raise InvalidRequestError(f"unknown isolation level {isolation_level}")
        params = _FetchParams(False, -1, max(0, max_bytes), -1, as_slices, isolation_level)
        results, total, stop = self._read_once(partitions, params, update_state=True)
        if max_wait_ms <= 0 or stop or total >= min_bytes or self._shutting_down:
            return results
        keys = [(fp.topic, fp.partition) for fp in partitions]
        measure = dataclasses.replace(params, as_slices=True)

        def read(slices: bool) -> tuple[list[FetchResult], int, bool]:
            return self._read_once(partitions, measure if slices else params, update_state=False)

        return PendingFetch(
            read,
            lambda wake: self._wakeups.subscribe(keys, HIGH_WATERMARK, None, wake),
            as_slices=as_slices,
            min_bytes=min_bytes,
            deadline_ms=self._clock.monotonic_ms() + max_wait_ms,
            now_ms=self._clock.monotonic_ms,
            shutting_down=lambda: self._shutting_down,
        )

    def _read_once(
        self, partitions: Sequence[FetchPartition], params: _FetchParams, *, update_state: bool
    ) -> tuple[list[FetchResult], int, bool]:
        results: list[FetchResult] = []
        total = 0
        stop = False
        budget = params.max_bytes if params.max_bytes > 0 else 50 * 1024 * 1024
        changes: list[IsrChange] = []
        for fp in partitions:
            try:
                partition = self._partition_or_error(fp.topic, fp.partition)
                max_bytes = max(1, min(fp.partition_max_bytes or budget, budget))
                if params.from_follower:
                    result, change = partition.read_for_follower(
                        replica_id=params.replica_id,
                        fetch_offset=fp.fetch_offset,
                        max_bytes=max_bytes,
                        current_leader_epoch=fp.current_leader_epoch,
                        last_fetched_epoch=fp.last_fetched_epoch,
                        follower_log_start_offset=fp.log_start_offset,
                        broker_epoch=params.broker_epoch,
                        update_state=update_state,
                    )
                    if change is not None:
                        changes.append(change)
                else:
                    result = partition.read_for_consumer(
                        fetch_offset=fp.fetch_offset,
                        max_bytes=max_bytes,
                        current_leader_epoch=fp.current_leader_epoch,
                        last_fetched_epoch=fp.last_fetched_epoch,
                        as_slice=params.as_slices,
                        read_committed=params.isolation_level == READ_COMMITTED,
                    )
                diverging = None
                if result.diverging_epoch is not None:
                    diverging = EpochEndOffset(*result.diverging_epoch)
                    stop = True
                size = len(result.records)
                results.append(
                    FetchResult(
                        topic=fp.topic,
                        partition=fp.partition,
                        high_watermark=result.high_watermark,
                        last_stable_offset=result.last_stable_offset,
                        log_start_offset=result.log_start_offset,
                        log_end_offset=result.log_end_offset,
                        records=result.records,
                        diverging_epoch=diverging,
                        aborted_transactions=result.aborted_transactions,
                    )
                )
                total += size
                budget = max(0, budget - size)
            except Exception as e:
                results.append(self._fetch_error(fp, error_of(e)))
                stop = True
        if changes and self.alter_partitions is not None:
            for change in changes:
                self.alter_partitions.submit(change)
        return results, total, stop

    def _fetch_error(self, fp: FetchPartition, err: OdradekError) -> FetchResult:
        high_watermark = log_start_offset = log_end_offset = -1
        hosted = self._partitions.get((fp.topic, fp.partition))
        if hosted is not None and hosted.is_leader:
            # what a follower needs to recover from OFFSET_OUT_OF_RANGE
            try:
                high_watermark = hosted.log.high_watermark
                log_start_offset = hosted.log.log_start_offset
                log_end_offset = hosted.log.log_end_offset
            except Exception:  # the log closed (deleted, stopped) meanwhile
                high_watermark = log_start_offset = log_end_offset = -1
        state = self.metadata.snapshot.partitions.get((fp.topic, fp.partition))
        leader = None if state is None else LeaderIdAndEpoch(state.leader, state.leader_epoch)
        return FetchResult(
            topic=fp.topic,
            partition=fp.partition,
            error_code=err.code,
            error_message=err.message,
            high_watermark=high_watermark,
            last_stable_offset=high_watermark,
            log_start_offset=log_start_offset,
            log_end_offset=log_end_offset,
            current_leader=leader,
        )

    # -- other client requests --
    def list_offsets(
        self,
        partitions: Sequence[ListOffsetsPartition],
        *,
        replica_id: int = -1,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> list[ListOffsetsResult]:
        """ListOffsets: for each partition the offset for its ``timestamp`` (see
        :class:`~node.core.requests.ListOffsetsPartition`), one result each in request order.
        A consumer (``replica_id`` < 0) sees offsets up to the high watermark (with
        ``isolation_level`` READ_COMMITTED, up to the last stable offset); a replica, up to the
        log end offset."""
        if isolation_level not in (READ_UNCOMMITTED, READ_COMMITTED):
            raise InvalidRequestError(f"unknown isolation level {isolation_level}")
        out: list[ListOffsetsResult] = []
        for lp in partitions:
            try:
                partition = self._partition_or_error(lp.topic, lp.partition)
                ts, offset, epoch = partition.fetch_offset_for_timestamp(
                    lp.timestamp,
                    current_leader_epoch=lp.current_leader_epoch,
                    isolation_bounded=replica_id < 0,
                    read_committed=isolation_level == READ_COMMITTED,
                )
                out.append(ListOffsetsResult(lp.topic, lp.partition, 0, ts, offset, epoch))
            except Exception as e:
                err = error_of(e)
                out.append(
                    ListOffsetsResult(lp.topic, lp.partition, err.code, error_message=err.message)
                )
        return out

    def offset_for_leader_epoch(
        self, partitions: Sequence[OffsetForLeaderEpochPartition]
    ) -> list[OffsetForLeaderEpochResult]:
        """A follower's OffsetForLeaderEpoch: each epoch's end offset on this leader."""
        out: list[OffsetForLeaderEpochResult] = []
        for p in partitions:
            try:
                partition = self._partition_or_error(p.topic, p.partition)
                epoch, end_offset = partition.last_offset_for_leader_epoch(
                    p.leader_epoch, current_leader_epoch=p.current_leader_epoch
                )
                out.append(OffsetForLeaderEpochResult(p.topic, p.partition, 0, epoch, end_offset))
            except Exception as e:
                out.append(OffsetForLeaderEpochResult(p.topic, p.partition, error_of(e).code))
        return out

    def delete_records(
        self, partitions: Sequence[DeleteRecordsPartition], *, timeout_ms: int
    ) -> list[DeleteRecordsResult]:
        """DeleteRecords on each leader; waits (up to ``timeout_ms``) until the in-sync
        followers have moved their log start offsets too, as Kafka's purgatory does
        (REQUEST_TIMED_OUT for a partition whose followers have not)."""
        out: list[DeleteRecordsResult] = []
        targets: list[tuple[int, Partition, int]] = []
        for dp in partitions:
            try:
                partition = self._partition_or_error(dp.topic, dp.partition)
                start = partition.delete_records(dp.offset)
                targets.append((len(out), partition, start))
                out.append(DeleteRecordsResult(dp.topic, dp.partition, 0, start))
            except Exception as e:
                err = error_of(e)
                out.append(DeleteRecordsResult(dp.topic, dp.partition, err.code, -1, err.message))
        deadline = self._clock.monotonic_ms() + max(0, timeout_ms)
        self.wait_until(
            lambda: all(p.low_watermark() >= start for _, p, start in targets),
            deadline,
            [(p.topic, p.partition) for _, p, _ in targets],
            LOG_START,
        )
        for index, partition, start in targets:
            low = partition.low_watermark()
            out[index] = dataclasses.replace(out[index], low_watermark=low)
            if low < start:
                err = RequestTimedOutError(
                    f"followers of {partition.topic}-{partition.partition} have not yet "
                    f"deleted records below {start}"
                )
                out[index] = dataclasses.replace(
                    out[index], error_code=err.code, error_message=err.message
                )
        return out

    # -- periodic --
    def purgatory_sizes(self) -> dict[str, int]:
        """Requests waiting, by Kafka's purgatory name (``Produce``, ``Fetch``)."""
        produces, fetches = self._wakeups.waiter_counts()
        return {"Produce": produces, "Fetch": fetches}

    def maybe_shrink_isrs(self) -> None:
        """Propose ISR shrinks for lagging followers (Kafka's ``isr-expiration`` task)."""
        for partition in self.partitions().values():
            change = partition.maybe_shrink_isr()
            if change is not None and self.alter_partitions is not None:
                log.info(
                    "shrinking ISR of %s-%d from %s to %s",
                    change.topic,
                    change.partition,
                    sorted(partition.isr),
                    list(change.new_isr),
                )
                self.alter_partitions.submit(change)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def wakeups(self) -> Wakeups:
        """Who is woken when a partition's data, high watermark or state changes."""
        return self._wakeups

    def shutdown(self) -> None:
        """Stop waiting: every waiting request is answered now, later ones at once."""
        self._shutting_down = True
        self._wakeups.close()


@dataclasses.dataclass(frozen=True, slots=True)
class _FetchParams:
    from_follower: bool
    replica_id: int
    max_bytes: int
    broker_epoch: int
    as_slices: bool
    isolation_level: int = READ_UNCOMMITTED


def _produce_error(topic: str, partition: int, err: OdradekError) -> ProduceResult:
    return ProduceResult(
        topic=topic,
        partition=partition,
        error_code=err.code,
        error_message=err.message,
        record_errors=err.record_errors,
    )
