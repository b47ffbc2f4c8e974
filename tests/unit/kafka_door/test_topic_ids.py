"""Topic ids between odradek's base64 text and Kafka's 16 wire bytes."""

from __future__ import annotations

import uuid

from controller.zk_data import new_topic_id
from node.kafka_door.topic_ids import ZERO_UUID, topic_id_text, topic_id_uuid


def test_a_topic_id_round_trips_through_its_wire_form():
    for seed in (b"\x01" * 16, bytes(range(16)), b"\xff" * 15 + b"\xfe"):
        text = new_topic_id(seed)
        wire = topic_id_uuid(text)
        assert wire.bytes == seed
        assert topic_id_text(wire) == text


def test_no_id_is_the_zero_uuid_both_ways():
    assert topic_id_uuid("") == ZERO_UUID
    assert topic_id_uuid("not base64 of 16 bytes") == ZERO_UUID
    assert topic_id_text(None) == ""
    assert topic_id_text(ZERO_UUID) == ""
    assert topic_id_text(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"
