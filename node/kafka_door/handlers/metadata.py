"""Metadata (3), v0-v13: the brokers on the request's listener, the controller, the topics.

As Kafka's ``KafkaApis.handleTopicMetadataRequest`` (ZooKeeper mode):

* every broker is given by its endpoint on the listener the request came in on (a broker without
  that listener is left out; a partition led by one answers LISTENER_NOT_FOUND, 72);
* all topics: v0 with an empty list, v1+ with a null one; topics the principal may not DESCRIBE
  are left out of an all-topics answer and answer TOPIC_AUTHORIZATION_FAILED (29) when named
  (whether they exist or not);
* a named topic that does not exist is created when ``auto.create.topics.enable`` is on, the
  request allows it (v4+: ``allow_auto_topic_creation``) and the principal may CREATE on the
  cluster or on the topic, with the node's ``num.partitions`` and ``default.replication.factor``;
  it answers LEADER_NOT_AVAILABLE (5) until its leaders are elected, as Kafka does (and other
  creation errors as they come: INVALID_TOPIC_EXCEPTION 17, INVALID_REPLICATION_FACTOR 38);
  otherwise UNKNOWN_TOPIC_OR_PARTITION (3);
* v10+ give each topic's id (KIP-516), which KIP-848 members need: their assignments name
  topics by id; v12 asks for topics by id (a null name), as librdkafka does for an assigned
  topic it does not know: an unknown id answers UNKNOWN_TOPIC_ID (100), one the principal may
  not DESCRIBE TOPIC_AUTHORIZATION_FAILED, both with a null name;
* v13 adds a top-level error code (KIP-1102: REBOOTSTRAP_REQUIRED asks the client to bootstrap
  again), always NONE here.

One departure from Kafka: a broker that left the live set (fenced, or gone) is still listed for
a few seconds, though it leads nothing (:mod:`node.core.metadata_cache`, departed brokers), so
that librdkafka does not tear down its handle while moving a partition off it.
"""

from __future__ import annotations

from typing import Any

from node.core.requests import MetadataResult, TopicMetadata
from node.kafka_door import views
from node.kafka_door.build import make, nested, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.handlers.admin_common import (
    NO_OPERATIONS,
    authorized_operations,
    cluster_authorized_operations,
)
from node.kafka_door.services import DoorServices
from node.kafka_door.topic_ids import ZERO_UUID, topic_id_text, topic_id_uuid
from odradek.acl import ResourceType

__all__ = ["handle_metadata"]

API_KEY = 3
UNKNOWN_TOPIC_OR_PARTITION = 3
UNKNOWN_TOPIC_ID = 100
TOPIC_AUTHORIZATION_FAILED = 29


def handle_metadata(
    services: DoorServices, ctx: RequestContext, request: views.MetadataRequestView
) -> Any:
    version = ctx.api_version
    topics = request.topics
    by_id: dict[str, str] = {}
    unknown_ids: list[str] = []
    if topics is not None and any(t.name is None for t in topics):
        known = {s.topic_id: t for (t, _), s in services.metadata.snapshot.partitions.items()}
        for t in topics:
            if t.name is None:
                tid = topic_id_text(getattr(t, "topic_id", None))
                if tid in known:
                    by_id[tid] = known[tid]
                else:
                    unknown_ids.append(tid)
    names: list[str] | None = (
        None
        if topics is None or (version == 0 and not topics)
        else list(
            dict.fromkeys(
                t.name if t.name is not None else by_id[topic_id_text(getattr(t, "topic_id", None))]
                for t in topics
                if t.name is not None or topic_id_text(getattr(t, "topic_id", None)) in by_id
            )
        )
    )

    allow = bool(getattr(request, "allow_auto_topic_creation", True)) and not by_id
    result = services.api.records.metadata(
        ctx.caller, names, ctx.listener, allow_auto_create=allow, list_departed=True
    )
    if by_id and services.auth is not None:
        # asked by id and refused: no name (Kafka: "topic IDs are not considered sensitive")
        asked_by_id = {name: tid for tid, name in by_id.items()}
        topics_ = tuple(
            TopicMetadata(name="", error_code=t.error_code, topic_id=asked_by_id[t.name])
            if t.error_code == TOPIC_AUTHORIZATION_FAILED and t.name in asked_by_id
            else t
            for t in result.topics
        )
        result = MetadataResult(result.brokers, result.controller_id, result.cluster_id, topics_)
    if unknown_ids:
        missing = tuple(
            TopicMetadata(name="", error_code=UNKNOWN_TOPIC_ID, topic_id=t) for t in unknown_ids
        )
        result = MetadataResult(
            result.brokers, result.controller_id, result.cluster_id, result.topics + missing
        )
    return _encode(services, ctx, request, result)


def _encode(
    services: DoorServices, ctx: RequestContext, request: Any, result: MetadataResult
) -> Any:
    cls = response_class_of(ctx)
    # v8-v10 ask for the cluster's and each topic's (KIP-430); v11 dropped the cluster's and
    # DescribeCluster answers it (a null name, a topic asked by an unknown id, has none)
    topic_operations = bool(getattr(request, "include_topic_authorized_operations", False))

    def operations(name: str | None) -> int:
        if not topic_operations or not name:
            return NO_OPERATIONS
        return authorized_operations(services, ctx, ResourceType.TOPIC, name)

    cluster_operations = NO_OPERATIONS
    if getattr(request, "include_cluster_authorized_operations", False):
        cluster_operations = cluster_authorized_operations(services, ctx)
    broker_cls = nested(cls, "MetadataResponseBroker")
    topic_cls = nested(cls, "MetadataResponseTopic")
    partition_cls = nested(cls, "MetadataResponsePartition")
    topics = tuple(
        make(
            topic_cls,
            error_code=t.error_code,
            name=t.name or None,
            topic_id=topic_id_uuid(t.topic_id) if t.topic_id else ZERO_UUID,
            is_internal=t.name.startswith("__"),
            partitions=tuple(
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
            ),
            topic_authorized_operations=operations(t.name),
        )
        for t in result.topics
    )
    return make(
        cls,
        throttle_time=0,
        brokers=tuple(
            make(broker_cls, node_id=b.node_id, host=b.host, port=b.port, rack=b.rack or None)
            for b in result.brokers
        ),
        cluster_id=result.cluster_id or None,
        controller_id=result.controller_id,
        topics=topics,
        cluster_authorized_operations=cluster_operations,
        # v13's top-level error (KIP-1102: REBOOTSTRAP_REQUIRED, which this node never asks)
        error_code=0,
    )
