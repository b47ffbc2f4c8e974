"""The share state's values on the inter-broker wire: :mod:`node.share.persister`'s keys,
snapshots and batches to and from the Replication service's share-state messages
(``SharePartitionKey``, ``ShareStateBatch``), shared by the calling side
(:mod:`node.replication.share_state_channel`) and the serving side
(:mod:`node.grpc_door.share_state_service`). Pure; thread-safe."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from node.share.persister import DeliveryState, ShareKey, ShareStateBatch
from odradek.v1 import odradek_pb2 as pb

__all__ = ["batches_from_wire", "batches_to_wire", "key_from_wire", "key_to_wire"]


def key_to_wire(key: ShareKey) -> pb.SharePartitionKey:
    return pb.SharePartitionKey(
        group_id=key.group_id, topic_id=key.topic_id, partition=key.partition
    )


def key_from_wire(key: pb.SharePartitionKey) -> ShareKey:
    return ShareKey(key.group_id, key.topic_id, key.partition)


def batches_to_wire(batches: Iterable[ShareStateBatch]) -> list[pb.ShareStateBatch]:
    return [
        pb.ShareStateBatch(
            first_offset=b.first_offset,
            last_offset=b.last_offset,
            delivery_state=int(b.delivery_state),
            delivery_count=b.delivery_count,
        )
        for b in batches
    ]


def batches_from_wire(batches: Sequence[pb.ShareStateBatch]) -> tuple[ShareStateBatch, ...]:
    """Raises ``ValueError`` for a delivery state that is not Kafka's."""
    return tuple(
        ShareStateBatch(
            b.first_offset, b.last_offset, DeliveryState(b.delivery_state), b.delivery_count
        )
        for b in batches
    )
