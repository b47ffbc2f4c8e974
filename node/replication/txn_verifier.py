"""How a partition leader asks a transactional id's coordinator KIP-890's question (is this
partition in the producer's open transaction?): the node's own coordinator when it leads the
id's ``__transaction_state`` partition, else VerifyTxnPartitions on the coordinator's
Replication service over the inter-broker listener. The
:data:`~node.apis.txn_verification.Verify` callable of the produce path. A coordinator that is
unknown or not reached answers NOT_COORDINATOR (retriable for the producer). Thread-safe.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import grpc

from node.core.metadata_cache import MetadataCache
from node.transaction.txn_coordinator import TransactionCoordinator
from odradek.errors import NotCoordinatorError
from odradek.txn_records import TRANSACTION_STATE_TOPIC
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = ["TxnVerifier"]

log = logging.getLogger(__name__)

Partition = tuple[str, int]


class TxnVerifier:
    def __init__(
        self,
        node_id: int,
        coordinator: TransactionCoordinator,
        metadata: MetadataCache,
        channel_for: Callable[[str], grpc.Channel],
        *,
        timeout_ms: int,
    ) -> None:
        self._node_id = node_id
        self._coordinator = coordinator
        self._metadata = metadata
        self._channel_for = channel_for
        self._timeout_s = timeout_ms / 1000

    def __call__(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[Partition],
    ) -> dict[Partition, int]:
        snapshot = self._metadata.snapshot
        partition = self._coordinator.partition_for(transactional_id)
        state = snapshot.partitions.get((TRANSACTION_STATE_TOPIC, partition))
        leader = -1 if state is None else state.leader
        if leader == self._node_id:
            return self._coordinator.verify_partitions(
                transactional_id, producer_id, producer_epoch, partitions
            )
        broker = snapshot.brokers.get(leader)
        if broker is None:
            return dict.fromkeys(partitions, NotCoordinatorError.code)
        request = pb.VerifyTxnPartitionsRequest(
            transactional_id=transactional_id,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            partitions=[pb.TxnMarkerTopicPartition(topic=t, partition=p) for t, p in partitions],
        )
        stub = pb_grpc.ReplicationStub(self._channel_for(f"{broker.host}:{broker.port}"))
        try:
            response = stub.VerifyTxnPartitions(request, timeout=self._timeout_s)
        except grpc.RpcError as e:
            log.info("verifying %s with node %d failed: %s", transactional_id, leader, e)
            return dict.fromkeys(partitions, NotCoordinatorError.code)
        return {(r.topic, r.partition): r.error_code for r in response.results}
