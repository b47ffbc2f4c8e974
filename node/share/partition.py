"""One share partition on its partition's leader (KIP-932; Kafka's ``SharePartition``): which
records of the partition a share group has delivered, to whom, how often, and which are done.

The window. Offsets below the share-partition start offset (SPSO, :attr:`start_offset`) are
done. Offsets from it up to :attr:`end_offset` (exclusive: one past the last record ever
acquired; Kafka's SPEO is that minus one) are *in flight*, each in one state:

==============  ==========================================================================
AVAILABLE       may be acquired (never delivered, released, or its lock expired)
ACQUIRED        delivered to one member (``member_id``) until ``lock_deadline_ms``
ACKNOWLEDGED    accepted by a member: never delivered again
ARCHIVED        rejected, delivered ``group.share.delivery.count.limit`` times, aborted (read
                committed), a control batch, or a gap in the log: never delivered again
==============  ==========================================================================

Offsets at or past the end offset have never been acquired. Each in-flight offset has a delivery
count: incremented by each acquisition; a record released (RELEASE, its lock expired, its
member's session closed) whose count reached the limit is ARCHIVED instead of AVAILABLE (Kafka's
``InFlightState.tryUpdateState``). The start offset moves over every ACKNOWLEDGED or ARCHIVED
prefix of the window, and up to the log start offset when retention removed what was below it.

The window is kept per offset (Kafka keeps batches and splits them on a per-offset
acknowledgement; per offset is the same states without the splitting, at a bounded cost: new
records are acquired only while fewer than ``group.share.partition.max.record.locks`` are in
flight).

Durability: every change — an acquisition (delivery counts), an acknowledgement, a release, an
archiving lock expiry, the start offset moving — is written through the
:class:`~node.share.persister.ShareStatePersister` before the call returns; a write that fails
leaves the share partition as it was and answers the persister's error code. Acquired records
are written AVAILABLE with their delivery count (a lock does not outlive its leader). A lock's
expiry is noticed at the next call (each call first expires what is due), so a waiting
ShareFetch re-checks at :meth:`SharePartition.next_lock_deadline_ms`.

Thread-safe: every method holds the share partition's lock, persister write included (the
calls of one share partition are serialised, as Kafka's ``SharePartition`` lock does).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from node.share.persister import (
    DeliveryState,
    PersisterError,
    ShareKey,
    ShareSnapshot,
    ShareStateBatch,
    ShareStatePersister,
)
from odradek.clock import Clock
from odradek.errors import InvalidRecordStateError, InvalidRequestError

__all__ = [
    "AcknowledgeType",
    "AcknowledgementBatch",
    "AcquiredRecords",
    "FetchedBatch",
    "RecordState",
    "SharePartition",
]

INVALID_REQUEST = InvalidRequestError.code
INVALID_RECORD_STATE = InvalidRecordStateError.code


class RecordState(enum.IntEnum):
    """An in-flight record's state (Kafka's ``RecordState``)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(enum.IntEnum):
    """ShareFetch / ShareAcknowledge ``AcknowledgeTypes`` (RENEW from v2, KIP-1222)."""

    GAP = 0  # the offset is no record (compacted away): archived
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


@dataclass(frozen=True, slots=True)
class FetchedBatch:
    """A record batch the leader's log returned to a share fetch: its offsets, and whether it
    is never to be delivered (a control batch, or a read_committed fetch's aborted one)."""

    base_offset: int
    last_offset: int
    skip: bool = False


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    """Offsets ``first_offset..last_offset`` acquired with delivery count ``delivery_count``
    (ShareFetch's ``AcquiredRecords``)."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AcknowledgementBatch:
    """``first_offset..last_offset`` acknowledged: one type for the whole range, or one per
    offset (ShareFetch / ShareAcknowledge ``AcknowledgementBatches``)."""

    first_offset: int
    last_offset: int
    acknowledge_types: tuple[int, ...]


class _InFlight:
    __slots__ = ("delivery_count", "lock_deadline_ms", "member_id", "state")

    def __init__(self, state: RecordState, delivery_count: int) -> None:
        self.state = state
        self.delivery_count = delivery_count
        self.member_id = ""
        self.lock_deadline_ms = 0

    def copy(self) -> _InFlight:
        c = _InFlight(self.state, self.delivery_count)
        c.member_id = self.member_id
        c.lock_deadline_ms = self.lock_deadline_ms
        return c


_DONE = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class SharePartition:
    """One share group's share of one partition (see the module docstring). Built empty; call
    :meth:`load` before anything else."""

    def __init__(
        self,
        key: ShareKey,
        persister: ShareStatePersister,
        clock: Clock,
        *,
        leader_epoch: int,
        delivery_count_limit: int = 5,
        max_record_locks: int = 2000,
    ) -> None:
        if delivery_count_limit < 1 or max_record_locks < 1:
            raise ValueError("delivery_count_limit and max_record_locks must be positive")
        self.key = key
        self._persister = persister
        self._clock = clock
        self.leader_epoch = leader_epoch
        self.delivery_count_limit = delivery_count_limit
        self.max_record_locks = max_record_locks
        self._lock = threading.RLock()
        self._state_epoch = 0
        self._start = 0
        self._end = 0
        self._records: dict[int, _InFlight] = {}
        self._loaded = False

    # -- loading ---------------------------------------------------------------------------

    def load(self, reset_offset: int | None = None) -> None:
        """Takes the share partition over: reads its durable state for this leader epoch. A
        share partition never initialized starts at ``reset_offset`` (the group's
        ``share.auto.offset.reset`` as the caller resolved it), written with
        ``initialize``. Raises :class:`~node.share.persister.PersisterError` (nothing
        loaded), or ``ValueError`` if uninitialized and no ``reset_offset`` is given."""
        with self._lock:
            snapshot = self._persister.read(self.key, self.leader_epoch)
            self._state_epoch = snapshot.state_epoch
            if snapshot.start_offset < 0:
                if reset_offset is None or reset_offset < 0:
                    raise ValueError("an uninitialized share partition needs a reset offset")
                self._persister.initialize(self.key, snapshot.state_epoch, reset_offset)
                self._start = self._end = reset_offset
                self._records = {}
                self._loaded = True
                return
            self._start = snapshot.start_offset
            records: dict[int, _InFlight] = {}
            end = self._start
            for b in sorted(snapshot.batches, key=lambda b: b.first_offset):
                state = RecordState(int(b.delivery_state))
                if state is RecordState.ACQUIRED:  # never written so; a lock ends with a leader
                    state = RecordState.AVAILABLE
                for offset in range(max(b.first_offset, self._start), b.last_offset + 1):
                    records[offset] = _InFlight(state, b.delivery_count)
                end = max(end, b.last_offset + 1)
            for offset in range(self._start, end):
                records.setdefault(offset, _InFlight(RecordState.AVAILABLE, 0))
            self._records, self._end = records, end
            self._advance_start()
            self._loaded = True

    def ensure_loaded(self, reset_offset: Callable[[], int]) -> None:
        """:meth:`load` unless loaded, with ``reset_offset()`` (called only for a share
        partition never initialized) as the start. Raises as :meth:`load` and
        ``reset_offset``."""
        with self._lock:
            if self._loaded:
                return
            snapshot = self._persister.read(self.key, self.leader_epoch)
            reset = reset_offset() if snapshot.start_offset < 0 else None
            self.load(reset)

    @property
    def loaded(self) -> bool:
        return self._loaded

    @property
    def state_epoch(self) -> int:
        return self._state_epoch

    @property
    def start_offset(self) -> int:
        """The share-partition start offset (SPSO): every offset below it is done."""
        return self._start

    @property
    def end_offset(self) -> int:
        """One past the last offset ever acquired (Kafka's SPEO + 1)."""
        return self._end

    # -- reading ---------------------------------------------------------------------------

    def next_fetch_offset(self) -> int:
        """Where the next share fetch reads from: the first AVAILABLE in-flight offset (after
        expiring due locks, in memory only), else the end offset."""
        with self._lock:
            self._expire(self._clock.monotonic_ms())
            for offset in range(self._start, self._end):
                if self._records[offset].state is RecordState.AVAILABLE:
                    return offset
            return self._end

    def may_acquire(self, bound: int) -> bool:
        """Whether an acquisition could deliver something now with the log readable below
        ``bound`` (the high watermark, or the last stable offset): an AVAILABLE record (a
        lock due counts), or new records below ``bound`` with room for their locks. Never
        waits (a waiting ShareFetch asks it on the door's loop): True while another call
        holds the share partition (a persister write may be under way; the caller reads
        again)."""
        if not self._lock.acquire(blocking=False):
            return True
        try:
            now = self._clock.monotonic_ms()
            for offset in range(self._start, self._end):
                r = self._records[offset]
                if r.state is RecordState.AVAILABLE or (
                    r.state is RecordState.ACQUIRED and r.lock_deadline_ms <= now
                ):
                    return True
            return self._end < bound and self._end - self._start < self.max_record_locks
        finally:
            self._lock.release()

    def next_lock_deadline_ms(self) -> int | None:
        """The earliest lock deadline (monotonic ms) of an acquired record; ``None``: none, or
        another call holds the share partition (never waits, as :meth:`may_acquire`)."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            deadlines = [
                r.lock_deadline_ms
                for r in self._records.values()
                if r.state is RecordState.ACQUIRED
            ]
            return min(deadlines) if deadlines else None
        finally:
            self._lock.release()

    def states(self) -> dict[int, tuple[RecordState, int, str]]:
        """Every in-flight offset's (state, delivery count, member id): for tests and
        describing."""
        with self._lock:
            return {
                o: (
                    r.state,
                    r.delivery_count,
                    r.member_id if r.state is RecordState.ACQUIRED else "",
                )
                for o, r in sorted(self._records.items())
            }

    # -- acquiring -------------------------------------------------------------------------

    def acquire(
        self,
        member_id: str,
        batches: Sequence[FetchedBatch],
        *,
        max_records: int,
        lock_duration_ms: int,
        batch_size: int = 0,
        log_start_offset: int = -1,
    ) -> tuple[int, list[AcquiredRecords]]:
        """Acquires for ``member_id`` the records of ``batches`` (read from
        :meth:`next_fetch_offset`, in offset order) that may be delivered: AVAILABLE in-flight
        records one by one, then new records (past the end offset) whole batch by whole batch
        while fewer than ``max_records`` are acquired and fewer than ``max_record_locks`` are
        in flight; each acquisition adds one to its delivery count and locks it for
        ``lock_duration_ms``. Skipped batches (control, aborted) and the gaps between batches
        are ARCHIVED. ``log_start_offset``: the log's, which the start offset follows up.
        Returns (error code, acquired ranges, each at most ``batch_size`` long when
        positive); written before it returns (an error: nothing acquired)."""
        with self._lock:
            now = self._clock.monotonic_ms()
            saved = self._save()
            self._expire(now)
            changed = self._follow_log_start(log_start_offset)
            acquired: list[tuple[int, int]] = []  # (offset, delivery count)
            deadline = now + lock_duration_ms
            for batch in batches:
                if len(acquired) >= max_records:
                    break
                first = max(batch.base_offset, self._start)
                if batch.last_offset < first:
                    continue
                if batch.last_offset >= self._end:
                    # new records: the gap before them is no record, the batch is taken whole
                    if self._end - self._start >= self.max_record_locks:
                        break
                    new_from = max(first, self._end)
                    for offset in range(self._end, new_from):
                        self._records[offset] = _InFlight(RecordState.ARCHIVED, 0)
                    state = RecordState.ARCHIVED if batch.skip else RecordState.AVAILABLE
                    for offset in range(new_from, batch.last_offset + 1):
                        self._records[offset] = _InFlight(state, 0)
                    self._end = batch.last_offset + 1
                    changed = True
                for offset in range(first, batch.last_offset + 1):
                    r = self._records.get(offset)
                    if r is None or r.state is not RecordState.AVAILABLE:
                        continue
                    if batch.skip or r.delivery_count >= self.delivery_count_limit:
                        r.state = RecordState.ARCHIVED
                        changed = True
                        continue
                    if len(acquired) >= max_records and offset < saved[2]:
                        break  # in-flight records one by one; new batches whole
                    r.state = RecordState.ACQUIRED
                    r.delivery_count += 1
                    r.member_id = member_id
                    r.lock_deadline_ms = deadline
                    acquired.append((offset, r.delivery_count))
                    changed = True
            self._advance_start()
            if changed:
                error = self._write()
                if error:
                    self._restore(saved)
                    return error, []
            return 0, _ranges(acquired, batch_size)

    # -- acknowledging ---------------------------------------------------------------------

    def acknowledge(
        self,
        member_id: str,
        batches: Sequence[AcknowledgementBatch],
        *,
        renew_lock_ms: int = 0,
    ) -> int:
        """Applies ``member_id``'s acknowledgements, all or none: ACCEPT → ACKNOWLEDGED,
        RELEASE → AVAILABLE (ARCHIVED at the delivery count limit), REJECT and GAP → ARCHIVED,
        RENEW → locked ``renew_lock_ms`` more (0: RENEW is refused). Returns 0, or
        INVALID_REQUEST (a range backwards, a type count that is neither 1 nor the range's
        length, an unknown type), INVALID_RECORD_STATE (an offset not acquired by the member),
        or the persister's error code; on an error nothing changed."""
        with self._lock:
            now = self._clock.monotonic_ms()
            for b in batches:
                if b.first_offset > b.last_offset or b.first_offset < 0:
                    return INVALID_REQUEST
                n = b.last_offset - b.first_offset + 1
                if len(b.acknowledge_types) not in (1, n):
                    return INVALID_REQUEST
                for t in b.acknowledge_types:
                    if t not in AcknowledgeType.__members__.values():
                        return INVALID_REQUEST
                    if t == AcknowledgeType.RENEW and renew_lock_ms <= 0:
                        return INVALID_REQUEST
            saved = self._save()
            self._expire(now)
            for b in batches:
                types = b.acknowledge_types
                for i, offset in enumerate(range(b.first_offset, b.last_offset + 1)):
                    t = types[0] if len(types) == 1 else types[i]
                    r = self._records.get(offset)
                    if r is None or r.state is not RecordState.ACQUIRED or r.member_id != member_id:
                        self._restore(saved)
                        return INVALID_RECORD_STATE
                    if t == AcknowledgeType.ACCEPT:
                        r.state = RecordState.ACKNOWLEDGED
                    elif t == AcknowledgeType.RELEASE:
                        self._release(r)
                    elif t == AcknowledgeType.RENEW:
                        r.lock_deadline_ms = now + renew_lock_ms
                    else:
                        r.state = RecordState.ARCHIVED
            self._advance_start()
            error = self._write()
            if error:
                self._restore(saved)
            return error

    def release_member(self, member_id: str) -> int:
        """Releases every record ``member_id`` holds (its share session closed, or it left):
        AVAILABLE again, ARCHIVED at the delivery count limit. Returns 0 or the persister's
        error code (nothing changed then)."""
        with self._lock:
            saved = self._save()
            self._expire(self._clock.monotonic_ms())
            changed = False
            for r in self._records.values():
                if r.state is RecordState.ACQUIRED and r.member_id == member_id:
                    self._release(r)
                    changed = True
            if not changed:
                return 0
            self._advance_start()
            error = self._write()
            if error:
                self._restore(saved)
            return error

    def expire_locks(self) -> int:
        """Expires the locks that are due and writes what that changed (records archived at
        the delivery count limit, the start offset). Returns 0 or the persister's code."""
        with self._lock:
            saved = self._save()
            if not self._expire(self._clock.monotonic_ms()):
                return 0
            self._advance_start()
            error = self._write()
            if error:
                self._restore(saved)
            return error

    # -- internals -------------------------------------------------------------------------

    def _release(self, r: _InFlight) -> None:
        r.state = (
            RecordState.ARCHIVED
            if r.delivery_count >= self.delivery_count_limit
            else RecordState.AVAILABLE
        )
        r.member_id = ""
        r.lock_deadline_ms = 0

    def _expire(self, now_ms: int) -> bool:
        expired = False
        for r in self._records.values():
            if r.state is RecordState.ACQUIRED and r.lock_deadline_ms <= now_ms:
                self._release(r)
                expired = True
        return expired

    def _follow_log_start(self, log_start_offset: int) -> bool:
        if log_start_offset <= self._start:
            return False
        for offset in range(self._start, min(log_start_offset, self._end)):
            del self._records[offset]
        self._start = log_start_offset
        self._end = max(self._end, self._start)
        return True

    def _advance_start(self) -> None:
        while self._start < self._end and self._records[self._start].state in _DONE:
            del self._records[self._start]
            self._start += 1

    def _save(self) -> tuple[int, int, int, dict[int, _InFlight]]:
        return (
            self._state_epoch,
            self._start,
            self._end,
            {o: r.copy() for o, r in self._records.items()},
        )

    def _restore(self, saved: tuple[int, int, int, dict[int, _InFlight]]) -> None:
        self._state_epoch, self._start, self._end, self._records = saved

    def snapshot(self) -> ShareSnapshot:
        """The durable state now: acquired records as AVAILABLE with their delivery count."""
        with self._lock:
            batches: list[ShareStateBatch] = []
            for offset in range(self._start, self._end):
                r = self._records[offset]
                state = (
                    DeliveryState.AVAILABLE
                    if r.state is RecordState.ACQUIRED
                    else DeliveryState(int(r.state))
                )
                last = batches[-1] if batches else None
                if (
                    last is not None
                    and last.last_offset == offset - 1
                    and last.delivery_state == state
                    and last.delivery_count == r.delivery_count
                ):
                    batches[-1] = ShareStateBatch(
                        last.first_offset, offset, state, r.delivery_count
                    )
                else:
                    batches.append(ShareStateBatch(offset, offset, state, r.delivery_count))
            return ShareSnapshot(self._state_epoch, self._start, self.leader_epoch, tuple(batches))

    def _write(self) -> int:
        try:
            self._persister.write(self.key, self.snapshot())
        except PersisterError as e:
            return e.error_code
        return 0


def _ranges(acquired: list[tuple[int, int]], batch_size: int) -> list[AcquiredRecords]:
    """Consecutive offsets with one delivery count as one range (at most ``batch_size`` long
    when positive)."""
    out: list[AcquiredRecords] = []
    for offset, count in acquired:
        last = out[-1] if out else None
        if (
            last is not None
            and last.last_offset == offset - 1
            and last.delivery_count == count
            and (batch_size <= 0 or offset - last.first_offset < batch_size)
        ):
            out[-1] = AcquiredRecords(last.first_offset, offset, count)
        else:
            out.append(AcquiredRecords(offset, offset, count))
    return out
