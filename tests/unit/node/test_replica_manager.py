"""The replica manager in one process: LeaderAndIsr, produce with acks, fetches, fencing.

Real logs on disk and a manual clock; no network (the fetchers and the AlterPartition sender
are left out, and what the leader proposes is checked directly).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from node.core.partition import Partition
from node.core.replica_manager import UNKNOWN_SERVER_ERROR_MESSAGE, error_of
from node.core.requests import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    FetchPartition,
    LeaderAndIsrPartition,
    LeaderAndIsrRequest,
    ListOffsetsPartition,
    ProducePartition,
    StopReplicaPartition,
    StopReplicaRequest,
)
from odradek.errors import (
    FencedLeaderEpochError,
    InvalidRequestError,
    InvalidRequiredAcksError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    RequestTimedOutError,
    UnknownLeaderEpochError,
    UnknownTopicOrPartitionError,
)
from odradek.records import Record, build_batch, read_batches
from tests.storage_helpers import make_batch


class _Recorder:
    def __init__(self) -> None:
        self.changes: list[object] = []

    def submit(self, change: object) -> None:
        self.changes.append(change)


@pytest.fixture
def manager(replica_manager):
    replica_manager.alter_partitions = _Recorder()
    return replica_manager


def _leader_and_isr(
    rm, *, leader=0, isr=(0, 1, 2), epoch=0, partition_epoch=0, broker_epoch=7, min_isr="2"
):
    """One LeaderAndIsr for t-0 (replicas 0, 1, 2) from controller epoch 1; its error code and
    partition results."""
    return rm.become_leader_or_follower(
        LeaderAndIsrRequest(
            controller_id=0,
            controller_epoch=1,
            broker_epoch=broker_epoch,
            partition_states=(
                LeaderAndIsrPartition(
                    topic="t",
                    partition=0,
                    controller_epoch=1,
                    leader=leader,
                    leader_epoch=epoch,
                    isr=tuple(isr),
                    partition_epoch=partition_epoch,
                    replicas=(0, 1, 2),
                ),
            ),
            topic_configs={"t": {"min.insync.replicas": min_isr}},
        )
    )


def _lead(rm, *, isr=(0, 1, 2), epoch=0, min_isr="2", partition_epoch=0):
    code, results = _leader_and_isr(
        rm, isr=isr, epoch=epoch, min_isr=min_isr, partition_epoch=partition_epoch
    )
    assert code == 0 and results[0].error_code == 0
    return rm.partition("t", 0)


def _produce(rm, acks, count=3, timeout_ms=0, epoch=-1):
    return rm.append_records(
        [
            ProducePartition(
                topic="t", partition=0, records=make_batch(count), current_leader_epoch=epoch
            )
        ],
        acks=acks,
        timeout_ms=timeout_ms,
    )


def _follower_fetch(rm, replica, offset, *, last_epoch=0, epoch=0):
    return rm.fetch(
        [
            FetchPartition(
                topic="t",
                partition=0,
                fetch_offset=offset,
                partition_max_bytes=1 << 20,
                current_leader_epoch=epoch,
                last_fetched_epoch=last_epoch,
                log_start_offset=0,
            )
        ],
        from_follower=True,
        replica_id=replica,
        broker_epoch=1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
    )[0]


def _consumer_fetch(rm, offset, *, max_wait_ms=0, min_bytes=1):
    return rm.fetch(
        [
            FetchPartition(
                topic="t",
                partition=0,
                fetch_offset=offset,
                partition_max_bytes=1 << 20,
                current_leader_epoch=-1,
            )
        ],
        from_follower=False,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=1 << 20,
    )[0]


def test_acks_1_appends_and_the_hw_waits_for_the_isr(manager):
    _lead(manager)
    [r] = _produce(manager, 1)
    assert (r.error_code, r.base_offset) == (0, 0)
    [r] = _produce(manager, 1, count=2)
    assert r.base_offset == 3
    partition = manager.partition("t", 0)
    assert partition.log.log_end_offset == 5
    assert partition.log.high_watermark == 0  # followers have not fetched
    # consumers see nothing above the high watermark
    assert _consumer_fetch(manager, 0).records == b""
    _follower_fetch(manager, 1, 5)
    assert partition.log.high_watermark == 0  # replica 2 is in the ISR and unknown
    _follower_fetch(manager, 2, 3)
    assert partition.log.high_watermark == 3
    records = _consumer_fetch(manager, 0).records
    assert [b.last_offset for b in read_batches(records)] == [2]


def test_acks_all_waits_for_the_high_watermark_without_blocking_others(manager, clock):
    _lead(manager)
    result: list[Any] = []
    waiter = threading.Thread(
        target=lambda: result.extend(_produce(manager, -1, timeout_ms=60_000)), daemon=True
    )
    waiter.start()
    partition = manager.partition("t", 0)
    while partition.log.log_end_offset < 3:
        threading.Event().wait(0.01)
    # other requests go on while the produce waits
    assert _produce(manager, 1, count=1)[0].base_offset == 3
    _follower_fetch(manager, 1, 3)
    _follower_fetch(manager, 2, 3)
    waiter.join(timeout=10)
    assert not waiter.is_alive()
    [r] = result
    assert (r.error_code, r.base_offset) == (0, 0)


def _start(rm, acks=-1, timeout_ms=60_000):
    return rm.start_append(
        [ProducePartition(topic="t", partition=0, records=make_batch(3))],
        acks=acks,
        timeout_ms=timeout_ms,
    )


def test_a_new_leader_epoch_with_the_same_leader_keeps_a_waiting_write(manager):
    # Kafka's checkEnoughReplicasReachOffset checks only that the replica still leads: an ISR
    # change through the controller bumps the epoch, and the stored write is acknowledged
    _lead(manager)
    pending = _start(manager)
    assert pending.waits
    _lead(manager, epoch=1, partition_epoch=1)
    _follower_fetch(manager, 1, 3, epoch=1)
    _follower_fetch(manager, 2, 3, epoch=1)
    [r] = pending.wait()
    assert (r.error_code, r.base_offset) == (0, 0)


def test_a_write_appended_as_the_replica_becomes_leader_is_acknowledged(manager, monkeypatch):
    """The leadership a write waits in is the one it was appended in, read under the append's
    lock: a LeaderAndIsr making this node leader just before the append took the lock no
    longer fails the stored write (a non-idempotent producer would store it twice)."""
    _leader_and_isr(manager, leader=1, epoch=0)
    real = Partition.append_records_to_leader

    def after_a_leader_and_isr(self, *args, **kwargs):
        monkeypatch.setattr(Partition, "append_records_to_leader", real)
        _leader_and_isr(manager, leader=0, epoch=1, isr=(0,), min_isr="1")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Partition, "append_records_to_leader", after_a_leader_and_isr)
    [r] = _produce(manager, -1, timeout_ms=1000)
    assert (r.error_code, r.base_offset) == (0, 0)
    assert manager.partition("t", 0).log.high_watermark == 3


def test_a_leadership_lost_and_regained_fails_a_waiting_write(manager):
    _lead(manager)
    pending = _start(manager)
    code, _ = _leader_and_isr(manager, leader=1, epoch=1, partition_epoch=1)
    assert code == 0
    _lead(manager, epoch=2, partition_epoch=2)
    _follower_fetch(manager, 1, 3, epoch=2, last_epoch=0)
    _follower_fetch(manager, 2, 3, epoch=2, last_epoch=0)
    [r] = pending.wait()
    assert r.error_code == NotLeaderOrFollowerError.code and r.base_offset == -1


def test_a_polled_write_is_ready_once_the_isr_has_it_and_its_subscriber_is_told_when(manager):
    _lead(manager)
    pending = _start(manager)
    woken: list[str] = []
    stop = pending.subscribe(lambda: woken.append("woken"))
    assert pending.poll() is None  # nobody has fetched it
    _follower_fetch(manager, 1, 3)
    assert pending.poll() is None  # replica 2 is in the ISR and has not
    assert woken == []  # the high watermark has not moved: nothing to re-check
    _follower_fetch(manager, 2, 3)
    assert woken == ["woken"]
    [r] = pending.poll() or []
    assert (r.error_code, r.base_offset) == (0, 0)
    stop()


def test_a_polled_write_of_an_isr_of_one_is_ready_at_once(manager):
    _lead(manager, isr=(0,), min_isr="1")
    [r] = _start(manager).poll() or []
    assert (r.error_code, r.base_offset) == (0, 0)


def test_a_polled_write_answers_its_timeout_and_a_lost_leadership(manager, clock):
    _lead(manager)
    pending = _start(manager, timeout_ms=1000)
    clock.advance(999)
    assert pending.poll() is None and pending.remaining_ms() == 1
    clock.advance(1)
    [r] = pending.poll() or []
    assert (r.error_code, r.base_offset) == (RequestTimedOutError.code, 0)
    moved = _start(manager)
    woken: list[str] = []
    stop = moved.subscribe(lambda: woken.append("woken"))
    _leader_and_isr(manager, leader=1, epoch=1, partition_epoch=1)
    assert woken  # a leadership change wakes every waiting write
    [r] = moved.poll() or []
    assert (r.error_code, r.base_offset) == (NotLeaderOrFollowerError.code, -1)
    stop()


def test_acks_all_times_out_when_followers_do_not_fetch(manager):
    _lead(manager)
    [r] = _produce(manager, -1, timeout_ms=0)
    assert r.error_code == RequestTimedOutError.code
    assert r.base_offset == 0  # written, not replicated in time


def test_a_timed_out_write_logs_what_held_the_high_watermark_once_per_interval(
    manager, clock, caplog
):
    _lead(manager)
    _follower_fetch(manager, 1, 0)
    _produce(manager, 1)  # offsets 0-2: follower 1 fetches them, follower 2 never fetches
    _follower_fetch(manager, 1, 3)
    clock.advance(250)
    with caplog.at_level(logging.WARNING, logger="node.core.partition"):
        [r] = _produce(manager, -1, timeout_ms=0)
        [again] = _produce(manager, -1, timeout_ms=0)
    assert r.error_code == again.error_code == RequestTimedOutError.code
    [warning] = [m for m in caplog.messages if "timed out" in m]
    assert "waiting for the high watermark to reach 6" in warning
    assert "high watermark 0, LEO 6, ISR [0, 1, 2], min ISR 2" in warning
    assert "1: LEO 3, last fetch 250 ms ago, caught up 250 ms ago" in warning
    assert "2: LEO -1, never fetched" in warning
    clock.advance(10_000)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="node.core.partition"):
        _produce(manager, -1, timeout_ms=0)
    assert [m for m in caplog.messages if "timed out" in m]  # the interval passed


def test_not_enough_replicas_is_refused_before_appending(manager):
    partition = _lead(manager, isr=(0,))
    [r] = _produce(manager, -1)
    assert (r.error_code, r.base_offset) == (NotEnoughReplicasError.code, -1)
    assert partition.log.log_end_offset == 0
    # acks=1 is written, but with the ISR under the minimum the HW does not move (Kafka 3.7)
    assert _produce(manager, 1)[0].error_code == 0
    assert partition.log.high_watermark == 0


def test_invalid_acks_and_unknown_partitions(manager):
    _lead(manager)
    [r] = _produce(manager, 2)
    assert r.error_code == InvalidRequiredAcksError.code
    assert manager.partition("t", 0).log.log_end_offset == 0
    [result] = manager.append_records(
        [ProducePartition(topic="nope", partition=0, records=b"")], acks=1, timeout_ms=0
    )
    assert result.error_code == UnknownTopicOrPartitionError.code


def test_leader_epoch_fencing(manager):
    _lead(manager, epoch=3)
    assert _produce(manager, 1, epoch=2)[0].error_code == FencedLeaderEpochError.code
    assert _produce(manager, 1, epoch=4)[0].error_code == UnknownLeaderEpochError.code
    assert _produce(manager, 1, epoch=3)[0].error_code == 0


def test_stale_leader_and_isr_is_ignored_and_a_new_leader_elsewhere_demotes(manager):
    partition = _lead(manager, epoch=2)
    _lead(manager, epoch=1)  # stale: ignored
    assert partition.is_leader and partition.leader_epoch == 2
    _leader_and_isr(manager, leader=1, epoch=3, isr=(1, 2), partition_epoch=1)
    assert not partition.is_leader
    assert _produce(manager, 1)[0].error_code == NotLeaderOrFollowerError.code


def test_stale_controller_epoch_is_refused(manager):
    _lead(manager)
    code, _ = manager.become_leader_or_follower(
        LeaderAndIsrRequest(controller_id=1, controller_epoch=0, broker_epoch=7)
    )
    assert code == 11  # STALE_CONTROLLER_EPOCH
    code, _ = manager.become_leader_or_follower(
        LeaderAndIsrRequest(controller_id=1, controller_epoch=1, broker_epoch=3)
    )
    assert code == 77  # STALE_BROKER_EPOCH


def test_a_newer_broker_epoch_is_accepted(manager):
    """The controller may send with a registration's epoch before the node has stored it
    (the znode is visible to the controller first); that request must be applied."""
    partition = _lead(manager)
    code, results = _leader_and_isr(
        manager, leader=1, epoch=1, isr=(1, 2), partition_epoch=1, broker_epoch=8
    )
    assert code == 0 and results[0].error_code == 0
    assert not partition.is_leader


def test_follower_fetch_answers_a_diverging_epoch(manager):
    _lead(manager, epoch=0)
    _produce(manager, 1, count=5)
    _lead(manager, epoch=2, partition_epoch=1)
    _produce(manager, 1, count=5)  # epoch 2 starts at offset 5
    # a follower that wrote offsets up to 8 in epoch 1 (never seen by this leader)
    r = _follower_fetch(manager, 1, 9, last_epoch=1, epoch=2)
    assert r.diverging_epoch is not None
    assert (r.diverging_epoch.epoch, r.diverging_epoch.end_offset) == (0, 5)
    assert r.records == b""
    r = _follower_fetch(manager, 1, 5, last_epoch=0, epoch=2)
    assert r.diverging_epoch is None
    assert [b.base_offset for b in read_batches(r.records)] == [5]


def test_consumer_fetch_with_its_last_fetched_epoch_answers_a_diverging_epoch(manager):
    """Fetch v12+: a consumer naming the epoch of its last fetched record is checked as a
    follower is (Kafka's ``readRecords``); -1 (what clients send) is not checked."""
    _lead(manager, epoch=0, isr=(0,), min_isr="1")
    _produce(manager, 1, count=5)
    _lead(manager, epoch=2, isr=(0,), min_isr="1", partition_epoch=1)
    _produce(manager, 1, count=5)  # epoch 2 starts at offset 5

    def fetch(offset: int, last_epoch: int) -> Any:
        return manager.fetch(
            [
                FetchPartition(
                    topic="t",
                    partition=0,
                    fetch_offset=offset,
                    partition_max_bytes=1 << 20,
                    last_fetched_epoch=last_epoch,
                )
            ],
            from_follower=False,
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 20,
        )[0]

    r = fetch(7, 1)  # records of an epoch 1 this log never had
    assert r.error_code == 0 and r.records == b""
    assert r.diverging_epoch is not None
    assert (r.diverging_epoch.epoch, r.diverging_epoch.end_offset) == (0, 5)
    r = fetch(5, 0)
    assert r.diverging_epoch is None
    assert [b.base_offset for b in read_batches(r.records)] == [5]
    assert fetch(7, -1).diverging_epoch is None


def test_follower_catching_up_is_proposed_for_the_isr(manager):
    _lead(manager, isr=(0, 1), min_isr="1")
    _produce(manager, 1, count=4)
    _follower_fetch(manager, 1, 4)
    assert manager.partition("t", 0).log.high_watermark == 4
    _follower_fetch(manager, 2, 2)
    assert manager.alter_partitions.changes == []
    _follower_fetch(manager, 2, 4)
    [change] = manager.alter_partitions.changes
    assert change.new_isr == (0, 1, 2)


def test_a_late_answer_to_an_isr_change_no_longer_pending_is_ignored(manager, clock):
    """Shrink A is in flight; a LeaderAndIsr of the same leader epoch settles the ISR; the
    leader proposes expansion B; A's late answer must not drop B's pending replica from the
    maximal ISR (Kafka ignores an answer whose proposed state is gone)."""
    partition = _lead(manager, min_isr="1")
    _follower_fetch(manager, 1, 0)
    clock.advance(60_000)
    _follower_fetch(manager, 1, 0)
    shrink = partition.maybe_shrink_isr()
    assert shrink is not None and shrink.new_isr == (0, 1)
    _leader_and_isr(
        manager, isr=(0, 1), partition_epoch=1, min_isr="1"
    )  # settled by the controller
    _produce(manager, 1, count=3)
    _follower_fetch(manager, 1, 3)
    _follower_fetch(manager, 2, 3)
    expand = manager.alter_partitions.changes[-1]
    assert expand.new_isr == (0, 1, 2) and partition.maximal_isr == {0, 1, 2}
    partition.complete_isr_change(shrink, error=None, isr=(0, 1), leader_epoch=0, partition_epoch=1)
    assert partition.maximal_isr == {0, 1, 2}  # B still pending
    partition.complete_isr_change(
        expand, error=None, isr=(0, 1, 2), leader_epoch=0, partition_epoch=2
    )
    assert partition.isr == {0, 1, 2} and partition.partition_epoch == 2


def _stop_replica(rm, *, leader_epoch, delete=False):
    return rm.stop_replicas(
        StopReplicaRequest(
            controller_id=0,
            controller_epoch=1,
            broker_epoch=7,
            partitions=(StopReplicaPartition("t", 0, delete, leader_epoch),),
        )
    )


def test_a_stop_replica_older_than_the_replicas_epoch_is_refused(manager):
    """KIP-570: a late copy of a StopReplica must not take a newer leadership offline."""
    partition = _lead(manager, epoch=2)
    code, [result] = _stop_replica(manager, leader_epoch=1)
    assert code == 0 and result.error_code == FencedLeaderEpochError.code
    assert partition.is_leader
    code, [result] = _stop_replica(manager, leader_epoch=2)
    assert (code, result.error_code) == (0, 0)
    assert not partition.is_leader
    _lead(manager, epoch=3)
    # a topic being deleted (epoch -2) and no epoch (-1) always apply
    code, [result] = _stop_replica(manager, leader_epoch=-2, delete=True)
    assert (code, result.error_code) == (0, 0)
    assert manager.partition("t", 0) is None


def test_consumer_long_poll_wakes_on_new_data(manager, clock):
    _lead(manager, isr=(0,), min_isr="1")
    got: list[Any] = []
    poller = threading.Thread(
        target=lambda: got.append(_consumer_fetch(manager, 0, max_wait_ms=60_000)), daemon=True
    )
    poller.start()
    threading.Event().wait(0.1)
    assert got == []
    _produce(manager, 1, count=2)
    poller.join(timeout=10)
    assert not poller.is_alive()
    assert [b.last_offset for b in read_batches(got[0].records)] == [1]


def test_out_of_range_fetch(manager):
    _lead(manager, isr=(0,), min_isr="1")
    _produce(manager, 1, count=2)
    r = _consumer_fetch(manager, 5)
    assert r.error_code == OffsetOutOfRangeError.code


def test_an_untyped_exception_is_answered_without_its_text(caplog):
    """Issue 27.4: UNKNOWN_SERVER_ERROR with a fixed sentence; the exception goes to the log."""
    err = error_of(ValueError("invalid target timestamp -99"))
    assert err.code == -1 and err.message == UNKNOWN_SERVER_ERROR_MESSAGE
    assert "ValueError" in caplog.text and "-99" in caplog.text
    io = error_of(FileNotFoundError(2, "No such file or directory", "/secret/path"))
    assert (io.code, io.message) == (56, "I/O error: No such file or directory")


def test_a_non_blocking_append_leaves_what_would_block_to_append_blocked(manager):
    """The Kafka door appends on its event loop: a partition whose log's lock another thread
    holds is left unwritten, the rest answered, and ``append_blocked`` (a request thread's)
    appends it; the answer keeps the request's order and waits for its replicas."""
    partition = _lead(manager)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with partition.log._lock:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    try:
        pending = manager.start_append(
            [
                ProducePartition(topic="t", partition=0, records=make_batch(3)),
                ProducePartition(topic="nowhere", partition=0, records=make_batch(1)),
            ],
            acks=-1,
            timeout_ms=60_000,
            blocking=False,
        )
        assert pending.blocked
        assert partition.log.log_end_offset == 0
        with pytest.raises(RuntimeError, match="append_blocked"):
            pending.poll()
    finally:
        release.set()
        holder.join()
    pending.append_blocked()
    assert not pending.blocked and partition.log.log_end_offset == 3
    assert pending.poll() is None  # appended; the followers have not fetched it
    _follower_fetch(manager, 1, 3)
    _follower_fetch(manager, 2, 3)
    done, unknown = pending.poll() or []
    assert (done.topic, done.error_code, done.base_offset) == ("t", 0, 0)
    assert (unknown.topic, unknown.error_code) == ("nowhere", UnknownTopicOrPartitionError.code)


def test_a_non_blocking_append_that_can_is_made_at_once(manager):
    partition = _lead(manager, isr=(0,), min_isr="1")
    pending = manager.start_append(
        [ProducePartition(topic="t", partition=0, records=make_batch(3))],
        acks=-1,
        timeout_ms=60_000,
        blocking=False,
    )
    assert not pending.blocked and partition.log.log_end_offset == 3
    [r] = pending.poll() or []
    assert (r.error_code, r.base_offset) == (0, 0)


def _list_latest(rm, isolation_level, timestamp=-1):
    (result,) = rm.list_offsets(
        [ListOffsetsPartition("t", 0, timestamp)], isolation_level=isolation_level
    )
    assert result.error_code == 0, result
    return result.offset


def test_list_offsets_read_committed_is_bounded_by_the_last_stable_offset(manager):
    # Kafka's fetchOffsetForTimestamp: a read_committed consumer's latest offset (its end
    # offset, where its lag ends) is the last stable offset, and no lookup finds a record of
    # an open transaction
    _lead(manager, isr=(0,), min_isr="1")
    assert _produce(manager, acks=1)[0].error_code == 0  # offsets 0-2
    open_txn = build_batch(
        [Record(key=None, value=b"pending", timestamp=5_000)] * 2,
        producer_id=5,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    (appended,) = manager.append_records(
        [ProducePartition(topic="t", partition=0, records=open_txn)], acks=1, timeout_ms=0
    )
    assert appended.error_code == 0 and appended.base_offset == 3
    assert _list_latest(manager, READ_UNCOMMITTED) == 5
    assert _list_latest(manager, READ_COMMITTED) == 3
    assert _list_latest(manager, READ_UNCOMMITTED, timestamp=5_000) == 3
    assert _list_latest(manager, READ_COMMITTED, timestamp=5_000) == -1
    with pytest.raises(InvalidRequestError):
        manager.list_offsets([ListOffsetsPartition("t", 0, -1)], isolation_level=7)
