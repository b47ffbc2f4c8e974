"""Errors that carry Kafka's error codes.

Every error odradek reports to a client has the numeric code and name of the matching Kafka
error (``org.apache.kafka.common.protocol.Errors``) and says whether retrying may succeed, as
aiokafka's ``errors.py`` does. Storage raises them, the broker's gRPC servicer maps them onto the
wire, and the SDK raises them again from the codes it receives: one table for all three.

This module is pure and imports nothing of ours.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "IneligibleReplicaError",
    "PreferredLeaderNotAvailableError",
    "StaleControllerEpochError",
    "ReplicaNotAvailableError",
    "BrokerNotAvailableError",
    "OdradekError",
    "UnknownServerError",
    "OffsetOutOfRangeError",
    "CorruptRecordError",
    "UnknownTopicOrPartitionError",
    "InvalidFetchSizeError",
    "LeaderNotAvailableError",
    "NotLeaderOrFollowerError",
    "RequestTimedOutError",
    "MessageTooLargeError",
    "InvalidTopicError",
    "RecordListTooLargeError",
    "NotEnoughReplicasError",
    "NotEnoughReplicasAfterAppendError",
    "InvalidRequiredAcksError",
    "InvalidTimestampError",
    "UnsupportedVersionError",
    "TopicAlreadyExistsError",
    "InvalidPartitionsError",
    "InvalidReplicationFactorError",
    "InvalidReplicaAssignmentError",
    "InvalidConfigError",
    "NotControllerError",
    "InvalidRequestError",
    "KafkaStorageError",
    "PolicyViolationError",
    "FencedLeaderEpochError",
    "UnknownLeaderEpochError",
    "UnsupportedCompressionTypeError",
    "StaleBrokerEpochError",
    "OffsetNotAvailableError",
    "ElectionNotNeededError",
    "EligibleLeadersNotAvailableError",
    "NoReassignmentInProgressError",
    "InvalidRecordError",
    "InvalidUpdateVersionError",
    "ERRORS_BY_CODE",
    "error_for_code",
]


class OdradekError(Exception):
    """Root of every error odradek raises on purpose.

    ``code`` and ``name`` are Kafka's (``-1``/``UNKNOWN_SERVER_ERROR`` for errors with no wire
    meaning); ``retriable`` says whether the same request may succeed later.
    """

    code: ClassVar[int] = -1
    name: ClassVar[str] = "UNKNOWN_SERVER_ERROR"
    retriable: ClassVar[bool] = False

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.name)
        self.message = message or self.name

    def __str__(self) -> str:
        return f"{self.name} ({self.code}): {self.message}"


class UnknownServerError(OdradekError):
    code, name = -1, "UNKNOWN_SERVER_ERROR"


class OffsetOutOfRangeError(OdradekError):
    code, name = 1, "OFFSET_OUT_OF_RANGE"


class CorruptRecordError(OdradekError):
    code, name, retriable = 2, "CORRUPT_MESSAGE", True


class UnknownTopicOrPartitionError(OdradekError):
    code, name, retriable = 3, "UNKNOWN_TOPIC_OR_PARTITION", True


class InvalidFetchSizeError(OdradekError):
    code, name = 4, "INVALID_FETCH_SIZE"


class LeaderNotAvailableError(OdradekError):
    code, name, retriable = 5, "LEADER_NOT_AVAILABLE", True


class NotLeaderOrFollowerError(OdradekError):
    code, name, retriable = 6, "NOT_LEADER_OR_FOLLOWER", True


class RequestTimedOutError(OdradekError):
    code, name, retriable = 7, "REQUEST_TIMED_OUT", True


class BrokerNotAvailableError(OdradekError):
    code, name = 8, "BROKER_NOT_AVAILABLE"


class ReplicaNotAvailableError(OdradekError):
    code, name, retriable = 9, "REPLICA_NOT_AVAILABLE", True


class MessageTooLargeError(OdradekError):
    code, name = 10, "MESSAGE_TOO_LARGE"


class StaleControllerEpochError(OdradekError):
    code, name = 11, "STALE_CONTROLLER_EPOCH"


class InvalidTopicError(OdradekError):
    code, name = 17, "INVALID_TOPIC_EXCEPTION"


class RecordListTooLargeError(OdradekError):
    code, name = 18, "RECORD_LIST_TOO_LARGE"


class NotEnoughReplicasError(OdradekError):
    code, name, retriable = 19, "NOT_ENOUGH_REPLICAS", True


class NotEnoughReplicasAfterAppendError(OdradekError):
    code, name, retriable = 20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True


class InvalidRequiredAcksError(OdradekError):
    code, name = 21, "INVALID_REQUIRED_ACKS"


class InvalidTimestampError(OdradekError):
    code, name = 32, "INVALID_TIMESTAMP"


class UnsupportedVersionError(OdradekError):
    code, name = 35, "UNSUPPORTED_VERSION"


class TopicAlreadyExistsError(OdradekError):
    code, name = 36, "TOPIC_ALREADY_EXISTS"


class InvalidPartitionsError(OdradekError):
    code, name = 37, "INVALID_PARTITIONS"


class InvalidReplicationFactorError(OdradekError):
    code, name = 38, "INVALID_REPLICATION_FACTOR"


class InvalidReplicaAssignmentError(OdradekError):
    code, name = 39, "INVALID_REPLICA_ASSIGNMENT"


class InvalidConfigError(OdradekError):
    code, name = 40, "INVALID_CONFIG"


class NotControllerError(OdradekError):
    code, name, retriable = 41, "NOT_CONTROLLER", True


class InvalidRequestError(OdradekError):
    code, name = 42, "INVALID_REQUEST"


class PolicyViolationError(OdradekError):
    code, name = 44, "POLICY_VIOLATION"


class KafkaStorageError(OdradekError):
    code, name, retriable = 56, "KAFKA_STORAGE_ERROR", True


class FencedLeaderEpochError(OdradekError):
    code, name, retriable = 74, "FENCED_LEADER_EPOCH", True


class UnknownLeaderEpochError(OdradekError):
    code, name, retriable = 75, "UNKNOWN_LEADER_EPOCH", True


class UnsupportedCompressionTypeError(OdradekError):
    code, name = 76, "UNSUPPORTED_COMPRESSION_TYPE"


class StaleBrokerEpochError(OdradekError):
    code, name = 77, "STALE_BROKER_EPOCH"


class OffsetNotAvailableError(OdradekError):
    code, name, retriable = 78, "OFFSET_NOT_AVAILABLE", True


class PreferredLeaderNotAvailableError(OdradekError):
    code, name, retriable = 80, "PREFERRED_LEADER_NOT_AVAILABLE", True


class ElectionNotNeededError(OdradekError):
    code, name = 84, "ELECTION_NOT_NEEDED"


class NoReassignmentInProgressError(OdradekError):
    code, name = 85, "NO_REASSIGNMENT_IN_PROGRESS"


class InvalidRecordError(OdradekError):
    code, name = 87, "INVALID_RECORD"


class EligibleLeadersNotAvailableError(OdradekError):
    code, name, retriable = 83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", True


class InvalidUpdateVersionError(OdradekError):
    code, name = 95, "INVALID_UPDATE_VERSION"


class IneligibleReplicaError(OdradekError):
    code, name = 107, "INELIGIBLE_REPLICA"


class ReassignmentInProgressError(OdradekError):
    code, name = 60, "REASSIGNMENT_IN_PROGRESS"


def _collect() -> dict[int, type[OdradekError]]:
    table: dict[int, type[OdradekError]] = {}
    pending: list[type[OdradekError]] = [OdradekError]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls is not OdradekError and cls.__module__ == __name__:
            if cls.code in table:
                raise AssertionError(f"two errors share code {cls.code}")
            table[cls.code] = cls
    return table


ERRORS_BY_CODE: dict[int, type[OdradekError]] = _collect()
"""Kafka error code → the error class for it (code 0, NONE, has none)."""


def error_for_code(code: int, message: str = "") -> OdradekError:
    """The error for a wire ``code``; unknown codes give :class:`UnknownServerError`.

    Raises ``ValueError`` for code 0 (NONE), which is not an error.
    """
    if code == 0:
        raise ValueError("error code 0 (NONE) is not an error")
    cls = ERRORS_BY_CODE.get(code, UnknownServerError)
    err = cls(message)
    return err
