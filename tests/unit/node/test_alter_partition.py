"""AlterPartitionManager against a scripted controller on loopback: which answers it retries."""

from __future__ import annotations

import itertools
import logging
import threading
from concurrent import futures

import grpc

from node.core.metadata_cache import MetadataCache
from node.core.partition import IsrChange
from node.core.requests import Broker, UpdateMetadataRequest
from node.replication.alter_partition import AlterPartitionManager
from odradek.errors import NotControllerError, StaleBrokerEpochError, UnknownServerError
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

CHANGE = IsrChange("t", 0, leader_epoch=3, new_isr=(0, 1), partition_epoch=5)


class ScriptedController(pb_grpc.ControllerServicer):
    """Answers AlterPartition with the next of ``errors`` (request-level codes), then accepts."""

    def __init__(self, errors: list[int]) -> None:
        self.errors = errors
        self.requests: list[pb.AlterPartitionRequest] = []

    def AlterPartition(self, request, context):  # noqa: N802
        self.requests.append(request)
        if self.errors:
            return pb.AlterPartitionResponse(error_code=self.errors.pop(0))
        return pb.AlterPartitionResponse(
            partitions=[
                pb.AlterPartitionResult(
                    topic=i.topic,
                    partition=i.partition,
                    leader_epoch=i.leader_epoch,
                    isr=list(i.new_isr),
                    partition_epoch=i.partition_epoch + 1,
                )
                for i in request.partitions
            ]
        )

    def ControlledShutdown(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not scripted")

    def BrokerHeartbeat(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not scripted")


class RecordingPartition:
    def __init__(self) -> None:
        self.answers: list[tuple[object, tuple[int, ...], int]] = []
        self.answered = threading.Event()
        self.isr: frozenset[int] = frozenset()  # read around a commit (the ISR change metrics)

    def complete_isr_change(self, change, *, error, isr=(), leader_epoch=-1, partition_epoch=-1):
        self.answers.append((error, tuple(isr), partition_epoch))
        if error is None:
            self.isr = frozenset(isr)
        self.answered.set()


def run(errors: list[int]) -> tuple[ScriptedController, RecordingPartition]:
    controller = ScriptedController(errors)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_ControllerServicer_to_server(controller, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    metadata = MetadataCache()
    metadata.update(
        UpdateMetadataRequest(
            controller_id=9,
            controller_epoch=1,
            live_brokers=(Broker(node_id=9, host="127.0.0.1", port=port),),
        )
    )
    partition = RecordingPartition()
    epochs = itertools.chain([41], itertools.repeat(42))
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    manager = AlterPartitionManager(
        node_id=0,
        metadata=metadata,
        partition_for=lambda topic, p: partition,  # type: ignore[arg-type,return-value]
        channel_for=lambda target: channel,
        broker_epoch=lambda: next(epochs),
        retry_backoff_ms=10,
    )
    try:
        manager.submit(CHANGE)
        assert partition.answered.wait(10), "the change was never answered"
    finally:
        manager.shutdown()
        channel.close()
        server.stop(None)
    return controller, partition


def test_stale_broker_epoch_is_retried_with_the_current_epoch():
    """The controller may not have seen this node's new registration yet: Kafka's
    AlterPartitionManager retries, and so must we (the change was not applied)."""
    controller, partition = run([StaleBrokerEpochError.code])
    assert [r.broker_epoch for r in controller.requests] == [41, 42]
    assert partition.answers == [(None, (0, 1), 6)]


def test_other_request_errors_end_the_change():
    controller, partition = run([UnknownServerError.code])
    assert len(controller.requests) == 1
    [(error, isr, _)] = partition.answers
    assert isinstance(error, UnknownServerError) and isr == ()


def test_a_streak_of_retries_logs_its_first_at_info_and_the_rest_at_debug(caplog):
    """A controller that keeps answering NOT_CONTROLLER is retried every backoff: one INFO
    line says so, not one per retry."""
    caplog.set_level(logging.DEBUG, logger="node.replication.alter_partition")
    controller, partition = run([NotControllerError.code] * 4)
    assert len(controller.requests) == 5
    assert partition.answers == [(None, (0, 1), 6)]
    retries = [r for r in caplog.records if "retrying" in r.getMessage()]
    assert [r.levelno for r in retries] == [logging.INFO] + [logging.DEBUG] * 3
