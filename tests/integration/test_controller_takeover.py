"""A killed controller is replaced by a standby before its ZooKeeper session ends.

The cluster keeps a long ZooKeeper session (30 s), so that a new controller within it is the
standbys' doing (controller.controller_takeover): a node's heartbeat that cannot reach the
controller has its controller candidate probe the controller's address, and nothing listening
there is the evidence to take the role over at once, fenced by the controller epoch.
"""

from __future__ import annotations

from kazoo.client import KazooClient

from controller.zk_data import ControllerEpochZNode, ControllerZNode
from deploy.local.cluster import LocalCluster
from odradek import Admin, NewTopic, Producer
from tests.integration.helpers import consume_all, partition_state, wait_for, wait_for_full_isr

LONG_ZOOKEEPER_SESSION = {"zookeeper_session_timeout_ms": "30000"}


def _zookeeper(cluster: LocalCluster) -> tuple[set[int], int, int]:
    """The registered node ids, ``/controller``'s id and ``/controller_epoch``, as ZooKeeper
    has them now."""
    zk = KazooClient(hosts=cluster.zookeeper.connect_string + cluster.chroot)
    zk.start(timeout=10)
    try:
        registered = {int(c) for c in zk.get_children("/brokers/ids")}
        found = zk.exists(ControllerZNode.path)
        controller = ControllerZNode.decode(zk.get(ControllerZNode.path)[0]) if found else -1
        epoch = ControllerEpochZNode.decode(zk.get(ControllerEpochZNode.path)[0])
        return registered, controller, epoch
    finally:
        zk.stop()
        zk.close()


def test_a_killed_controller_that_leads_is_replaced_while_its_session_stands(make_cluster):
    cluster = make_cluster(**LONG_ZOOKEEPER_SESSION)
    admin = Admin(cluster.bootstrap_servers)
    controller = admin.describe_cluster().controller_id
    # the controller leads the partition: a leader+controller fault
    order = sorted(range(3), key=lambda n: n != controller)
    result = admin.create_topics(
        [NewTopic("t", assignments={0: order}, configs={"min.insync.replicas": "2"})]
    )
    assert result == {"t": None}
    wait_for_full_isr(admin, "t")
    assert partition_state(admin, "t").leader == controller
    _, _, epoch_before = _zookeeper(cluster)
    with Producer(cluster.bootstrap_servers) as producer:
        producer.send("t", b"before", partition=0).result(30)
        cluster.node(controller).kill()
        successor = wait_for(
            lambda: (c := _zookeeper(cluster)[1]) not in (-1, controller) and c,
            "another controller",
        )
        registered, _, epoch = _zookeeper(cluster)
        # taken over, not elected after the dead controller's ZooKeeper session (30 s) ended
        assert controller in registered
        assert epoch == epoch_before + 1
        wait_for(lambda: partition_state(admin, "t").leader not in (-1, controller), "a new leader")
        producer.send("t", b"after", partition=0).result(30)
        assert controller in _zookeeper(cluster)[0]
        # the dead session's end takes its registration, not the successor's /controller
        wait_for(lambda: controller not in _zookeeper(cluster)[0], "the dead session to end")
        assert _zookeeper(cluster)[1:] == (successor, epoch)
    assert [v for _, v in consume_all(cluster.bootstrap_servers, "t", 1)[0]] == [
        b"before",
        b"after",
    ]
    admin.close()
