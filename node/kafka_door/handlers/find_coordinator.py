"""FindCoordinator (10), v0-v2: the node coordinating a consumer group.

The coordinator is the leader of the group's partition of ``__consumer_offsets`` (created on
first use); the answer gives its endpoint **on the listener the request came in on**, as Kafka
does (a client of a SASL_SSL listener must be sent to the coordinator's SASL_SSL endpoint).
COORDINATOR_NOT_AVAILABLE (15) while the offsets topic or its leader is not ready, or when the
coordinator has no endpoint on this listener; GROUP_AUTHORIZATION_FAILED (30) without DESCRIBE on
the group. A transactional key (``key_type`` 1) is the transaction coordinator's: the leader
of the id's ``__transaction_state`` partition (DESCRIBE on the transactional id, else 53).
"""

from __future__ import annotations

from typing import Any

from node.coordinator.group_requests import Coordinator
from node.kafka_door import views
from node.kafka_door.build import respond
from node.kafka_door.context import RequestContext
from node.kafka_door.services import DoorServices

__all__ = ["handle_find_coordinator"]

API_KEY = 10
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53


def handle_find_coordinator(
    services: DoorServices, ctx: RequestContext, request: views.FindCoordinatorRequestView
) -> Any:
    key = str(request.key)
    key_type = int(getattr(request, "key_type", 0))
    transactions = services.api.transactions
    if key_type == 1 and transactions is not None:
        (found,) = transactions.find_coordinator(ctx.caller, [key], ctx.listener)
    elif key_type != 0:
        found = Coordinator(key, error_code=TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    else:
        (found,) = services.group_apis.find_coordinator(ctx.caller, [key], ctx.listener)
    return respond(
        ctx,
        throttle_time=0,
        error_code=found.error_code,
        error_message=found.error_message or None,
        node_id=found.node_id,
        host=found.host,
        port=found.port,
    )
