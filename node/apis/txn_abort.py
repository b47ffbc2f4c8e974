"""An operator's abort of one producer's transaction on one partition, whatever the door: the
policy of Kafka's ``kafka-transactions.sh abort`` (its ``AbortTransactionHandler`` sends
WriteTxnMarkers with an ABORT marker to the partition's leader; ``KafkaApis`` answers that
only a caller with CLUSTER_ACTION on the cluster, as it does for a coordinator's markers).

==================  ===========================================================  ===========
call                checks, in Kafka's order                                     codes
==================  ===========================================================  ===========
abort_transaction   CLUSTER_ACTION on the cluster; then the marker is written    31; 6, 3,
                    as a coordinator's would be (:mod:`node.core.txn_markers`):  47, 52
                    NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
                    INVALID_PRODUCER_EPOCH (an older epoch than the partition's
                    producer), TRANSACTION_COORDINATOR_FENCED (an older
                    coordinator epoch than the producer's last marker)
==================  ===========================================================  ===========

The producer's epoch and the coordinator epoch of its last marker are what DescribeProducers
answers for the partition; the caller passes them back, as Kafka's tool does. Served over gRPC
only (the Admin service's AbortTransaction): the Kafka door serves no WriteTxnMarkers to
clients. Thread-safe; blocks its thread while the marker replicates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.core.txn_markers import OnWritten, TxnMarker, write_txn_markers
from node.security.auth_helper import AuthHelper, Caller
from odradek.acl import AclOperation

if TYPE_CHECKING:
    from node.core.replica_manager import ReplicaManager

__all__ = ["TxnAbortApi"]


class TxnAbortApi:
    """``auth`` ``None``: everything allowed."""

    def __init__(
        self, replicas: ReplicaManager, auth: AuthHelper | None, on_written: OnWritten | None
    ) -> None:
        self._replicas = replicas
        self._auth = auth
        self._on_written = on_written

    def abort_transaction(
        self,
        caller: Caller,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        timeout_ms: int,
    ) -> tuple[int, str]:
        """The error code and message of writing the ABORT marker (0 once it replicated)."""
        if self._auth is not None:
            refusal = self._auth.cluster_refusal(caller, AclOperation.CLUSTER_ACTION)
            if refusal is not None:
                return refusal.error_code, refusal.error_message
        marker = TxnMarker(
            producer_id, producer_epoch, False, coordinator_epoch, ((topic, partition),)
        )
        (result,) = write_txn_markers(
            self._replicas, [marker], timeout_ms=timeout_ms, on_written=self._on_written
        )
        return result.error_code, result.error_message
