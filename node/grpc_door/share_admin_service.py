"""The share group offset RPCs (KIP-932) of the Broker service: DescribeShareGroupOffsets,
AlterShareGroupOffsets and DeleteShareGroupOffsets, handed to
:class:`~node.apis.share_admin.ShareAdminApis`.

A mixin of the node's Broker servicer (:class:`node.grpc_door.service.BrokerServicer`), as
:class:`~node.grpc_door.share_group_service.ShareGroupRpcs`: each handler translates the
protobuf request to plain values, calls the API and translates the answer back (Kafka error
codes in it; a call refused on its group is PERMISSION_DENIED with the code in the trailing
metadata); a servicer without the APIs answers UNIMPLEMENTED. Handlers run on the server's
worker threads and may block on the share state.
"""

from __future__ import annotations

from collections.abc import Iterable

import grpc

from node.apis.share_admin import ShareAdminApis, SharePartitionOffset
from node.grpc_door.group_service import _refused_whole
from node.grpc_door.request_checks import current_caller
from odradek.v1 import odradek_pb2 as pb

__all__ = ["ShareAdminRpcs"]


def _partitions(partitions: Iterable[SharePartitionOffset]) -> list[pb.SharePartitionOffset]:
    return [
        pb.SharePartitionOffset(
            topic=p.topic,
            topic_id=p.topic_id,
            partition=p.partition,
            start_offset=p.start_offset,
            leader_epoch=p.leader_epoch,
            lag=p.lag,
            error_code=p.error_code,
            error_message=p.error_message,
        )
        for p in partitions
    ]


class ShareAdminRpcs:
    """The share group offset RPCs over ``self._share_admin_apis``."""

    _share_admin_apis: ShareAdminApis | None = None

    def _share_admin(self, context: grpc.ServicerContext) -> ShareAdminApis:
        if self._share_admin_apis is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "this server has no group coordinator")
            raise AssertionError("abort raises")  # pragma: no cover
        return self._share_admin_apis

    def DescribeShareGroupOffsets(  # noqa: N802  (gRPC method names)
        self, request: pb.DescribeShareGroupOffsetsRequest, context: grpc.ServicerContext
    ) -> pb.DescribeShareGroupOffsetsResponse:
        topics = (
            None if request.all_topics else [(t.topic, list(t.partitions)) for t in request.topics]
        )
        answer = self._share_admin(context).describe_share_group_offsets(
            current_caller(), request.group_id, topics
        )
        _refused_whole(context, answer.error_code, answer.error_message)
        return pb.DescribeShareGroupOffsetsResponse(
            error_code=answer.error_code,
            error_message=answer.error_message,
            partitions=_partitions(answer.partitions),
        )

    def AlterShareGroupOffsets(  # noqa: N802
        self, request: pb.AlterShareGroupOffsetsRequest, context: grpc.ServicerContext
    ) -> pb.AlterShareGroupOffsetsResponse:
        answer = self._share_admin(context).alter_share_group_offsets(
            current_caller(),
            request.group_id,
            [(o.topic, o.partition, o.start_offset) for o in request.offsets],
        )
        _refused_whole(context, answer.error_code, answer.error_message)
        return pb.AlterShareGroupOffsetsResponse(
            error_code=answer.error_code,
            error_message=answer.error_message,
            partitions=_partitions(answer.partitions),
        )

    def DeleteShareGroupOffsets(  # noqa: N802
        self, request: pb.DeleteShareGroupOffsetsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteShareGroupOffsetsResponse:
        answer = self._share_admin(context).delete_share_group_offsets(
            current_caller(), request.group_id, list(request.topics)
        )
        _refused_whole(context, answer.error_code, answer.error_message)
        return pb.DeleteShareGroupOffsetsResponse(
            error_code=answer.error_code,
            error_message=answer.error_message,
            topics=[
                pb.ShareTopicResult(
                    topic=t.topic,
                    topic_id=t.topic_id,
                    error_code=t.error_code,
                    error_message=t.error_message,
                )
                for t in answer.topics
            ],
        )
