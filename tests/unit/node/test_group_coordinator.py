"""The coordinator: its partition rule, settings, timers and writes (against a fake replica
manager that accepts every write as replicated)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from node.config import config_from_properties
from node.coordinator.group_coordinator import (
    OFFSETS_TOPIC,
    GroupCoordinator,
    java_string_hash,
    partition_for,
)
from node.coordinator.group_coordinator_config import GroupCoordinatorConfig
from node.coordinator.group_requests import HeartbeatRequest, OffsetCommitPartition
from node.core.metadata_cache import MetadataCache
from node.core.requests import (
    Broker,
    BrokerEndPoint,
    LeaderAndIsrPartition,
    ProducePartition,
    ProduceResult,
    UpdateMetadataRequest,
)
from odradek.clock import ManualClock
from odradek.errors import InvalidConfigError
from odradek.group_records import (
    ConsumerGroupMemberMetadataKey,
    OffsetCommitKey,
    decode_key,
    key_type,
)
from odradek.records import read_batches


def test_java_string_hash() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    # a character outside the BMP is two UTF-16 code units, as in Java
    assert java_string_hash("\U0001f600") == 31 * 0xD83D + 0xDE00
    assert java_string_hash("polygenelubricants") == -(2**31)


def test_partition_for_is_kafkas_utils_abs_modulo() -> None:
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) is 0
    negative = "a" * 7  # overflows to a negative hash
    assert java_string_hash(negative) < 0
    assert partition_for(negative, 50) == abs(java_string_hash(negative)) % 50


def test_settings_from_properties() -> None:
    config = config_from_properties(
        {
            "node.id": "1",
            "log.dirs": "/tmp/x",
            "zookeeper.connect": "z:2181",
            "offsets.topic.num.partitions": "4",
            "group.consumer.session.timeout.ms": "6000",
        }
    )
    assert config.group_coordinator.offsets_topic_num_partitions == 4
    assert config.group_coordinator.group_consumer_session_timeout_ms == 6000
    assert config.group_coordinator.offsets_retention_minutes == 10080
    with pytest.raises(InvalidConfigError):
        GroupCoordinatorConfig(offsets_commit_timeout_ms=0)


# --- the coordinator's timers and writes, against a fake replica manager ----------------------
TID = "AAECAwQFBgcICQoLDA0ODw"


class _FakeLog:
    log_start_offset = 0
    log_end_offset = 0


class _FakePartition:
    log = _FakeLog()


class _FakeReplicas:
    """Accepts every write (as if replicated at once) and keeps the records."""

    node_id = 0

    def __init__(self) -> None:
        self.written: list[tuple[bytes | None, bytes | None]] = []

    def partition(self, topic: str, partition: int) -> _FakePartition:
        return _FakePartition()

    def append_records(
        self, partitions: Sequence[ProducePartition], *, acks: int, timeout_ms: int
    ) -> list[ProduceResult]:
        out = []
        for data in partitions:
            for batch in read_batches(data.records):
                self.written += [(r.key, r.value) for r in batch.records()]
            out.append(ProduceResult(topic=data.topic, partition=data.partition))
        return out

    def start_append(
        self,
        partitions: Sequence[ProducePartition],
        *,
        acks: int,
        timeout_ms: int,
        blocking: bool = True,
    ) -> _Replicated:
        return _Replicated(self.append_records(partitions, acks=acks, timeout_ms=timeout_ms))


class _Replicated:
    """An append already answered (replicated, or failed): nothing to wait for."""

    waits = False

    def __init__(self, results: list[ProduceResult]) -> None:
        self._results = results

    def poll(self) -> list[ProduceResult]:
        return self._results

    def wait(self) -> list[ProduceResult]:
        return self._results


def _coordinator(clock: ManualClock, **config: Any) -> tuple[GroupCoordinator, _FakeReplicas]:
    metadata = MetadataCache()
    metadata.update(
        UpdateMetadataRequest(
            controller_id=-1,
            controller_epoch=1,
            live_brokers=(
                Broker(
                    node_id=0,
                    host="h",
                    port=1,
                    endpoints=(
                        BrokerEndPoint("INTERNAL", "h", 1),
                        BrokerEndPoint("CLIENT", "client.example", 9092, "SSL"),
                    ),
                ),
            ),
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
    replicas = _FakeReplicas()
    coordinator = GroupCoordinator(
        GroupCoordinatorConfig(offsets_topic_num_partitions=1, **config),
        replicas,  # type: ignore[arg-type]
        metadata,
        clock,
        lambda *_: None,
    )
    coordinator.on_leadership_change(OFFSETS_TOPIC, 0, True, 1)
    loaded = threading.Event()
    for _ in range(500):  # the load runs on its own thread: poll for it
        if coordinator._shards[0].loaded:
            loaded.set()
            break
        loaded.wait(0.01)
    assert loaded.is_set()
    return coordinator, replicas


def test_offsets_of_an_empty_group_expire_after_the_retention() -> None:
    clock = ManualClock()
    coordinator, replicas = _coordinator(
        clock, offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000
    )
    commit = [OffsetCommitPartition("t", 1, committed_offset=7)]
    assert coordinator.offset_commit("g", "", -1, commit).partitions[0].error_code == 0
    fetched = coordinator.offset_fetch("g", "", -1, None)
    assert [p.committed_offset for p in fetched.partitions] == [7]
    clock.advance(30_000)
    coordinator.tick()  # not yet expired
    assert len(coordinator.offset_fetch("g", "", -1, None).partitions) == 1
    clock.advance(31_000)
    coordinator.tick()
    fetched = coordinator.offset_fetch("g", "", -1, None)
    assert list(fetched.partitions) == []
    key, value = replicas.written[-1]
    assert key is not None and decode_key(key) == OffsetCommitKey("g", "t", 1) and value is None


def test_a_silent_member_is_removed_after_the_session_timeout() -> None:
    clock = ManualClock()
    coordinator, replicas = _coordinator(clock, group_consumer_session_timeout_ms=5000)
    join = HeartbeatRequest(
        group_id="g",
        member_id="m",
        member_epoch=0,
        rebalance_timeout_ms=1000,
        subscribed_topic_names=("t",),
        owned={},
        client_host="/h",
    )
    response = coordinator.consumer_group_heartbeat(join)
    assert response.error_code == 0 and response.member_epoch == 1
    assert response.assignment is not None
    assert [list(a.partitions) for a in response.assignment] == [[0, 1]]
    clock.advance(4000)
    coordinator.tick()
    described = coordinator.describe_groups(["g"])
    assert len(described[0].members) == 1
    clock.advance(1000)
    coordinator.tick()
    described = coordinator.describe_groups(["g"])
    assert described[0].group_state == "Empty"
    tombstoned = [decode_key(k) for k, v in replicas.written if k is not None and v is None]
    assert ConsumerGroupMemberMetadataKey("g", "m") in tombstoned
    # the expired member's next heartbeat is fenced as unknown
    again = coordinator.consumer_group_heartbeat(
        HeartbeatRequest(group_id="g", member_id="m", member_epoch=1, client_host="/h")
    )
    assert again.error_code == 25
    assert key_type(replicas.written[0][0] or b"\x00\x00") == 5  # member metadata first


def test_a_commit_with_epoch_minus_one_and_a_member_id_needs_only_an_empty_group() -> None:
    """Kafka's ConsumerGroup.validateOffsetCommit ("memberEpoch < 0 && members().isEmpty()"):
    librdkafka's KIP-848 consumer that only assign()s commits with its own member id and epoch
    -1; taken while the group has no members, whatever the id; refused once it has some. An
    OffsetFetch naming a member is checked only by a consumer group (ClassicGroup's and an
    unknown group's fetch answer anything)."""
    clock = ManualClock()
    coordinator, _ = _coordinator(clock, group_consumer_session_timeout_ms=5000)
    commit = [OffsetCommitPartition("t", 0, committed_offset=4)]
    # no group at all
    assert coordinator.offset_commit("g", "rdkafka-member", -1, commit).error_code == 0
    fetched = coordinator.offset_fetch("g", "rdkafka-member", -1, [("t", 0), ("t", 1)])
    assert fetched.error_code == 0
    assert [p.committed_offset for p in fetched.partitions] == [4, -1]
    # a consumer group left empty by its member's leave
    join = HeartbeatRequest(
        group_id="g",
        member_id="m",
        member_epoch=0,
        rebalance_timeout_ms=1000,
        subscribed_topic_names=("t",),
        owned={},
    )
    joined = coordinator.consumer_group_heartbeat(join)
    assert joined.error_code == 0
    # with a member: the assign()-only consumer is no member of it
    refused = coordinator.offset_commit("g", "rdkafka-member", -1, commit)
    assert refused.error_code == 25  # UNKNOWN_MEMBER_ID
    assert coordinator.offset_commit("g", "", -1, commit).error_code == 25
    assert coordinator.offset_commit("g", "m", -1, commit).error_code == 113  # STALE_MEMBER_EPOCH
    assert coordinator.offset_fetch("g", "rdkafka-member", -1, [("t", 0)]).error_code == 25
    assert coordinator.offset_fetch("g", "m", -1, [("t", 0)]).error_code == 113
    left = coordinator.consumer_group_heartbeat(
        HeartbeatRequest(group_id="g", member_id="m", member_epoch=-1)
    )
    assert left.error_code == 0
    assert coordinator.describe_groups(["g"])[0].group_state == "Empty"
    commit = [OffsetCommitPartition("t", 0, committed_offset=9)]
    assert coordinator.offset_commit("g", "rdkafka-member", -1, commit).error_code == 0
    fetched = coordinator.offset_fetch("g", "", -1, [("t", 0)])
    assert [p.committed_offset for p in fetched.partitions] == [9]
    # a consumer group checks a fetch naming a member even when it is empty (Kafka: the id is
    # looked up unless it is null)
    assert coordinator.offset_fetch("g", "rdkafka-member", -1, [("t", 0)]).error_code == 25


def test_requests_for_a_partition_not_led_here() -> None:
    clock = ManualClock()
    coordinator, _ = _coordinator(clock)
    coordinator.on_leadership_change(OFFSETS_TOPIC, 0, False, 2)
    fetched = coordinator.offset_fetch("g", "", -1, [])
    assert fetched.error_code == 16  # NOT_COORDINATOR
    found = coordinator.find_coordinator(["g", ""])
    assert [c.node_id for c in found] == [0, -1]
    assert found[1].error_code == 24  # INVALID_GROUP_ID


def test_find_coordinator_answers_the_endpoint_on_the_requests_listener() -> None:
    coordinator, _ = _coordinator(ManualClock())
    [on_client] = coordinator.find_coordinator(["g"], "CLIENT")
    assert (on_client.node_id, on_client.host, on_client.port) == (0, "client.example", 9092)
    [registered] = coordinator.find_coordinator(["g"])
    assert (registered.host, registered.port) == ("h", 1)
    [none] = coordinator.find_coordinator(["g"], "OTHER")
    assert (none.error_code, none.node_id) == (15, -1)  # COORDINATOR_NOT_AVAILABLE
