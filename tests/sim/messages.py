"""The messages the simulated network carries, one frozen dataclass per request or response.

They carry the same fields as the ``odradek.v1`` RPCs they stand for (FetchRequest,
ProduceRequest, AlterPartitionRequest, LeaderAndIsrRequest, UpdateMetadataRequest), as plain
values: the simulation exercises the replication rules, not the wire codec. Errors travel as
Kafka error codes (0 = none). Every request carries an id so the sender can match the answer to
the call it made and drop answers to calls it has given up on, as an RPC client does.
"""

from __future__ import annotations

from dataclasses import dataclass

from node.core.partition import IsrChange, LeaderAndIsrState


@dataclass(frozen=True, slots=True)
class FetchRequest:
    fetch_id: int
    replica_id: int
    broker_epoch: int
    fetch_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class FetchResponse:
    fetch_id: int
    error_code: int
    records: bytes = b""
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    diverging_epoch: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class ProduceRequest:
    request_id: int
    acks: int
    records: bytes
    values: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class ProduceResponse:
    request_id: int
    error_code: int
    base_offset: int = -1


@dataclass(frozen=True, slots=True)
class ConsumerFetchRequest:
    request_id: int
    fetch_offset: int
    max_bytes: int


@dataclass(frozen=True, slots=True)
class ConsumerFetchResponse:
    request_id: int
    error_code: int
    records: bytes = b""
    high_watermark: int = -1


@dataclass(frozen=True, slots=True)
class AlterPartitionRequest:
    request_id: int
    broker_id: int
    broker_epoch: int
    change: IsrChange


@dataclass(frozen=True, slots=True)
class AlterPartitionResponse:
    request_id: int
    error_code: int
    isr: tuple[int, ...] = ()
    leader_epoch: int = -1
    partition_epoch: int = -1


@dataclass(frozen=True, slots=True)
class LeaderAndIsrRequest:
    request_id: int
    broker_epoch: int
    controller_epoch: int
    state: LeaderAndIsrState
    metadata_version: int
    live_brokers: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LeaderAndIsrResponse:
    request_id: int
    error_code: int


@dataclass(frozen=True, slots=True)
class UpdateMetadataRequest:
    version: int
    live_brokers: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class UpdateMetadataResponse:
    version: int


Message = (
    FetchRequest
    | FetchResponse
    | ProduceRequest
    | ProduceResponse
    | ConsumerFetchRequest
    | ConsumerFetchResponse
    | AlterPartitionRequest
    | AlterPartitionResponse
    | LeaderAndIsrRequest
    | LeaderAndIsrResponse
    | UpdateMetadataRequest
    | UpdateMetadataResponse
)


def describe(message: Message) -> str:
    """A short, deterministic description for the event trace."""
    match message:
        case FetchRequest():
            return (
                f"Fetch#{message.fetch_id} off={message.fetch_offset} "
                f"ep={message.current_leader_epoch} last_ep={message.last_fetched_epoch}"
            )
        case FetchResponse():
            if message.error_code:
                return f"FetchResp#{message.fetch_id} err={message.error_code}"
            if message.diverging_epoch is not None:
                return f"FetchResp#{message.fetch_id} diverging={message.diverging_epoch}"
            return (
                f"FetchResp#{message.fetch_id} bytes={len(message.records)} "
                f"hw={message.high_watermark} leo={message.log_end_offset}"
            )
        case ProduceRequest():
            return f"Produce#{message.request_id} acks={message.acks} n={len(message.values)}"
        case ProduceResponse():
            return (
                f"ProduceResp#{message.request_id} err={message.error_code} "
                f"base={message.base_offset}"
            )
        case ConsumerFetchRequest():
            return f"ConsumerFetch#{message.request_id} off={message.fetch_offset}"
        case ConsumerFetchResponse():
            return (
                f"ConsumerFetchResp#{message.request_id} err={message.error_code} "
                f"bytes={len(message.records)} hw={message.high_watermark}"
            )
        case AlterPartitionRequest():
            c = message.change
            return (
                f"AlterPartition#{message.request_id} isr={list(c.new_isr)} "
                f"ep={c.leader_epoch} pe={c.partition_epoch}"
            )
        case AlterPartitionResponse():
            return (
                f"AlterPartitionResp#{message.request_id} err={message.error_code} "
                f"isr={list(message.isr)} ep={message.leader_epoch} pe={message.partition_epoch}"
            )
        case LeaderAndIsrRequest():
            s = message.state
            return (
                f"LeaderAndIsr#{message.request_id} leader={s.leader} ep={s.leader_epoch} "
                f"isr={list(s.isr)} pe={s.partition_epoch} be={message.broker_epoch}"
            )
        case LeaderAndIsrResponse():
            return f"LeaderAndIsrResp#{message.request_id} err={message.error_code}"
        case UpdateMetadataRequest():
            return f"UpdateMetadata v{message.version} live={list(message.live_brokers)}"
        case UpdateMetadataResponse():
            return f"UpdateMetadataResp v{message.version}"
