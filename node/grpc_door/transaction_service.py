"""The transactional RPCs of the Broker service: FindCoordinator for transactional ids
(``key_type`` 1), AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions and
ListTransactions, served by the transaction coordinator
(:mod:`node.transaction.txn_coordinator`).

:class:`TransactionRpcs` is a mixin of the node's Broker servicer
(:class:`node.grpc_door.service.BrokerServicer`). Thin, as the Kafka door's
``handlers/transactions.py``: each handler decodes its request, hands it to its one function in
:class:`~node.apis.transactions.TransactionApis` (the policy: TransactionalId, topic and group
ACLs) and encodes the answer, Kafka error codes in the body (a refusal is
TRANSACTIONAL_ID_AUTHORIZATION_FAILED there, as through the Kafka door). A node without a
transaction coordinator answers every id TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as the Kafka
door does. Handlers run on the server's worker threads and block while the coordinator's write
replicates.
"""

from __future__ import annotations

import grpc

from node.apis.transactions import TransactionApis
from node.coordinator.group_requests import Coordinator
from node.grpc_door import group_translate
from node.grpc_door.request_checks import current_caller
from odradek.errors import TransactionalIdAuthorizationFailedError
from odradek.v1 import odradek_pb2 as pb

__all__ = ["TransactionRpcs"]

_NONE = TransactionalIdAuthorizationFailedError.code
_NO_COORDINATOR = "odradek has no transaction coordinator"


class TransactionRpcs:
    """The transactional RPCs, handed to ``self._transaction_apis``."""

    _transaction_apis: TransactionApis | None = None
    _listener_name: str | None = None

    def find_transaction_coordinator(
        self, request: pb.FindCoordinatorRequest, context: grpc.ServicerContext
    ) -> pb.FindCoordinatorResponse:
        """FindCoordinator with ``key_type`` 1: the coordinator of each transactional id, on
        the listener this request came in on."""
        ids = list(request.transactional_ids)
        apis = self._transaction_apis
        found = (
            [Coordinator(t, error_code=_NONE, error_message=_NO_COORDINATOR) for t in ids]
            if apis is None
            else apis.find_coordinator(current_caller(), ids, self._listener_name)
        )
        return group_translate.find_coordinator_to_wire(found)

    def AddPartitionsToTxn(  # noqa: N802  (gRPC method names)
        self, request: pb.AddPartitionsToTxnRequest, context: grpc.ServicerContext
    ) -> pb.AddPartitionsToTxnResponse:
        wanted = [(p.topic, p.partition) for p in request.partitions]
        apis = self._transaction_apis
        codes = (
            dict.fromkeys(wanted, _NONE)
            if apis is None
            else apis.add_partitions_to_txn(
                current_caller(),
                request.transactional_id,
                request.producer_id,
                request.producer_epoch,
                wanted,
            )
        )
        return pb.AddPartitionsToTxnResponse(
            results=[
                pb.TxnPartitionResult(topic=t, partition=p, error_code=codes[(t, p)])
                for t, p in dict.fromkeys(wanted)
            ]
        )

    def AddOffsetsToTxn(  # noqa: N802
        self, request: pb.AddOffsetsToTxnRequest, context: grpc.ServicerContext
    ) -> pb.AddOffsetsToTxnResponse:
        apis = self._transaction_apis
        code = (
            _NONE
            if apis is None
            else apis.add_offsets_to_txn(
                current_caller(),
                request.transactional_id,
                request.producer_id,
                request.producer_epoch,
                request.group_id,
            )
        )
        return pb.AddOffsetsToTxnResponse(error_code=code)

    def EndTxn(  # noqa: N802
        self, request: pb.EndTxnRequest, context: grpc.ServicerContext
    ) -> pb.EndTxnResponse:
        apis = self._transaction_apis
        code = (
            _NONE
            if apis is None
            else apis.end_txn(
                current_caller(),
                request.transactional_id,
                request.producer_id,
                request.producer_epoch,
                request.committed,
            )
        )
        return pb.EndTxnResponse(error_code=code)

    def DescribeTransactions(  # noqa: N802
        self, request: pb.DescribeTransactionsRequest, context: grpc.ServicerContext
    ) -> pb.DescribeTransactionsResponse:
        apis = self._transaction_apis
        described = (
            []
            if apis is None
            else apis.describe_transactions(current_caller(), list(request.transactional_ids))
        )
        return pb.DescribeTransactionsResponse(
            transaction_states=[
                pb.TransactionDescription(
                    error_code=d.error_code,
                    transactional_id=d.transactional_id,
                    transaction_state=d.state,
                    transaction_timeout_ms=d.timeout_ms,
                    transaction_start_time_ms=d.start_ms,
                    producer_id=d.producer_id,
                    producer_epoch=d.producer_epoch,
                    partitions=[pb.TopicPartition(topic=t, partition=p) for t, p in d.partitions],
                )
                for d in described
            ]
        )

    def ListTransactions(  # noqa: N802
        self, request: pb.ListTransactionsRequest, context: grpc.ServicerContext
    ) -> pb.ListTransactionsResponse:
        apis = self._transaction_apis
        listed, unknown = (
            ([], [])
            if apis is None
            else apis.list_transactions(
                current_caller(),
                list(request.state_filters),
                list(request.producer_id_filters),
                request.duration_filter_ms or -1,
            )
        )
        return pb.ListTransactionsResponse(
            unknown_state_filters=unknown,
            transaction_states=[
                pb.ListedTransaction(
                    transactional_id=t.transactional_id,
                    producer_id=t.producer_id,
                    transaction_state=t.state,
                )
                for t in listed
            ],
        )
