"""The persister's channel (node.replication.share_state_channel) over a coordinator stand-in on
this node: the coordinator's retriable errors (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE) retried until it answers, the others raised at once as
PersisterError with their code, a deadline ending the retries, a topic not created yet asked
for, and a coordinator on another node that is not reached retried as COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

import socket
from typing import Any

import grpc
import pytest

from node.core.metadata_cache import MetadataCache
from node.core.requests import Broker, LeaderAndIsrPartition, UpdateMetadataRequest
from node.replication.share_state_channel import ShareStateChannel
from node.share.persister import PersisterError, ShareKey, ShareSnapshot, ShareSummary
from odradek.clock import SystemClock
from odradek.errors import (
    CoordinatorLoadInProgressError,
    FencedStateEpochError,
    NotCoordinatorError,
    OdradekError,
)
from odradek.share_state_records import SHARE_GROUP_STATE_TOPIC

KEY = ShareKey("g", "AQIDBAUGBwgJCgsMDQ4PEA", 0)


class _Coordinator:
    def __init__(self, failures: list[OdradekError]) -> None:
        self.failures = failures
        self.calls = 0
        self.creates = 0

    def partition_for(self, key: ShareKey) -> int:
        return 0

    def maybe_create_topic(self) -> None:
        self.creates += 1

    def _answer(self, value: Any) -> Any:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return value

    def read(self, key: ShareKey, leader_epoch: int) -> ShareSnapshot:
        return self._answer(ShareSnapshot(1, 5, leader_epoch))  # type: ignore[no-any-return]

    def read_summary(self, key: ShareKey) -> ShareSummary:
        return self._answer(ShareSummary(1, 5))  # type: ignore[no-any-return]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _metadata(leader: int = 0, topic: bool = True) -> MetadataCache:
    metadata = MetadataCache()
    metadata.update(
        UpdateMetadataRequest(
            controller_id=0,
            controller_epoch=1,
            live_brokers=(
                Broker(node_id=0, host="127.0.0.1", port=1),
                Broker(node_id=1, host="127.0.0.1", port=_closed_port()),
            ),
            partition_states=(
                LeaderAndIsrPartition(
                    topic=SHARE_GROUP_STATE_TOPIC, partition=0, leader=leader, topic_id="x" * 22
                ),
            )
            if topic
            else (),
        )
    )
    return metadata


def _channel(
    coordinator: _Coordinator, metadata: MetadataCache, deadline_ms: int = 30_000
) -> ShareStateChannel:
    channels: dict[str, grpc.Channel] = {}

    def channel_for(target: str) -> grpc.Channel:
        return channels.setdefault(target, grpc.insecure_channel(target))

    return ShareStateChannel(
        0,
        coordinator,  # type: ignore[arg-type]
        metadata,
        channel_for,
        SystemClock(),
        timeout_ms=1_000,
        deadline_ms=deadline_ms,
        backoff_ms=1,
        max_backoff_ms=4,
    )


def test_retriable_errors_are_retried_until_the_coordinator_answers() -> None:
    coordinator = _Coordinator(
        [
            NotCoordinatorError("moved"),
            CoordinatorLoadInProgressError("loading"),
            NotCoordinatorError("moved"),
        ]
    )
    assert _channel(coordinator, _metadata()).read(KEY, 7) == ShareSnapshot(1, 5, 7)
    assert coordinator.calls == 4


def test_other_errors_are_raised_at_once_with_their_code() -> None:
    coordinator = _Coordinator([FencedStateEpochError("old")])
    with pytest.raises(PersisterError) as e:
        _channel(coordinator, _metadata()).read_summary(KEY)
    assert e.value.error_code == 124
    assert coordinator.calls == 1


def test_the_deadline_ends_the_retries_with_the_last_error() -> None:
    coordinator = _Coordinator([CoordinatorLoadInProgressError("loading")] * 10_000)
    with pytest.raises(PersisterError) as e:
        _channel(coordinator, _metadata(), deadline_ms=50).read(KEY, 0)
    assert e.value.error_code == 14
    assert coordinator.calls >= 1


def test_a_missing_topic_is_asked_for_and_retried() -> None:
    coordinator = _Coordinator([])
    with pytest.raises(PersisterError) as e:
        _channel(coordinator, _metadata(topic=False), deadline_ms=50).read(KEY, 0)
    assert e.value.error_code == 15  # COORDINATOR_NOT_AVAILABLE
    assert coordinator.creates >= 1 and coordinator.calls == 0


def test_an_unreachable_coordinator_is_coordinator_not_available() -> None:
    coordinator = _Coordinator([])
    with pytest.raises(PersisterError) as e:
        _channel(coordinator, _metadata(leader=1), deadline_ms=300).read(KEY, 0)
    assert e.value.error_code == 15
    assert coordinator.calls == 0
