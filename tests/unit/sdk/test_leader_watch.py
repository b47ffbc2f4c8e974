"""How the producer follows a new leader promptly (odradek.client.leader_watch): the rules, and
the producer against a fake cluster whose leader hangs and is replaced."""

from __future__ import annotations

from odradek import Producer
from odradek.client.leader_watch import (
    deposed,
    moved_partitions,
    order_candidates,
    stuck_addresses,
    unavailable,
    watch_due,
)
from odradek.client.metadata import ClusterMetadata
from odradek.client.types import TopicPartition
from odradek.errors import NotLeaderOrFollowerError
from odradek.v1 import odradek_pb2 as pb
from tests.integration.helpers import wait_for
from tests.unit.sdk.fake_cluster import FakeCluster

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


def _metadata(*leaders: tuple[int, int]) -> ClusterMetadata:
    """Topic ``t`` with partition p led by ``leaders[p]`` = (node, leader epoch)."""
    return ClusterMetadata.from_response(
        pb.MetadataResponse(
            brokers=[pb.BrokerInfo(node_id=n, host="127.0.0.1", port=9090 + n) for n in range(3)],
            topics=[
                pb.TopicMetadata(
                    name="t",
                    partitions=[
                        pb.PartitionMetadata(
                            partition=p, leader=node, leader_epoch=epoch, replicas=[0, 1, 2]
                        )
                        for p, (node, epoch) in enumerate(leaders)
                    ],
                )
            ],
        )
    )


def test_a_call_outstanding_past_the_limit_is_stuck_and_its_node_asked_last():
    calls = [("a:1", 1_000), ("b:1", 1_900), ("a:1", 1_950)]
    assert stuck_addresses(calls, now_ms=2_000, stuck_after_ms=500) == {"a:1"}
    assert order_candidates(["a:1", "b:1", "c:1"], {"a:1"}) == ["b:1", "c:1", "a:1"]
    assert order_candidates(["a:1"], {"a:1"}) == ["a:1"]  # still asked, last


def test_the_metadata_is_watched_only_in_trouble_and_at_most_every_interval():
    assert watch_due(in_trouble=True, now_ms=1_000, last_watch_ms=800, interval_ms=200)
    assert not watch_due(in_trouble=True, now_ms=999, last_watch_ms=800, interval_ms=200)
    assert not watch_due(in_trouble=False, now_ms=9_999, last_watch_ms=0, interval_ms=200)


def test_a_call_waits_on_a_deposed_leader_only_once_a_newer_epoch_has_another_leader():
    sent = {T0: 4, T1: 2}
    assert not deposed(0, sent, _metadata((0, 4), (1, 2)))
    assert not deposed(0, sent, _metadata((0, 5), (1, 2)))  # re-elected itself
    assert not deposed(0, sent, _metadata((-1, 5), (1, 2)))  # no leader yet
    assert deposed(0, sent, _metadata((2, 5), (1, 2)))
    assert not deposed(0, {T0: -1}, _metadata((2, 5)))  # the epoch was unknown when sent


def test_partitions_with_a_newer_leader_epoch_have_moved():
    before = _metadata((0, 4), (1, 2))
    after = _metadata((2, 5), (1, 2))
    assert moved_partitions(before, after, [T0, T1]) == {T0}
    assert moved_partitions(before, before, [T0, T1]) == set()


def test_a_send_stuck_on_a_hung_leader_goes_to_its_successor_before_the_call_times_out(
    cluster: FakeCluster,
):
    cluster.create_topic("t", 1)
    with Producer(
        cluster.bootstrap,
        linger_ms=0,
        request_timeout_ms=60_000,  # the hung call would wait this long by Kafka's rules
        retry_backoff_ms=50,
        retry_backoff_max_ms=200,  # stuck after 200 ms: the metadata is watched from then
    ) as producer:
        producer.send("t", b"warm-up").result(timeout=10)
        old = cluster.partition(T0).leader
        # the leader sits on the next call, then refuses it: it was deposed meanwhile
        cluster.delay_next_produce(6.0, NotLeaderOrFollowerError.code)
        pending = producer.send("t", b"during")
        # once the hung call is under way, another leader is elected
        wait_for(lambda: len(cluster.calls_of("Produce")) > 1, "the second produce call", 10)
        cluster.set_leader(T0, (old + 1) % 3)
        meta = pending.result(timeout=4)  # before the hung call ends
    assert meta.offset == 1
    assert [r.value for r in cluster.records(T0)] == [b"warm-up", b"during"]


def test_unkeyed_records_leave_a_partition_that_cannot_take_them(cluster: FakeCluster):
    cluster.create_topic("t", 3)
    with Producer(cluster.bootstrap, linger_ms=0) as producer:
        producer.send("t", b"warm-up").result(timeout=10)
        sticky = producer._topics["t"].sticky
        stuck = TopicPartition("t", sticky)
        producer._on_unavailable(frozenset({stuck}))  # as the sender reports it
        info = producer._topics["t"]
        assert sticky not in info.available and info.sticky != sticky
        metas = [producer.send("t", b"%d" % i) for i in range(20)]
        assert all(m.result(timeout=10).partition != sticky for m in metas)
        producer._on_unavailable(frozenset())  # it recovered
        assert producer._topics["t"].available == (0, 1, 2)


def test_failing_partitions_and_those_of_stuck_calls_are_unavailable():
    calls = [("a:1", [T0]), ("b:1", [T1])]
    assert unavailable({TopicPartition("t", 2)}, calls, {"a:1"}) == {
        T0,
        TopicPartition("t", 2),
    }
    assert unavailable(set(), calls, set()) == frozenset()
