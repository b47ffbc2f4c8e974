"""Share groups' durable state on a real cluster: three node processes host
``__share_group_state`` (created by the first FindCoordinator of key type 2), and two nodes in
this process (ids 10 and 11, hosting none of it) reach it through their own
:class:`~node.replication.share_state_channel.ShareStateChannel` — the persister a partition
leader uses — over the inter-broker gRPC path:

* a state written through node 10's channel reads back identically through node 11's, and
  initialize / summary / delete behave as Kafka's share coordinator;
* the fencing errors arrive with Kafka's codes (FENCED_STATE_EPOCH 124, FENCED_LEADER_EPOCH 74);
* the coordinator's leader SIGKILLed: the state read back from the new one equals the last
  acknowledged write, and the new one takes writes;
* FindCoordinator key type 2 over gRPC names the leader of the key's partition.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from deploy.local.cluster import LocalCluster
from node.config import NodeConfig
from node.listeners import Listener
from node.replication.share_state_channel import ShareStateChannel
from node.server import Node
from node.share.persister import (
    DeliveryState,
    PersisterError,
    ShareKey,
    ShareSnapshot,
    ShareStateBatch,
    ShareSummary,
)
from odradek import Admin
from odradek.share_state_records import SHARE_GROUP_STATE_TOPIC
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.integration.helpers import partition_state, wait_for

PARTITIONS = 3
TOPIC_ID = "AQIDBAUGBwgJCgsMDQ4PEA"  # a topic id as Kafka prints a Uuid (need not exist)
A, ACK, ARC = DeliveryState.AVAILABLE, DeliveryState.ACKNOWLEDGED, DeliveryState.ARCHIVED


def _find(address: str, keys: list[str]) -> pb.FindCoordinatorResponse:
    with grpc.insecure_channel(address) as channel:
        return pb_grpc.BrokerStub(channel).FindCoordinator(
            pb.FindCoordinatorRequest(key_type=2, share_partition_keys=keys), timeout=30
        )


@pytest.fixture
def cluster(make_cluster: Callable[..., LocalCluster]) -> LocalCluster:
    cluster = make_cluster(
        3,
        share_coordinator_state_topic_num_partitions=str(PARTITIONS),
        # a killed node's ZooKeeper session must expire for its leaderships to move
        zookeeper_session_timeout_ms="6000",
    )
    key = f"g:{TOPIC_ID}:0"
    # node 0 creates the topic with min(3, the live brokers it knows) replicas: all three
    first = Admin(cluster.nodes[0].address)
    wait_for(lambda: len(first.describe_cluster().brokers) == 3, "node 0 knows every node")
    # the first lookup creates __share_group_state (on the three nodes: the only ones yet)
    wait_for(
        lambda: _find(cluster.nodes[0].address, [key]).coordinators[0].error_code == 0,
        "the share coordinator of a key",
    )
    admin = Admin(cluster.bootstrap_servers)
    for p in range(PARTITIONS):
        wait_for(
            lambda p=p: len(partition_state(admin, SHARE_GROUP_STATE_TOPIC, p).isr) == 3,  # type: ignore[misc]
            f"{SHARE_GROUP_STATE_TOPIC}-{p} on all three nodes",
            timeout_s=120,
        )
    return cluster


@pytest.fixture
def channels(cluster: LocalCluster, tmp_path: Path) -> Iterator[tuple[ShareStateChannel, ...]]:
    """The share-state channels of nodes 10 and 11 (in this process, in the same cluster)."""
    started: list[Node] = []
    try:
        for node_id in (10, 11):
            node = Node(
                NodeConfig(
                    node_id=node_id,
                    log_dirs=(tmp_path / f"n{node_id}",),
                    zookeeper_connect=cluster.nodes[0].zookeeper_connect,
                    listeners=(Listener("PLAINTEXT", "127.0.0.1", 0),),
                    zookeeper_session_timeout_ms=6_000,
                    # a call's deadline, retries included: past a coordinator's failover
                    request_timeout_ms=90_000,
                )
            )
            started.append(node)
            node.start()
        for node in started:
            wait_for(
                lambda node=node: (
                    sum(  # type: ignore[misc]
                        1
                        for t, _ in node.metadata.snapshot.partitions
                        if t == SHARE_GROUP_STATE_TOPIC
                    )
                    == PARTITIONS
                    and len(node.metadata.live_broker_ids()) == 5
                ),
                f"node {node.config.node_id} knows the cluster",
            )
        channels = []
        for node in started:
            assert node.share_state is not None
            channels.append(node.share_state)
        yield tuple(channels)
    finally:
        for node in reversed(started):
            node.stop(controlled=False)


def _leader(cluster: LocalCluster, key: ShareKey, via: int = 0) -> int:
    (found,) = _find(cluster.node(via).address, [key.coordinator_key()]).coordinators
    assert found.error_code == 0
    return found.node_id


def test_a_state_written_through_one_node_reads_back_through_another(cluster, channels):
    ten, eleven = channels
    key = ShareKey("orders", TOPIC_ID, 0)
    # never initialized: state epoch 0, start -1
    assert eleven.read(key, leader_epoch=0) == ShareSnapshot(0, -1, -1, ())
    ten.initialize(key, state_epoch=1, start_offset=100)
    assert eleven.read_summary(key) == ShareSummary(1, 100)
    written = ShareSnapshot(
        1,
        105,
        2,
        (
            ShareStateBatch(105, 109, ACK, 1),
            ShareStateBatch(110, 110, A, 3),
            ShareStateBatch(111, 120, ARC, 5),
        ),
    )
    ten.write(key, written)
    assert eleven.read(key, leader_epoch=2) == written
    assert ten.read_summary(key) == ShareSummary(1, 105)
    # another share partition of the same group is its own state
    other = ShareKey("orders", TOPIC_ID, 1)
    eleven.initialize(other, 0, 0)
    # the first read of a leader (epoch 0) records its epoch
    assert ten.read(other, 0) == ShareSnapshot(0, 0, 0, ())
    # delete forgets it (a tombstone): it reads as never initialized
    eleven.delete(key)
    assert ten.read(key, leader_epoch=2) == ShareSnapshot(0, -1, -1, ())
    assert ten.read(other, 0) == ShareSnapshot(0, 0, 0, ())


def test_fencing_errors_carry_kafkas_codes(cluster, channels):
    ten, eleven = channels
    key = ShareKey("fenced", TOPIC_ID, 3)
    ten.initialize(key, state_epoch=2, start_offset=0)
    ten.write(key, ShareSnapshot(2, 0, 5, (ShareStateBatch(0, 0, ACK, 1),)))
    with pytest.raises(PersisterError) as stale_state:
        eleven.write(key, ShareSnapshot(1, 0, 5, ()))  # an older state epoch
    assert stale_state.value.error_code == 124  # FENCED_STATE_EPOCH
    with pytest.raises(PersisterError) as stale_leader:
        eleven.write(key, ShareSnapshot(2, 0, 4, ()))  # an older leader epoch
    assert stale_leader.value.error_code == 74  # FENCED_LEADER_EPOCH
    with pytest.raises(PersisterError) as stale_read:
        eleven.read(key, leader_epoch=4)
    assert stale_read.value.error_code == 74
    # a newer leader's read fences the previous one's writes
    assert eleven.read(key, leader_epoch=6).leader_epoch == 6
    with pytest.raises(PersisterError) as deposed:
        ten.write(key, ShareSnapshot(2, 0, 5, ()))
    assert deposed.value.error_code == 74
    # an offset reset (initialize with a newer state epoch) fences the older state epoch
    ten.initialize(key, state_epoch=3, start_offset=10)
    with pytest.raises(PersisterError) as reset:
        ten.write(key, ShareSnapshot(2, 10, 6, ()))
    assert reset.value.error_code == 124
    # a malformed key is INVALID_REQUEST, not retried
    with pytest.raises(PersisterError) as invalid:
        ten.read(ShareKey("fenced", "not-a-topic-id", 0), 0)
    assert invalid.value.error_code == 42


def test_after_the_coordinators_leader_is_killed_the_new_one_has_the_last_acknowledged_write(
    cluster, channels
):
    ten, eleven = channels
    key = ShareKey("failover", TOPIC_ID, 7)
    before = _leader(cluster, key)
    ten.initialize(key, 1, 0)
    for n in range(1, 6):
        last = ShareSnapshot(1, n, 3, (ShareStateBatch(n, n + 4, ACK, n),))
        ten.write(key, last)  # each answered: replicated to the ISR (acks=-1, min ISR 2)
    cluster.node(before).kill()
    # the channel retries until the partition's new leader has loaded it
    assert eleven.read(key, leader_epoch=3) == last
    after = _leader(cluster, key, via=next(n for n in range(3) if n != before))
    assert after not in (before, -1)
    # the new coordinator takes writes and still fences the old state
    moved = ShareSnapshot(1, 9, 4, (ShareStateBatch(9, 9, ARC, 6),))
    eleven.write(key, moved)
    assert ten.read(key, leader_epoch=4) == moved
    with pytest.raises(PersisterError) as fenced:
        ten.write(key, ShareSnapshot(1, 9, 3, ()))
    assert fenced.value.error_code == 74


def test_find_coordinator_key_type_2_names_the_partitions_leader(cluster):
    admin = Admin(cluster.bootstrap_servers)
    keys = [f"g:{TOPIC_ID}:{p}" for p in range(6)] + ["no-colons", f"g:{TOPIC_ID}:x"]
    answer = _find(cluster.nodes[1].address, keys)
    assert [c.key for c in answer.coordinators] == keys
    addresses = {n.node_id: n.address for n in cluster.nodes}
    for c in answer.coordinators[:6]:
        assert c.error_code == 0
        assert f"{c.host}:{c.port}" == addresses[c.node_id]
    leaders = {partition_state(admin, SHARE_GROUP_STATE_TOPIC, p).leader for p in range(PARTITIONS)}
    assert {c.node_id for c in answer.coordinators[:6]} <= leaders
    assert [c.error_code for c in answer.coordinators[6:]] == [42, 42]  # INVALID_REQUEST
