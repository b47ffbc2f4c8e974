from collections.abc import Iterator

import pytest

from tests.unit.sdk.fake_cluster import FakeCluster, running_cluster


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    """Three fake nodes on loopback (see fake_cluster.py)."""
    yield from running_cluster(3)
