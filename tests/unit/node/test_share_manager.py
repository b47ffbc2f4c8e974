"""SharePartitionManager over a real replica manager: share partitions created on the leader at
``share.auto.offset.reset``, acquisition through the core's fetch, a waiting ShareFetch made
ready by new records or an expiring lock, and share partitions dropped when the leadership
moves (node.share.manager)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from node.coordinator.group_config import GroupConfig, group_config
from node.coordinator.group_coordinator_config import GroupCoordinatorConfig
from node.core.replica_manager import ReplicaManager
from node.core.requests import LeaderAndIsrPartition, LeaderAndIsrRequest, ProducePartition
from node.share.manager import (
    PendingShareFetch,
    ShareFetchParams,
    SharePartitionManager,
    ShareTarget,
)
from node.share.partition import AcknowledgementBatch, AcquiredRecords
from node.share.volatile_persister import VolatilePersister
from odradek.clock import ManualClock
from tests.storage_helpers import make_batch

T = ShareTarget("t", "tid", 0)
PARAMS = ShareFetchParams(
    max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, max_records=100, batch_size=0
)
LOCK_MS = 30_000


def _lead(rm: ReplicaManager, leader: int = 0, epoch: int = 0) -> None:
    code, _ = rm.become_leader_or_follower(
        LeaderAndIsrRequest(
            controller_id=0,
            controller_epoch=1,
            broker_epoch=7,
            partition_states=(
                LeaderAndIsrPartition(
                    topic="t",
                    partition=0,
                    controller_epoch=1,
                    leader=leader,
                    leader_epoch=epoch,
                    isr=(leader,),
                    partition_epoch=epoch,
                    replicas=(0, 1, 2),
                ),
            ),
            topic_configs={"t": {"min.insync.replicas": "1"}},
        )
    )
    assert code == 0


def _produce(rm: ReplicaManager, count: int) -> None:
    [result] = rm.append_records(
        [ProducePartition(topic="t", partition=0, records=make_batch(count))], acks=1, timeout_ms=0
    )
    assert result.error_code == 0


def _configs(**overrides: str) -> Any:
    config = group_config(overrides, GroupCoordinatorConfig())

    def get(_: str) -> GroupConfig:
        return config

    return get


@pytest.fixture
def manager(replica_manager: ReplicaManager, clock: ManualClock) -> SharePartitionManager:
    _lead(replica_manager)
    m = SharePartitionManager(replica_manager, VolatilePersister(), clock, _configs())
    replica_manager.leadership_listeners.append(m.on_leadership_change)
    return m


def _acquired(answer: Any) -> list[AcquiredRecords]:
    assert isinstance(answer, list)
    [r] = answer
    assert r.error_code == 0
    return list(r.acquired)


def test_latest_then_records_produced_are_acquired(manager, replica_manager) -> None:
    _produce(replica_manager, 2)  # before the share partition: not delivered (latest)
    assert _acquired(manager.fetch_once("g", "m", [T], PARAMS)) == []
    _produce(replica_manager, 3)
    [r] = manager.fetch_once("g", "m", [T], PARAMS)
    assert r.acquired == (AcquiredRecords(2, 4, 1),) and r.records


def test_earliest(replica_manager, clock) -> None:
    _lead(replica_manager)
    _produce(replica_manager, 2)
    m = SharePartitionManager(
        replica_manager,
        VolatilePersister(),
        clock,
        _configs(**{"share.auto.offset.reset": "earliest"}),
    )
    assert _acquired(m.fetch_once("g", "m", [T], PARAMS)) == [AcquiredRecords(0, 1, 1)]


def test_a_waiting_fetch_is_ready_on_new_records_or_an_expired_lock(
    manager, replica_manager, clock
) -> None:
    pending = manager.start_fetch("g", "a", [T], PARAMS)
    assert isinstance(pending, PendingShareFetch) and not pending.ready()
    _produce(replica_manager, 1)
    assert pending.ready()
    assert _acquired(pending.finish()) == [AcquiredRecords(0, 0, 1)]
    other = manager.start_fetch("g", "b", [T], PARAMS)
    assert isinstance(other, PendingShareFetch) and not other.ready()
    clock.advance(LOCK_MS)
    assert other.ready()
    assert _acquired(other.finish()) == [AcquiredRecords(0, 0, 2)]


def test_acknowledge_and_release_member(manager, replica_manager) -> None:
    manager.fetch_once("g", "a", [T], PARAMS)
    _produce(replica_manager, 2)
    assert _acquired(manager.fetch_once("g", "a", [T], PARAMS)) == [AcquiredRecords(0, 1, 1)]
    assert manager.acknowledge("g", "a", T, [AcknowledgementBatch(0, 0, (1,))]) == 0
    assert manager.acknowledge("g", "b", T, [AcknowledgementBatch(1, 1, (1,))]) == 121
    manager.release_member("g", "a")
    assert _acquired(manager.fetch_once("g", "b", [T], PARAMS)) == [AcquiredRecords(1, 1, 2)]


def test_leadership_moving_drops_the_share_partition_and_its_locks(
    manager, replica_manager
) -> None:
    manager.fetch_once("g", "a", [T], PARAMS)
    _produce(replica_manager, 2)
    manager.fetch_once("g", "a", [T], PARAMS)
    _lead(replica_manager, leader=1, epoch=1)
    assert manager.hosted() == []
    [r] = manager.fetch_once("g", "a", [T], PARAMS)
    assert r.error_code == 6  # NOT_LEADER_OR_FOLLOWER
    _lead(replica_manager, leader=0, epoch=2)
    # loaded again from the persister: the acquired records are AVAILABLE, delivered again
    assert _acquired(manager.fetch_once("g", "b", [T], PARAMS)) == [AcquiredRecords(0, 1, 2)]


def test_max_records_zero_only_acknowledges(manager, replica_manager) -> None:
    manager.fetch_once("g", "a", [T], PARAMS)
    _produce(replica_manager, 2)
    only_acks = dataclasses.replace(PARAMS, max_records=0)
    assert _acquired(manager.start_fetch("g", "a", [T], only_acks)) == []
    assert _acquired(manager.start_fetch("g", "a", [T], PARAMS)) == [AcquiredRecords(0, 1, 1)]


def test_a_release_wakes_a_waiting_fetch(manager, replica_manager) -> None:
    manager.fetch_once("g", "a", [T], PARAMS)
    _produce(replica_manager, 1)
    assert _acquired(manager.fetch_once("g", "a", [T], PARAMS)) == [AcquiredRecords(0, 0, 1)]
    pending = manager.start_fetch("g", "b", [T], PARAMS)
    assert isinstance(pending, PendingShareFetch) and not pending.ready()
    woken: list[bool] = []
    stop = pending.subscribe(lambda: woken.append(True))
    try:
        assert manager.acknowledge("g", "a", T, [AcknowledgementBatch(0, 0, (2,))]) == 0
    finally:
        stop()
    assert woken and pending.ready()
    assert _acquired(pending.finish()) == [AcquiredRecords(0, 0, 2)]


def test_a_reset_state_epoch_is_loaded_again(replica_manager, clock) -> None:
    """The share coordinator initialized the share partition again (an offset reset: a new
    state epoch): the leader's next write is refused FENCED_STATE_EPOCH, the share partition
    dropped, and the next ShareFetch loads the reset state."""
    _lead(replica_manager)
    persister = VolatilePersister()
    m = SharePartitionManager(replica_manager, persister, clock, _configs())
    m.fetch_once("g", "a", [T], PARAMS)
    _produce(replica_manager, 4)
    [sp] = m.hosted()
    persister.initialize(sp.key, state_epoch=1, start_offset=3)
    [fenced] = m.fetch_once("g", "a", [T], PARAMS)
    assert (fenced.error_code, fenced.acquired) == (124, ())
    assert m.hosted() == []
    assert _acquired(m.fetch_once("g", "a", [T], PARAMS)) == [AcquiredRecords(3, 3, 1)]
