"""SharePartition: acquisition, acknowledgement, lock expiry, delivery counts, the start offset,
and that every change is written through the persister (node.share.partition)."""

from __future__ import annotations

import pytest

from node.share.partition import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    FetchedBatch,
    RecordState,
    SharePartition,
)
from node.share.persister import (
    DeliveryState,
    PersisterError,
    ShareKey,
    ShareSnapshot,
    ShareStateBatch,
)
from node.share.volatile_persister import VolatilePersister
from odradek.clock import ManualClock

KEY = ShareKey("g", "topic-id", 0)
LOCK_MS = 1000
A = "member-a"
B = "member-b"


def make(
    persister: VolatilePersister | None = None, *, limit: int = 3, locks: int = 2000, start: int = 0
) -> tuple[SharePartition, VolatilePersister, ManualClock]:
    persister = persister or VolatilePersister()
    clock = ManualClock()
    sp = SharePartition(
        KEY, persister, clock, leader_epoch=1, delivery_count_limit=limit, max_record_locks=locks
    )
    sp.load(reset_offset=start)
    return sp, persister, clock


def acquire(
    sp: SharePartition, member: str, batches: list[tuple[int, int]], max_records: int = 500
) -> list[AcquiredRecords]:
    error, acquired = sp.acquire(
        member,
        [FetchedBatch(b, e) for b, e in batches],
        max_records=max_records,
        lock_duration_ms=LOCK_MS,
    )
    assert error == 0
    return acquired


def ack(first: int, last: int, *types: AcknowledgeType) -> AcknowledgementBatch:
    return AcknowledgementBatch(first, last, tuple(int(t) for t in types))


def test_new_records_are_acquired_whole_batches_with_delivery_count_one() -> None:
    sp, persister, _ = make()
    assert acquire(sp, A, [(0, 4), (5, 9)], max_records=3) == [AcquiredRecords(0, 4, 1)]
    assert sp.end_offset == 5 and sp.next_fetch_offset() == 5
    assert persister.read(KEY, 1).batches == (ShareStateBatch(0, 4, DeliveryState.AVAILABLE, 1),)


def test_accept_advances_the_start_offset_and_is_never_delivered_again() -> None:
    sp, persister, _ = make()
    acquire(sp, A, [(0, 4)])
    assert sp.acknowledge(A, [ack(0, 4, AcknowledgeType.ACCEPT)]) == 0
    assert sp.start_offset == 5 and sp.states() == {}
    assert persister.read(KEY, 1) == ShareSnapshot(0, 5, 1, ())
    assert acquire(sp, B, [(0, 4)]) == []


def test_release_makes_records_available_with_their_count_kept() -> None:
    sp, _, _ = make()
    acquire(sp, A, [(0, 4)])
    assert sp.acknowledge(A, [ack(0, 4, AcknowledgeType.RELEASE)]) == 0
    assert sp.next_fetch_offset() == 0
    assert acquire(sp, B, [(0, 4)]) == [AcquiredRecords(0, 4, 2)]


def test_per_offset_types_split_the_range() -> None:
    sp, _, _ = make()
    acquire(sp, A, [(0, 3)])
    types = (
        AcknowledgeType.ACCEPT,
        AcknowledgeType.RELEASE,
        AcknowledgeType.REJECT,
        AcknowledgeType.GAP,
    )
    assert sp.acknowledge(A, [ack(0, 3, *types)]) == 0
    assert sp.start_offset == 1
    assert sp.states() == {
        1: (RecordState.AVAILABLE, 1, ""),
        2: (RecordState.ARCHIVED, 1, ""),
        3: (RecordState.ARCHIVED, 1, ""),
    }
    assert acquire(sp, B, [(0, 3)]) == [AcquiredRecords(1, 1, 2)]


@pytest.mark.parametrize(
    ("batch", "code"),
    [
        (AcknowledgementBatch(3, 2, (1,)), 42),  # backwards
        (AcknowledgementBatch(0, 2, (1, 1)), 42),  # neither one type nor one per offset
        (AcknowledgementBatch(0, 0, (9,)), 42),  # no such type
        (AcknowledgementBatch(0, 0, (4,)), 42),  # RENEW not allowed here
        (AcknowledgementBatch(0, 5, (1,)), 121),  # 5 never acquired
    ],
)
def test_bad_acknowledgements_change_nothing(batch: AcknowledgementBatch, code: int) -> None:
    sp, persister, _ = make()
    acquire(sp, A, [(0, 4)])
    before, writes = sp.states(), persister.writes
    assert sp.acknowledge(A, [ack(0, 0, AcknowledgeType.ACCEPT), batch]) == code
    assert sp.states() == before and persister.writes == writes


def test_another_members_records_are_invalid_record_state() -> None:
    sp, _, _ = make()
    acquire(sp, A, [(0, 4)])
    assert sp.acknowledge(B, [ack(0, 0, AcknowledgeType.ACCEPT)]) == 121


def test_lock_expiry_makes_records_available_and_counts_the_next_delivery() -> None:
    sp, _, clock = make()
    acquire(sp, A, [(0, 1)])
    assert not sp.may_acquire(bound=2)
    assert sp.next_lock_deadline_ms() == clock.monotonic_ms() + LOCK_MS
    clock.advance(LOCK_MS)
    assert sp.may_acquire(bound=2)
    assert sp.acknowledge(A, [ack(0, 0, AcknowledgeType.ACCEPT)]) == 121  # the lock is gone
    assert acquire(sp, B, [(0, 1)]) == [AcquiredRecords(0, 1, 2)]


def test_delivery_count_limit_archives() -> None:
    sp, _, clock = make(limit=2)
    acquire(sp, A, [(0, 0)])
    clock.advance(LOCK_MS)
    assert acquire(sp, A, [(0, 0)]) == [AcquiredRecords(0, 0, 2)]
    assert sp.acknowledge(A, [ack(0, 0, AcknowledgeType.RELEASE)]) == 0
    assert sp.start_offset == 1 and sp.states() == {}


def test_renew_extends_the_lock() -> None:
    sp, _, clock = make()
    acquire(sp, A, [(0, 0)])
    clock.advance(LOCK_MS - 1)
    assert sp.acknowledge(A, [ack(0, 0, AcknowledgeType.RENEW)], renew_lock_ms=LOCK_MS) == 0
    clock.advance(LOCK_MS - 1)
    assert sp.states()[0] == (RecordState.ACQUIRED, 1, A)


def test_skipped_batches_and_gaps_are_archived() -> None:
    sp, _, _ = make()
    error, acquired = sp.acquire(
        A,
        [FetchedBatch(0, 1, skip=True), FetchedBatch(4, 5), FetchedBatch(6, 6, skip=True)],
        max_records=10,
        lock_duration_ms=LOCK_MS,
    )
    assert (error, acquired) == (0, [AcquiredRecords(4, 5, 1)])
    assert sp.start_offset == 4 and sp.end_offset == 7
    assert sp.acknowledge(A, [ack(4, 5, AcknowledgeType.ACCEPT)]) == 0
    assert sp.start_offset == 7


def test_max_record_locks_bounds_new_acquisitions() -> None:
    sp, _, _ = make(locks=4)
    assert acquire(sp, A, [(0, 2), (3, 5), (6, 8)]) == [AcquiredRecords(0, 5, 1)]


def test_batch_size_splits_acquired_ranges() -> None:
    sp, _, _ = make()
    _, acquired = sp.acquire(
        A, [FetchedBatch(0, 4)], max_records=10, lock_duration_ms=LOCK_MS, batch_size=2
    )
    assert acquired == [
        AcquiredRecords(0, 1, 1),
        AcquiredRecords(2, 3, 1),
        AcquiredRecords(4, 4, 1),
    ]


def test_release_member_releases_only_its_records() -> None:
    sp, _, _ = make()
    acquire(sp, A, [(0, 1)])
    acquire(sp, B, [(2, 3)])
    assert sp.release_member(A) == 0
    assert sp.states()[0] == (RecordState.AVAILABLE, 1, "")
    assert sp.states()[2] == (RecordState.ACQUIRED, 1, B)


def test_the_log_start_offset_moves_the_start_offset() -> None:
    sp, _, _ = make()
    acquire(sp, A, [(0, 1)])
    sp.acknowledge(A, [ack(0, 1, AcknowledgeType.RELEASE)])
    assert sp.acquire(
        A, [FetchedBatch(10, 11)], max_records=5, lock_duration_ms=LOCK_MS, log_start_offset=10
    ) == (0, [AcquiredRecords(10, 11, 1)])
    assert sp.start_offset == 10


def test_a_new_leader_loads_the_state_with_locks_gone() -> None:
    sp, persister, _ = make()
    acquire(sp, A, [(0, 3)])
    sp.acknowledge(A, [ack(1, 1, AcknowledgeType.ACCEPT)])
    other = SharePartition(KEY, persister, ManualClock(), leader_epoch=2)
    other.load()
    assert other.start_offset == 0 and other.end_offset == 4
    assert other.states() == {
        0: (RecordState.AVAILABLE, 1, ""),
        1: (RecordState.ACKNOWLEDGED, 1, ""),
        2: (RecordState.AVAILABLE, 1, ""),
        3: (RecordState.AVAILABLE, 1, ""),
    }
    assert other.next_fetch_offset() == 0


def test_an_uninitialized_share_partition_starts_at_the_reset_offset() -> None:
    sp, persister, _ = make(start=42)
    assert sp.start_offset == sp.end_offset == 42
    assert persister.read_summary(KEY).start_offset == 42


class _Failing(VolatilePersister):
    fail = False

    def write(self, key: ShareKey, snapshot: ShareSnapshot) -> None:
        if self.fail:
            raise PersisterError(15)
        super().write(key, snapshot)


def test_a_failed_write_changes_nothing() -> None:
    persister = _Failing()
    sp, _, _ = make(persister)
    acquire(sp, A, [(0, 1)])
    persister.fail = True
    before = sp.states()
    assert sp.acknowledge(A, [ack(0, 1, AcknowledgeType.ACCEPT)]) == 15
    assert sp.acquire(B, [FetchedBatch(2, 3)], max_records=5, lock_duration_ms=LOCK_MS) == (15, [])
    assert sp.states() == before and sp.end_offset == 2
