"""The write stall over 20 leader kills, per client, and nothing lost or written twice.

Four node processes on the session's ZooKeeper; each client (odradek's SDK, confluent-kafka's
idempotent producer with acks=all, kafka-python's idempotent producer with acks=all) writes one
record at a time to a topic of its own (replication factor 3, ``min.insync.replicas`` 2), the
three topics led by one node that is not the controller (``bench.failover`` arranges it). The
leader is SIGKILLed 20 times (restarted in between, once the ISRs are full again). Printed: per
client, the distribution of the time from each kill to its first acknowledged write on the new
leader. Asserted: every acknowledged record is stored exactly once. Timings are printed, not
asserted; ``python -m bench.failover`` measures them with the controlled shutdowns and
controller kills beside.

And librdkafka's producer moves a killed leader's partition straight to the new leader: its
debug log shows the partition never handed to its internal broker (no leader) on the way. The
Metadata answer that names the new leader still lists the killed node
(``node.core.metadata_cache``, departed brokers); when it did not, librdkafka 2.16 tore down
the killed node's handle while the partition was migrating off it, which took the partition
back to no leader until the producer's next leader query, a second later, at every kill.
"""

from __future__ import annotations

from pathlib import Path

from bench.failover import CLIENTS, FailoverRun
from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer

KILLS = 20


def test_leader_kills_lose_and_duplicate_nothing_for_any_client(
    tmp_path: Path, zookeeper: ZooKeeperServer
) -> None:
    cluster = LocalCluster(
        tmp_path / "cluster",
        4,
        zookeeper=zookeeper,
        chroot="/leader-kills",
        kafka_ports=[0, 0, 0, 0],
    )
    cluster.start()
    try:
        with FailoverRun(cluster, CLIENTS) as run:
            for _ in range(KILLS):
                run.kill_leader()
            records = run.check_records()
            report = run.report()
    except BaseException:
        for node in cluster.nodes:
            print(f"--- node {node.node_id} log tail ---\n{node.tail(60)}")
        raise
    finally:
        cluster.kill_all()
    print()
    for client, s in report["kill"].items():
        print(
            f"write stall after a leader kill, {client}: n={s['n']:.0f} p50 {s['p50']:.0f} ms "
            f"p99 {s['p99']:.0f} ms max {s['max']:.0f} ms"
        )
    print(records)
    assert {c: report["kill"][c]["n"] for c in CLIENTS} == dict.fromkeys(CLIENTS, KILLS)
    for client, r in records.items():
        assert r["acknowledged"] > KILLS, (client, r)
        assert (r["lost"], r["duplicated"]) == (0, 0), (client, r)


def test_librdkafka_moves_a_killed_leaders_partition_straight_to_the_new_leader(
    tmp_path: Path, zookeeper: ZooKeeperServer
) -> None:
    cluster = LocalCluster(
        tmp_path / "cluster",
        4,
        zookeeper=zookeeper,
        chroot="/rdkafka-leader-kills",
        kafka_ports=[0, 0, 0, 0],
    )
    rdkafka_log = tmp_path / "rdkafka.log"
    cluster.start()
    try:
        with FailoverRun(cluster, ["confluent-kafka"], rdkafka_log=rdkafka_log) as run:
            for _ in range(3):
                run.kill_leader()
            records = run.check_records()
    except BaseException:
        for node in cluster.nodes:
            print(f"--- node {node.node_id} log tail ---\n{node.tail(60)}")
        raise
    finally:
        cluster.kill_all()
    lines = rdkafka_log.read_text(errors="replace").splitlines()
    moves = [line for line in lines if "applying leader-id update" in line]
    assert len(moves) >= 4, moves  # the first leader, then one move per kill
    unled = [line for line in lines if "delegating to broker :0/internal" in line]
    assert unled == [], unled
    assert (records["confluent-kafka"]["lost"], records["confluent-kafka"]["duplicated"]) == (0, 0)
