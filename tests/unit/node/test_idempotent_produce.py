"""Produce from an idempotent producer through the replica manager: a duplicate is answered
with the original base offset and no error; sequence and epoch errors carry Kafka's codes."""

from __future__ import annotations

from node.core.replica_manager import ReplicaManager
from node.core.requests import ProducePartition, ProduceResult
from odradek.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from odradek.records import Record, build_batch
from tests.unit.node.test_replica_manager import _lead, manager  # noqa: F401  (fixture)


def _produce(rm: ReplicaManager, epoch: int, seq: int, count: int = 2) -> ProduceResult:
    records = build_batch(
        [Record(None, b"v") for _ in range(count)],
        producer_id=5,
        producer_epoch=epoch,
        base_sequence=seq,
    )
    [result] = rm.append_records(
        [ProducePartition(topic="t", partition=0, records=records)], acks=1, timeout_ms=0
    )
    return result


def test_duplicate_answers_the_original_offset_and_errors_map_to_codes(manager) -> None:  # noqa: F811
    partition = _lead(manager)
    assert (_produce(manager, 0, 0).error_code, _produce(manager, 0, 2).base_offset) == (0, 2)
    dup = _produce(manager, 0, 0)
    assert (dup.error_code, dup.base_offset) == (0, 0)
    assert partition.log.log_end_offset == 4
    gap = _produce(manager, 0, 9)
    assert (gap.error_code, gap.base_offset) == (OutOfOrderSequenceError.code, -1)
    assert _produce(manager, 1, 0).error_code == 0
    stale = _produce(manager, 0, 4)
    assert (stale.error_code, stale.base_offset) == (InvalidProducerEpochError.code, -1)
    assert partition.log.log_end_offset == 6
