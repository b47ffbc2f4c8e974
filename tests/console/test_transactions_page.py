"""The console's view of transactions in a real headless Chromium against a real three-node
cluster: a topic's partitions show the last stable offset beside the high watermark (held back
at an open transaction's first offset, caught up after its commit) and the partition's open
transaction (producer id, epoch, first offset), and the transactions page lists it (state,
producer id and epoch, partitions, how long it is open)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

import odradek
from deploy.local.cluster import LocalCluster
from tests.console.conftest import Console, console_errors, create_topic, start_console, texts
from tests.integration.helpers import wait_for

pytestmark = pytest.mark.console

TOPIC = "ledger"
TID = "ledger-writer"


@pytest.fixture(scope="module")
def console(module_cluster: LocalCluster) -> Iterator[Console]:
    with odradek.Admin(module_cluster.bootstrap_servers) as admin:
        create_topic(admin, TOPIC, 1, 1)
    running = start_console(module_cluster.bootstrap_servers)
    try:
        yield running
    finally:
        running.stop()


def partition_cells(browser: WebDriver, console: Console) -> tuple[str, str]:
    """The last stable offset and high watermark the topic page shows for partition 0."""
    browser.get(f"{console.url}/topics/{TOPIC}")
    return (
        browser.find_element(By.CSS_SELECTOR, "#partitions tbody tr td.lso").text,
        browser.find_element(By.CSS_SELECTOR, "#partitions tbody tr td.hw").text,
    )


def producer_id_of(cluster: LocalCluster) -> str:
    with odradek.Admin(cluster.bootstrap_servers) as admin:
        return str(admin.describe_transactions([TID])[TID].producer_id)


def test_an_open_transaction_holds_the_last_stable_offset_and_is_listed(
    browser: WebDriver, console: Console, module_cluster: LocalCluster
) -> None:
    console_errors(browser)
    with odradek.Producer(module_cluster.bootstrap_servers, transactional_id=TID) as producer:
        producer.init_transactions(timeout=60)
        producer.begin_transaction()
        producer.send(TOPIC, b"committed-later", partition=0)
        producer.send(TOPIC, b"also", partition=0)
        producer.flush(30)

        assert partition_cells(browser, console) == ("0", "2")
        opened = "#open-transactions tbody tr"
        assert [
            [c.text for c in r.find_elements(By.CSS_SELECTOR, "td")][:4]
            for r in browser.find_elements(By.CSS_SELECTOR, opened)
        ] == [["0", producer_id_of(module_cluster), "0", "0"]]

        browser.get(f"{console.url}/transactions")
        row = f"#transactions tr[data-transactional-id='{TID}']"
        assert texts(browser, f"{row} td.state") == ["Ongoing"]
        assert texts(browser, f"{row} td.partitions") == [f"{TOPIC}-0"]
        assert texts(browser, f"{row} td.epoch") == ["0"]
        (duration,) = texts(browser, f"{row} td.duration")
        assert duration.endswith(" ms")
        (producer_id,) = texts(browser, f"{row} td.producer-id")
        with odradek.Admin(module_cluster.bootstrap_servers) as admin:
            assert int(producer_id) == admin.describe_transactions([TID])[TID].producer_id

        producer.commit_transaction(timeout=60)

    # the COMMIT marker is offset 2: the last stable offset catches up with the high watermark
    wait_for(lambda: partition_cells(browser, console) == ("3", "3"), "the LSO caught up")
    row = f"#transactions tr[data-transactional-id='{TID}']"

    def completed() -> bool:
        # the coordinator writes CompleteCommit once every marker is written: just after the
        # partition's last stable offset moves
        browser.get(f"{console.url}/transactions")
        return texts(browser, f"{row} td.state") == ["CompleteCommit"]

    wait_for(completed, "the transaction completed at its coordinator")
    assert texts(browser, f"{row} td.duration") == ["-"]
    partition_cells(browser, console)
    assert browser.find_elements(By.ID, "open-transactions") == []
    assert console_errors(browser) == []
