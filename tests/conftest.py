from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from deploy.local.zookeeper import ZooKeeperServer
from odradek.clock import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(wall_ms=1_700_000_000_000, monotonic_ms=1_000)


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """A real ZooKeeper server (Debian's package) on loopback, shared by the session's tests.

    Tests isolate themselves with their own chroot path (see ``zk_connect``). A missing package
    fails the test loudly: ``bash scripts/setup.sh`` installs it.
    """
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def zk_connect(zookeeper: ZooKeeperServer, request: pytest.FixtureRequest) -> str:
    """A connect string with a chroot of the test's own, e.g. ``127.0.0.1:2181/test_x_1``."""
    name = "".join(c if c.isalnum() else "_" for c in request.node.name)[:80]
    _chroot_counter[0] += 1
    chroot = f"/{name}_{_chroot_counter[0]}"
    client = KazooClient(hosts=zookeeper.connect_string, timeout=10)
    client.start(timeout=15)
    try:
        client.ensure_path(chroot)
    finally:
        client.stop()
        client.close()
    return zookeeper.connect_string + chroot


_chroot_counter = [0]
