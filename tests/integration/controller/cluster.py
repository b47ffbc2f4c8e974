"""A small cluster for controller tests: real ZooKeeper, controller candidates with their own
ZooKeeper sessions, and stand-in brokers.

A stand-in broker is a broker registration (its own KazooClient, so killing it is closing that
session) plus an in-process gRPC server on 127.0.0.1 that implements the Replication service
by recording every LeaderAndIsr, UpdateMetadata and StopReplica it receives and answering
NONE. Tests act as the brokers' replicas themselves (AlterPartition, ControlledShutdown).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent import futures
from typing import Any, TypeVar, cast

import grpc
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from controller.controller import Controller, ControllerConfig
from controller.registration import BrokerRegistration
from controller.service import ControllerServicer
from controller.zk_data import (
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
    TopicPartition,
    TopicPartitionStateZNode,
    TopicZNode,
)
from node.admin.admin_manager import AdminManager
from node.admin.authorization import AuthorizedAdmin
from node.grpc_door.admin_service import AdminServicer
from odradek.clock import SystemClock
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

CTX = cast(grpc.ServicerContext, None)
"""Servicers called in-process get no gRPC context (they do not use it)."""

SESSION_TIMEOUT_S = 4.0
CONFIG = ControllerConfig(request_timeout_ms=3_000, retry_backoff_ms=50)
_clock = SystemClock()

M = TypeVar("M")


def new_client(zk_connect: str) -> KazooClient:
    client = KazooClient(hosts=zk_connect, timeout=SESSION_TIMEOUT_S)
    client.start(timeout=15)
    return client


def close_client(client: KazooClient | None) -> None:
    if client is not None:
        client.stop()
        client.close()


def expire_session(zk_connect: str, client: KazooClient, attempts: int = 5) -> None:
    """Expire ``client``'s session for real: a twin client joins the session and closes it.

    While the twin connects, ZooKeeper drops the session's older connection, and ``client``
    may reconnect and take the session back, dropping the twin's (``ConnectionLoss``); the
    twin then tries again. The twin is always stopped: one left reconnecting in the background
    would outlive the test (and its retry jitter draws on the global ``random`` module, which
    Hypothesis reports as a strategy using ``random`` in a later property test)."""
    for attempt in range(attempts):
        twin = KazooClient(hosts=zk_connect, client_id=client.client_id, timeout=4.0)
        try:
            twin.start(timeout=15)
        except (ConnectionLoss, KazooTimeoutError):
            close_client(twin)
            if attempt == attempts - 1:
                raise
            continue
        close_client(twin)  # closeSession: the server expires the session now
        return


def wait_for(condition: Callable[[], Any], what: str, timeout_s: float = 15.0) -> Any:
    """Poll ``condition`` until it returns something truthy; fail with ``what`` at the
    deadline. Returns the truthy value."""
    deadline = _clock.monotonic_ms() + int(timeout_s * 1000)
    while True:
        value = condition()
        if value:
            return value
        if _clock.monotonic_ms() >= deadline:
            raise AssertionError(f"timed out waiting for {what} (last: {value!r})")
        time.sleep(0.02)


class RecordingReplication(pb_grpc.ReplicationServicer):
    """Records the controller's requests; answers NONE (or ``stop_replica_error``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[Any] = []
        self.stop_replica_error = 0

    def _record(self, request: Any) -> None:
        with self._lock:
            self._requests.append(request)

    def requests(self, kind: type[M]) -> list[M]:
        with self._lock:
            return [r for r in self._requests if isinstance(r, kind)]

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()

    def LeaderAndIsr(self, request, context):  # noqa: N802 - gRPC method names
        self._record(request)
        return pb.LeaderAndIsrResponse()

    def UpdateMetadata(self, request, context):  # noqa: N802
        self._record(request)
        return pb.UpdateMetadataResponse()

    def StopReplica(self, request, context):  # noqa: N802
        self._record(request)
        return pb.StopReplicaResponse(error_code=self.stop_replica_error)

    def Fetch(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not a real broker")

    def FetchSession(self, request_iterator, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not a real broker")

    def OffsetForLeaderEpoch(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not a real broker")

    def WriteTxnMarkers(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not a real broker")

    def VerifyTxnPartitions(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not a real broker")

    def InitializeShareGroupState(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not a real broker")

    def ReadShareGroupState(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not a real broker")

    def WriteShareGroupState(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not a real broker")

    def DeleteShareGroupState(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not a real broker")

    def ReadShareGroupStateSummary(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not a real broker")


class FakeBroker:
    """A registered broker that only records what the controller tells it."""

    def __init__(self, zk_connect: str, node_id: int, rack: str | None = None) -> None:
        self.zk_connect = zk_connect
        self.node_id = node_id
        self.rack = rack
        self.replication = RecordingReplication()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_ReplicationServicer_to_server(self.replication, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.zk: KazooClient | None = None
        self.registration: BrokerRegistration | None = None

    @property
    def epoch(self) -> int:
        return self.registration.broker_epoch if self.registration is not None else -1

    def start(self) -> int:
        """Register (again, after :meth:`kill`): a new session, a new broker epoch."""
        assert self.zk is None
        self.zk = new_client(self.zk_connect)
        self.registration = BrokerRegistration(
            self.zk, self.node_id, "127.0.0.1", self.port, self.rack
        )
        return self.registration.register()

    def kill(self) -> None:
        """Close the broker's ZooKeeper session: its registration disappears at once."""
        close_client(self.zk)
        self.zk = None

    def close(self) -> None:
        self.kill()
        self.server.stop(0).wait()

    def leader_and_isr(self, tp: TopicPartition) -> list[pb.PartitionState]:
        return [
            p
            for r in self.replication.requests(pb.LeaderAndIsrRequest)
            for p in r.partition_states
            if (p.topic, p.partition) == (tp.topic, tp.partition)
        ]

    def stop_replicas(self, tp: TopicPartition) -> list[pb.StopReplicaPartition]:
        return [
            p
            for r in self.replication.requests(pb.StopReplicaRequest)
            for p in r.partitions
            if (p.topic, p.partition) == (tp.topic, tp.partition)
        ]

    def last_metadata(self) -> pb.UpdateMetadataRequest | None:
        requests = self.replication.requests(pb.UpdateMetadataRequest)
        return requests[-1] if requests else None

    def wait_known(self) -> None:
        """Wait until the active controller has taken this registration in (it sends
        UpdateMetadata with this broker epoch)."""
        wait_for(
            lambda: (md := self.last_metadata()) is not None and md.broker_epoch == self.epoch,
            f"the controller to know broker {self.node_id} (epoch {self.epoch})",
        )


class Cluster:
    """Controllers, stand-in brokers and an observer session on one chroot."""

    def __init__(self, zk_connect: str) -> None:
        self.zk_connect = zk_connect
        self.clock = SystemClock()
        self.observer = new_client(zk_connect)
        self.brokers: dict[int, FakeBroker] = {}
        self.controllers: list[tuple[Controller, KazooClient]] = []
        self.admin = AdminServicer(AuthorizedAdmin(AdminManager(self.observer, self.clock), None))

    # -- members ----------------------------------------------------------------------------

    def add_broker(self, node_id: int, rack: str | None = None) -> FakeBroker:
        broker = FakeBroker(self.zk_connect, node_id, rack)
        self.brokers[node_id] = broker
        broker.start()
        return broker

    def add_controller(self, node_id: int, config: ControllerConfig = CONFIG) -> Controller:
        client = new_client(self.zk_connect)
        controller = Controller(client, node_id, self.clock, config)
        self.controllers.append((controller, client))
        controller.startup()
        return controller

    def client_of(self, controller: Controller) -> KazooClient:
        return next(c for ctl, c in self.controllers if ctl is controller)

    def kill_controller(self, controller: Controller) -> None:
        """Close the controller's ZooKeeper session (a crash), then stop its threads."""
        close_client(self.client_of(controller))
        controller.shutdown()

    def active(self) -> Controller:
        """The one active controller (waits until there is exactly one)."""

        def single() -> Controller | None:
            active = [c for c, _ in self.controllers if c.is_active]
            return active[0] if len(active) == 1 else None

        controller: Controller = wait_for(single, "exactly one active controller")
        return controller

    # -- ZooKeeper reads --------------------------------------------------------------------

    def state(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        if self.observer.exists(TopicPartitionStateZNode.path(tp)) is None:
            return None
        data, stat = self.observer.get(TopicPartitionStateZNode.path(tp))
        return TopicPartitionStateZNode.decode(data, stat.version)

    def assignment(self, topic: str) -> TopicAssignment | None:
        try:
            data, _ = self.observer.get(TopicZNode.path(topic))
        except NoNodeError:  # never created, or deleted (a deletion may finish at any moment)
            return None
        return TopicZNode.decode(topic, data)

    def wait_state(
        self, tp: TopicPartition, check: Callable[[LeaderIsrAndControllerEpoch], bool], what: str
    ) -> LeaderIsrAndControllerEpoch:
        state: LeaderIsrAndControllerEpoch = wait_for(
            lambda: (s := self.state(tp)) is not None and check(s) and s, f"{tp}: {what}"
        )
        return state

    # -- admin and broker requests ----------------------------------------------------------

    def create_topic(
        self, name: str, assignment: dict[int, list[int]], configs: dict[str, str] | None = None
    ) -> None:
        response = self.admin.CreateTopics(
            pb.CreateTopicsRequest(
                topics=[
                    pb.CreatableTopic(
                        name=name,
                        num_partitions=-1,
                        replication_factor=-1,
                        assignments=[
                            pb.ReplicaAssignment(partition=p, broker_ids=r)
                            for p, r in assignment.items()
                        ],
                        configs=configs or {},
                    )
                ],
                timeout_ms=10_000,
            ),
            CTX,
        )
        assert response.topics[0].error_code == 0, response

    def alter_isr(
        self,
        tp: TopicPartition,
        new_isr: list[int],
        controller: Controller | None = None,
        expect: int = 0,
    ) -> pb.AlterPartitionResult:
        """The partition's current leader asks for ``new_isr`` (with the current epochs)."""
        controller = controller or self.active()
        state = self.state(tp)
        assert state is not None
        leader = self.brokers[state.leader]
        response = ControllerServicer(controller).AlterPartition(
            pb.AlterPartitionRequest(
                broker_id=leader.node_id,
                broker_epoch=leader.epoch,
                partitions=[
                    pb.AlterPartitionItem(
                        topic=tp.topic,
                        partition=tp.partition,
                        leader_epoch=state.leader_epoch,
                        new_isr=new_isr,
                        partition_epoch=state.partition_epoch,
                    )
                ],
            ),
            CTX,
        )
        assert response.error_code == 0, response
        assert response.partitions[0].error_code == expect, response
        return response.partitions[0]

    def close(self) -> None:
        for controller, client in self.controllers:
            controller.shutdown()
            close_client(client)
        for broker in self.brokers.values():
            broker.close()
        close_client(self.observer)
