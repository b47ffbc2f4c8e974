"""The cluster as one principal sees it: what each console page shows, asked through the SDK
(``Admin``, ``Consumer``, ``Producer``) with that principal's credentials, so the cluster's
ACLs decide what it may see and change.

Every method raises :class:`~odradek.console.refusals.ActionError` (a sentence) rather than
the SDK's typed errors. Blocking; thread-safe (``Admin`` is; each browse has a consumer of its
own; the producer is thread-safe).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Unpack

from odradek.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.admin import (
    Admin,
    ConfigChange,
    NewPartitions,
    NewTopic,
    ScramDeletion,
    ScramUpsertion,
)
from odradek.cli.groups import reset_plan
from odradek.client.connection import ConnectionPool
from odradek.client.group_admin import ConsumerGroupDescription
from odradek.client.metadata import ClusterMetadata, MetadataCache, PartitionMetadata
from odradek.client.security import SecurityConfig, SecurityOptions
from odradek.client.share_group_admin import ShareGroupDescription
from odradek.client.types import TopicPartition
from odradek.clock import Clock
from odradek.console.browse import BrowseResult, RecordFilter, Seek, browse, start_offset
from odradek.console.offsets import PartitionOffsets, partition_offsets
from odradek.console.refusals import Action, ActionError, acting
from odradek.console.transactions import (
    OpenTransactionRow,
    TransactionRow,
    open_transactions,
    transaction_rows,
)
from odradek.consumer import Consumer
from odradek.errors import GroupIdNotFoundError, OdradekError
from odradek.producer import Producer
from odradek.v1 import odradek_pb2 as pb

__all__ = ["ClusterView"]

RESET_SPECS = ("to-earliest", "to-latest", "to-datetime", "to-offset", "shift-by")


@dataclass(frozen=True, slots=True)
class Listener:
    name: str
    address: str
    security_protocol: str


@dataclass(frozen=True, slots=True)
class BrokerRow:
    node_id: int
    address: str
    rack: str | None
    listeners: tuple[Listener, ...]
    is_controller: bool
    leader_of: int
    replicas: int
    out_of_isr: int

    @property
    def health(self) -> str:
        return "ok" if self.out_of_isr == 0 else f"{self.out_of_isr} replicas out of ISR"


@dataclass(frozen=True, slots=True)
class Overview:
    cluster_id: str
    controller_id: int
    brokers: tuple[BrokerRow, ...]
    topics: int
    partitions: int
    under_replicated: int
    offline: int


@dataclass(frozen=True, slots=True)
class TopicRow:
    name: str
    partitions: int
    replication_factor: int
    records: int | None
    under_replicated: int
    offline: int
    size_bytes: int | None = None
    """The sum of its partitions' sizes on their leaders (``None``: unknown)."""


@dataclass(frozen=True, slots=True)
class PartitionRow:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offsets: PartitionOffsets | None
    error: str | None
    size_bytes: int | None = None
    """The size of the leader's log (``None``: unknown)."""

    @property
    def status(self) -> str:
        marks = []
        if self.leader < 0:
            marks.append("offline")
        if len(self.isr) < len(self.replicas):
            marks.append("under-replicated")
        return ", ".join(marks) or "ok"


@dataclass(frozen=True, slots=True)
class ConfigRow:
    name: str
    value: str
    is_default: bool
    source: str = "UNKNOWN"
    """Kafka's ConfigSource name: ``DYNAMIC_TOPIC_CONFIG``, ``STATIC_BROKER_CONFIG`` (the
    node's ``server.properties``), ``DEFAULT_CONFIG`` (built in)."""


@dataclass(frozen=True, slots=True)
class TopicDetail:
    name: str
    partitions: tuple[PartitionRow, ...]
    configs: tuple[ConfigRow, ...] | None
    configs_error: str | None
    sizes_error: str | None = None
    open_transactions: tuple[OpenTransactionRow, ...] = ()
    """The partitions' open transactions (asked only of those whose last stable offset is
    behind the high watermark)."""
    open_transactions_error: str | None = None


@dataclass(frozen=True, slots=True)
class GroupRow:
    group_id: str
    state: str
    type: str
    """``consumer`` (KIP-848) or ``classic``."""
    members: int | None
    lag: int | None
    error: str | None
    protocol_type: str = "consumer"
    """``consumer``; ``""`` for a classic group that only commits offsets."""


@dataclass(frozen=True, slots=True)
class GroupPartitionRow:
    topic: str
    partition: int
    committed: int | None
    end_offset: int | None
    lag: int | None
    member_id: str | None
    client_id: str | None
    host: str | None


@dataclass(frozen=True, slots=True)
class GroupDetail:
    description: ConsumerGroupDescription | ShareGroupDescription | None
    partitions: tuple[GroupPartitionRow, ...]
    share: bool = False
    """A share group (KIP-932): each row's ``committed`` is its share-partition start offset."""

    @property
    def active(self) -> bool:
        return self.description is not None and bool(self.description.members)


@dataclass(frozen=True, slots=True)
class ResetRow:
    topic: str
    partition: int
    current: int | None
    new: int


def _lag(committed: int | None, end: int | None) -> int | None:
    if committed is None or end is None:
        return None
    return max(end - committed, 0)


class ClusterView:
    """One principal's connection to the cluster (``principal`` is how refusals name it:
    ``User:alice``, or ``ANONYMOUS``). Raises ``ValueError`` for bad security settings. Given a
    SASL password, it authenticates at once (raising the SDK's typed error, e.g.
    :class:`~odradek.errors.SaslAuthenticationFailedError`, for a wrong one) and keeps only
    SCRAM's salted password from then on: no client of the view holds the password."""

    def __init__(
        self,
        bootstrap_servers: str,
        principal: str,
        clock: Clock,
        **security: Unpack[SecurityOptions],
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.principal = principal
        self._clock = clock
        self.admin = Admin(bootstrap_servers, clock=clock, **security)
        if security.get("sasl_plain_password"):
            # prove the password once; from then on every client of this view holds only
            # SCRAM's salted password (odradek.client.sasl), never the password
            try:
                self.admin.describe_cluster()
            except BaseException:
                self.admin.close()
                raise
            salted = self.admin.sasl_salted_password()
            assert salted is not None
            security = SecurityOptions(
                **{**security, "sasl_plain_password": None, "sasl_salted_password": salted}
            )
        self._security = security
        self._pool = ConnectionPool(SecurityConfig(**security))
        self._metadata = MetadataCache(
            bootstrap_servers.split(","), self._pool, clock, request_timeout_ms=30_000
        )
        self._lock = threading.Lock()
        self._producer: Producer | None = None
        self._closed = False

    def _acting(self, operation: str, resource_type: str, name: str = "") -> Any:
        return acting(self.principal, Action(operation, resource_type, name))

    def consumer(self, **options: Any) -> Consumer:
        """A new consumer as this principal, without a group (the caller closes it)."""
        return Consumer(self.bootstrap_servers, clock=self._clock, **options, **self._security)

    def producer(self) -> Producer:
        with self._lock:
            if self._producer is None:
                self._producer = Producer(
                    self.bootstrap_servers, clock=self._clock, linger_ms=0, **self._security
                )
            return self._producer

    def close(self) -> None:
        """Closes every client of this principal. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            producer, self._producer = self._producer, None
        if producer is not None:
            producer.close(timeout=5)
        self.admin.close()
        self._pool.close()

    # --- cluster ------------------------------------------------------------------------------

    def _raw_metadata(self) -> tuple[ClusterMetadata, dict[int, tuple[Listener, ...]]]:
        cluster = self.admin.cluster_metadata()
        listeners: dict[int, tuple[Listener, ...]] = {}
        # the listeners are in the Metadata answer, which ClusterMetadata leaves out
        for address in [b.address for b in cluster.brokers.values()][:1]:
            response: pb.MetadataResponse = self._pool.broker(address).Metadata(
                pb.MetadataRequest(topics=[]), timeout=30
            )
            for b in response.brokers:
                listeners[b.node_id] = tuple(
                    Listener(e.listener, f"{e.host}:{e.port}", e.security_protocol)
                    for e in b.endpoints
                ) or (Listener("", f"{b.host}:{b.port}", ""),)
        return cluster, listeners

    def brokers(self) -> tuple[Overview, ClusterMetadata]:
        """The cluster, its brokers with what they lead and host, and the partition counts."""
        with self._acting("Describe", "cluster"):
            cluster, listeners = self._raw_metadata()
        leader_of: dict[int, int] = {}
        hosted: dict[int, int] = {}
        out_of_isr: dict[int, int] = {}
        partitions = under = offline = 0
        for topic in cluster.topics.values():
            for p in topic.partitions:
                partitions += 1
                under += p.under_replicated
                offline += p.offline
                if p.leader >= 0:
                    leader_of[p.leader] = leader_of.get(p.leader, 0) + 1
                for r in p.replicas:
                    hosted[r] = hosted.get(r, 0) + 1
                    if r not in p.isr:
                        out_of_isr[r] = out_of_isr.get(r, 0) + 1
        rows = tuple(
            BrokerRow(
                node_id=b.node_id,
                address=b.address,
                rack=b.rack,
                listeners=listeners.get(b.node_id, ()),
                is_controller=b.node_id == cluster.controller_id,
                leader_of=leader_of.get(b.node_id, 0),
                replicas=hosted.get(b.node_id, 0),
                out_of_isr=out_of_isr.get(b.node_id, 0),
            )
            for b in (cluster.brokers[i] for i in sorted(cluster.brokers))
        )
        overview = Overview(
            cluster.cluster_id,
            cluster.controller_id,
            rows,
            len(cluster.topics),
            partitions,
            under,
            offline,
        )
        return overview, cluster

    def broker_configs(self, node_id: int) -> tuple[ConfigRow, ...]:
        """The broker's configuration as it reports it (DescribeConfigs of the broker, asked
        of that broker): values its ``server.properties`` sets first, then the defaults."""
        with self._acting("DescribeConfigs", "cluster"):
            entries = self.admin.describe_broker_configs([node_id])[node_id]
        return tuple(
            ConfigRow(e.name, e.value, e.source == "DEFAULT_CONFIG", e.source)
            for e in sorted(entries.values(), key=lambda e: (e.source == "DEFAULT_CONFIG", e.name))
        )

    def leader_sizes(self, cluster: ClusterMetadata) -> dict[TopicPartition, int]:
        """Each partition's size in bytes on its leader (as Kafka UIs show a topic's size),
        from every broker's DescribeLogDirs; a partition without a leader, or whose leader
        did not report it, is left out."""
        with self._acting("Describe", "cluster"):
            dirs = self.admin.describe_log_dirs()
        on_broker: dict[tuple[int, TopicPartition], int] = {}
        for broker, by_path in dirs.items():
            for d in by_path.values():
                for tp, info in d.replica_infos.items():
                    if not info.is_future:
                        on_broker[(broker, tp)] = info.size
        out = {}
        for t in cluster.topics.values():
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition)
                size = on_broker.get((p.leader, tp))
                if size is not None:
                    out[tp] = size
        return out

    def _sizes(self, cluster: ClusterMetadata) -> tuple[dict[TopicPartition, int], str | None]:
        try:
            return self.leader_sizes(cluster), None
        except ActionError as exc:
            return {}, exc.sentence

    # --- topics -------------------------------------------------------------------------------

    def offsets(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, PartitionOffsets | OdradekError]:
        return partition_offsets(self._pool, self._metadata, self._clock, tps)

    def topics(self, search: str = "") -> list[TopicRow]:
        """Every topic this principal may describe whose name contains ``search``, with its
        partition count, replication factor, record count and unhealthy partitions."""
        with self._acting("Describe", "topic"):
            cluster = self.admin.cluster_metadata()
        chosen = [
            t
            for name, t in sorted(cluster.topics.items())
            if search.lower() in name.lower() and t.error_code == 0
        ]
        offsets = self.offsets(
            TopicPartition(t.name, p.partition) for t in chosen for p in t.partitions
        )
        sizes, _ = self._sizes(cluster)
        rows = []
        for t in chosen:
            records: int | None = 0
            size: int | None = 0
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition)
                o = offsets.get(tp)
                if isinstance(o, PartitionOffsets) and records is not None:
                    records += o.records
                else:
                    records = None
                if size is not None and tp in sizes:
                    size += sizes[tp]
                else:
                    size = None
            rows.append(
                TopicRow(
                    name=t.name,
                    partitions=len(t.partitions),
                    replication_factor=max((len(p.replicas) for p in t.partitions), default=0),
                    records=records,
                    under_replicated=sum(p.under_replicated for p in t.partitions),
                    offline=sum(p.offline for p in t.partitions),
                    size_bytes=size,
                )
            )
        return rows

    def topic(self, name: str) -> TopicDetail:
        with self._acting("Describe", "topic", name):
            meta = self.admin.describe_topics([name])[name]
        offsets = self.offsets(TopicPartition(name, p.partition) for p in meta.partitions)
        with self._acting("Describe", "topic", name):
            sizes, sizes_error = self._sizes(self.admin.cluster_metadata())
        rows = []
        for p in meta.partitions:
            o = offsets.get(TopicPartition(name, p.partition))
            error = None
            if isinstance(o, OdradekError):
                error = f"{o.name}: {o.message}"
            rows.append(
                PartitionRow(
                    p.partition,
                    p.leader,
                    p.leader_epoch,
                    p.replicas,
                    p.isr,
                    o if isinstance(o, PartitionOffsets) else None,
                    error,
                    sizes.get(TopicPartition(name, p.partition)),
                )
            )
        configs: tuple[ConfigRow, ...] | None = None
        configs_error = None
        try:
            with self._acting("DescribeConfigs", "topic", name):
                entries = self.admin.describe_configs([name])[name]
            configs = tuple(
                ConfigRow(e.name, e.value, e.is_default, e.source)
                for e in sorted(entries.values(), key=lambda e: (e.is_default, e.name))
            )
        except ActionError as exc:
            configs_error = exc.sentence
        held = [
            TopicPartition(name, r.partition)
            for r in rows
            if r.offsets is not None and r.offsets.open_transaction_offsets
        ]
        opened, opened_error = open_transactions(self.admin, held, self._clock.wall_ms())
        return TopicDetail(
            name, tuple(rows), configs, configs_error, sizes_error, opened, opened_error
        )

    def partitions_of(self, name: str) -> tuple[PartitionMetadata, ...]:
        with self._acting("Describe", "topic", name):
            return self.admin.describe_topics([name])[name].partitions

    def create_topic(
        self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str]
    ) -> None:
        with self._acting("Create", "topic", name):
            error = self.admin.create_topics(
                [NewTopic(name, partitions, replication_factor, configs=dict(configs))]
            )[name]
            if error is not None:
                raise error

    def delete_topic(self, name: str) -> None:
        with self._acting("Delete", "topic", name):
            error = self.admin.delete_topics([name])[name]
            if error is not None:
                raise error

    def add_partitions(self, name: str, total: int) -> None:
        with self._acting("Alter", "topic", name):
            error = self.admin.create_partitions({name: NewPartitions(total)})[name]
            if error is not None:
                raise error

    def alter_configs(self, name: str, set_: Mapping[str, str], delete: Sequence[str]) -> None:
        with self._acting("AlterConfigs", "topic", name):
            error = self.admin.alter_configs({name: ConfigChange(dict(set_), list(delete))})[name]
            if error is not None:
                raise error

    # --- messages -----------------------------------------------------------------------------

    def browse(
        self,
        topic: str,
        partition: int | None,
        seek: Seek,
        limit: int,
        record_filter: RecordFilter | None,
    ) -> BrowseResult:
        """Records of ``topic`` (one partition, or all when ``partition`` is ``None``)."""
        metas = self.partitions_of(topic)
        ids = [p.partition for p in metas]
        if partition is not None and partition not in ids:
            raise ActionError(f"topic {topic} has no partition {partition}")
        tps = [TopicPartition(topic, p) for p in ids if partition is None or p == partition]
        with self._acting("Read", "topic", topic):
            found = self.offsets(tps)
            for error in found.values():
                if isinstance(error, OdradekError):
                    raise error
            offsets = {tp: o for tp, o in found.items() if isinstance(o, PartitionOffsets)}
            consumer = self.consumer(max_poll_records=2000, fetch_max_wait_ms=100)
            try:
                by_time: Mapping[TopicPartition, Any] = {}
                if seek.kind == "timestamp":
                    assert seek.value is not None
                    by_time = consumer.offsets_for_times(dict.fromkeys(tps, seek.value))
                starts = {
                    tp: start_offset(
                        seek,
                        offsets[tp].log_start_offset,
                        offsets[tp].high_watermark,
                        limit,
                        None if by_time.get(tp) is None else by_time[tp].offset,
                    )
                    for tp in tps
                }
                ends = {tp: offsets[tp].high_watermark for tp in tps}
                return browse(
                    consumer,
                    starts,
                    ends,
                    limit=limit,
                    record_filter=record_filter,
                    clock=self._clock,
                    newest=seek.kind == "newest",
                )
            finally:
                consumer.close()

    def produce(
        self,
        topic: str,
        partition: int | None,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes]],
    ) -> tuple[int, int]:
        """Produce one record; its partition and offset."""
        with self._acting("Write", "topic", topic):
            meta = (
                self.producer()
                .send(topic, value, key=key, headers=list(headers), partition=partition)
                .result(timeout=30)
            )
        return meta.partition, meta.offset

    # --- groups -------------------------------------------------------------------------------

    def transactions(self) -> list[TransactionRow]:
        """Every transactional id and its open transaction (odradek.console.transactions)."""
        with self._acting("Describe", "transactional_id"):
            return transaction_rows(self.admin, self._clock.wall_ms())

    def groups(self) -> list[GroupRow]:
        """Every group this principal may describe, with its state, type (classic or consumer),
        protocol type, members and total lag."""
        with self._acting("Describe", "group"):
            listings = self.admin.list_consumer_groups()
        rows = []
        for g in listings:
            try:
                detail = self.group(g.group_id)
            except ActionError as exc:
                rows.append(
                    GroupRow(g.group_id, g.state, g.type, None, None, exc.sentence, g.protocol_type)
                )
                continue
            lags = [p.lag for p in detail.partitions if p.lag is not None]
            members = len(detail.description.members) if detail.description else 0
            total = sum(lags) if lags else None
            rows.append(
                GroupRow(g.group_id, g.state, g.type, members, total, None, g.protocol_type)
            )
        # share groups (KIP-932): type and protocol type "share"
        with self._acting("Describe", "group"):
            shares = self.admin.list_share_groups()
        for s in shares:
            try:
                detail = self.group(s.group_id)
            except ActionError as exc:
                rows.append(
                    GroupRow(s.group_id, s.state, "share", None, None, exc.sentence, "share")
                )
                continue
            lags = [p.lag for p in detail.partitions if p.lag is not None]
            members = len(detail.description.members) if detail.description else 0
            rows.append(
                GroupRow(
                    s.group_id,
                    s.state,
                    "share",
                    members,
                    sum(lags) if lags else None,
                    None,
                    "share",
                )
            )
        return sorted(rows, key=lambda r: r.group_id)

    def group(self, group_id: str) -> GroupDetail:
        """The group's members and, per partition it owns or has an offset for, its committed
        offset, the end offset (the high watermark) and the lag between them."""
        with self._acting("Describe", "group", group_id):
            try:
                description: ConsumerGroupDescription | None = self.admin.describe_consumer_groups(
                    [group_id]
                )[group_id]
            except GroupIdNotFoundError:
                description = None
            # a share group is no consumer group: not found, or described as a share group
            if description is None or description.type == "share":
                try:
                    share = self.admin.describe_share_groups([group_id])[group_id]
                except GroupIdNotFoundError:
                    pass
                else:
                    return self._share_group(share)
            committed = self.admin.list_consumer_group_offsets(group_id)
        owners: dict[TopicPartition, tuple[str, str, str]] = {}
        for m in description.members if description else ():
            for tp in m.assignment:
                owners[tp] = (m.member_id, m.client_id, m.host)
        tps = sorted(set(owners) | set(committed))
        ends: dict[TopicPartition, int | None] = {}
        if tps:
            found = self.offsets(tps)
            ends = {
                tp: o.high_watermark if isinstance(o, PartitionOffsets) else None
                for tp, o in found.items()
            }
        rows = []
        for tp in tps:
            c = committed.get(tp)
            offset = None if c is None else c.offset
            end = ends.get(tp)
            member = owners.get(tp)
            rows.append(
                GroupPartitionRow(
                    tp.topic,
                    tp.partition,
                    offset,
                    end,
                    _lag(offset, end),
                    member[0] if member else None,
                    member[1] if member else None,
                    member[2] if member else None,
                )
            )
        return GroupDetail(description, tuple(rows))

    def _share_group(self, description: ShareGroupDescription) -> GroupDetail:
        """A share group's members and, per partition it has share state for or is assigned,
        its start offset, the high watermark and the lag between them."""
        group_id = description.group_id
        with self._acting("Describe", "group", group_id):
            starts = self.admin.list_share_group_offsets(group_id)
            assigned = {tp for m in description.members for tp in m.assignment}
            missing = sorted(assigned - set(starts))
            if missing:
                starts.update(self.admin.list_share_group_offsets(group_id, missing))
        owners: dict[TopicPartition, tuple[str, str, str]] = {}
        for m in description.members:
            for tp in m.assignment:
                owners.setdefault(tp, (m.member_id, m.client_id, m.host))
        # the high watermarks from the partitions themselves: the coordinator knows the lag
        # only of the partitions it leads
        found = self.offsets(sorted(starts)) if starts else {}
        ends = {
            tp: o.high_watermark if isinstance(o, PartitionOffsets) else None
            for tp, o in found.items()
        }
        rows = []
        for tp, o in sorted(starts.items()):
            start = None if o.start_offset < 0 else o.start_offset
            end = ends.get(tp)
            member = owners.get(tp)
            rows.append(
                GroupPartitionRow(
                    tp.topic,
                    tp.partition,
                    start,
                    end,
                    _lag(start, end),
                    member[0] if member else None,
                    member[1] if member else None,
                    member[2] if member else None,
                )
            )
        return GroupDetail(description, tuple(rows), share=True)

    def reset_offsets(
        self,
        group_id: str,
        topic: str,
        partitions: Sequence[int] | None,
        spec: str,
        value: int | None,
        *,
        execute: bool,
    ) -> list[ResetRow]:
        """kafka-consumer-groups --reset-offsets: the plan (a dry run), committed only with
        ``execute``. Refused while the group has members, as Kafka refuses it."""
        if spec not in RESET_SPECS:
            raise ActionError(f"reset with one of {', '.join(RESET_SPECS)}, not {spec!r}")
        if spec in ("to-datetime", "to-offset", "shift-by") and value is None:
            raise ActionError(f"--{spec} needs a value")
        detail = self.group(group_id)
        if detail.active:
            assert detail.description is not None
            raise ActionError(
                f"Assignments can only be reset if the group '{group_id}' is inactive, but the "
                f"current state is {detail.description.state} "
                f"({len(detail.description.members)} members): stop its consumers first.",
                409,
            )
        ids = [p.partition for p in self.partitions_of(topic)]
        for p in partitions or ():
            if p not in ids:
                raise ActionError(f"topic {topic} has no partition {p}")
        tps = [TopicPartition(topic, p) for p in (partitions or ids)]
        committed = {
            TopicPartition(r.topic, r.partition): r.committed
            for r in detail.partitions
            if r.committed is not None
        }
        with self._acting("Describe", "topic", topic):
            found = self.offsets(tps)
            for error in found.values():
                if isinstance(error, OdradekError):
                    raise error
            offsets = {tp: o for tp, o in found.items() if isinstance(o, PartitionOffsets)}
            by_time: dict[TopicPartition, int | None] = {}
            if spec == "to-datetime":
                assert value is not None
                consumer = self.consumer()
                try:
                    times = consumer.offsets_for_times(dict.fromkeys(tps, value))
                finally:
                    consumer.close()
                by_time = {tp: None if t is None else t.offset for tp, t in times.items()}
        plan = reset_plan(
            spec,
            value,
            tps,
            {tp: o.log_start_offset for tp, o in offsets.items()},
            {tp: o.high_watermark for tp, o in offsets.items()},
            {tp: c for tp, c in committed.items() if c is not None},
            by_time,
        )
        if execute:
            with self._acting("Read", "group", group_id):
                results = self.admin.alter_consumer_group_offsets(group_id, plan)
                for failed in results.values():
                    if failed is not None:
                        raise failed
        return [
            ResetRow(tp.topic, tp.partition, committed.get(tp), new)
            for tp, new in sorted(plan.items())
        ]

    def delete_group(self, group_id: str) -> None:
        with self._acting("Delete", "group", group_id):
            error = self.admin.delete_consumer_groups([group_id])[group_id]
            if error is not None:
                raise error

    # --- security -----------------------------------------------------------------------------

    def acls(self) -> list[AclBinding]:
        with self._acting("Describe", "cluster"):
            return sorted(
                self.admin.describe_acls(AclBindingFilter()),
                key=lambda b: (
                    b.pattern.resource_type,
                    b.pattern.name,
                    b.entry.principal,
                    b.entry.operation,
                ),
            )

    def add_acl(
        self,
        resource_type: str,
        name: str,
        pattern_type: str,
        principal: str,
        host: str,
        operation: str,
        permission: str,
    ) -> None:
        with self._acting("Alter", "cluster"):
            binding = AclBinding(
                ResourcePattern(
                    ResourceType.parse(resource_type), name, PatternType.parse(pattern_type)
                ),
                AccessControlEntry(
                    principal,
                    host or "*",
                    AclOperation.parse(operation),
                    AclPermissionType.parse(permission),
                ),
            )
            error = self.admin.create_acls([binding])[0]
            if error is not None:
                raise error

    def remove_acl(self, binding: AclBinding) -> int:
        with self._acting("Alter", "cluster"):
            p, e = binding.pattern, binding.entry
            exact = AclBindingFilter(
                p.resource_type,
                p.name,
                p.pattern_type,
                e.principal,
                e.host,
                e.operation,
                e.permission_type,
            )
            removed = self.admin.delete_acls([exact])
        return sum(len(r) for r in removed)

    def scram_users(self) -> dict[str, dict[str, int]]:
        with self._acting("Describe", "cluster"):
            return self.admin.describe_user_scram_credentials()

    def set_scram_user(self, user: str, mechanism: str, password: str, iterations: int) -> None:
        with self._acting("Alter", "cluster"):
            error = self.admin.alter_user_scram_credentials(
                [ScramUpsertion(user, mechanism, password, iterations)]
            ).get(user)
            if error is not None:
                raise error

    def delete_scram_user(self, user: str, mechanism: str) -> None:
        with self._acting("Alter", "cluster"):
            error = self.admin.alter_user_scram_credentials(
                deletions=[ScramDeletion(user, mechanism)]
            ).get(user)
            if error is not None:
                raise error
