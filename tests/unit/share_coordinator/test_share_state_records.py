"""``__share_group_state`` records (odradek.share_state_records): snapshot and update keys and
values round-trip, the bytes are Kafka's layout (checked by hand against the schema), a
tombstone is a null value, malformed bytes raise CorruptRecordError."""

from __future__ import annotations

import base64
import struct

import pytest

from odradek.errors import CorruptRecordError
from odradek.share_state_records import (
    SHARE_SNAPSHOT_KEY_TYPE,
    SHARE_UPDATE_KEY_TYPE,
    ShareStateBatchRecord,
    ShareStateKey,
    ShareStateValue,
    decode_share_key,
    decode_share_value,
    encode_share_key,
    encode_share_value,
)

RAW_TOPIC_ID = bytes(range(1, 17))
TOPIC_ID = base64.urlsafe_b64encode(RAW_TOPIC_ID).decode().rstrip("=")  # as Kafka prints a Uuid


def test_key_layout_and_round_trip() -> None:
    key = ShareStateKey("g:1", TOPIC_ID, 7)
    raw = encode_share_key(key)
    assert raw == (struct.pack(">hh", 0, 3) + b"g:1" + RAW_TOPIC_ID + struct.pack(">i", 7))
    assert decode_share_key(raw) == key
    update = ShareStateKey("g", TOPIC_ID, 0, SHARE_UPDATE_KEY_TYPE)
    assert decode_share_key(encode_share_key(update)) == update


def test_snapshot_value_layout_and_round_trip() -> None:
    value = ShareStateValue(
        snapshot_epoch=3,
        state_epoch=2,
        leader_epoch=5,
        start_offset=100,
        batches=(ShareStateBatchRecord(100, 109, 2, 1), ShareStateBatchRecord(110, 110, 0, 3)),
        create_timestamp=1_700_000_000_000,
        write_timestamp=1_700_000_000_500,
    )
    raw = encode_share_value(SHARE_SNAPSHOT_KEY_TYPE, value)
    assert raw is not None
    expected = (
        struct.pack(">hiiiqqq", 0, 3, 2, 5, 100, 1_700_000_000_000, 1_700_000_000_500)
        + bytes([3])  # compact array of 2
        + struct.pack(">qqbh", 100, 109, 2, 1)
        + b"\x00"
        + struct.pack(">qqbh", 110, 110, 0, 3)
        + b"\x00"
        + b"\x00"  # no tagged fields
    )
    assert raw == expected
    assert decode_share_value(SHARE_SNAPSHOT_KEY_TYPE, raw) == value


def test_update_value_round_trip_and_tombstone() -> None:
    value = ShareStateValue(1, -1, 4, -1, (ShareStateBatchRecord(5, 6, 4, 2),))
    raw = encode_share_value(SHARE_UPDATE_KEY_TYPE, value)
    assert raw is not None
    assert raw[:18] == struct.pack(">hiiq", 0, 1, 4, -1)
    assert decode_share_value(SHARE_UPDATE_KEY_TYPE, raw) == value
    assert encode_share_value(SHARE_SNAPSHOT_KEY_TYPE, None) is None
    assert decode_share_value(SHARE_SNAPSHOT_KEY_TYPE, None) is None


def test_malformed_bytes_raise() -> None:
    with pytest.raises(CorruptRecordError):
        decode_share_key(struct.pack(">h", 9) + b"xx")
    with pytest.raises(CorruptRecordError):
        decode_share_key(encode_share_key(ShareStateKey("g", TOPIC_ID, 0)) + b"!")
    raw = encode_share_value(SHARE_SNAPSHOT_KEY_TYPE, ShareStateValue(0, 0, 0, 0))
    assert raw is not None
    with pytest.raises(CorruptRecordError):
        decode_share_value(SHARE_SNAPSHOT_KEY_TYPE, raw[:-2])
