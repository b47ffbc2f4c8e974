"""Producer-id blocks claimed in a real ZooKeeper: Kafka's znode format, conditional writes,
no id handed out twice by concurrent managers or across restarts, prefetch at 90%."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest
from kazoo.client import KazooClient

from controller.zk_data import ProducerIdBlockZNode, ProducerIdsBlock
from node.apis import BrokerApis, RecordApis
from node.coordinator.producer_id_manager import ProducerIdManager, claim_block, next_block
from node.core.metadata_cache import MetadataCache
from node.grpc_door.service import BrokerServicer
from odradek.client.producer_id import init_producer_id
from odradek.errors import (
    CoordinatorLoadInProgressError,
    InvalidRequestError,
    TransactionalIdAuthorizationFailedError,
    UnknownServerError,
)
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.integration.helpers import wait_for


@pytest.fixture
def zk(zk_connect: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zk_connect, timeout=10)
    client.start(timeout=15)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def test_znode_is_kafkas_json() -> None:
    data = ProducerIdBlockZNode.encode(ProducerIdsBlock(3, 2000))
    assert json.loads(data) == {
        "version": 1,
        "broker": 3,
        "block_start": "2000",
        "block_end": "2999",
    }
    assert ProducerIdBlockZNode.decode(data) == ProducerIdsBlock(3, 2000)
    with pytest.raises(ValueError):
        ProducerIdBlockZNode.decode(b'{"version":1,"broker":1,"block_start":"x"}')


def test_next_block_rules() -> None:
    assert next_block(None, 1) == ProducerIdsBlock(1, 0)
    assert next_block(ProducerIdsBlock(2, 5000), 1) == ProducerIdsBlock(1, 6000)
    with pytest.raises(UnknownServerError):
        next_block(ProducerIdsBlock(2, 2**63 - 1000), 1)


def test_claims_follow_each_other_in_zookeeper(zk: KazooClient) -> None:
    assert claim_block(zk, 1) == ProducerIdsBlock(1, 0)
    assert claim_block(zk, 2) == ProducerIdsBlock(2, 1000)
    data, _ = zk.get(ProducerIdBlockZNode.path)
    assert json.loads(data)["block_end"] == "1999"
    # an empty znode (as Kafka's createTopLevelPaths leaves it) means "no block yet"
    zk.set(ProducerIdBlockZNode.path, b"")
    assert claim_block(zk, 3).first == 0


def test_concurrent_managers_never_share_an_id(zk_connect: str) -> None:
    clients = [KazooClient(hosts=zk_connect, timeout=10) for _ in range(3)]
    for c in clients:
        c.start(timeout=15)
    try:
        managers = [ProducerIdManager(c, node, block_size=50) for node, c in enumerate(clients)]
        ids: list[int] = []
        lock = threading.Lock()

        def take(manager: ProducerIdManager) -> None:
            for _ in range(400):
                pid = manager.generate_producer_id()
                with lock:
                    ids.append(pid)

        with futures.ThreadPoolExecutor(6) as pool:
            list(pool.map(take, managers * 2))
        assert len(ids) == len(set(ids)) == 2400
    finally:
        for c in clients:
            c.stop()
            c.close()


def test_restart_claims_a_new_block(zk: KazooClient) -> None:
    first = ProducerIdManager(zk, 1)
    a = [first.generate_producer_id() for _ in range(3)]
    assert a == [0, 1, 2]
    restarted = ProducerIdManager(zk, 1)  # the rest of block 0..999 is never reused
    assert restarted.generate_producer_id() == 1000


def test_prefetch_at_ninety_percent(zk: KazooClient) -> None:
    manager = ProducerIdManager(zk, 1, block_size=10)
    for _ in range(8):
        manager.generate_producer_id()
    assert (
        zk.get(ProducerIdBlockZNode.path)[0]
        and json.loads(zk.get(ProducerIdBlockZNode.path)[0])["block_end"] == "9"
    )
    manager.generate_producer_id()  # the 9th of 10: 90%
    wait_for(
        lambda: json.loads(zk.get(ProducerIdBlockZNode.path)[0])["block_end"] == "19" or None,
        "the prefetched block",
    )
    assert [manager.generate_producer_id() for _ in range(3)] == [9, 10, 11]


def test_no_zookeeper_is_coordinator_load_in_progress(zk_connect: str) -> None:
    client = KazooClient(hosts=zk_connect, timeout=10)
    client.start(timeout=15)
    manager = ProducerIdManager(client, 1)
    client.stop()
    with pytest.raises(CoordinatorLoadInProgressError) as info:
        manager.generate_producer_id()
    assert info.value.retriable
    client.close()


def _apis(producer_ids: ProducerIdManager) -> BrokerApis:
    """The policy layer of a node serving only InitProducerId (no partitions, no groups)."""
    records = RecordApis(
        None,  # type: ignore[arg-type]  # InitProducerId never reaches the replica manager
        MetadataCache(),
        None,
        producer_ids,
        None,
        auto_create_topics=False,
    )
    return BrokerApis(records, None, None)


@pytest.fixture
def servicer_channel(zk: KazooClient) -> Iterator[tuple[grpc.Channel, str]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    servicer = BrokerServicer(_apis(ProducerIdManager(zk, 7)))
    pb_grpc.add_BrokerServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    address = f"127.0.0.1:{port}"
    channel = grpc.insecure_channel(address)
    try:
        yield channel, address
    finally:
        channel.close()
        server.stop(grace=None)


def test_init_producer_id_over_grpc(servicer_channel: tuple[grpc.Channel, str]) -> None:
    channel, address = servicer_channel
    first = init_producer_id(channel, address=address, timeout_ms=10_000)
    second = init_producer_id(channel, address=address, timeout_ms=10_000, producer_id=0)
    assert (first.producer_id, first.epoch) == (0, 0)
    assert (second.producer_id, second.epoch) == (1, 0)
    stub = pb_grpc.BrokerStub(channel)
    empty = stub.InitProducerId(pb.InitProducerIdRequest(transactional_id=""), timeout=10)
    assert (empty.error_code, empty.producer_id) == (InvalidRequestError.code, -1)
    txn = stub.InitProducerId(pb.InitProducerIdRequest(transactional_id="t"), timeout=10)
    assert txn.error_code == TransactionalIdAuthorizationFailedError.code  # as the Kafka door


def test_init_producer_id_helper_raises_typed_errors(zk_connect: str) -> None:
    client = KazooClient(hosts=zk_connect, timeout=10)
    client.start(timeout=15)
    client.stop()  # no ZooKeeper: no block can be claimed
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = BrokerServicer(_apis(ProducerIdManager(client, 1)))
    pb_grpc.add_BrokerServicer_to_server(servicer, server)
    address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    server.start()
    channel = grpc.insecure_channel(address)
    try:
        with pytest.raises(CoordinatorLoadInProgressError):
            init_producer_id(channel, address=address, timeout_ms=10_000)
    finally:
        channel.close()
        server.stop(grace=None)
        client.close()
