"""Share group administration (KIP-932): the share group methods of :class:`odradek.Admin`.

Kafka's ``Admin.listShareGroups`` (``listGroups`` of type share), ``describeShareGroups``,
``deleteShareGroups``, ``listShareGroupOffsets``, ``alterShareGroupOffsets`` and
``deleteShareGroupOffsets``. Each group's requests go to its coordinator, as the consumer
groups' (:mod:`odradek.client.group_admin`); listing asks every live node.

A share group has no committed offsets: each of its share partitions has a start offset (every
record below it is done with) kept by the share state. Altering or deleting them is refused
while the group has members (NON_EMPTY_GROUP), as Kafka does.

Errors follow :class:`odradek.Admin`'s rule: operations on several items return one result per
item (``None`` or the typed error); questions raise the typed error.

Thread-safe as :class:`odradek.Admin` is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from odradek.client.connection import ConnectionPool, call
from odradek.client.errors import error_from_code
from odradek.client.group import GroupClient
from odradek.client.group_admin import MemberDescription, _tps
from odradek.client.metadata import MetadataCache
from odradek.client.types import TopicPartition
from odradek.clock import Clock
from odradek.errors import OdradekError
from odradek.v1 import odradek_pb2 as pb

__all__ = [
    "ShareGroupAdmin",
    "ShareGroupDescription",
    "ShareGroupListing",
    "SharePartitionOffset",
]


@dataclass(frozen=True, slots=True)
class ShareGroupListing:
    """Kafka's ``GroupListing`` of a share group."""

    group_id: str
    state: str
    """Kafka's ``ShareGroupState``: Empty or Stable."""


@dataclass(frozen=True, slots=True)
class ShareGroupDescription:
    """Kafka's ``ShareGroupDescription``: the assignor is ``simple``; each member's
    :attr:`MemberDescription.assignment` the partitions it reads (shared with others when
    members outnumber partitions)."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    coordinator: str
    """The coordinator's ``host:port``."""
    members: tuple[MemberDescription, ...]
    coordinator_id: int = -1
    type: str = "share"
    """Kafka's ``GroupType``, as :class:`~odradek.client.group_admin.ConsumerGroupDescription`
    has it."""
    protocol_type: str = "share"


@dataclass(frozen=True, slots=True)
class SharePartitionOffset:
    """A share partition's start offset (Kafka's ``SharePartitionOffsetInfo``): ``-1`` when the
    group has no share state for it; ``lag`` the high watermark minus it, ``None`` when
    unknown."""

    start_offset: int
    lag: int | None = None
    leader_epoch: int | None = None


class ShareGroupAdmin:
    """Mixin of :class:`odradek.Admin` (which provides the attributes below)."""

    _pool: ConnectionPool
    _metadata: MetadataCache
    _clock: Clock
    _request_timeout_ms: int
    _default_api_timeout_ms: int
    _retry_backoff_ms: int

    _group_client: Callable[[str], GroupClient]
    """:class:`~odradek.client.group_admin.ConsumerGroupAdmin`'s."""

    def list_share_groups(self, states: Iterable[str] = ()) -> list[ShareGroupListing]:
        """Every share group of every node (only those in ``states``, case-insensitive, if
        given). Raises the error of a node that could not be asked."""
        cluster = self._metadata.refresh()
        out: dict[str, ShareGroupListing] = {}
        for broker in sorted(cluster.brokers.values(), key=lambda b: b.node_id):
            response = call(
                self._pool.broker(broker.address).ListGroups,
                pb.ListGroupsRequest(
                    states_filter=[s.lower() for s in states], types_filter=["share"]
                ),
                address=broker.address,
                timeout_ms=self._request_timeout_ms,
            )
            if response.error_code:
                raise error_from_code(response.error_code, "", f"node {broker.node_id}")
            for g in response.groups:
                if g.group_type == "share":
                    out[g.group_id] = ShareGroupListing(g.group_id, g.group_state)
        return [out[g] for g in sorted(out)]

    def describe_share_groups(self, group_ids: Iterable[str]) -> dict[str, ShareGroupDescription]:
        """Members, their assignments and the group's epochs. Raises the typed error of the
        first group that cannot be described (GROUP_ID_NOT_FOUND for an unknown one, or one
        that is not a share group)."""
        out: dict[str, ShareGroupDescription] = {}
        for group_id in group_ids:
            client = self._group_client(group_id)

            def ask(client: GroupClient = client) -> tuple[str, pb.DescribedGroup]:
                response = client.send(
                    lambda s: s.ShareGroupDescribe,  # type: ignore[arg-type, return-value]
                    pb.ShareGroupDescribeRequest(group_ids=[client.group_id]),
                    lambda r: (r.groups[0].error_code, r.groups[0].error_message),
                )
                return client.coordinator(), response.groups[0]

            coordinator, g = client.retrying(ask, self._default_api_timeout_ms)
            out[group_id] = ShareGroupDescription(
                group_id=group_id,
                state=g.group_state,
                group_epoch=g.group_epoch,
                assignment_epoch=g.assignment_epoch,
                assignor=g.assignor_name,
                coordinator=coordinator,
                coordinator_id=client.coordinator_id,
                members=tuple(
                    MemberDescription(
                        member_id=m.member_id,
                        instance_id=None,
                        client_id=m.client_id,
                        host=m.client_host,
                        member_epoch=m.member_epoch,
                        assignment=_tps(m.assignment),
                        target_assignment=_tps(m.target_assignment),
                        subscribed_topics=tuple(m.subscribed_topic_names),
                    )
                    for m in g.members
                ),
            )
        return out

    def delete_share_groups(self, group_ids: Iterable[str]) -> dict[str, OdradekError | None]:
        """Delete empty share groups: per group ``None``, or the typed error (NON_EMPTY_GROUP,
        GROUP_ID_NOT_FOUND, ...)."""
        out: dict[str, OdradekError | None] = {}
        for group_id in group_ids:
            client = self._group_client(group_id)
            try:
                client.retrying(
                    lambda client=client: client.send(  # type: ignore[misc]
                        lambda s: s.DeleteGroups,
                        pb.DeleteGroupsRequest(group_ids=[client.group_id]),
                        lambda r: (r.results[0].error_code, r.results[0].error_message),
                    ),
                    self._default_api_timeout_ms,
                )
                out[group_id] = None
            except OdradekError as exc:
                out[group_id] = exc
        return out

    def list_share_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, SharePartitionOffset]:
        """The start offset of each of ``partitions`` (default: every partition the group has
        share state for). Raises the typed error of the group, or of the first partition that
        could not be read (UNKNOWN_TOPIC_OR_PARTITION, TOPIC_AUTHORIZATION_FAILED)."""
        request = pb.DescribeShareGroupOffsetsRequest(
            group_id=group_id, all_topics=partitions is None
        )
        if partitions is not None:
            topics: dict[str, list[int]] = {}
            for tp in partitions:
                topics.setdefault(tp.topic, []).append(tp.partition)
            request.topics.extend(
                pb.ShareOffsetsTopic(topic=t, partitions=ps) for t, ps in topics.items()
            )
        client = self._group_client(group_id)
        response: pb.DescribeShareGroupOffsetsResponse = client.retrying(
            lambda: client.send(
                lambda s: s.DescribeShareGroupOffsets,  # type: ignore[arg-type, return-value]
                request,
                lambda r: (r.error_code, r.error_message),
            ),
            self._default_api_timeout_ms,
        )
        out: dict[TopicPartition, SharePartitionOffset] = {}
        for p in response.partitions:
            if p.error_code:
                raise error_from_code(p.error_code, p.error_message, f"{p.topic}-{p.partition}")
            out[TopicPartition(p.topic, p.partition)] = SharePartitionOffset(
                p.start_offset,
                None if p.lag < 0 else p.lag,
                None if p.leader_epoch < 0 else p.leader_epoch,
            )
        return out

    def alter_share_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, OdradekError | None]:
        """Reset the start offsets of an empty share group (NON_EMPTY_GROUP while it has
        members): each partition's share state starts again at its offset. Per partition
        ``None`` or the typed error."""
        wanted = dict(offsets)
        client = self._group_client(group_id)
        try:
            response: pb.AlterShareGroupOffsetsResponse = client.retrying(
                lambda: client.send(
                    lambda s: s.AlterShareGroupOffsets,  # type: ignore[arg-type, return-value]
                    pb.AlterShareGroupOffsetsRequest(
                        group_id=group_id,
                        offsets=[
                            pb.SharePartitionOffset(
                                topic=tp.topic, partition=tp.partition, start_offset=o
                            )
                            for tp, o in wanted.items()
                        ],
                    ),
                    lambda r: (r.error_code, r.error_message),
                ),
                self._default_api_timeout_ms,
            )
        except OdradekError as exc:
            return dict.fromkeys(wanted, exc)
        out: dict[TopicPartition, OdradekError | None] = dict.fromkeys(wanted)
        for p in response.partitions:
            if p.error_code:
                out[TopicPartition(p.topic, p.partition)] = error_from_code(
                    p.error_code, p.error_message, f"{p.topic}-{p.partition}"
                )
        return out

    def delete_share_group_offsets(
        self, group_id: str, topics: Iterable[str]
    ) -> dict[str, OdradekError | None]:
        """Forget the share state of every partition of ``topics`` for an empty share group
        (the next consumer starts where ``share.auto.offset.reset`` says). Per topic ``None``
        or the typed error."""
        wanted = list(dict.fromkeys(topics))
        client = self._group_client(group_id)
        try:
            response: pb.DeleteShareGroupOffsetsResponse = client.retrying(
                lambda: client.send(
                    lambda s: s.DeleteShareGroupOffsets,  # type: ignore[arg-type, return-value]
                    pb.DeleteShareGroupOffsetsRequest(group_id=group_id, topics=wanted),
                    lambda r: (r.error_code, r.error_message),
                ),
                self._default_api_timeout_ms,
            )
        except OdradekError as exc:
            return dict.fromkeys(wanted, exc)
        out: dict[str, OdradekError | None] = dict.fromkeys(wanted)
        for t in response.topics:
            if t.error_code:
                out[t.topic] = error_from_code(t.error_code, t.error_message, t.topic)
        return out
