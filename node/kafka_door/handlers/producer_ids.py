"""InitProducerId (22), v0-v1: a producer id for an idempotent producer.

As Kafka's ``KafkaApis.handleInitProducerIdRequest`` without a transactional id: the principal
needs IDEMPOTENT_WRITE on the cluster or, since KIP-679, WRITE on any topic, else
CLUSTER_AUTHORIZATION_FAILED (31) (:class:`~node.security.auth_helper.AuthHelper`). A
transactional id is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53): odradek has no
transaction coordinator.
"""

from __future__ import annotations

from typing import Any

from node.kafka_door.build import make
from node.kafka_door.context import RequestContext
from node.kafka_door.frames import response_class
from node.kafka_door.services import DoorServices

__all__ = ["handle_init_producer_id"]

API_KEY = 22


def handle_init_producer_id(services: DoorServices, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(API_KEY, ctx.api_version)
    transactional_id = request.transactional_id
    result = services.api.records.init_producer_id(
        ctx.caller, None if transactional_id is None else str(transactional_id)
    )
    return make(
        cls,
        throttle_time=0,
        error_code=result.error_code,
        producer_id=result.producer_id,
        producer_epoch=result.producer_epoch,
    )
