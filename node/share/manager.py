"""The share partitions of the partitions this node leads, and the share sessions (KIP-932;
Kafka's ``SharePartitionManager``): what ShareFetch and ShareAcknowledge do once their policy
(:mod:`node.apis.share_fetch`) has let them through.

A share partition (group, topic, partition) is created by the first ShareFetch naming it on the
partition's leader, loaded from the persister with the leader's epoch (a share partition never
initialized starts where the group's ``share.auto.offset.reset`` says: ``latest`` — the high
watermark — by default, ``earliest``, or ``by_duration:<ISO-8601>``, the first offset at or
after that long ago). It is dropped, its locks with it, when this node stops leading the
partition or leads it again after another leader
(:meth:`SharePartitionManager.on_leadership_change`, a replica manager leadership listener, as
the group and transaction coordinators'), or when a write of its state is refused
FENCED_STATE_EPOCH or FENCED_LEADER_EPOCH (the next request loads it again), or when the
group's admin resets or deletes its state (:meth:`SharePartitionManager.forget` on the
coordinator; on another leader :meth:`SharePartitionManager.drop_stale`, when a member opens a
new share session, finds the durable state epoch moved on).

A ShareFetch reads each of its session's partitions once from the first offset its share
partition may deliver (:meth:`SharePartition.next_fetch_offset`) with the core's consumer fetch,
at the group's ``share.isolation.level`` (read_committed: below the last stable offset, with
the aborted transactions' batches and the control batches archived, never acquired), and
acquires what it read for the member, ``share.record.lock.duration.ms`` long, at most
``max_records`` over all partitions. Nothing acquired and ``max_wait_ms`` left: it waits without
a thread (:class:`PendingShareFetch`) until a partition's high watermark moves, a lock
expires or another member releases records (:data:`~node.core.wakeups.SHARE_RECORDS`), as a
Fetch waits for ``min_bytes``.

Thread-safe.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from node.coordinator.group_config import GroupConfig
from node.core.replica_manager import ReplicaManager
from node.core.requests import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    FetchPartition,
    FetchResult,
    LeaderIdAndEpoch,
    ListOffsetsPartition,
    records_bytes,
)
from node.core.wakeups import HIGH_WATERMARK, SHARE_RECORDS, STATE
from node.share.partition import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    FetchedBatch,
    SharePartition,
)
from node.share.persister import PersisterError, ShareKey, ShareStatePersister
from node.share.sessions import ShareSessions
from odradek.clock import Clock
from odradek.errors import (
    FencedLeaderEpochError,
    FencedStateEpochError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)
from odradek.records.batch import TRANSACTIONAL_FLAG_MASK, validated_headers

__all__ = [
    "PendingShareFetch",
    "ShareConfig",
    "ShareFetchParams",
    "ShareFetchResult",
    "SharePartitionManager",
    "ShareTarget",
    "fetched_batches",
]

NOT_LEADER = NotLeaderOrFollowerError.code
_RELOAD = frozenset({FencedStateEpochError.code, FencedLeaderEpochError.code})
_RECHECK_MS = 1000
"""A waiting ShareFetch is checked at least this often."""


@dataclass(frozen=True, slots=True)
class ShareConfig:
    """The broker's share partition settings (Kafka's ``ShareGroupConfig``)."""

    delivery_count_limit: int = 5
    """``group.share.delivery.count.limit``: deliveries before a record is archived."""
    partition_max_record_locks: int = 2000
    """``group.share.partition.max.record.locks``: in-flight records per share partition."""
    max_share_sessions: int = 2000
    """``group.share.max.share.sessions``: share sessions on this broker."""


@dataclass(frozen=True, slots=True)
class ShareTarget:
    """A partition as ShareFetch and ShareAcknowledge name it: the topic's name (resolved from
    its id by the policy), its id, the partition."""

    topic: str
    topic_id: str
    partition: int


@dataclass(frozen=True, slots=True)
class ShareFetchParams:
    """A ShareFetch's limits."""

    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    max_records: int
    batch_size: int


@dataclass(frozen=True, slots=True)
class ShareFetchResult:
    """One partition's answer to a ShareFetch or ShareAcknowledge."""

    topic: str
    topic_id: str
    partition: int
    error_code: int = 0
    error_message: str = ""
    acknowledge_error_code: int = 0
    acknowledge_error_message: str = ""
    records: bytes = b""
    acquired: tuple[AcquiredRecords, ...] = ()
    current_leader: LeaderIdAndEpoch | None = None


@dataclass(slots=True)
class PendingShareFetch:
    """A ShareFetch that acquired nothing yet and may wait (Kafka's ``DelayedShareFetch``):
    :meth:`ready` is quick (no read, no write: may run on the door's loop), :meth:`finish`
    reads and acquires (blocks: a request thread's)."""

    _manager: SharePartitionManager
    _group_id: str
    _member_id: str
    _targets: list[ShareTarget]
    _params: ShareFetchParams
    _deadline_ms: int
    keys: list[tuple[str, int]] = field(default_factory=list)
    """The partitions whose wake-ups may make it ready."""
    kinds: int = HIGH_WATERMARK | STATE | SHARE_RECORDS
    """Which wake-ups (:mod:`node.core.wakeups`)."""

    def remaining_ms(self) -> int:
        return max(0, self._deadline_ms - self._manager.clock.monotonic_ms())

    def recheck_ms(self) -> int:
        """The most to wait before asking :meth:`ready` again: the deadline, the next lock
        expiry, at most a second."""
        wait = min(self.remaining_ms(), _RECHECK_MS)
        lock = self._manager.next_lock_deadline_ms(self._group_id, self._targets)
        if lock is not None:
            wait = min(wait, max(0, lock - self._manager.clock.monotonic_ms()))
        return wait

    def subscribe(self, on_wake: Callable[[], None]) -> Callable[[], None]:
        """``on_wake`` whenever a partition's high watermark or state changes."""
        return self._manager.replicas.wakeups.subscribe(self.keys, self.kinds, None, on_wake)

    def ready(self) -> bool:
        return (
            self.remaining_ms() <= 0
            or self._manager.replicas.shutting_down
            or self._manager.may_acquire(self._group_id, self._targets)
        )

    def finish(self) -> list[ShareFetchResult]:
        return self._manager.fetch_once(
            self._group_id, self._member_id, self._targets, self._params
        )


class SharePartitionManager:
    """The node's share partitions and share sessions (see the module docstring)."""

    def __init__(
        self,
        replicas: ReplicaManager,
        persister: ShareStatePersister,
        clock: Clock,
        group_configs: Callable[[str], GroupConfig],
        config: ShareConfig | None = None,
    ) -> None:
        self.replicas = replicas
        self.persister = persister
        self.clock = clock
        self._group_configs = group_configs
        self.config = config or ShareConfig()
        self.sessions = ShareSessions(
            self.config.max_share_sessions,
            clock,
            lambda group_id: self._group_configs(group_id).share_session_timeout_ms,
        )
        self._lock = threading.Lock()
        self._partitions: dict[tuple[str, str, int], SharePartition] = {}
        self._terms: dict[tuple[str, str, int], int] = {}
        """The leader term each share partition was loaded in (:attr:`Partition.leader_term`:
        an ISR change moves the leader epoch here, not the term, and keeps the locks)."""

    def lock_duration_ms(self, group_id: str) -> int:
        """The group's ``share.record.lock.duration.ms``."""
        return self._group_configs(group_id).share_record_lock_duration_ms

    # -- share partitions ------------------------------------------------------------------

    def share_partition(
        self, group_id: str, target: ShareTarget
    ) -> tuple[int, SharePartition | None]:
        """The loaded share partition, created and loaded on first use: (0, it) or (error
        code, ``None``): NOT_LEADER_OR_FOLLOWER (this node does not lead the partition),
        UNKNOWN_TOPIC_OR_PARTITION, or the persister's. May block (the persister)."""
        hosted = self.replicas.partition(target.topic, target.partition)
        if hosted is None:
            known = (target.topic, target.partition) in self.replicas.metadata.snapshot.partitions
            return (NOT_LEADER if known else UnknownTopicOrPartitionError.code), None
        if not hosted.is_leader:
            return NOT_LEADER, None
        epoch, term = hosted.leader_epoch, hosted.leader_term
        key = (group_id, target.topic, target.partition)
        with self._lock:
            sp = self._partitions.get(key)
            if sp is None or self._terms.get(key) != term:
                sp = SharePartition(
                    ShareKey(group_id, target.topic_id, target.partition),
                    self.persister,
                    self.clock,
                    leader_epoch=epoch,
                    delivery_count_limit=self.config.delivery_count_limit,
                    max_record_locks=self.config.partition_max_record_locks,
                )
                self._partitions[key] = sp
                self._terms[key] = term
        try:
            sp.ensure_loaded(lambda: self._reset_offset(group_id, target))
        except PersisterError as e:
            self._drop_if(key, sp)
            return e.error_code, None
        except _NoResetOffsetError as e:
            self._drop_if(key, sp)
            return e.error_code, None
        return 0, sp

    def _drop_if(self, key: tuple[str, str, int], sp: SharePartition) -> None:
        with self._lock:
            if self._partitions.get(key) is sp:
                del self._partitions[key]
                self._terms.pop(key, None)

    def _reset_offset(self, group_id: str, target: ShareTarget) -> int:
        """Where an uninitialized share partition starts (``share.auto.offset.reset``)."""
        reset = self._group_configs(group_id).share_auto_offset_reset.lower()
        if reset == "earliest":
            timestamp = -2
        elif reset.startswith("by_duration:"):
            timestamp = max(0, self.clock.wall_ms() - _duration_ms(reset[len("by_duration:") :]))
        else:
            timestamp = -1
        [found] = self.replicas.list_offsets(
            [ListOffsetsPartition(target.topic, target.partition, timestamp)]
        )
        if found.error_code:
            raise _NoResetOffsetError(found.error_code)
        if found.offset < 0:  # no record at or after that time: the latest
            [found] = self.replicas.list_offsets(
                [ListOffsetsPartition(target.topic, target.partition, -1)]
            )
        return max(0, found.offset)

    def on_leadership_change(self, topic: str, partition: int, leader: bool, epoch: int) -> None:
        """A replica manager leadership listener: the share partitions of ``topic``-
        ``partition`` loaded in another leadership (:attr:`Partition.leader_term`), or all of
        them when this node no longer leads it, are dropped (their locks released: the next
        leader loads the state, where acquired records are AVAILABLE). Never blocks."""
        hosted = self.replicas.partition(topic, partition) if leader else None
        term = None if hosted is None else hosted.leader_term
        with self._lock:
            for key in [k for k in self._partitions if k[1] == topic and k[2] == partition]:
                if term is None or self._terms.get(key) != term:
                    del self._partitions[key]
                    self._terms.pop(key, None)

    def forget(self, group_id: str, topic: str, partition: int) -> None:
        """Drops ``group_id``'s share partition of ``topic``-``partition`` if this node has it
        loaded: its durable state was reset or deleted by the group's admin
        (:mod:`node.apis.share_admin`), and the next ShareFetch loads it again. Never
        blocks."""
        with self._lock:
            self._partitions.pop((group_id, topic, partition), None)
            self._terms.pop((group_id, topic, partition), None)

    def drop_stale(self, group_id: str, targets: Sequence[ShareTarget]) -> None:
        """Drops ``group_id``'s loaded share partitions of ``targets`` whose durable state
        epoch moved on (an admin's reset or delete on the group's coordinator, another node:
        :mod:`node.apis.share_admin`), so that the next fetch loads the state again. Called for
        a new share session (a member's first ShareFetch): a group is reset only while it has
        no members, so every member after a reset opens one. One ``read_summary`` per loaded
        target; a persister error leaves the share partition as it is. Blocks."""
        for target in targets:
            key = (group_id, target.topic, target.partition)
            with self._lock:
                sp = self._partitions.get(key)
            if sp is None or not sp.loaded:
                continue
            try:
                summary = self.persister.read_summary(sp.key)
            except PersisterError:
                continue
            if summary.state_epoch != sp.state_epoch:
                self._drop_if(key, sp)

    def hosted(self) -> list[SharePartition]:
        """Every share partition this node has loaded."""
        with self._lock:
            return list(self._partitions.values())

    def _forget_if_fenced(self, group_id: str, target: ShareTarget, code: int) -> None:
        if code in _RELOAD:
            with self._lock:
                self._partitions.pop((group_id, target.topic, target.partition), None)
                self._terms.pop((group_id, target.topic, target.partition), None)

    # -- ShareFetch ------------------------------------------------------------------------

    def start_fetch(
        self, group_id: str, member_id: str, targets: list[ShareTarget], params: ShareFetchParams
    ) -> list[ShareFetchResult] | PendingShareFetch:
        """Reads and acquires once; the answer when something was acquired (or an error, or
        no wait), else a :class:`PendingShareFetch`. Blocks (reads, the persister)."""
        if params.max_records <= 0 or params.max_bytes <= 0:
            # only acknowledging (librdkafka sends MaxRecords 0 so): nothing acquired, no wait
            # (Kafka's processShareFetch)
            return [ShareFetchResult(t.topic, t.topic_id, t.partition) for t in targets]
        results = self.fetch_once(group_id, member_id, targets, params)
        if (
            params.max_wait_ms <= 0
            or any(r.acquired or r.error_code for r in results)
            or not targets
            or self.replicas.shutting_down
        ):
            return results
        return PendingShareFetch(
            self,
            group_id,
            member_id,
            targets,
            params,
            self.clock.monotonic_ms() + params.max_wait_ms,
            [(t.topic, t.partition) for t in targets],
        )

    def fetch_once(
        self,
        group_id: str,
        member_id: str,
        targets: Sequence[ShareTarget],
        params: ShareFetchParams,
    ) -> list[ShareFetchResult]:
        """One read and acquisition of each of ``targets`` for ``member_id``. Blocks."""
        config = self._group_configs(group_id)
        isolation = (
            READ_COMMITTED if config.share_isolation_level == "read_committed" else READ_UNCOMMITTED
        )
        records_left = params.max_records
        bytes_left = params.max_bytes
        out: list[ShareFetchResult] = []
        for target in targets:
            code, sp = self.share_partition(group_id, target)
            if sp is None:
                out.append(ShareFetchResult(target.topic, target.topic_id, target.partition, code))
                continue
            if records_left <= 0 or bytes_left <= 0:
                out.append(ShareFetchResult(target.topic, target.topic_id, target.partition))
                continue
            offset = sp.next_fetch_offset()
            [read] = self.replicas.fetch(
                [FetchPartition(target.topic, target.partition, offset, bytes_left)],
                from_follower=False,
                max_bytes=bytes_left,
                isolation_level=isolation,
            )
            if read.error_code and read.error_code != OffsetOutOfRangeError.code:
                out.append(
                    ShareFetchResult(
                        target.topic,
                        target.topic_id,
                        target.partition,
                        read.error_code,
                        read.error_message,
                    )
                )
                continue
            data = records_bytes(read.records) if not read.error_code else b""
            code, acquired = sp.acquire(
                member_id,
                fetched_batches(data, read, offset),
                max_records=records_left,
                lock_duration_ms=config.share_record_lock_duration_ms,
                batch_size=params.batch_size,
                log_start_offset=read.log_start_offset,
            )
            self._forget_if_fenced(group_id, target, code)
            count = sum(a.last_offset - a.first_offset + 1 for a in acquired)
            records_left -= count
            if acquired:
                bytes_left -= len(data)
            out.append(
                ShareFetchResult(
                    target.topic,
                    target.topic_id,
                    target.partition,
                    code,
                    records=data if acquired else b"",
                    acquired=tuple(acquired),
                )
            )
        return out

    def may_acquire(self, group_id: str, targets: Sequence[ShareTarget]) -> bool:
        """Whether a waiting ShareFetch should read again now: a partition has something to
        deliver below its high watermark (last stable offset, read_committed), or is no
        longer led here. Quick (no read, no write)."""
        committed = self._group_configs(group_id).share_isolation_level == "read_committed"
        for target in targets:
            hosted = self.replicas.partition(target.topic, target.partition)
            with self._lock:
                sp = self._partitions.get((group_id, target.topic, target.partition))
            if hosted is None or not hosted.is_leader or sp is None:
                return True
            try:
                log = hosted.log
                bound = log.last_stable_offset() if committed else log.high_watermark
            except Exception:  # the log closed meanwhile: read again, which answers why
                return True
            if sp.may_acquire(bound):
                return True
        return False

    def next_lock_deadline_ms(self, group_id: str, targets: Sequence[ShareTarget]) -> int | None:
        deadlines = []
        with self._lock:
            for t in targets:
                sp = self._partitions.get((group_id, t.topic, t.partition))
                if sp is not None:
                    d = sp.next_lock_deadline_ms()
                    if d is not None:
                        deadlines.append(d)
        return min(deadlines) if deadlines else None

    # -- acknowledging ---------------------------------------------------------------------

    def acknowledge(
        self,
        group_id: str,
        member_id: str,
        target: ShareTarget,
        batches: Sequence[AcknowledgementBatch],
        *,
        renew_lock: bool = False,
    ) -> int:
        """Applies ``member_id``'s acknowledgements of one partition (all or none): 0 or the
        error code (:meth:`SharePartition.acknowledge`; NOT_LEADER_OR_FOLLOWER...)."""
        code, sp = self.share_partition(group_id, target)
        if sp is None:
            return code
        renew_ms = self._group_configs(group_id).share_record_lock_duration_ms if renew_lock else 0
        code = sp.acknowledge(member_id, batches, renew_lock_ms=renew_ms)
        self._forget_if_fenced(group_id, target, code)
        if not code and any(AcknowledgeType.RELEASE in b.acknowledge_types for b in batches):
            self.replicas.wakeups.notify((target.topic, target.partition), SHARE_RECORDS)
        return code

    def release_evicted(self) -> None:
        """Releases the records of the members whose idle share sessions were evicted."""
        for group_id, member_id in self.sessions.take_evicted():
            self.release_member(group_id, member_id)

    def release_member(self, group_id: str, member_id: str) -> None:
        """Releases every record ``member_id`` holds in ``group_id``'s share partitions here
        (its share session closed)."""
        with self._lock:
            mine = [(k, sp) for k, sp in self._partitions.items() if k[0] == group_id]
        for (_, topic, partition), sp in mine:
            if sp.release_member(member_id) == 0:
                self.replicas.wakeups.notify((topic, partition), SHARE_RECORDS)


class _NoResetOffsetError(Exception):
    def __init__(self, error_code: int) -> None:
        super().__init__(f"no reset offset: error {error_code}")
        self.error_code = error_code


def fetched_batches(data: bytes, read: FetchResult, fetch_offset: int) -> list[FetchedBatch]:
    """The batches of a share fetch's read, in offset order: control batches, and (a
    read_committed read, whose ``aborted_transactions`` is set) the batches of aborted
    transactions, to be archived rather than delivered (Kafka's consumer-side rule: a
    producer's batches are aborted from the first offset of its aborted transaction to its
    marker)."""
    aborted = sorted(read.aborted_transactions or (), key=lambda a: a[1])
    active: set[int] = set()
    i = 0
    out: list[FetchedBatch] = []
    for h in validated_headers(data, allow_partial_tail=True):
        if h.last_offset < fetch_offset:
            continue
        while i < len(aborted) and aborted[i][1] <= h.last_offset:
            active.add(aborted[i][0])
            i += 1
        if h.is_control:
            active.discard(h.producer_id)
            out.append(FetchedBatch(h.base_offset, h.last_offset, skip=True))
            continue
        skip = bool(h.attributes & TRANSACTIONAL_FLAG_MASK) and h.producer_id in active
        out.append(FetchedBatch(h.base_offset, h.last_offset, skip=skip))
    return out


_DURATION = re.compile(
    r"P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:[.,]\d+)?)S)?)?",
    re.IGNORECASE,
)


def _duration_ms(text: str) -> int:
    """An ISO-8601 duration (``P1DT2H``, ``PT30M``...) in milliseconds; 0 if it does not
    parse (the group config was validated when set)."""
    m = _DURATION.fullmatch(text.strip().lstrip("+"))
    if m is None:
        return 0
    seconds = float((m.group("s") or "0").replace(",", "."))
    return int(
        ((int(m.group("d") or 0) * 24 + int(m.group("h") or 0)) * 60 + int(m.group("m") or 0))
        * 60_000
        + seconds * 1000
    )
