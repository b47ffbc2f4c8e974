"""The share coordinator room (node.share_coordinator.share_coordinator) over a replica manager
stand-in whose ``__share_group_state`` log keeps what is appended: a call answered only after
its record is written (acks=-1, at the shard's leader epoch), a failed write changing nothing,
NOT_COORDINATOR for a partition not led, COORDINATOR_LOAD_IN_PROGRESS while loading, a new
leader's load replaying snapshots and tombstones, delete writing a tombstone, FindCoordinator's
key parsing, and what the coordinator tells its metrics."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from node.core.metadata_cache import MetadataCache
from node.core.requests import (
    Broker,
    LeaderAndIsrPartition,
    ProducePartition,
    ProduceResult,
    UpdateMetadataRequest,
)
from node.share.persister import DeliveryState, ShareKey, ShareSnapshot, ShareStateBatch
from node.share_coordinator.share_coordinator import ShareCoordinator, parse_share_key
from node.share_coordinator.share_coordinator_config import ShareCoordinatorConfig
from odradek.clock import ManualClock
from odradek.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    FencedStateEpochError,
    InvalidRequestError,
    NotCoordinatorError,
)
from odradek.records import read_batches
from odradek.share_state_records import SHARE_GROUP_STATE_TOPIC, decode_share_key

TOPIC_ID = "AQIDBAUGBwgJCgsMDQ4PEA"
KEY = ShareKey("g", TOPIC_ID, 0)


class _Read:
    def __init__(self, records: bytes) -> None:
        self.records = records


class _Log:
    def __init__(self) -> None:
        self.batches: list[bytes] = []
        self.gate: threading.Event | None = None  # a load waits on it

    @property
    def log_start_offset(self) -> int:
        return 0

    @property
    def log_end_offset(self) -> int:
        return len(self.batches)

    def read(self, offset: int, max_bytes: int) -> _Read:
        if self.gate is not None:
            self.gate.wait(10)
        out = bytearray()
        for i, raw in enumerate(self.batches[offset:], start=offset):
            out += i.to_bytes(8, "big") + raw[8:]  # the batch's base offset
        return _Read(bytes(out))


class _Hosted:
    def __init__(self, log: _Log) -> None:
        self.log = log


@dataclass
class _Replicas:
    node_id: int = 0
    log: _Log = field(default_factory=_Log)
    fail_next: int = 0
    epochs: list[int] = field(default_factory=list)

    def partition(self, topic: str, partition: int) -> _Hosted:
        return _Hosted(self.log)

    def append_records(
        self, partitions: Sequence[ProducePartition], *, acks: int, timeout_ms: int
    ) -> list[ProduceResult]:
        assert acks == -1
        (data,) = partitions
        self.epochs.append(data.current_leader_epoch)
        if self.fail_next:
            self.fail_next -= 1
            return [ProduceResult(data.topic, data.partition, error_code=7)]  # timed out
        self.log.batches.append(data.records)
        return [ProduceResult(data.topic, data.partition, base_offset=len(self.log.batches) - 1)]


@dataclass
class _Events:
    loads: int = 0
    writes: list[bool] = field(default_factory=list)

    def partition_loaded(self, load_ms: int, now_ms: int) -> None:
        self.loads += 1

    def write_done(self, latency_ms: int, durable: bool) -> None:
        self.writes.append(durable)


def _metadata() -> MetadataCache:
    metadata = MetadataCache()
    metadata.update(
        UpdateMetadataRequest(
            controller_id=0,
            controller_epoch=1,
            live_brokers=(Broker(node_id=0, host="h", port=1),),
            partition_states=(
                LeaderAndIsrPartition(
                    topic=SHARE_GROUP_STATE_TOPIC, partition=0, leader=0, topic_id="x" * 22
                ),
            ),
        )
    )
    return metadata


def _coordinator(
    replicas: _Replicas | None = None, events: _Events | None = None, epoch: int = 5
) -> tuple[ShareCoordinator, _Replicas]:
    replicas = replicas or _Replicas()
    coordinator = ShareCoordinator(
        ShareCoordinatorConfig(share_coordinator_state_topic_num_partitions=1),
        replicas,  # type: ignore[arg-type]
        _metadata(),
        ManualClock(),
        lambda *_: None,
        events,
    )
    coordinator.on_leadership_change(SHARE_GROUP_STATE_TOPIC, 0, True, epoch)
    _wait_loaded(coordinator)
    return coordinator, replicas


def _wait_loaded(coordinator: ShareCoordinator) -> None:
    loaded = threading.Event()
    for _ in range(1000):
        if coordinator.loaded_partitions() == 1:
            loaded.set()
            break
        loaded.wait(0.01)
    assert loaded.is_set()


BATCHES = (
    ShareStateBatch(10, 14, DeliveryState.ACKNOWLEDGED, 1),
    ShareStateBatch(15, 15, DeliveryState.AVAILABLE, 2),
)


def test_calls_write_at_the_shard_epoch_and_a_new_leader_replays_them() -> None:
    events = _Events()
    coordinator, replicas = _coordinator(events=events)
    coordinator.initialize(KEY, state_epoch=1, start_offset=10)
    assert coordinator.read(KEY, leader_epoch=3) == ShareSnapshot(1, 10, 3, ())
    coordinator.write(KEY, ShareSnapshot(1, 10, 3, BATCHES))
    other = ShareKey("g", TOPIC_ID, 1)
    coordinator.initialize(other, 0, 0)
    coordinator.delete(other)
    assert replicas.epochs == [5, 5, 5, 5, 5]
    assert events.writes == [True] * 5 and events.loads == 1
    (batch,) = read_batches(replicas.log.batches[-1])
    (last,) = batch.records()
    assert last.key is not None and last.value is None  # the delete's tombstone
    assert decode_share_key(last.key).partition == 1

    # the next leader (same log, a later epoch) replays it all
    coordinator.on_leadership_change(SHARE_GROUP_STATE_TOPIC, 0, False, 5)
    with pytest.raises(NotCoordinatorError):
        coordinator.read(KEY, 3)
    follower, _ = _coordinator(replicas, epoch=6)
    assert follower.read(KEY, leader_epoch=3) == ShareSnapshot(1, 10, 3, BATCHES)
    assert follower.read_summary(other).start_offset == -1
    assert follower.read_summary(KEY).state_epoch == 1


def test_a_failed_write_changes_nothing() -> None:
    events = _Events()
    coordinator, replicas = _coordinator(events=events)
    coordinator.initialize(KEY, 1, 0)
    replicas.fail_next = 1
    with pytest.raises(CoordinatorNotAvailableError):
        coordinator.write(KEY, ShareSnapshot(1, 5, 0, BATCHES))
    assert coordinator.read(KEY, -1) == ShareSnapshot(1, 0, -1, ())
    assert events.writes[:2] == [True, False]


def test_fencing_is_answered_without_a_write() -> None:
    coordinator, replicas = _coordinator()
    coordinator.initialize(KEY, 2, 0)
    written = len(replicas.log.batches)
    with pytest.raises(FencedStateEpochError):
        coordinator.write(KEY, ShareSnapshot(1, 0, 0, ()))
    assert len(replicas.log.batches) == written


def test_load_in_progress_then_served() -> None:
    seed, seeded = _coordinator()
    seed.initialize(KEY, 1, 7)
    replicas = _Replicas(log=seeded.log)
    replicas.log.gate = threading.Event()
    coordinator = ShareCoordinator(
        ShareCoordinatorConfig(share_coordinator_state_topic_num_partitions=1),
        replicas,  # type: ignore[arg-type]
        _metadata(),
        ManualClock(),
        lambda *_: None,
    )
    coordinator.on_leadership_change(SHARE_GROUP_STATE_TOPIC, 0, True, 1)
    with pytest.raises(CoordinatorLoadInProgressError):
        coordinator.read_summary(KEY)
    replicas.log.gate.set()
    _wait_loaded(coordinator)
    assert coordinator.read_summary(KEY).start_offset == 7


def test_find_coordinator_keys() -> None:
    coordinator, _ = _coordinator()
    assert parse_share_key(f"my:group:{TOPIC_ID}:3") == ShareKey("my:group", TOPIC_ID, 3)
    for bad in ("g", f"g:{TOPIC_ID}", f"g:{TOPIC_ID}:x", f":{TOPIC_ID}:0", "g:nope:0"):
        with pytest.raises(InvalidRequestError):
            parse_share_key(bad)
    found, malformed = coordinator.find_coordinator([f"g:{TOPIC_ID}:0", "g:x"])
    assert (found.node_id, found.host, found.port, found.error_code) == (0, "h", 1, 0)
    assert malformed.error_code == InvalidRequestError.code
