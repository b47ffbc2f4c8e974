"""The core's requests and answers, as plain values: what a front door hands the core and gets
back (issue 24).

Each front door decodes its wire type (gRPC's protobuf messages in :mod:`node.grpc_door`,
Kafka's binary protocol in :mod:`node.kafka_door`) into these values, calls the core
(:class:`~node.core.replica_manager.ReplicaManager`,
:class:`~node.core.metadata_cache.MetadataCache`,
:func:`~node.coordinator.producer_id_manager.init_producer_id`) and encodes the answer. Names
are Kafka's (``KafkaApis`` and the request/response JSON schemas in
``clients/src/main/resources/common/message``), flattened: a partition names its ``topic`` and
``partition`` (Kafka nests partitions under topics; a door groups them). Error codes are
Kafka's, as :mod:`odradek.errors` numbers them (``0``: none); an ``error_message`` is a sentence
for people, never a Python exception's text.

"Not known" is ``-1`` throughout, as in Kafka's responses (``-1`` offsets, epochs, timestamps).

Immutable values (frozen dataclasses); thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from odradek.errors import RecordError
from storage.file_records import FileSlice

__all__ = [
    "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "Broker",
    "BrokerEndPoint",
    "DeleteRecordsPartition",
    "DeleteRecordsResult",
    "EpochEndOffset",
    "FetchPartition",
    "FetchResult",
    "FileSlice",
    "InitProducerIdResult",
    "LeaderAndIsrPartition",
    "LeaderAndIsrRequest",
    "LeaderIdAndEpoch",
    "ListOffsetsPartition",
    "ListOffsetsResult",
    "MetadataResult",
    "OffsetForLeaderEpochPartition",
    "OffsetForLeaderEpochResult",
    "PartitionError",
    "PartitionMetadata",
    "ProducePartition",
    "ProduceResult",
    "Records",
    "StopReplicaPartition",
    "StopReplicaRequest",
    "TopicMetadata",
    "UpdateMetadataRequest",
    "records_bytes",
]

READ_UNCOMMITTED = 0
"""Kafka's ``IsolationLevel.READ_UNCOMMITTED``: a consumer reads up to the high watermark."""
READ_COMMITTED = 1
"""Kafka's ``IsolationLevel.READ_COMMITTED``: up to the last stable offset (without
transactions, the high watermark: the two answer alike here)."""


# -- records -----------------------------------------------------------------------------------


Records = bytes | memoryview | FileSlice
"""Record batches (v2) as a fetch returns them: bytes, a view of bytes, or a file slice. May end
in a partial batch (the client drops it, as Kafka's do)."""


def records_bytes(records: Records) -> bytes:
    """``records`` as bytes (a copy for a view or a slice)."""
    if isinstance(records, bytes):
        return records
    if isinstance(records, FileSlice):
        return records.read()
    return bytes(records)


# -- Produce (Kafka's ProduceRequest / ProduceResponse) ----------------------------------------


@dataclass(frozen=True, slots=True)
class ProducePartition:
    """One partition's data of a produce request (``PartitionProduceData``)."""

    topic: str
    partition: int
    records: bytes
    """Record batches (v2) with base offset 0, as Kafka's producers send them."""
    current_leader_epoch: int = -1
    """The leader epoch the producer knows (-1: not checked)."""
    from_coordinator: bool = False
    """The node's own group coordinator appends it (a transactional offset commit): its
    producer's epoch is checked, not its sequence (storage's ``AppendOrigin.COORDINATOR``)."""


@dataclass(frozen=True, slots=True)
class ProduceResult:
    """One partition's answer to a produce (``PartitionProduceResponse``)."""

    topic: str
    partition: int
    error_code: int = 0
    base_offset: int = -1
    """The first offset assigned; -1 on error."""
    log_append_time_ms: int = -1
    """-1 unless the topic uses LogAppendTime."""
    log_start_offset: int = -1
    error_message: str = ""
    record_errors: tuple[RecordError, ...] = ()
    """The records that made the batch fail, by their index in it (KIP-467: INVALID_RECORD,
    INVALID_TIMESTAMP); empty otherwise."""
    current_leader: LeaderIdAndEpoch | None = None
    """Set with NOT_LEADER_OR_FOLLOWER: the partition's leader as this node knows it (KIP-951;
    :mod:`node.apis.current_leader`)."""


# -- Fetch (Kafka's FetchRequest / FetchResponse) ----------------------------------------------


@dataclass(frozen=True, slots=True)
class FetchPartition:
    """One partition of a fetch request (``FetchPartition``)."""

    topic: str
    partition: int
    fetch_offset: int
    partition_max_bytes: int = 0
    """At most this many bytes for the partition (0: only the request's ``max_bytes``); the
    first batch is returned whole however large (Kafka's KIP-74)."""
    current_leader_epoch: int = -1
    """The leader epoch the fetcher knows (-1: not checked)."""
    last_fetched_epoch: int = -1
    """The newest epoch in a follower's log, or of the last record a consumer fetched (Fetch
    v12+); -1: none. A log that diverged from it answers its ``diverging_epoch``."""
    log_start_offset: int = -1
    """Followers: their log start offset (-1: not known)."""


@dataclass(frozen=True, slots=True)
class EpochEndOffset:
    """Where a follower's log diverges from the leader's: the last epoch they share and its
    end offset (``FetchResponse.DivergingEpoch``)."""

    epoch: int
    end_offset: int


@dataclass(frozen=True, slots=True)
class LeaderIdAndEpoch:
    """The partition's leader as this node knows it (``CurrentLeader``); -1 when unknown."""

    leader_id: int = -1
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class FetchResult:
    """One partition's answer to a fetch (``PartitionData``)."""

    topic: str
    partition: int
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    """The first offset of the oldest open transaction, else the high watermark."""
    log_start_offset: int = -1
    log_end_offset: int = -1
    """The leader's log end offset (for lag reporting)."""
    records: Records = b""
    diverging_epoch: EpochEndOffset | None = None
    """Set when the follower must truncate first."""
    current_leader: LeaderIdAndEpoch | None = None
    """Set with an error when this node knows the partition's leader (NOT_LEADER_OR_FOLLOWER
    and FENCED_LEADER_EPOCH: KIP-951, :mod:`node.apis.current_leader`)."""
    error_message: str = ""
    aborted_transactions: tuple[tuple[int, int], ...] | None = None
    """A read_committed fetch's aborted transactions overlapping what it may read: (producer
    id, first offset); ``None`` for read_uncommitted (Kafka's ``AbortedTransactions``)."""


# -- ListOffsets -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListOffsetsPartition:
    """One partition of a ListOffsets request (``ListOffsetsPartition``)."""

    topic: str
    partition: int
    timestamp: int
    """-1 latest, -2 earliest, -3 the record with the largest timestamp, -5 the earliest
    local offset, or a time in ms (the first record at or after it)."""
    current_leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ListOffsetsResult:
    """One partition's answer (``ListOffsetsPartitionResponse``)."""

    topic: str
    partition: int
    error_code: int = 0
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1
    error_message: str = ""


# -- DeleteRecords -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeleteRecordsPartition:
    """One partition of a DeleteRecords request: delete the records below ``offset`` (-1: the
    high watermark)."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class DeleteRecordsResult:
    """One partition's answer: its log start offset after the call (-1 on error)."""

    topic: str
    partition: int
    error_code: int = 0
    low_watermark: int = -1
    error_message: str = ""


# -- OffsetForLeaderEpoch (followers) ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetForLeaderEpochPartition:
    """The end offset of ``leader_epoch`` on this leader, asked by a follower."""

    topic: str
    partition: int
    leader_epoch: int
    current_leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class OffsetForLeaderEpochResult:
    """The largest epoch ≤ the asked one and its end offset (-1, -1 when undefined)."""

    topic: str
    partition: int
    error_code: int = 0
    leader_epoch: int = -1
    end_offset: int = -1


# -- InitProducerId ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InitProducerIdResult:
    """A new producer id and epoch (-1, -1 on error)."""

    error_code: int = 0
    producer_id: int = -1
    producer_epoch: int = -1
    error_message: str = ""


# -- the cluster as this node knows it (Metadata, UpdateMetadata) ------------------------------


@dataclass(frozen=True, slots=True)
class BrokerEndPoint:
    """One listener of a broker, as registered (``listener``: its name, e.g. ``CLIENT``)."""

    listener: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"


@dataclass(frozen=True, slots=True)
class Broker:
    """A live broker: its registered host and port, rack ("" when none) and listeners (none
    for a broker registered with one PLAINTEXT listener at ``host:port``)."""

    node_id: int
    host: str
    port: int
    rack: str = ""
    endpoints: tuple[BrokerEndPoint, ...] = ()

    def on_listener(self, listener_name: str | None) -> Broker | None:
        """This broker as a client of ``listener_name`` reaches it, without its other
        listeners; ``None`` if it has no such listener. ``None`` (no listener given) or a
        broker registered without endpoints: its host and port."""
        if listener_name is None or not self.endpoints:
            return Broker(self.node_id, self.host, self.port, self.rack)
        for e in self.endpoints:
            if e.listener == listener_name:
                return Broker(self.node_id, e.host, e.port, self.rack)
        return None


@dataclass(frozen=True, slots=True)
class LeaderAndIsrPartition:
    """The controller's state of one partition (Kafka's ``LeaderAndIsrPartitionState`` and
    ``UpdateMetadataPartitionState``)."""

    topic: str
    partition: int
    controller_epoch: int = 0
    """The controller epoch that last wrote this state."""
    leader: int = -1
    leader_epoch: int = 0
    isr: tuple[int, ...] = ()
    partition_epoch: int = 0
    """The state znode's version."""
    replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()
    topic_id: str = ""


@dataclass(frozen=True, slots=True)
class LeaderAndIsrRequest:
    """The controller's LeaderAndIsr: lead or follow these partitions."""

    controller_id: int
    controller_epoch: int
    broker_epoch: int = -1
    """This node's broker epoch as the controller knows it (-1: not checked)."""
    partition_states: tuple[LeaderAndIsrPartition, ...] = ()
    live_leaders: tuple[Broker, ...] = ()
    topic_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Topic config overrides (Kafka names), by topic."""


@dataclass(frozen=True, slots=True)
class StopReplicaPartition:
    topic: str
    partition: int
    delete_partition: bool = False
    leader_epoch: int = -1
    """The controller's leader epoch of the partition (KIP-570): a request older than what the
    replica holds is refused; -1 (none) and -2 (during a topic's deletion) always apply."""


@dataclass(frozen=True, slots=True)
class StopReplicaRequest:
    """The controller's StopReplica: stop fetching and serving (and delete the logs)."""

    controller_id: int
    controller_epoch: int
    broker_epoch: int = -1
    partitions: tuple[StopReplicaPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class UpdateMetadataRequest:
    """The controller's full snapshot of the cluster (UpdateMetadata)."""

    controller_id: int
    controller_epoch: int
    broker_epoch: int = -1
    cluster_id: str = ""
    live_brokers: tuple[Broker, ...] = ()
    partition_states: tuple[LeaderAndIsrPartition, ...] = ()
    topic_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PartitionError:
    """One partition's outcome of a controller request (-1 or 0 codes as Kafka's)."""

    topic: str
    partition: int
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """One partition of a Metadata answer (``MetadataResponsePartition``)."""

    partition: int
    error_code: int = 0
    """LEADER_NOT_AVAILABLE (5) without a leader; LISTENER_NOT_FOUND (72) when the leader has
    no endpoint on the request's listener."""
    leader: int = -1
    leader_epoch: int = -1
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """One topic of a Metadata answer (``MetadataResponseTopic``); UNKNOWN_TOPIC_OR_PARTITION
    (3) for an asked-for topic that does not exist, TOPIC_AUTHORIZATION_FAILED (29) for one
    the caller may not describe."""

    name: str
    error_code: int = 0
    partitions: tuple[PartitionMetadata, ...] = ()
    topic_id: str = ""


@dataclass(frozen=True, slots=True)
class MetadataResult:
    """A Metadata answer: the live brokers (on the request's listener), the active controller
    (-1: none), the cluster id and the topics."""

    brokers: tuple[Broker, ...] = ()
    controller_id: int = -1
    cluster_id: str = ""
    topics: tuple[TopicMetadata, ...] = ()
