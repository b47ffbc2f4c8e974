"""A killed follower leaves the ISR once it has been silent for replica.fetch.silence.max.ms,
before its ZooKeeper session expires and before the lag limit: acks=-1 writes stall that long,
not the session timeout."""

from __future__ import annotations

from odradek import Admin, NewTopic, Producer
from odradek.client.metadata import PartitionMetadata
from tests.integration.helpers import partition_state, wait_for, wait_for_full_isr


def test_a_killed_follower_leaves_the_isr_while_its_registration_still_exists(make_cluster):
    # the session and the lag limit far longer than the test waits: only silence can shrink
    cluster = make_cluster(
        3,
        zookeeper_session_timeout_ms="60000",
        replica_lag_time_max_ms="120000",
        replica_fetch_silence_max_ms="1500",
        # nor the controller's heartbeat fencing, which would take the dead node out first
        broker_session_timeout_ms="0",
    )
    admin = Admin(cluster.bootstrap_servers)
    admin.create_topics(
        [NewTopic("silence", 1, 3, configs={"min.insync.replicas": "2"})], timeout_ms=30_000
    )
    wait_for_full_isr(admin, "silence")
    with Producer(cluster.bootstrap_servers, acks=-1) as producer:
        producer.send("silence", b"before").result(timeout=30)
    state = partition_state(admin, "silence")
    leader = state.leader
    # the victim is not the controller: the leader's shrink needs a live controller to commit
    # it (AlterPartition), and a dead controller is replaced only when its session expires
    controller = admin.describe_cluster().controller_id
    followers = sorted(set(state.replicas) - {leader})
    victim = next(f for f in followers if f != controller)
    survivor = next(f for f in followers if f != victim)
    # live followers fetch well within the silence limit: nobody left the ISR meanwhile
    assert set(partition_state(admin, "silence").isr) == {leader, victim, survivor}

    cluster.node(victim).kill()

    def without_victim() -> PartitionMetadata | None:
        state = partition_state(admin, "silence")
        return state if victim not in state.isr else None

    shrunk = wait_for(without_victim, "the killed follower out of the ISR", timeout_s=40)
    # the controller has not noticed the death (its session is alive): the leader's silence
    # rule shrank the ISR, not the controller's broker-failure handling
    assert victim in {b.node_id for b in admin.describe_cluster().brokers}
    assert shrunk.leader == leader and set(shrunk.isr) == {leader, survivor}
    # acks=-1 writes go on with the two in-sync replicas
    with Producer(cluster.bootstrap_servers, acks=-1) as producer:
        meta = producer.send("silence", b"after").result(timeout=30)
    assert meta.offset == 1
    admin.close()
