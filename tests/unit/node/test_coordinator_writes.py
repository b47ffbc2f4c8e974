"""The coordinator's writes while one ``__consumer_offsets`` partition's replication is held
(node.coordinator.shard_writer): later writes of the shard are appended without waiting for it,
heartbeats and timers go on, reads answer the committed state, and every answer of a write
comes only once the high watermark passed it. A fake replica manager whose appends to a held
partition wait until the test releases them; a manual clock."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

from node.coordinator.group_coordinator import OFFSETS_TOPIC, GroupCoordinator, partition_for
from node.coordinator.group_coordinator_config import GroupCoordinatorConfig
from node.coordinator.group_requests import (
    HeartbeatRequest,
    HeartbeatResponse,
    OffsetCommitPartition,
    OffsetCommitResult,
)
from node.core.metadata_cache import MetadataCache
from node.core.requests import (
    Broker,
    LeaderAndIsrPartition,
    ProducePartition,
    ProduceResult,
    UpdateMetadataRequest,
)
from odradek.clock import ManualClock
from odradek.group_records import ConsumerGroupMemberMetadataKey, OffsetCommitKey, decode_key
from odradek.records import read_batches
from tests.unit.node.test_group_coordinator import TID, _FakePartition, _Replicated

SESSION_MS = 5_000
REQUEST_TIMED_OUT = 7
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20


class _Held:
    """An appended write whose high watermark waits until the test releases it."""

    waits = True

    def __init__(self, results: list[ProduceResult], released: threading.Event) -> None:
        self._results = results
        self._released = released
        self.error_code = 0

    def poll(self) -> list[ProduceResult] | None:
        return self.wait() if self._released.is_set() else None

    def wait(self) -> list[ProduceResult]:
        self._released.wait()
        return [
            ProduceResult(r.topic, r.partition, error_code=self.error_code) for r in self._results
        ]


class _HeldReplicas:
    """Appends every write at once (keeping its records, in append order); a write to a
    partition of ``held`` waits for its replicas until :meth:`release`."""

    node_id = 0

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.written: list[tuple[int, bytes | None, bytes | None]] = []
        self.held: set[int] = set()
        self.pending: list[_Held] = []
        self._released = threading.Event()

    def partition(self, topic: str, partition: int) -> _FakePartition:
        return _FakePartition()

    def start_append(
        self,
        partitions: Sequence[ProducePartition],
        *,
        acks: int,
        timeout_ms: int,
        blocking: bool = True,
    ) -> _Held | _Replicated:
        (data,) = partitions
        with self.lock:
            for batch in read_batches(data.records):
                self.written += [(data.partition, r.key, r.value) for r in batch.records()]
        results = [ProduceResult(data.topic, data.partition)]
        if data.partition not in self.held:
            return _Replicated(results)
        held = _Held(results, self._released)
        self.pending.append(held)
        return held

    def append_records(
        self, partitions: Sequence[ProducePartition], *, acks: int, timeout_ms: int
    ) -> list[ProduceResult]:
        """The real replica manager's: append, then wait on this thread."""
        return self.start_append(partitions, acks=acks, timeout_ms=timeout_ms).wait()

    def release(self, error_code: int = 0) -> None:
        """The held writes' wait ends: replicated, or with ``error_code``."""
        for held in self.pending:
            held.error_code = error_code
        self._released.set()

    def hold(self, partition: int) -> None:
        self.held = {partition}
        self.pending = []
        self._released = threading.Event()

    def keys(self, partition: int) -> list[Any]:
        with self.lock:
            return [decode_key(k) for p, k, _ in self.written if p == partition and k is not None]

    def tombstones(self) -> list[Any]:
        with self.lock:
            return [decode_key(k) for _, k, v in self.written if k is not None and v is None]


def _coordinator(clock: ManualClock) -> tuple[GroupCoordinator, _HeldReplicas]:
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
                *(
                    LeaderAndIsrPartition(
                        topic=OFFSETS_TOPIC, partition=p, leader=0, topic_id="x" * 22
                    )
                    for p in range(2)
                ),
            ),
        )
    )
    replicas = _HeldReplicas()
    coordinator = GroupCoordinator(
        GroupCoordinatorConfig(
            offsets_topic_num_partitions=2, group_consumer_session_timeout_ms=SESSION_MS
        ),
        replicas,  # type: ignore[arg-type]
        metadata,
        clock,
        lambda *_: None,
    )
    for p in range(2):
        coordinator.on_leadership_change(OFFSETS_TOPIC, p, True, 1)
    _eventually(lambda: all(s.loaded for s in coordinator._shards.values()), "shards loaded")
    return coordinator, replicas


def _eventually(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` with a deadline (a deadlock shows as a failure, not a hang)."""
    done = threading.Event()
    for _ in range(2000):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError(f"not within 20 s: {what}")


def _group_on(partition: int, prefix: str) -> str:
    names = (f"{prefix}{i}" for i in range(1000))
    return next(name for name in names if partition_for(name, 2) == partition)


class _Call(threading.Thread):
    """A request on a thread of its own (as the doors' request threads)."""

    def __init__(self, call: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self._call = call
        self.answer: Any = None
        self.start()

    def run(self) -> None:
        self.answer = self._call()

    def done(self) -> bool:
        return not self.is_alive()


def _join(coordinator: GroupCoordinator, group: str, member: str) -> HeartbeatResponse:
    joined = coordinator.consumer_group_heartbeat(
        HeartbeatRequest(
            group_id=group,
            member_id=member,
            member_epoch=0,
            rebalance_timeout_ms=1000,
            subscribed_topic_names=("t",),
            owned={},
        )
    )
    assert joined.error_code == 0
    return joined


def _commit(
    coordinator: GroupCoordinator, group: str, offset: int, member: str = "", epoch: int = -1
) -> OffsetCommitResult:
    return coordinator.offset_commit(
        group, member, epoch, [OffsetCommitPartition("t", 0, committed_offset=offset)]
    )


def _committed(coordinator: GroupCoordinator, group: str) -> int:
    (partition,) = coordinator.offset_fetch(group, "", -1, [("t", 0)]).partitions
    return partition.committed_offset


def test_a_held_write_holds_its_answers_but_not_the_shard() -> None:
    clock = ManualClock()
    coordinator, replicas = _coordinator(clock)
    held_group, second_group, same_shard, other_shard = (
        _group_on(0, "held-"),
        _group_on(0, "second-"),
        _group_on(0, "simple-"),
        _group_on(1, "other-"),
    )
    groups = {"m1": held_group, "m2": second_group}
    for member, group in groups.items():
        assert _join(coordinator, group, member).member_epoch == 1
    assert _commit(coordinator, held_group, 1, "m1", 1).error_code == 0

    replicas.hold(0)
    commit = _Call(lambda: _commit(coordinator, held_group, 10, "m1", 1))
    _eventually(lambda: len(replicas.pending) == 1, "the commit appended")
    # the shard's next write is appended while the first one waits for its replicas
    simple = _Call(lambda: _commit(coordinator, same_shard, 20))
    _eventually(lambda: len(replicas.pending) == 2, "a second write of the shard appended")
    # heartbeats are processed (their sessions restarted) while their answers wait
    clock.advance(SESSION_MS - 1000)
    beats = [
        _Call(
            functools.partial(
                coordinator.consumer_group_heartbeat,
                HeartbeatRequest(group_id=g, member_id=m, member_epoch=1),
            )
        )
        for m, g in groups.items()
    ]
    _eventually(
        lambda: all(
            coordinator._shards[0].sessions[(g, m)] == clock.monotonic_ms() + SESSION_MS
            for m, g in groups.items()
        ),
        "both heartbeats processed",
    )
    # the timers run: nobody expires past the sessions the members started with
    clock.advance(2000)
    tick = _Call(coordinator.tick)
    _eventually(tick.done, "the timers ran while the write waited")
    assert not any(isinstance(k, ConsumerGroupMemberMetadataKey) for k in replicas.tombstones())
    # another shard's commit is answered; reads answer the committed state, without waiting
    assert _commit(coordinator, other_shard, 30).error_code == 0
    assert _committed(coordinator, other_shard) == 30
    assert _committed(coordinator, held_group) == 1
    assert _committed(coordinator, same_shard) == -1
    assert not commit.done() and not simple.done()
    assert not any(b.done() for b in beats)

    replicas.release()
    for call in (commit, simple, *beats):
        _eventually(call.done, "answered once replicated")
    assert commit.answer.error_code == 0 and simple.answer.error_code == 0
    assert [b.answer.error_code for b in beats] == [0, 0]
    assert _committed(coordinator, held_group) == 10
    assert _committed(coordinator, same_shard) == 20
    assert OffsetCommitKey(held_group, "t", 0) in replicas.keys(0)


def test_a_write_not_replicated_in_time_is_answered_but_kept() -> None:
    """As Kafka's coordinator runtime: a write whose wait times out answers
    COORDINATOR_NOT_AVAILABLE, and its records stay applied (they are in the log); a request
    that wrote nothing answers that error too while the write is not known replicated (Kafka's
    would wait for it); the committed state takes the write once the high watermark passes it
    (seen by the timers), or once a later write of the shard is known replicated."""
    clock = ManualClock()
    coordinator, replicas = _coordinator(clock)
    group, later = _group_on(0, "late-"), _group_on(0, "later-")
    replicas.hold(0)
    commit = _Call(lambda: _commit(coordinator, group, 7))
    _eventually(lambda: len(replicas.pending) == 1, "the commit appended")
    replicas.release(REQUEST_TIMED_OUT)
    _eventually(commit.done, "the commit answered")
    assert commit.answer.error_code == 15  # COORDINATOR_NOT_AVAILABLE: the client retries
    assert _committed(coordinator, group) == -1  # not known replicated
    nothing = coordinator.offset_commit(later, "", -1, [])
    assert nothing.error_code == 15
    # the high watermark passes it later: the timers see it
    for held in replicas.pending:
        held.error_code = 0
    coordinator.tick()
    assert _committed(coordinator, group) == 7
    assert coordinator.offset_commit(later, "", -1, []).error_code == 0

    # a write not replicated in time, then a later one that is: both committed
    replicas.hold(0)
    commit = _Call(lambda: _commit(coordinator, group, 8))
    _eventually(lambda: len(replicas.pending) == 1, "the commit appended")
    replicas.release(REQUEST_TIMED_OUT)
    _eventually(commit.done, "the commit answered")
    assert commit.answer.error_code == 15
    replicas.hold(0)
    again = _Call(lambda: _commit(coordinator, later, 1))
    _eventually(lambda: len(replicas.pending) == 1, "a later write appended")
    replicas.release()
    _eventually(again.done, "the later write answered")
    assert again.answer.error_code == 0
    assert _committed(coordinator, group) == 8
    assert _committed(coordinator, later) == 1


def test_a_write_under_the_high_watermark_with_too_few_replicas_is_committed() -> None:
    """NOT_ENOUGH_REPLICAS_AFTER_APPEND: the high watermark passed the write but the ISR shrank
    below min.insync.replicas meanwhile; answered COORDINATOR_NOT_AVAILABLE, and committed."""
    clock = ManualClock()
    coordinator, replicas = _coordinator(clock)
    group = _group_on(0, "shrunk-")
    replicas.hold(0)
    commit = _Call(lambda: _commit(coordinator, group, 5))
    _eventually(lambda: len(replicas.pending) == 1, "the commit appended")
    replicas.release(NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    _eventually(commit.done, "the commit answered")
    assert commit.answer.error_code == 15
    assert _committed(coordinator, group) == 5
    assert coordinator.offset_commit(group, "", -1, []).error_code == 0


def test_unloading_answers_the_waiting_writes_not_coordinator() -> None:
    clock = ManualClock()
    coordinator, replicas = _coordinator(clock)
    group = _group_on(0, "moved-")
    replicas.hold(0)
    commit = _Call(lambda: _commit(coordinator, group, 3))
    _eventually(lambda: len(replicas.pending) == 1, "the commit appended")
    unload = _Call(lambda: coordinator.on_leadership_change(OFFSETS_TOPIC, 0, False, 2))
    _eventually(unload.done, "the unload not held by the waiting write")
    _eventually(commit.done, "answered at the unload")
    assert commit.answer.error_code == 16  # NOT_COORDINATOR
    replicas.release()
