"""Large creations against a real cluster: a 100,000-partition CreateTopics (which used to
exceed ZooKeeper's jute.maxbuffer, fail with UNKNOWN and drop the controller's session) gets
Kafka's typed POLICY_VIOLATION, and the controller keeps its session and carries on."""

from __future__ import annotations

from kazoo.client import KazooClient

from odradek import Admin, NewTopic
from odradek.admin import NewPartitions
from odradek.errors import PolicyViolationError
from tests.integration.helpers import wait_for, wait_for_full_isr


def _controller_session(cluster) -> tuple[int, int]:
    """(ephemeral owner of /controller, its czxid): the controller's session and election."""
    zk = KazooClient(hosts=cluster.zookeeper.connect_string + cluster.chroot, timeout=10)
    zk.start()
    try:
        _, stat = zk.get("/controller")
        return stat.ephemeralOwner, stat.czxid
    finally:
        zk.stop()
        zk.close()


def test_a_100k_partition_request_is_refused_typed_and_the_controller_keeps_its_session(
    make_cluster,
):
    cluster = make_cluster(1)
    with Admin(cluster.bootstrap_servers) as admin:
        wait_for(lambda: admin.describe_cluster().controller_id == 0, "an active controller")
        before = _controller_session(cluster)
        result = admin.create_topics([NewTopic("huge", 100_000, 1)])["huge"]
        assert isinstance(result, PolicyViolationError)
        assert "Excessively large number of partitions per request." in result.message
        # also when the partitions are spread over several topics, or given explicitly
        many = admin.create_topics([NewTopic(f"t{i}", 5_001, 1) for i in range(2)])
        assert all(isinstance(e, PolicyViolationError) for e in many.values())
        explicit = NewTopic("listed", assignments={p: [0] for p in range(10_001)})
        assert isinstance(admin.create_topics([explicit])["listed"], PolicyViolationError)
        assert admin.list_topics() == []
        # adding too many partitions at once is refused the same way
        assert admin.create_topics([NewTopic("small", 1, 1)])["small"] is None
        grown = admin.create_partitions({"small": NewPartitions(10_002)})["small"]
        assert isinstance(grown, PolicyViolationError)
        # the controller is the same, in the same session, and still acts
        assert _controller_session(cluster) == before
        assert admin.create_topics([NewTopic("after", 3, 1)])["after"] is None
        wait_for_full_isr(admin, "after", 3, rf=1)
        assert admin.create_partitions({"small": NewPartitions(4)})["small"] is None
        wait_for_full_isr(admin, "small", 4, rf=1)
        assert _controller_session(cluster) == before
