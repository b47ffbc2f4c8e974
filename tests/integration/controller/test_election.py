"""Controller election against a real ZooKeeper: one active controller, failover, epochs."""

from __future__ import annotations

from controller.zk_data import ControllerEpochZNode, ControllerZNode
from tests.integration.controller.cluster import Cluster, expire_session, wait_for


def epoch_in_zk(cluster: Cluster) -> int:
    data, _ = cluster.observer.get(ControllerEpochZNode.path)
    return ControllerEpochZNode.decode(data)


def test_exactly_one_active_and_each_failover_bumps_the_persisted_epoch(cluster):
    candidates = [cluster.add_controller(n) for n in (1, 2, 3)]
    first = cluster.active()
    assert first.epoch == 1 == epoch_in_zk(cluster)  # /controller_epoch starts at 0
    data, stat = cluster.observer.get(ControllerZNode.path)
    assert ControllerZNode.decode(data) == first.node_id
    assert stat.ephemeralOwner == cluster.client_of(first).client_id[0]
    wait_for(
        lambda: all(c.active_controller_id == first.node_id for c in candidates),
        "every candidate to see the active controller",
    )

    cluster.kill_controller(first)
    second = cluster.active()
    assert second is not first
    assert second.epoch == 2 == epoch_in_zk(cluster)

    cluster.kill_controller(second)
    third = cluster.active()
    assert third.node_id not in (first.node_id, second.node_id)
    assert third.epoch == 3 == epoch_in_zk(cluster)

    # With every controller gone the epoch stays in ZooKeeper; the next one continues from it.
    cluster.kill_controller(third)
    assert cluster.observer.exists(ControllerZNode.path) is None
    assert epoch_in_zk(cluster) == 3
    fourth = cluster.add_controller(4)
    assert cluster.active() is fourth
    assert fourth.epoch == 4


def test_shutdown_hands_over_without_waiting_for_a_session_timeout(cluster):
    a = cluster.add_controller(1)
    assert cluster.active() is a
    b = cluster.add_controller(2)
    a.shutdown()  # the session stays open: only the resignation frees /controller
    assert cluster.active() is b
    assert b.epoch == 2
    assert not a.is_active
    wait_for(lambda: b.active_controller_id == 2, "b to see itself as the controller")


def test_an_expired_session_resigns_and_the_node_campaigns_again(cluster):
    a = cluster.add_controller(1)
    assert cluster.active() is a
    # Expire a's session for real: a second client on the same session closes it.
    expire_session(cluster.zk_connect, cluster.client_of(a))
    # a notices (LOST), resigns, gets a new session and wins the election again.
    wait_for(lambda: a.is_active and a.epoch == 2, "a to be re-elected with epoch 2")
    assert epoch_in_zk(cluster) == 2


def test_suspended_controller_stops_acting_until_the_connection_is_back(cluster):
    from kazoo.client import KazooState

    from controller.zk_data import TopicPartition
    from odradek.v1 import odradek_pb2 as pb

    one, _two = cluster.add_broker(1), cluster.add_broker(2)
    a = cluster.add_controller(1)
    cluster.create_topic("t", {0: [1, 2]})
    tp = TopicPartition("t", 0)
    before = cluster.state(tp)
    # What kazoo reports when the connection drops (the session may still be alive).
    a._on_zk_state(KazooState.SUSPENDED)
    wait_for(lambda: not a.is_active, "a to stop acting")
    refused = a.alter_partition(pb.AlterPartitionRequest(broker_id=1, broker_epoch=one.epoch))
    assert refused.error_code == 41  # NOT_CONTROLLER
    one.kill()
    wait_for(lambda: a._deferred, "the broker change to be held back")
    assert cluster.state(tp) == before  # nothing was written meanwhile
    a._on_zk_state(KazooState.CONNECTED)  # same session: a carries on as controller
    state = cluster.wait_state(tp, lambda s: s.leader == 2, "the held-back election")
    assert a.is_active and a.epoch == 1 == state.controller_epoch


def test_a_dropped_connection_keeps_the_controller_and_its_epoch(cluster):
    from kazoo.protocol.connection import _CONNECTION_DROP

    from controller.zk_data import TopicPartition

    one, _two = cluster.add_broker(1), cluster.add_broker(2)
    a = cluster.add_controller(1)
    assert cluster.active() is a
    cluster.add_controller(2)  # a candidate ready to take over, should a lose its session
    cluster.create_topic("t", {0: [1, 2]})
    client = cluster.client_of(a)
    session = client.client_id
    states: list[str] = []
    client.add_listener(states.append)
    client._call(_CONNECTION_DROP, client.handler.async_result())  # kazoo's own test hook
    wait_for(lambda: states[-2:] == ["SUSPENDED", "CONNECTED"], "a drop and a reconnection")
    wait_for(lambda: a.is_active, "a acting again")
    assert client.client_id == session
    assert a.epoch == 1 == epoch_in_zk(cluster)
    one.kill()
    state = cluster.wait_state(TopicPartition("t", 0), lambda s: s.leader == 2, "leader 2")
    assert state.controller_epoch == 1
