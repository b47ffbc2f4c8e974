"""InitProducerId: an idempotent producer asks any node for its producer id and epoch.

Kafka's ``TransactionManager`` sends ``InitProducerId`` with no transactional id and a
transaction timeout of ``Integer.MAX_VALUE`` before the first batch (and again when the epoch
would pass ``Short.MAX_VALUE``, KIP-360). The node answers a fresh id with epoch 0.
:func:`init_producer_id` makes one call; the caller retries retriable errors
(``COORDINATOR_LOAD_IN_PROGRESS`` while the node claims an id block, network errors), possibly
on another node.

Blocking; safe to call from any thread.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from odradek.client.connection import call
from odradek.client.errors import error_from_code
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = ["INT32_MAX", "ProducerIdAndEpoch", "init_producer_id"]

INT32_MAX = 2**31 - 1
"""The transaction timeout an idempotent Java producer sends (``Integer.MAX_VALUE``)."""


@dataclass(frozen=True, slots=True)
class ProducerIdAndEpoch:
    """A producer's identity: every batch it sends carries both."""

    producer_id: int
    epoch: int


def init_producer_id(
    channel: grpc.Channel | pb_grpc.BrokerStub,
    *,
    address: str,
    timeout_ms: int,
    producer_id: int = -1,
    producer_epoch: int = -1,
) -> ProducerIdAndEpoch:
    """Call InitProducerId on the node behind ``channel`` (a channel, or a ``Broker`` stub on
    one; ``address`` names it in errors).

    ``producer_id``/``producer_epoch`` are the current ones, if any (KIP-360; an idempotent
    producer gets a new id regardless). Raises the typed error of a non-zero error code
    (:class:`~odradek.errors.CoordinatorLoadInProgressError` is retriable) or of a failed call
    (:class:`~odradek.client.errors.NetworkError`, ``RequestTimedOutError``, …).
    """
    request = pb.InitProducerIdRequest(
        transaction_timeout_ms=INT32_MAX,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )
    stub = channel if isinstance(channel, pb_grpc.BrokerStub) else pb_grpc.BrokerStub(channel)
    response = call(stub.InitProducerId, request, address=address, timeout_ms=timeout_ms)
    if response.error_code != 0:
        raise error_from_code(response.error_code, response.error_message, f"node {address}")
    return ProducerIdAndEpoch(response.producer_id, response.producer_epoch)
