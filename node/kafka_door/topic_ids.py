"""Topic ids between odradek's text and Kafka's wire.

odradek prints a topic id as Kafka's ``Uuid.toString`` does (16 bytes, URL-safe base64, no
padding: :func:`controller.zk_data.new_topic_id`); on the wire (Metadata v10+, the KIP-848
group APIs) it is the 16 bytes, which the codec reads and writes as :class:`uuid.UUID`. Pure;
thread-safe.
"""

from __future__ import annotations

import base64
import binascii
import uuid

__all__ = ["ZERO_UUID", "topic_id_text", "topic_id_uuid"]

ZERO_UUID = uuid.UUID(int=0)
"""Kafka's ``Uuid.ZERO_UUID``: no topic id."""


def topic_id_uuid(text: str) -> uuid.UUID:
    """The wire form of a topic id (``""`` or one that is not 16 bytes of base64: the zero
    id)."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return ZERO_UUID
    return uuid.UUID(bytes=raw) if len(raw) == 16 else ZERO_UUID


def topic_id_text(value: uuid.UUID | None) -> str:
    """odradek's text of a wire topic id (``""`` for none or the zero id)."""
    if value is None or value == ZERO_UUID:
        return ""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")
