"""find-hanging's rule (odradek.cli.hanging), on plain values: which open transactions are
candidates by age, and which of them no coordinator will end."""

from __future__ import annotations

from odradek.cli.hanging import OpenTransaction, candidates, hanging_table, is_hanging
from odradek.client.txn_admin import ProducerState, TransactionDescription
from odradek.client.types import TopicPartition

TP = TopicPartition("t", 0)
NOW = 10_000_000


def producer(start: int | None, last: int, pid: int = 7, epoch: int = 2) -> ProducerState:
    return ProducerState(pid, epoch, 0, last, None, start)


def described(
    state: str, pid: int = 7, epoch: int = 2, tps: frozenset[TopicPartition] = frozenset({TP})
) -> TransactionDescription:
    return TransactionDescription("app", 1, state, pid, epoch, 60_000, NOW - 5, tps)


def test_candidates_are_open_and_older_than_the_timeout() -> None:
    old_open = producer(start=3, last=NOW - 60_001)
    found = candidates(
        {TP: [old_open, producer(None, NOW - 999_999), producer(4, NOW - 60_000)]}, 60_000, NOW
    )
    assert found == [OpenTransaction(TP, old_open)]


def test_hanging_unless_the_coordinator_has_it_open_with_the_partition() -> None:
    o = OpenTransaction(TP, producer(3, 0))
    assert is_hanging(o, None)
    assert not is_hanging(o, described("Ongoing"))
    assert not is_hanging(o, described("PrepareAbort"))
    assert is_hanging(o, described("Empty"))
    assert is_hanging(o, described("CompleteCommit"))
    assert is_hanging(o, described("Ongoing", epoch=3))
    assert is_hanging(o, described("Ongoing", tps=frozenset({TopicPartition("t", 1)})))


def test_the_table_has_kafkas_columns() -> None:
    lines = hanging_table([OpenTransaction(TP, producer(3, NOW - 120_000))], NOW)
    assert lines[0].split() == [
        "Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
        "LastTimestamp", "Duration(min)",
    ]  # fmt: skip
    assert lines[1].split() == ["t", "0", "7", "2", "-1", "3", str(NOW - 120_000), "2"]
