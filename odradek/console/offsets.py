"""Each partition's log start offset, last stable offset, high watermark and log end offset,
as the leader knows them — what the SDK's ``beginning_offsets``/``end_offsets`` do not give
together (the log end offset, beyond the high watermark, is in no consumer call).

Two rounds to each partition's leader, through the SDK's connection helpers: ``ListOffsets``
(latest: the high watermark), then a ``Fetch`` at that offset with no bytes and no wait, whose
answer carries the leader's high watermark, last stable offset (where read_committed consumers
stop: the first offset of the oldest open transaction), log start and log end offset (a
consumer's read at the high watermark is always in range and returns nothing).

Blocking; thread-safe (the metadata cache and the pool are).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import grpc

from odradek.client.connection import ConnectionPool
from odradek.client.leaders import Answer, LeaderTarget, send_to_leaders
from odradek.client.metadata import MetadataCache
from odradek.client.types import TopicPartition
from odradek.clock import Clock
from odradek.errors import OdradekError
from odradek.v1 import odradek_pb2 as pb

__all__ = ["PartitionOffsets", "partition_offsets"]

_LATEST = -1


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """Where a partition's log starts, what is committed (the high watermark) and where the
    leader's log ends. ``records`` is the count between the log start and the high watermark
    (an upper bound on a compacted topic)."""

    log_start_offset: int
    high_watermark: int
    log_end_offset: int
    last_stable_offset: int = -1
    """Where read_committed consumers stop: the first offset of the oldest open transaction,
    else the high watermark (-1: not known)."""

    @property
    def open_transaction_offsets(self) -> int:
        """Offsets between the last stable offset and the high watermark: held back from
        read_committed consumers by an open transaction."""
        if self.last_stable_offset < 0:
            return 0
        return max(self.high_watermark - self.last_stable_offset, 0)

    @property
    def records(self) -> int:
        return max(self.high_watermark - self.log_start_offset, 0)


def partition_offsets(
    pool: ConnectionPool,
    metadata: MetadataCache,
    clock: Clock,
    partitions: Iterable[TopicPartition],
    *,
    timeout_ms: int = 30_000,
    retry_backoff_ms: int = 100,
) -> dict[TopicPartition, PartitionOffsets | OdradekError]:
    """Per partition its offsets, or the typed error its leader answered (e.g.
    :class:`~odradek.errors.TopicAuthorizationFailedError`)."""
    wanted = dict.fromkeys(partitions, 0)
    timeout_s = timeout_ms / 1000

    def list_latest(
        address: str, targets: list[LeaderTarget[int]]
    ) -> grpc.Future[pb.ListOffsetsResponse]:
        request = pb.ListOffsetsRequest(
            partitions=[
                pb.ListOffsetsPartition(
                    topic=t.tp.topic,
                    partition=t.tp.partition,
                    timestamp=_LATEST,
                    current_leader_epoch=t.leader_epoch,
                )
                for t in targets
            ]
        )
        return pool.broker(address).ListOffsets.future(request, timeout=timeout_s)

    def latest_answers(response: pb.ListOffsetsResponse) -> Iterable[Answer[int]]:
        for p in response.partitions:
            yield Answer(
                TopicPartition(p.topic, p.partition), p.error_code, p.error_message, p.offset
            )

    ends = send_to_leaders(
        metadata,
        clock,
        wanted,
        list_latest,
        latest_answers,
        timeout_ms=timeout_ms,
        retry_backoff_ms=retry_backoff_ms,
    )
    out: dict[TopicPartition, PartitionOffsets | OdradekError] = {}
    at: dict[TopicPartition, int] = {}
    for tp, end in ends.items():
        if isinstance(end, OdradekError):
            out[tp] = end
        else:
            at[tp] = end

    def fetch(address: str, targets: list[LeaderTarget[int]]) -> grpc.Future[pb.FetchResponse]:
        request = pb.FetchRequest(
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=0,
            partitions=[
                pb.FetchPartition(
                    topic=t.tp.topic,
                    partition=t.tp.partition,
                    fetch_offset=t.item,
                    partition_max_bytes=0,
                    current_leader_epoch=t.leader_epoch,
                )
                for t in targets
            ],
        )
        return pool.broker(address).Fetch.future(request, timeout=timeout_s)

    def fetch_answers(response: pb.FetchResponse) -> Iterable[Answer[PartitionOffsets]]:
        for p in response.partitions:
            yield Answer(
                TopicPartition(p.topic, p.partition),
                p.error_code,
                p.error_message,
                PartitionOffsets(
                    p.log_start_offset, p.high_watermark, p.log_end_offset, p.last_stable_offset
                ),
            )

    found = send_to_leaders(
        metadata,
        clock,
        at,
        fetch,
        fetch_answers,
        timeout_ms=timeout_ms,
        retry_backoff_ms=retry_backoff_ms,
    )
    out.update(found)
    return out
