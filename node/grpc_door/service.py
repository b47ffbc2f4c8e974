"""The gRPC servicers of a node: the client API (Broker) and the replication API.

Thin: each handler translates its request to the core's values
(:mod:`node.grpc_door.translate`) and hands them to its API's function (:mod:`node.apis`, the
client API; the replica manager, the replication API), which answers with Kafka error codes
per partition; the answer is translated back. Only what cannot be answered
per partition (a request the node is not ready for) becomes a gRPC status. Handlers run on the
server's worker threads and may block (long polls, acks=-1 waits) without holding any shared
lock.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence

import grpc

from node.apis import BrokerApis
from node.apis.txn_verification import Verify
from node.coordinator.group_requests import Coordinator
from node.core.replica_manager import ReplicaManager
from node.core.requests import READ_COMMITTED, READ_UNCOMMITTED, FetchPartition, FetchResult
from node.core.txn_markers import OnWritten, write_txn_markers
from node.grpc_door import group_translate
from node.grpc_door import translate as wire
from node.grpc_door.group_service import GroupRpcs
from node.grpc_door.request_checks import current_caller
from node.grpc_door.share_admin_service import ShareAdminRpcs
from node.grpc_door.share_group_service import ShareGroupRpcs
from node.grpc_door.share_service import ShareRpcs
from node.grpc_door.share_state_service import ShareStateRpcs
from node.grpc_door.transaction_service import TransactionRpcs
from node.share_coordinator.share_coordinator import ShareCoordinator
from odradek.errors import InvalidRequestError
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc


class BrokerServicer(
    ShareRpcs, TransactionRpcs, GroupRpcs, ShareGroupRpcs, ShareAdminRpcs, pb_grpc.BrokerServicer
):
    """Produce, Fetch, ListOffsets, Metadata, DeleteRecords and InitProducerId for clients;
    the consumer group RPCs (:class:`GroupRpcs`) with group APIs; the share group RPCs
    (:class:`ShareGroupRpcs`) and their offsets' (:class:`ShareAdminRpcs`); the transactional
    RPCs (:class:`TransactionRpcs`) with the transaction coordinator's; ShareFetch and
    ShareAcknowledge (:class:`ShareRpcs`) with the share partitions'. Each call is decoded, handed
    to its API's one function in :mod:`node.apis` with the caller
    (:func:`~node.grpc_door.request_checks.current_caller`), and its answer encoded: the
    policy (ACLs, existence, errors, traffic counted) is the layer's."""

    def __init__(self, apis: BrokerApis, listener_name: str | None = None) -> None:
        """``listener_name``: the listener this instance serves (Metadata and FindCoordinator
        answer with its endpoints); ``None``: the brokers' registered host and port."""
        self._records = apis.records
        self._group_apis = apis.groups
        self._share_group_apis = apis.share_groups
        self._share_admin_apis = apis.share_admin
        self._transaction_apis = apis.transactions
        self._share_apis = apis.share
        self._share_state_apis = apis.share_state
        self._listener_name = listener_name

    def FindCoordinator(  # noqa: N802  (gRPC method names)
        self, request: pb.FindCoordinatorRequest, context: grpc.ServicerContext
    ) -> pb.FindCoordinatorResponse:
        """A group's coordinator (``key_type`` 0), a transactional id's (1) or a share
        partition's (2: ``share_partition_keys``, its share coordinator; CLUSTER_ACTION)."""
        if request.key_type == 1:
            return self.find_transaction_coordinator(request, context)
        if request.key_type == 2:
            keys = list(request.share_partition_keys)
            apis = self._share_state_apis
            found = (
                [Coordinator(k, error_code=InvalidRequestError.code) for k in keys]
                if apis is None
                else apis.find_coordinator(current_caller(), keys, self._listener_name)
            )
            return group_translate.find_coordinator_to_wire(found)
        if request.key_type != 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "key_type is 0, 1 or 2")
        return GroupRpcs.FindCoordinator(self, request, context)

    def Produce(  # noqa: N802  (gRPC method names)
        self, request: pb.ProduceRequest, context: grpc.ServicerContext
    ) -> pb.ProduceResponse:
        results = self._records.produce(
            current_caller(),
            wire.produce_from_wire(request),
            acks=request.acks,
            timeout_ms=request.timeout_ms,
            transactional_id=(
                request.transactional_id if request.HasField("transactional_id") else None
            ),
        )
        return wire.produce_to_wire(results, request.acks)

    def Fetch(  # noqa: N802
        self, request: pb.FetchRequest, context: grpc.ServicerContext
    ) -> pb.FetchResponse:
        _check_isolation_level(request.isolation_level, context)
        results = self._records.fetch(
            current_caller(),
            wire.fetch_from_wire(request),
            replica_id=wire.optional_field(request, "replica_id"),
            max_wait_ms=request.max_wait_ms,
            min_bytes=request.min_bytes,
            max_bytes=request.max_bytes,
            isolation_level=request.isolation_level,
        )
        return wire.fetch_to_wire(results)

    def ListOffsets(  # noqa: N802
        self, request: pb.ListOffsetsRequest, context: grpc.ServicerContext
    ) -> pb.ListOffsetsResponse:
        _check_isolation_level(request.isolation_level, context)
        results = self._records.list_offsets(
            current_caller(),
            wire.list_offsets_from_wire(request),
            replica_id=wire.optional_field(request, "replica_id"),
            isolation_level=request.isolation_level,
        )
        return wire.list_offsets_to_wire(results)

    def Metadata(  # noqa: N802
        self, request: pb.MetadataRequest, context: grpc.ServicerContext
    ) -> pb.MetadataResponse:
        topics = None if request.all_topics else list(request.topics)
        return wire.metadata_to_wire(
            self._records.metadata(current_caller(), topics, self._listener_name)
        )

    def DeleteRecords(  # noqa: N802
        self, request: pb.DeleteRecordsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteRecordsResponse:
        results = self._records.delete_records(
            current_caller(),
            wire.delete_records_from_wire(request),
            timeout_ms=request.timeout_ms,
        )
        return wire.delete_records_to_wire(results)

    def InitProducerId(  # noqa: N802
        self, request: pb.InitProducerIdRequest, context: grpc.ServicerContext
    ) -> pb.InitProducerIdResponse:
        transactional_id = (
            request.transactional_id if request.HasField("transactional_id") else None
        )
        expected = (
            None if request.producer_id < 0 else (request.producer_id, request.producer_epoch)
        )
        return wire.init_producer_id_to_wire(
            self._records.init_producer_id(
                current_caller(), transactional_id, request.transaction_timeout_ms, expected
            )
        )


def _check_isolation_level(level: int, context: grpc.ServicerContext) -> None:
    """Aborts the call with INVALID_ARGUMENT unless ``level`` is Kafka's 0 or 1."""
    if level not in (READ_UNCOMMITTED, READ_COMMITTED):
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "isolation_level is 0 or 1")


def _fetch(
    replicas: ReplicaManager,
    request: pb.FetchRequest,
    partitions: Sequence[FetchPartition],
    *,
    from_follower: bool,
) -> list[FetchResult]:
    return replicas.fetch(
        partitions,
        from_follower=from_follower,
        replica_id=wire.optional_field(request, "replica_id"),
        max_wait_ms=request.max_wait_ms,
        min_bytes=request.min_bytes,
        max_bytes=request.max_bytes,
        broker_epoch=wire.optional_field(request, "broker_epoch"),
    )


def _has_records(results: list[FetchResult]) -> bool:
    return any(len(r.records) for r in results)


class ReplicationServicer(ShareStateRpcs, pb_grpc.ReplicationServicer):
    """Follower fetches, OffsetForLeaderEpoch, the controller's requests, the transaction
    coordinators' markers (``on_marker_written``: told of each marker written, the group
    coordinator's hook for transactional offsets) and the share coordinator's calls
    (:class:`ShareStateRpcs`)."""

    def __init__(
        self,
        replicas: ReplicaManager,
        on_marker_written: OnWritten | None = None,
        verify_txn_partitions: Verify | None = None,
        share_coordinator: ShareCoordinator | None = None,
    ) -> None:
        """``verify_txn_partitions``: the node's transaction coordinator's KIP-890 answer
        (``None``: a node without one answers NOT_COORDINATOR); ``share_coordinator``: the
        node's share coordinator (``None``: its calls are answered NOT_COORDINATOR)."""
        self._replicas = replicas
        self._on_marker_written = on_marker_written
        self._verify = verify_txn_partitions
        self._share_coordinator = share_coordinator

    def VerifyTxnPartitions(  # noqa: N802
        self, request: pb.VerifyTxnPartitionsRequest, context: grpc.ServicerContext
    ) -> pb.VerifyTxnPartitionsResponse:
        partitions = [(p.topic, p.partition) for p in request.partitions]
        codes = (
            dict.fromkeys(partitions, 16)  # NOT_COORDINATOR
            if self._verify is None
            else self._verify(
                request.transactional_id, request.producer_id, request.producer_epoch, partitions
            )
        )
        return pb.VerifyTxnPartitionsResponse(
            results=[
                pb.TxnMarkerPartitionResult(
                    producer_id=request.producer_id, topic=t, partition=p, error_code=codes[(t, p)]
                )
                for t, p in partitions
            ]
        )

    def WriteTxnMarkers(  # noqa: N802
        self, request: pb.WriteTxnMarkersRequest, context: grpc.ServicerContext
    ) -> pb.WriteTxnMarkersResponse:
        results = write_txn_markers(
            self._replicas,
            wire.txn_markers_from_wire(request),
            timeout_ms=request.timeout_ms,
            on_written=self._on_marker_written,
        )
        return wire.txn_marker_results_to_wire(results)

    def Fetch(  # noqa: N802
        self, request: pb.FetchRequest, context: grpc.ServicerContext
    ) -> pb.FetchResponse:
        _check_follower(request, context)
        sessions = self._replicas.follower_sessions
        sessions.fetched(request.replica_id)
        results = _fetch(self._replicas, request, wire.fetch_from_wire(request), from_follower=True)
        if _has_records(results):
            sessions.answered_with_data(request.replica_id)
        return wire.fetch_to_wire(results)

    def FetchSession(  # noqa: N802
        self, request_iterator: Iterator[pb.FetchRequest], context: grpc.ServicerContext
    ) -> Iterator[pb.FetchResponse]:
        """Answers each request of the stream as ``Fetch`` would, in order. The stream ends
        when the follower closes its side or cancels the call (as it does each time it replaces
        a session: ``node.replication.fetcher.FetchSession.close``), or after an answer once the
        node is shutting down (so that it does not hold the server's stop); a request without
        ``replica_id`` aborts it. The follower's open sessions are counted
        (``ReplicaManager.follower_sessions``) from its first request until the call ends,
        however it ends: a follower whose sessions all broke (its process died) leaves the ISRs
        at once (``node.core.follower_sessions``)."""
        sessions = self._replicas.follower_sessions
        follower = -1
        for request in _until_cancelled(request_iterator, context):
            _check_follower(request, context)
            if follower < 0:
                follower = request.replica_id
                sessions.opened(follower)
                if not context.add_callback(functools.partial(sessions.closed, follower)):
                    sessions.closed(follower)  # the call has already ended
                    return
            sessions.fetched(request.replica_id)
            results = _fetch(
                self._replicas, request, wire.fetch_from_wire(request), from_follower=True
            )
            if _has_records(results):
                sessions.answered_with_data(request.replica_id)
            yield wire.fetch_to_wire(results)
            if self._replicas.shutting_down:
                return

    def OffsetForLeaderEpoch(  # noqa: N802
        self, request: pb.OffsetForLeaderEpochRequest, context: grpc.ServicerContext
    ) -> pb.OffsetForLeaderEpochResponse:
        results = self._replicas.offset_for_leader_epoch(
            wire.offset_for_leader_epoch_from_wire(request)
        )
        return wire.offset_for_leader_epoch_to_wire(results)

    def LeaderAndIsr(  # noqa: N802
        self, request: pb.LeaderAndIsrRequest, context: grpc.ServicerContext
    ) -> pb.LeaderAndIsrResponse:
        code, results = self._replicas.become_leader_or_follower(
            wire.leader_and_isr_from_wire(request)
        )
        return pb.LeaderAndIsrResponse(
            error_code=code, partitions=wire.partition_errors_to_wire(results)
        )

    def StopReplica(  # noqa: N802
        self, request: pb.StopReplicaRequest, context: grpc.ServicerContext
    ) -> pb.StopReplicaResponse:
        code, results = self._replicas.stop_replicas(wire.stop_replica_from_wire(request))
        return pb.StopReplicaResponse(
            error_code=code, partitions=wire.partition_errors_to_wire(results)
        )

    def UpdateMetadata(  # noqa: N802
        self, request: pb.UpdateMetadataRequest, context: grpc.ServicerContext
    ) -> pb.UpdateMetadataResponse:
        code = self._replicas.update_metadata(wire.update_metadata_from_wire(request))
        return pb.UpdateMetadataResponse(error_code=code)


def _until_cancelled(
    requests: Iterator[pb.FetchRequest], context: grpc.ServicerContext
) -> Iterator[pb.FetchRequest]:
    """``requests`` until the stream ends or the call is no longer active. gRPC raises
    ``RpcError`` from a stream's request iterator once the client cancelled the call (or its
    deadline passed) while the handler waited for the next request: a follower replacing its
    session does just that, so it is how a session ends, not a failure (left to the
    unexpected-error interceptor, it was logged with a traceback and answered
    UNKNOWN_SERVER_ERROR to nobody)."""
    iterator = iter(requests)
    while True:
        try:
            request = next(iterator)
        except StopIteration:
            return
        except grpc.RpcError:
            if context.is_active():
                raise
            return
        yield request


def _check_follower(request: pb.FetchRequest, context: grpc.ServicerContext) -> None:
    """Aborts the call with INVALID_ARGUMENT unless the fetch names its follower."""
    if not request.HasField("replica_id") or request.replica_id < 0:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "a follower fetch needs replica_id")
