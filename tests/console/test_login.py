"""Login and ACLs: against a SASL_SSL cluster with an authorizer (an in-process node on the
real ZooKeeper), the console asks for a username and password, refuses a wrong one, and acts
as the user who logged in — a principal without READ sees the refusal as a sentence."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kazoo.client import KazooClient
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.expected_conditions import staleness_of
from selenium.webdriver.support.ui import Select

from deploy.local.zookeeper import ZooKeeperServer
from node.config import NodeConfig
from node.listeners import Listener
from node.security.authorizer import AuthorizerConfig
from node.security.tls import SslConfig
from node.server import Node
from odradek import Admin, NewTopic, Producer
from odradek.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from odradek.admin import ScramUpsertion
from tests.certs import CertificateAuthority
from tests.console.conftest import (
    Console,
    console_errors,
    screenshot,
    start_console,
    wait_until,
)
from tests.integration.helpers import wait_for

pytestmark = pytest.mark.console


class Sasl:
    def __init__(self, node: Node, directory: Path, ca: CertificateAuthority) -> None:
        self.sasl = f"localhost:{node.ports['SASL']}"
        self.internal = f"localhost:{node.ports['INTERNAL']}"
        self.cafile = str(ca.write(directory / "ca.crt"))
        _, _, admin_pem = ca.issue("CN=admin").write(directory, "admin")
        self.admin: dict[str, Any] = {
            "security_protocol": "SSL",
            "ssl_cafile": self.cafile,
            "ssl_certfile": str(admin_pem),
        }
        self.properties = directory / "console.properties"
        self.properties.write_text(
            "security.protocol=SASL_SSL\n"
            f"ssl.truststore.location={self.cafile}\n"
            "ssl.truststore.type=PEM\n"
            "sasl.mechanism=SCRAM-SHA-256\n"
        )


@pytest.fixture(scope="module")
def sasl_cluster(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Sasl]:
    directory = tmp_path_factory.mktemp("console-sasl")
    chroot = "/console-sasl"
    zk = KazooClient(hosts=zookeeper.connect_string, timeout=10)
    zk.start(timeout=15)
    try:
        zk.ensure_path(chroot)
    finally:
        zk.stop()
        zk.close()
    ca = CertificateAuthority("odradek-console-ca")
    _, _, keystore = ca.issue("CN=node-1", ["localhost", "127.0.0.1"]).write(directory, "node-1")
    truststore = str(ca.write(directory / "ca.crt"))
    config = NodeConfig(
        node_id=1,
        log_dirs=(directory / "data",),
        zookeeper_connect=zookeeper.connect_string + chroot,
        listeners=(Listener("SASL", "127.0.0.1", 0), Listener("INTERNAL", "127.0.0.1", 0)),
        advertised_listeners=(
            Listener("SASL", "localhost", 0),
            Listener("INTERNAL", "localhost", 0),
        ),
        listener_security_protocol_map=(("SASL", "SASL_SSL"), ("INTERNAL", "SSL")),
        inter_broker_listener_name="INTERNAL",
        ssl=SslConfig(keystore_location=str(keystore), truststore_location=truststore),
        listener_ssl=(
            (
                "INTERNAL",
                SslConfig(
                    keystore_location=str(keystore),
                    truststore_location=truststore,
                    client_auth="required",
                ),
            ),
        ),
        authorizer=AuthorizerConfig(
            authorizer_class_name="kafka.security.authorizer.AclAuthorizer",
            super_users=("User:CN=node-1", "User:CN=admin", "User:root"),
        ),
        zookeeper_session_timeout_ms=6_000,
    )
    node = Node(config)
    try:
        node.start()
        s = Sasl(node, directory, ca)
        with Admin(s.internal, **s.admin) as admin:
            wait_for(lambda: admin.cluster_metadata().brokers, "a live broker")
            assert admin.create_topics([NewTopic("orders", 1, 1)]) == {"orders": None}
            wait_for(
                lambda: admin.describe_topics(["orders"])["orders"].partitions[0].leader >= 0,
                "a leader",
            )
            assert admin.alter_user_scram_credentials(
                [
                    ScramUpsertion("alice", "SCRAM-SHA-256", "alice-secret"),
                    ScramUpsertion("root", "SCRAM-SHA-256", "root-secret"),
                ]
            ) == {"alice": None, "root": None}
            # alice may see the topic but not read it
            describe = AccessControlEntry(
                "User:alice", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW
            )
            pattern = ResourcePattern(ResourceType.TOPIC, "orders")
            assert admin.create_acls([AclBinding(pattern, describe)]) == [None]
        with Producer(s.internal, **s.admin) as producer:
            producer.send("orders", b"secret order", key=b"k").result(timeout=30)
        yield s
    finally:
        node.stop(controlled=False)


@pytest.fixture(scope="module")
def console(sasl_cluster: Sasl) -> Iterator[Console]:
    c = start_console(sasl_cluster.sasl, "--command-config", str(sasl_cluster.properties))
    try:
        yield c
    finally:
        c.stop()


def log_in(browser: WebDriver, console: Console, user: str, password: str) -> None:
    browser.delete_all_cookies()
    browser.get(console.url + "/")
    wait_until(browser, lambda d: d.find_elements(By.ID, "username"))
    browser.find_element(By.ID, "username").send_keys(user)
    browser.find_element(By.ID, "password").send_keys(password)
    button = browser.find_element(By.ID, "login")
    button.click()
    # the answer to the POST has arrived when the login page is gone: the same document can
    # still say "complete" just after the click, and a page opened before the answer carries
    # no session cookie yet
    wait_until(browser, staleness_of(button))
    wait_until(
        browser,
        lambda d: d.find_elements(By.ID, "principal") or d.find_elements(By.ID, "error"),
    )


def test_a_wrong_password_is_refused(browser: WebDriver, console: Console) -> None:
    log_in(browser, console, "alice", "not-her-password")
    error = wait_until(browser, lambda d: d.find_element(By.ID, "error"))
    assert error.text == "The username or password is wrong."
    screenshot(browser, "login")
    assert browser.find_elements(By.ID, "username")  # still the login page
    browser.get(console.url + "/topics")  # and nothing else opens: the login page again
    wait_until(browser, lambda d: d.find_elements(By.ID, "username"))
    assert not browser.find_elements(By.ID, "principal")
    answer = httpx.get(console.url + "/api/topics/orders/messages", timeout=30)
    assert answer.status_code == 401 and answer.json() == {"error": "Log in first."}
    log_in(browser, console, "mallory", "alice-secret")
    assert wait_until(browser, lambda d: d.find_element(By.ID, "error")).text == (
        "The username or password is wrong."
    )


def test_a_principal_without_read_sees_the_refusal_sentence(
    browser: WebDriver, console: Console
) -> None:
    log_in(browser, console, "alice", "alice-secret")
    assert wait_until(browser, lambda d: d.find_element(By.ID, "principal")).text == "User:alice"
    cookies = browser.get_cookies()
    assert [c["name"] for c in cookies] == ["odradek_console"]
    cookie = cookies[0]
    assert cookie["httpOnly"] and cookie["secure"] and cookie["sameSite"] == "Strict"
    assert "alice-secret" not in cookie["value"]
    browser.get(console.url + "/topics")
    assert [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#topics td:first-child")] == [
        "orders"
    ]
    console_errors(browser)
    browser.get(console.url + "/topics/orders/messages")
    error = wait_until(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#error:not([hidden])"))
    assert error.text == "User:alice may not Read topic orders"
    screenshot(browser, "refusal")
    assert browser.find_elements(By.CSS_SELECTOR, "#records tbody tr") == []
    # the security page needs DESCRIBE on the cluster, which alice has not
    browser.get(console.url + "/security")
    assert browser.find_element(By.ID, "acls-error").text == (
        "User:alice may not Describe the cluster"
    )


def test_a_super_user_reads_the_same_topic(browser: WebDriver, console: Console) -> None:
    log_in(browser, console, "root", "root-secret")
    browser.get(console.url + "/topics/orders/messages")
    wait_until(browser, lambda d: d.execute_script("return document.body.dataset.loaded"))
    values = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#records td.value")]
    assert values == ["secret order"]
    browser.get(console.url + "/security")
    acl_rows = browser.find_elements(By.CSS_SELECTOR, "#acls tbody tr")
    assert any("User:alice" in r.text and "Describe" in r.text for r in acl_rows)
    users = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#users td:first-child")]
    assert "alice" in users and "root" in users
    screenshot(browser, "security")
    browser.find_element(By.CSS_SELECTOR, "form[action='/logout'] button").click()
    wait_until(browser, lambda d: d.find_elements(By.ID, "username"))


def test_acls_and_users_changed_from_the_security_page_apply(
    browser: WebDriver, console: Console
) -> None:
    log_in(browser, console, "root", "root-secret")
    browser.get(console.url + "/security")
    browser.find_element(By.CSS_SELECTOR, "#add-acl summary").click()
    form = browser.find_element(By.CSS_SELECTOR, "#add-acl form")
    Select(form.find_element(By.NAME, "resource_type")).select_by_visible_text("Topic")
    form.find_element(By.NAME, "name").send_keys("orders")
    form.find_element(By.NAME, "principal").send_keys("User:alice")
    Select(form.find_element(By.NAME, "operation")).select_by_visible_text("Read")
    form.find_element(By.TAG_NAME, "button").click()
    browser.switch_to.alert.accept()
    wait_until(browser, lambda d: "Added the ACL." in d.page_source)
    browser.find_element(By.CSS_SELECTOR, "#add-user summary").click()
    form = browser.find_element(By.CSS_SELECTOR, "#add-user form")
    form.find_element(By.NAME, "user").send_keys("bob")
    form.find_element(By.NAME, "password").send_keys("bob-secret")
    form.find_element(By.TAG_NAME, "button").click()
    browser.switch_to.alert.accept()
    wait_until(browser, lambda d: "Set the SCRAM credential of bob." in d.page_source)

    # alice now reads the topic; bob logs in with the password set on the page
    log_in(browser, console, "alice", "alice-secret")
    browser.get(console.url + "/topics/orders/messages")
    wait_until(browser, lambda d: d.execute_script("return document.body.dataset.loaded"))
    values = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#records td.value")]
    assert values == ["secret order"]
    log_in(browser, console, "bob", "bob-secret")
    assert wait_until(browser, lambda d: d.find_element(By.ID, "principal")).text == "User:bob"

    # the ACL removed on the page no longer applies
    log_in(browser, console, "root", "root-secret")
    browser.get(console.url + "/security")
    row = next(
        r
        for r in browser.find_elements(By.CSS_SELECTOR, "#acls tbody tr")
        if "User:alice" in r.text and "Read" in r.text
    )
    row.find_element(By.TAG_NAME, "button").click()
    browser.switch_to.alert.accept()
    wait_until(browser, lambda d: "Removed 1 ACL(s)." in d.page_source)
    log_in(browser, console, "alice", "alice-secret")
    browser.get(console.url + "/topics/orders/messages")
    error = wait_until(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#error:not([hidden])"))
    assert error.text == "User:alice may not Read topic orders"
