"""CreateTopics (19) v2-v7, DeleteTopics (20) v1-v3 and CreatePartitions (37) v0-v1: the admin
room's topic calls (:class:`node.admin.authorization.AuthorizedAdmin`), answered per topic.

As Kafka's ``KafkaApis.handleCreateTopicsRequest`` / ``handleDeleteTopicsRequest`` /
``handleCreatePartitionsRequest`` with ``ZkAdminManager``:

* CreateTopics: -1 partitions or replication factor means the node's ``num.partitions`` /
  ``default.replication.factor`` (v4, KIP-464); ``validate_only`` checks everything and
  creates nothing; an existing topic is TOPIC_ALREADY_EXISTS (36), a replication factor above
  the live brokers INVALID_REPLICATION_FACTOR (38); a config with a null value is
  INVALID_CONFIG (40) once CREATE is allowed ("Null value not supported for topic configs");
* CreateTopics v5+ (flexible) answer what was created (or would be, with ``validate_only``):
  the partition count, replication factor and every topic config with its value and source
  (KIP-525; none for a topic that failed, and ``topic_config_error_code``
  TOPIC_AUTHORIZATION_FAILED instead without DESCRIBE_CONFIGS on it); v6 only lets the
  controller answer THROTTLING_QUOTA_EXCEEDED (KIP-599), never answered here; v7 adds the new
  topic's id (KIP-516; zero with ``validate_only``);
* DeleteTopics: TOPIC_AUTHORIZATION_FAILED before UNKNOWN_TOPIC_OR_PARTITION;
* CreatePartitions: the new total count, optionally with the replicas of each new partition.

The room waits up to the request's timeout for the leaders; each answer carries Kafka's error
code and a sentence.
"""

from __future__ import annotations

from typing import Any

from kio.static.primitive import i8, i16

from node.admin.requests import CreatableTopicResult, CreatePartitionsTopic, NewTopicSpec
from node.kafka_door import views
from node.kafka_door.build import make, nested, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.handlers.admin_common import admin_of, caller, timeout_ms
from node.kafka_door.services import DoorServices
from node.kafka_door.topic_ids import topic_id_uuid
from odradek.acl import AclOperation
from odradek.errors import InvalidConfigError, TopicAuthorizationFailedError

__all__ = ["handle_create_partitions", "handle_create_topics", "handle_delete_topics"]

CONFIGS_SINCE = 5
"""The first CreateTopics version whose answer carries the topic's configs (KIP-525)."""


def handle_create_topics(
    services: DoorServices, ctx: RequestContext, request: views.CreateTopicsRequestView
) -> Any:
    admin = admin_of(services)
    principal, host = caller(ctx)
    specs: list[NewTopicSpec] = []
    null_configs: dict[str, list[str]] = {}
    for t in request.topics:
        nulls = [c.name for c in t.configs if c.value is None]
        if nulls:
            null_configs.setdefault(t.name, nulls)
            continue
        specs.append(
            NewTopicSpec(
                name=t.name,
                num_partitions=int(t.num_partitions),
                replication_factor=int(t.replication_factor),
                assignments=tuple(
                    (int(a.partition_index), tuple(int(b) for b in a.broker_ids))
                    for a in t.assignments
                ),
                configs={c.name: c.value for c in t.configs if c.value is not None},
            )
        )
    answered = {
        r.name: r
        for r in admin.create_topics(
            principal,
            host,
            specs,
            validate_only=bool(request.validate_only),
            timeout_ms=timeout_ms(request.timeout),
        )
    }
    if null_configs:
        may_create = admin.decisions.topics(
            principal, host, AclOperation.CREATE, null_configs, or_cluster=True
        )
        for name, nulls in null_configs.items():
            answered[name] = (
                CreatableTopicResult(
                    name,
                    InvalidConfigError.code,
                    f"Null value not supported for topic configs: {','.join(nulls)}",
                )
                if name in may_create
                else CreatableTopicResult(
                    name,
                    TopicAuthorizationFailedError.code,
                    f"{principal} may not Create topic {name!r}",
                )
            )
    cls = response_class_of(ctx)
    result_cls = nested(cls, "CreatableTopicResult")
    return make(
        cls,
        throttle_time=0,
        topics=tuple(
            make(
                result_cls,
                name=r.name,
                error_code=r.error_code,
                error_message=r.error_message or None,
                # v5+: what was created (or would be, validate_only); v7+: its id
                topic_id=topic_id_uuid(r.topic_id),
                num_partitions=r.num_partitions,
                replication_factor=r.replication_factor,
                topic_config_error_code=i16(r.topic_config_error_code),
                configs=_created_configs(cls, r),
            )
            for r in (answered[n] for n in dict.fromkeys(t.name for t in request.topics))
        ),
    )


def _created_configs(cls: type[Any], result: CreatableTopicResult) -> tuple[Any, ...]:
    """CreateTopics v5+'s configs of a created topic (none for a failed one, or without
    DESCRIBE_CONFIGS), as Kafka's ``createTopicConfigEntry`` without synonyms."""
    if result.error_code or cls.__version__ < CONFIGS_SINCE:
        return ()
    item = nested(cls, "CreatableTopicConfigs")
    return tuple(
        item(
            name=c.name,
            value=c.value,
            read_only=c.read_only,
            config_source=i8(int(c.config_source)),
            is_sensitive=c.is_sensitive,
        )
        for c in result.configs
    )


def handle_delete_topics(
    services: DoorServices, ctx: RequestContext, request: views.DeleteTopicsRequestView
) -> Any:
    results = admin_of(services).delete_topics(
        *caller(ctx), list(request.topic_names), timeout_ms=timeout_ms(request.timeout)
    )
    cls = response_class_of(ctx)
    result_cls = nested(cls, "DeletableTopicResult")
    return make(
        cls,
        throttle_time=0,
        responses=tuple(
            make(
                result_cls,
                name=r.name,
                error_code=r.error_code,
                error_message=r.error_message or None,
            )
            for r in results
        ),
    )


def handle_create_partitions(
    services: DoorServices, ctx: RequestContext, request: views.CreatePartitionsRequestView
) -> Any:
    topics = [
        CreatePartitionsTopic(
            name=t.name,
            count=int(t.count),
            assignments=None
            if t.assignments is None
            else tuple(tuple(int(b) for b in a.broker_ids) for a in t.assignments),
        )
        for t in request.topics
    ]
    results = admin_of(services).create_partitions(
        *caller(ctx),
        topics,
        validate_only=bool(request.validate_only),
        timeout_ms=timeout_ms(request.timeout),
    )
    cls = response_class_of(ctx)
    result_cls = nested(cls, "CreatePartitionsTopicResult")
    return make(
        cls,
        throttle_time=0,
        results=tuple(
            make(
                result_cls,
                name=r.name,
                error_code=r.error_code,
                error_message=r.error_message or None,
            )
            for r in results
        ),
    )
