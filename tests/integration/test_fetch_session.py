"""Fetch sessions over real gRPC on loopback, with in-process servers standing in for a leader.

One stream carries many fetches, answered in order; node.replication.fetcher replaces a stream
after its
use window and after a failure; the node's servicer answers a stream as it answers single
fetches."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from node.config import NodeConfig
from node.core.follower_sessions import FollowerSessions
from node.core.requests import FetchPartition, FetchResult
from node.grpc_door.service import ReplicationServicer
from node.grpc_door.unexpected_errors import UnexpectedErrorInterceptor
from node.replication.fetcher import FetchSessions, SessionEndedError
from odradek.clock import ManualClock
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.integration.helpers import wait_for


def _serve_sessions(
    handler: Callable[
        [Iterator[pb.FetchRequest], grpc.ServicerContext], Iterator[pb.FetchResponse]
    ],
) -> tuple[grpc.Server, int]:
    """A server with only Replication.FetchSession, answered by ``handler``."""
    method = grpc.stream_stream_rpc_method_handler(
        handler,
        request_deserializer=pb.FetchRequest.FromString,
        response_serializer=pb.FetchResponse.SerializeToString,
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("odradek.v1.Replication", {"FetchSession": method}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


class CountingLeader:
    """Answers each fetch with its fetch offset as the high watermark; counts the streams."""

    def __init__(self) -> None:
        self.streams = 0
        self.finished = 0  # streams whose handler returned (the follower closed or dropped it)
        self.fail_next_stream = False
        self._lock = threading.Lock()

    def session(
        self, request_iterator: Iterator[pb.FetchRequest], context: grpc.ServicerContext
    ) -> Iterator[pb.FetchResponse]:
        with self._lock:
            self.streams += 1
            fail, self.fail_next_stream = self.fail_next_stream, False
        try:
            for request in request_iterator:
                if fail:
                    context.abort(grpc.StatusCode.UNAVAILABLE, "leader going away")
                fp = request.partitions[0]
                yield pb.FetchResponse(
                    partitions=[
                        pb.FetchPartitionResponse(
                            topic=fp.topic, partition=fp.partition, high_watermark=fp.fetch_offset
                        )
                    ]
                )
        finally:
            with self._lock:
                self.finished += 1


@pytest.fixture
def leader() -> Iterator[tuple[CountingLeader, int]]:
    servicer = CountingLeader()
    server, port = _serve_sessions(servicer.session)
    yield servicer, port
    server.stop(None)


def _request(offset: int) -> pb.FetchRequest:
    return pb.FetchRequest(
        replica_id=1,
        partitions=[pb.FetchPartition(topic="t", partition=0, fetch_offset=offset)],
    )


def _sessions(port: int, clock: ManualClock, tmp_path: Path) -> FetchSessions:
    config = NodeConfig(
        node_id=1, log_dirs=(tmp_path,), zookeeper_connect="unused:1", request_timeout_ms=5000
    )
    stub = pb_grpc.ReplicationStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
    return FetchSessions(stub, config, clock)


def test_fetches_share_one_stream_until_its_use_window_ends(leader, tmp_path):
    servicer, port = leader
    clock = ManualClock()
    sessions = _sessions(port, clock, tmp_path)
    try:
        for offset in range(5):
            assert sessions.fetch(_request(offset)).partitions[0].high_watermark == offset
        assert servicer.streams == 1
        clock.advance(4999)
        sessions.fetch(_request(5))
        assert servicer.streams == 1
        clock.advance(1)  # request_timeout_ms after the stream opened
        assert sessions.fetch(_request(6)).partitions[0].high_watermark == 6
        assert servicer.streams == 2
        sessions.close()
        wait_for(lambda: servicer.finished == 2, "the leader's handlers of both streams to end")
        sessions.fetch(_request(7))
        assert servicer.streams == 3
    finally:
        sessions.close()


def test_a_failed_stream_is_replaced_by_the_next_fetch(leader, tmp_path):
    servicer, port = leader
    sessions = _sessions(port, ManualClock(), tmp_path)
    try:
        servicer.fail_next_stream = True
        with pytest.raises(grpc.RpcError) as failure:
            sessions.fetch(_request(0))
        assert failure.value.code() == grpc.StatusCode.UNAVAILABLE
        assert sessions.fetch(_request(1)).partitions[0].high_watermark == 1
        assert servicer.streams == 2
    finally:
        sessions.close()


class _NoReplicas:
    """The ReplicaManager surface the servicer uses, answering from the request."""

    shutting_down = False

    def __init__(self) -> None:
        self.follower_sessions = FollowerSessions(ManualClock())

    def fetch(
        self, partitions: Sequence[FetchPartition], *, from_follower: bool, **params: int
    ) -> list[FetchResult]:
        assert from_follower
        fp = partitions[0]
        return [FetchResult(topic="t", partition=0, log_end_offset=fp.fetch_offset)]


def _serve_servicer(
    replicas: _NoReplicas,
    servicer: ReplicationServicer | None = None,
    executor: futures.ThreadPoolExecutor | None = None,
) -> tuple[grpc.Server, int]:
    """The node's ReplicationServicer over ``replicas`` (or ``servicer``), served on loopback
    behind the node's last interceptor."""
    server = grpc.server(
        executor or futures.ThreadPoolExecutor(max_workers=2),
        interceptors=[UnexpectedErrorInterceptor()],
    )
    pb_grpc.add_ReplicationServicer_to_server(
        servicer or ReplicationServicer(replicas),  # type: ignore[arg-type]
        server,
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


def test_the_servicer_answers_each_request_of_a_session_in_order_and_refuses_anonymous_ones():
    server, port = _serve_servicer(_NoReplicas())
    try:
        stub = pb_grpc.ReplicationStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
        answers = list(stub.FetchSession(iter([_request(3), _request(7), _request(9)]), timeout=10))
        assert [a.partitions[0].log_end_offset for a in answers] == [3, 7, 9]
        anonymous = pb.FetchRequest(partitions=[pb.FetchPartition(topic="t", partition=0)])
        with pytest.raises(grpc.RpcError) as refused:
            list(stub.FetchSession(iter([_request(1), anonymous]), timeout=10))
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        server.stop(None)


def test_the_servicer_ends_a_session_after_an_answer_once_the_node_is_shutting_down():
    replicas = _NoReplicas()
    replicas.shutting_down = True
    server, port = _serve_servicer(replicas)
    try:
        stub = pb_grpc.ReplicationStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
        answers = list(stub.FetchSession(iter([_request(3), _request(7)]), timeout=10))
        assert [a.partitions[0].log_end_offset for a in answers] == [3]
    finally:
        server.stop(None)


def test_the_servicer_counts_a_followers_session_until_the_call_ends_however_it_ends(tmp_path):
    replicas = _NoReplicas()
    sessions = replicas.follower_sessions
    server, port = _serve_servicer(replicas)
    follower = _sessions(port, ManualClock(), tmp_path)
    try:
        follower.fetch(_request(3))  # node 1's first request names it
        assert sessions.lost_at() == {}
        follower.close()  # cancelled, as when the follower's process dies
        wait_for(lambda: 1 in sessions.lost_at(), "the session counted as lost", 10)
        follower.fetch(_request(4))  # a new session: back
        assert sessions.lost_at() == {}
        # a stream the follower ends itself (half-close) counts the same
        stub = pb_grpc.ReplicationStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
        assert len(list(stub.FetchSession(iter([_request(5)]), timeout=10))) == 1
        assert sessions.lost_at() == {}  # the other session is still open
        follower.close()
        wait_for(lambda: 1 in sessions.lost_at(), "the session counted as lost", 10)
    finally:
        follower.close()
        server.stop(None)


def test_a_session_the_leader_ends_without_answering_raises_session_ended(tmp_path):
    def silent(request_iterator, context):
        return iter(())

    server, port = _serve_sessions(silent)
    sessions = _sessions(port, ManualClock(), tmp_path)
    try:
        with pytest.raises(SessionEndedError):
            sessions.fetch(_request(0))
    finally:
        sessions.close()
        server.stop(None)


def test_a_session_the_follower_cancels_while_the_leader_waits_ends_without_an_error(caplog):
    # a follower replaces its session every request.timeout.ms by cancelling the call; the
    # leader's handler, waiting for the next request, must end quietly (it logged a traceback
    # and answered UNKNOWN_SERVER_ERROR once in every few replacements)
    executor = futures.ThreadPoolExecutor(max_workers=2)
    server, port = _serve_servicer(_NoReplicas(), executor=executor)
    requests: queue.SimpleQueue[pb.FetchRequest | None] = queue.SimpleQueue()
    try:
        stub = pb_grpc.ReplicationStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
        call = stub.FetchSession(iter(requests.get, None), timeout=10)
        answers: Iterator[pb.FetchResponse] = iter(call)
        requests.put(_request(3))
        assert next(answers).partitions[0].log_end_offset == 3  # the handler now waits
        with caplog.at_level(logging.ERROR, logger="node.grpc_door"):
            call.cancel()
            server.stop(None).wait(10)
            executor.shutdown(wait=True)  # the handler, and whatever it logs, has finished
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    finally:
        requests.put(None)
        server.stop(None)
