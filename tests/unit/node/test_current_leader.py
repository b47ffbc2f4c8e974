"""KIP-951's leader discovery in the policy layer (node/apis/current_leader.py): a partition
refused NOT_LEADER_OR_FOLLOWER (or, for Fetch, FENCED_LEADER_EPOCH) names its current leader
from the local replica, else the metadata cache, and the leader's endpoint on the request's
listener."""

from __future__ import annotations

from node.apis.current_leader import FETCH_REDIRECTS, PRODUCE_REDIRECTS, with_current_leaders
from node.core.requests import (
    Broker,
    BrokerEndPoint,
    FetchResult,
    LeaderAndIsrPartition,
    LeaderAndIsrRequest,
    LeaderIdAndEpoch,
    ProduceResult,
    UpdateMetadataRequest,
)
from odradek.errors import (
    FencedLeaderEpochError,
    MessageTooLargeError,
    NotLeaderOrFollowerError,
)

NOT_LEADER = NotLeaderOrFollowerError.code


def _state(topic: str, leader: int, epoch: int) -> LeaderAndIsrPartition:
    return LeaderAndIsrPartition(
        topic=topic,
        partition=0,
        controller_epoch=1,
        leader=leader,
        leader_epoch=epoch,
        isr=(0, 1, 2),
        partition_epoch=0,
        replicas=(0, 1, 2),
    )


def _brokers() -> tuple[Broker, ...]:
    """Nodes 0-2, each with a CLIENT and a REPLICATION listener; node 2 is not live."""
    return tuple(
        Broker(
            node_id=i,
            host=f"10.0.0.{i}",
            port=9192,
            rack="r1" if i == 1 else "",
            endpoints=(
                BrokerEndPoint("CLIENT", f"b{i}.example", 9092),
                BrokerEndPoint("REPLICATION", f"10.0.0.{i}", 9192),
            ),
        )
        for i in range(2)
    )


def test_a_refused_partition_names_the_local_replicas_leader_and_its_client_endpoint(
    replica_manager,
):
    metadata = replica_manager.metadata
    metadata.update(
        UpdateMetadataRequest(
            controller_id=0,
            controller_epoch=1,
            live_brokers=_brokers(),
            # the metadata cache is older than the replica's LeaderAndIsr
            partition_states=(_state("t", 0, 2), _state("other", 1, 4), _state("gone", 2, 9)),
        )
    )
    replica_manager.become_leader_or_follower(
        LeaderAndIsrRequest(
            controller_id=0,
            controller_epoch=1,
            broker_epoch=7,
            partition_states=(_state("t", 1, 3),),
        )
    )
    results = [
        ProduceResult("t", 0, NOT_LEADER),
        ProduceResult("other", 0, NOT_LEADER),  # hosted elsewhere: the metadata cache's view
        ProduceResult("gone", 0, NOT_LEADER),  # led by a node that is not live: no endpoint
        ProduceResult("unknown", 0, NOT_LEADER),  # not known at all
        ProduceResult("t", 0, MessageTooLargeError.code),  # not a redirect
        ProduceResult("t", 0, 0, base_offset=5),
    ]
    out, endpoints = with_current_leaders(
        replica_manager, metadata, results, PRODUCE_REDIRECTS, "CLIENT"
    )
    assert [r.current_leader for r in out] == [
        LeaderIdAndEpoch(1, 3),
        LeaderIdAndEpoch(1, 4),
        LeaderIdAndEpoch(2, 9),
        LeaderIdAndEpoch(-1, -1),
        None,
        None,
    ]
    assert endpoints == (Broker(1, "b1.example", 9092, "r1"),)
    # a listener the leader does not have: the leader is named, its endpoint is not
    _, endpoints = with_current_leaders(
        replica_manager, metadata, results, PRODUCE_REDIRECTS, "OTHER"
    )
    assert endpoints == ()


def test_fetch_redirects_a_fenced_epoch_too_and_produce_does_not(replica_manager):
    metadata = replica_manager.metadata
    metadata.update(
        UpdateMetadataRequest(
            controller_id=0,
            controller_epoch=1,
            live_brokers=_brokers(),
            partition_states=(_state("t", 1, 3),),
        )
    )
    fenced = FencedLeaderEpochError.code
    out, endpoints = with_current_leaders(
        replica_manager, metadata, [FetchResult("t", 0, fenced)], FETCH_REDIRECTS, "CLIENT"
    )
    assert out[0].current_leader == LeaderIdAndEpoch(1, 3)
    assert [b.node_id for b in endpoints] == [1]
    produced, endpoints = with_current_leaders(
        replica_manager, metadata, [ProduceResult("t", 0, fenced)], PRODUCE_REDIRECTS, "CLIENT"
    )
    assert produced[0].current_leader is None and endpoints == ()
