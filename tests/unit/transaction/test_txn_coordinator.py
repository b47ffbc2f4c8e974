"""The transaction coordinator room (node.transaction.txn_coordinator) over a replica manager
stand-in that keeps what is written to ``__transaction_state``, and a marker channel that
records what it is asked to send: InitProducerId's epochs, a commit's markers and completion,
the fence of an open transaction by a new producer, a timed-out transaction aborted, a write
that fails, one id's slow write not holding another's, DescribeTransactions and
ListTransactions, and what the coordinator tells its metrics (open transactions by state,
completed commits and aborts, timeouts)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from node.core.metadata_cache import MetadataCache
from node.core.requests import (
    Broker,
    LeaderAndIsrPartition,
    ProducePartition,
    ProduceResult,
    UpdateMetadataRequest,
)
from node.transaction.txn_config import TransactionConfig
from node.transaction.txn_coordinator import TransactionCoordinator
from odradek.clock import ManualClock
from odradek.records import read_batches
from odradek.txn_records import (
    TRANSACTION_STATE_TOPIC,
    TransactionStatus,
    decode_txn_key,
    decode_txn_value,
)


class _FakeLog:
    log_start_offset = 0
    log_end_offset = 0


class _FakePartition:
    log = _FakeLog()


class _Replicas:
    node_id = 0

    def __init__(self) -> None:
        self.written: list[tuple[str, TransactionStatus | None, int]] = []
        self.fail_next = 0
        self.hold: dict[str, threading.Event] = {}

    def partition(self, topic: str, partition: int) -> _FakePartition:
        return _FakePartition()

    def append_records(
        self, partitions: Sequence[ProducePartition], *, acks: int, timeout_ms: int
    ) -> list[ProduceResult]:
        (data,) = partitions
        (batch,) = read_batches(data.records)
        (record,) = batch.records()
        assert record.key is not None
        tid = decode_txn_key(record.key).transactional_id
        held = self.hold.get(tid)
        if held is not None:
            held.wait(10)
        if self.fail_next:
            self.fail_next -= 1
            return [ProduceResult(data.topic, data.partition, error_code=7)]  # timed out
        value = decode_txn_value(record.value)
        self.written.append(
            (
                tid,
                None if value is None else value.status,
                -1 if value is None else value.producer_epoch,
            )
        )
        return [ProduceResult(data.topic, data.partition, base_offset=len(self.written))]


@dataclass
class _Markers:
    sent: list[tuple[str, int, int, bool, int, tuple[tuple[str, int], ...]]] = field(
        default_factory=list
    )
    callbacks: list[Callable[[], None]] = field(default_factory=list)

    def send(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Iterable[tuple[str, int]],
        on_done: Callable[[], None],
    ) -> None:
        self.sent.append(
            (
                transactional_id,
                producer_id,
                producer_epoch,
                commit,
                coordinator_epoch,
                tuple(partitions),
            )
        )
        self.callbacks.append(on_done)

    def complete_all(self) -> None:
        callbacks, self.callbacks = self.callbacks, []
        for done in callbacks:
            done()


class _ProducerIds:
    def __init__(self) -> None:
        self.next = 1000

    def generate_producer_id(self) -> int:
        self.next += 1
        return self.next


@dataclass
class _Events:
    completed: list[bool] = field(default_factory=list)
    timed_out: int = 0
    loads: list[tuple[int, int]] = field(default_factory=list)

    def transaction_completed(self, commit: bool) -> None:
        self.completed.append(commit)

    def transaction_timed_out(self) -> None:
        self.timed_out += 1

    def partition_loaded(self, load_ms: int, now_ms: int) -> None:
        self.loads.append((load_ms, now_ms))


def _coordinator(
    clock: ManualClock, events: _Events | None = None
) -> tuple[TransactionCoordinator, _Replicas, _Markers]:
    metadata = MetadataCache()
    metadata.update(
        UpdateMetadataRequest(
            controller_id=0,
            controller_epoch=1,
            live_brokers=(Broker(node_id=0, host="h", port=1),),
            partition_states=(
                LeaderAndIsrPartition(
                    topic=TRANSACTION_STATE_TOPIC, partition=0, leader=0, topic_id="x" * 22
                ),
            ),
        )
    )
    replicas, markers = _Replicas(), _Markers()
    coordinator = TransactionCoordinator(
        TransactionConfig(transaction_state_log_num_partitions=1),
        replicas,  # type: ignore[arg-type]
        metadata,
        clock,
        lambda *_: None,
        _ProducerIds(),  # type: ignore[arg-type]
        markers,
        events,
    )
    coordinator.on_leadership_change(TRANSACTION_STATE_TOPIC, 0, True, 5)
    loaded = threading.Event()
    for _ in range(500):
        if coordinator._shards[0].loaded:
            loaded.set()
            break
        loaded.wait(0.01)
    assert loaded.is_set()
    return coordinator, replicas, markers


S = TransactionStatus


def test_init_add_commit_and_complete(clock: ManualClock) -> None:
    coordinator, replicas, markers = _coordinator(clock)
    first = coordinator.init_producer_id("app", 60_000)
    assert (first.error_code, first.producer_id, first.producer_epoch) == (0, 1001, 0)
    again = coordinator.init_producer_id("app", 60_000)
    assert (again.producer_id, again.producer_epoch) == (1001, 1)
    assert coordinator.add_partitions("app", 1001, 1, [("t", 0), ("t", 1)]) == 0
    assert coordinator.add_partitions("app", 1001, 0, [("t", 2)]) == 90  # PRODUCER_FENCED
    assert coordinator.end_txn("app", 1001, 1, commit=True) == 0
    assert markers.sent == [("app", 1001, 1, True, 5, (("t", 0), ("t", 1)))]
    assert coordinator.end_txn("app", 1001, 1, commit=True) == 51  # completing: retry
    markers.complete_all()
    assert coordinator.end_txn("app", 1001, 1, commit=True) == 0  # a retry of a done commit
    assert [status for _, status, _ in replicas.written] == [
        S.EMPTY,
        S.EMPTY,
        S.ONGOING,
        S.PREPARE_COMMIT,
        S.COMPLETE_COMMIT,
    ]
    (described,) = coordinator.describe_transactions(["app"])
    assert (described.state, described.producer_epoch, described.partitions) == (
        "CompleteCommit",
        1,
        (),
    )
    assert coordinator.describe_transactions(["other"])[0].error_code == 105


def test_a_new_producer_fences_an_open_transaction(clock: ManualClock) -> None:
    coordinator, _, markers = _coordinator(clock)
    old = coordinator.init_producer_id("app", 60_000)
    assert coordinator.add_partitions("app", old.producer_id, 0, [("t", 0)]) == 0
    fenced = coordinator.init_producer_id("app", 60_000)
    assert fenced.error_code == 51  # CONCURRENT_TRANSACTIONS: the old one is being aborted
    assert markers.sent == [("app", old.producer_id, 1, False, 5, (("t", 0),))]
    assert coordinator.end_txn("app", old.producer_id, 0, commit=True) == 90
    assert coordinator.init_producer_id("app", 60_000).error_code == 51  # not yet complete
    markers.complete_all()
    new = coordinator.init_producer_id("app", 60_000)
    assert (new.error_code, new.producer_epoch) == (0, 2)


def test_a_transaction_past_its_timeout_is_aborted(clock: ManualClock) -> None:
    coordinator, _, markers = _coordinator(clock)
    producer = coordinator.init_producer_id("slow", 1_000)
    assert coordinator.add_partitions("slow", producer.producer_id, 0, [("t", 0)]) == 0
    coordinator.tick()
    assert markers.sent == []
    clock.advance(20_000)
    coordinator.tick()
    assert markers.sent == [("slow", producer.producer_id, 1, False, 5, (("t", 0),))]
    markers.complete_all()
    (listed,) = coordinator.list_transactions()
    assert (listed.transactional_id, listed.state) == ("slow", "CompleteAbort")
    assert coordinator.end_txn("slow", producer.producer_id, 0, commit=True) == 90


def test_a_failed_write_changes_nothing(clock: ManualClock) -> None:
    coordinator, replicas, _ = _coordinator(clock)
    producer = coordinator.init_producer_id("app", 60_000)
    replicas.fail_next = 1
    assert coordinator.add_partitions("app", producer.producer_id, 0, [("t", 0)]) == 15
    assert coordinator.describe_transactions(["app"])[0].state == "Empty"
    assert coordinator.add_partitions("app", producer.producer_id, 0, [("t", 0)]) == 0


def test_one_ids_slow_write_does_not_hold_another(clock: ManualClock) -> None:
    coordinator, replicas, _ = _coordinator(clock)
    coordinator.init_producer_id("slow", 60_000)
    replicas.hold["slow"] = threading.Event()
    answers: list[Any] = []
    waiting = threading.Thread(
        target=lambda: answers.append(coordinator.init_producer_id("slow", 60_000))
    )
    waiting.start()
    try:
        other = coordinator.init_producer_id("fast", 60_000)
        assert other.error_code == 0 and not answers  # answered while "slow" still waits
        assert coordinator.init_producer_id("slow", 60_000).error_code == 51  # its write pends
    finally:
        replicas.hold["slow"].set()
        waiting.join(10)
    assert answers[0].error_code == 0


def test_listing_filters_by_state_and_producer(clock: ManualClock) -> None:
    coordinator, _, _ = _coordinator(clock)
    a = coordinator.init_producer_id("a", 60_000)
    coordinator.init_producer_id("b", 60_000)
    assert coordinator.add_partitions("a", a.producer_id, 0, [("t", 0)]) == 0
    clock.advance(5_000)
    assert [t.transactional_id for t in coordinator.list_transactions(["Ongoing"])] == ["a"]
    assert [
        t.transactional_id for t in coordinator.list_transactions(producer_ids=[a.producer_id])
    ] == ["a"]
    assert [t.transactional_id for t in coordinator.list_transactions(min_duration_ms=4_000)] == [
        "a"
    ]
    assert coordinator.list_transactions(min_duration_ms=6_000) == []


def test_the_metrics_are_told_of_completions_and_timeouts(clock: ManualClock) -> None:
    events = _Events()
    coordinator, _, markers = _coordinator(clock, events)
    assert events.loads == [(0, clock.monotonic_ms())]  # the shard's load (no clock step in it)
    none_open = {"Ongoing": 0, "PrepareCommit": 0, "PrepareAbort": 0}
    assert coordinator.open_transactions() == none_open
    a = coordinator.init_producer_id("a", 60_000)
    b = coordinator.init_producer_id("b", 60_000)
    slow = coordinator.init_producer_id("slow", 1_000)
    for tid, producer in (("a", a), ("b", b), ("slow", slow)):
        assert coordinator.add_partitions(tid, producer.producer_id, 0, [("t", 0)]) == 0
    assert coordinator.open_transactions() == {**none_open, "Ongoing": 3}
    assert coordinator.end_txn("a", a.producer_id, 0, commit=True) == 0
    assert coordinator.end_txn("b", b.producer_id, 0, commit=False) == 0
    assert coordinator.open_transactions() == {
        "Ongoing": 1,
        "PrepareCommit": 1,
        "PrepareAbort": 1,
    }
    assert events.completed == []  # not before the markers are written
    markers.complete_all()
    assert sorted(events.completed) == [False, True]
    clock.advance(20_000)
    coordinator.tick()
    assert events.timed_out == 1
    assert coordinator.open_transactions() == {**none_open, "PrepareAbort": 1}
    markers.complete_all()
    assert sorted(events.completed) == [False, False, True]
    assert coordinator.open_transactions() == none_open
