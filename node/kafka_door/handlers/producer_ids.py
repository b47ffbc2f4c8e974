"""InitProducerId (22), v0-v4: a producer id for an idempotent producer.

As Kafka's ``KafkaApis.handleInitProducerIdRequest`` without a transactional id: the principal
needs IDEMPOTENT_WRITE on the cluster or, since KIP-679, WRITE on any topic, else
CLUSTER_AUTHORIZATION_FAILED (31). A transactional id is refused: odradek has no transaction
coordinator (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 53, as Kafka answers a principal that may not
use one). A request re-initialising a known producer (v3+: ``producer_id`` ≥ 0) gets a new id,
epoch 0, which is what the idempotent producer needs after a fatal sequence error (KIP-360).
"""

from __future__ import annotations

from typing import Any

from node.kafka_door.build import make
from node.kafka_door.context import RequestContext
from node.kafka_door.frames import response_class
from node.kafka_door.services import DoorServices

__all__ = ["handle_init_producer_id"]

API_KEY = 22
CLUSTER_AUTHORIZATION_FAILED = 31
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53


def handle_init_producer_id(services: DoorServices, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(API_KEY, ctx.api_version)
    if request.transactional_id is not None:
        return make(
            cls,
            throttle_time=0,
            error_code=TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            producer_id=-1,
            producer_epoch=-1,
        )
    if not services.auth.may_write_idempotently(ctx.principal, ctx.connection.peer_host):
        return make(
            cls,
            throttle_time=0,
            error_code=CLUSTER_AUTHORIZATION_FAILED,
            producer_id=-1,
            producer_epoch=-1,
        )
    result = services.producer_ids.init_producer_id()
    return make(
        cls,
        throttle_time=0,
        error_code=result.error_code,
        producer_id=result.producer_id,
        producer_epoch=result.producer_epoch,
    )
