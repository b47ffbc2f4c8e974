"""``odradek dump-log`` on real segment files written by storage (Kafka's DumpLogSegmentsTest).

Every test writes its files with :class:`storage.Log`, then runs the command through
``odradek.cli.main`` (or a real subprocess) and checks the exact lines, JSON objects, messages
and exit codes.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import crc32c
import pytest

from odradek.cli import main
from odradek.clock import ManualClock
from odradek.records import Record, RecordBatch, build_batch, read_batches
from storage import Log, LogConfig, OffsetIndex, TimeIndex
from storage.errors import CorruptIndexError

WORKTREE = Path(__file__).resolve().parents[3]
SEG = "00000000000000000000"


# --- helpers -----------------------------------------------------------------------------------


def make_log(
    tmp_path: Path,
    batches: list[bytes],
    *,
    follower: bool = False,
    interval: int = 0,
    name: str = "t-0",
    clock: ManualClock | None = None,
    **config: object,
) -> Path:
    """Append ``batches`` to a new log (leader epoch 5), flush and close it; its directory."""
    directory = tmp_path / name
    log = Log.open(
        directory,
        LogConfig(index_interval_bytes=interval, **config),  # type: ignore[arg-type]
        clock or ManualClock(),
    )
    try:
        for batch in batches:
            if follower:
                log.append_as_follower(batch)
            else:
                log.append_as_leader(batch, leader_epoch=5)
        log.flush()
    finally:
        log.close()
    return directory


def four_batches() -> list[bytes]:
    """Offsets 0..1, 2..4, 5, 6..7, growing timestamps; different sizes."""
    return [
        build_batch([Record(b"k0", b"v0", timestamp=1000), Record(b"k1", b"v1", timestamp=1005)]),
        build_batch([Record(b"k%d" % i, b"value", timestamp=1010 + i) for i in range(3)]),
        build_batch([Record(b"k5", b"v" * 30, timestamp=1020)]),
        build_batch([Record(b"k6", b"x", timestamp=1030), Record(b"k7", b"y", timestamp=1031)]),
    ]


def positions(batches: list[bytes]) -> list[int]:
    out, at = [], 0
    for b in batches:
        out.append(at)
        at += len(b)
    return out


def dump(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, list[str], str]:
    code = main(["dump-log", *map(str, args)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out.splitlines(), captured.err


def json_dump(
    capsys: pytest.CaptureFixture[str], *args: object
) -> tuple[int, list[dict[str, Any]]]:
    code, lines, err = dump(capsys, "--json", *args)
    assert err == ""
    return code, [json.loads(line) for line in lines]


def batch_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("baseOffset:")]


def with_last_offset_delta(batch: bytes, delta: int, keep_records: bool = True) -> bytes:
    """``batch`` with LastOffsetDelta = ``delta`` (and no records unless ``keep_records``) and a
    correct CRC: what compaction leaves when it removes records from a batch."""
    buf = bytearray(batch if keep_records else batch[:61])
    if not keep_records:
        struct.pack_into(">i", buf, 8, 61 - 12)  # Length
        struct.pack_into(">i", buf, 57, 0)  # RecordsCount
    struct.pack_into(">i", buf, 23, delta)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    RecordBatch(bytes(buf)).validate()
    return bytes(buf)


def snapshot(directory: Path) -> dict[str, tuple[bytes, int, int]]:
    return {
        p.name: (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_size)
        for p in sorted(directory.iterdir())
    }


# --- .log: batches and records -----------------------------------------------------------------


def test_batch_lines_have_kafkas_fields_with_exact_values(tmp_path, capsys):
    sent = [
        build_batch([Record(b"k0", b"v0", timestamp=1000), Record(b"k1", b"v1", timestamp=1005)]),
        build_batch(
            [Record(b"k", b"v", timestamp=1010 + i) for i in range(3)],
            producer_id=42,
            producer_epoch=3,
            base_sequence=7,
        ),
        build_batch(
            [Record(b"k", b"v", timestamp=1020)],
            producer_id=43,
            producer_epoch=1,
            base_sequence=0,
            is_transactional=True,
        ),
    ]
    directory = make_log(tmp_path, sent)
    path = directory / f"{SEG}.log"
    stored = list(read_batches(path.read_bytes()))
    crcs = [b.crc for b in stored]
    assert crcs == [b.compute_crc() for b in stored]  # the file is intact
    p = positions(sent)

    code, lines, err = dump(capsys, path)

    assert (code, err) == (0, "")
    assert lines == [
        f"Dumping {path}",
        "Log starting offset: 0",
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 5 isTransactional: false isControl: false "
        f"deleteHorizonMs: none position: 0 CreateTime: 1005 size: {len(sent[0])} magic: 2 "
        f"compresscodec: none crc: {crcs[0]} isvalid: true",
        "baseOffset: 2 lastOffset: 4 count: 3 baseSequence: 7 lastSequence: 9 producerId: 42 "
        "producerEpoch: 3 partitionLeaderEpoch: 5 isTransactional: false isControl: false "
        f"deleteHorizonMs: none position: {p[1]} CreateTime: 1012 size: {len(sent[1])} magic: 2 "
        f"compresscodec: none crc: {crcs[1]} isvalid: true",
        "baseOffset: 5 lastOffset: 5 count: 1 baseSequence: 0 lastSequence: 0 producerId: 43 "
        "producerEpoch: 1 partitionLeaderEpoch: 5 isTransactional: true isControl: false "
        f"deleteHorizonMs: none position: {p[2]} CreateTime: 1020 size: {len(sent[2])} magic: 2 "
        f"compresscodec: none crc: {crcs[2]} isvalid: true",
    ]


def test_deep_iteration_prints_each_record_after_its_batch(tmp_path, capsys):
    sent = [
        build_batch(
            [
                Record(b"ab", b"hello", [("trace", b"1"), ("empty", None)], timestamp=1000),
                Record(None, b"", timestamp=1001),
                Record(b"c", None, timestamp=1002),
            ],
            producer_id=1,
            producer_epoch=0,
            base_sequence=2**31 - 2,  # sequences wrap to 0, as in Kafka
        )
    ]
    path = make_log(tmp_path, sent) / f"{SEG}.log"

    code, lines, _ = dump(capsys, "--deep-iteration", path)

    assert code == 0
    assert "lastSequence: 0 " in lines[2]
    assert lines[3:] == [
        "| offset: 0 CreateTime: 1000 keySize: 2 valueSize: 5 sequence: 2147483646 "
        "headerKeys: [trace,empty]",
        "| offset: 1 CreateTime: 1001 keySize: -1 valueSize: 0 sequence: 2147483647 headerKeys: []",
        "| offset: 2 CreateTime: 1002 keySize: 1 valueSize: -1 sequence: 0 headerKeys: []",
    ]


def test_print_data_log_shows_keys_values_headers_and_tombstones(tmp_path, capsys):
    sent = [
        build_batch(
            [
                Record(b"user-1", "héllo".encode(), [("trace", b"abc"), ("n", None)], timestamp=7),
                Record(b"user-2", None, timestamp=8),
                Record(None, b"\x00\xffbin", timestamp=9),
                Record(b"multi", b"line1\nline2", timestamp=10),
            ]
        )
    ]
    path = make_log(tmp_path, sent) / f"{SEG}.log"

    code, lines, _ = dump(capsys, "--print-data-log", path)

    assert code == 0
    assert len(lines) == 3 + 4  # one line per record: nothing spills onto another line
    assert lines[3].endswith(
        "headerKeys: [trace,n] key: user-1 payload: héllo headers: [trace=abc, n=<null>]"
    )
    assert lines[4].endswith(
        "keySize: 6 valueSize: -1 sequence: -1 headerKeys: [] key: user-2 payload: <tombstone>"
    )
    assert lines[5].endswith("headerKeys: [] payload: b'\\x00\\xffbin'")  # no key: no "key:"
    assert lines[6].endswith("key: multi payload: b'line1\\nline2'")


def test_log_append_time_batches(tmp_path, capsys):
    clock = ManualClock(wall_ms=1_700_000_000_123)
    sent = [build_batch([Record(b"k", b"v", timestamp=5), Record(b"k", b"w", timestamp=6)])]
    directory = make_log(tmp_path, sent, clock=clock, message_timestamp_type="log_append_time")

    code, lines, _ = dump(capsys, "--deep-iteration", directory / f"{SEG}.log")

    assert code == 0
    assert " LogAppendTime: 1700000000123 size: " in lines[2]
    assert lines[3].startswith("| offset: 0 LogAppendTime: 1700000000123 keySize: 1")
    assert lines[4].startswith("| offset: 1 LogAppendTime: 1700000000123 keySize: 1")


def test_compressed_batches_are_decoded(tmp_path, capsys):
    codecs = ["gzip", "snappy", "lz4", "zstd"]
    sent = [
        build_batch(
            [Record(b"%s-%d" % (c.encode(), i), b"abc" * 50, timestamp=100 + i) for i in range(3)],
            compression=c,
        )
        for c in codecs
    ]
    path = make_log(tmp_path, sent) / f"{SEG}.log"

    code, lines, _ = dump(capsys, "--print-data-log", path)

    assert code == 0
    batches = batch_lines(lines)
    assert [line.split("compresscodec: ")[1].split()[0] for line in batches] == codecs
    assert all(line.endswith("isvalid: true") for line in batches)
    records = [line for line in lines if line.startswith("| offset:")]
    assert [r.split(" key: ")[1] for r in records] == [
        f"{c}-{i} payload: {'abc' * 50}" for c in codecs for i in range(3)
    ]
    assert [int(r.split()[2]) for r in records] == list(range(12))


def test_control_batches_show_the_transaction_marker(tmp_path, capsys):
    marker = build_batch(
        [Record(struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 5), timestamp=50)],
        base_offset=3,
        producer_id=9,
        producer_epoch=0,
        is_transactional=True,
        is_control=True,
    )
    data = build_batch(
        [Record(b"k", b"v", timestamp=40)] * 3,
        producer_id=9,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    path = make_log(tmp_path, [data, marker], follower=True) / f"{SEG}.log"

    code, lines, _ = dump(capsys, "--print-data-log", path)

    assert code == 0
    assert "isTransactional: true isControl: true" in lines[-2]
    assert lines[-1] == (
        "| offset: 3 CreateTime: 50 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 5"
    )


# --- .log: compaction results ------------------------------------------------------------------


def test_gaps_between_and_inside_batches_are_shown(tmp_path, capsys):
    def rec(ts):
        return Record(b"k", b"v", timestamp=ts)

    sent = [
        build_batch([rec(1), rec(2)], base_offset=3),  # offsets 0..2 absent before it
        build_batch([rec(3)], base_offset=7),  # 5..6 absent
        with_last_offset_delta(build_batch([rec(4), rec(5)], base_offset=8), 4),  # 10..12 gone
        with_last_offset_delta(build_batch([rec(6)], base_offset=13), 2, keep_records=False),
        build_batch([rec(7)], base_offset=16),  # no gap
    ]
    path = make_log(tmp_path, sent, follower=True) / f"{SEG}.log"

    code, lines, _ = dump(capsys, "--deep-iteration", path)

    assert code == 0
    shape = [
        line.split(" count:")[0] if line.startswith("baseOffset") else line.split(" CreateTime")[0]
        for line in lines[2:]
    ]
    assert shape == [
        "gap: offsets 0..2 are absent",
        "baseOffset: 3 lastOffset: 4",
        "| offset: 3",
        "| offset: 4",
        "gap: offsets 5..6 are absent",
        "baseOffset: 7 lastOffset: 7",
        "| offset: 7",
        "baseOffset: 8 lastOffset: 12",
        "| offset: 8",
        "| offset: 9",
        "| gap: offsets 10..12 are absent",
        "baseOffset: 13 lastOffset: 15",
        "| gap: offsets 13..15 are absent",
        "baseOffset: 16 lastOffset: 16",
        "| offset: 16",
    ]
    assert "baseOffset: 13 lastOffset: 15 count: 0 " in lines[13]

    code, docs = json_dump(capsys, "--deep-iteration", path)
    assert code == 0
    assert docs[0]["gaps"] == [
        {"first_offset": 0, "last_offset": 2, "within_batch_at": None},
        {"first_offset": 5, "last_offset": 6, "within_batch_at": None},
        {"first_offset": 10, "last_offset": 12, "within_batch_at": positions(sent)[2]},
        {"first_offset": 13, "last_offset": 15, "within_batch_at": positions(sent)[3]},
    ]


# --- .log: damage ------------------------------------------------------------------------------


@pytest.mark.parametrize("torn", [40, 10])
def test_torn_tail_is_reported_with_its_position(tmp_path, capsys, torn):
    sent = four_batches()[:2]
    path = make_log(tmp_path, sent) / f"{SEG}.log"
    with open(path, "ab") as f:
        f.write(four_batches()[2][:torn])

    code, lines, _ = dump(capsys, path)

    assert code == 1
    assert len(batch_lines(lines)) == 2
    end = len(sent[0]) + len(sent[1])
    assert lines[-1] == f"Found {torn} invalid bytes at the end of {path} (position {end})"


def test_flipped_byte_marks_the_batch_invalid_and_goes_on(tmp_path, capsys):
    sent = four_batches()
    path = make_log(tmp_path, sent) / f"{SEG}.log"
    data = bytearray(path.read_bytes())
    stored_crc = RecordBatch(bytes(data), positions(sent)[1]).crc
    # The last value byte of batch 1 (its very last byte is the last record's header count).
    data[positions(sent)[2] - 2] ^= 0x01
    path.write_bytes(bytes(data))

    code, lines, _ = dump(capsys, "--print-data-log", path)

    assert code == 1
    batches = batch_lines(lines)
    assert [line.rsplit(" ", 1)[1] for line in batches] == ["true", "false", "true", "true"]
    assert f"crc: {stored_crc} isvalid: false" in batches[1]
    records = [line for line in lines if line.startswith("| offset:")]
    assert len(records) == 8  # the framing is intact: every batch's records are still shown
    assert records[4].endswith("key: k2 payload: valud")  # 'e' ^ 1


@pytest.mark.parametrize(
    ("field_offset", "value", "why"),
    [
        (8, struct.pack(">i", 3), "its length field is 3, below the minimum record overhead (14)"),
        (16, b"\x01", "magic 1 is not 2 (only record batch v2 is supported)"),
        (8, struct.pack(">i", 30), "its size 42 is smaller than the 61-byte batch header"),
    ],
)
def test_bad_framing_stops_the_file_with_a_clear_line(tmp_path, capsys, field_offset, value, why):
    sent = four_batches()
    path = make_log(tmp_path, sent) / f"{SEG}.log"
    data = bytearray(path.read_bytes())
    at = positions(sent)[1]
    data[at + field_offset : at + field_offset + len(value)] = value
    path.write_bytes(bytes(data))

    code, lines, _ = dump(capsys, path)

    assert code == 1
    assert len(batch_lines(lines)) == 1
    rest = len(data) - at
    assert lines[-1] == (
        f"Corrupt batch at position {at} of {path}: {why}; stopped, {rest} bytes not dumped"
    )

    code, docs = json_dump(capsys, path)
    assert code == 1
    assert docs[0]["valid"] is False
    assert docs[0]["errors"] == [
        {"kind": "corrupt_batch", "position": at, "message": lines[-1], "invalid_bytes": rest}
    ]


def test_undecodable_records_are_reported_under_their_batch(tmp_path, capsys):
    sent = four_batches()[:2]
    path = make_log(tmp_path, sent) / f"{SEG}.log"
    data = bytearray(path.read_bytes())
    # RecordsCount 1 more than the batch holds, with the CRC fixed: valid framing and CRC,
    # records that cannot be decoded.
    at = positions(sent)[1]
    struct.pack_into(">i", data, at + 57, 4)
    struct.pack_into(">I", data, at + 17, crc32c.crc32c(bytes(data[at + 21 :])))
    path.write_bytes(bytes(data))

    code, lines, _ = dump(capsys, "--deep-iteration", path)

    assert code == 1
    assert lines[-1].startswith(f"| cannot decode the records of the batch at position {at}: ")
    assert "position 0" not in lines[-1]

    code, docs = json_dump(capsys, "--deep-iteration", path)
    assert code == 1
    assert [(e["kind"], e["position"], e["message"]) for e in docs[0]["errors"]] == [
        ("corrupt_records", at, lines[-1].removeprefix("| "))
    ]
    assert docs[0]["batches"][1]["is_valid"] is True  # the CRC matches: only the records are bad


def test_max_bytes_limits_how_much_of_the_log_is_read(tmp_path, capsys):
    sent = four_batches()
    path = make_log(tmp_path, sent) / f"{SEG}.log"
    limit = len(sent[0]) + len(sent[1]) + 10
    size = sum(map(len, sent))

    code, lines, _ = dump(capsys, "--max-bytes", limit, path)

    assert code == 0  # a batch cut by the limit is not damage
    assert len(batch_lines(lines)) == 2
    at = positions(sent)[2]
    assert lines[-1] == (
        f"Stopped at position {at}: --max-bytes {limit} reached ({size - at} bytes not dumped)"
    )

    code, docs = json_dump(capsys, "--max-bytes", limit, path)
    assert (code, len(docs[0]["batches"])) == (0, 2)
    assert docs[0]["max_bytes_reached"] == {
        "max_bytes": limit,
        "position": at,
        "bytes_not_dumped": size - at,
    }


def test_empty_files_are_fine(tmp_path, capsys):
    for name in (f"{SEG}.log", f"{SEG}.index"):
        (tmp_path / name).touch()

    code, lines, _ = dump(capsys, tmp_path / f"{SEG}.log", tmp_path / f"{SEG}.index")

    assert code == 0
    assert lines == [
        f"Dumping {tmp_path / f'{SEG}.log'}",
        "Log starting offset: 0",
        f"Dumping {tmp_path / f'{SEG}.index'}",
        f"{tmp_path / f'{SEG}.index'} is empty.",
    ]


def test_segment_files_with_state_suffixes_are_dumped(tmp_path, capsys):
    directory = make_log(tmp_path, four_batches())
    renamed = directory / f"{SEG}.log.deleted"
    (directory / f"{SEG}.log").rename(renamed)

    code, lines, _ = dump(capsys, renamed)

    assert code == 0
    assert lines[:2] == [f"Dumping {renamed}", "Log starting offset: 0"]
    assert len(batch_lines(lines)) == 4


# --- indexes -----------------------------------------------------------------------------------


def test_offset_index_dump(tmp_path, capsys):
    sent = four_batches()
    path = make_log(tmp_path, sent) / f"{SEG}.index"
    p = positions(sent)

    code, lines, _ = dump(capsys, path)

    # With index_interval_bytes=0 every batch but the first gets an entry: its LAST offset,
    # and the position where it starts.
    assert code == 0
    assert lines == [
        f"Dumping {path}",
        f"offset: 4 position: {p[1]}",
        f"offset: 5 position: {p[2]}",
        f"offset: 7 position: {p[3]}",
    ]


def test_time_index_dump(tmp_path, capsys):
    path = make_log(tmp_path, four_batches()) / f"{SEG}.timeindex"

    code, lines, _ = dump(capsys, path)

    assert code == 0
    assert lines == [
        f"Dumping {path}",
        "timestamp: 1012 offset: 4",
        "timestamp: 1020 offset: 5",
        "timestamp: 1031 offset: 7",
    ]


def test_verify_index_passes_on_a_good_log(tmp_path, capsys):
    directory = make_log(tmp_path, four_batches())
    log = directory / f"{SEG}.log"

    code, lines, _ = dump(
        capsys, "--verify-index", directory / f"{SEG}.index", directory / f"{SEG}.timeindex"
    )

    assert code == 0
    assert lines == [
        f"Dumping {directory / f'{SEG}.index'}",
        f"Verified 3 entries against {log}: no mismatches",
        f"Dumping {directory / f'{SEG}.timeindex'}",
        f"Verified 3 entries against {log}: no mismatches",
    ]


def test_verify_index_passes_on_a_gappy_log_with_falling_timestamps(tmp_path, capsys):
    sent = [
        build_batch([Record(b"a", b"1", timestamp=5000)], base_offset=3),
        build_batch([Record(b"b", b"2", timestamp=4000)] * 2, base_offset=4),
        build_batch([Record(b"c", b"3", timestamp=6000)], base_offset=10),
        build_batch([Record(b"d", b"4", timestamp=5500)], base_offset=11),
    ]
    directory = make_log(tmp_path, sent, follower=True)

    code, lines, _ = dump(capsys, "--verify-index", directory)

    assert code == 0
    assert [line for line in lines if line.startswith("Verified")] == [
        f"Verified 3 entries against {directory / f'{SEG}.log'}: no mismatches",
        f"Verified 2 entries against {directory / f'{SEG}.log'}: no mismatches",
    ]
    code, lines, _ = dump(capsys, directory / f"{SEG}.timeindex")
    # (5000, 3) was written when batch 4..5 was appended: up to offset 3 the largest is 5000.
    assert lines[1:] == ["timestamp: 5000 offset: 3", "timestamp: 6000 offset: 10"]


def test_verify_offset_index_reports_each_mismatch(tmp_path, capsys):
    sent = four_batches()
    directory = make_log(tmp_path, sent)
    path, log = directory / f"{SEG}.index", directory / f"{SEG}.log"
    p = positions(sent)
    data = bytearray(path.read_bytes())
    struct.pack_into(">ii", data, 0, 4, p[1] + 1)  # not where a batch starts
    struct.pack_into(">ii", data, 8, 6, p[2])  # batch 5..5 does not end at 6
    struct.pack_into(">ii", data, 16, 6, p[3])  # not above the previous offset; 6..7 ends at 7
    path.write_bytes(bytes(data))

    code, lines, _ = dump(capsys, "--verify-index", path)

    assert code == 1
    assert lines == [
        f"Dumping {path}",
        f"Mismatch at entry 0 (offset: 4 position: {p[1] + 1}): "
        f"no batch starts at position {p[1] + 1} of {log}",
        f"Mismatch at entry 1 (offset: 6 position: {p[2]}): the batch at position {p[2]} holds "
        "offsets 5..5: it ends at offset 5, not 6",
        f"Mismatch at entry 2 (offset: 6 position: {p[3]}): offset 6 is not above the previous "
        "entry's (6)",
        f"Mismatch at entry 2 (offset: 6 position: {p[3]}): the batch at position {p[3]} holds "
        "offsets 6..7: it ends at offset 7, not 6",
        f"Verified 3 entries against {log}: 4 mismatches",
    ]

    code, docs = json_dump(capsys, "--verify-index", path)
    assert code == 1
    verification = docs[0]["verification"]
    assert verification["log"] == str(log)
    assert verification["entries_checked"] == 3
    assert [(m["slot"], m["offset"], m["position"]) for m in verification["mismatches"]] == [
        (0, 4, p[1] + 1),
        (1, 6, p[2]),
        (2, 6, p[3]),
        (2, 6, p[3]),
    ]


def test_verify_time_index_reports_each_mismatch(tmp_path, capsys):
    sent = four_batches()
    directory = make_log(tmp_path, sent)
    path, log = directory / f"{SEG}.timeindex", directory / f"{SEG}.log"
    p = positions(sent)
    data = bytearray(path.read_bytes())
    struct.pack_into(">qi", data, 0, 1012, 3)  # inside batch 2..4, not its last offset
    struct.pack_into(">qi", data, 12, 1021, 5)  # the largest timestamp up to 5 is 1020
    struct.pack_into(">qi", data, 24, 1015, 7)  # falls; and the largest up to 7 is 1031
    path.write_bytes(bytes(data))

    code, lines, _ = dump(capsys, "--verify-index", path)

    assert code == 1
    assert lines == [
        f"Dumping {path}",
        "Mismatch at entry 0 (timestamp: 1012 offset: 3): offset 3 is not the last offset of "
        f"its batch (2..4 at position {p[1]})",
        "Mismatch at entry 1 (timestamp: 1021 offset: 5): timestamp 1021 is not the largest "
        "timestamp in the log up to offset 5 (1020)",
        "Mismatch at entry 2 (timestamp: 1015 offset: 7): timestamp 1015 is not above the "
        "previous entry's (1021)",
        "Mismatch at entry 2 (timestamp: 1015 offset: 7): timestamp 1015 is not the largest "
        "timestamp in the log up to offset 7 (1031)",
        f"Verified 3 entries against {log}: 4 mismatches",
    ]


def test_verify_time_index_offset_missing_from_the_log(tmp_path, capsys):
    directory = make_log(tmp_path, four_batches())
    path = directory / f"{SEG}.timeindex"
    data = bytearray(path.read_bytes())
    struct.pack_into(">qi", data, 24, 1031, 9)
    path.write_bytes(bytes(data))

    code, lines, _ = dump(capsys, "--verify-index", path)

    assert code == 1
    assert lines[1] == (
        f"Mismatch at entry 2 (timestamp: 1031 offset: 9): offset 9 is not in "
        f"{directory / f'{SEG}.log'}"
    )


def test_verify_index_needs_the_log_beside_it(tmp_path, capsys):
    directory = make_log(tmp_path, four_batches())
    (directory / f"{SEG}.log").unlink()
    path = directory / f"{SEG}.index"

    code, lines, err = dump(capsys, "--verify-index", path)

    assert (code, lines) == (1, [])
    assert err == (
        f"odradek dump-log: {path}: cannot verify: no log file {directory / f'{SEG}.log'} "
        "beside it\n"
    )
    assert sorted(p.name for p in directory.iterdir() if p.name.startswith(SEG)) == [
        f"{SEG}.index",
        f"{SEG}.timeindex",
    ]


def test_untrimmed_index_of_a_live_segment_stops_at_the_zero_tail(tmp_path, capsys):
    # An open log's indexes are preallocated (10 MiB here) and trimmed only on roll or close:
    # exactly what a crash leaves behind.
    sent = four_batches()
    log = Log.open(tmp_path / "t-0", LogConfig(index_interval_bytes=0), ManualClock())
    try:
        for batch in sent:
            log.append_as_leader(batch, leader_epoch=5)
        log.flush()
        index = tmp_path / "t-0" / f"{SEG}.index"
        timeindex = tmp_path / "t-0" / f"{SEG}.timeindex"
        slots = index.stat().st_size // 8
        time_slots = timeindex.stat().st_size // 12
        assert slots > 1000

        code, lines, _ = dump(capsys, index, timeindex)
        assert code == 0
        assert lines == [
            f"Dumping {index}",
            f"offset: 4 position: {positions(sent)[1]}",
            f"offset: 5 position: {positions(sent)[2]}",
            f"offset: 7 position: {positions(sent)[3]}",
            f"Stopped at entry 3 of {slots}: an all-zero entry marks the untrimmed, "
            f"preallocated tail of the index ({slots - 3} entries not shown)",
            f"Dumping {timeindex}",
            "timestamp: 1012 offset: 4",
            "timestamp: 1020 offset: 5",
            "timestamp: 1031 offset: 7",
            f"Stopped at entry 3 of {time_slots}: an all-zero entry marks the untrimmed, "
            f"preallocated tail of the index ({time_slots - 3} entries not shown)",
        ]

        code, lines, _ = dump(capsys, "--verify-index", index, timeindex)
        assert code == 0
        assert [line for line in lines if line.startswith("Verified")] == [
            f"Verified 3 entries against {tmp_path / 't-0' / f'{SEG}.log'}: no mismatches"
        ] * 2

        code, docs = json_dump(capsys, index)
        assert code == 0
        assert docs[0]["untrimmed_tail"] == {"slot": 3, "entries": slots}
        assert len(docs[0]["entries"]) == 3
    finally:
        log.close()


def _storage_sanity(path: Path, base_offset: int) -> bool:
    """Whether storage's own sanity_check passes, run on a copy (storage opens files for write)."""
    copy = path.parent / "copy" / path.name
    copy.parent.mkdir(exist_ok=True)
    shutil.copyfile(path, copy)
    cls = OffsetIndex if path.suffix == ".index" else TimeIndex
    index = cls(copy, base_offset)
    try:
        index.sanity_check()
    except CorruptIndexError:
        return False
    finally:
        index.close_handler()
    return True


@pytest.mark.parametrize(
    ("name", "damage", "why"),
    [
        (f"{SEG}.index", b"", None),
        (f"{SEG}.timeindex", b"", None),
        (f"{SEG}.index", bytes(8 * 4), None),  # an untrimmed offset index passes (as in storage)
        (f"{SEG}.index", b"\x00\x00\x00", "its length 19 is not a multiple of the entry size 8"),
        (f"{SEG}.timeindex", b"\x00", "its length 25 is not a multiple of the entry size 12"),
        (
            f"{SEG}.timeindex",
            bytes(12 * 2),
            "its last timestamp 0 is below its first timestamp 1012",
        ),
        (
            f"{SEG}.index",
            struct.pack(">ii", -1, 0),
            "its last offset 99 is below its base offset 100",
        ),
    ],
)
def test_index_sanity_check_agrees_with_storage(tmp_path, capsys, name, damage, why):
    sent = [build_batch([Record(b"k", b"v", timestamp=t)]) for t in (1000, 1012, 1020)]
    directory = make_log(tmp_path, sent)
    if "last offset 99" in (why or ""):  # renamed to base offset 100 to make it fail
        for p in list(directory.iterdir()):
            p.rename(p.with_name(p.name.replace(SEG, f"{100:020d}")))
        name = name.replace(SEG, f"{100:020d}")
    path = directory / name
    with open(path, "ab") as f:
        f.write(damage)
    base_offset = int(name.split(".")[0])

    code, lines, _ = dump(capsys, "--index-sanity-check", path)

    if why is None:
        assert (code, lines) == (0, [f"Dumping {path}", f"{path} passed sanity check."])
    else:
        assert (code, lines) == (1, [f"Dumping {path}", f"{path} failed sanity check: {why}"])
    assert _storage_sanity(path, base_offset) is (why is None)

    code, docs = json_dump(capsys, "--index-sanity-check", path)
    assert docs[0]["sanity_check"] == {"passed": why is None, "message": lines[1]}
    assert docs[0]["valid"] is (why is None)
    assert docs[0]["entries"] is None


def test_partial_index_entry_is_invalid_in_a_dump(tmp_path, capsys):
    directory = make_log(tmp_path, four_batches())
    path = directory / f"{SEG}.index"
    with open(path, "ab") as f:
        f.write(b"\x01\x02\x03")

    code, lines, _ = dump(capsys, path)

    assert code == 1
    assert len([line for line in lines if line.startswith("offset:")]) == 3
    assert lines[-1] == (
        f"Found 3 invalid bytes at the end of {path} (position 24): not a whole 8-byte entry"
    )


# --- JSON --------------------------------------------------------------------------------------


def test_json_log_batches_and_records(tmp_path, capsys):
    sent = [
        build_batch(
            [
                Record(b"k1", b"v1", [("h", b"\xff"), ("n", None)], timestamp=10),
                Record(b"\x80key", None, timestamp=11),
            ],
            producer_id=4,
            producer_epoch=1,
            base_sequence=3,
        ),
        build_batch([Record(None, b"plain", timestamp=12)], compression="zstd"),
    ]
    path = make_log(tmp_path, sent) / f"{SEG}.log"
    stored = list(read_batches(path.read_bytes()))

    code, docs = json_dump(capsys, path)
    assert code == 0
    (doc,) = docs
    assert {k: doc[k] for k in ("file", "type", "base_offset", "valid", "errors", "gaps")} == {
        "file": str(path),
        "type": "log",
        "base_offset": 0,
        "valid": True,
        "errors": [],
        "gaps": [],
    }
    first = doc["batches"][0]
    assert first == {
        "position": 0,
        "base_offset": 0,
        "last_offset": 1,
        "last_offset_delta": 1,
        "count": 2,
        "base_sequence": 3,
        "last_sequence": 4,
        "producer_id": 4,
        "producer_epoch": 1,
        "partition_leader_epoch": 5,
        "is_transactional": False,
        "is_control": False,
        "delete_horizon_ms": None,
        "timestamp_type": "CreateTime",
        "base_timestamp": 10,
        "max_timestamp": 11,
        "size": len(sent[0]),
        "magic": 2,
        "attributes": 0,
        "compression": "none",
        "crc": stored[0].crc,
        "computed_crc": stored[0].crc,
        "is_valid": True,
    }
    assert doc["batches"][1]["compression"] == "zstd"
    assert "records" not in first  # no records without --deep-iteration

    code, docs = json_dump(capsys, "--print-data-log", path)
    records = [r for b in docs[0]["batches"] for r in b["records"]]
    assert records[0] == {
        "offset": 0,
        "timestamp": 10,
        "key_size": 2,
        "value_size": 2,
        "sequence": 3,
        "header_keys": ["h", "n"],
        "tombstone": False,
        "key": "k1",
        "key_base64": False,
        "value": "v1",
        "value_base64": False,
        "headers": [
            {"key": "h", "value": base64.b64encode(b"\xff").decode(), "value_base64": True},
            {"key": "n", "value": None, "value_base64": False},
        ],
    }
    assert records[1]["tombstone"] is True
    assert (records[1]["key"], records[1]["key_base64"]) == (
        base64.b64encode(b"\x80key").decode(),
        True,
    )
    assert (records[1]["value"], records[1]["value_base64"]) == (None, False)
    assert (records[2]["key"], records[2]["value"], records[2]["tombstone"]) == (
        None,
        "plain",
        False,
    )

    code, docs = json_dump(capsys, "--deep-iteration", path)
    assert "key" not in docs[0]["batches"][0]["records"][0]  # data only with --print-data-log
    assert docs[0]["batches"][0]["records"][1]["tombstone"] is True


def test_json_reports_damage(tmp_path, capsys):
    sent = four_batches()
    path = make_log(tmp_path, sent) / f"{SEG}.log"
    data = bytearray(path.read_bytes())
    data[positions(sent)[1] + 30] ^= 0xFF
    path.write_bytes(bytes(data) + b"torn tail bytes, more than 17")

    code, docs = json_dump(capsys, path)

    assert code == 1
    (doc,) = docs
    assert doc["valid"] is False
    assert [b["is_valid"] for b in doc["batches"]] == [True, False, True, True]
    bad = doc["batches"][1]
    assert bad["crc"] != bad["computed_crc"]
    assert doc["errors"] == [
        {
            "kind": "torn_tail",
            "position": len(data),
            "message": f"Found 29 invalid bytes at the end of {path} (position {len(data)})",
            "invalid_bytes": 29,
        }
    ]


def test_json_index_entries(tmp_path, capsys):
    sent = four_batches()
    directory = make_log(tmp_path, sent)
    p = positions(sent)

    code, docs = json_dump(capsys, directory / f"{SEG}.index", directory / f"{SEG}.timeindex")

    assert code == 0
    index, timeindex = docs
    assert (index["type"], timeindex["type"]) == ("offset_index", "time_index")
    assert index["entries"] == [
        {"offset": 4, "position": p[1]},
        {"offset": 5, "position": p[2]},
        {"offset": 7, "position": p[3]},
    ]
    assert timeindex["entries"] == [
        {"timestamp": 1012, "offset": 4},
        {"timestamp": 1020, "offset": 5},
        {"timestamp": 1031, "offset": 7},
    ]
    assert index["verification"] is None
    assert index["sanity_check"] is None

    code, docs = json_dump(capsys, "--verify-index", directory / f"{SEG}.timeindex")
    assert code == 0
    assert docs[0]["verification"] == {
        "log": str(directory / f"{SEG}.log"),
        "entries_checked": 3,
        "mismatches": [],
    }


# --- paths and errors --------------------------------------------------------------------------


def test_directory_dumps_its_segment_files_in_name_order(tmp_path, capsys):
    directory = make_log(tmp_path, four_batches(), segment_bytes=300)
    (directory / "leader-epoch-checkpoint").write_text("0\n0\n")
    names = sorted(p.name for p in directory.iterdir() if "." in p.name)
    assert len(names) > 3  # several segments

    code, lines, _ = dump(capsys, directory)

    assert code == 0
    assert [line for line in lines if line.startswith("Dumping")] == [
        f"Dumping {directory / name}" for name in names
    ]
    code, docs = json_dump(capsys, directory)
    assert [d["file"] for d in docs] == [str(directory / name) for name in names]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing.log", "no such file or directory"),
        (
            lambda d: d / "notes.txt",
            "not a segment file (.log, .index, .timeindex, .txnindex, .snapshot)",
        ),
        (
            lambda d: d / "foo.log",
            "not a segment file (.log, .index, .timeindex, .txnindex, .snapshot)",
        ),
        (
            lambda d: d / f"{SEG}.checkpoint",
            "not a segment file (.log, .index, .timeindex, .txnindex, .snapshot)",
        ),
        (
            lambda d: d / "empty",
            "no segment files (.log, .index, .timeindex, .txnindex, .snapshot) in directory",
        ),
    ],
)
def test_bad_paths_give_one_line_and_exit_1(tmp_path, capsys, make, message):
    (tmp_path / "notes.txt").write_text("hi")
    (tmp_path / "foo.log").write_bytes(b"")
    (tmp_path / f"{SEG}.checkpoint").write_bytes(b"")
    (tmp_path / "empty").mkdir()
    path = make(tmp_path)

    code, lines, err = dump(capsys, path)

    assert (code, lines) == (1, [])
    assert err == f"odradek dump-log: {path}: {message}\n"


def test_a_bad_path_does_not_stop_the_others(tmp_path, capsys):
    path = make_log(tmp_path, four_batches()) / f"{SEG}.log"

    code, lines, err = dump(capsys, tmp_path / "missing.log", path)

    assert code == 1
    assert err.count("\n") == 1
    assert len(batch_lines(lines)) == 4


def test_kafka_style_files_option(tmp_path, capsys):
    directory = make_log(tmp_path, four_batches())

    code, lines, _ = dump(
        capsys, "--files", f"{directory / f'{SEG}.index'},{directory / f'{SEG}.timeindex'}"
    )

    assert code == 0
    assert [line for line in lines if line.startswith("Dumping")] == [
        f"Dumping {directory / f'{SEG}.index'}",
        f"Dumping {directory / f'{SEG}.timeindex'}",
    ]


def test_usage_errors_exit_2(tmp_path, capsys):
    code, lines, err = dump(capsys)
    assert (code, lines) == (2, [])
    assert err == "odradek dump-log: error: no files to dump (give PATH... or --files)\n"

    for bad in (["--max-bytes", "0", "x.log"], ["--verify-index", "--index-sanity-check", "x"]):
        with pytest.raises(SystemExit) as exc:
            main(["dump-log", *bad])
        assert exc.value.code == 2
        assert "Traceback" not in capsys.readouterr().err


def test_dumping_never_writes_or_creates_files(tmp_path, capsys):
    sent = four_batches()
    directory = make_log(tmp_path, sent)
    with open(directory / f"{SEG}.index", "ab") as f:
        f.write(bytes(16))  # an untrimmed tail, which storage would trim on close
    before = snapshot(directory)
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(directory / f"{SEG}.log", lone / f"{SEG}.log")
    shutil.copy(directory / f"{SEG}.index", lone / f"{SEG}.index")

    for args in (
        [],
        ["--print-data-log"],
        ["--verify-index"],
        ["--index-sanity-check"],
        ["--json", "--deep-iteration"],
    ):
        dump(capsys, *args, directory)
    dump(capsys, lone / f"{SEG}.log")
    (lone / f"{SEG}.log").unlink()
    dump(capsys, "--verify-index", lone / f"{SEG}.index")

    assert snapshot(directory) == before
    assert sorted(p.name for p in lone.iterdir()) == [f"{SEG}.index"]


# --- the real command --------------------------------------------------------------------------


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(WORKTREE)}


def test_entry_point_runs_as_a_subprocess(tmp_path):
    path = make_log(tmp_path, four_batches()) / f"{SEG}.log"

    done = subprocess.run(
        [sys.executable, "-m", "odradek", "dump-log", str(path)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[:2] == [f"Dumping {path}", "Log starting offset: 0"]

    missing = subprocess.run(
        [sys.executable, "-m", "odradek", "dump-log", str(tmp_path / "nope.log")],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
        check=False,
    )
    assert (missing.returncode, missing.stdout) == (1, "")
    assert (
        missing.stderr == f"odradek dump-log: {tmp_path / 'nope.log'}: no such file or directory\n"
    )


def test_a_reader_that_goes_away_ends_the_dump_quietly(tmp_path):
    # Far more output than a pipe buffers, read by a consumer that stops after a few bytes
    # (`odradek dump-log ... | head`).
    batches = b"".join(
        build_batch([Record(b"k", b"v" * 50, timestamp=i)], base_offset=i) for i in range(1500)
    )
    path = make_log(tmp_path, [batches], follower=True) / f"{SEG}.log"

    proc = subprocess.Popen(
        [sys.executable, "-m", "odradek", "dump-log", "--print-data-log", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(100).startswith(b"Dumping ")
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 0
    assert err == b""


def test_usage_errors_are_one_line(capsys):
    for argv in (["dump-log", "--max-bytes", "lots", "x.log"], ["no-such-command"], []):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1, err
        assert "error:" in err
