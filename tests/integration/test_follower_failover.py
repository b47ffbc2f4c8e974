"""A dead or hung follower leaves the ISR long before its ZooKeeper session expires or the lag
limit passes, and acks=-1 writes go on with the rest: a killed follower is noticed by its broken
fetch session, a paused one (SIGSTOP: its connections stay open) by its silence.

The session timeout and the lag limit are far longer than the tests wait, so only the rule
under test can shrink the ISR; how long it took is printed, never asserted."""

from __future__ import annotations

import signal
import time

from odradek import Admin, NewTopic, Producer
from odradek.client.metadata import PartitionMetadata
from odradek.clock import SystemClock
from tests.integration.helpers import partition_state, wait_for, wait_for_full_isr

_clock = SystemClock()
LONG = {
    "zookeeper_session_timeout_ms": "60000",
    # the heartbeats' fencing (and their probe of a silent node) out of the way too
    "broker_session_timeout_ms": "60000",
    "broker_heartbeat_interval_ms": "20000",
    "replica_lag_time_max_ms": "120000",
}


def _victim(admin: Admin, topic: str) -> tuple[int, int]:
    """(leader, a follower that is not the controller) of partition 0: a dead controller would
    hold the shrink (AlterPartition) until another takes over, after its session expires."""
    state = partition_state(admin, topic)
    controller = admin.describe_cluster().controller_id
    victim = next(f for f in sorted(state.replicas) if f not in (state.leader, controller))
    return state.leader, victim


def _wait_out_of_isr(admin: Admin, topic: str, victim: int, timeout_s: float) -> PartitionMetadata:
    def without_victim() -> PartitionMetadata | None:
        state = partition_state(admin, topic)
        return state if victim not in state.isr else None

    return wait_for(without_victim, f"node {victim} out of the ISR", timeout_s)


def test_a_killed_follower_leaves_the_isr_by_its_broken_fetch_session(make_cluster):
    # silence far longer than the wait too: only the broken session can tell
    cluster = make_cluster(3, replica_fetch_silence_max_ms="60000", **LONG)
    admin = Admin(cluster.bootstrap_servers)
    admin.create_topics(
        [NewTopic("killed", 1, 3, configs={"min.insync.replicas": "2"})], timeout_ms=30_000
    )
    wait_for_full_isr(admin, "killed")
    with Producer(cluster.bootstrap_servers, acks=-1) as producer:
        producer.send("killed", b"before").result(timeout=30)
        leader, victim = _victim(admin, "killed")

        killed_at = _clock.monotonic_ms()
        cluster.node(victim).kill()
        shrunk = _wait_out_of_isr(admin, "killed", victim, timeout_s=30)
        print(f"\nkilled follower out of the ISR after {_clock.monotonic_ms() - killed_at} ms")
        # its registration (session) is still there: the leader's rule did it
        assert victim in {b.node_id for b in admin.describe_cluster().brokers}
        assert shrunk.leader == leader and victim not in shrunk.isr and len(shrunk.isr) == 2
        meta = producer.send("killed", b"after").result(timeout=30)
    assert meta.offset == 1
    admin.close()


def test_a_paused_follower_leaves_the_isr_by_its_silence_and_rejoins(make_cluster):
    cluster = make_cluster(3, **LONG)  # replica.fetch.silence.max.ms at its default
    admin = Admin(cluster.bootstrap_servers)
    admin.create_topics(
        [NewTopic("paused", 1, 3, configs={"min.insync.replicas": "2"})], timeout_ms=30_000
    )
    wait_for_full_isr(admin, "paused")
    with Producer(cluster.bootstrap_servers, acks=-1) as producer:
        producer.send("paused", b"before").result(timeout=30)
        leader, victim = _victim(admin, "paused")
        node = cluster.node(victim)

        paused_at = _clock.monotonic_ms()
        node.signal(signal.SIGSTOP)
        try:
            # a write the paused follower cannot fetch: the leader has data for it now
            pending = producer.send("paused", b"during")
            shrunk = _wait_out_of_isr(admin, "paused", victim, timeout_s=30)
            print(f"\npaused follower out of the ISR after {_clock.monotonic_ms() - paused_at} ms")
            assert shrunk.leader == leader and len(shrunk.isr) == 2
            assert pending.result(timeout=30).offset == 1  # acknowledged by the two left
        finally:
            node.signal(signal.SIGCONT)
        # back, it catches up to the high watermark and only then rejoins
        wait_for_full_isr(admin, "paused")
        assert producer.send("paused", b"after").result(timeout=30).offset == 2
    admin.close()


def test_a_leader_paused_briefly_does_not_take_its_followers_for_silent(make_cluster):
    """Frozen for longer than the silence limit but far shorter than its session, the leader
    resumes with its followers' fetches waiting unread in its sockets: it reads them and keeps
    its ISR rather than shrinking it to itself."""
    cluster = make_cluster(3, **LONG)
    admin = Admin(cluster.bootstrap_servers)
    admin.create_topics(
        [NewTopic("frozen", 1, 3, configs={"min.insync.replicas": "2"})], timeout_ms=30_000
    )
    wait_for_full_isr(admin, "frozen")
    leader = partition_state(admin, "frozen").leader
    node = cluster.node(leader)
    with Producer(cluster.bootstrap_servers, acks=-1) as producer:
        producer.send("frozen", b"before").result(timeout=30)
        node.signal(signal.SIGSTOP)
        try:
            time.sleep(2.5)  # the fault's duration (3 x the silence limit), not a sync
        finally:
            node.signal(signal.SIGCONT)
        # acknowledged by all three once the leader has read its followers' fetches
        for value in (b"after", b"and after"):
            producer.send("frozen", value).result(timeout=30)
    assert set(partition_state(admin, "frozen").isr) == set(
        partition_state(admin, "frozen").replicas
    )
    text = node.log_path.read_text()
    assert "stalled for" in text  # it noticed its own stall
    assert "shrinking ISR" not in text, text[-3000:]
    admin.close()
