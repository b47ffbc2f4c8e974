"""The metadata snapshot and cache, bootstrap parsing, and the mapping of wire failures to typed
errors."""

from __future__ import annotations

import threading

import grpc
import pytest

from odradek.client.connection import ConnectionPool, parse_bootstrap_servers
from odradek.client.errors import NetworkError, error_from_code, error_from_rpc, one_line
from odradek.client.metadata import ClusterMetadata, MetadataCache
from odradek.client.types import TopicPartition
from odradek.clock import SystemClock
from odradek.errors import (
    InvalidRequestError,
    LeaderNotAvailableError,
    NotLeaderOrFollowerError,
    RequestTimedOutError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from odradek.v1 import odradek_pb2 as pb

T0 = TopicPartition("t", 0)


def response(epoch: int = 3, leader: int = 1, topic_id: str = "id-1") -> pb.MetadataResponse:
    resp = pb.MetadataResponse(cluster_id="c1", controller_id=2)
    resp.brokers.add(node_id=1, host="h1", port=9092, rack="r1")
    resp.brokers.add(node_id=2, host="::1", port=9093)
    topic = resp.topics.add(name="t", topic_id=topic_id)
    topic.partitions.add(
        partition=1, leader=2, leader_epoch=1, replicas=[2, 1], isr=[2], offline_replicas=[]
    )
    topic.partitions.add(
        partition=0, leader=leader, leader_epoch=epoch, replicas=[1, 2], isr=[1, 2]
    )
    resp.topics.add(name="gone", error_code=3)
    return resp


def test_snapshot_from_a_response():
    meta = ClusterMetadata.from_response(response())
    assert meta.cluster_id == "c1" and meta.controller_id == 2
    assert meta.brokers[1].address == "h1:9092" and meta.brokers[1].rack == "r1"
    assert meta.brokers[2].address == "[::1]:9093" and meta.brokers[2].rack is None
    topic = meta.topics["t"]
    assert [p.partition for p in topic.partitions] == [0, 1]
    p1 = meta.partition(TopicPartition("t", 1))
    assert p1 is not None and p1.under_replicated and not p1.offline
    assert meta.leader_id(T0) == 1 and meta.leader_address(T0) == "h1:9092"
    assert meta.partition(TopicPartition("t", 9)) is None
    gone = meta.topics["gone"].error()
    assert isinstance(gone, UnknownTopicOrPartitionError)


def test_a_lower_leader_epoch_does_not_replace_a_known_one():
    known = ClusterMetadata.from_response(response(epoch=5, leader=1))
    stale = ClusterMetadata.from_response(response(epoch=4, leader=2))
    merged = known.merge(stale, replace_topics=False)
    part = merged.partition(T0)
    assert part is not None and (part.leader, part.leader_epoch) == (1, 5)
    newer = ClusterMetadata.from_response(response(epoch=6, leader=2))
    part = known.merge(newer, replace_topics=False).partition(T0)
    assert part is not None and (part.leader, part.leader_epoch) == (2, 6)


def test_a_recreated_topic_resets_the_epochs():
    known = ClusterMetadata.from_response(response(epoch=5, topic_id="old"))
    recreated = ClusterMetadata.from_response(response(epoch=0, leader=2, topic_id="new"))
    part = known.merge(recreated, replace_topics=False).partition(T0)
    assert part is not None and (part.leader, part.leader_epoch) == (2, 0)


def test_merge_keeps_or_drops_topics_not_in_the_answer():
    known = ClusterMetadata.from_response(response())
    empty = ClusterMetadata.from_response(pb.MetadataResponse(cluster_id="c1"))
    assert "t" in known.merge(empty, replace_topics=False).topics
    assert known.merge(empty, replace_topics=True).topics == {}


def test_leader_hints_need_a_newer_epoch_and_a_known_broker():
    meta = ClusterMetadata.from_response(response(epoch=3, leader=1))
    assert meta.with_leader(T0, 2, 3) is meta  # not newer
    assert meta.with_leader(T0, 7, 9) is meta  # unknown broker
    moved = meta.with_leader(T0, 2, 4)
    part = moved.partition(T0)
    assert part is not None and (part.leader, part.leader_epoch) == (2, 4)
    assert moved.partition(TopicPartition("t", 1)) == meta.partition(TopicPartition("t", 1))


def test_refresh_falls_back_from_dead_nodes_to_the_bootstrap_servers(cluster):
    pool = ConnectionPool()
    try:
        cache = MetadataCache(
            ["127.0.0.1:1", cluster.address(2)], pool, SystemClock(), request_timeout_ms=2000
        )
        cluster.create_topic("t", 2)
        meta = cache.refresh(["t"])
        assert sorted(meta.brokers) == [1, 2, 3]
        assert [p.partition for p in meta.topics["t"].partitions] == [0, 1]
        assert cache.candidates()[0] == cluster.address(2)  # it answered: asked first next time
        assert [req.topics for _, req in cluster.calls_of("Metadata")] == [["t"]]
    finally:
        pool.close()


def test_refresh_with_no_node_answering_is_a_network_error():
    pool = ConnectionPool()
    try:
        cache = MetadataCache(["127.0.0.1:1", "127.0.0.1:2"], pool, SystemClock())
        with pytest.raises(NetworkError, match=r"tried 127.0.0.1:1, 127.0.0.1:2"):
            cache.refresh()
        assert cache.time_to_update_ms(SystemClock().monotonic_ms()) >= 0
    finally:
        pool.close()


def test_wait_for_topic_names_the_missing_topic(cluster):
    pool = ConnectionPool()
    try:
        cache = MetadataCache([cluster.bootstrap], pool, SystemClock(), retry_backoff_ms=10)
        with pytest.raises(UnknownTopicOrPartitionError, match="'nope' not present in metadata"):
            cache.wait_for_topic("nope", 50)
        cluster.create_topic("nope", 3)
        assert len(cache.wait_for_topic("nope", 1000).partitions) == 3
    finally:
        pool.close()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a:1", ["a:1"]),
        ("a:1, b:2,,a:1", ["a:1", "b:2"]),
        ("[::1]:9092", ["[::1]:9092"]),
        (["x:9", "y:10"], ["x:9", "y:10"]),
    ],
)
def test_bootstrap_servers_are_parsed(text, expected):
    assert parse_bootstrap_servers(text) == expected


@pytest.mark.parametrize("text", ["", "a", "a:", ":9", "a:0", "a:70000", "a:x"])
def test_bad_bootstrap_servers_are_refused(text):
    with pytest.raises(ValueError):
        parse_bootstrap_servers(text)


class _Failed(grpc.RpcError, grpc.Call):  # type: ignore[misc]
    def __init__(self, status: grpc.StatusCode, details: str) -> None:
        self._status, self._details = status, details

    def code(self) -> grpc.StatusCode:
        return self._status

    def details(self) -> str:
        return self._details


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (grpc.StatusCode.UNAVAILABLE, NetworkError),
        (grpc.StatusCode.DEADLINE_EXCEEDED, RequestTimedOutError),
        (grpc.StatusCode.UNIMPLEMENTED, UnsupportedVersionError),
        (grpc.StatusCode.INVALID_ARGUMENT, InvalidRequestError),
        (grpc.StatusCode.INTERNAL, UnknownServerError),
    ],
)
def test_grpc_failures_map_to_typed_errors(status, expected):
    error = error_from_rpc(_Failed(status, "went\nwrong"), "n:1")
    assert type(error) is expected
    assert "n:1" in error.message and "\n" not in error.message


def test_error_codes_map_to_typed_errors_with_context():
    error = error_from_code(6, "not here", "t-0")
    assert isinstance(error, NotLeaderOrFollowerError) and error.retriable
    assert error.message == "t-0: not here"
    assert isinstance(error_from_code(5), LeaderNotAvailableError)
    assert isinstance(error_from_code(12345), UnknownServerError)
    assert one_line("a\n b\r\nc") == "a b c"


def test_closing_a_pool_gives_up_on_a_stuck_channel(caplog):
    pool = ConnectionPool()
    pool.broker("127.0.0.1:1")
    release = threading.Event()
    stuck = pool._channels["127.0.0.1:1"]
    real_close = stuck.close

    def close_after_release() -> None:
        release.wait()
        real_close()

    stuck.close = close_after_release  # type: ignore[method-assign]
    try:
        pool.close(timeout=0.05)
        assert "gave up closing 1 gRPC channel(s)" in caplog.text
    finally:
        release.set()
    with pytest.raises(RuntimeError, match="closed"):
        pool.broker("127.0.0.1:2")
