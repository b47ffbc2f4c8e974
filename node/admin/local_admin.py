"""What a node answers of itself (Kafka's broker-local admin answers): the cluster as its
metadata cache sees it (DescribeCluster), its log directories (DescribeLogDirs) and the
producers in its replicas' producer state (DescribeProducers). Thread-safe (reads only).
"""

from __future__ import annotations

import shutil
from collections.abc import Collection, Sequence
from pathlib import Path

from node.admin.requests import (
    ClusterBroker,
    DescribeClusterResult,
    DescribeLogDirsResult,
    LogDirDescription,
    LogDirPartition,
    LogDirTopic,
    PartitionProducers,
    ProducerState,
)
from node.admin.views import BrokerView, ClusterView, LocalLogs
from odradek.errors import (
    InvalidTopicError,
    NotLeaderOrFollowerError,
    OdradekError,
    UnknownTopicOrPartitionError,
)
from storage.log_manager import validate_topic_name

__all__ = ["LocalAdmin"]


def _error(e: OdradekError) -> tuple[int, str]:
    return e.code, e.message


class LocalAdmin:
    """This node's own answers. ``metadata`` and ``logs`` ``None``: the calls that need them
    raise ``ValueError``."""

    def __init__(self, node_id: int, metadata: ClusterView | None, logs: LocalLogs | None) -> None:
        self.node_id = node_id
        self._metadata = metadata
        self._logs = logs

    def _cluster_view(self) -> ClusterView:
        if self._metadata is None:
            raise ValueError("this admin manager has no metadata cache")
        return self._metadata

    def _local_logs(self) -> LocalLogs:
        if self._logs is None:
            raise ValueError("this admin manager has no log manager")
        return self._logs

    def describe_cluster(self, listener_name: str | None = None) -> DescribeClusterResult:
        """The cluster id, the active controller's id (-1 when unknown) and the live brokers,
        each by its endpoint on ``listener_name`` (brokers without that listener left out), as
        this node's metadata cache knows them (Kafka's ``handleDescribeCluster``)."""
        snapshot = self._cluster_view().snapshot
        brokers = []
        for node_id, broker in sorted(snapshot.brokers.items()):
            endpoint = _on_listener(broker, listener_name)
            if endpoint is not None:
                host, port = endpoint
                brokers.append(ClusterBroker(node_id, host, port, broker.rack or None))
        return DescribeClusterResult(
            cluster_id=snapshot.cluster_id,
            controller_id=snapshot.controller_id,
            brokers=tuple(brokers),
        )

    def describe_log_dirs(
        self, partitions: Collection[tuple[str, int]] | None = None
    ) -> DescribeLogDirsResult:
        """Every log directory of this node with the size of each of its partitions (those in
        ``partitions``, or all when ``None``): offset lag 0 and never a future replica (odradek
        has no intra-broker moves), and the file system's total and usable bytes (Kafka's
        ``ReplicaManager.describeLogDirs``)."""
        logs = self._local_logs()
        wanted = None if partitions is None else set(partitions)
        by_dir: dict[Path, dict[str, list[LogDirPartition]]] = {d: {} for d in logs.log_dirs}
        for (topic, partition), log in sorted(logs.all_logs().items()):
            if wanted is not None and (topic, partition) not in wanted:
                continue
            topics = by_dir.setdefault(log.dir.parent, {})
            topics.setdefault(topic, []).append(LogDirPartition(partition, log.size))
        out = []
        for directory, topics in by_dir.items():
            try:
                usage = shutil.disk_usage(directory)
                total, usable = int(usage.total), int(usage.free)
            except OSError:
                total = usable = -1
            out.append(
                LogDirDescription(
                    log_dir=str(directory),
                    topics=tuple(LogDirTopic(t, tuple(ps)) for t, ps in sorted(topics.items())),
                    total_bytes=total,
                    usable_bytes=usable,
                )
            )
        return DescribeLogDirsResult(results=tuple(out))

    def describe_producers(self, partitions: Sequence[tuple[str, int]]) -> list[PartitionProducers]:
        """Per partition the active idempotent producers in this node's replica's producer
        state (Kafka's ``ReplicaManager.activeProducerState``: any local replica answers).
        INVALID_TOPIC_EXCEPTION for an illegal name, UNKNOWN_TOPIC_OR_PARTITION for a
        partition the cluster does not have, NOT_LEADER_OR_FOLLOWER for one this node does not
        host."""
        logs = self._local_logs()
        known = self._cluster_view().snapshot.partitions
        out = []
        for topic, partition in partitions:
            try:
                validate_topic_name(topic)
            except InvalidTopicError as e:
                out.append(PartitionProducers(topic, partition, *_error(e)))
                continue
            log = logs.get_log(topic, partition)
            if log is None:
                if (topic, partition) in known:
                    error: OdradekError = NotLeaderOrFollowerError(
                        f"node {self.node_id} hosts no replica of {topic}-{partition}"
                    )
                else:
                    error = UnknownTopicOrPartitionError(f"{topic}-{partition} does not exist")
                out.append(PartitionProducers(topic, partition, *_error(error)))
                continue
            producers = tuple(
                ProducerState(
                    producer_id=pid,
                    producer_epoch=entry.producer_epoch,
                    last_sequence=entry.last_seq,
                    last_timestamp=entry.last_timestamp,
                    coordinator_epoch=entry.coordinator_epoch,
                    current_txn_start_offset=entry.current_txn_first_offset,
                )
                for pid, entry in sorted(log.producer_state().items())
            )
            out.append(PartitionProducers(topic, partition, active_producers=producers))
        return out


def _on_listener(broker: BrokerView, listener_name: str | None) -> tuple[str, int] | None:
    """Where a client of ``listener_name`` reaches ``broker``; ``None`` if it has no such
    listener. A broker registered without endpoints (one PLAINTEXT listener) is reached at its
    host and port."""
    endpoints = list(broker.endpoints)
    if listener_name is None or not endpoints:
        return broker.host, broker.port
    for e in endpoints:
        if e.listener == listener_name:
            return e.host, e.port
    return None
