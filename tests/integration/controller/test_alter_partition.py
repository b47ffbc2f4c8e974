"""AlterPartition and ControlledShutdown over gRPC: the Controller service's answers."""

from __future__ import annotations

from concurrent import futures

import grpc
import pytest

from controller.service import ControllerServicer
from controller.zk_data import TopicPartition
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.integration.controller.cluster import CTX, wait_for

TP = TopicPartition("t", 0)


@pytest.fixture
def stubs(cluster):
    """A Controller service per candidate, on loopback."""
    servers, channels, out = [], [], {}
    for node_id in (1, 2):
        controller = cluster.add_controller(node_id)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_ControllerServicer_to_server(ControllerServicer(controller), server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        servers.append(server)
        channels.append(channel)
        out[node_id] = (controller, pb_grpc.ControllerStub(channel))
    yield out
    for channel in channels:
        channel.close()
    for server in servers:
        server.stop(0).wait()


def item(state, new_isr, **overrides):
    fields = {
        "topic": "t",
        "partition": 0,
        "leader_epoch": state.leader_epoch,
        "new_isr": new_isr,
        "partition_epoch": state.partition_epoch,
    }
    fields.update(overrides)
    return pb.AlterPartitionItem(**fields)


def test_alter_partition_answers(cluster, stubs):
    one, two, three = (cluster.add_broker(b) for b in (1, 2, 3))
    active = cluster.active()
    stub = stubs[active.node_id][1]
    other = stubs[3 - active.node_id][1]
    cluster.create_topic("t", {0: [1, 2, 3]})
    three.kill()
    state = cluster.wait_state(TP, lambda s: s.isr == (1, 2), "ISR without 3")

    def send(via, *items, broker_epoch=None):
        return via.AlterPartition(
            pb.AlterPartitionRequest(
                broker_id=1,
                broker_epoch=one.epoch if broker_epoch is None else broker_epoch,
                partitions=list(items),
            ),
            timeout=5,
        )

    assert send(other, item(state, [1])).error_code == 41  # NOT_CONTROLLER
    assert send(stub, item(state, [1]), broker_epoch=one.epoch - 1).error_code == 77
    response = send(
        stub,
        item(state, [1], leader_epoch=state.leader_epoch - 1),
        item(state, [1], partition_epoch=state.partition_epoch - 1),
        item(state, [1, 2, 3]),  # 3 is dead
        item(state, [1], topic="nope"),
    )
    assert response.error_code == 0
    assert [r.error_code for r in response.partitions] == [74, 95, 107, 3]
    assert cluster.state(TP) == state  # nothing written

    [shrunk] = send(stub, item(state, [1])).partitions
    assert shrunk.error_code == 0
    now = cluster.state(TP)
    assert (now.isr, now.leader_epoch) == ((1,), state.leader_epoch)
    assert now.partition_epoch == state.partition_epoch + 1 == shrunk.partition_epoch
    assert (shrunk.leader_id, list(shrunk.isr)) == (1, [1])
    # The same request again is answered with the current state, nothing written.
    [repeat] = send(stub, item(state, [1])).partitions
    assert (repeat.error_code, repeat.partition_epoch) == (0, now.partition_epoch)
    wait_for(
        lambda: (
            (md := two.last_metadata())
            and [list(p.isr) for p in md.partition_states if p.topic == "t"] == [[1]]
        ),
        "UpdateMetadata with the shrunk ISR",
    )


def test_controlled_shutdown_moves_leadership_and_stops_followers(cluster, stubs):
    one, two, three = (cluster.add_broker(b) for b in (1, 2, 3))
    active = cluster.active()
    stub = stubs[active.node_id][1]
    cluster.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 1]})
    cluster.create_topic("single", {0: [1]})
    p0, p1, p2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("single", 0)

    stale = stub.ControlledShutdown(
        pb.ControlledShutdownRequest(broker_id=1, broker_epoch=one.epoch - 1), timeout=5
    )
    assert stale.error_code == 77
    response = stub.ControlledShutdown(
        pb.ControlledShutdownRequest(broker_id=1, broker_epoch=one.epoch), timeout=5
    )
    assert response.error_code == 0
    # p2 has one replica: it stays led by 1 and is not reported, as Kafka's
    # replicatedPartitionsBrokerLeads (else the broker retries controlled.shutdown.max.retries
    # times for nothing before it stops)
    assert [(p.topic, p.partition) for p in response.remaining_partitions] == []
    s0, s1 = cluster.state(p0), cluster.state(p1)
    assert (s0.leader, s0.isr, s0.leader_epoch) == (2, (2, 3), 1)
    assert (s1.leader, s1.isr, s1.leader_epoch) == (2, (2, 3), 1)
    assert cluster.state(p2).leader == 1
    stops = wait_for(lambda: one.stop_replicas(p1), "StopReplica to the follower")
    assert [(s.delete_partition, s.leader_epoch) for s in stops] == [(False, 1)]
    assert one.stop_replicas(p0) == []  # it led p0: it becomes a follower instead
    lai = wait_for(lambda: [p for p in one.leader_and_isr(p0) if p.leader == 2], "LAI to 1")
    assert list(lai[-1].isr) == [2, 3]
    # A broker in controlled shutdown may not rejoin an ISR.
    [rejoin] = (
        ControllerServicer(active)
        .AlterPartition(
            pb.AlterPartitionRequest(
                broker_id=2,
                broker_epoch=two.epoch,
                partitions=[item(s0, [2, 3, 1])],
            ),
            CTX,
        )
        .partitions
    )
    assert rejoin.error_code == 107
    one.kill()
    wait_for(
        lambda: (md := three.last_metadata()) and [b.node_id for b in md.live_brokers] == [2, 3],
        "broker 1 gone from metadata",
    )


def test_controlled_shutdown_of_the_last_isr_member_keeps_its_leadership(cluster, stubs):
    one, two = cluster.add_broker(1), cluster.add_broker(2)
    active = cluster.active()
    cluster.create_topic("t", {0: [1, 2]})
    two.kill()
    cluster.wait_state(TP, lambda s: s.isr == (1,), "ISR [1]")
    response = stubs[active.node_id][1].ControlledShutdown(
        pb.ControlledShutdownRequest(broker_id=1, broker_epoch=one.epoch), timeout=5
    )
    assert [(p.topic, p.partition) for p in response.remaining_partitions] == [("t", 0)]
    assert cluster.state(TP).leader == 1
    unknown = stubs[active.node_id][1].ControlledShutdown(
        pb.ControlledShutdownRequest(broker_id=7, broker_epoch=-1), timeout=5
    )
    assert unknown.error_code == 8  # BROKER_NOT_AVAILABLE
