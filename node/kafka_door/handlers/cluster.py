"""DescribeCluster (60) v0-v1, DescribeLogDirs (35) v1-v2 and DescribeProducers (61) v0: what
this node knows of the cluster, its log directories and its partitions' producers.

As Kafka's ``KafkaApis.handleDescribeCluster`` / ``handleDescribeLogDirsRequest`` /
``handleDescribeProducersRequest``:

* DescribeCluster: the live brokers by their endpoint on the listener the request came in on
  (a broker without it is left out), the controller, the cluster id; v1's ``endpoint_type``
  other than brokers (1) is UNSUPPORTED_ENDPOINT_TYPE (115); the cluster's authorized
  operations as a bit field when asked, else ``Int32.MinValue``;
* DescribeLogDirs: null topics means every partition; refused (DESCRIBE on the cluster) it
  answers no log dir at all (v1-v2 have no top-level error);
* DescribeProducers: per partition, READ on the topic (29), a partition this node has no
  replica of NOT_LEADER_OR_FOLLOWER (6), one the cluster lacks UNKNOWN_TOPIC_OR_PARTITION (3).
"""

from __future__ import annotations

from typing import Any

from node.kafka_door import views
from node.kafka_door.build import make, nested, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.handlers.admin_common import (
    NO_OPERATIONS,
    admin_of,
    by_topic,
    caller,
    cluster_authorized_operations,
)
from node.kafka_door.services import DoorServices

__all__ = ["handle_describe_cluster", "handle_describe_log_dirs", "handle_describe_producers"]

BROKERS_ENDPOINT = 1
UNSUPPORTED_ENDPOINT_TYPE = 115


def handle_describe_cluster(
    services: DoorServices, ctx: RequestContext, request: views.DescribeClusterRequestView
) -> Any:
    admin = admin_of(services)
    principal, host = caller(ctx)
    cls = response_class_of(ctx)
    endpoint_type = int(getattr(request, "endpoint_type", BROKERS_ENDPOINT))
    if endpoint_type != BROKERS_ENDPOINT:
        return make(
            cls,
            throttle_time=0,
            error_code=UNSUPPORTED_ENDPOINT_TYPE,
            error_message="The broker only handles the brokers endpoint type (1)",
            endpoint_type=endpoint_type,
            cluster_id="",
            controller_id=-1,
            brokers=(),
            cluster_authorized_operations=NO_OPERATIONS,
        )
    result = admin.describe_cluster(principal, host, ctx.listener)
    operations = NO_OPERATIONS
    if request.include_cluster_authorized_operations:
        operations = cluster_authorized_operations(services, ctx)
    broker_cls = nested(cls, "DescribeClusterBroker")
    return make(
        cls,
        throttle_time=0,
        error_code=result.error_code,
        error_message=result.error_message or None,
        endpoint_type=endpoint_type,
        cluster_id=result.cluster_id,
        controller_id=result.controller_id,
        brokers=tuple(
            make(broker_cls, broker_id=b.broker_id, host=b.host, port=b.port, rack=b.rack)
            for b in result.brokers
        ),
        cluster_authorized_operations=operations,
    )


def handle_describe_log_dirs(
    services: DoorServices, ctx: RequestContext, request: views.DescribeLogDirsRequestView
) -> Any:
    partitions = (
        None
        if request.topics is None
        else {(t.topic, int(p)) for t in request.topics for p in t.partitions}
    )
    result = admin_of(services).describe_log_dirs(*caller(ctx), partitions)
    cls = response_class_of(ctx)
    dir_cls = nested(cls, "DescribeLogDirsResult")
    topic_cls = nested(cls, "DescribeLogDirsTopic")
    partition_cls = nested(cls, "DescribeLogDirsPartition")
    return make(
        cls,
        throttle_time=0,
        error_code=result.error_code,
        results=tuple(
            make(
                dir_cls,
                error_code=d.error_code,
                log_dir=d.log_dir,
                topics=tuple(
                    make(
                        topic_cls,
                        name=t.name,
                        partitions=tuple(
                            make(
                                partition_cls,
                                partition_index=p.partition_index,
                                partition_size=p.partition_size,
                                offset_lag=p.offset_lag,
                                is_future_key=p.is_future_key,
                            )
                            for p in t.partitions
                        ),
                    )
                    for t in d.topics
                ),
                total_bytes=d.total_bytes,
                usable_bytes=d.usable_bytes,
            )
            for d in result.results
        ),
    )


def handle_describe_producers(
    services: DoorServices, ctx: RequestContext, request: views.DescribeProducersRequestView
) -> Any:
    wanted = [(t.name, int(p)) for t in request.topics for p in t.partition_indexes]
    results = admin_of(services).describe_producers(*caller(ctx), wanted)
    cls = response_class_of(ctx)
    topic_cls = nested(cls, "TopicResponse")
    partition_cls = nested(cls, "PartitionResponse")
    producer_cls = nested(cls, "ProducerState")
    return make(
        cls,
        throttle_time=0,
        topics=tuple(
            make(
                topic_cls,
                name=name,
                partitions=tuple(
                    make(
                        partition_cls,
                        partition_index=r.partition_index,
                        error_code=r.error_code,
                        error_message=r.error_message or None,
                        active_producers=tuple(
                            make(
                                producer_cls,
                                producer_id=s.producer_id,
                                producer_epoch=s.producer_epoch,
                                last_sequence=s.last_sequence,
                                last_timestamp=s.last_timestamp,
                                coordinator_epoch=s.coordinator_epoch,
                                current_txn_start_offset=s.current_txn_start_offset,
                            )
                            for s in r.active_producers
                        ),
                    )
                    for r in partitions
                ),
            )
            for name, partitions in by_topic(results, lambda r: r.topic)
        ),
    )
