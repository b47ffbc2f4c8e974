"""The console's group pages in a real headless Chromium for a classic group made by real Kafka
clients (two kafka-python KafkaConsumers, round-robin, through the Kafka door) beside a KIP-848
group (odradek's Consumer) and a share group (KIP-932: confluent-kafka's ShareConsumer): the
list shows each group's type and protocol type; the classic group's page its type, protocol
type, assignor, and its members' client ids and hosts; the share group's page its members,
their assignment and a start offset row per assigned partition."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import ShareConsumer
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from odradek import Admin, Consumer
from tests.console.conftest import (
    Console,
    console_errors,
    create_topic,
    screenshot,
    start_console,
    texts,
    wait_until,
)
from tests.integration.helpers import wait_for
from tests.kafka.test_group_tools import ClassicMember

pytestmark = pytest.mark.console

TOPIC = "payments"
CLASSIC = "ledger-classic"
KIP848 = "ledger-848"
CLIENT_IDS = ("ledger-kp-1", "ledger-kp-2")
SHARE = "ledger-share"


@pytest.fixture(scope="module")
def kafka_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    """Three nodes with a Kafka listener each (the classic members speak Kafka's protocol)."""
    cluster = LocalCluster(
        tmp_path_factory.mktemp("console-classic"),
        3,
        zookeeper=zookeeper,
        chroot=f"/console-classic-{uuid.uuid4().hex[:6]}",
        kafka_ports=[0, 0, 0],
        overrides={"group.initial.rebalance.delay.ms": "500"},
    )
    cluster.start()
    try:
        with Admin(cluster.bootstrap_servers) as admin:
            wait_for(lambda: len(admin.describe_cluster().brokers) == 3, "three live brokers")
            create_topic(admin, TOPIC, 4, 3)
        yield cluster
    finally:
        for node in cluster.nodes:
            node.kill()


@pytest.fixture(scope="module")
def console(kafka_cluster: LocalCluster) -> Iterator[Console]:
    c = start_console(kafka_cluster.bootstrap_servers)
    try:
        yield c
    finally:
        c.stop()


def test_the_group_pages_show_a_classic_group_beside_a_consumer_group(
    kafka_cluster: LocalCluster, console: Console, browser: WebDriver
) -> None:
    members = [
        ClassicMember(kafka_cluster.kafka_bootstrap_servers, TOPIC, CLASSIC, c) for c in CLIENT_IDS
    ]
    for m in members:
        m.start()
    reader = Consumer(kafka_cluster.bootstrap_servers, group_id=KIP848, client_id="ledger-sdk")
    queue = ShareConsumer(
        {
            "bootstrap.servers": kafka_cluster.kafka_bootstrap_servers,
            "group.id": SHARE,
            "client.id": "ledger-queue",
        }
    )
    try:
        reader.subscribe([TOPIC])
        queue.subscribe([TOPIC])
        with Admin(kafka_cluster.bootstrap_servers) as admin:

            def stable() -> bool:
                reader.poll(timeout_ms=100)
                found = admin.describe_consumer_groups([CLASSIC, KIP848])
                c, k = found[CLASSIC], found[KIP848]
                return (
                    c.state == "Stable"
                    and len(c.members) == 2
                    and all(m.assignment for m in c.members)
                    and k.state == "Stable"
                    and len(k.members[0].assignment) == 4
                )

            wait_for(stable, "both groups stable")

            def share_stable() -> bool:
                queue.poll(0.1)
                s = admin.describe_share_groups([SHARE])[SHARE]
                return s.state == "Stable" and len(s.members[0].assignment) == 4

            # librdkafka's share consumer heartbeats every 5 s
            wait_for(share_stable, "the share group stable", 180)

        browser.get(console.url + "/groups")
        wait_until(
            browser, lambda d: d.find_elements(By.CSS_SELECTOR, f'tr[data-group="{CLASSIC}"]')
        )
        classic_row = browser.find_element(By.CSS_SELECTOR, f'#groups tr[data-group="{CLASSIC}"]')
        assert classic_row.find_element(By.CSS_SELECTOR, ".type").text == "classic"
        assert classic_row.find_element(By.CSS_SELECTOR, ".protocol").text == "consumer"
        assert classic_row.find_element(By.CSS_SELECTOR, ".state").text == "Stable"
        kip848_row = browser.find_element(By.CSS_SELECTOR, f'#groups tr[data-group="{KIP848}"]')
        assert kip848_row.find_element(By.CSS_SELECTOR, ".type").text == "consumer"
        assert kip848_row.find_element(By.CSS_SELECTOR, ".protocol").text == "consumer"
        share_row = browser.find_element(By.CSS_SELECTOR, f'#groups tr[data-group="{SHARE}"]')
        assert share_row.find_element(By.CSS_SELECTOR, ".type").text == "share"
        assert share_row.find_element(By.CSS_SELECTOR, ".protocol").text == "share"
        assert share_row.find_element(By.CSS_SELECTOR, ".state").text == "Stable"
        assert console_errors(browser) == []

        browser.get(console.url + f"/groups/{CLASSIC}")
        wait_until(browser, lambda d: d.find_elements(By.ID, "group-type"))
        assert browser.find_element(By.ID, "group-type").text.startswith("classic")
        assert browser.find_element(By.ID, "group-protocol-type").text == "consumer"
        assert browser.find_element(By.ID, "group-assignor").text == "roundrobin"
        assert browser.find_element(By.ID, "group-state").text == "Stable"
        assert sorted(texts(browser, "#members tr.member .client")) == sorted(CLIENT_IDS)
        hosts = texts(browser, "#members tr.member .host")
        assert len(hosts) == 2 and all("127.0.0.1" in h for h in hosts), hosts
        # a classic member has no epoch of its own (the group's generation is shown above)
        assert texts(browser, "#members tr.member .epoch") == ["-", "-"]
        assert texts(browser, "#members tr.member .protocol") == ["classic", "classic"]
        screenshot(browser, "classic-group")
        assert console_errors(browser) == []

        browser.get(console.url + f"/groups/{KIP848}")
        wait_until(browser, lambda d: d.find_elements(By.ID, "group-type"))
        assert browser.find_element(By.ID, "group-type").text == "consumer"
        assert texts(browser, "#members tr.member .client") == ["ledger-sdk"]
        assert texts(browser, "#members tr.member .epoch") != ["-"]
        assert texts(browser, "#members tr.member .protocol") == ["consumer"]
        assert console_errors(browser) == []

        browser.get(console.url + f"/groups/{SHARE}")
        wait_until(browser, lambda d: d.find_elements(By.ID, "group-type"))
        assert browser.find_element(By.TAG_NAME, "h1").text.startswith("Share group")
        assert browser.find_element(By.ID, "group-type").text == "share"
        assert browser.find_element(By.ID, "group-assignor").text == "simple"
        assert texts(browser, "#members tr.member .client") == ["ledger-queue"]
        assert texts(browser, "#members tr.member .protocol") == ["share"]
        assert "Start offset" in texts(browser, "#offsets thead th")
        # a row per assigned partition, its start offset from the share state (- while the
        # group has none for it)
        rows = browser.find_elements(By.CSS_SELECTOR, "#offsets tr[data-topic]")
        assert sorted(int(r.get_attribute("data-partition") or -1) for r in rows) == [0, 1, 2, 3]
        # each partition's high watermark, whichever node leads it (the share coordinator
        # knows the lag only of the partitions it leads)
        assert all(e.isdigit() for e in texts(browser, "#offsets tr[data-topic] .end"))
        assert browser.find_elements(By.ID, "share-reset-note")
        screenshot(browser, "share-group")
        assert console_errors(browser) == []
    finally:
        queue.close()
        reader.close()
        for m in members:
            m.stop()
