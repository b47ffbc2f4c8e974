"""ElectLeaders (43) v0-v2, AlterPartitionReassignments (45) v0 and
ListPartitionReassignments (46) v0: the admin room's leader and replica moves.

As Kafka's ``KafkaApis.handleElectLeaders`` / ``handleAlterPartitionReassignmentsRequest`` /
``handleListPartitionReassignmentsRequest`` (ZooKeeper mode):

* ElectLeaders: v0 always elects the preferred leader (``election_type`` from v1); null
  ``topic_partitions`` elects every partition and leaves out those whose election was not
  needed; refused (ALTER on the cluster) every named partition answers
  CLUSTER_AUTHORIZATION_FAILED (31), and v1+ carry it at the top too;
* AlterPartitionReassignments: null ``replicas`` cancels a partition's ongoing reassignment;
  a top-level error (31) is repeated on every partition, as Kafka's ``getErrorResponse``;
* ListPartitionReassignments: null ``topics`` lists every ongoing reassignment.
"""

from __future__ import annotations

from typing import Any

from node.admin.requests import ElectionType, PartitionResult, ReassignablePartition
from node.kafka_door import views
from node.kafka_door.build import make, nested, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.handlers.admin_common import admin_of, by_topic, caller, timeout_ms
from node.kafka_door.services import DoorServices

__all__ = [
    "handle_alter_partition_reassignments",
    "handle_elect_leaders",
    "handle_list_partition_reassignments",
]


def handle_elect_leaders(
    services: DoorServices, ctx: RequestContext, request: views.ElectLeadersRequestView
) -> Any:
    wire_type = int(getattr(request, "election_type", ElectionType.PREFERRED))
    cls = response_class_of(ctx)
    topic_cls = nested(cls, "ReplicaElectionResult")
    partition_cls = nested(cls, "PartitionResult")
    asked = (
        None
        if request.topic_partitions is None
        else [(t.topic, int(p)) for t in request.topic_partitions for p in t.partitions]
    )
    try:
        election = ElectionType(wire_type)
    except ValueError:
        message = f"Unknown election type {wire_type}"
        result_partitions = tuple(PartitionResult(t, p, 42, message) for t, p in asked or ())
        top = 42
    else:
        result = admin_of(services).elect_leaders(
            *caller(ctx), election, asked, timeout_ms=timeout_ms(request.timeout)
        )
        result_partitions = result.partitions if asked is not None else result.needed()
        top = result.error_code
    return make(
        cls,
        throttle_time=0,
        error_code=top,
        replica_election_results=tuple(
            make(
                topic_cls,
                topic=topic,
                partition_result=tuple(
                    make(
                        partition_cls,
                        partition_id=r.partition,
                        error_code=r.error_code,
                        error_message=r.error_message or None,
                    )
                    for r in results
                ),
            )
            for topic, results in by_topic(result_partitions, lambda r: r.topic)
        ),
    )


def handle_alter_partition_reassignments(
    services: DoorServices,
    ctx: RequestContext,
    request: views.AlterPartitionReassignmentsRequestView,
) -> Any:
    wanted = [
        ReassignablePartition(
            t.name,
            int(p.partition_index),
            None if p.replicas is None else tuple(int(b) for b in p.replicas),
        )
        for t in request.topics
        for p in t.partitions
    ]
    result = admin_of(services).alter_partition_reassignments(
        *caller(ctx), wanted, timeout_ms=timeout_ms(request.timeout)
    )
    partitions = result.partitions
    cls = response_class_of(ctx)
    topic_cls = nested(cls, "ReassignableTopicResponse")
    partition_cls = nested(cls, "ReassignablePartitionResponse")
    return make(
        cls,
        throttle_time=0,
        error_code=result.error_code,
        error_message=result.error_message or None,
        responses=tuple(
            make(
                topic_cls,
                name=topic,
                partitions=tuple(
                    make(
                        partition_cls,
                        partition_index=r.partition,
                        error_code=r.error_code,
                        error_message=r.error_message or None,
                    )
                    for r in results
                ),
            )
            for topic, results in by_topic(partitions, lambda r: r.topic)
        ),
    )


def handle_list_partition_reassignments(
    services: DoorServices,
    ctx: RequestContext,
    request: views.ListPartitionReassignmentsRequestView,
) -> Any:
    wanted = (
        None
        if request.topics is None
        else [(t.name, int(p)) for t in request.topics for p in t.partition_indexes]
    )
    result = admin_of(services).list_partition_reassignments(*caller(ctx), wanted)
    cls = response_class_of(ctx)
    topic_cls = nested(cls, "OngoingTopicReassignment")
    partition_cls = nested(cls, "OngoingPartitionReassignment")
    return make(
        cls,
        throttle_time=0,
        error_code=result.error_code,
        error_message=result.error_message or None,
        topics=tuple(
            make(
                topic_cls,
                name=topic,
                partitions=tuple(
                    make(
                        partition_cls,
                        partition_index=r.partition,
                        replicas=tuple(r.replicas),
                        adding_replicas=tuple(r.adding_replicas),
                        removing_replicas=tuple(r.removing_replicas),
                    )
                    for r in reassignments
                ),
            )
            for topic, reassignments in by_topic(result.reassignments, lambda r: r.topic)
        ),
    )
