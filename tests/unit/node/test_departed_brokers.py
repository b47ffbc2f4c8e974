"""The metadata cache's departed brokers (node/core/metadata_cache.py): a broker that leaves the
live set in the update that moves its leaderships away is still listed, for
``DEPARTED_LISTING_MS``, in the Metadata answers asked with ``list_departed`` (the Kafka
door's), so that librdkafka learns the new leader from an answer that still lists the old one;
it leads nothing and counts as an offline replica meanwhile."""

from __future__ import annotations

from node.core.metadata_cache import DEPARTED_LISTING_MS, MetadataCache
from node.core.requests import Broker, BrokerEndPoint, LeaderAndIsrPartition, UpdateMetadataRequest
from odradek.clock import ManualClock


def _broker(i: int) -> Broker:
    return Broker(
        node_id=i,
        host=f"10.0.0.{i}",
        port=9192,
        endpoints=(
            BrokerEndPoint("KAFKA", f"b{i}.example", 9092),
            BrokerEndPoint("PLAINTEXT", f"10.0.0.{i}", 9192),
        ),
    )


def _update(epoch: int, live: tuple[int, ...], leader: int, isr: tuple[int, ...]):
    return UpdateMetadataRequest(
        controller_id=0,
        controller_epoch=1,
        live_brokers=tuple(_broker(i) for i in live),
        partition_states=(
            LeaderAndIsrPartition(
                topic="t",
                partition=0,
                controller_epoch=1,
                leader=leader,
                leader_epoch=epoch,
                isr=isr,
                partition_epoch=epoch,
                replicas=(1, 2, 3),
            ),
        ),
    )


def _ids(cache: MetadataCache, *, list_departed: bool) -> list[int]:
    result = cache.metadata(["t"], False, "KAFKA", list_departed=list_departed)
    return [b.node_id for b in result.brokers]


def test_a_fenced_leader_stays_listed_for_a_while_beside_its_successor() -> None:
    clock = ManualClock()
    cache = MetadataCache(clock)
    cache.update(_update(2, (0, 1, 2, 3), leader=1, isr=(1, 2, 3)))
    clock.advance(10_000)
    # node 1 fenced: the same update drops it from the live set and moves its leadership
    cache.update(_update(3, (0, 2, 3), leader=2, isr=(2, 3)))

    answer = cache.metadata(["t"], False, "KAFKA", list_departed=True)
    assert [(b.node_id, b.host, b.port) for b in answer.brokers] == [
        (0, "b0.example", 9092),
        (1, "b1.example", 9092),
        (2, "b2.example", 9092),
        (3, "b3.example", 9092),
    ]
    (partition,) = answer.topics[0].partitions
    assert (partition.error_code, partition.leader, partition.leader_epoch) == (0, 2, 3)
    assert partition.offline_replicas == (1,)
    # other callers (the gRPC door, the node's own lookups) see the live set only
    assert _ids(cache, list_departed=False) == [0, 2, 3]
    assert cache.live_broker_ids() == {0, 2, 3}
    assert cache.broker(1) is None

    clock.advance(DEPARTED_LISTING_MS - 1)
    cache.update(_update(3, (0, 2, 3), leader=2, isr=(2, 3)))  # a later update keeps the time
    assert _ids(cache, list_departed=True) == [0, 1, 2, 3]
    clock.advance(1)
    assert _ids(cache, list_departed=True) == [0, 2, 3]
    cache.update(_update(3, (0, 2, 3), leader=2, isr=(2, 3)))
    assert cache.snapshot.departed == {}


def test_a_broker_that_comes_back_is_live_again_and_no_longer_departed() -> None:
    clock = ManualClock()
    cache = MetadataCache(clock)
    cache.update(_update(2, (0, 1, 2, 3), leader=1, isr=(1, 2, 3)))
    cache.update(_update(3, (0, 2, 3), leader=2, isr=(2, 3)))
    assert set(cache.snapshot.departed) == {1}
    clock.advance(1000)
    cache.update(_update(3, (0, 1, 2, 3), leader=2, isr=(2, 3)))
    assert cache.snapshot.departed == {}
    assert cache.broker(1) == _broker(1)
    # gone again later: its listing counts from the new departure
    clock.advance(60_000)
    cache.update(_update(4, (0, 2, 3), leader=2, isr=(2, 3)))
    clock.advance(DEPARTED_LISTING_MS - 1)
    assert _ids(cache, list_departed=True) == [0, 1, 2, 3]


def test_a_departed_broker_without_the_requests_listener_is_not_listed() -> None:
    clock = ManualClock()
    cache = MetadataCache(clock)
    plain = Broker(  # no KAFKA listener
        node_id=4,
        host="10.0.0.4",
        port=9192,
        endpoints=(BrokerEndPoint("PLAINTEXT", "10.0.0.4", 9192),),
    )
    with_plain = _update(2, (0, 1, 2, 3), leader=1, isr=(1, 2, 3))
    cache.update(
        UpdateMetadataRequest(
            controller_id=0,
            controller_epoch=1,
            live_brokers=(*with_plain.live_brokers, plain),
            partition_states=with_plain.partition_states,
        )
    )
    cache.update(_update(3, (0, 2, 3), leader=2, isr=(2, 3)))
    assert set(cache.snapshot.departed) == {1, 4}
    assert _ids(cache, list_departed=True) == [0, 1, 2, 3]
