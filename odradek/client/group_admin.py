"""Consumer group administration: the group methods of :class:`odradek.Admin`.

Kafka's ``Admin.listConsumerGroups``, ``describeConsumerGroups``, ``deleteConsumerGroups``,
``listConsumerGroupOffsets``, ``alterConsumerGroupOffsets`` and
``deleteConsumerGroupOffsets``. Each group's requests go to its coordinator (found with
FindCoordinator, found again after NOT_COORDINATOR and the like); listing asks every live
node, since each coordinates the groups of the ``__consumer_offsets`` partitions it leads.

Errors follow :class:`odradek.Admin`'s rule: operations on several items return one result per
item (``None`` or the typed error); questions raise the typed error.

Thread-safe as :class:`odradek.Admin` is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from odradek.client.connection import ConnectionPool, call
from odradek.client.errors import error_from_code
from odradek.client.group import GroupClient, OffsetAndMetadata
from odradek.client.metadata import MetadataCache
from odradek.client.types import TopicPartition
from odradek.clock import Clock
from odradek.errors import OdradekError
from odradek.v1 import odradek_pb2 as pb

__all__ = [
    "ConsumerGroupAdmin",
    "ConsumerGroupDescription",
    "ConsumerGroupListing",
    "GROUP_TYPES",
    "MemberDescription",
]


GROUP_TYPES = ("classic", "consumer")
"""Kafka's ``GroupType`` names of the groups a consumer joins: ``consumer`` (KIP-848's
ConsumerGroupHeartbeat) and ``classic`` (JoinGroup/SyncGroup)."""


@dataclass(frozen=True, slots=True)
class ConsumerGroupListing:
    """Kafka's ``ConsumerGroupListing``."""

    group_id: str
    state: str
    """Kafka's group state: Empty, Assigning, Reconciling, Stable for a ``consumer`` group;
    Empty, PreparingRebalance, CompletingRebalance, Stable for a ``classic`` one."""
    type: str = "consumer"
    """``consumer`` (KIP-848) or ``classic``: Kafka's ``ConsumerGroupListing.type``."""
    protocol_type: str = "consumer"
    """The group's protocol type: ``consumer``, or ``""`` for a classic group that only
    commits offsets (Kafka's simple consumer group)."""

    @property
    def group_type(self) -> str:
        """:attr:`type` by its protocol's name."""
        return self.type

    @property
    def is_simple_consumer_group(self) -> bool:
        """Kafka's ``isSimpleConsumerGroup``: a group without a protocol type."""
        return not self.protocol_type


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    member_epoch: int
    assignment: frozenset[TopicPartition]
    target_assignment: frozenset[TopicPartition]
    subscribed_topics: tuple[str, ...]
    subscribed_topic_regex: str | None = None
    upgraded: bool | None = None
    """A consumer group's member: True if it speaks KIP-848, False if the classic protocol
    (Kafka's ``MemberDescription.upgraded``: a classic member of a group being migrated); None
    for a classic group's member."""


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    coordinator: str
    """The coordinator's ``host:port``."""
    members: tuple[MemberDescription, ...]
    coordinator_id: int = -1
    """The coordinator's node id."""
    type: str = "consumer"
    """``consumer`` (KIP-848) or ``classic``: Kafka's ``ConsumerGroupDescription.type``. A
    classic group's generation stands for ``group_epoch``, ``assignment_epoch`` and each
    member's ``member_epoch``; its members' target assignments are empty."""
    protocol_type: str = "consumer"
    """The group's protocol type (``consumer``; a classic group's own, ``""`` while Empty)."""
    protocol: str = ""
    """A classic group's chosen protocol, the assignor its leader ran (``range``,
    ``roundrobin``, ``cooperative-sticky``, ...); ``""`` for a consumer group."""

    @property
    def group_type(self) -> str:
        """:attr:`type` by its protocol's name."""
        return self.type

    @property
    def partition_assignor(self) -> str:
        """Kafka's ``ConsumerGroupDescription.partitionAssignor``: :attr:`assignor`."""
        return self.assignor

    @property
    def is_simple_consumer_group(self) -> bool:
        """Kafka's ``isSimpleConsumerGroup``: a group without a protocol type."""
        return not self.protocol_type


def _tps(items: Iterable[pb.HeartbeatTopicPartitions]) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(t.topic_name, p) for t in items for p in t.partitions)


class ConsumerGroupAdmin:
    """Mixin of :class:`odradek.Admin` (which provides the attributes below)."""

    _pool: ConnectionPool
    _metadata: MetadataCache
    _clock: Clock
    _request_timeout_ms: int
    _default_api_timeout_ms: int
    _retry_backoff_ms: int

    def _group_client(self, group_id: str) -> GroupClient:
        return GroupClient(
            group_id,
            self._pool,
            self._metadata,
            self._clock,
            request_timeout_ms=self._request_timeout_ms,
            retry_backoff_ms=self._retry_backoff_ms,
        )

    def list_consumer_groups(
        self, states: Iterable[str] = (), types: Iterable[str] = ()
    ) -> list[ConsumerGroupListing]:
        """Every consumer group of every node: both types (``consumer`` and ``classic``), with
        protocol type ``consumer`` or none, as Kafka's ``listConsumerGroups`` (a classic group
        of another protocol type, say ``connect``, is no consumer group). Only those in
        ``states`` and of ``types`` (case-insensitive), if given. Raises ``ValueError`` for a
        type not in :data:`GROUP_TYPES`, the error of a node that could not be asked."""
        wanted_types = {t.lower() for t in types}
        unknown = sorted(wanted_types - set(GROUP_TYPES))
        if unknown:
            raise ValueError(
                f"group types are {' and '.join(GROUP_TYPES)}, not {', '.join(unknown)}"
            )
        cluster = self._metadata.refresh()
        out: dict[str, ConsumerGroupListing] = {}
        for broker in sorted(cluster.brokers.values(), key=lambda b: b.node_id):
            response = call(
                self._pool.broker(broker.address).ListGroups,
                pb.ListGroupsRequest(states_filter=[s.lower() for s in states]),
                address=broker.address,
                timeout_ms=self._request_timeout_ms,
            )
            if response.error_code:
                raise error_from_code(response.error_code, "", f"node {broker.node_id}")
            for g in response.groups:
                if g.protocol_type not in ("consumer", ""):
                    continue
                if wanted_types and g.group_type.lower() not in wanted_types:
                    continue
                out[g.group_id] = ConsumerGroupListing(
                    g.group_id, g.group_state, g.group_type, g.protocol_type
                )
        return [out[g] for g in sorted(out)]

    def describe_consumer_groups(
        self, group_ids: Iterable[str]
    ) -> dict[str, ConsumerGroupDescription]:
        """Members, their assignments and the group's epochs. Raises the typed error of the
        first group that cannot be described (GROUP_ID_NOT_FOUND for an unknown one)."""
        out: dict[str, ConsumerGroupDescription] = {}
        for group_id in group_ids:
            client = self._group_client(group_id)

            def ask(client: GroupClient = client) -> tuple[str, pb.DescribedGroup]:
                response = client.send(
                    lambda s: s.ConsumerGroupDescribe,  # type: ignore[arg-type, return-value]
                    pb.ConsumerGroupDescribeRequest(group_ids=[client.group_id]),
                    lambda r: (r.groups[0].error_code, r.groups[0].error_message),
                )
                return client.coordinator(), response.groups[0]

            coordinator, g = client.retrying(ask, self._default_api_timeout_ms)
            out[group_id] = ConsumerGroupDescription(
                group_id=group_id,
                state=g.group_state,
                group_epoch=g.group_epoch,
                assignment_epoch=g.assignment_epoch,
                assignor=g.assignor_name,
                coordinator=coordinator,
                coordinator_id=client.coordinator_id,
                type=g.group_type,
                protocol_type=g.protocol_type,
                protocol=g.protocol,
                members=tuple(
                    MemberDescription(
                        member_id=m.member_id,
                        instance_id=m.instance_id if m.HasField("instance_id") else None,
                        client_id=m.client_id,
                        host=m.client_host,
                        member_epoch=m.member_epoch,
                        assignment=_tps(m.assignment),
                        target_assignment=_tps(m.target_assignment),
                        subscribed_topics=tuple(m.subscribed_topic_names),
                        subscribed_topic_regex=(
                            m.subscribed_topic_regex
                            if m.HasField("subscribed_topic_regex")
                            else None
                        ),
                        upgraded=m.upgraded if m.HasField("upgraded") else None,
                    )
                    for m in g.members
                ),
            )
        return out

    def delete_consumer_groups(self, group_ids: Iterable[str]) -> dict[str, OdradekError | None]:
        """Delete empty groups with their committed offsets: per group ``None``, or the typed
        error (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, ...)."""
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

    def list_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (of ``partitions``, default all); partitions without
        one are left out. Raises the typed error of the fetch."""
        wanted = None if partitions is None else list(partitions)
        found = self._group_client(group_id).committed(wanted, self._default_api_timeout_ms)
        return {tp: om for tp, om in found.items() if om is not None}

    def alter_consumer_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | int]
    ) -> dict[TopicPartition, OdradekError | None]:
        """Set committed offsets of a group without active members (Kafka refuses an active
        group: UNKNOWN_MEMBER_ID). Per partition ``None`` or the typed error."""
        client = self._group_client(group_id)
        chosen = {
            tp: o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)
            for tp, o in offsets.items()
        }
        try:
            client.commit(chosen, "", -1, self._default_api_timeout_ms)
        except OdradekError as exc:
            return dict.fromkeys(chosen, exc)
        return dict.fromkeys(chosen)

    def delete_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OdradekError | None]:
        """Delete committed offsets (GROUP_SUBSCRIBED_TO_TOPIC for a topic the group still
        subscribes to). Per partition ``None`` or the typed error."""
        wanted = list(partitions)
        topics: dict[str, list[int]] = {}
        for tp in wanted:
            topics.setdefault(tp.topic, []).append(tp.partition)
        client = self._group_client(group_id)
        try:
            response: pb.OffsetDeleteResponse = client.retrying(
                lambda: client.send(
                    lambda s: s.OffsetDelete,  # type: ignore[arg-type, return-value]
                    pb.OffsetDeleteRequest(
                        group_id=group_id,
                        topics=[
                            pb.OffsetFetchTopic(name=t, partitions=ps) for t, ps in topics.items()
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
            tp = TopicPartition(p.topic, p.partition)
            if p.error_code:
                out[tp] = error_from_code(p.error_code, p.error_message, str(tp))
        return out
