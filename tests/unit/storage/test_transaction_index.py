"""TransactionIndex: Kafka's 34-byte AbortedTxn entries, append order, truncation, the search
that stops at a last stable offset, torn tails and sanity checks."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from storage.errors import CorruptIndexError
from storage.transaction_index import (
    ABORTED_TXN_SIZE,
    AbortedTxn,
    TransactionIndex,
    decode_aborted_txns,
)


def test_entry_is_kafkas_abortedtxn_layout() -> None:
    entry = AbortedTxn(producer_id=7, first_offset=10, last_offset=20, last_stable_offset=15)
    assert ABORTED_TXN_SIZE == 34
    assert entry.encode() == struct.pack(">hqqqq", 0, 7, 10, 20, 15)
    assert decode_aborted_txns(entry.encode() + b"\x00" * 5) == ([entry], 34)


def test_file_appears_with_the_first_entry_and_reopens(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(path, 0)
    assert not path.exists() and len(index) == 0
    entries = [AbortedTxn(1, 0, 5, 6), AbortedTxn(2, 3, 9, 10)]
    for e in entries:
        index.append(e)
    index.close()
    assert path.stat().st_size == 68
    assert list(TransactionIndex(path, 0)) == entries


def test_append_refuses_out_of_order_and_below_base(tmp_path: Path) -> None:
    index = TransactionIndex(tmp_path / "00000000000000000010.txnindex", 10)
    index.append(AbortedTxn(1, 8, 12, 13))
    with pytest.raises(ValueError):
        index.append(AbortedTxn(2, 9, 11, 13))
    with pytest.raises(ValueError):
        TransactionIndex(tmp_path / "x.txnindex", 10).append(AbortedTxn(2, 1, 9, 10))


def test_truncate_removes_entries_whose_marker_is_at_or_above(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(path, 0)
    for last in (3, 5, 8):
        index.append(AbortedTxn(1, last - 1, last, last + 1))
    index.truncate_to(5)
    assert [e.last_offset for e in index] == [3]
    assert path.stat().st_size == 34
    index.append(AbortedTxn(1, 4, 6, 7))  # appends after a truncation land after the cut
    index.close()
    assert [e.last_offset for e in TransactionIndex(path, 0)] == [3, 6]
    index.reset()
    assert len(index) == 0 and path.stat().st_size == 0


def test_collect_overlapping_and_stop_at_the_last_stable_offset(tmp_path: Path) -> None:
    index = TransactionIndex(tmp_path / "00000000000000000000.txnindex", 0)
    index.append(AbortedTxn(1, 0, 4, 2))  # another transaction open from 2 when it ended
    index.append(AbortedTxn(2, 2, 6, 7))
    index.append(AbortedTxn(3, 8, 9, 10))
    found, complete = index.collect_aborted_txns(5, 7)
    assert [e.producer_id for e in found] == [2] and complete
    found, complete = index.collect_aborted_txns(0, 100)
    assert [e.producer_id for e in found] == [1, 2, 3] and not complete


def test_torn_tail_is_cut_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    path.write_bytes(AbortedTxn(1, 0, 1, 2).encode() + b"\x00\x00\x00")
    index = TransactionIndex(path, 0)
    assert len(index) == 1 and path.stat().st_size == 34


def test_sanity_check(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000010.txnindex"
    path.write_bytes(AbortedTxn(1, 0, 5, 6).encode())
    with pytest.raises(CorruptIndexError):
        TransactionIndex(path, 10).sanity_check()
    path.write_bytes(AbortedTxn(1, 10, 15, 16).encode() + AbortedTxn(1, 10, 12, 16).encode())
    with pytest.raises(CorruptIndexError):
        TransactionIndex(path, 10).sanity_check()
    path.write_bytes(struct.pack(">hqqqq", 1, 1, 10, 12, 13))
    with pytest.raises(CorruptIndexError):
        TransactionIndex(path, 10)


def test_rename_and_delete(tmp_path: Path) -> None:
    index = TransactionIndex(tmp_path / "00000000000000000000.txnindex", 0)
    index.rename_to(tmp_path / "00000000000000000000.txnindex.deleted")  # no file yet: fine
    index.append(AbortedTxn(1, 0, 1, 2))
    assert (tmp_path / "00000000000000000000.txnindex.deleted").exists()
    index.rename_to(tmp_path / "00000000000000000000.txnindex")
    assert (tmp_path / "00000000000000000000.txnindex").exists()
    index.delete_if_exists()
    assert list(tmp_path.iterdir()) == []
