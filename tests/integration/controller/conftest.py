from collections.abc import Iterator

import pytest

from tests.integration.controller.cluster import Cluster


@pytest.fixture
def cluster(zk_connect: str) -> Iterator[Cluster]:
    """A fresh chroot with an observer session; tests add controllers and brokers."""
    c = Cluster(zk_connect)
    try:
        yield c
    finally:
        c.close()
