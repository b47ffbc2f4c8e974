"""``odradek dump-log`` on a transactional log written by storage: transactional and control
batches, COMMIT / ABORT markers with their coordinator epoch, and ``.txnindex`` files (Kafka's
DumpLogSegments ``dumpTxnIndex``), in text and JSON, damaged ones included."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from odradek.cli import main
from odradek.clock import ManualClock
from odradek.records import ControlRecordType, EndTransactionMarker, Record, build_batch
from storage import Log, LogConfig

SEG = "00000000000000000000"
TS = 1_700_000_000_000


def _txn(pid: int, seq: int) -> bytes:
    return build_batch(
        [Record(b"k", b"v", timestamp=TS)],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        is_transactional=True,
    )


def transactional_log(tmp_path: Path) -> Path:
    """Producer 1 aborts (offsets 0, 2), producer 2 commits (1, 3) with coordinator epoch 3."""
    directory = tmp_path / "t-0"
    log = Log.open(directory, LogConfig(), ManualClock(wall_ms=TS))
    log.append_as_leader(_txn(1, 0), 0)
    log.append_as_leader(_txn(2, 0), 0)
    log.append_transaction_marker(1, 0, EndTransactionMarker(ControlRecordType.ABORT, 3), 0)
    log.append_transaction_marker(2, 0, EndTransactionMarker(ControlRecordType.COMMIT, 3), 0)
    log.flush()
    log.close()
    return directory


def dump(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, list[str], str]:
    code = main(["dump-log", *map(str, args)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out.splitlines(), captured.err


def test_markers_and_transactional_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = transactional_log(tmp_path)
    code, lines, _ = dump(capsys, "--deep-iteration", directory / f"{SEG}.log")
    assert code == 0
    batches = [line for line in lines if line.startswith("baseOffset:")]
    assert "isTransactional: true isControl: false" in batches[0]
    assert "producerId: 1 producerEpoch: 0" in batches[0]
    assert "baseSequence: -1" in batches[2]
    assert "isTransactional: true isControl: true" in batches[2]
    markers = [line for line in lines if "endTxnMarker" in line]
    assert markers[0].startswith("| offset: 2 CreateTime: 1700000000000 keySize: 4 valueSize: 6")
    assert markers[0].endswith("endTxnMarker: ABORT coordinatorEpoch: 3")
    assert markers[1].endswith("endTxnMarker: COMMIT coordinatorEpoch: 3")


def test_txnindex_entries_as_kafka_prints_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = transactional_log(tmp_path)
    code, lines, err = dump(capsys, directory / f"{SEG}.txnindex")
    assert (code, err) == (0, "")
    assert lines == [
        f"Dumping {directory / f'{SEG}.txnindex'}",
        "version: 0 producerId: 1 firstOffset: 0 lastOffset: 2 lastStableOffset: 1",
    ]
    # a directory dump includes it, in name order
    code, lines, _ = dump(capsys, directory)
    dumped = [line.removeprefix("Dumping ") for line in lines if line.startswith("Dumping ")]
    assert str(directory / f"{SEG}.txnindex") in dumped
    assert dumped.index(str(directory / f"{SEG}.txnindex")) > dumped.index(
        str(directory / f"{SEG}.timeindex")
    )


def test_txnindex_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = transactional_log(tmp_path)
    code, lines, _ = dump(capsys, "--json", directory / f"{SEG}.txnindex")
    assert code == 0
    (doc,) = [json.loads(line) for line in lines]
    assert doc == {
        "file": str(directory / f"{SEG}.txnindex"),
        "type": "txn_index",
        "base_offset": 0,
        "size_in_bytes": 34,
        "valid": True,
        "errors": [],
        "entries": [
            {
                "slot": 0,
                "version": 0,
                "producer_id": 1,
                "first_offset": 0,
                "last_offset": 2,
                "last_stable_offset": 1,
            }
        ],
    }


def test_damaged_txnindex_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "00000000000000000010.txnindex"
    entry = struct.Struct(">hqqqq")
    path.write_bytes(
        entry.pack(0, 1, 10, 15, 16)
        + entry.pack(0, 2, 11, 12, 16)  # ends before the previous one
        + b"\x00\x00\x00"  # a torn entry
    )
    code, lines, _ = dump(capsys, path)
    assert code == 1
    assert lines[1:] == [
        "version: 0 producerId: 1 firstOffset: 10 lastOffset: 15 lastStableOffset: 16",
        "version: 0 producerId: 2 firstOffset: 11 lastOffset: 12 lastStableOffset: 16",
        "Entry 1 ends at offset 12, below the previous entry's (15)",
        "3 bytes at position 68 are not a whole 34-byte entry (a torn write: storage cuts them)",
    ]
    path.write_bytes(entry.pack(0, 1, 2, 5, 6) + entry.pack(1, 1, 12, 15, 16))
    code, lines, _ = dump(capsys, "--json", path)
    (doc,) = [json.loads(line) for line in lines]
    assert code == 1 and not doc["valid"]
    assert [e["kind"] for e in doc["errors"]] == ["out_of_order", "unknown_version"]
    assert doc["errors"][0]["message"] == (
        "Entry 0 ends at offset 5, below the segment's base offset (10)"
    )


def test_txnindex_with_a_state_suffix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = transactional_log(tmp_path)
    path = directory / f"{SEG}.txnindex"
    deleted = path.rename(directory / f"{SEG}.txnindex.deleted")
    code, lines, _ = dump(capsys, deleted)
    assert code == 0 and lines[1].startswith("version: 0 producerId: 1")
