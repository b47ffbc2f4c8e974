"""Which clock a batch's timestamps come from: attribute bit 3 of a v2 record batch."""

from __future__ import annotations

import enum

__all__ = ["TimestampType"]


class TimestampType(enum.IntEnum):
    """``CREATE_TIME`` (bit 3 clear): each record carries the time its producer set.
    ``LOG_APPEND_TIME`` (bit 3 set): the broker's append time, stored once as the batch's
    MaxTimestamp, is every record's timestamp (Kafka's ``message.timestamp.type``).
    """

    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def label(self) -> str:
        """The lowercase name (``"create_time"``)."""
        return self.name.lower()

    @classmethod
    def from_name(cls, name: str) -> TimestampType:
        """The type called ``name``: ``"create_time"`` or ``"log_append_time"``, any case (Kafka's
        config spellings ``"CreateTime"``/``"LogAppendTime"`` are accepted too).

        Raises ``ValueError`` for any other name.
        """
        member = _BY_LABEL.get(name.lower()) if isinstance(name, str) else None
        if member is None:
            raise ValueError(f"unknown timestamp type {name!r}")
        return member


_BY_LABEL: dict[str, TimestampType] = {
    "create_time": TimestampType.CREATE_TIME,
    "log_append_time": TimestampType.LOG_APPEND_TIME,
    "createtime": TimestampType.CREATE_TIME,
    "logappendtime": TimestampType.LOG_APPEND_TIME,
}
