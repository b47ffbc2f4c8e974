"""FindCoordinator (10), v0-v6: the node coordinating a consumer group, a transactional id or
a share partition.

The coordinator is the leader of the group's partition of ``__consumer_offsets`` (created on
first use); the answer gives its endpoint **on the listener the request came in on**, as Kafka
does (a client of a SASL_SSL listener must be sent to the coordinator's SASL_SSL endpoint).
COORDINATOR_NOT_AVAILABLE (15) while the offsets topic or its leader is not ready, or when the
coordinator has no endpoint on this listener; GROUP_AUTHORIZATION_FAILED (30) without DESCRIBE on
the group. A transactional key (``key_type`` 1) is the transaction coordinator's: the leader
of the id's ``__transaction_state`` partition (DESCRIBE on the transactional id, else 53). A
share key (``key_type`` 2, v6+: KIP-932) ``group:topicId:partition`` is the share
coordinator's: the leader of its ``__share_group_state`` partition (CLUSTER_ACTION, else 31:
brokers ask it; :mod:`node.apis.share_state`); below v6 a share key is INVALID_REQUEST, as
Kafka's ``getCoordinator``.

v3+ are flexible. v4+ look up several keys of one type at once (``coordinator_keys``, KIP-699),
each answered with its own coordinator or error, as Kafka's
``handleFindCoordinatorRequestV4AndAbove``; v5 only lets the broker answer
TRANSACTION_ABORTABLE (KIP-890), which a lookup never does; v6 adds the share key type."""

from __future__ import annotations

from typing import Any

from node.coordinator.group_requests import Coordinator
from node.kafka_door import views
from node.kafka_door.build import make, nested, respond, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.services import DoorServices

__all__ = ["handle_find_coordinator"]

API_KEY = 10
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
INVALID_REQUEST = 42
SHARE_SINCE = 6
"""The first version with the share key type (2)."""


BATCHED_SINCE = 4
"""The first version with several keys per request (KIP-699)."""


def handle_find_coordinator(
    services: DoorServices, ctx: RequestContext, request: views.FindCoordinatorRequestView
) -> Any:
    batched = ctx.api_version >= BATCHED_SINCE
    keys = (
        [str(k) for k in getattr(request, "coordinator_keys", ())]
        if batched
        else [str(getattr(request, "key", ""))]
    )
    key_type = int(getattr(request, "key_type", 0))
    transactions = services.api.transactions
    if key_type == 1 and transactions is not None:
        found = transactions.find_coordinator(ctx.caller, keys, ctx.listener)
    elif key_type == 2:
        share_state = services.api.share_state
        found = (
            share_state.find_coordinator(ctx.caller, keys, ctx.listener)
            if share_state is not None and ctx.api_version >= SHARE_SINCE
            else [Coordinator(k, error_code=INVALID_REQUEST) for k in keys]
        )
    elif key_type != 0:
        found = [Coordinator(k, error_code=TRANSACTIONAL_ID_AUTHORIZATION_FAILED) for k in keys]
    else:
        found = services.group_apis.find_coordinator(ctx.caller, keys, ctx.listener)
    if not batched:
        (one,) = found
        return respond(ctx, **_fields(one))
    item = nested(response_class_of(ctx), "Coordinator")
    return respond(ctx, coordinators=tuple(make(item, key=c.key, **_fields(c)) for c in found))


def _fields(found: Coordinator) -> dict[str, Any]:
    return {
        "error_code": found.error_code,
        "error_message": found.error_message or None,
        "node_id": found.node_id,
        "host": found.host,
        "port": found.port,
    }
