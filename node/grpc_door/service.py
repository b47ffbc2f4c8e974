"""The gRPC servicers of a node: the client API (Broker) and the replication API.

Thin: each handler hands the request to the replica manager, which answers with Kafka error
codes per partition. Only what cannot be answered per partition (a request the node is not
ready for) becomes a gRPC status. Handlers run on the server's worker threads and may block
(long polls, acks=-1 waits) without holding any shared lock.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import grpc

from node.coordinator.group_coordinator import GroupCoordinator
from node.coordinator.producer_id_manager import ProducerIdManager
from node.core.replica_manager import ReplicaManager, error_of
from node.grpc_door.group_service import GroupRpcs
from odradek.errors import InvalidRequestError, OdradekError
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc


class BrokerServicer(GroupRpcs, pb_grpc.BrokerServicer):
    """Produce, Fetch, ListOffsets, Metadata, DeleteRecords and InitProducerId for clients;
    the consumer group RPCs (:class:`GroupRpcs`) with a ``groups`` coordinator."""

    def __init__(
        self,
        replicas: ReplicaManager,
        producer_ids: ProducerIdManager | None = None,
        listener_name: str | None = None,
        groups: GroupCoordinator | None = None,
    ) -> None:
        """``listener_name``: the listener this instance serves (Metadata answers with its
        endpoints); ``None``: the brokers' registered host and port."""
        self._replicas = replicas
        self._producer_ids = producer_ids
        self._listener_name = listener_name
        self._groups = groups

    def Produce(  # noqa: N802  (gRPC method names)
        self, request: pb.ProduceRequest, context: grpc.ServicerContext
    ) -> pb.ProduceResponse:
        return self._replicas.append_records(request)

    def Fetch(  # noqa: N802
        self, request: pb.FetchRequest, context: grpc.ServicerContext
    ) -> pb.FetchResponse:
        return self._replicas.fetch(request, from_follower=False)

    def ListOffsets(  # noqa: N802
        self, request: pb.ListOffsetsRequest, context: grpc.ServicerContext
    ) -> pb.ListOffsetsResponse:
        return self._replicas.list_offsets(request)

    def Metadata(  # noqa: N802
        self, request: pb.MetadataRequest, context: grpc.ServicerContext
    ) -> pb.MetadataResponse:
        return self._replicas.metadata.metadata_response(
            list(request.topics), request.all_topics, self._listener_name
        )

    def DeleteRecords(  # noqa: N802
        self, request: pb.DeleteRecordsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteRecordsResponse:
        return self._replicas.delete_records(request)

    def InitProducerId(  # noqa: N802
        self, request: pb.InitProducerIdRequest, context: grpc.ServicerContext
    ) -> pb.InitProducerIdResponse:
        """Idempotent producers only (no transactional id): a new producer id, epoch 0, as
        Kafka's ``TransactionCoordinator.handleInitProducerId`` answers them."""
        try:
            if request.HasField("transactional_id"):
                if not request.transactional_id:
                    raise InvalidRequestError("the transactional id must not be empty")
                raise InvalidRequestError(
                    "transactions are not supported: send no transactional id"
                )
            if self._producer_ids is None:
                raise InvalidRequestError("this node hands out no producer ids")
            pid = self._producer_ids.generate_producer_id()
        except Exception as e:
            err: OdradekError = error_of(e)
            return pb.InitProducerIdResponse(
                error_code=err.code, error_message=err.message, producer_id=-1, producer_epoch=-1
            )
        return pb.InitProducerIdResponse(producer_id=pid, producer_epoch=0)


class ReplicationServicer(pb_grpc.ReplicationServicer):
    """Follower fetches, OffsetForLeaderEpoch, and the controller's requests."""

    def __init__(self, replicas: ReplicaManager) -> None:
        self._replicas = replicas

    def Fetch(  # noqa: N802
        self, request: pb.FetchRequest, context: grpc.ServicerContext
    ) -> pb.FetchResponse:
        _check_follower(request, context)
        sessions = self._replicas.follower_sessions
        sessions.fetched(request.replica_id)
        response = self._replicas.fetch(request, from_follower=True)
        if any(p.records for p in response.partitions):
            sessions.answered_with_data(request.replica_id)
        return response

    def FetchSession(  # noqa: N802
        self, request_iterator: Iterator[pb.FetchRequest], context: grpc.ServicerContext
    ) -> Iterator[pb.FetchResponse]:
        """Answers each request of the stream as ``Fetch`` would, in order. The stream ends
        when the follower closes its side, or after an answer once the node is shutting down
        (so that it does not hold the server's stop); a request without ``replica_id`` aborts
        it. The follower's open sessions are counted (``ReplicaManager.follower_sessions``) from
        its first request until the call ends, however it ends: a follower whose sessions all
        broke (its process died) leaves the ISRs at once (``node.core.follower_sessions``)."""
        sessions = self._replicas.follower_sessions
        follower = -1
        for request in request_iterator:
            _check_follower(request, context)
            if follower < 0:
                follower = request.replica_id
                sessions.opened(follower)
                if not context.add_callback(functools.partial(sessions.closed, follower)):
                    sessions.closed(follower)  # the call has already ended
                    return
            sessions.fetched(request.replica_id)
            response = self._replicas.fetch(request, from_follower=True)
            if any(p.records for p in response.partitions):
                sessions.answered_with_data(request.replica_id)
            yield response
            if self._replicas.shutting_down:
                return

    def OffsetForLeaderEpoch(  # noqa: N802
        self, request: pb.OffsetForLeaderEpochRequest, context: grpc.ServicerContext
    ) -> pb.OffsetForLeaderEpochResponse:
        return self._replicas.offset_for_leader_epoch(request)

    def LeaderAndIsr(  # noqa: N802
        self, request: pb.LeaderAndIsrRequest, context: grpc.ServicerContext
    ) -> pb.LeaderAndIsrResponse:
        return self._replicas.become_leader_or_follower(request)

    def StopReplica(  # noqa: N802
        self, request: pb.StopReplicaRequest, context: grpc.ServicerContext
    ) -> pb.StopReplicaResponse:
        return self._replicas.stop_replicas(request)

    def UpdateMetadata(  # noqa: N802
        self, request: pb.UpdateMetadataRequest, context: grpc.ServicerContext
    ) -> pb.UpdateMetadataResponse:
        return self._replicas.update_metadata(request)


def _check_follower(request: pb.FetchRequest, context: grpc.ServicerContext) -> None:
    """Aborts the call with INVALID_ARGUMENT unless the fetch names its follower."""
    if not request.HasField("replica_id") or request.replica_id < 0:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "a follower fetch needs replica_id")
