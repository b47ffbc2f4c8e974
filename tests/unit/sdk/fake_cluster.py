"""A scriptable, in-process odradek cluster for testing the client SDK and the command line.

Each node is a real ``grpc.server`` on 127.0.0.1 (port 0) serving the ``Broker`` and ``Admin``
services from one shared, lock-protected model: topics, partitions with a leader, leader epoch,
replicas, ISR and a log of record batches (offsets assigned, epochs stamped, as a leader does).
It behaves like a cluster in the ways clients depend on — produce and fetch only at the leader
(``NOT_LEADER_OR_FOLLOWER`` with a ``current_leader`` hint elsewhere), leader epoch fencing,
``OFFSET_OUT_OF_RANGE``, fetches starting at the batch holding the offset, long-polling
fetches, ``ListOffsets`` by time — and lets a test script failures: the next N calls of an RPC
(for a node and/or a partition) answer an error code, or fail with a gRPC status.

This is a test double of the wire API, not a broker: no replication, the high watermark is
the log end offset, admin operations take effect at once.
"""

from __future__ import annotations

import threading
import uuid
from collections import deque
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc

from odradek.client.types import TopicPartition
from odradek.clock import SystemClock
from odradek.errors import (
    CorruptRecordError,
    ElectionNotNeededError,
    FencedLeaderEpochError,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidReplicationFactorError,
    InvalidRequiredAcksError,
    InvalidTopicError,
    NoReassignmentInProgressError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    TopicAlreadyExistsError,
    UnknownLeaderEpochError,
    UnknownTopicOrPartitionError,
)
from odradek.records import Record, read_batches, stamp_batch
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

DEFAULT_CONFIGS = {
    "cleanup.policy": "delete",
    "min.insync.replicas": "1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
    "message.timestamp.type": "CreateTime",
}

_CLOCK = SystemClock()


@dataclass
class FakePartition:
    topic: str
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    leader_epoch: int = 0
    log_start_offset: int = 0
    log_end_offset: int = 0
    # (base offset, last offset, batch bytes as stored)
    batches: list[tuple[int, int, bytes]] = field(default_factory=list)
    # Idempotent producers, as Kafka's ProducerStateManager keeps them (simplified): producer
    # id -> (epoch, last sequence, the last five batches as (first seq, last seq, base offset)).
    producers: dict[int, tuple[int, int, list[tuple[int, int, int]]]] = field(default_factory=dict)

    def append(self, data: bytes) -> int:
        """Append client batches (base offset 0): assign offsets, stamp the epoch; the base
        offset of the first. An idempotent producer's exact retry of one of its last five
        batches is answered with its first offset and not stored again. Raises
        CorruptRecordError / InvalidRecordError, OutOfOrderSequenceError,
        InvalidProducerEpochError."""
        base = self.log_end_offset
        pending = []
        position = 0
        for batch in read_batches(data):
            batch.validate()
            if batch.base_offset != 0:
                raise InvalidRecordError("a client batch must have base offset 0")
            duplicate = self._check_sequence(batch)
            if duplicate is not None:
                return duplicate
            raw = bytearray(data[batch.position : batch.position + batch.size_in_bytes])
            pending.append((raw, batch.last_offset_delta))
            position = batch.position + batch.size_in_bytes
        if not pending or position != len(data):
            raise CorruptRecordError("the records are not whole batches")
        next_offset = base
        for raw, delta in pending:
            stamp_batch(raw, 0, next_offset, self.leader_epoch)
            self.batches.append((next_offset, next_offset + delta, bytes(raw)))
            self._remember(raw, next_offset)
            next_offset += delta + 1
        self.log_end_offset = next_offset
        return base

    def _check_sequence(self, batch: Any) -> int | None:
        pid = batch.producer_id
        if pid < 0:
            return None
        epoch, first = batch.producer_epoch, batch.base_sequence
        last = (first + batch.last_offset_delta) % 2**31
        known = self.producers.get(pid)
        if known is None:
            if first != 0:
                raise OutOfOrderSequenceError(f"producer {pid}: first sequence {first}, not 0")
            return None
        stored_epoch, last_seq, recent = known
        if epoch < stored_epoch:
            raise InvalidProducerEpochError(f"producer {pid}: epoch {epoch} < {stored_epoch}")
        if epoch > stored_epoch:
            if first != 0:
                raise OutOfOrderSequenceError(f"producer {pid}: new epoch {epoch} at {first}")
            return None
        for seq_first, seq_last, offset in recent:
            if (seq_first, seq_last) == (first, last):
                return offset  # a retry of a stored batch: its original offset
        if first != (last_seq + 1) % 2**31:
            raise OutOfOrderSequenceError(f"producer {pid}: {first} after {last_seq}")
        return None

    def _remember(self, raw: bytearray, offset: int) -> None:
        (batch,) = list(read_batches(bytes(raw)))
        pid = batch.producer_id
        if pid < 0:
            return
        first = batch.base_sequence
        last = (first + batch.last_offset_delta) % 2**31
        known = self.producers.get(pid)
        recent = known[2] if known is not None and known[0] == batch.producer_epoch else []
        self.producers[pid] = (batch.producer_epoch, last, [*recent, (first, last, offset)][-5:])

    def records(self) -> list[Record]:
        out: list[Record] = []
        for _, _, raw in self.batches:
            for batch in read_batches(raw):
                out.extend(r for r in batch.records() if (r.offset or 0) >= self.log_start_offset)
        return out


@dataclass
class Scripted:
    """A scripted failure: an error code in the answer, or a gRPC status for the call."""

    rpc: str
    node: int | None
    tp: TopicPartition | None
    error_code: int = 0
    status: grpc.StatusCode | None = None
    hint: tuple[int, int] | None = None  # current_leader to report with the error
    after_append: bool = False  # store the records, then answer with the error (a lost answer)


class FakeCluster:
    """Nodes 1..n on loopback; use as a context manager or call start()/stop()."""

    def __init__(self, num_nodes: int = 3, *, cluster_id: str = "fake-cluster-id") -> None:
        self.cond = threading.Condition()
        self.cluster_id = cluster_id
        self.controller_id = 1
        self.topics: dict[str, list[FakePartition]] = {}
        self.topic_ids: dict[str, str] = {}
        self.configs: dict[str, dict[str, str]] = {}
        self.script: deque[Scripted] = deque()
        self.produce_delays: deque[tuple[float, int]] = deque()
        self.calls: list[tuple[str, int, Any]] = []
        self.servers: dict[int, grpc.Server] = {}
        self.ports: dict[int, int] = {}
        self.live: set[int] = set()
        self._num_nodes = num_nodes

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeCluster:
        for node_id in range(1, self._num_nodes + 1):
            server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
            servicer = _NodeServicer(self, node_id)  # type: ignore[abstract]  # no group RPCs
            pb_grpc.add_BrokerServicer_to_server(servicer, server)
            pb_grpc.add_AdminServicer_to_server(servicer, server)
            self.ports[node_id] = server.add_insecure_port("127.0.0.1:0")
            server.start()
            self.servers[node_id] = server
            self.live.add(node_id)
        return self

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop(grace=None)
        self.servers.clear()
        with self.cond:
            self.live.clear()
            self.cond.notify_all()

    def __enter__(self) -> FakeCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop_node(self, node_id: int) -> None:
        """Stop a node's server: calls to it fail UNAVAILABLE; it leaves the broker list."""
        with self.cond:
            self.live.discard(node_id)
            self.cond.notify_all()
        self.servers.pop(node_id).stop(grace=None)

    def address(self, node_id: int) -> str:
        return f"127.0.0.1:{self.ports[node_id]}"

    @property
    def bootstrap(self) -> str:
        return self.address(min(self.ports))

    # --- the model ---------------------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        *,
        leaders: list[int] | None = None,
        configs: dict[str, str] | None = None,
    ) -> None:
        with self.cond:
            self._create(name, partitions, replication_factor, leaders, configs or {})

    def _create(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        leaders: list[int] | None,
        configs: dict[str, str],
        assignments: dict[int, list[int]] | None = None,
    ) -> None:
        nodes = sorted(self.ports)
        parts = []
        count = len(assignments) if assignments else partitions
        for p in range(count):
            if assignments:
                replicas = list(assignments[p])
            else:
                first = leaders[p] if leaders else nodes[p % len(nodes)]
                start = nodes.index(first)
                replicas = [nodes[(start + i) % len(nodes)] for i in range(replication_factor)]
            parts.append(FakePartition(name, p, replicas[0], replicas, list(replicas)))
        self.topics[name] = parts
        self.topic_ids[name] = uuid.uuid4().hex[:22]
        self.configs[name] = dict(configs)

    def partition(self, tp: TopicPartition) -> FakePartition:
        return self.topics[tp.topic][tp.partition]

    def set_leader(self, tp: TopicPartition, leader: int, *, bump_epoch: bool = True) -> None:
        """Move leadership (the epoch goes up by one, as on every election)."""
        with self.cond:
            part = self.partition(tp)
            part.leader = leader
            if bump_epoch:
                part.leader_epoch += 1
            self.cond.notify_all()

    def append(self, tp: TopicPartition, batch: bytes) -> int:
        with self.cond:
            base = self.partition(tp).append(batch)
            self.cond.notify_all()
            return base

    def records(self, tp: TopicPartition) -> list[Record]:
        with self.cond:
            return self.partition(tp).records()

    def fail(
        self,
        rpc: str,
        error_code: int = 0,
        *,
        times: int = 1,
        node: int | None = None,
        tp: TopicPartition | None = None,
        status: grpc.StatusCode | None = None,
        hint: tuple[int, int] | None = None,
        after_append: bool = False,
    ) -> None:
        """The next ``times`` matching calls (per partition if ``tp``) fail as given; with
        ``after_append`` a Produce stores its records first (the answer is lost)."""
        with self.cond:
            for _ in range(times):
                self.script.append(Scripted(rpc, node, tp, error_code, status, hint, after_append))

    def delay_next_produce(self, seconds: float, error_code: int = 0) -> None:
        """The next Produce call is held ``seconds`` before it is handled (the calls after it
        are handled meanwhile: they overtake it), and then, with ``error_code``, refused with
        it for every partition (nothing stored)."""
        with self.cond:
            self.produce_delays.append((seconds, error_code))

    def calls_of(self, rpc: str) -> list[tuple[int, Any]]:
        with self.cond:
            return [(node, req) for name, node, req in self.calls if name == rpc]

    def take_scripted(self, rpc: str, node: int, tp: TopicPartition | None) -> Scripted | None:
        for item in self.script:
            if item.rpc != rpc or (item.node is not None and item.node != node):
                continue
            if item.tp is not None and item.tp != tp:
                continue
            if tp is None and item.tp is not None:
                continue
            self.script.remove(item)
            return item
        return None


def _check_leader(part: FakePartition, node: int, epoch: int) -> tuple[int, tuple[int, int] | None]:
    if part.leader != node:
        return NotLeaderOrFollowerError.code, (part.leader, part.leader_epoch)
    if epoch >= 0 and epoch < part.leader_epoch:
        return FencedLeaderEpochError.code, (part.leader, part.leader_epoch)
    if epoch > part.leader_epoch:
        return UnknownLeaderEpochError.code, None
    return 0, None


class _NodeServicer(pb_grpc.BrokerServicer, pb_grpc.AdminServicer):
    def __init__(self, cluster: FakeCluster, node_id: int) -> None:
        self.cluster = cluster
        self.node = node_id

    # the ACL calls of a cluster without an authorizer: SECURITY_DISABLED (54)
    def CreateAcls(self, request, context):  # noqa: N802
        return pb.CreateAclsResponse(results=[pb.AclResult(error_code=54)] * len(request.creations))

    def DescribeAcls(self, request, context):  # noqa: N802
        return pb.DescribeAclsResponse(error_code=54)

    def DeleteAcls(self, request, context):  # noqa: N802
        return pb.DeleteAclsResponse(
            filter_results=[pb.DeleteAclsFilterResult(error_code=54)] * len(request.filters)
        )

    def DescribeUserScramCredentials(self, request, context):  # noqa: N802
        return pb.DescribeUserScramCredentialsResponse(error_code=35)

    def AlterUserScramCredentials(self, request, context):  # noqa: N802
        return pb.AlterUserScramCredentialsResponse()

    def _enter(self, rpc: str, request: Any, context: grpc.ServicerContext) -> None:
        c = self.cluster
        with c.cond:
            c.calls.append((rpc, self.node, request))
            scripted = c.take_scripted(rpc, self.node, None)
        if scripted is not None and scripted.status is not None:
            context.abort(scripted.status, f"scripted {scripted.status.name}")
        if scripted is not None:
            c.script.appendleft(scripted)  # a request-level error code: the handler uses it

    def _request_level(self, rpc: str) -> int:
        item = self.cluster.take_scripted(rpc, self.node, None)
        return item.error_code if item is not None else 0

    # --- Broker ------------------------------------------------------------------------------

    def Metadata(self, request: pb.MetadataRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._enter("Metadata", request, context)
        c = self.cluster
        with c.cond:
            self._request_level("Metadata")
            resp = pb.MetadataResponse(cluster_id=c.cluster_id, controller_id=c.controller_id)
            for node_id in sorted(c.live):
                resp.brokers.add(node_id=node_id, host="127.0.0.1", port=c.ports[node_id])
            names = sorted(c.topics) if request.all_topics else list(request.topics)
            for name in names:
                parts = c.topics.get(name)
                if parts is None:
                    resp.topics.add(name=name, error_code=UnknownTopicOrPartitionError.code)
                    continue
                topic = resp.topics.add(name=name, topic_id=c.topic_ids[name])
                for p in parts:
                    topic.partitions.add(
                        partition=p.partition,
                        error_code=5 if p.leader < 0 else 0,
                        leader=p.leader,
                        leader_epoch=p.leader_epoch,
                        replicas=p.replicas,
                        isr=p.isr,
                    )
            return resp

    def Produce(self, request: pb.ProduceRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._enter("Produce", request, context)
        c = self.cluster
        with c.cond:
            delay, delayed_error = c.produce_delays.popleft() if c.produce_delays else (0.0, 0)
        if delay:
            threading.Event().wait(delay)  # this call only: others are answered meanwhile
        if delayed_error:
            failed = pb.ProduceResponse()
            for data in request.partitions:
                failed.partitions.add(
                    topic=data.topic,
                    partition=data.partition,
                    base_offset=-1,
                    error_code=delayed_error,
                    error_message="scripted after a delay",
                )
            return failed
        resp = pb.ProduceResponse()
        with c.cond:
            self._request_level("Produce")
            for data in request.partitions:
                tp = TopicPartition(data.topic, data.partition)
                out = resp.partitions.add(
                    topic=data.topic, partition=data.partition, base_offset=-1
                )
                out.log_append_time_ms = -1
                scripted = c.take_scripted("Produce", self.node, tp)
                if scripted is not None:
                    if scripted.after_append:
                        c.topics[data.topic][data.partition].append(data.records)
                    out.error_code = scripted.error_code
                    out.error_message = "scripted"
                    continue
                if request.acks not in (-1, 0, 1):
                    out.error_code = InvalidRequiredAcksError.code
                    continue
                parts = c.topics.get(data.topic)
                if parts is None or not 0 <= data.partition < len(parts):
                    out.error_code = UnknownTopicOrPartitionError.code
                    continue
                part = parts[data.partition]
                code, _ = _check_leader(part, self.node, data.current_leader_epoch)
                if code:
                    out.error_code = code
                    continue
                try:
                    out.base_offset = part.append(data.records)
                except (
                    CorruptRecordError,
                    InvalidRecordError,
                    OutOfOrderSequenceError,
                    InvalidProducerEpochError,
                ) as exc:
                    out.error_code = exc.code
                    out.error_message = exc.message
                    continue
                out.log_start_offset = part.log_start_offset
            c.cond.notify_all()
        if request.acks == 0:
            return pb.ProduceResponse()
        return resp

    def Fetch(self, request: pb.FetchRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._enter("Fetch", request, context)
        c = self.cluster
        deadline = _CLOCK.monotonic_ms() + request.max_wait_ms
        with c.cond:
            code = self._request_level("Fetch")
            if code:
                return pb.FetchResponse(error_code=code)
            scripted = {}
            for fp in request.partitions:
                tp = TopicPartition(fp.topic, fp.partition)
                item = c.take_scripted("Fetch", self.node, tp)
                if item is not None:
                    scripted[tp] = item
            while True:
                resp, size, errors = self._fetch_answer(request, scripted)
                remaining = deadline - _CLOCK.monotonic_ms()
                if size >= max(request.min_bytes, 1) or errors or remaining <= 0:
                    return resp
                if self.node not in c.live:
                    context.abort(grpc.StatusCode.UNAVAILABLE, "node stopped")
                c.cond.wait(remaining / 1000)

    def _fetch_answer(
        self, request: pb.FetchRequest, scripted: dict[TopicPartition, Scripted]
    ) -> tuple[pb.FetchResponse, int, bool]:
        c = self.cluster
        resp = pb.FetchResponse()
        size = 0
        errors = False
        for fp in request.partitions:
            tp = TopicPartition(fp.topic, fp.partition)
            out = resp.partitions.add(topic=fp.topic, partition=fp.partition)
            item = scripted.get(tp)
            if item is not None:
                errors = True
                out.error_code = item.error_code
                if item.hint is not None:
                    out.current_leader.leader_id, out.current_leader.leader_epoch = item.hint
                continue
            parts = c.topics.get(fp.topic)
            if parts is None or not 0 <= fp.partition < len(parts):
                out.error_code = UnknownTopicOrPartitionError.code
                errors = True
                continue
            part = parts[fp.partition]
            code, hint = _check_leader(part, self.node, fp.current_leader_epoch)
            if code:
                errors = True
                out.error_code = code
                if hint is not None:
                    out.current_leader.leader_id, out.current_leader.leader_epoch = hint
                continue
            out.high_watermark = part.log_end_offset
            out.log_start_offset = part.log_start_offset
            out.log_end_offset = part.log_end_offset
            if not part.log_start_offset <= fp.fetch_offset <= part.log_end_offset:
                out.error_code = OffsetOutOfRangeError.code
                errors = True
                continue
            chunks: list[bytes] = []
            taken = 0
            for _base, last, raw in part.batches:
                if last < fp.fetch_offset:
                    continue
                if chunks and taken + len(raw) > fp.partition_max_bytes:
                    break
                chunks.append(raw)
                taken += len(raw)
            out.records = b"".join(chunks)
            size += taken
        return resp, size, errors

    def ListOffsets(self, request: pb.ListOffsetsRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._enter("ListOffsets", request, context)
        c = self.cluster
        resp = pb.ListOffsetsResponse()
        with c.cond:
            for q in request.partitions:
                tp = TopicPartition(q.topic, q.partition)
                out = resp.partitions.add(
                    topic=q.topic, partition=q.partition, timestamp=-1, offset=-1, leader_epoch=-1
                )
                item = c.take_scripted("ListOffsets", self.node, tp)
                if item is not None:
                    out.error_code = item.error_code
                    continue
                parts = c.topics.get(q.topic)
                if parts is None or not 0 <= q.partition < len(parts):
                    out.error_code = UnknownTopicOrPartitionError.code
                    continue
                part = parts[q.partition]
                code, _ = _check_leader(part, self.node, q.current_leader_epoch)
                if code:
                    out.error_code = code
                    continue
                if q.timestamp == -2:
                    out.offset = part.log_start_offset
                elif q.timestamp == -1:
                    out.offset = part.log_end_offset
                elif q.timestamp == -3:  # the first record with the largest timestamp
                    stamped = [
                        (r.timestamp, -(r.offset or 0))
                        for r in part.records()
                        if r.timestamp is not None
                    ]
                    if stamped:
                        out.timestamp, offset = max(stamped)
                        out.offset = -offset
                        out.leader_epoch = part.leader_epoch
                else:
                    for record in part.records():
                        if record.timestamp is not None and record.timestamp >= q.timestamp:
                            out.offset = record.offset or 0
                            out.timestamp = record.timestamp
                            out.leader_epoch = part.leader_epoch
                            break
        return resp

    def DeleteRecords(self, request: pb.DeleteRecordsRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._enter("DeleteRecords", request, context)
        c = self.cluster
        resp = pb.DeleteRecordsResponse()
        with c.cond:
            for q in request.partitions:
                out = resp.partitions.add(topic=q.topic, partition=q.partition, low_watermark=-1)
                item = c.take_scripted(
                    "DeleteRecords", self.node, TopicPartition(q.topic, q.partition)
                )
                if item is not None:
                    out.error_code = item.error_code
                    continue
                parts = c.topics.get(q.topic)
                if parts is None or not 0 <= q.partition < len(parts):
                    out.error_code = UnknownTopicOrPartitionError.code
                    continue
                part = parts[q.partition]
                if part.leader != self.node:
                    out.error_code = NotLeaderOrFollowerError.code
                    continue
                offset = part.log_end_offset if q.offset == -1 else q.offset
                if offset > part.log_end_offset:
                    out.error_code = OffsetOutOfRangeError.code
                    continue
                part.log_start_offset = max(part.log_start_offset, offset)
                out.low_watermark = part.log_start_offset
        return resp

    # --- Admin -------------------------------------------------------------------------------

    def CreateTopics(self, request: pb.CreateTopicsRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._enter("CreateTopics", request, context)
        c = self.cluster
        resp = pb.CreateTopicsResponse()
        with c.cond:
            for t in request.topics:
                out = resp.topics.add(name=t.name)
                code, message = self._check_new_topic(t)
                if code:
                    out.error_code, out.error_message = code, message
                    continue
                if not request.validate_only:
                    assignments = {a.partition: list(a.broker_ids) for a in t.assignments}
                    c._create(
                        t.name,
                        t.num_partitions,
                        t.replication_factor,
                        None,
                        dict(t.configs),
                        assignments or None,
                    )
        return resp

    def _check_new_topic(self, t: pb.CreatableTopic) -> tuple[int, str]:
        c = self.cluster
        if not t.name or any(not (ch.isalnum() or ch in "._-") for ch in t.name):
            return InvalidTopicError.code, f"Topic name {t.name!r} is illegal"
        if t.name in c.topics:
            return TopicAlreadyExistsError.code, f"Topic '{t.name}' already exists."
        if not t.assignments:
            if t.num_partitions < 1:
                return InvalidPartitionsError.code, "Number of partitions must be larger than 0."
            if t.replication_factor < 1:
                return (
                    InvalidReplicationFactorError.code,
                    "Replication factor must be larger than 0.",
                )
            if t.replication_factor > len(c.live):
                return (
                    InvalidReplicationFactorError.code,
                    f"Replication factor: {t.replication_factor} larger than available "
                    f"brokers: {len(c.live)}.",
                )
        for key in t.configs:
            if key not in DEFAULT_CONFIGS:
                return InvalidConfigError.code, f"Unknown topic config name: {key}"
        return 0, ""

    def DeleteTopics(self, request: pb.DeleteTopicsRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._enter("DeleteTopics", request, context)
        c = self.cluster
        resp = pb.DeleteTopicsResponse()
        with c.cond:
            for name in request.names:
                out = resp.topics.add(name=name)
                if name not in c.topics:
                    out.error_code = UnknownTopicOrPartitionError.code
                    out.error_message = "This server does not host this topic-partition."
                    continue
                del c.topics[name]
                del c.configs[name]
        return resp

    def DescribeConfigs(  # noqa: N802
        self, request: pb.DescribeConfigsRequest, context: grpc.ServicerContext
    ) -> Any:
        self._enter("DescribeConfigs", request, context)
        c = self.cluster
        resp = pb.DescribeConfigsResponse()
        with c.cond:
            for name in request.topics:
                out = resp.topics.add(name=name)
                if name not in c.topics:
                    out.error_code = UnknownTopicOrPartitionError.code
                    continue
                overrides = c.configs[name]
                for key, default in sorted(DEFAULT_CONFIGS.items()):
                    out.entries.add(
                        name=key, value=overrides.get(key, default), is_default=key not in overrides
                    )
        return resp

    def AlterConfigs(self, request: pb.AlterConfigsRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._enter("AlterConfigs", request, context)
        c = self.cluster
        resp = pb.AlterConfigsResponse()
        with c.cond:
            for t in request.topics:
                out = resp.topics.add(name=t.name)
                if t.name not in c.topics:
                    out.error_code = UnknownTopicOrPartitionError.code
                    continue
                bad = [k for k in [*t.set, *t.delete] if k not in DEFAULT_CONFIGS]
                if bad:
                    out.error_code = InvalidConfigError.code
                    out.error_message = f"Unknown topic config name: {bad[0]}"
                    continue
                if not request.validate_only:
                    c.configs[t.name].update(t.set)
                    for key in t.delete:
                        c.configs[t.name].pop(key, None)
        return resp

    def ElectLeaders(self, request: pb.ElectLeadersRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._enter("ElectLeaders", request, context)
        c = self.cluster
        resp = pb.ElectLeadersResponse()
        with c.cond:
            resp.error_code = self._request_level("ElectLeaders")
            if resp.error_code:
                return resp
            wanted = [TopicPartition(p.topic, p.partition) for p in request.partitions] or [
                TopicPartition(p.topic, p.partition) for parts in c.topics.values() for p in parts
            ]
            for tp in wanted:
                out = resp.partitions.add(topic=tp.topic, partition=tp.partition)
                parts = c.topics.get(tp.topic)
                if parts is None or not 0 <= tp.partition < len(parts):
                    out.error_code = UnknownTopicOrPartitionError.code
                    continue
                part = parts[tp.partition]
                if part.leader == part.replicas[0]:
                    out.error_code = ElectionNotNeededError.code
                    continue
                part.leader = part.replicas[0]
                part.leader_epoch += 1
        return resp

    def AlterPartitionReassignments(  # noqa: N802
        self, request: pb.AlterPartitionReassignmentsRequest, context: grpc.ServicerContext
    ) -> Any:
        self._enter("AlterPartitionReassignments", request, context)
        c = self.cluster
        resp = pb.AlterPartitionReassignmentsResponse()
        with c.cond:
            for r in request.partitions:
                out = resp.partitions.add(topic=r.topic, partition=r.partition)
                parts = c.topics.get(r.topic)
                if parts is None or not 0 <= r.partition < len(parts):
                    out.error_code = UnknownTopicOrPartitionError.code
                    continue
                if r.cancel:
                    out.error_code = NoReassignmentInProgressError.code
                    continue
                part = parts[r.partition]
                part.replicas = list(r.replicas)
                part.isr = list(r.replicas)
        return resp

    def ListPartitionReassignments(  # noqa: N802
        self, request: pb.ListPartitionReassignmentsRequest, context: grpc.ServicerContext
    ) -> Any:
        self._enter("ListPartitionReassignments", request, context)
        resp = pb.ListPartitionReassignmentsResponse()
        resp.error_code = self._request_level("ListPartitionReassignments")
        if not resp.error_code:
            resp.reassignments.add(
                topic="moving",
                partition=0,
                replicas=[1, 2, 3],
                adding_replicas=[3],
                removing_replicas=[1],
            )
        return resp

    def InitProducerId(  # noqa: N802
        self, request: pb.InitProducerIdRequest, context: grpc.ServicerContext
    ) -> Any:
        """A new producer id per call: ``node * 1000 + n`` (a scripted error code wins)."""
        self._enter("InitProducerId", request, context)
        code = self._request_level("InitProducerId")
        if code:
            return pb.InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)
        with self.cluster.cond:
            calls = sum(1 for rpc, node, _ in self.cluster.calls if rpc == "InitProducerId")
        return pb.InitProducerIdResponse(producer_id=self.node * 1000 + calls, producer_epoch=0)

    def CreatePartitions(  # noqa: N802
        self, request: pb.CreatePartitionsRequest, context: grpc.ServicerContext
    ) -> Any:
        self._enter("CreatePartitions", request, context)
        c = self.cluster
        resp = pb.CreatePartitionsResponse()
        with c.cond:
            nodes = sorted(c.ports)
            for t in request.topics:
                out = resp.topics.add(name=t.name)
                parts = c.topics.get(t.name)
                if parts is None:
                    out.error_code = UnknownTopicOrPartitionError.code
                    continue
                if t.count <= len(parts):
                    out.error_code = InvalidPartitionsError.code
                    out.error_message = f"Topic already has {len(parts)} partition(s)."
                    continue
                if request.validate_only:
                    continue
                rf = len(parts[0].replicas)
                for p in range(len(parts), t.count):
                    replicas = [nodes[(p + i) % len(nodes)] for i in range(rf)]
                    parts.append(FakePartition(t.name, p, replicas[0], replicas, list(replicas)))
        return resp


def running_cluster(num_nodes: int = 3) -> Iterator[FakeCluster]:
    """For fixtures: a started cluster, stopped afterwards."""
    cluster = FakeCluster(num_nodes).start()
    try:
        yield cluster
    finally:
        cluster.stop()
