"""The gRPC door's translation: protobuf messages (``odradek.v1``) to the core's plain values
(:mod:`node.core.requests`) and back. Nothing else: no decisions, no state.

An ``optional`` field the client left out becomes the core's "not known" (-1). Pure functions;
thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from node.core.requests import (
    Broker,
    BrokerEndPoint,
    DeleteRecordsPartition,
    DeleteRecordsResult,
    FetchPartition,
    FetchResult,
    InitProducerIdResult,
    LeaderAndIsrPartition,
    LeaderAndIsrRequest,
    ListOffsetsPartition,
    ListOffsetsResult,
    MetadataResult,
    OffsetForLeaderEpochPartition,
    OffsetForLeaderEpochResult,
    PartitionError,
    ProducePartition,
    ProduceResult,
    StopReplicaPartition,
    StopReplicaRequest,
    UpdateMetadataRequest,
    records_bytes,
)
from node.core.txn_markers import TxnMarker, TxnMarkerResult
from odradek.v1 import odradek_pb2 as pb

__all__ = [
    "broker_from_wire",
    "broker_to_wire",
    "delete_records_from_wire",
    "delete_records_to_wire",
    "fetch_from_wire",
    "fetch_to_wire",
    "init_producer_id_to_wire",
    "leader_and_isr_from_wire",
    "list_offsets_from_wire",
    "list_offsets_to_wire",
    "metadata_to_wire",
    "offset_for_leader_epoch_from_wire",
    "offset_for_leader_epoch_to_wire",
    "optional_field",
    "partition_errors_to_wire",
    "partition_state_from_wire",
    "produce_from_wire",
    "produce_to_wire",
    "stop_replica_from_wire",
    "update_metadata_from_wire",
]


def optional_field(message: Any, name: str, default: int = -1) -> int:
    """An ``optional`` int field of a message, or ``default`` when the client left it out."""
    value: int = getattr(message, name) if message.HasField(name) else default
    return value


# -- Produce -----------------------------------------------------------------------------------


def produce_from_wire(req: pb.ProduceRequest) -> list[ProducePartition]:
    return [
        ProducePartition(
            topic=d.topic,
            partition=d.partition,
            records=d.records,
            current_leader_epoch=optional_field(d, "current_leader_epoch"),
        )
        for d in req.partitions
    ]


def _produce_result(r: ProduceResult) -> pb.ProducePartitionResponse:
    return pb.ProducePartitionResponse(
        topic=r.topic,
        partition=r.partition,
        error_code=r.error_code,
        error_message=r.error_message,
        base_offset=r.base_offset,
        log_append_time_ms=r.log_append_time_ms,
        log_start_offset=r.log_start_offset,
        record_errors=[
            pb.ProduceRecordError(batch_index=e.batch_index, message=e.message)
            for e in r.record_errors
        ],
    )


def produce_to_wire(results: Iterable[ProduceResult], acks: int) -> pb.ProduceResponse:
    """The answer; empty for ``acks=0`` (Kafka sends none at all)."""
    if acks == 0:
        return pb.ProduceResponse()
    return pb.ProduceResponse(partitions=[_produce_result(r) for r in results])


# -- Fetch -------------------------------------------------------------------------------------


def fetch_from_wire(req: pb.FetchRequest) -> list[FetchPartition]:
    return [
        FetchPartition(
            topic=fp.topic,
            partition=fp.partition,
            fetch_offset=fp.fetch_offset,
            partition_max_bytes=fp.partition_max_bytes,
            current_leader_epoch=optional_field(fp, "current_leader_epoch"),
            last_fetched_epoch=optional_field(fp, "last_fetched_epoch"),
            log_start_offset=optional_field(fp, "log_start_offset"),
        )
        for fp in req.partitions
    ]


def fetch_to_wire(results: Iterable[FetchResult], error_code: int = 0) -> pb.FetchResponse:
    # partitions are added in place: FetchResponse(partitions=[...]) would copy every answer,
    # records included, once more
    response = pb.FetchResponse(error_code=error_code)
    for r in results:
        p = response.partitions.add(
            topic=r.topic,
            partition=r.partition,
            error_code=r.error_code,
            error_message=r.error_message,
            high_watermark=r.high_watermark,
            log_start_offset=r.log_start_offset,
            log_end_offset=r.log_end_offset,
            last_stable_offset=r.last_stable_offset,
        )
        for producer_id, first_offset in r.aborted_transactions or ():
            p.aborted_transactions.add(producer_id=producer_id, first_offset=first_offset)
        if r.diverging_epoch is not None:
            p.diverging_epoch.epoch = r.diverging_epoch.epoch
            p.diverging_epoch.end_offset = r.diverging_epoch.end_offset
        if r.current_leader is not None:
            p.current_leader.leader_id = r.current_leader.leader_id
            p.current_leader.leader_epoch = r.current_leader.leader_epoch
        if len(r.records):
            p.records = records_bytes(r.records)
    return response


# -- ListOffsets, DeleteRecords, OffsetForLeaderEpoch, InitProducerId --------------------------


def list_offsets_from_wire(req: pb.ListOffsetsRequest) -> list[ListOffsetsPartition]:
    return [
        ListOffsetsPartition(
            topic=lp.topic,
            partition=lp.partition,
            timestamp=lp.timestamp,
            current_leader_epoch=optional_field(lp, "current_leader_epoch"),
        )
        for lp in req.partitions
    ]


def list_offsets_to_wire(results: Iterable[ListOffsetsResult]) -> pb.ListOffsetsResponse:
    return pb.ListOffsetsResponse(
        partitions=[
            pb.ListOffsetsPartitionResponse(
                topic=r.topic,
                partition=r.partition,
                error_code=r.error_code,
                error_message=r.error_message,
                timestamp=r.timestamp,
                offset=r.offset,
                leader_epoch=r.leader_epoch,
            )
            for r in results
        ]
    )


def delete_records_from_wire(req: pb.DeleteRecordsRequest) -> list[DeleteRecordsPartition]:
    return [DeleteRecordsPartition(d.topic, d.partition, d.offset) for d in req.partitions]


def delete_records_to_wire(results: Iterable[DeleteRecordsResult]) -> pb.DeleteRecordsResponse:
    return pb.DeleteRecordsResponse(
        partitions=[
            pb.DeleteRecordsPartitionResponse(
                topic=r.topic,
                partition=r.partition,
                error_code=r.error_code,
                error_message=r.error_message,
                low_watermark=r.low_watermark,
            )
            for r in results
        ]
    )


def offset_for_leader_epoch_from_wire(
    req: pb.OffsetForLeaderEpochRequest,
) -> list[OffsetForLeaderEpochPartition]:
    return [
        OffsetForLeaderEpochPartition(
            topic=p.topic,
            partition=p.partition,
            leader_epoch=p.leader_epoch,
            current_leader_epoch=optional_field(p, "current_leader_epoch"),
        )
        for p in req.partitions
    ]


def offset_for_leader_epoch_to_wire(
    results: Iterable[OffsetForLeaderEpochResult],
) -> pb.OffsetForLeaderEpochResponse:
    return pb.OffsetForLeaderEpochResponse(
        partitions=[
            pb.OffsetForLeaderEpochPartitionResponse(
                topic=r.topic,
                partition=r.partition,
                error_code=r.error_code,
                leader_epoch=r.leader_epoch,
                end_offset=r.end_offset,
            )
            for r in results
        ]
    )


def init_producer_id_to_wire(result: InitProducerIdResult) -> pb.InitProducerIdResponse:
    return pb.InitProducerIdResponse(
        error_code=result.error_code,
        error_message=result.error_message,
        producer_id=result.producer_id,
        producer_epoch=result.producer_epoch,
    )


# -- brokers, partition states, Metadata -------------------------------------------------------


def broker_from_wire(b: pb.BrokerInfo) -> Broker:
    return Broker(
        node_id=b.node_id,
        host=b.host,
        port=b.port,
        rack=b.rack,
        endpoints=tuple(
            BrokerEndPoint(e.listener, e.host, e.port, e.security_protocol or "PLAINTEXT")
            for e in b.endpoints
        ),
    )


def broker_to_wire(b: Broker) -> pb.BrokerInfo:
    return pb.BrokerInfo(
        node_id=b.node_id,
        host=b.host,
        port=b.port,
        rack=b.rack,
        endpoints=[
            pb.BrokerEndPoint(
                listener=e.listener, host=e.host, port=e.port, security_protocol=e.security_protocol
            )
            for e in b.endpoints
        ],
    )


def partition_state_from_wire(p: pb.PartitionState) -> LeaderAndIsrPartition:
    return LeaderAndIsrPartition(
        topic=p.topic,
        partition=p.partition,
        controller_epoch=p.controller_epoch,
        leader=p.leader,
        leader_epoch=p.leader_epoch,
        isr=tuple(p.isr),
        partition_epoch=p.partition_epoch,
        replicas=tuple(p.replicas),
        adding_replicas=tuple(p.adding_replicas),
        removing_replicas=tuple(p.removing_replicas),
        offline_replicas=tuple(p.offline_replicas),
        topic_id=p.topic_id,
    )


def _topic_configs(configs: Iterable[pb.TopicConfig]) -> dict[str, dict[str, str]]:
    return {t.name: dict(t.configs) for t in configs}


def leader_and_isr_from_wire(req: pb.LeaderAndIsrRequest) -> LeaderAndIsrRequest:
    return LeaderAndIsrRequest(
        controller_id=req.controller_id,
        controller_epoch=req.controller_epoch,
        broker_epoch=req.broker_epoch,
        partition_states=tuple(partition_state_from_wire(p) for p in req.partition_states),
        live_leaders=tuple(broker_from_wire(b) for b in req.live_leaders),
        topic_configs=_topic_configs(req.topic_configs),
    )


def stop_replica_from_wire(req: pb.StopReplicaRequest) -> StopReplicaRequest:
    return StopReplicaRequest(
        controller_id=req.controller_id,
        controller_epoch=req.controller_epoch,
        broker_epoch=req.broker_epoch,
        partitions=tuple(
            StopReplicaPartition(p.topic, p.partition, p.delete_partition, p.leader_epoch)
            for p in req.partitions
        ),
    )


def update_metadata_from_wire(req: pb.UpdateMetadataRequest) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(
        controller_id=req.controller_id,
        controller_epoch=req.controller_epoch,
        broker_epoch=req.broker_epoch,
        cluster_id=req.cluster_id,
        live_brokers=tuple(broker_from_wire(b) for b in req.live_brokers),
        partition_states=tuple(partition_state_from_wire(p) for p in req.partition_states),
        topic_configs=_topic_configs(req.topic_configs),
    )


def partition_errors_to_wire(results: Sequence[PartitionError]) -> list[pb.PartitionResult]:
    return [
        pb.PartitionResult(
            topic=r.topic,
            partition=r.partition,
            error_code=r.error_code,
            error_message=r.error_message,
        )
        for r in results
    ]


def metadata_to_wire(result: MetadataResult) -> pb.MetadataResponse:
    return pb.MetadataResponse(
        brokers=[broker_to_wire(b) for b in result.brokers],
        controller_id=result.controller_id,
        cluster_id=result.cluster_id,
        topics=[
            pb.TopicMetadata(
                name=t.name,
                error_code=t.error_code,
                topic_id=t.topic_id,
                partitions=[
                    pb.PartitionMetadata(
                        partition=p.partition,
                        error_code=p.error_code,
                        leader=p.leader,
                        leader_epoch=p.leader_epoch,
                        replicas=list(p.replicas),
                        isr=list(p.isr),
                        offline_replicas=list(p.offline_replicas),
                    )
                    for p in t.partitions
                ],
            )
            for t in result.topics
        ],
    )


def txn_markers_from_wire(request: pb.WriteTxnMarkersRequest) -> list[TxnMarker]:
    return [
        TxnMarker(
            m.producer_id,
            m.producer_epoch,
            m.commit,
            m.coordinator_epoch,
            tuple((p.topic, p.partition) for p in m.partitions),
        )
        for m in request.markers
    ]


def txn_marker_results_to_wire(results: Sequence[TxnMarkerResult]) -> pb.WriteTxnMarkersResponse:
    return pb.WriteTxnMarkersResponse(
        results=[
            pb.TxnMarkerPartitionResult(
                producer_id=r.producer_id,
                topic=r.topic,
                partition=r.partition,
                error_code=r.error_code,
                error_message=r.error_message,
            )
            for r in results
        ]
    )
