"""Topic sizes and broker configuration in a real headless Chromium against a real two-node
cluster started with a ``server.properties`` override: the topics page shows each topic's size
as the sum of its partitions' sizes on their leaders, the topic page each partition's, both
equal to what every broker's DescribeLogDirs reports and growing with produced bytes; the
broker page shows the broker's configuration with the override marked."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from odradek import Admin, Producer, TopicPartition
from tests.console.conftest import (
    Console,
    console_errors,
    create_topic,
    start_console,
    wait_until,
)
from tests.integration.helpers import wait_for

pytestmark = pytest.mark.console

RETENTION_MS = "259200000"  # 3 days: not the built-in 7


@pytest.fixture(scope="module")
def cluster(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    directory = tmp_path_factory.mktemp("console-sizes")
    c = LocalCluster(
        directory,
        2,
        zookeeper=zookeeper,
        chroot="/console-sizes",
        overrides={"log.retention.ms": RETENTION_MS},
    )
    c.start()
    try:
        with Admin(c.bootstrap_servers) as admin:
            wait_for(lambda: len(admin.describe_cluster().brokers) == 2, "two live brokers")
            create_topic(admin, "sized", 2, 2)
            create_topic(admin, "empty", 1, 1)
        yield c
    finally:
        for node in c.nodes:
            node.kill()


@pytest.fixture(scope="module")
def console(cluster: LocalCluster) -> Iterator[Console]:
    c = start_console(cluster.bootstrap_servers)
    try:
        yield c
    finally:
        c.stop()


def open_page(browser: WebDriver, console: Console, path: str) -> None:
    browser.get(console.url + path)
    wait_until(browser, lambda d: d.execute_script("return document.readyState") == "complete")


def leader_sizes(admin: Admin, topic: str) -> dict[int, int]:
    """Per partition, the size DescribeLogDirs reports on its leader."""
    dirs = admin.describe_log_dirs()
    out = {}
    for p in admin.describe_topics([topic])[topic].partitions:
        tp = TopicPartition(topic, p.partition)
        sizes = [d.replica_infos[tp].size for d in dirs[p.leader].values() if tp in d.replica_infos]
        assert len(sizes) == 1
        out[p.partition] = sizes[0]
    return out


def shown_topic_size(browser: WebDriver, topic: str) -> int:
    for row in browser.find_elements(By.CSS_SELECTOR, "#topics tbody tr"):
        if row.find_element(By.CSS_SELECTOR, "td:first-child").text == topic:
            return int(
                row.find_element(By.CSS_SELECTOR, "td.size").get_attribute("data-bytes") or ""
            )
    raise AssertionError(f"no row for {topic}")


def shown_partition_sizes(browser: WebDriver) -> dict[int, int]:
    return {
        int(row.find_element(By.CSS_SELECTOR, "td:first-child").text): int(
            row.find_element(By.CSS_SELECTOR, "td.size").get_attribute("data-bytes") or ""
        )
        for row in browser.find_elements(By.CSS_SELECTOR, "#partitions tbody tr")
    }


def test_topic_sizes_equal_the_leaders_log_dirs_and_grow(
    browser: WebDriver, console: Console, cluster: LocalCluster
) -> None:
    console_errors(browser)
    with Admin(cluster.bootstrap_servers) as admin:
        open_page(browser, console, "/topics")
        assert shown_topic_size(browser, "empty") == 0
        assert shown_topic_size(browser, "sized") == sum(leader_sizes(admin, "sized").values())
        before = shown_topic_size(browser, "sized")
        with Producer(cluster.bootstrap_servers, acks=-1) as producer:
            for i in range(300):
                producer.send("sized", b"x" * 500, key=b"k%d" % i, partition=i % 2)
            producer.flush(timeout=60)
        expected = leader_sizes(admin, "sized")
        assert all(size > 300 // 2 * 500 for size in expected.values())
        open_page(browser, console, "/topics")
        after = shown_topic_size(browser, "sized")
        assert after == sum(expected.values()) and after > before + 300 * 500
        open_page(browser, console, "/topics/sized")
        assert shown_partition_sizes(browser) == expected
    assert console_errors(browser) == []


def test_the_broker_page_shows_its_configuration_with_overrides_marked(
    browser: WebDriver, console: Console
) -> None:
    for node_id in (0, 1):
        open_page(browser, console, f"/brokers/{node_id}")
        rows = {
            row.find_element(By.CSS_SELECTOR, "td:first-child").text: row
            for row in browser.find_elements(By.CSS_SELECTOR, "#broker-configs tbody tr")
        }
        retention = rows["log.retention.ms"]
        assert "override" in (retention.get_attribute("class") or "").split()
        assert retention.find_element(By.CSS_SELECTOR, "td:nth-child(2)").text == RETENTION_MS
        assert retention.find_element(By.CSS_SELECTOR, "td:nth-child(3)").text == (
            "server.properties"
        )
        segment = rows["log.segment.bytes"]
        assert "default" in (segment.get_attribute("class") or "").split()
        assert segment.find_element(By.CSS_SELECTOR, "td:nth-child(3)").text == "default"
