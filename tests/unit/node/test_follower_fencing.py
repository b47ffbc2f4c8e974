"""A follower's fetched answer applies only while the replica still follows at the leader epoch
it was fetched for.

The window: a fetcher has checked that its partition is still its own and is about to append
an answer from the old leader when the controller's LeaderAndIsr makes this replica leader.
Written there, the old epoch's batches sat above the new epoch's recorded start; a follower of
the new leader then appended them, was told it diverged, cut them, and fetched them again,
forever, holding the high watermark (a CI run's acks=-1 produce timed out for minutes while the
ISR shrank and grew back every 5 s).
"""

from __future__ import annotations

import logging

import grpc
import pytest

from node.config import NodeConfig
from node.core.replica_manager import ReplicaManager
from node.core.requests import (
    Broker,
    LeaderAndIsrPartition,
    LeaderAndIsrRequest,
)
from node.replication.fetcher import ReplicaFetcher, ReplicaFetcherManager
from odradek.errors import FencedLeaderEpochError
from odradek.v1 import odradek_pb2 as pb
from tests.storage_helpers import make_batch


@pytest.fixture
def config(node_config: NodeConfig) -> NodeConfig:
    return node_config


@pytest.fixture
def manager(replica_manager: ReplicaManager) -> ReplicaManager:
    return replica_manager


def _leader_and_isr(
    rm: ReplicaManager, *, leader: int, epoch: int, isr: tuple[int, ...], partition: int = 0
) -> None:
    code, results = rm.become_leader_or_follower(
        LeaderAndIsrRequest(
            controller_id=0,
            controller_epoch=1,
            broker_epoch=7,
            partition_states=(
                LeaderAndIsrPartition(
                    topic="t",
                    partition=partition,
                    controller_epoch=1,
                    leader=leader,
                    leader_epoch=epoch,
                    isr=isr,
                    partition_epoch=epoch,
                    replicas=(0, 1, 2),
                ),
            ),
            topic_configs={"t": {}},
        )
    )
    assert code == 0 and results[0].error_code == 0


def _old_epochs_batch(base_offset: int) -> bytes:
    return make_batch(3, base_offset=base_offset, partition_leader_epoch=0)


def _follow_then_lead(rm: ReplicaManager):
    """Node 0 copies offsets 0-2 from leader 1 at epoch 0, then leads at epoch 1 from 3."""
    _leader_and_isr(rm, leader=1, epoch=0, isr=(0, 1, 2))
    partition = rm.partition("t", 0)
    assert partition is not None
    partition.append_records_as_follower(_old_epochs_batch(0), 0, leader_epoch=0)
    return partition


def test_a_new_leader_refuses_what_was_fetched_from_the_old_one(manager):
    partition = _follow_then_lead(manager)
    _leader_and_isr(manager, leader=0, epoch=1, isr=(0, 2))
    assert partition.leader_epoch_start_offset == 3
    with pytest.raises(FencedLeaderEpochError, match="moved to epoch 1 \\(it leads now\\)"):
        partition.append_records_as_follower(_old_epochs_batch(3), 3, leader_epoch=0)
    with pytest.raises(FencedLeaderEpochError):
        partition.update_follower_high_watermark(6, 2, leader_epoch=0)
    with pytest.raises(FencedLeaderEpochError):
        partition.truncate_to(0, leader_epoch=0)
    with pytest.raises(FencedLeaderEpochError):
        partition.truncate_fully_and_start_at(10, leader_epoch=0)
    log = partition.log
    assert (log.log_start_offset, log.log_end_offset) == (0, 3)
    assert log.leader_epoch_entries()[-1] == (1, 3)  # the new epoch starts where it ends


def test_a_follower_of_a_newer_epoch_refuses_the_older_epochs_answer(manager):
    partition = _follow_then_lead(manager)
    _leader_and_isr(manager, leader=2, epoch=1, isr=(0, 2))
    with pytest.raises(FencedLeaderEpochError, match="it follows node 2 now"):
        partition.append_records_as_follower(_old_epochs_batch(3), 3, leader_epoch=0)
    partition.append_records_as_follower(
        make_batch(3, base_offset=3, partition_leader_epoch=1), 3, leader_epoch=1
    )
    assert partition.log.log_end_offset == 6


def test_the_fetcher_drops_an_answer_processed_after_the_replica_became_leader(
    manager, config, clock, caplog
):
    """The fetcher's own path through the window: its membership check passed (the partition
    was still in its map), then the LeaderAndIsr made the replica leader."""
    partition = _follow_then_lead(manager)
    channel = grpc.insecure_channel("127.0.0.1:1")  # nothing listens: its fetches just fail
    fetcher = ReplicaFetcher(
        Broker(node_id=1, host="127.0.0.1", port=1),
        config=config,
        clock=clock,
        channel=channel,
        broker_epoch=lambda: 7,
    )
    try:
        fetcher.add(partition)
        ready = dict(fetcher._partitions)
        ready[("t", 0)].fetch_offset = 3
        _leader_and_isr(manager, leader=0, epoch=1, isr=(0, 2))
        answer = pb.FetchPartitionResponse(
            topic="t", partition=0, high_watermark=6, records=_old_epochs_batch(3)
        )
        with caplog.at_level(logging.INFO, logger="node.replication.fetcher"):
            fetcher._process(answer, ready)
    finally:
        fetcher.shutdown()
        channel.close()
    assert partition.log.log_end_offset == 3
    assert partition.log.high_watermark <= 3
    assert any("fetched at leader epoch 0" in m and "dropped" in m for m in caplog.messages)
    assert ready[("t", 0)].delayed_until_ms == 0  # dropped quietly, not an error to back off


def test_a_leader_back_at_another_address_keeps_every_partition_fetched(manager, config, clock):
    """The first partition told of the leader's new address replaces its fetcher; the others
    that fetcher followed, whose leadership did not change, move along instead of being left
    without one."""
    for p in (0, 1):
        _leader_and_isr(manager, leader=1, epoch=0, isr=(0, 1, 2), partition=p)
    channels: list[grpc.Channel] = []

    def channel_for(address: str) -> grpc.Channel:
        channels.append(grpc.insecure_channel(address))  # nothing listens: fetches just fail
        return channels[-1]

    fetchers = ReplicaFetcherManager(config, clock, channel_for, lambda: 7)
    try:
        first, second = manager.partition("t", 0), manager.partition("t", 1)
        assert first is not None and second is not None
        fetchers.add_partition(first, Broker(node_id=1, host="127.0.0.1", port=1))
        fetchers.add_partition(second, Broker(node_id=1, host="127.0.0.1", port=1))
        fetchers.add_partition(first, Broker(node_id=1, host="127.0.0.1", port=2))
        [fetcher] = fetchers._fetchers.values()
        assert fetcher.leader.port == 2
        assert {(p.topic, p.partition) for p in fetcher.partitions()} == {("t", 0), ("t", 1)}
    finally:
        fetchers.shutdown()
        for channel in channels:
            channel.close()
