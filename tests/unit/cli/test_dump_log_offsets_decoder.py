"""``odradek dump-log --offsets-decoder``: records of ``__consumer_offsets`` decoded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odradek.cli import main
from odradek.cli.offsets_decoder import decode_offsets_record
from odradek.clock import ManualClock
from odradek.group_records import (
    ClassicProtocol,
    ConsumerGroupClassicMemberMetadata,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    MemberState,
    OffsetCommitKey,
    OffsetCommitValue,
    TopicPartitions,
    encode_key,
    encode_value,
)
from odradek.records import Record, build_batch
from storage import Log, LogConfig

SEG = "00000000000000000000"
TOPIC_ID = "AAECAwQFBgcICQoLDA0ODw"


def offsets_log(tmp_path: Path) -> Path:
    records = [
        Record(
            encode_key(OffsetCommitKey("g", "t", 3)),
            encode_value(OffsetCommitValue(17, "meta", 1000, leader_epoch=2)),
            timestamp=1,
        ),
        Record(
            encode_key(ConsumerGroupMetadataKey("g")),
            encode_value(ConsumerGroupMetadataValue(4)),
            timestamp=2,
        ),
        Record(
            encode_key(ConsumerGroupCurrentMemberAssignmentKey("g", "m")),
            encode_value(
                ConsumerGroupCurrentMemberAssignmentValue(
                    4, 3, MemberState.STABLE, (TopicPartitions(TOPIC_ID, (0, 1)),)
                )
            ),
            timestamp=3,
        ),
        Record(encode_key(OffsetCommitKey("g", "t", 4)), None, timestamp=4),
        Record(b"\x00\x63junk", b"x", timestamp=5),
    ]
    directory = tmp_path / "__consumer_offsets-0"
    log = Log.open(directory, LogConfig(), ManualClock())
    try:
        log.append_as_leader(build_batch(records), leader_epoch=0)
        log.flush()
    finally:
        log.close()
    return directory / f"{SEG}.log"


def test_text_output_has_kafkas_key_and_payload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["dump-log", "--offsets-decoder", str(offsets_log(tmp_path))])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    records = [line for line in lines if line.startswith("| offset:")]
    assert len(records) == 5
    assert records[0].endswith(
        'key: {"type":"1","data":{"group":"g","topic":"t","partition":3}} '
        'payload: {"version":"3","data":{"offset":17,"leaderEpoch":2,"metadata":"meta",'
        '"commitTimestamp":1000}}'
    )
    assert records[1].endswith(
        'key: {"type":"3","data":{"groupId":"g"}} '
        'payload: {"version":"0","data":{"epoch":4,"metadataHash":0}}'
    )
    assert (
        '"state":"STABLE","assignedPartitions":[{"topicId":"AAECAwQFBgcICQoLDA0ODw",' in records[2]
    )
    assert records[3].endswith("payload: <DELETE>")
    assert '"error":"__consumer_offsets key: unknown record type 99' in records[4]


def test_json_output_carries_decoded_key_and_payload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["dump-log", "--json", "--offsets-decoder", str(offsets_log(tmp_path))])
    (doc,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0
    records = doc["batches"][0]["records"]
    assert records[0]["offsets_key"] == {
        "type": "1",
        "data": {"group": "g", "topic": "t", "partition": 3},
    }
    assert records[0]["offsets_payload"]["data"]["offset"] == 17
    assert records[3]["offsets_payload"] is None
    assert "key" not in records[0]  # raw keys only with --print-data-log


def test_member_metadata_shows_classic_member_metadata_only_when_set() -> None:
    key = encode_key(ConsumerGroupMemberMetadataKey("g", "m"))
    kip848 = ConsumerGroupMemberMetadataValue("c", "/h", ("t",))
    _, payload = decode_offsets_record(key, encode_value(kip848))
    assert payload is not None
    assert "classicMemberMetadata" not in payload["data"]
    classic = ConsumerGroupMemberMetadataValue(
        "c",
        "/h",
        ("t",),
        classic_member_metadata=ConsumerGroupClassicMemberMetadata(
            45000, (ClassicProtocol("range", b"\x00\x03"),)
        ),
    )
    _, payload = decode_offsets_record(key, encode_value(classic))
    assert payload is not None
    assert payload["data"]["classicMemberMetadata"] == {
        "sessionTimeoutMs": 45000,
        "supportedProtocols": [{"name": "range", "metadata": "0003"}],
    }
