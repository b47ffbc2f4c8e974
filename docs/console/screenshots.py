"""The pictures of docs/console.md: a three-node cluster with a few topics, records and a
consumer group, the console, and headless Chromium saving each page.

    PYTHONPATH=. .venv/bin/python docs/console/screenshots.py

(The login, refusal, security, filtered-messages, read-only and classic-group pictures come from
the tests:
CONSOLE_SCREENSHOTS=docs/console .venv/bin/pytest tests/console.)
"""

import json
import tempfile
import time
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from odradek import Admin, Consumer, Producer, TopicPartition
from tests.console.conftest import create_topic, make_browser, start_console, wait_until
from tests.integration.helpers import wait_for

ROOT = Path(__file__).resolve().parents[2]
out = ROOT / "docs" / "console"
tmp = Path(tempfile.mkdtemp(prefix="odradek-shots-"))
zk = ZooKeeperServer(tmp / "zk")
zk.start()
cluster = LocalCluster(
    tmp / "cluster", 3, zookeeper=zk, chroot="/shots", overrides={"log.retention.ms": "259200000"}
)
cluster.start()
b = cluster.bootstrap_servers
try:
    with Admin(b) as admin:
        wait_for(lambda: len(admin.describe_cluster().brokers) == 3, "brokers")
        create_topic(
            admin, "orders", 3, 3, **{"retention.ms": "604800000", "min.insync.replicas": "2"}
        )
        create_topic(admin, "payments", 2, 3)
        create_topic(admin, "audit-log", 1, 2, **{"cleanup.policy": "compact"})
    with Producer(b) as p:
        for i in range(300):
            p.send(
                "orders",
                json.dumps(
                    {
                        "order": 1000 + i,
                        "item": ["apples", "pears", "plums"][i % 3],
                        "qty": i % 7 + 1,
                    }
                ).encode(),
                key=f"customer-{i % 17}".encode(),
                headers=[("source", b"web"), ("trace-id", f"{i:08x}".encode())],
            )
        p.send_many("payments", [f"payment {i}".encode() for i in range(5000)]).result(timeout=60)
        p.flush(timeout=60)
    with Consumer(
        b, group_id="billing", auto_offset_reset="earliest", enable_auto_commit=False
    ) as c:
        c.subscribe(["orders"])
        got = 0
        while got < 120:
            got += len(c.poll(timeout_ms=500))
        c.commit({TopicPartition("orders", p): 40 for p in range(3)})
    console = start_console(b)
    d = make_browser(tmp / "downloads")

    def shot(path, name, before=None, height=None):
        d.get(console.url + path)
        wait_until(d, lambda x: x.execute_script("return document.readyState") == "complete")
        if before:
            before()
        h = height or d.execute_script("return document.body.scrollHeight")
        d.set_window_size(1280, min(max(h + 20, 500), 1400))
        time.sleep(0.3)
        d.save_screenshot(str(out / f"{name}.png"))

    shot("/", "overview")
    shot("/topics", "topics")
    shot("/topics/orders", "topic")

    def msgs():
        wait_until(d, lambda x: x.execute_script("return document.body.dataset.loaded"))
        d.find_element(By.ID, "limit").clear()
        d.find_element(By.ID, "limit").send_keys("12")
        Select(d.find_element(By.ID, "format")).select_by_value("json")
        before = d.execute_script("return document.body.dataset.loaded")
        d.find_element(By.ID, "go").click()
        wait_until(d, lambda x: x.execute_script("return document.body.dataset.loaded") != before)

    shot("/topics/orders/messages", "messages", msgs, height=1300)
    shot("/groups", "groups")

    def reset():
        d.find_element(By.CSS_SELECTOR, "#reset summary").click()
        d.find_element(By.ID, "reset-topic").clear()
        d.find_element(By.ID, "reset-topic").send_keys("orders")
        Select(d.find_element(By.ID, "reset-spec")).select_by_value("shift-by")
        d.find_element(By.ID, "reset-value").send_keys("-10")
        d.find_element(By.ID, "dry-run").click()
        wait_until(d, lambda x: x.find_elements(By.ID, "plan"))

    shot("/groups/billing", "group", reset)
    shot("/brokers", "brokers")
    shot("/brokers/0", "broker")
    d.quit()
    console.stop()
finally:
    for n in cluster.nodes:
        n.kill()
    zk.stop()
