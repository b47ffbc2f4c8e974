"""Transactional offsets (node.coordinator.txn_offsets and the coordinator's hooks): a
TxnOffsetCommit is written as a transactional batch of the producer and kept pending, invisible
to OffsetFetch (UNSTABLE_OFFSET_COMMIT with require_stable) until its COMMIT marker; an ABORT
drops it; a coordinator loading the partition replays transactional batches into pending and
resolves them at their control batches. KIP-447's member and generation checks. A fake replica
manager keeping every batch at its offset (the log a reload reads back); a manual clock."""

from __future__ import annotations

import struct
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from node.coordinator.classic_group import ClassicGroup, ClassicGroupState, ClassicMember
from node.coordinator.group_coordinator import OFFSETS_TOPIC, GroupCoordinator
from node.coordinator.group_coordinator_config import GroupCoordinatorConfig
from node.coordinator.group_requests import OffsetCommitPartition, OffsetFetchPartition
from node.coordinator.group_state import ConsumerGroup, Member
from node.coordinator.txn_offsets import PendingTxnOffsets, check_txn_offset_commit
from node.core.metadata_cache import MetadataCache
from node.core.requests import (
    Broker,
    LeaderAndIsrPartition,
    ProducePartition,
    ProduceResult,
    UpdateMetadataRequest,
)
from odradek.clock import ManualClock
from odradek.errors import (
    FencedInstanceIdError,
    IllegalGenerationError,
    StaleMemberEpochError,
    UnknownMemberIdError,
)
from odradek.group_records import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value
from odradek.records import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_txn_marker,
    read_batches,
)
from tests.unit.node.test_group_coordinator import TID, _Replicated

UNSTABLE_OFFSET_COMMIT = 88
GROUP = "etl"


class _Read:
    def __init__(self, records: bytes) -> None:
        self.records = records


class _Log:
    """The batches appended so far, each at its base offset."""

    def __init__(self) -> None:
        self.batches: list[bytes] = []
        self.log_start_offset = 0
        self.log_end_offset = 0

    def append(self, batch: bytes) -> int:
        base = self.log_end_offset
        rebased = struct.pack(">q", base) + batch[8:]  # the base offset is outside the CRC
        (parsed,) = read_batches(rebased)
        self.batches.append(rebased)
        self.log_end_offset = parsed.last_offset + 1
        return base

    def read(self, offset: int, max_bytes: int) -> _Read:
        out = b""
        for batch in self.batches:
            (parsed,) = read_batches(batch)
            if parsed.last_offset >= offset:
                out += batch
        return _Read(out)


class _Partition:
    def __init__(self, log: _Log) -> None:
        self.log = log


class _LogReplicas:
    """Appends every write to one log, replicated at once; what each append asked for."""

    node_id = 0

    def __init__(self) -> None:
        self.log = _Log()
        self.appends: list[ProducePartition] = []
        self.refuse = 0
        """An error code the log answers instead of appending (0: none)."""

    def partition(self, topic: str, partition: int) -> _Partition:
        return _Partition(self.log)

    def start_append(
        self,
        partitions: Sequence[ProducePartition],
        *,
        acks: int,
        timeout_ms: int,
        blocking: bool = True,
    ) -> _Replicated:
        out = []
        for data in partitions:
            self.appends.append(data)
            if self.refuse:
                out.append(ProduceResult(data.topic, data.partition, error_code=self.refuse))
                continue
            base = self.log.append(data.records)
            out.append(ProduceResult(data.topic, data.partition, base_offset=base))
        return _Replicated(out)

    def marker(self, producer_id: int, commit: bool) -> None:
        """The transaction coordinator's marker, as the marker writer appends it."""
        control = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
        self.log.append(
            build_end_txn_marker(
                EndTransactionMarker(control, 0),
                producer_id=producer_id,
                producer_epoch=0,
                timestamp=0,
            )
        )


def _coordinator(
    replicas: _LogReplicas, epoch: int = 1, clock: ManualClock | None = None, **config: Any
) -> GroupCoordinator:
    metadata = MetadataCache()
    metadata.update(
        UpdateMetadataRequest(
            controller_id=-1,
            controller_epoch=1,
            live_brokers=(Broker(node_id=0, host="h", port=1),),
            partition_states=(
                *(
                    LeaderAndIsrPartition(topic="t", partition=p, leader=0, topic_id=TID)
                    for p in range(2)
                ),
                LeaderAndIsrPartition(
                    topic=OFFSETS_TOPIC, partition=0, leader=0, topic_id="x" * 22
                ),
            ),
        )
    )
    coordinator = GroupCoordinator(
        GroupCoordinatorConfig(offsets_topic_num_partitions=1, **config),
        replicas,  # type: ignore[arg-type]
        metadata,
        clock or ManualClock(),
        lambda *_: None,
    )
    coordinator.on_leadership_change(OFFSETS_TOPIC, 0, True, epoch)
    loaded = threading.Event()
    for _ in range(500):  # the load runs on its own thread: poll for it
        if coordinator._shards[0].loaded:
            loaded.set()
            break
        loaded.wait(0.01)
    assert loaded.is_set()
    return coordinator


def _txn_commit(
    coordinator: GroupCoordinator, producer_id: int, offsets: dict[int, int], **member: Any
) -> list[int]:
    result = coordinator.txn_offset_commit_later(
        GROUP,
        producer_id,
        0,
        [OffsetCommitPartition("t", p, o) for p, o in offsets.items()],
        **member,
    ).result()
    return [r.error_code for r in result.partitions]


def _fetch(
    coordinator: GroupCoordinator, stable: bool = False, group: str = GROUP
) -> list[tuple[int, int]]:
    result = coordinator.offset_fetch(group, "", -1, [("t", 0), ("t", 1)], stable)
    assert result.error_code == 0
    return [(p.committed_offset, p.error_code) for p in result.partitions]


def test_offsets_stay_pending_until_the_commit_marker() -> None:
    replicas = _LogReplicas()
    coordinator = _coordinator(replicas)
    assert _txn_commit(coordinator, 7, {0: 10, 1: 20}) == [0, 0]
    (written,) = read_batches(replicas.appends[-1].records)
    assert written.is_transactional and written.producer_id == 7
    assert replicas.appends[-1].from_coordinator  # its sequence is not the client's to check
    assert _fetch(coordinator) == [(-1, 0), (-1, 0)]
    assert _fetch(coordinator, stable=True) == [(-1, UNSTABLE_OFFSET_COMMIT)] * 2

    replicas.marker(7, commit=True)
    coordinator.on_txn_marker(OFFSETS_TOPIC, 0, 7, True)
    assert _fetch(coordinator) == _fetch(coordinator, stable=True) == [(10, 0), (20, 0)]


def test_an_abort_marker_drops_the_pending_offsets() -> None:
    replicas = _LogReplicas()
    coordinator = _coordinator(replicas)
    _txn_commit(coordinator, 7, {0: 10})
    replicas.marker(7, commit=True)
    coordinator.on_txn_marker(OFFSETS_TOPIC, 0, 7, True)
    _txn_commit(coordinator, 7, {0: 15, 1: 5})
    assert _fetch(coordinator, stable=True) == [(-1, UNSTABLE_OFFSET_COMMIT)] * 2
    assert _fetch(coordinator) == [(10, 0), (-1, 0)]  # the last committed offset
    replicas.marker(7, commit=False)
    coordinator.on_txn_marker(OFFSETS_TOPIC, 0, 7, False)
    assert _fetch(coordinator, stable=True) == [(10, 0), (-1, 0)]


INVALID_PRODUCER_EPOCH = 47


def test_a_fenced_producers_commit_is_answered_the_logs_error_and_not_kept() -> None:
    """The log refuses a transactional batch of an older producer epoch: the answer is that
    error (not the UNKNOWN_SERVER_ERROR a plain commit's failed append maps to), nothing is
    pending, and a later COMMIT of the producer commits nothing."""
    replicas = _LogReplicas()
    coordinator = _coordinator(replicas)
    replicas.refuse = INVALID_PRODUCER_EPOCH
    assert _txn_commit(coordinator, 7, {0: 10}) == [INVALID_PRODUCER_EPOCH]
    assert _fetch(coordinator, stable=True) == [(-1, 0), (-1, 0)]
    coordinator.on_txn_marker(OFFSETS_TOPIC, 0, 7, True)
    assert _fetch(coordinator) == [(-1, 0), (-1, 0)]


def test_a_marker_of_another_partition_or_producer_changes_nothing() -> None:
    replicas = _LogReplicas()
    coordinator = _coordinator(replicas)
    _txn_commit(coordinator, 7, {0: 10})
    coordinator.on_txn_marker("t", 0, 7, True)
    coordinator.on_txn_marker(OFFSETS_TOPIC, 0, 8, True)
    assert _fetch(coordinator, stable=True)[0] == (-1, UNSTABLE_OFFSET_COMMIT)


def test_a_loading_coordinator_resolves_transactions_at_their_markers() -> None:
    """The log holds a committed transaction (producer 1), an aborted one (2) and an open one
    (3), interleaved, and a plain commit before the open one's offset: a new leader's load
    rebuilds the same state."""
    replicas = _LogReplicas()
    first = _coordinator(replicas)
    _txn_commit(first, 1, {0: 10})
    _txn_commit(first, 2, {1: 99})
    first.offset_commit(GROUP, "", -1, [OffsetCommitPartition("t", 1, 5)])
    _txn_commit(first, 3, {1: 30})
    replicas.marker(1, commit=True)
    replicas.marker(2, commit=False)
    for pid, commit in ((1, True), (2, False)):
        first.on_txn_marker(OFFSETS_TOPIC, 0, pid, commit)
    expected = [(10, 0), (5, 0)]
    assert _fetch(first) == expected

    second = _coordinator(replicas, epoch=2)
    assert _fetch(second) == expected
    assert _fetch(second, stable=True) == [(10, 0), (-1, UNSTABLE_OFFSET_COMMIT)]
    replicas.marker(3, commit=True)
    second.on_txn_marker(OFFSETS_TOPIC, 0, 3, True)
    assert _fetch(second, stable=True) == [(10, 0), (30, 0)]
    third = _coordinator(replicas, epoch=3)  # the commit marker read back
    assert _fetch(third, stable=True) == [(10, 0), (30, 0)]


def test_pending_offsets_keep_each_producers_last_record() -> None:
    pending = PendingTxnOffsets()
    key = encode_key(OffsetCommitKey(GROUP, "t", 0))
    pending.add(
        1, [(key, encode_value(OffsetCommitValue(1))), (key, encode_value(OffsetCommitValue(2)))]
    )
    pending.add(2, [(encode_key(OffsetCommitKey("other", "t", 0)), None)])
    assert pending.is_pending(GROUP, "t", 0) and not pending.is_pending(GROUP, "t", 1)
    assert pending.producers() == [1, 2]
    assert pending.end(1, commit=True) == [(key, encode_value(OffsetCommitValue(2)))]
    assert not pending.is_pending(GROUP, "t", 0)
    assert pending.end(2, commit=False) == [] and pending.producers() == []


def _consumer_group(member_epoch: int, classic: bool = False) -> ConsumerGroup:
    group = ConsumerGroup(GROUP)
    member = Member("m", member_epoch=member_epoch)
    if classic:
        member = Member("m", member_epoch=member_epoch, classic=object())  # type: ignore[arg-type]
    group.members["m"] = member
    return group


def test_kip_447_checks_of_a_consumer_group() -> None:
    group = _consumer_group(4)
    check_txn_offset_commit(None, group, "", -1, None)  # v0-v2: nothing to check
    check_txn_offset_commit(None, group, "m", 4, None)
    with pytest.raises(UnknownMemberIdError):
        check_txn_offset_commit(None, group, "zombie", 4, None)
    with pytest.raises(StaleMemberEpochError):
        check_txn_offset_commit(None, group, "m", 3, None)
    with pytest.raises(IllegalGenerationError):
        check_txn_offset_commit(None, _consumer_group(4, classic=True), "m", 3, None)
    check_txn_offset_commit(None, ConsumerGroup(GROUP), "x", -1, None)  # no members


def test_kip_447_checks_of_a_classic_group() -> None:
    group = ClassicGroup(GROUP, state=ClassicGroupState.COMPLETING_REBALANCE, generation_id=3)
    group.members["m"] = ClassicMember("m", "c", "h", 1000, 1000, "consumer", (), "i")
    group.static_members["i"] = "m"
    check_txn_offset_commit(group, None, "", -1, None)  # not refused while rebalancing
    check_txn_offset_commit(group, None, "m", 3, "i")
    with pytest.raises(IllegalGenerationError):
        check_txn_offset_commit(group, None, "m", 2, "i")
    with pytest.raises(UnknownMemberIdError):
        check_txn_offset_commit(group, None, "zombie", 3, None)
    with pytest.raises(FencedInstanceIdError):
        check_txn_offset_commit(group, None, "zombie", 3, "i")


def test_a_pending_offset_is_not_a_committed_one_for_offset_fetch_of_all() -> None:
    replicas = _LogReplicas()
    coordinator = _coordinator(replicas)
    _txn_commit(coordinator, 7, {0: 10})
    assert coordinator.offset_fetch(GROUP, "", -1, None).partitions == ()
    replicas.marker(7, commit=True)
    coordinator.on_txn_marker(OFFSETS_TOPIC, 0, 7, True)
    assert coordinator.offset_fetch(GROUP, "", -1, None).partitions == (
        OffsetFetchPartition("t", 0, 10),
    )


def test_an_unknown_partition_or_too_much_metadata_is_refused_alone() -> None:
    replicas = _LogReplicas()
    coordinator = _coordinator(replicas)
    result = coordinator.txn_offset_commit_later(
        GROUP,
        7,
        0,
        [
            OffsetCommitPartition("t", 0, 10),
            OffsetCommitPartition("t", 5, 10),  # no such partition
            OffsetCommitPartition("t", 1, 10, committed_metadata="x" * 5000),
        ],
    ).result()
    assert [r.error_code for r in result.partitions] == [0, 3, 12]
    (written,) = read_batches(replicas.appends[-1].records)
    assert len(written.records()) == 1


def test_delete_groups_deletes_the_pending_offsets_too() -> None:
    """DeleteGroups of a group without members whose offsets are partly pending in an open
    transaction: Kafka deletes it (``validateDeleteGroup`` looks at the members only) and
    writes a tombstone for each pending partition too (``deleteAllOffsets``), whose replay drops
    the pending offsets, so the transaction's COMMIT does not bring them back. A group whose
    only offsets are pending is deleted the same way. Before, the pending offsets were not
    deleted: the COMMIT made (10, 20) the group's offsets, and a pending-only group was
    GROUP_ID_NOT_FOUND."""
    replicas = _LogReplicas()
    coordinator = _coordinator(replicas)
    coordinator.offset_commit(GROUP, "", -1, [OffsetCommitPartition("t", 0, 3)])
    assert _txn_commit(coordinator, 7, {0: 10, 1: 20}) == [0, 0]
    coordinator.txn_offset_commit_later("pending-only", 8, 0, [OffsetCommitPartition("t", 0, 4)])
    deleted = coordinator.delete_groups([GROUP, "pending-only"])
    assert [d.error_code for d in deleted] == [0, 0]
    assert _fetch(coordinator, stable=True) == [(-1, 0), (-1, 0)]  # nothing pending either
    for pid in (7, 8):
        replicas.marker(pid, commit=True)
        coordinator.on_txn_marker(OFFSETS_TOPIC, 0, pid, True)
    assert _fetch(coordinator) == [(-1, 0), (-1, 0)]
    assert _fetch(coordinator, group="pending-only") == [(-1, 0), (-1, 0)]
    reloaded = _coordinator(replicas, epoch=2)  # the log read back decides the same
    assert _fetch(reloaded) == [(-1, 0), (-1, 0)]
    assert _fetch(reloaded, group="pending-only") == [(-1, 0), (-1, 0)]


def test_an_offset_with_a_pending_transactional_offset_does_not_expire() -> None:
    """Offset expiry skips a partition an open transaction holds an offset of (Kafka's
    ``cleanupExpiredOffsets``: "We don't expire the offset yet if there is a pending
    transactional offset for the partition"); the group's other offsets expire. Before, t-0's
    offset expired, and its tombstone's time came before the transaction's."""
    clock = ManualClock()
    replicas = _LogReplicas()
    coordinator = _coordinator(
        replicas, clock=clock, offsets_retention_minutes=1, offsets_retention_check_interval_ms=1
    )
    coordinator.offset_commit(
        GROUP, "", -1, [OffsetCommitPartition("t", 0, 3), OffsetCommitPartition("t", 1, 4)]
    )
    assert _txn_commit(coordinator, 7, {0: 10}) == [0]
    clock.advance(61_000)
    coordinator.tick()
    assert _fetch(coordinator) == [(3, 0), (-1, 0)]
    replicas.marker(7, commit=True)
    coordinator.on_txn_marker(OFFSETS_TOPIC, 0, 7, True)
    assert _fetch(coordinator) == [(10, 0), (-1, 0)]


def test_at_the_commit_marker_the_later_of_a_pending_and_a_plain_offset_is_kept() -> None:
    """A plain OffsetCommit written after a TxnOffsetCommit of the same partition is kept when
    the transaction commits; a pending offset written after the plain one replaces it. Kafka's
    replayEndTransactionMarker compares the records' offsets in __consumer_offsets, and a new
    leader's load decides the same. Before, the COMMIT always made the pending offset (10) the
    committed one."""
    replicas = _LogReplicas()
    coordinator = _coordinator(replicas)
    assert _txn_commit(coordinator, 7, {0: 10, 1: 20}) == [0, 0]
    coordinator.offset_commit(GROUP, "", -1, [OffsetCommitPartition("t", 0, 15)])
    replicas.marker(7, commit=True)
    coordinator.on_txn_marker(OFFSETS_TOPIC, 0, 7, True)
    assert _fetch(coordinator) == [(15, 0), (20, 0)]
    assert _fetch(_coordinator(replicas, epoch=2)) == [(15, 0), (20, 0)]

    reloaded = _coordinator(replicas, epoch=3)
    reloaded.offset_commit(GROUP, "", -1, [OffsetCommitPartition("t", 1, 25)])
    assert _txn_commit(reloaded, 8, {1: 30}) == [0]
    replicas.marker(8, commit=True)
    reloaded.on_txn_marker(OFFSETS_TOPIC, 0, 8, True)
    assert _fetch(reloaded) == [(15, 0), (30, 0)]
    assert _fetch(_coordinator(replicas, epoch=4)) == [(15, 0), (30, 0)]


def test_a_pending_offset_older_than_the_committed_one_is_not_applied() -> None:
    pending = PendingTxnOffsets()
    key = encode_key(OffsetCommitKey(GROUP, "t", 0))
    older, newer = encode_value(OffsetCommitValue(1)), encode_value(OffsetCommitValue(2))
    pending.add(1, [(key, older)], [4])
    pending.replayed([(key, newer)], [9])
    assert pending.end(1, commit=True) == []
    pending.add(2, [(key, newer)])  # this leader's write: after everything seen
    assert pending.end(2, commit=True) == [(key, newer)]
    pending.add(3, [(key, older)], [12])
    pending.replayed([(key, None)])  # a tombstone drops what is pending of its partition
    assert not pending.is_pending(GROUP, "t", 0) and pending.end(3, commit=True) == []
