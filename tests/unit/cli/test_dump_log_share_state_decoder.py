"""``odradek dump-log --share-group-state-decoder``: records of ``__share_group_state`` decoded
as Kafka's option prints them (a snapshot, an update, a tombstone, an undecodable key)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odradek.cli import main
from odradek.clock import ManualClock
from odradek.records import Record, build_batch
from odradek.share_state_records import (
    SHARE_SNAPSHOT_KEY_TYPE,
    SHARE_UPDATE_KEY_TYPE,
    ShareStateBatchRecord,
    ShareStateKey,
    ShareStateValue,
    encode_share_key,
    encode_share_value,
)
from storage import Log, LogConfig

SEG = "00000000000000000000"
TOPIC_ID = "AAECAwQFBgcICQoLDA0ODw"


def share_state_log(tmp_path: Path) -> Path:
    snapshot = ShareStateValue(
        0, 1, 2, 10, (ShareStateBatchRecord(10, 12, 2, 1),), create_timestamp=5, write_timestamp=6
    )
    update = ShareStateValue(0, -1, 3, -1, (ShareStateBatchRecord(13, 13, 4, 5),))
    records = [
        Record(
            encode_share_key(ShareStateKey("g", TOPIC_ID, 3)),
            encode_share_value(SHARE_SNAPSHOT_KEY_TYPE, snapshot),
            timestamp=1,
        ),
        Record(
            encode_share_key(ShareStateKey("g", TOPIC_ID, 3, SHARE_UPDATE_KEY_TYPE)),
            encode_share_value(SHARE_UPDATE_KEY_TYPE, update),
            timestamp=2,
        ),
        Record(encode_share_key(ShareStateKey("g", TOPIC_ID, 3)), None, timestamp=3),
        Record(b"\x00\x63junk", b"x", timestamp=4),
    ]
    directory = tmp_path / "__share_group_state-0"
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
    code = main(["dump-log", "--share-group-state-decoder", str(share_state_log(tmp_path))])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    records = [line for line in lines if line.startswith("| offset:")]
    assert len(records) == 4
    key = f'{{"groupId":"g","topicId":"{TOPIC_ID}","partition":3}}'
    assert records[0].endswith(
        f'key: {{"type":"0","data":{key}}} '
        'payload: {"version":"0","data":{"snapshotEpoch":0,"stateEpoch":1,"leaderEpoch":2,'
        '"startOffset":10,"createTimestamp":5,"writeTimestamp":6,"stateBatches":'
        '[{"firstOffset":10,"lastOffset":12,"deliveryState":2,"deliveryCount":1}]}}'
    )
    assert records[1].endswith(
        f'key: {{"type":"1","data":{key}}} '
        'payload: {"version":"0","data":{"snapshotEpoch":0,"leaderEpoch":3,"startOffset":-1,'
        '"stateBatches":[{"firstOffset":13,"lastOffset":13,"deliveryState":4,'
        '"deliveryCount":5}]}}'
    )
    assert records[2].endswith("payload: <DELETE>")
    assert '"error":"__share_group_state key: unknown record type 99' in records[3]


def test_json_output_carries_decoded_key_and_payload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["dump-log", "--json", "--share-group-state-decoder", str(share_state_log(tmp_path))]
    )
    (doc,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0
    records = doc["batches"][0]["records"]
    assert records[0]["share_state_key"] == {
        "type": "0",
        "data": {"groupId": "g", "topicId": TOPIC_ID, "partition": 3},
    }
    assert records[0]["share_state_payload"]["data"]["stateEpoch"] == 1
    assert records[2]["share_state_payload"] is None
