"""KIP-951's leader discovery: a Produce or Fetch answer that refuses a partition because this
node does not lead it names the partition's current leader and that leader's endpoint, so a
client redirects at once instead of refreshing its metadata first.

Kafka's ``KafkaApis.getCurrentLeader``: the leader id and epoch are the local replica's, whose
view a LeaderAndIsr updates first, else the metadata cache's (a partition this node hosts no
replica of); the endpoint is the live broker's on the listener the request came in on (none
when the leader is unknown, not live, or has no such listener: the client then refreshes its
metadata as before). The errors that carry a leader are Kafka's: NOT_LEADER_OR_FOLLOWER for
Produce (v10+), NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH for Fetch (v16+).

Door-neutral: :class:`~node.apis.records.RecordApis` calls it for either door. Pure reads of the
replica manager's and metadata cache's current views; thread-safe.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TypeVar

from node.core.metadata_cache import MetadataCache
from node.core.replica_manager import ReplicaManager
from node.core.requests import Broker, FetchResult, LeaderIdAndEpoch, ProduceResult
from odradek.errors import FencedLeaderEpochError, NotLeaderOrFollowerError

__all__ = ["FETCH_REDIRECTS", "PRODUCE_REDIRECTS", "current_leader", "with_current_leaders"]

PRODUCE_REDIRECTS = frozenset({NotLeaderOrFollowerError.code})
"""The Produce errors whose partitions name their current leader (``handleProduceRequest``)."""
FETCH_REDIRECTS = frozenset({NotLeaderOrFollowerError.code, FencedLeaderEpochError.code})
"""The Fetch errors whose partitions name their current leader (``handleFetchRequest``)."""

R = TypeVar("R", ProduceResult, FetchResult)


def current_leader(
    replicas: ReplicaManager, metadata: MetadataCache, topic: str, partition: int
) -> LeaderIdAndEpoch:
    """The partition's leader and epoch as this node knows them ((-1, -1): not known)."""
    hosted = replicas.partition(topic, partition)
    if hosted is not None and hosted.leader_epoch >= 0:
        return LeaderIdAndEpoch(hosted.leader_id, hosted.leader_epoch)
    state = metadata.snapshot.partitions.get((topic, partition))
    if state is None:
        return LeaderIdAndEpoch()
    return LeaderIdAndEpoch(state.leader, state.leader_epoch)


def with_current_leaders(
    replicas: ReplicaManager,
    metadata: MetadataCache,
    results: Sequence[R],
    errors: frozenset[int],
    listener_name: str | None,
) -> tuple[list[R], tuple[Broker, ...]]:
    """``results`` with ``current_leader`` set on each whose error is in ``errors``, and the
    endpoints of those leaders on ``listener_name`` (each once, by node id)."""
    out: list[R] = []
    endpoints: dict[int, Broker] = {}
    for r in results:
        if r.error_code not in errors:
            out.append(r)
            continue
        leader = current_leader(replicas, metadata, r.topic, r.partition)
        out.append(dataclasses.replace(r, current_leader=leader))
        if leader.leader_id >= 0 and leader.leader_id not in endpoints:
            broker = metadata.broker(leader.leader_id)
            reachable = None if broker is None else broker.on_listener(listener_name)
            if reachable is not None:
                endpoints[leader.leader_id] = reachable
    return out, tuple(endpoints[k] for k in sorted(endpoints))
