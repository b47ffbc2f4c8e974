"""Metadata (3), v0-v8: the brokers on the request's listener, the controller, the topics.

As Kafka's ``KafkaApis.handleTopicMetadataRequest`` (ZooKeeper mode):

* every broker is given by its endpoint on the listener the request came in on (a broker without
  that listener is left out; a partition led by one answers LISTENER_NOT_FOUND, 72);
* all topics: v0 with an empty list, v1+ with a null one; topics the principal may not DESCRIBE
  are left out of an all-topics answer and answer TOPIC_AUTHORIZATION_FAILED (29) when named;
* a named topic that does not exist is created when ``auto.create.topics.enable`` is on, the
  request allows it (v4+: ``allow_auto_topic_creation``) and the principal may CREATE it (on the
  cluster or the topic), with the node's ``num.partitions`` and ``default.replication.factor``;
  it answers LEADER_NOT_AVAILABLE (5) until its leaders are elected, as Kafka does; otherwise
  UNKNOWN_TOPIC_OR_PARTITION (3).
"""

from __future__ import annotations

from typing import Any

from node.kafka_door.build import make, nested
from node.kafka_door.context import RequestContext
from node.kafka_door.frames import response_class
from node.kafka_door.services import DoorServices

__all__ = ["handle_metadata"]

API_KEY = 3
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
TOPIC_AUTHORIZATION_FAILED = 29
INVALID_TOPIC_EXCEPTION = 17


def handle_metadata(services: DoorServices, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    topics = request.topics
    all_topics = topics is None or (version == 0 and not topics)
    names = None if all_topics else list(dict.fromkeys(t.name for t in topics))
    host = ctx.connection.peer_host
    view = services.metadata.describe(names, ctx.listener)
    existing = {t.name for t in view.topics if t.error_code != UNKNOWN_TOPIC_OR_PARTITION}
    if all_topics:
        visible = services.auth.allowed_topics(ctx.principal, host, "DESCRIBE", existing)
        answered = [t for t in view.topics if t.name in visible]
        created: dict[str, int] = {}
        refused: set[str] = set()
    else:
        asked = set(names or ())
        visible = services.auth.allowed_topics(ctx.principal, host, "DESCRIBE", asked)
        refused = asked - visible
        missing = [n for n in (names or ()) if n not in existing and n not in refused]
        allow = bool(getattr(request, "allow_auto_topic_creation", True))
        created = {}
        if missing and services.auto_create_topics and allow:
            creatable = services.auth.allowed_topics(ctx.principal, host, "CREATE", set(missing))
            created = services.admin.auto_create_topics([n for n in missing if n in creatable])
        answered = list(view.topics)
    cls = response_class(API_KEY, version)
    broker_cls = nested(cls, "MetadataResponseBroker")
    topic_cls = nested(cls, "MetadataResponseTopic")
    partition_cls = nested(cls, "MetadataResponsePartition")
    out_topics = []
    for t in answered:
        if t.name in refused:
            error, partitions = TOPIC_AUTHORIZATION_FAILED, ()
        elif t.name in created:
            error, partitions = created[t.name], ()
        else:
            error = t.error_code
            partitions = tuple(
                make(
                    partition_cls,
                    error_code=p.error_code,
                    partition_index=p.partition,
                    leader_id=p.leader,
                    leader_epoch=p.leader_epoch,
                    replica_nodes=tuple(p.replicas),
                    isr_nodes=tuple(p.isr),
                    offline_replicas=tuple(p.offline_replicas),
                )
                for p in t.partitions
            )
        out_topics.append(
            make(
                topic_cls,
                error_code=error,
                name=t.name,
                is_internal=t.name.startswith("__"),
                partitions=partitions,
                topic_authorized_operations=-(2**31),
            )
        )
    return make(
        cls,
        throttle_time=0,
        brokers=tuple(
            make(broker_cls, node_id=b.node_id, host=b.host, port=b.port, rack=b.rack or None)
            for b in view.brokers
        ),
        cluster_id=view.cluster_id or None,
        controller_id=view.controller_id,
        topics=tuple(out_topics),
        cluster_authorized_operations=-(2**31),
    )
