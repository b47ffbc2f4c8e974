"""The share groups' partition-leader RPCs of the Broker service: ShareFetch and
ShareAcknowledge (KIP-932), for odradek's SDK, over the same policy as the Kafka door's
(:class:`~node.apis.share_fetch.ShareFetchApis`; ``tests/kafka/test_door_parity.py``).

:class:`ShareRpcs` is a mixin of the node's Broker servicer
(:class:`node.grpc_door.service.BrokerServicer`). Thin: decode, call, encode; Kafka error codes
in the body. A ShareFetch that acquires nothing waits on the worker thread (up to
``max_wait_ms``), as the gRPC Fetch does. A node without share partitions answers
UNSUPPORTED_VERSION (35), as a Kafka broker without share groups.
"""

from __future__ import annotations

import grpc

from node.apis.share_fetch import (
    ShareAcknowledgeRequest,
    ShareFetchAnswer,
    ShareFetchApis,
    ShareFetchRequest,
    SharePartitionRequest,
)
from node.grpc_door.request_checks import current_caller
from node.share.partition import AcknowledgementBatch
from odradek.errors import UnsupportedVersionError
from odradek.v1 import odradek_pb2 as pb

__all__ = ["ShareRpcs"]

_UNSUPPORTED = UnsupportedVersionError.code
_NO_SHARE = "this node serves no share groups"


def _partitions(
    partitions: list[pb.SharePartitionRequest],
) -> tuple[SharePartitionRequest, ...]:
    return tuple(
        SharePartitionRequest(
            p.topic_id,
            p.partition,
            tuple(
                AcknowledgementBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types))
                for b in p.acknowledgements
            ),
        )
        for p in partitions
    )


def _results(answer: ShareFetchAnswer) -> list[pb.SharePartitionResult]:
    return [
        pb.SharePartitionResult(
            topic=r.topic,
            topic_id=r.topic_id,
            partition=r.partition,
            error_code=r.error_code,
            error_message=r.error_message,
            acknowledge_error_code=r.acknowledge_error_code,
            records=r.records,
            acquired_records=[
                pb.ShareAcquiredRecords(
                    first_offset=a.first_offset,
                    last_offset=a.last_offset,
                    delivery_count=a.delivery_count,
                )
                for a in r.acquired
            ],
            leader_id=-1 if r.current_leader is None else r.current_leader.leader_id,
            leader_epoch=-1 if r.current_leader is None else r.current_leader.leader_epoch,
        )
        for r in answer.results
    ]


class ShareRpcs:
    """ShareFetch and ShareAcknowledge, handed to ``self._share_apis``."""

    _share_apis: ShareFetchApis | None = None
    _listener_name: str | None = None

    def ShareFetch(  # noqa: N802  (gRPC method names)
        self, request: pb.ShareFetchRequest, context: grpc.ServicerContext
    ) -> pb.ShareFetchResponse:
        apis = self._share_apis
        if apis is None:
            return pb.ShareFetchResponse(error_code=_UNSUPPORTED, error_message=_NO_SHARE)
        answer = apis.share_fetch(
            current_caller(),
            ShareFetchRequest(
                group_id=request.group_id,
                member_id=request.member_id,
                share_session_epoch=request.share_session_epoch,
                max_wait_ms=request.max_wait_ms,
                min_bytes=request.min_bytes,
                max_bytes=request.max_bytes,
                max_records=request.max_records,
                batch_size=request.batch_size,
                partitions=_partitions(list(request.partitions)),
                forgotten=tuple((f.topic_id, f.partition) for f in request.forgotten),
                is_renew_ack=request.is_renew_ack,
            ),
            self._listener_name,
        )
        return pb.ShareFetchResponse(
            error_code=answer.error_code,
            error_message=answer.error_message,
            acquisition_lock_timeout_ms=answer.acquisition_lock_timeout_ms,
            partitions=_results(answer),
        )

    def ShareAcknowledge(  # noqa: N802
        self, request: pb.ShareAcknowledgeRequest, context: grpc.ServicerContext
    ) -> pb.ShareAcknowledgeResponse:
        apis = self._share_apis
        if apis is None:
            return pb.ShareAcknowledgeResponse(error_code=_UNSUPPORTED, error_message=_NO_SHARE)
        answer = apis.share_acknowledge(
            current_caller(),
            ShareAcknowledgeRequest(
                group_id=request.group_id,
                member_id=request.member_id,
                share_session_epoch=request.share_session_epoch,
                partitions=_partitions(list(request.partitions)),
                is_renew_ack=request.is_renew_ack,
            ),
            self._listener_name,
        )
        return pb.ShareAcknowledgeResponse(
            error_code=answer.error_code,
            error_message=answer.error_message,
            partitions=_results(answer),
        )
