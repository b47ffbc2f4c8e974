"""One partition replica hosted by a node: its log, its role, and (as leader) its ISR.

Kafka's ``Partition``. The rules (high watermark, catching up, ISR changes, fencing, divergence)
are the pure functions of ``node.core.replication_rules``; this class keeps the state they read and
applies what they decide to the log. All methods are thread-safe: one lock guards the state,
the log has its own. Nothing here blocks on the network; waiting (acks=-1, long polls) is the
replica manager's, woken by the ``on_progress`` callback, which is told what moved: the log end
offset (``DATA``), the high watermark, a replica's log start offset, or the state (leadership,
ISR, truncation; see :mod:`node.core.wakeups`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass

from node.core import replication_rules as rules
from node.core.follower_sessions import FollowerSessions, disconnected_replicas
from node.core.replication_rules import FollowerFetchState
from node.core.wakeups import DATA, HIGH_WATERMARK, LOG_START, STATE
from odradek.clock import Clock
from odradek.errors import (
    FencedLeaderEpochError,
    IneligibleReplicaError,
    InvalidRequiredAcksError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OdradekError,
    OffsetNotAvailableError,
    OffsetOutOfRangeError,
)
from odradek.records.control import EndTransactionMarker
from storage import AppendOrigin, Log
from storage.errors import AppendWouldBlock
from storage.file_records import FileSlice
from storage.log import LogAppendInfo

log = logging.getLogger(__name__)

DIAGNOSTIC_INTERVAL_MS = 10_000
"""At most one replication warning per partition and kind in this many milliseconds."""

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
"""The first offset on this node's disk: the log start offset (no tiered storage here)."""
LATEST_TIERED_TIMESTAMP = -5
"""The last offset in tiered storage: none (-1) without it."""


@dataclass(frozen=True, slots=True)
class LeaderAndIsrState:
    """The controller's decision for one partition, as a LeaderAndIsr request carries it."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]
    controller_epoch: int = 0


@dataclass(frozen=True, slots=True)
class IsrChange:
    """An AlterPartition item the leader wants the controller to apply."""

    topic: str
    partition: int
    leader_epoch: int
    new_isr: tuple[int, ...]
    partition_epoch: int


@dataclass(frozen=True, slots=True)
class ReadResult:
    """A fetch's answer for one partition."""

    records: bytes | memoryview | FileSlice
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    diverging_epoch: tuple[int, int] | None = None
    last_stable_offset: int = -1
    """-1: the high watermark (a follower's read)."""
    aborted_transactions: tuple[tuple[int, int], ...] | None = None
    """A read_committed read's aborted transactions (producer id, first offset); ``None``
    otherwise."""


class Partition:
    """A partition replica on this node. Thread-safe."""

    def __init__(
        self,
        topic: str,
        partition: int,
        *,
        node_id: int,
        log: Log,
        clock: Clock,
        replica_lag_time_max_ms: int,
        live_brokers: Callable[[], Collection[int]],
        on_progress: Callable[[int], None],
        replica_fetch_silence_max_ms: int = 0,
        replica_fetch_wait_max_ms: int = 0,
        follower_sessions: FollowerSessions | None = None,
        session_lost_grace_ms: int = 0,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.node_id = node_id
        self.log = log
        self._clock = clock
        self._lag_ms = replica_lag_time_max_ms
        self._silence_ms = replica_fetch_silence_max_ms
        self._fetch_wait_ms = replica_fetch_wait_max_ms
        self._sessions = follower_sessions
        self._session_grace_ms = session_lost_grace_ms if follower_sessions is not None else 0
        self._live_brokers = live_brokers
        self._on_progress = on_progress
        self._lock = threading.RLock()
        self.leader_id = -1
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.controller_epoch = -1
        self.replicas: tuple[int, ...] = ()
        self.isr: frozenset[int] = frozenset()
        self._pending_isr: frozenset[int] | None = None
        self._pending_change: IsrChange | None = None  # the AlterPartition awaiting its answer
        self.leader_epoch_start_offset = -1
        self._followers: dict[int, FollowerFetchState] = {}
        self._leader_since_ms = 0  # when this leadership's epoch began (lost sessions)
        self._leader_term = 0  # counts the times this replica became leader
        self._warned_ms: dict[str, int] = {}  # diagnostic warnings, by kind: when last logged

    # -- state --
    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.node_id

    @property
    def leader_term(self) -> int:
        """Which uninterrupted leadership of this replica it is: it grows each time the replica
        becomes leader from anything else, and not when the leader epoch moves under a leader
        that stays (an ISR change through the controller). A write waiting for its replicas
        keeps the term it was appended in (:meth:`check_replicated`)."""
        return self._leader_term

    @property
    def maximal_isr(self) -> frozenset[int]:
        """The ISR plus replicas a pending expansion adds (what holds the high watermark)."""
        with self._lock:
            return self.isr | (self._pending_isr or frozenset())

    @property
    def min_isr(self) -> int:
        return rules.effective_min_isr(
            self.log.config.min_insync_replicas, max(1, len(self.replicas))
        )

    def _eligible(self) -> set[int]:
        return set(self._live_brokers())

    def is_newer(self, state: LeaderAndIsrState) -> bool:
        """Whether a controller decision supersedes what this replica has (stale ones are
        ignored, as Kafka's ``makeLeader``/``makeFollower`` do)."""
        with self._lock:
            return (state.leader_epoch, state.partition_epoch) > (
                self.leader_epoch,
                self.partition_epoch,
            )

    def make_leader(self, state: LeaderAndIsrState) -> bool:
        """Become (or stay) leader. Returns whether the leader epoch changed.

        On a new epoch the epoch starts at the log end offset (recorded in the epoch cache),
        every follower's state is reset (unknown LEO, caught up as of now for ISR members),
        and the high watermark may not rise until they fetch again. The leader never truncates.
        """
        with self._lock:
            now = self._clock.monotonic_ms()
            new_epoch = state.leader_epoch != self.leader_epoch or not self.is_leader
            if not self.is_leader:
                self._leader_term += 1
            self.controller_epoch = state.controller_epoch
            self.replicas = state.replicas
            self.isr = frozenset(state.isr)
            self._pending_isr = None
            self._pending_change = None
            self.partition_epoch = state.partition_epoch
            self.leader_id = self.node_id
            if new_epoch:
                self.leader_epoch = state.leader_epoch
                self._leader_since_ms = now
                leo = self.log.log_end_offset
                self.leader_epoch_start_offset = leo
                self.log.assign_epoch_start_offset(state.leader_epoch, leo)
                self._followers = {
                    r: FollowerFetchState(
                        last_caught_up_ms=now if r in self.isr else rules.NEVER_MS
                    )
                    for r in state.replicas
                    if r != self.node_id
                }
            else:
                for r in state.replicas:
                    if r != self.node_id and r not in self._followers:
                        self._followers[r] = FollowerFetchState()
                for r in list(self._followers):
                    if r not in state.replicas:
                        del self._followers[r]
            self.maybe_increment_high_watermark()
        self._on_progress(STATE)
        return new_epoch

    def make_follower(self, state: LeaderAndIsrState) -> bool:
        """Follow ``state.leader`` (or no one, if -1). Returns whether the leader or its epoch
        changed, i.e. whether the fetcher must restart (and first check for divergence)."""
        with self._lock:
            changed = state.leader != self.leader_id or state.leader_epoch != self.leader_epoch
            self.controller_epoch = state.controller_epoch
            self.replicas = state.replicas
            self.isr = frozenset()  # followers do not track the ISR
            self._pending_isr = None
            self._pending_change = None
            self.leader_id = state.leader
            self.leader_epoch = state.leader_epoch
            self.partition_epoch = state.partition_epoch
            self._followers = {}
            self.leader_epoch_start_offset = -1
        self._on_progress(STATE)  # waiting produce requests learn they lost the leadership
        return changed

    def make_offline(self) -> None:
        """Stop acting for this partition (StopReplica): neither leader nor follower."""
        with self._lock:
            self.leader_id = -1
            self.isr = frozenset()
            self._pending_isr = None
            self._pending_change = None
            self._followers = {}
        self._on_progress(STATE)

    def _check_leader(self, current_leader_epoch: int) -> None:
        error = rules.check_leader_epoch(current_leader_epoch, self.leader_epoch)
        if error is not None:
            raise error
        if not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"node {self.node_id} is not the leader of {self.topic}-{self.partition}"
            )

    # -- leader: produce --
    def append_records_to_leader(
        self,
        records: bytes,
        *,
        required_acks: int,
        current_leader_epoch: int = -1,
        blocking: bool = True,
        from_coordinator: bool = False,
    ) -> tuple[LogAppendInfo, int]:
        """Validate and append a client's batches (``from_coordinator``: the node's group
        coordinator's, whose producer sequences are not checked): what was written, and the
        leadership (:attr:`leader_term`) it was written in, read under the same lock (a waiting
        acks=-1 write checks it in :meth:`check_replicated`; read before the lock, a leadership
        regained meanwhile would fail a stored write). Raises the typed error on refusal.

        acks=-1 with fewer in-sync replicas than the effective min.insync.replicas is refused
        before anything is written (NOT_ENOUGH_REPLICAS). With ``blocking`` False it raises
        :class:`~storage.errors.AppendWouldBlock` (nothing written) rather than wait for this
        partition's lock or the log's, or roll a segment, or flush.
        """
        if required_acks not in (-1, 0, 1):
            raise InvalidRequiredAcksError(f"acks must be -1, 0 or 1, not {required_acks}")
        if not self._lock.acquire(blocking):
            raise AppendWouldBlock(f"{self.topic}-{self.partition}: the partition's lock is held")
        try:
            self._check_leader(current_leader_epoch)
            if required_acks == -1 and len(self.isr) < self.min_isr:
                raise NotEnoughReplicasError(
                    f"{self.topic}-{self.partition} has {len(self.isr)} in-sync replicas "
                    f"{sorted(self.isr)}, fewer than min.insync.replicas {self.min_isr}"
                )
            info = self.log.append_as_leader(
                records,
                self.leader_epoch,
                blocking=blocking,
                origin=AppendOrigin.COORDINATOR if from_coordinator else AppendOrigin.CLIENT,
            )
            term = self._leader_term
            moved = self.maybe_increment_high_watermark()
        finally:
            self._lock.release()
        self._on_progress(DATA | (HIGH_WATERMARK if moved else 0))
        return info, term

    def append_transaction_marker(
        self, producer_id: int, producer_epoch: int, marker: EndTransactionMarker
    ) -> tuple[LogAppendInfo, int]:
        """Append, as leader, the COMMIT or ABORT marker ending ``producer_id``'s transaction
        (Kafka's ``WriteTxnMarkers`` on the partition's leader): what was written and the
        leadership it was written in, as :meth:`append_records_to_leader`. Raises
        NOT_LEADER_OR_FOLLOWER, and the log's INVALID_PRODUCER_EPOCH or
        TRANSACTION_COORDINATOR_FENCED (nothing written)."""
        with self._lock:
            self._check_leader(-1)
            info = self.log.append_transaction_marker(
                producer_id, producer_epoch, marker, self.leader_epoch
            )
            term = self._leader_term
            moved = self.maybe_increment_high_watermark()
        self._on_progress(DATA | (HIGH_WATERMARK if moved else 0))
        return info, term

    def check_replicated(self, required_offset: int, leader_term: int) -> OdradekError | bool:
        """For a waiting acks=-1 produce appended in leadership ``leader_term``
        (:attr:`leader_term`): False while the high watermark is below ``required_offset``;
        then True (or NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank under the minimum
        meanwhile); NOT_LEADER_OR_FOLLOWER if this replica stopped leading since (Kafka's
        ``checkEnoughReplicasReachOffset`` checks only that it leads: a new leader epoch with the
        same leader keeps the write, and answering otherwise would make a non-idempotent
        producer store it again). A leadership lost and regained does not count: the log may
        have been truncated under the write in between.

        While it still leads and the high watermark is below, it answers False without taking
        the lock (an append may hold it): a change read half-way is one the caller is woken
        for again (``STATE``), as it registers for wake-ups before it checks."""
        if (
            self.leader_id == self.node_id
            and self._leader_term == leader_term
            and self.log.high_watermark < required_offset
        ):
            return False
        with self._lock:
            if not self.is_leader or self._leader_term != leader_term:
                return NotLeaderOrFollowerError(
                    f"leadership of {self.topic}-{self.partition} moved while waiting for "
                    "replication"
                )
            if self.log.high_watermark < required_offset:
                return False
            if len(self.maximal_isr) < self.min_isr:
                return NotEnoughReplicasAfterAppendError(
                    f"written, but the ISR {sorted(self.maximal_isr)} shrank below "
                    f"min.insync.replicas {self.min_isr}"
                )
            return True

    # -- leader: high watermark and ISR --
    def maybe_increment_high_watermark(self) -> bool:
        """Raise the high watermark as far as the ISR allows; returns whether it moved."""
        with self._lock:
            if not self.is_leader:
                return False
            log = self.log
            now = self._clock.monotonic_ms()
            candidate = rules.high_watermark_candidate(
                leader_id=self.node_id,
                leader_leo=log.log_end_offset,
                followers=self._followers,
                maximal_isr=self.maximal_isr,
                eligible=self._eligible(),
                now_ms=now,
                replica_lag_time_max_ms=self._lag_ms,
                silent=self._gone(self._followers, now),
            )
            current = log.high_watermark
            new = rules.next_high_watermark(
                current=current, candidate=candidate, isr_size=len(self.isr), min_isr=self.min_isr
            )
            if new > current:
                return log.maybe_increment_high_watermark(new)
            return False

    def _gone(self, replicas: Collection[int], now_ms: int) -> set[int]:
        """Of ``replicas``, the followers that are gone: silent past
        ``replica.fetch.silence.max.ms`` (``rules.silent_replicas``) or with every fetch
        session here broken (``node.core.follower_sessions``). Empty when both rules are off."""
        if not self._silence_ms and not self._session_grace_ms:
            return set()
        gone = rules.silent_replicas(
            leader_id=self.node_id,
            isr=replicas,
            followers=self._followers,
            now_ms=now_ms,
            silence_max_ms=self._silence_ms,
            fetch_wait_max_ms=self._fetch_wait_ms,
            resumed_ms=self._sessions.resumed_ms if self._sessions is not None else rules.NEVER_MS,
        )
        if self._sessions is not None and self._session_grace_ms:
            gone |= disconnected_replicas(
                leader_id=self.node_id,
                isr=replicas,
                followers=self._followers,
                lost_at=self._sessions.lost_at(),
                leader_since_ms=self._leader_since_ms,
                now_ms=now_ms,
                grace_ms=self._session_grace_ms,
            )
        return gone

    def maybe_shrink_isr(self) -> IsrChange | None:
        """The ISR shrink to propose, if a follower fell behind (Kafka's ``maybeShrinkIsr``),
        went silent (``replica.fetch.silence.max.ms``, ``rules.silent_replicas``) or lost
        every fetch session here (``node.core.follower_sessions``)."""
        with self._lock:
            if not self.is_leader or self._pending_isr is not None:
                return None
            now = self._clock.monotonic_ms()
            out = rules.out_of_sync_replicas(
                leader_id=self.node_id,
                isr=self.isr,
                followers=self._followers,
                leader_leo=self.log.log_end_offset,
                now_ms=now,
                replica_lag_time_max_ms=self._lag_ms,
            ) | self._gone(self.isr, now)
            if not out:
                return None
            new_isr = tuple(sorted(self.isr - out))
            # a shrink's maximal ISR stays the old one until the controller commits it
            self._pending_isr = frozenset()
            self._pending_change = IsrChange(
                self.topic, self.partition, self.leader_epoch, new_isr, self.partition_epoch
            )
            return self._pending_change

    def _maybe_expand_isr(self, replica_id: int) -> IsrChange | None:
        state = self._followers.get(replica_id)
        if state is None or self._pending_isr is not None:
            return None
        if not rules.can_join_isr(
            replica_id=replica_id,
            follower_leo=state.log_end_offset,
            isr=self.isr,
            high_watermark=self.log.high_watermark,
            leader_epoch_start_offset=self.leader_epoch_start_offset,
            eligible=self._eligible(),
        ):
            return None
        self._pending_isr = frozenset({replica_id})
        self._pending_change = IsrChange(
            self.topic,
            self.partition,
            self.leader_epoch,
            tuple(sorted(self.isr | {replica_id})),
            self.partition_epoch,
        )
        return self._pending_change

    def complete_isr_change(
        self,
        change: IsrChange,
        *,
        error: OdradekError | None,
        isr: Collection[int] = (),
        leader_epoch: int = -1,
        partition_epoch: int = -1,
    ) -> None:
        """Apply the controller's answer to ``change`` (or drop the pending state on error).
        An answer to a change that is no longer the pending one (a LeaderAndIsr settled the ISR
        meanwhile, and another change may be pending now) is out of date and ignored, as
        Kafka's ``handleAlterPartitionUpdate`` ignores one whose proposed state is gone."""
        with self._lock:
            if (
                self.leader_epoch != change.leader_epoch
                or not self.is_leader
                or self._pending_change is not change
            ):
                return
            if error is not None:
                # Only a change the controller certainly did not apply is dropped. After
                # FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION or anything else it may have been
                # applied (an earlier answer lost): the maximal ISR stays until the next
                # LeaderAndIsr settles it (Kafka's handleAlterPartitionError).
                if isinstance(error, IneligibleReplicaError):
                    self._pending_isr = None
                    self._pending_change = None
                return
            if leader_epoch != self.leader_epoch or partition_epoch < self.partition_epoch:
                return  # an answer older than what we hold
            self._pending_isr = None
            self._pending_change = None
            self.isr = frozenset(isr)
            self.partition_epoch = partition_epoch
            self.maybe_increment_high_watermark()
        self._on_progress(STATE)

    # -- leader: reads --
    def read_for_follower(
        self,
        *,
        replica_id: int,
        fetch_offset: int,
        max_bytes: int,
        current_leader_epoch: int,
        last_fetched_epoch: int,
        follower_log_start_offset: int,
        broker_epoch: int = -1,
        update_state: bool = True,
    ) -> tuple[ReadResult, IsrChange | None]:
        """Serve a follower's fetch: records up to the LEO, or the epoch it diverges at.

        Records the follower's fetch offset as its LEO (which may raise the high watermark
        and let it join the ISR). The answer carries the high watermark and log start offset
        as they were before the read. Raises NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
        UNKNOWN_LEADER_EPOCH or OFFSET_OUT_OF_RANGE.
        """
        with self._lock:
            self._check_leader(current_leader_epoch)
            log = self.log
            hw, log_start, leo = log.high_watermark, log.log_start_offset, log.log_end_offset
            diverging = rules.diverging_epoch(
                last_fetched_epoch=last_fetched_epoch,
                fetch_offset=fetch_offset,
                leader_end_for_epoch=log.end_offset_for_epoch(last_fetched_epoch),
            )
            if diverging is not None:
                return ReadResult(b"", hw, log_start, leo, diverging), None
            if fetch_offset > leo or fetch_offset < log_start:
                raise OffsetOutOfRangeError(
                    f"fetch offset {fetch_offset} is outside [{log_start}, {leo}] of "
                    f"{self.topic}-{self.partition}"
                )
            change = None
            kinds = 0
            if update_state and replica_id in self._followers:
                before = self._followers[replica_id]
                self._followers[replica_id] = rules.update_follower_fetch_state(
                    before,
                    fetch_offset=fetch_offset,
                    log_start_offset=follower_log_start_offset,
                    leader_leo=leo,
                    now_ms=self._clock.monotonic_ms(),
                    broker_epoch=broker_epoch,
                )
                moved = self.maybe_increment_high_watermark()
                change = self._maybe_expand_isr(replica_id)
                started = self._followers[replica_id].log_start_offset != before.log_start_offset
                kinds = (HIGH_WATERMARK if moved else 0) | (LOG_START if started else 0)
            elif fetch_offset < leo and replica_id in self._followers:
                # a long poll ends with data: the follower's next fetch is due at once
                self._followers[replica_id] = dataclasses.replace(
                    self._followers[replica_id], data_answered_ms=self._clock.monotonic_ms()
                )
        if kinds:
            # outside the lock: the woken produce requests take it to check their offsets
            self._on_progress(kinds)
        info = log.read(fetch_offset, max_bytes)
        if fetch_offset < leo and not info.records:
            # never expected: the follower would ask for the same offset again and again
            self.warn_at_most_every_interval(
                "empty read",
                "follower %d fetched %s-%d at %d, below the log end offset %d, and was sent no "
                "records (max %d bytes)",
                replica_id,
                self.topic,
                self.partition,
                fetch_offset,
                leo,
                max_bytes,
            )
        return ReadResult(info.records, hw, log_start, leo), change

    def read_for_consumer(
        self,
        *,
        fetch_offset: int,
        max_bytes: int,
        current_leader_epoch: int,
        last_fetched_epoch: int = -1,
        as_slice: bool = False,
        read_committed: bool = False,
    ) -> ReadResult:
        """Serve a consumer's fetch: records below the high watermark, or ``read_committed``
        below the last stable offset with the aborted transactions overlapping
        ``[fetch_offset, LSO)`` (Kafka's ``collectAbortedTransactions``; the consumer drops
        those producers' batches up to their abort markers). ``as_slice``: as a slice of the
        segment file, for a door that sends it without reading it. A consumer that names the
        epoch of the last record it fetched (Fetch v12+) is answered the epoch its log
        diverges at instead, as a follower is (Kafka's ``readRecords`` checks both alike).
        Raises like ``read_for_follower``; an offset between the bound and the LEO reads
        empty."""
        with self._lock:
            self._check_leader(current_leader_epoch)
            log = self.log
            hw, log_start, leo = log.high_watermark, log.log_start_offset, log.log_end_offset
            if last_fetched_epoch != -1:
                diverging = rules.diverging_epoch(
                    last_fetched_epoch=last_fetched_epoch,
                    fetch_offset=fetch_offset,
                    leader_end_for_epoch=log.end_offset_for_epoch(last_fetched_epoch),
                )
                if diverging is not None:
                    return ReadResult(b"", hw, log_start, leo, diverging, log.last_stable_offset())
        lso = log.last_stable_offset()
        bound = lso if read_committed else hw
        info = log.read(fetch_offset, max_bytes, max_offset=bound, as_slice=as_slice)
        records = info.records if info.slice is None else info.slice
        aborted = None
        if read_committed:
            aborted = tuple(
                (a.producer_id, a.first_offset)
                for a in log.collect_aborted_transactions(fetch_offset, bound)
            )
        return ReadResult(records, hw, log_start, leo, None, lso, aborted)

    def fetch_offset_for_timestamp(
        self,
        timestamp: int,
        *,
        current_leader_epoch: int,
        isolation_bounded: bool = True,
        read_committed: bool = False,
    ) -> tuple[int, int, int]:
        """ListOffsets: ``(timestamp, offset, leader_epoch)``, ``(-1, -1, -1)`` if none.
        ``timestamp``: LATEST (-1), EARLIEST (-2), MAX_TIMESTAMP (-3), EARLIEST_LOCAL (-4: the
        log start offset), LATEST_TIERED (-5: none), else a time (any other negative one as 0).

        Consumers see only offsets below the high watermark (``read_committed``: below the last
        stable offset, which is then the latest); a new leader whose high watermark has not
        reached the start of its epoch answers OFFSET_NOT_AVAILABLE for the latest offset
        (Kafka's ``fetchOffsetForTimestamp``).
        """
        with self._lock:
            self._check_leader(current_leader_epoch)
            log = self.log
            hw = log.high_watermark
            bound = log.last_stable_offset() if read_committed else hw
            if timestamp == LATEST_TIMESTAMP:
                if isolation_bounded and self.leader_epoch_start_offset > hw:
                    raise OffsetNotAvailableError(
                        f"the high watermark {hw} has not reached the start of leader epoch "
                        f"{self.leader_epoch} ({self.leader_epoch_start_offset})"
                    )
                offset = bound if isolation_bounded else log.log_end_offset
                return -1, offset, log.epoch_for_offset(offset - 1) if offset > 0 else -1
            if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
                start = log.log_start_offset
                return -1, start, log.epoch_for_offset(start)
            if timestamp == LATEST_TIERED_TIMESTAMP:
                return -1, -1, -1
        # Kafka's UnifiedLog.fetchOffsetByTimestamp takes any other target as a time, negative
        # ones too: the first record at or after it (records' times are not negative)
        if timestamp < 0 and timestamp != MAX_TIMESTAMP:
            timestamp = 0
        found = log.fetch_offset_by_timestamp(timestamp)
        if found is None or (isolation_bounded and found.offset >= bound):
            return -1, -1, -1
        return found.timestamp, found.offset, log.epoch_for_offset(found.offset)

    def last_offset_for_leader_epoch(
        self, leader_epoch: int, *, current_leader_epoch: int
    ) -> tuple[int, int]:
        """OffsetForLeaderEpoch on the leader: ``(epoch, end_offset)``."""
        with self._lock:
            self._check_leader(current_leader_epoch)
            return self.log.end_offset_for_epoch(leader_epoch)

    def delete_records(self, offset: int) -> int:
        """DeleteRecords on the leader: -1 means the high watermark. Returns the new log
        start offset. Raises NOT_LEADER_OR_FOLLOWER or OFFSET_OUT_OF_RANGE."""
        with self._lock:
            self._check_leader(-1)
            target = self.log.high_watermark if offset == -1 else offset
            if target < 0:
                raise OffsetOutOfRangeError(f"cannot delete records before {offset}")
            return self.log.delete_records(target)

    def low_watermark(self) -> int:
        """The smallest log start offset among the leader and its in-sync followers."""
        with self._lock:
            starts = [self.log.log_start_offset]
            for replica_id in self.isr:
                state = self._followers.get(replica_id)
                if state is not None:
                    starts.append(state.log_start_offset)
            return min(starts)

    # -- diagnostics --
    def replication_summary(self) -> str:
        """One line of what holds this replica's high watermark (for warnings, not parsing):
        its offsets, the ISR and each follower's state as this leader knows it."""
        with self._lock:
            now = self._clock.monotonic_ms()
            followers = "; ".join(
                f"{r}: LEO {s.log_end_offset}, "
                + (
                    "never fetched"
                    if s.last_fetch_leader_leo < 0
                    else f"last fetch {now - s.last_fetch_ms} ms ago"
                )
                + (
                    ", never caught up"
                    if s.last_caught_up_ms == rules.NEVER_MS
                    else f", caught up {now - s.last_caught_up_ms} ms ago"
                )
                for r, s in sorted(self._followers.items())
            )
            change = self._pending_change
            pending = "" if change is None else f" (a change to {list(change.new_isr)} pending)"
            return (
                f"{self.topic}-{self.partition} at leader epoch {self.leader_epoch}: high "
                f"watermark {self.log.high_watermark}, LEO {self.log.log_end_offset}, ISR "
                f"{sorted(self.isr)}{pending}, min ISR {self.min_isr}; followers: "
                f"{followers or 'none'}"
            )

    def warn_at_most_every_interval(self, kind: str, message: str, *args: object) -> None:
        """Log a warning of ``kind`` about this partition unless one was logged in the last
        ``DIAGNOSTIC_INTERVAL_MS`` (a condition that persists would otherwise flood the log)."""
        now = self._clock.monotonic_ms()
        last = self._warned_ms.get(kind)
        if last is not None and now - last < DIAGNOSTIC_INTERVAL_MS:
            return
        self._warned_ms[kind] = now
        log.warning(message, *args)

    # -- follower --
    # A fetcher applies an answer only while this replica still follows at the leader epoch
    # it fetched for, checked under the lock that make_leader and make_follower take: an answer
    # from the old leader, processed as the controller's LeaderAndIsr made this replica leader
    # (or moved it to another leader), is dropped rather than written into the new epoch.
    # Kafka's fetcher gets the same from its partitionMapLock, which removePartitions waits on.
    def _check_following(self, leader_epoch: int) -> None:
        """Raise FENCED_LEADER_EPOCH unless this replica follows at ``leader_epoch`` (lock held)."""
        if self.is_leader or self.leader_id < 0 or self.leader_epoch != leader_epoch:
            role = (
                "leads"
                if self.is_leader
                else f"follows node {self.leader_id}"
                if self.leader_id >= 0
                else "has no leader"
            )
            raise FencedLeaderEpochError(
                f"{self.topic}-{self.partition}: an answer fetched at leader epoch "
                f"{leader_epoch} came after this replica moved to epoch {self.leader_epoch} "
                f"(it {role} now); dropped"
            )

    def append_records_as_follower(
        self, records: bytes, fetch_offset: int, *, leader_epoch: int
    ) -> LogAppendInfo:
        """Append what the leader of ``leader_epoch`` sent for ``fetch_offset`` (which must be
        our LEO). Raises FENCED_LEADER_EPOCH if this replica no longer follows at that epoch."""
        with self._lock:
            self._check_following(leader_epoch)
            log = self.log
            if fetch_offset != log.log_end_offset:
                raise OffsetOutOfRangeError(
                    f"follower fetched {fetch_offset} but its log ends at {log.log_end_offset}"
                )
            info = log.append_as_follower(records)
        self._on_progress(DATA)
        return info

    def update_follower_high_watermark(
        self, leader_hw: int, leader_log_start: int, *, leader_epoch: int
    ) -> None:
        """After a fetch: follower HW = min(leader's, own LEO); log start follows the leader's.
        Raises FENCED_LEADER_EPOCH if this replica no longer follows at ``leader_epoch``."""
        with self._lock:
            self._check_following(leader_epoch)
            log = self.log
            # it never goes back here: only truncation lowers a follower's high watermark
            log.maybe_increment_high_watermark(min(leader_hw, log.log_end_offset))
            target = min(leader_log_start, log.high_watermark)
            if target > log.log_start_offset:
                log.delete_records(target)
        self._on_progress(HIGH_WATERMARK | LOG_START)

    def truncate_to(self, offset: int, *, leader_epoch: int) -> None:
        """Truncate as a follower of ``leader_epoch`` (FENCED_LEADER_EPOCH once it is not)."""
        with self._lock:
            self._check_following(leader_epoch)
            self.log.truncate_to(offset)
        self._on_progress(STATE)

    def truncate_fully_and_start_at(self, offset: int, *, leader_epoch: int) -> None:
        """Empty the log and start it at ``offset``, as a follower of ``leader_epoch``."""
        with self._lock:
            self._check_following(leader_epoch)
            self.log.truncate_fully_and_start_at(offset)
        self._on_progress(STATE)
