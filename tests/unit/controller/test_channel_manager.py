"""The controller's per-broker senders, against a fake gRPC channel: order, retries of
transport failures, UpdateMetadata superseding older ones, removal."""

from __future__ import annotations

import threading
import time

import grpc

from controller.channel_manager import ControllerChannelManager
from controller.config import ControllerConfig
from odradek.clock import SystemClock
from odradek.v1 import odradek_pb2 as pb

CONFIG = ControllerConfig(request_timeout_ms=1_000, retry_backoff_ms=1)


class FakeRpcError(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code


class FakeChannel:
    """Records calls as (method, request); ``failures`` are raised first, in order; ``gate``
    holds every call until set."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []
        self.failures: list[grpc.StatusCode] = []
        self.gate = threading.Event()
        self.gate.set()
        self.closed = False
        self.lock = threading.Lock()

    def unary_unary(self, method, request_serializer=None, response_deserializer=None, **_):
        name = method.rsplit("/", 1)[1]

        def call(request, timeout=None):
            self.gate.wait(5)
            with self.lock:
                self.calls.append((name, request))
                if self.failures:
                    raise FakeRpcError(self.failures.pop(0))
            return response_deserializer(b"")

        return call

    def stream_stream(self, method, request_serializer=None, response_deserializer=None, **_):
        def call(request_iterator, timeout=None):
            raise AssertionError(f"the controller opened a stream: {method}")

        return call

    def close(self) -> None:
        self.closed = True


def wait_for(condition, what, timeout_s=5.0):
    clock = SystemClock()
    deadline = clock.monotonic_ms() + int(timeout_s * 1000)
    while not condition():
        assert clock.monotonic_ms() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def manager_with(channel: FakeChannel) -> ControllerChannelManager:
    manager = ControllerChannelManager(CONFIG, lambda target: channel)  # type: ignore[arg-type, return-value]
    manager.add_broker(1, "127.0.0.1:1")
    return manager


def test_transport_failures_are_retried_and_the_answer_goes_to_the_callback():
    channel = FakeChannel()
    channel.failures = [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED]
    manager = manager_with(channel)
    answers: list[object] = []
    try:
        assert manager.send(1, pb.StopReplicaRequest(controller_epoch=3), answers.append)
        wait_for(lambda: answers, "the answer")
        assert [name for name, _ in channel.calls] == ["StopReplica"] * 3
        assert isinstance(answers[0], pb.StopReplicaResponse)
        assert manager.queued(1) == 0
    finally:
        manager.shutdown()
    assert channel.closed


def test_requests_go_in_order_and_a_new_update_metadata_replaces_queued_ones():
    channel = FakeChannel()
    channel.gate.clear()
    manager = manager_with(channel)
    try:
        manager.send(1, pb.LeaderAndIsrRequest(controller_epoch=1))
        wait_for(lambda: manager.queued(1) == 1, "the first request in flight")
        manager.send(1, pb.UpdateMetadataRequest(controller_epoch=1))
        manager.send(1, pb.LeaderAndIsrRequest(controller_epoch=2))
        manager.send(1, pb.UpdateMetadataRequest(controller_epoch=2))
        manager.send(1, pb.StopReplicaRequest(controller_epoch=2))
        manager.send(1, pb.UpdateMetadataRequest(controller_epoch=3))
        channel.gate.set()
        wait_for(lambda: manager.queued(1) == 0, "the queue to drain")
        sent = [(name, r.controller_epoch) for name, r in channel.calls]  # type: ignore[attr-defined]
        assert sent == [
            ("LeaderAndIsr", 1),
            ("LeaderAndIsr", 2),
            ("StopReplica", 2),
            ("UpdateMetadata", 3),
        ]
    finally:
        manager.shutdown()


def test_a_request_the_broker_cannot_serve_is_dropped_not_retried():
    channel = FakeChannel()
    channel.failures = [grpc.StatusCode.UNIMPLEMENTED]
    manager = manager_with(channel)
    answers: list[object] = []
    try:
        manager.send(1, pb.UpdateMetadataRequest(), answers.append)
        manager.send(1, pb.LeaderAndIsrRequest(), answers.append)
        wait_for(lambda: len(answers) == 1, "the second answer")
        assert [name for name, _ in channel.calls] == ["UpdateMetadata", "LeaderAndIsr"]
        assert isinstance(answers[0], pb.LeaderAndIsrResponse)
    finally:
        manager.shutdown()


def test_removing_a_broker_stops_its_retries():
    channel = FakeChannel()
    channel.failures = [grpc.StatusCode.UNAVAILABLE] * 1_000_000
    manager = manager_with(channel)
    try:
        manager.send(1, pb.UpdateMetadataRequest())
        wait_for(lambda: len(channel.calls) >= 3, "a few retries")
        manager.remove_broker(1)
        assert channel.closed
        assert manager.brokers() == set()
        assert not manager.send(1, pb.UpdateMetadataRequest())
        wait_for(
            lambda: not any(t.name == "controller-send-1" for t in threading.enumerate()),
            "the sender thread to end",
        )

    finally:
        manager.shutdown()
