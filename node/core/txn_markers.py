"""WriteTxnMarkers on a partition leader: the COMMIT or ABORT markers a transaction
coordinator sends to end a transaction on each of its partitions (Kafka's
``KafkaApis.handleWriteTxnMarkersRequest``, which appends them as the coordinator with
acks=-1).

Each marker is appended to its partition's log as leader
(:meth:`~node.core.partition.Partition.append_transaction_marker`) and the answer waits, as an
acks=-1 produce does, until the high watermark passes every marker written (or the leadership
moves, or ``timeout_ms`` passes). Per partition: NOT_LEADER_OR_FOLLOWER where this node does not
lead it, UNKNOWN_TOPIC_OR_PARTITION where it hosts no replica (a deleted topic: the coordinator
then gives up on it), INVALID_PRODUCER_EPOCH for a marker of an older epoch than the
partition's producer, TRANSACTION_COORDINATOR_FENCED for one from an older coordinator.
``on_written`` is told of every marker written (the group coordinator makes a transaction's
pending offsets visible, or drops them, when its marker reaches ``__consumer_offsets``).

Thread-safe; :func:`write_txn_markers` blocks its thread while the markers replicate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from node.core.pending_append import PendingAppend
from node.core.requests import ProduceResult
from odradek.errors import UnknownTopicOrPartitionError
from odradek.records.control import ControlRecordType, EndTransactionMarker

if TYPE_CHECKING:
    from node.core.partition import Partition
    from node.core.replica_manager import ReplicaManager

__all__ = ["TxnMarker", "TxnMarkerResult", "write_txn_markers"]


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """One producer's transaction ended on ``partitions`` (Kafka's
    ``WritableTxnMarker``)."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class TxnMarkerResult:
    producer_id: int
    topic: str
    partition: int
    error_code: int = 0
    error_message: str = ""


OnWritten = Callable[[str, int, int, bool], None]
"""(topic, partition, producer id, commit): a marker written and replicated."""


def write_txn_markers(
    replicas: ReplicaManager,
    markers: Sequence[TxnMarker],
    *,
    timeout_ms: int,
    on_written: OnWritten | None = None,
) -> list[TxnMarkerResult]:
    """Append every marker (see the module doc); one result per (marker, partition) in
    request order."""
    results: list[ProduceResult | None] = []
    owners: list[TxnMarker] = []
    waiting: list[tuple[int, Partition, int, int]] = []
    for marker in markers:
        control = EndTransactionMarker(
            ControlRecordType.COMMIT if marker.commit else ControlRecordType.ABORT,
            marker.coordinator_epoch,
        )
        for topic, index in marker.partitions:
            owners.append(marker)
            partition = replicas.partition(topic, index)
            try:
                if partition is None:
                    raise UnknownTopicOrPartitionError(
                        f"node {replicas.node_id} hosts no replica of {topic}-{index}"
                    )
                info, term = partition.append_transaction_marker(
                    marker.producer_id, marker.producer_epoch, control
                )
            except Exception as e:
                from node.core.replica_manager import error_of

                err = error_of(e)
                results.append(ProduceResult(topic, index, err.code, error_message=err.message))
                continue
            results.append(ProduceResult(topic, index, base_offset=info.first_offset))
            waiting.append((len(results) - 1, partition, info.last_offset + 1, term))
    deadline = replicas.clock.monotonic_ms() + max(0, timeout_ms)
    answer = PendingAppend(replicas, results, waiting, deadline, timeout_ms, -1).wait()
    out = []
    for marker, r in zip(owners, answer, strict=True):
        if r.error_code == 0 and on_written is not None:
            on_written(r.topic, r.partition, marker.producer_id, marker.commit)
        out.append(
            TxnMarkerResult(marker.producer_id, r.topic, r.partition, r.error_code, r.error_message)
        )
    return out
