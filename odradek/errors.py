"""Errors that carry Kafka's error codes.

Every error odradek reports to a client has the numeric code and name of the matching Kafka
error (``org.apache.kafka.common.protocol.Errors``) and says whether retrying may succeed, as
aiokafka's ``errors.py`` does. Storage raises them, the broker's gRPC servicer maps them onto the
wire, and the SDK raises them again from the codes it receives: one table for all three.

This module is pure and imports nothing of ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

__all__ = [
    "RecordError",
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
    "CoordinatorLoadInProgressError",
    "OutOfOrderSequenceError",
    "DuplicateSequenceError",
    "InvalidProducerEpochError",
    "UnknownProducerIdError",
    "InvalidTxnStateError",
    "TransactionCoordinatorFencedError",
    "InvalidProducerIdMappingError",
    "InvalidTransactionTimeoutError",
    "ConcurrentTransactionsError",
    "ProducerFencedError",
    "TransactionalIdNotFoundError",
    "OperationNotAttemptedError",
    "TopicAuthorizationFailedError",
    "GroupAuthorizationFailedError",
    "ClusterAuthorizationFailedError",
    "TransactionalIdAuthorizationFailedError",
    "UnsupportedSaslMechanismError",
    "IllegalSaslStateError",
    "SaslAuthenticationFailedError",
    "ListenerNotFoundError",
    "SecurityDisabledError",
    "ResourceNotFoundError",
    "UnacceptableCredentialError",
    "InvalidRecordStateError",
    "ShareSessionNotFoundError",
    "InvalidShareSessionEpochError",
    "FencedStateEpochError",
    "ShareSessionLimitReachedError",
    "ERRORS_BY_CODE",
    "error_for_code",
]


@dataclass(frozen=True, slots=True)
class RecordError:
    """One record of a batch the leader refused (Kafka's ``ProduceResponse.RecordError``,
    KIP-467): its index in its batch (0 for the batch's first record) and why."""

    batch_index: int
    message: str


class OdradekError(Exception):
    """Root of every error odradek raises on purpose.

    ``code`` and ``name`` are Kafka's (``-1``/``UNKNOWN_SERVER_ERROR`` for errors with no wire
    meaning); ``retriable`` says whether the same request may succeed later. ``record_errors``
    names the records that made a produce fail (KIP-467: INVALID_RECORD, INVALID_TIMESTAMP),
    by their index in their batch; empty for every other error.
    """

    code: ClassVar[int] = -1
    name: ClassVar[str] = "UNKNOWN_SERVER_ERROR"
    retriable: ClassVar[bool] = False

    def __init__(self, message: str = "", record_errors: tuple[RecordError, ...] = ()) -> None:
        super().__init__(message or self.name)
        self.message = message or self.name
        self.record_errors = record_errors

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


class CoordinatorLoadInProgressError(OdradekError):
    """InitProducerId while the node is still fetching a producer-id block."""

    code, name, retriable = 14, "COORDINATOR_LOAD_IN_PROGRESS", True


class OutOfOrderSequenceError(OdradekError):
    """A producer's batch does not follow its last one (a gap, or a new epoch not at 0)."""

    code, name = 45, "OUT_OF_ORDER_SEQUENCE_NUMBER"


class DuplicateSequenceError(OdradekError):
    """Defined by Kafka but not sent: brokers answer a duplicate batch with success."""

    code, name = 46, "DUPLICATE_SEQUENCE_NUMBER"


class InvalidProducerEpochError(OdradekError):
    """A producer's batch has an epoch below the one the partition last saw."""

    code, name = 47, "INVALID_PRODUCER_EPOCH"


class UnknownProducerIdError(OdradekError):
    """The partition has no state for the producer id (old brokers; odradek accepts the
    batch instead, as Kafka does since KIP-360)."""

    code, name = 59, "UNKNOWN_PRODUCER_ID"


class InvalidTxnStateError(OdradekError):
    """A producer mixed transactional and non-transactional batches in one transaction
    (Kafka's ``InvalidTxnStateException``)."""

    code, name = 48, "INVALID_TXN_STATE"


class InvalidProducerIdMappingError(OdradekError):
    """A transactional request whose producer id is not the transactional id's."""

    code, name = 49, "INVALID_PRODUCER_ID_MAPPING"


class InvalidTransactionTimeoutError(OdradekError):
    """``transaction.timeout.ms`` above the broker's ``transaction.max.timeout.ms``."""

    code, name = 50, "INVALID_TRANSACTION_TIMEOUT"


class ConcurrentTransactionsError(OdradekError):
    """The transactional id's previous transaction is still completing (retry)."""

    code, name, retriable = 51, "CONCURRENT_TRANSACTIONS", True


class ProducerFencedError(OdradekError):
    """Another producer with the same transactional id (a newer epoch) took over."""

    code, name = 90, "PRODUCER_FENCED"


class OperationNotAttemptedError(OdradekError):
    """Not attempted because another part of the same request failed (AddPartitionsToTxn)."""

    code, name = 55, "OPERATION_NOT_ATTEMPTED"


class TransactionalIdNotFoundError(OdradekError):
    """DescribeTransactions of a transactional id the coordinator does not know."""

    code, name = 105, "TRANSACTIONAL_ID_NOT_FOUND"


class TransactionCoordinatorFencedError(OdradekError):
    """A transaction marker from a coordinator epoch older than the one the partition last
    saw for the producer (a zombie coordinator)."""

    code, name = 52, "TRANSACTION_COORDINATOR_FENCED"


# -- security (docs/security.md); none is retriable


class TopicAuthorizationFailedError(OdradekError):
    code, name = 29, "TOPIC_AUTHORIZATION_FAILED"


class GroupAuthorizationFailedError(OdradekError):
    code, name = 30, "GROUP_AUTHORIZATION_FAILED"


class ClusterAuthorizationFailedError(OdradekError):
    code, name = 31, "CLUSTER_AUTHORIZATION_FAILED"


class UnsupportedSaslMechanismError(OdradekError):
    code, name = 33, "UNSUPPORTED_SASL_MECHANISM"


class IllegalSaslStateError(OdradekError):
    code, name = 34, "ILLEGAL_SASL_STATE"


class SecurityDisabledError(OdradekError):
    """An ACL request to a cluster without an authorizer (``authorizer.class.name``)."""

    code, name = 54, "SECURITY_DISABLED"


class TransactionalIdAuthorizationFailedError(OdradekError):
    code, name = 53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


class SaslAuthenticationFailedError(OdradekError):
    code, name = 58, "SASL_AUTHENTICATION_FAILED"


class ListenerNotFoundError(OdradekError):
    """A partition's leader has no endpoint on the listener the client connected on (the
    brokers' listeners differ, e.g. during a rolling change of ``listeners``)."""

    code, name, retriable = 72, "LISTENER_NOT_FOUND", True


class ResourceNotFoundError(OdradekError):
    code, name = 91, "RESOURCE_NOT_FOUND"


class UnacceptableCredentialError(OdradekError):
    code, name = 93, "UNACCEPTABLE_CREDENTIAL"


# -- consumer groups (docs/groups.md): the group coordinator's errors, Kafka's codes


class OffsetMetadataTooLargeError(OdradekError):
    code, name = 12, "OFFSET_METADATA_TOO_LARGE"


class CoordinatorNotAvailableError(OdradekError):
    """The group's __consumer_offsets partition has no leader (or is being created)."""

    code, name, retriable = 15, "COORDINATOR_NOT_AVAILABLE", True


class NotCoordinatorError(OdradekError):
    """This node does not lead the group's __consumer_offsets partition: find it again."""

    code, name, retriable = 16, "NOT_COORDINATOR", True


class InvalidGroupIdError(OdradekError):
    code, name = 24, "INVALID_GROUP_ID"


class UnknownMemberIdError(OdradekError):
    """The member is not (or no longer) in the group: it must rejoin with epoch 0."""

    code, name = 25, "UNKNOWN_MEMBER_ID"


class NonEmptyGroupError(OdradekError):
    code, name = 68, "NON_EMPTY_GROUP"


class GroupIdNotFoundError(OdradekError):
    code, name = 69, "GROUP_ID_NOT_FOUND"


class GroupMaxSizeReachedError(OdradekError):
    code, name = 81, "GROUP_MAX_SIZE_REACHED"


class FencedInstanceIdError(OdradekError):
    """A static member's instance id is now held by another member id."""

    code, name = 82, "FENCED_INSTANCE_ID"


class GroupSubscribedToTopicError(OdradekError):
    """OffsetDelete of a topic the group is still subscribed to."""

    code, name = 86, "GROUP_SUBSCRIBED_TO_TOPIC"


class FencedMemberEpochError(OdradekError):
    """The member's epoch is not the coordinator's: it must rejoin with epoch 0."""

    code, name = 110, "FENCED_MEMBER_EPOCH"


class UnreleasedInstanceIdError(OdradekError):
    """The instance id is still held by a member that has not left with epoch -2."""

    code, name = 111, "UNRELEASED_INSTANCE_ID"


class UnsupportedAssignorError(OdradekError):
    code, name = 112, "UNSUPPORTED_ASSIGNOR"


class StaleMemberEpochError(OdradekError):
    """An offset commit or fetch with an epoch other than the member's current one."""

    code, name = 113, "STALE_MEMBER_EPOCH"


class InvalidRegularExpressionError(OdradekError):
    code, name = 128, "INVALID_REGULAR_EXPRESSION"


# -- share groups (KIP-932) ---------------------------------------------------------------------


class InvalidRecordStateError(OdradekError):
    """An acknowledgement of records that are not acquired by the member (or not at all)."""

    code, name = 121, "INVALID_RECORD_STATE"


class ShareSessionNotFoundError(OdradekError):
    code, name, retriable = 122, "SHARE_SESSION_NOT_FOUND", True


class InvalidShareSessionEpochError(OdradekError):
    code, name, retriable = 123, "INVALID_SHARE_SESSION_EPOCH", True


class FencedStateEpochError(OdradekError):
    """A write of a share partition's state of an older state epoch (an offset reset since)."""

    code, name = 124, "FENCED_STATE_EPOCH"


class ShareSessionLimitReachedError(OdradekError):
    code, name, retriable = 133, "SHARE_SESSION_LIMIT_REACHED", True


__all__ += [
    "OffsetMetadataTooLargeError",
    "CoordinatorNotAvailableError",
    "NotCoordinatorError",
    "InvalidGroupIdError",
    "UnknownMemberIdError",
    "NonEmptyGroupError",
    "GroupIdNotFoundError",
    "GroupMaxSizeReachedError",
    "FencedInstanceIdError",
    "GroupSubscribedToTopicError",
    "FencedMemberEpochError",
    "UnreleasedInstanceIdError",
    "UnsupportedAssignorError",
    "StaleMemberEpochError",
    "InvalidRegularExpressionError",
]


# -- classic consumer groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), Kafka's codes


class IllegalGenerationError(OdradekError):
    """A classic member's generation is not the group's: it must rejoin."""

    code, name = 22, "ILLEGAL_GENERATION"


class InconsistentGroupProtocolError(OdradekError):
    """A JoinGroup whose protocol type or protocols the group's members do not share."""

    code, name = 23, "INCONSISTENT_GROUP_PROTOCOL"


class InvalidSessionTimeoutError(OdradekError):
    """A session timeout outside ``group.min.session.timeout.ms`` ..
    ``group.max.session.timeout.ms``."""

    code, name = 26, "INVALID_SESSION_TIMEOUT"


class RebalanceInProgressError(OdradekError):
    """The classic group is rebalancing: the member must rejoin."""

    code, name = 27, "REBALANCE_IN_PROGRESS"


class MemberIdRequiredError(OdradekError):
    """KIP-394: the first JoinGroup gets the member id it must join again with."""

    code, name = 79, "MEMBER_ID_REQUIRED"


__all__ += [
    "IllegalGenerationError",
    "InconsistentGroupProtocolError",
    "InvalidSessionTimeoutError",
    "RebalanceInProgressError",
    "MemberIdRequiredError",
]


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


def error_for_code(
    code: int, message: str = "", record_errors: tuple[RecordError, ...] = ()
) -> OdradekError:
    """The error for a wire ``code``; unknown codes give :class:`UnknownServerError`.

    Raises ``ValueError`` for code 0 (NONE), which is not an error.
    """
    if code == 0:
        raise ValueError("error code 0 (NONE) is not an error")
    cls = ERRORS_BY_CODE.get(code, UnknownServerError)
    return cls(message, record_errors)
