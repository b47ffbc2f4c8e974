"""``odradek dump-log --share-group-state-decoder``: records of ``__share_group_state`` as JSON.

Kafka's ``kafka-dump-log.sh --share-group-state-decoder`` prints each record of the share
coordinator's topic as ``key: {"type":"0","data":{...}} payload: {"version":"0","data":{...}}``,
the data being the record's JSON form with the schema's field names (``ShareSnapshotKey`` /
``ShareSnapshotValue`` for type 0, ``ShareUpdateKey`` / ``ShareUpdateValue`` for type 1), and
``payload: <DELETE>`` for a tombstone. This module does the same with
:mod:`odradek.share_state_records`; a key or value it cannot decode is shown as an ``error``
object with the raw bytes in hex, so one odd record never stops a dump.

Pure and thread-safe.
"""

from __future__ import annotations

import json
from typing import Any

from odradek.errors import CorruptRecordError
from odradek.share_state_records import (
    SHARE_SNAPSHOT_KEY_TYPE,
    decode_share_key,
    decode_share_value,
)

__all__ = ["DELETE", "decode_share_state_record", "share_state_record_text"]

DELETE = "<DELETE>"
"""What Kafka's decoder prints for a tombstone's payload."""


def decode_share_state_record(
    key: bytes | None, value: bytes | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``(key, payload)`` as JSON-ready objects; payload None for a tombstone."""
    if key is None:
        return {"error": "a record of __share_group_state without a key"}, None
    try:
        k = decode_share_key(key)
    except CorruptRecordError as exc:
        return {"error": exc.message, "hex": key.hex()}, (
            None if value is None else {"hex": value.hex()}
        )
    key_doc = {
        "type": str(k.record_type),
        "data": {"groupId": k.group_id, "topicId": k.topic_id, "partition": k.partition},
    }
    if value is None:
        return key_doc, None
    try:
        v = decode_share_value(k.record_type, value)
    except CorruptRecordError as exc:
        return key_doc, {"error": exc.message, "hex": value.hex()}
    assert v is not None  # value is not None
    snapshot = k.record_type == SHARE_SNAPSHOT_KEY_TYPE
    data: dict[str, Any] = {"snapshotEpoch": v.snapshot_epoch}
    if snapshot:
        data["stateEpoch"] = v.state_epoch
    data["leaderEpoch"] = v.leader_epoch
    data["startOffset"] = v.start_offset
    if snapshot:
        data["createTimestamp"] = v.create_timestamp
        data["writeTimestamp"] = v.write_timestamp
    data["stateBatches"] = [
        {
            "firstOffset": b.first_offset,
            "lastOffset": b.last_offset,
            "deliveryState": b.delivery_state,
            "deliveryCount": b.delivery_count,
        }
        for b in v.batches
    ]
    version = int.from_bytes(value[:2], "big", signed=True)
    return key_doc, {"version": str(version), "data": data}


def share_state_record_text(key: bytes | None, value: bytes | None) -> str:
    """Kafka's text form: ``key: {...} payload: {...}`` (``payload: <DELETE>`` for a
    tombstone)."""
    key_doc, payload = decode_share_state_record(key, value)
    shown = DELETE if payload is None else json.dumps(payload, separators=(",", ":"))
    return f"key: {json.dumps(key_doc, separators=(',', ':'))} payload: {shown}"
