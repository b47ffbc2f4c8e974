"""InitProducerId (22), v0-v4: a producer id for an idempotent or a transactional producer.

As Kafka's ``KafkaApis.handleInitProducerIdRequest``: without a transactional id the principal
needs IDEMPOTENT_WRITE on the cluster or, since KIP-679, WRITE on any topic, else
CLUSTER_AUTHORIZATION_FAILED (31); with one, WRITE on it (53) and the transaction coordinator
bumps its epoch (v3+: KIP-360's producer id and epoch of a producer recovering). The policy is
:class:`~node.apis.records.RecordApis`' and :class:`~node.apis.transactions.TransactionApis`'.
PRODUCER_FENCED is answered to v4+ only, INVALID_PRODUCER_EPOCH before (KIP-588, as Kafka).
"""

from __future__ import annotations

from typing import Any

from node.kafka_door import views
from node.kafka_door.build import make, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.handlers.transactions import fenced_for_version
from node.kafka_door.services import DoorServices

__all__ = ["handle_init_producer_id"]

API_KEY = 22
FENCED_SINCE = 4
"""The first version told PRODUCER_FENCED (KIP-588)."""


def handle_init_producer_id(
    services: DoorServices, ctx: RequestContext, request: views.InitProducerIdRequestView
) -> Any:
    cls = response_class_of(ctx)
    transactional_id = request.transactional_id
    timeout = request.transaction_timeout
    producer_id = int(getattr(request, "producer_id", -1))  # v3+ (KIP-360)
    producer_epoch = int(getattr(request, "producer_epoch", -1))
    result = services.api.records.init_producer_id(
        ctx.caller,
        None if transactional_id is None else str(transactional_id),
        int(timeout.total_seconds() * 1000),
        None if producer_id < 0 else (producer_id, producer_epoch),
    )
    return make(
        cls,
        throttle_time=0,
        error_code=fenced_for_version(result.error_code, ctx.api_version, FENCED_SINCE),
        producer_id=result.producer_id,
        producer_epoch=result.producer_epoch,
    )
