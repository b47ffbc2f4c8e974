"""InitProducerId (22), v0-v1: a producer id for an idempotent producer.

As Kafka's ``KafkaApis.handleInitProducerIdRequest`` without a transactional id: the principal
needs IDEMPOTENT_WRITE on the cluster or, since KIP-679, WRITE on any topic, else
CLUSTER_AUTHORIZATION_FAILED (31) (:class:`~node.security.auth_helper.AuthHelper`). A
transactional id is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53): odradek has no
transaction coordinator.
"""

from __future__ import annotations

from typing import Any

from node.coordinator.producer_id_manager import init_producer_id
from node.kafka_door.build import make
from node.kafka_door.context import RequestContext
from node.kafka_door.frames import response_class
from node.kafka_door.services import DoorServices

__all__ = ["handle_init_producer_id"]

API_KEY = 22
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53


def handle_init_producer_id(services: DoorServices, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(API_KEY, ctx.api_version)
    if request.transactional_id is not None:
        error = TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return make(cls, throttle_time=0, error_code=error, producer_id=-1, producer_epoch=-1)
    refused = None if services.auth is None else services.auth.init_producer_id(ctx.caller)
    result = refused or init_producer_id(services.producer_ids, None)
    return make(
        cls,
        throttle_time=0,
        error_code=result.error_code,
        producer_id=result.producer_id,
        producer_epoch=result.producer_epoch,
    )
