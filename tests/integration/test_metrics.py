"""The Prometheus endpoint (``metrics.port``) of real node processes follows the cluster."""

from __future__ import annotations

import re
from pathlib import Path

from odradek import Admin, Consumer, NewTopic, Producer, TopicPartition
from tests.integration.helpers import (
    metric_value,
    metrics_url,
    node_metric_total,
    scrape_metrics,
    wait_for,
    wait_for_full_isr,
)

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "odradek.json"
ALERTS = DEPLOY / "prometheus" / "alerts.yml"


def test_the_metrics_follow_the_cluster(make_cluster):
    cluster = make_cluster(3, metrics_port="0")
    nodes = [0, 1, 2]
    admin = Admin(cluster.bootstrap_servers)
    admin.create_topics([NewTopic("metered", num_partitions=3, replication_factor=3)])
    wait_for_full_isr(admin, "metered", partitions=3)
    # one active controller in the cluster; every node hosts the 3 partitions, leads some
    wait_for(
        lambda: (
            node_metric_total(
                cluster, nodes, "kafka_controller_kafkacontroller_activecontrollercount"
            )
            == 1
        ),
        "one active controller",
    )
    wait_for(
        lambda: (
            node_metric_total(cluster, nodes, "kafka_server_replicamanager_leadercount") == 3
            and node_metric_total(cluster, nodes, "kafka_server_replicamanager_partitioncount") == 9
        ),
        "3 leaders and 9 replicas",
    )
    assert (
        node_metric_total(cluster, nodes, "kafka_server_replicamanager_underreplicatedpartitions")
        == 0
    )
    assert (
        node_metric_total(cluster, nodes, "kafka_controller_kafkacontroller_offlinepartitionscount")
        == 0
    )
    first = scrape_metrics(metrics_url(cluster.node(0)))
    assert (
        metric_value(first, "kafka_server_sessionexpirelistener_sessionstate", state="CONNECTED")
        == 1
    )

    # producing raises bytes and records in on the leaders, by exactly what was appended
    before = node_metric_total(
        cluster, nodes, "kafka_server_brokertopicmetrics_bytesin_total", topic="metered"
    )
    with Producer(cluster.bootstrap_servers, acks=-1, linger_ms=5) as producer:
        for i in range(100):
            producer.send("metered", b"x" * 100, key=str(i).encode())
        producer.flush(60)
    after = node_metric_total(
        cluster, nodes, "kafka_server_brokertopicmetrics_bytesin_total", topic="metered"
    )
    assert after > before + 100 * 100
    records = node_metric_total(
        cluster, nodes, "kafka_server_brokertopicmetrics_messagesin_total", topic="metered"
    )
    assert records == 100
    assert (
        node_metric_total(
            cluster, nodes, "kafka_network_requestmetrics_requests_total", request="Produce"
        )
        > 0
    )
    assert (
        node_metric_total(
            cluster, nodes, "kafka_network_requestmetrics_totaltimems_count", request="Produce"
        )
        > 0
    )
    # followers fetched it: replication bytes out on the leaders, log sizes on every replica
    wait_for(
        lambda: (
            node_metric_total(
                cluster,
                nodes,
                "kafka_server_brokertopicmetrics_replicationbytesout_total",
                topic="metered",
            )
            >= after - before
        ),
        "the followers' fetches counted",
    )
    sizes = [
        metric_value(
            scrape_metrics(metrics_url(cluster.node(n))),
            "kafka_log_log_size",
            topic="metered",
            partition=str(p),
        )
        for n in nodes
        for p in range(3)
    ]
    assert sum(sizes) > 3 * 100 * 100
    # a consumer's fetches are bytes out
    with Consumer(cluster.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("metered", p) for p in range(3)])

        def consumed_all_counted():
            consumer.poll(timeout_ms=200)
            out = node_metric_total(
                cluster, nodes, "kafka_server_brokertopicmetrics_bytesout_total", topic="metered"
            )
            return out > 100 * 100

        wait_for(consumed_all_counted, "the consumer's fetches counted as bytes out")

    # every metric the Grafana dashboard and the alerts use is one the nodes export
    exported = {name for n in nodes for name, _ in scrape_metrics(metrics_url(cluster.node(n)))}
    used: set[str] = set()
    for path in (DASHBOARD, ALERTS):
        used |= set(re.findall(r"\bkafka_[a-z_]+", path.read_text()))
    assert used and used <= exported, used - exported

    # a follower killed: every partition it replicated becomes under-replicated on its leader
    victim = 2
    cluster.node(victim).kill()
    live = [0, 1]
    wait_for(
        lambda: (
            node_metric_total(
                cluster, live, "kafka_server_replicamanager_underreplicatedpartitions"
            )
            == 3
        ),
        "3 under-replicated partitions once node 2 is gone",
    )
    assert node_metric_total(cluster, live, "kafka_server_replicamanager_leadercount") == 3
    assert (
        node_metric_total(cluster, live, "kafka_controller_kafkacontroller_activecontrollercount")
        == 1
    )
    admin.close()
