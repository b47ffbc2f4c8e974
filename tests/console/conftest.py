"""Fixtures of the console's browser tests: a real cluster (node processes on the session's
real ZooKeeper), the real ``odradek console`` command serving it, and Debian's Chromium driven
by Selenium through Debian's chromium-driver, headless. A missing browser or driver fails the
test loudly (``bash scripts/setup.sh`` installs them).

One cluster, one console and one browser per module: the suite stays small in wall time.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from odradek import Admin, NewTopic
from tests.integration.helpers import wait_for

_chroots = itertools.count()
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@dataclass
class Console:
    """A running ``odradek console`` process and the URL it printed."""

    process: subprocess.Popen[str]
    url: str
    output: list[str] = field(default_factory=list)
    drain: threading.Thread | None = None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.drain is not None:
            self.drain.join(timeout=15)
        if self.process.stdout is not None:
            self.process.stdout.close()


def start_console(bootstrap: str, *args: str, env: dict[str, str] | None = None) -> Console:
    """Runs ``odradek console --listen 127.0.0.1:0`` and waits for its URL line."""
    command = [
        sys.executable, "-m", "odradek", "--bootstrap-server", bootstrap,
        "console", "--listen", "127.0.0.1:0", *args,
    ]  # fmt: skip
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    if "odradek console: http://" not in first:
        process.kill()
        rest = process.stdout.read()
        process.wait()
        raise AssertionError(f"the console did not start: {first}{rest}")
    console = Console(process, first.split("odradek console: ", 1)[1].split()[0].rstrip("/"))
    console.output.append(first)

    def drain() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            console.output.append(line)

    console.drain = threading.Thread(target=drain, daemon=True)
    console.drain.start()
    return console


def make_browser(download_dir: Path) -> WebDriver:
    """Headless Chromium (Debian's), downloads going to ``download_dir``."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists() and shutil.which(Path(path).name) is None:
            pytest.fail(
                f"{path} is missing: bash scripts/setup.sh installs chromium chromium-driver"
            )
    options = Options()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,1000",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--metrics-recording-only",
        "--no-proxy-server",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    options.add_experimental_option(
        "prefs",
        {
            "download.default_directory": str(download_dir),
            "download.prompt_for_download": False,
            "safebrowsing.enabled": False,
        },
    )
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    driver.execute_cdp_cmd(
        "Browser.setDownloadBehavior",
        {"behavior": "allow", "downloadPath": str(download_dir)},
    )
    return driver


def console_errors(driver: WebDriver) -> list[dict[str, Any]]:
    """The browser console's errors since the last call (SEVERE entries)."""
    entries: list[dict[str, Any]] = driver.get_log("browser")  # type: ignore[attr-defined]
    return [e for e in entries if e.get("level") == "SEVERE"]


def screenshot(driver: WebDriver, name: str) -> None:
    """Saves the page as ``NAME.png`` in ``$CONSOLE_SCREENSHOTS`` when it is set
    (docs/console.md's pictures come from the tests this way); otherwise nothing."""
    directory = os.environ.get("CONSOLE_SCREENSHOTS")
    if directory:
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1280, min(max(int(height) + 20, 420), 1400))
        driver.save_screenshot(str(Path(directory) / f"{name}.png"))
        driver.set_window_size(1400, 1000)


def wait_until(
    driver: WebDriver, condition: Callable[[WebDriver], Any], timeout_s: float = 30
) -> Any:
    return WebDriverWait(driver, timeout_s, poll_frequency=0.05).until(condition)


def texts(driver: WebDriver, css: str) -> list[str]:
    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, css)]


@pytest.fixture(scope="module")
def module_cluster(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    """Three nodes on the session's ZooKeeper, shared by a module's tests."""
    directory = tmp_path_factory.mktemp("console-cluster")
    cluster = LocalCluster(directory, 3, zookeeper=zookeeper, chroot=f"/console{next(_chroots)}")
    cluster.start()
    try:
        with Admin(cluster.bootstrap_servers) as admin:
            wait_for(lambda: len(admin.describe_cluster().brokers) == 3, "three live brokers")
        yield cluster
    finally:
        for node in cluster.nodes:
            node.kill()


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the module's browser saves downloads."""
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def browser(downloads: Path) -> Iterator[WebDriver]:
    driver = make_browser(downloads)
    try:
        yield driver
    finally:
        driver.quit()


def create_topic(admin: Admin, name: str, partitions: int = 1, rf: int = 1, **configs: str) -> None:
    error = admin.create_topics([NewTopic(name, partitions, rf, configs=configs)])[name]
    assert error is None, error

    def led() -> bool:
        parts = admin.describe_topics([name])[name].partitions
        return len(parts) == partitions and all(p.leader >= 0 for p in parts)

    wait_for(led, f"leaders of {name}")
