"""``odradek dump-log`` on an idempotent producer's batches and on ``.snapshot`` files
(Kafka's ``DumpLogSegments`` prints the same fields)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odradek.cli import main
from odradek.clock import ManualClock
from odradek.records import Record, build_batch
from storage import Log, LogConfig

TS = 1_700_000_000_000


def pbatch(pid: int, epoch: int, seq: int, count: int) -> bytes:
    records = [Record(key=b"k", value=b"v", timestamp=TS + i) for i in range(count)]
    return build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, list[str], str]:
    code = main(["dump-log", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    log = Log.open(tmp_path / "t-0", LogConfig(), ManualClock())
    log.append_as_leader(pbatch(42, 3, 0, 4), 0)
    log.append_as_leader(pbatch(42, 3, 4, 2), 0)
    log.append_as_leader(pbatch(43, 0, 2**31 - 1, 2), 0)  # wraps: 2147483647, 0
    log.flush()
    log.close()  # snapshot at 8
    return tmp_path / "t-0"


def test_batches_show_producer_fields(log_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = run(capsys, log_dir / f"{0:020d}.log")
    assert code == 0
    batches = [line for line in lines if line.startswith("baseOffset")]
    assert "baseSequence: 0 lastSequence: 3 producerId: 42 producerEpoch: 3" in batches[0]
    assert "baseSequence: 4 lastSequence: 5 producerId: 42 producerEpoch: 3" in batches[1]
    assert "baseSequence: 2147483647 lastSequence: 0 producerId: 43" in batches[2]


def test_snapshot_is_decoded_as_kafka_prints_it(
    log_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = log_dir / f"{8:020d}.snapshot"
    code, lines, err = run(capsys, path)
    assert (code, err) == (0, "")
    assert lines == [
        f"Dumping {path}",
        "producerId: 42 producerEpoch: 3 coordinatorEpoch: -1 "
        f"currentTxnFirstOffset: OptionalLong.empty lastTimestamp: {TS + 1} "
        f"firstSequence: 4 lastSequence: 5 lastOffset: 5 offsetDelta: 1 timestamp: {TS + 1}",
        "producerId: 43 producerEpoch: 0 coordinatorEpoch: -1 "
        f"currentTxnFirstOffset: OptionalLong.empty lastTimestamp: {TS + 1} "
        f"firstSequence: 2147483647 lastSequence: 0 lastOffset: 7 offsetDelta: 1 "
        f"timestamp: {TS + 1}",
    ]
    code, lines, _ = run(capsys, "--json", path)
    [doc] = [json.loads(line) for line in lines]
    assert doc["type"] == "producer_snapshot" and doc["base_offset"] == 8 and doc["valid"]
    assert doc["entries"][0] == {
        "producer_id": 42,
        "producer_epoch": 3,
        "coordinator_epoch": -1,
        "current_txn_first_offset": None,
        "last_timestamp": TS + 1,
        "first_sequence": 4,
        "last_sequence": 5,
        "last_offset": 5,
        "offset_delta": 1,
        "timestamp": TS + 1,
    }


def test_a_directory_dump_includes_the_snapshot(
    log_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, _ = run(capsys, log_dir)
    assert code == 0
    assert f"Dumping {log_dir / f'{8:020d}.snapshot'}" in lines


def test_a_corrupt_snapshot_is_reported_and_exits_1(
    log_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = log_dir / f"{8:020d}.snapshot"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    code, lines, _ = run(capsys, path)
    assert code == 1
    assert lines[0] == f"Dumping {path}"
    assert lines[1].startswith("Corrupt producer snapshot: snapshot CRC")
    code, lines, _ = run(capsys, "--json", path)
    [doc] = [json.loads(line) for line in lines]
    assert not doc["valid"] and doc["errors"][0]["kind"] == "corrupt_snapshot"
