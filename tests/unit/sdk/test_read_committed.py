"""A read_committed fetch answer as Kafka's CompletedFetch reads it: the batches of aborted
transactions (by the answer's producer ids and first offsets) and every transaction marker are
dropped, committed and non-transactional records kept, and the next fetch starts after the
last batch, skipped ones included; read_uncommitted keeps every record."""

from __future__ import annotations

from odradek import TopicPartition
from odradek.client.fetcher import parse_fetched
from odradek.records import Record, build_batch
from odradek.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_txn_marker,
)

T0 = TopicPartition("t", 0)
ABORTED, COMMITTED, PLAIN = 7, 8, 9


def batch(offset: int, pid: int, *values: bytes, transactional: bool = True) -> bytes:
    return build_batch(
        [Record(key=None, value=v, timestamp=0) for v in values],
        base_offset=offset,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=offset,
        is_transactional=transactional,
    )


def marker(offset: int, pid: int, kind: ControlRecordType) -> bytes:
    return build_end_txn_marker(
        EndTransactionMarker(kind, 0),
        producer_id=pid,
        producer_epoch=0,
        timestamp=0,
        base_offset=offset,
    )


# offsets: 0-1 aborted txn, 2 committed txn, 3 plain, 4 aborted txn, 5 ABORT, 6 COMMIT,
# 7 the aborted producer's next (committed) transaction, 8 its COMMIT
LOG = b"".join(
    [
        batch(0, ABORTED, b"a0", b"a1"),
        batch(2, COMMITTED, b"c0"),
        batch(3, PLAIN, b"p0", transactional=False),
        batch(4, ABORTED, b"a2"),
        marker(5, ABORTED, ControlRecordType.ABORT),
        marker(6, COMMITTED, ControlRecordType.COMMIT),
        batch(7, ABORTED, b"c1"),
        marker(8, ABORTED, ControlRecordType.COMMIT),
    ]
)


def values(fetched: object) -> list[bytes | None]:
    return [r.value for r in fetched.records]  # type: ignore[attr-defined]


def test_read_committed_drops_aborted_transactions_and_markers() -> None:
    fetched = parse_fetched(T0, LOG, 0, aborted_transactions=[(ABORTED, 0)])
    assert values(fetched) == [b"c0", b"p0", b"c1"]
    assert [r.offset for r in fetched.records] == [2, 3, 7]
    assert fetched.next_offset == 9


def test_an_aborted_transaction_starting_later_drops_only_what_follows_it() -> None:
    # the answer names the producer's aborted transaction from offset 4: 0-1 were committed
    fetched = parse_fetched(T0, LOG, 0, aborted_transactions=[(ABORTED, 4)])
    assert values(fetched) == [b"a0", b"a1", b"c0", b"p0", b"c1"]


def test_a_fetch_from_inside_an_aborted_transaction() -> None:
    fetched = parse_fetched(T0, LOG, 1, aborted_transactions=[(ABORTED, 0)])
    assert values(fetched) == [b"c0", b"p0", b"c1"]


def test_no_aborted_transaction_keeps_every_record_but_the_markers() -> None:
    fetched = parse_fetched(T0, LOG, 0, aborted_transactions=[])
    assert values(fetched) == [b"a0", b"a1", b"c0", b"p0", b"a2", b"c1"]


def test_read_uncommitted_keeps_every_record() -> None:
    fetched = parse_fetched(T0, LOG, 0)
    assert values(fetched) == [b"a0", b"a1", b"c0", b"p0", b"a2", b"c1"]
    assert fetched.next_offset == 9
