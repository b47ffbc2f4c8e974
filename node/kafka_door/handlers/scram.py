"""DescribeUserScramCredentials (50) v0 and AlterUserScramCredentials (51) v0: the admin room's
SCRAM credential calls (KIP-554).

As Kafka's ``KafkaApis.handleDescribeUserScramCredentialsRequest`` /
``handleAlterUserScramCredentialsRequest``: DESCRIBE / ALTER on the cluster (31, for the
whole request / each user); null or empty ``users`` describes every user with a credential;
a named user without one is RESOURCE_NOT_FOUND (91). The wire's mechanisms are 1
(SCRAM-SHA-256) and 2 (SCRAM-SHA-512); any other upserted one is UNSUPPORTED_SASL_MECHANISM
(33). The client salts and hashes: the request carries the salted password, never the password.
"""

from __future__ import annotations

from typing import Any

from node.admin.requests import ScramCredentialDeletion, ScramCredentialUpsertion
from node.kafka_door import views
from node.kafka_door.build import make, nested, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.handlers.admin_common import admin_of, caller
from node.kafka_door.services import DoorServices

__all__ = ["handle_alter_user_scram_credentials", "handle_describe_user_scram_credentials"]

MECHANISM_BY_ID = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
"""Kafka's ``ScramMechanism`` type ids."""
ID_BY_MECHANISM = {name: i for i, name in MECHANISM_BY_ID.items()}


def _mechanism(wire: int) -> str:
    return MECHANISM_BY_ID.get(int(wire), f"UNKNOWN({int(wire)})")


def handle_describe_user_scram_credentials(
    services: DoorServices,
    ctx: RequestContext,
    request: views.DescribeUserScramCredentialsRequestView,
) -> Any:
    users = [u.name for u in request.users] if request.users else None
    response = admin_of(services).describe_user_scram_credentials(*caller(ctx), users)
    cls = response_class_of(ctx)
    result_cls = nested(cls, "DescribeUserScramCredentialsResult")
    info_cls = nested(cls, "CredentialInfo")
    return make(
        cls,
        throttle_time=0,
        error_code=response.error_code,
        error_message=response.error_message or None,
        results=tuple(
            make(
                result_cls,
                user=r.user,
                error_code=r.error_code,
                error_message=r.error_message or None,
                credential_infos=tuple(
                    make(
                        info_cls,
                        mechanism=ID_BY_MECHANISM.get(i.mechanism, 0),
                        iterations=i.iterations,
                    )
                    for i in r.credential_infos
                ),
            )
            for r in response.results
        ),
    )


def handle_alter_user_scram_credentials(
    services: DoorServices, ctx: RequestContext, request: views.AlterUserScramCredentialsRequestView
) -> Any:
    results = admin_of(services).alter_user_scram_credentials(
        *caller(ctx),
        [ScramCredentialDeletion(d.name, _mechanism(d.mechanism)) for d in request.deletions],
        [
            ScramCredentialUpsertion(
                u.name, _mechanism(u.mechanism), int(u.iterations), u.salt, u.salted_password
            )
            for u in request.upsertions
        ],
    )
    cls = response_class_of(ctx)
    result_cls = nested(cls, "AlterUserScramCredentialsResult")
    return make(
        cls,
        throttle_time=0,
        results=tuple(
            make(
                result_cls,
                user=r.user,
                error_code=r.error_code,
                error_message=r.error_message or None,
            )
            for r in results
        ),
    )
