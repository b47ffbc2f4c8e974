"""FindCoordinator (10), v0-v3: the node coordinating a consumer group.

The coordinator is the leader of the group's partition of ``__consumer_offsets`` (created on
first use); the answer gives its endpoint **on the listener the request came in on**, as Kafka
does (a client of a SASL_SSL listener must be sent to the coordinator's SASL_SSL endpoint).
COORDINATOR_NOT_AVAILABLE (15) while the offsets topic or its leader is not ready, or when the
coordinator has no endpoint on this listener; GROUP_AUTHORIZATION_FAILED (30) without DESCRIBE on
the group; a transactional key (``key_type`` 1) answers COORDINATOR_NOT_AVAILABLE... odradek has
no transaction coordinator, so TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53).
"""

from __future__ import annotations

from typing import Any

from node.kafka_door.build import make
from node.kafka_door.context import RequestContext
from node.kafka_door.frames import response_class
from node.kafka_door.services import DoorServices

__all__ = ["handle_find_coordinator"]

API_KEY = 10
COORDINATOR_NOT_AVAILABLE = 15
GROUP_AUTHORIZATION_FAILED = 30
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53


def handle_find_coordinator(services: DoorServices, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(API_KEY, ctx.api_version)
    key_type = int(getattr(request, "key_type", 0))
    if key_type != 0:
        error, node = TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
    elif not services.auth.allowed_groups(
        ctx.principal, ctx.connection.peer_host, "DESCRIBE", {request.key}
    ):
        error, node = GROUP_AUTHORIZATION_FAILED, None
    else:
        error, node_id = services.groups.find_coordinator(request.key)
        node = None
        if error == 0:
            node = services.metadata.endpoint(node_id, ctx.listener)
            if node is None:
                error = COORDINATOR_NOT_AVAILABLE
    if node is None:
        return make(
            cls,
            throttle_time=0,
            error_code=error,
            error_message=None,
            node_id=-1,
            host="",
            port=-1,
        )
    return make(
        cls,
        throttle_time=0,
        error_code=0,
        error_message=None,
        node_id=node.node_id,
        host=node.host,
        port=node.port,
    )
