"""Errors the SDK raises besides the broker's codes, and the mapping from the wire to them.

Per-partition problems arrive as Kafka error codes and become the classes of
:mod:`odradek.errors` (:func:`error_from_code`). Transport problems arrive as gRPC status codes
(:func:`error_from_rpc`): a node that cannot be reached is a retriable :class:`NetworkError`
(Kafka's ``NETWORK_EXCEPTION``, 13), a deadline that passes is
:class:`~odradek.errors.RequestTimedOutError`.

Pure; thread-safe.
"""

from __future__ import annotations

import grpc

from odradek.client.tls_diagnosis import SslAuthenticationError, diagnose
from odradek.errors import (
    FencedLeaderEpochError,
    InvalidRequestError,
    KafkaStorageError,
    LeaderNotAvailableError,
    MessageTooLargeError,
    NotLeaderOrFollowerError,
    OdradekError,
    RecordError,
    ReplicaNotAvailableError,
    RequestTimedOutError,
    UnknownLeaderEpochError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
    error_for_code,
)

__all__ = [
    "InvalidDifferentRecordError",
    "NetworkError",
    "NoOffsetForPartitionError",
    "ProducerClosedError",
    "SslAuthenticationError",
    "TransactionAbortableError",
    "TransactionAbortedError",
    "TransactionStateError",
    "error_from_code",
    "error_from_rpc",
    "is_invalid_metadata",
    "one_line",
    "BufferExhaustedError",
]


class NetworkError(OdradekError):
    """A node could not be reached, or the connection broke before an answer came (Kafka's
    ``NETWORK_EXCEPTION``). Retriable: another node, or the same one later, may answer."""

    code, name, retriable = 13, "NETWORK_EXCEPTION", True


class NoOffsetForPartitionError(OdradekError):
    """A consumer has no position for a partition and ``auto_offset_reset="none"`` forbids
    choosing one (Kafka's ``NoOffsetForPartitionException``; client-side, no wire code)."""

    name = "NO_OFFSET_FOR_PARTITION"


class ProducerClosedError(OdradekError):
    """The producer was closed: sends are refused, and records still pending when a close
    timed out fail with this error (client-side, no wire code)."""

    name = "PRODUCER_CLOSED"


class BufferExhaustedError(OdradekError):
    """``send()`` found the producer's ``buffer_memory`` full and no room was freed within
    ``max_block_ms`` (Kafka's ``BufferExhaustedException``, a ``TimeoutException``; client-side,
    no wire code). Nothing already accepted is dropped; the record was not accepted. Retriable:
    the buffer drains as the brokers acknowledge."""

    name, retriable = "BUFFER_EXHAUSTED", True


class TransactionAbortableError(OdradekError):
    """The transaction failed and can only be aborted: call ``abort_transaction()``, then try
    again in a new transaction (Kafka's ``TRANSACTION_ABORTABLE``, KIP-890; its cause, the
    error that failed the transaction, is chained as ``__cause__``)."""

    code, name = 120, "TRANSACTION_ABORTABLE"


class TransactionAbortedError(OdradekError):
    """The record was not sent: its transaction was aborted first (Kafka's
    ``TransactionAbortedException``; client-side, no wire code)."""

    name = "TRANSACTION_ABORTED"


class TransactionStateError(OdradekError):
    """A transactional method called in a state that does not allow it, such as
    ``begin_transaction()`` twice or ``send()`` outside a transaction (Kafka's
    ``IllegalStateException``; client-side, no wire code)."""

    name = "ILLEGAL_TRANSACTION_STATE"


class InvalidDifferentRecordError(OdradekError):
    """A record the leader refused only because its batch held records that were invalid
    (librdkafka's ``_INVALID_DIFFERENT_RECORD``; Kafka's Java producer fails them with a plain
    ``KafkaException``): the batch is refused whole (KIP-467). ``record_errors`` names the
    records that were invalid, by their index in the batch. Client-side, no wire code; not
    retriable as it stands (the same batch would be refused again)."""

    name = "INVALID_DIFFERENT_RECORD"


# Errors after which the client's idea of who leads a partition is probably wrong (Kafka's
# InvalidMetadataException family): refresh the metadata before retrying.
_INVALID_METADATA: tuple[type[OdradekError], ...] = (
    NotLeaderOrFollowerError,
    LeaderNotAvailableError,
    UnknownTopicOrPartitionError,
    FencedLeaderEpochError,
    UnknownLeaderEpochError,
    ReplicaNotAvailableError,
    KafkaStorageError,
    NetworkError,
)


def is_invalid_metadata(error: OdradekError) -> bool:
    """Whether ``error`` means the client should refresh its metadata before retrying."""
    return isinstance(error, _INVALID_METADATA)


def one_line(text: str) -> str:
    """``text`` with its line breaks folded into spaces, for one-line messages."""
    return " ".join(text.split()) if ("\n" in text or "\r" in text) else text


def error_from_code(
    code: int, message: str = "", context: str = "", record_errors: tuple[RecordError, ...] = ()
) -> OdradekError:
    """The error for a non-zero wire ``code``; ``context`` (e.g. ``"topic-0"``) prefixes the
    broker's message, which defaults to the error's name. ``record_errors``: the records of a
    produced batch the broker named (KIP-467)."""
    text = message or ""
    if context:
        text = f"{context}: {text}" if text else context
    return error_for_code(code, one_line(text), record_errors)


def error_from_rpc(exc: grpc.RpcError, address: str) -> OdradekError:
    """The typed error for a failed call to the node at ``address``."""
    # Errors raised by calls are also grpc.Call objects with a status; a bare RpcError is not.
    code_of, details_of = getattr(exc, "code", None), getattr(exc, "details", None)
    status: grpc.StatusCode | None = code_of() if callable(code_of) else None
    details: str | None = details_of() if callable(details_of) else None
    text = one_line(details or (status.name if status is not None else str(exc)))
    if status is grpc.StatusCode.UNAVAILABLE:
        tls_failure = diagnose(address, text)
        if tls_failure is not None:
            return tls_failure
    if status in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
        return NetworkError(f"node {address} is not reachable: {text}")
    if status is grpc.StatusCode.DEADLINE_EXCEEDED:
        return RequestTimedOutError(f"node {address} did not answer in time")
    if status is grpc.StatusCode.UNIMPLEMENTED:
        return UnsupportedVersionError(f"node {address} does not serve this call: {text}")
    if status is grpc.StatusCode.INVALID_ARGUMENT:
        return InvalidRequestError(f"node {address} refused the request: {text}")
    if status is grpc.StatusCode.RESOURCE_EXHAUSTED:
        return MessageTooLargeError(f"node {address}: {text}")
    code = _error_code(exc)
    if code is not None:
        return error_from_code(code, text, f"node {address}")
    name = status.name if status is not None else "UNKNOWN"
    return UnknownServerError(f"node {address} failed the call ({name}): {text}")


ERROR_CODE_METADATA_KEY = "odradek-error-code"
"""Trailing metadata a node sets when it refuses a call as a whole with a Kafka error code
(e.g. CLUSTER_AUTHORIZATION_FAILED, 31, for a replication request on a client listener)."""


def _error_code(exc: grpc.RpcError) -> int | None:
    trailers_of = getattr(exc, "trailing_metadata", None)
    try:
        trailers = trailers_of() if callable(trailers_of) else None
    except NotImplementedError:  # an RpcError that is not a call's
        return None
    for key, value in trailers or ():
        if key == ERROR_CODE_METADATA_KEY:
            try:
                code = int(value)
            except (TypeError, ValueError):
                return None
            return code if code != 0 else None
    return None
