"""KIP-890's server-side defence (part 1, ``transaction.partition.verification.enable``): before
a producer's first transactional append to a partition in a transaction, the partition's leader
asks the transaction coordinator whether the partition is in that producer's open transaction
(Kafka's ``AddPartitionsToTxnManager`` with AddPartitionsToTxn v4's ``verify_only``). A late
or retried produce of a transaction already ended — which would otherwise open a *hanging*
transaction that holds back every read_committed reader of the partition — is refused with the
coordinator's answer (INVALID_TXN_STATE when the partition is not in the transaction,
PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING, NOT_COORDINATOR...).

A partition whose log already has the producer's transaction open at the same epoch needs no
question (Kafka's ``hasOngoingTransaction``). The question goes to the coordinator through
``verify`` (the node's own coordinator, or the coordinator's node over the inter-broker gRPC
path: :mod:`node.replication.txn_verifier`). Thread-safe; :meth:`TxnVerification.verify`
blocks its thread for the coordinator's answer.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

from node.core.replica_manager import ReplicaManager
from node.core.requests import ProducePartition

__all__ = ["TxnVerification", "Verify", "transactional_producer"]

Partition = tuple[str, int]
Verify = Callable[[str, int, int, Sequence[Partition]], dict[Partition, int]]
"""(transactional id, producer id, epoch, partitions) → error code per partition (0: in the
producer's open transaction)."""

_HEADER = struct.Struct(">qiibIhiqqqhi")
"""Record batch v2's header up to the base sequence."""
_TRANSACTIONAL = 0x10


def transactional_producer(records: bytes) -> tuple[int, int] | None:
    """The (producer id, epoch) of ``records``' first batch if it is transactional, else
    ``None`` (too short, another magic, not transactional: the log's own validation answers
    those)."""
    if len(records) < _HEADER.size:
        return None
    fields = _HEADER.unpack_from(records, 0)
    magic, attributes, producer_id, producer_epoch = fields[3], fields[5], fields[9], fields[10]
    if magic != 2 or not attributes & _TRANSACTIONAL:
        return None
    return int(producer_id), int(producer_epoch)


class TxnVerification:
    """Which partitions of a transactional produce must be verified, and the verification."""

    def __init__(self, replicas: ReplicaManager, verify: Verify) -> None:
        self._replicas = replicas
        self._verify = verify

    def needed(self, partitions: Sequence[ProducePartition]) -> list[tuple[Partition, int, int]]:
        """(partition, producer id, epoch) of each partition whose first batch is
        transactional and whose log has no transaction of that producer and epoch open."""
        out = []
        for data in partitions:
            producer = transactional_producer(data.records)
            if producer is None:
                continue
            hosted = self._replicas.partition(data.topic, data.partition)
            if hosted is None:
                continue  # the append answers UNKNOWN_TOPIC_OR_PARTITION
            entry = hosted.log.producer_entry(producer[0])
            if (
                entry is not None
                and entry.producer_epoch == producer[1]
                and entry.current_txn_first_offset >= 0
            ):
                continue
            out.append(((data.topic, data.partition), *producer))
        return out

    def verify(
        self, transactional_id: str, needed: Sequence[tuple[Partition, int, int]]
    ) -> dict[Partition, int]:
        """The coordinator's answer for each partition of ``needed`` (grouped by producer)."""
        by_producer: dict[tuple[int, int], list[Partition]] = {}
        for tp, producer_id, epoch in needed:
            by_producer.setdefault((producer_id, epoch), []).append(tp)
        out: dict[Partition, int] = {}
        for (producer_id, epoch), tps in by_producer.items():
            out.update(self._verify(transactional_id, producer_id, epoch, tps))
        return out
