"""A replica manager on real logs in a temporary directory, shared by the core's unit tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from node.config import NodeConfig
from node.core.metadata_cache import MetadataCache
from node.core.replica_manager import ReplicaManager
from node.core.requests import Broker, UpdateMetadataRequest
from odradek.clock import ManualClock
from storage import LogManager


@pytest.fixture
def node_config(tmp_path: Path) -> NodeConfig:
    """Node 0's defaults, its log directory ``tmp_path``."""
    return NodeConfig(node_id=0, log_dirs=(tmp_path,), zookeeper_connect="unused:1")


@pytest.fixture
def replica_manager(
    tmp_path: Path, node_config: NodeConfig, clock: ManualClock
) -> Iterator[ReplicaManager]:
    """Node 0's replica manager (broker epoch 7) in a cluster of nodes 0-2, all live; no
    fetchers and no AlterPartition sender unless a test sets them."""
    logs = LogManager([tmp_path], node_config.log, clock, node_config.log_manager)
    metadata = MetadataCache()
    metadata.update(
        UpdateMetadataRequest(
            controller_id=0,
            controller_epoch=1,
            live_brokers=tuple(Broker(node_id=i, host="127.0.0.1", port=1) for i in range(3)),
        )
    )
    rm = ReplicaManager(node_config, logs, metadata, clock, broker_epoch=lambda: 7)
    yield rm
    rm.shutdown()
    logs.shutdown()
