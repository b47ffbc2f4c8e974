"""How a transaction coordinator's markers reach a partition's leader: the node's own core when
it leads the partition itself, else WriteTxnMarkers on the leader's Replication service over
the inter-broker listener (Kafka's ``TransactionMarkerChannelManager`` network client). The
channel is the :data:`~node.transaction.txn_marker_sender.WriteMarkers` callable of the
:class:`~node.transaction.txn_marker_sender.TxnMarkerSender`. Thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import grpc

from node.core.metadata_cache import MetadataCache
from node.core.replica_manager import ReplicaManager
from node.core.txn_markers import OnWritten, TxnMarker, TxnMarkerResult, write_txn_markers
from odradek.errors import BrokerNotAvailableError
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = ["TxnMarkerChannel"]


class TxnMarkerChannel:
    """``channel(leader, markers)``: one result per (marker, partition). Raises
    ``BrokerNotAvailableError`` for a leader the metadata does not know and ``grpc.RpcError``
    when it is not reached (the sender retries)."""

    def __init__(
        self,
        replicas: ReplicaManager,
        metadata: MetadataCache,
        channel_for: Callable[[str], grpc.Channel],
        *,
        timeout_ms: int,
        on_written: OnWritten | None = None,
    ) -> None:
        self._replicas = replicas
        self._metadata = metadata
        self._channel_for = channel_for
        self._timeout_ms = timeout_ms
        self._on_written = on_written

    def __call__(self, leader: int, markers: Sequence[TxnMarker]) -> list[TxnMarkerResult]:
        if leader == self._replicas.node_id:
            return write_txn_markers(
                self._replicas, markers, timeout_ms=self._timeout_ms, on_written=self._on_written
            )
        broker = self._metadata.snapshot.brokers.get(leader)
        if broker is None:
            raise BrokerNotAvailableError(f"node {leader} is not live")
        request = pb.WriteTxnMarkersRequest(
            markers=[
                pb.WritableTxnMarker(
                    producer_id=m.producer_id,
                    producer_epoch=m.producer_epoch,
                    commit=m.commit,
                    coordinator_epoch=m.coordinator_epoch,
                    partitions=[
                        pb.TxnMarkerTopicPartition(topic=t, partition=p) for t, p in m.partitions
                    ],
                )
                for m in markers
            ],
            timeout_ms=self._timeout_ms,
        )
        stub = pb_grpc.ReplicationStub(self._channel_for(f"{broker.host}:{broker.port}"))
        response = stub.WriteTxnMarkers(request, timeout=self._timeout_ms / 1000 + 5)
        return [
            TxnMarkerResult(r.producer_id, r.topic, r.partition, r.error_code, r.error_message)
            for r in response.results
        ]
