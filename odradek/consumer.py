"""``odradek.Consumer``: read records from assigned partitions, from any position.

Kafka's consumer with manual assignment only (no consumer groups, no committed offsets)::

    with odradek.Consumer("127.0.0.1:9092") as consumer:
        consumer.assign([odradek.TopicPartition("events", 0)])
        consumer.seek_to_beginning()
        for record in consumer.poll(timeout_ms=1000):
            print(record.offset, record.value)

Semantics (``docs/sdk.md`` has the long form):

* A partition's *position* is the offset of the next record :meth:`Consumer.poll` returns.
  It starts unset and is then chosen by ``auto_offset_reset`` (``"earliest"``, ``"latest"``,
  or ``"none"``: raise :class:`~odradek.client.errors.NoOffsetForPartitionError`), or set by
  :meth:`Consumer.seek` and friends. Seeking to the beginning, end or a timestamp is lazy:
  the offset is looked up (``ListOffsets`` at the leader) on the next :meth:`Consumer.poll` or
  :meth:`Consumer.position`.
* :meth:`Consumer.poll` fetches from each partition's leader (one ``Fetch`` per leader, all
  at once, long-polling up to ``fetch_max_wait_ms``), sending the leader epoch it knows.
  ``NOT_LEADER_OR_FOLLOWER``, ``FENCED_LEADER_EPOCH``, ``UNKNOWN_LEADER_EPOCH``, an unknown
  partition or an unreachable node make it take the leader hint of the answer (if newer),
  refresh the metadata and fetch again from the new leader: leadership changes are followed
  without the caller noticing. ``OFFSET_OUT_OF_RANGE`` resets the position with
  ``auto_offset_reset`` (or raises :class:`~odradek.errors.OffsetOutOfRangeError` with
  ``"none"``). Other errors are raised from :meth:`Consumer.poll`, typed.
* Consumers read records below the high watermark (replicated to the ISR). With
  ``isolation_level="read_committed"`` (Kafka's) they read only below the last stable offset
  (the first offset of the oldest open transaction) and drop the records of aborted
  transactions and the transaction markers (:func:`~odradek.client.fetcher.parse_fetched`);
  :meth:`Consumer.end_offsets` and ``auto_offset_reset="latest"`` then mean the last stable
  offset, so lag is measured to it.

Not thread-safe: use a consumer from one thread at a time (as Kafka's).
"""

from __future__ import annotations

import concurrent.futures
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal, Self, Unpack

import grpc

from odradek.client.connection import ConnectionPool, cancel, parse_bootstrap_servers, wait
from odradek.client.errors import (
    NoOffsetForPartitionError,
    error_from_code,
    is_invalid_metadata,
)
from odradek.client.fetcher import parse_fetched
from odradek.client.group import (
    GroupClient,
    GroupMember,
    OffsetAndMetadata,
    close_group_member,
    new_group_member,
)
from odradek.client.leaders import Answer, LeaderTarget, send_to_leaders
from odradek.client.metadata import MetadataCache
from odradek.client.security import SecurityConfig, SecurityOptions
from odradek.client.transactional import ConsumerGroupMetadata
from odradek.client.types import ConsumerRecord, OffsetAndTimestamp, TopicPartition
from odradek.clock import Clock, SystemClock
from odradek.errors import OdradekError, OffsetOutOfRangeError, TopicAuthorizationFailedError
from odradek.v1 import odradek_pb2 as pb

__all__ = ["Consumer", "ConsumerConfig"]

log = logging.getLogger("odradek.consumer")

# ListOffsets' special timestamps.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3

_OFFSET_OUT_OF_RANGE = OffsetOutOfRangeError.code
_INT32_MAX = 2**31 - 1

OffsetReset = Literal["earliest", "latest", "none"]
IsolationLevel = Literal["read_uncommitted", "read_committed"]
READ_COMMITTED = 1  # Kafka's IsolationLevel id


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    """A consumer's settings, with Kafka's names and defaults. Raises ``ValueError``."""

    # host:port of one or more nodes to learn the cluster from.
    bootstrap_servers: tuple[str, ...]
    # Where a partition without a position starts: earliest, latest, or none (raise).
    auto_offset_reset: str = "earliest"
    # How long a leader may hold a fetch waiting for fetch_min_bytes.
    fetch_max_wait_ms: int = 500
    # How many bytes a leader waits for before answering a fetch.
    fetch_min_bytes: int = 1
    # The most bytes a fetch asks for per partition (a bigger first batch still comes whole).
    max_partition_fetch_bytes: int = 1_048_576
    # The most bytes a fetch asks for in all.
    fetch_max_bytes: int = 52_428_800
    # The most records one poll() returns.
    max_poll_records: int = 500
    # How long to wait for a node's answer (on top of fetch_max_wait_ms for fetches).
    request_timeout_ms: int = 30_000
    # How long position(), offsets_for_times() and friends keep trying by default.
    default_api_timeout_ms: int = 60_000
    # The pause before fetching again from a partition that failed.
    retry_backoff_ms: int = 100
    # Metadata older than this is refreshed even without errors.
    metadata_max_age_ms: int = 300_000
    # Check each fetched batch's CRC-32C.
    check_crcs: bool = True
    # The consumer group to join with subscribe() and commit to (None: no group).
    group_id: str | None = None
    # A static member's id (KIP-345): a restarted member with it gets its partitions back.
    group_instance_id: str | None = None
    # Commit the positions of owned partitions every auto_commit_interval_ms from poll().
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5_000
    # The longest a group member may go between two poll() calls: past it, it leaves the
    # group (its partitions move) and joins again at its next poll. Heartbeats go out from a
    # thread of their own meanwhile. Sent to the coordinator as the rebalance timeout.
    max_poll_interval_ms: int = 300_000
    # The server-side assignor the group is to use (Kafka's group.remote.assignor: "uniform",
    # "range"); None: the coordinator's default (its group.consumer.assignors' first).
    group_remote_assignor: str | None = None
    # Sent to the coordinator and shown by describe.
    client_id: str = "odradek-consumer"
    # read_uncommitted: every record below the high watermark; read_committed: only committed
    # transactions' records, below the last stable offset (Kafka's isolation.level).
    isolation_level: str = "read_uncommitted"

    def __post_init__(self) -> None:
        if self.isolation_level not in ("read_uncommitted", "read_committed"):
            raise ValueError(
                "isolation_level must be 'read_uncommitted' or 'read_committed', "
                f"not {self.isolation_level!r}"
            )
        if self.auto_offset_reset not in ("earliest", "latest", "none"):
            raise ValueError(
                "auto_offset_reset must be 'earliest', 'latest' or 'none', "
                f"not {self.auto_offset_reset!r}"
            )
        checks = {
            "fetch_max_wait_ms": (self.fetch_max_wait_ms, 0),
            "fetch_min_bytes": (self.fetch_min_bytes, 0),
            "max_partition_fetch_bytes": (self.max_partition_fetch_bytes, 1),
            "fetch_max_bytes": (self.fetch_max_bytes, 1),
            "max_poll_records": (self.max_poll_records, 1),
            "request_timeout_ms": (self.request_timeout_ms, 1),
            "default_api_timeout_ms": (self.default_api_timeout_ms, 0),
            "retry_backoff_ms": (self.retry_backoff_ms, 0),
            "metadata_max_age_ms": (self.metadata_max_age_ms, 1),
            "max_poll_interval_ms": (self.max_poll_interval_ms, 1),
        }
        for name, (value, low) in checks.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, not {value!r}")
        if self.group_remote_assignor is not None and (
            not isinstance(self.group_remote_assignor, str) or not self.group_remote_assignor
        ):
            raise ValueError(
                "group_remote_assignor must be an assignor's name, "
                f"not {self.group_remote_assignor!r}"
            )
        for name in (
            "fetch_max_wait_ms",
            "max_partition_fetch_bytes",
            "fetch_max_bytes",
            "max_poll_interval_ms",
        ):
            if getattr(self, name) > _INT32_MAX:
                raise ValueError(f"{name} must fit in 32 bits")


@dataclass(eq=False)
class _PartitionState:
    """Where a partition's consumption stands. ``offset`` is the position (``None``: not
    known); ``reset`` a pending lookup ("earliest"/"latest"/a timestamp); ``buffer`` fetched
    records, of which the first ``taken`` were returned (empty once all were: a buffer is
    handed out in slices, not record by record), and ``next_fetch_offset`` the offset after
    them."""

    offset: int | None = None
    reset: str | int | None = None
    buffer: list[ConsumerRecord] = field(default_factory=list)
    taken: int = 0
    next_fetch_offset: int | None = None
    backoff_until_ms: int = 0
    high_watermark: int | None = None
    last_stable_offset: int | None = None
    fetching: bool = False  # a fetch for it is in flight

    def clear_buffer(self) -> None:
        self.buffer = []
        self.taken = 0
        self.next_fetch_offset = None


class Consumer:
    """Reads records from the partitions given to :meth:`assign`.

    Construct with the bootstrap servers and any :class:`ConsumerConfig` field as a keyword,
    plus ``clock``. Does not connect until used. Raises ``ValueError`` for bad settings.
    Not thread-safe.
    """

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        auto_offset_reset: OffsetReset | None = None,
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        max_partition_fetch_bytes: int = 1_048_576,
        fetch_max_bytes: int = 52_428_800,
        max_poll_records: int = 500,
        request_timeout_ms: int = 30_000,
        default_api_timeout_ms: int = 60_000,
        retry_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300_000,
        check_crcs: bool = True,
        clock: Clock | None = None,
        group_id: str | None = None,
        group_instance_id: str | None = None,
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5_000,
        max_poll_interval_ms: int = 300_000,
        group_remote_assignor: str | None = None,
        client_id: str = "odradek-consumer",
        isolation_level: IsolationLevel = "read_uncommitted",
        **security: Unpack[SecurityOptions],
    ) -> None:
        if auto_offset_reset is None:
            # Kafka's default is "latest"; without a group the consumer keeps its old default
            auto_offset_reset = "latest" if group_id is not None else "earliest"
        self.config = ConsumerConfig(
            bootstrap_servers=tuple(parse_bootstrap_servers(bootstrap_servers)),
            auto_offset_reset=auto_offset_reset,
            fetch_max_wait_ms=fetch_max_wait_ms,
            fetch_min_bytes=fetch_min_bytes,
            max_partition_fetch_bytes=max_partition_fetch_bytes,
            fetch_max_bytes=fetch_max_bytes,
            max_poll_records=max_poll_records,
            request_timeout_ms=request_timeout_ms,
            default_api_timeout_ms=default_api_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            metadata_max_age_ms=metadata_max_age_ms,
            check_crcs=check_crcs,
            group_id=group_id,
            group_instance_id=group_instance_id,
            enable_auto_commit=enable_auto_commit,
            auto_commit_interval_ms=auto_commit_interval_ms,
            max_poll_interval_ms=max_poll_interval_ms,
            group_remote_assignor=group_remote_assignor,
            client_id=client_id,
            isolation_level=isolation_level,
        )
        self._isolation = READ_COMMITTED if isolation_level == "read_committed" else 0
        self._clock: Clock = clock or SystemClock()
        self._pool = ConnectionPool(SecurityConfig(**security))
        self._metadata = MetadataCache(
            self.config.bootstrap_servers,
            self._pool,
            self._clock,
            request_timeout_ms=request_timeout_ms,
            max_age_ms=metadata_max_age_ms,
            retry_backoff_ms=retry_backoff_ms,
        )
        self._states: dict[TopicPartition, _PartitionState] = {}
        self._fetches: list[tuple[str, list[pb.FetchPartition], grpc.Future[pb.FetchResponse]]] = []
        self._next_drain = 0
        self._closed = False
        self._commit_executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._paused: set[TopicPartition] = set()
        self._authorization_checked: object = None  # the metadata snapshot last looked at
        self._group: GroupMember | None = (
            None
            if group_id is None
            else new_group_member(
                self,
                GroupClient(
                    group_id,
                    self._pool,
                    self._metadata,
                    self._clock,
                    request_timeout_ms=request_timeout_ms,
                    retry_backoff_ms=retry_backoff_ms,
                ),
                self._metadata,
                self._clock,
                self.config.group_instance_id,
                self.config.client_id,
                self.config.enable_auto_commit,
                self.config.auto_commit_interval_ms,
                self.config.max_poll_interval_ms,
                self.config.group_remote_assignor,
            )
        )

    # --- assignment and positions -------------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Consume exactly ``partitions`` from now on (an empty list stops consuming).
        Positions of partitions that stay assigned are kept."""
        self._check_open()
        wanted = list(dict.fromkeys(partitions))
        for tp in wanted:
            if not isinstance(tp, TopicPartition):
                raise TypeError(f"assign() takes TopicPartitions, not {tp!r}")
        self._states = {tp: self._states.get(tp) or _PartitionState() for tp in wanted}
        self._metadata.add_topics({tp.topic for tp in wanted})
        self._authorization_checked = None

    def assignment(self) -> set[TopicPartition]:
        """The partitions given to :meth:`assign`."""
        return set(self._states)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Make ``offset`` the position of ``tp``: the next :meth:`poll` returns records from
        there. Raises ``ValueError`` for a partition not assigned or a negative offset."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"an offset is an integer >= 0, not {offset!r}")
        state = self._state(tp)
        state.clear_buffer()
        state.offset = offset
        state.reset = None
        state.backoff_until_ms = 0

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        """Move the positions of ``partitions`` (default: all assigned) to each log start
        offset, looked up lazily."""
        self._seek_lazily(partitions, "earliest")

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        """Move the positions of ``partitions`` (default: all assigned) to each high
        watermark, looked up lazily: only records produced later are returned."""
        self._seek_lazily(partitions, "latest")

    def seek_to_timestamp(self, timestamp_ms: int, *partitions: TopicPartition) -> None:
        """Move the positions of ``partitions`` (default: all assigned) to the first record
        whose timestamp is ``timestamp_ms`` or later (to the end if there is none), looked up
        lazily."""
        if isinstance(timestamp_ms, bool) or not isinstance(timestamp_ms, int) or timestamp_ms < 0:
            raise ValueError(f"a timestamp is an integer >= 0, not {timestamp_ms!r}")
        self._seek_lazily(partitions, timestamp_ms)

    def _seek_lazily(self, partitions: Sequence[TopicPartition], reset: str | int) -> None:
        for tp in partitions or list(self._states):
            state = self._state(tp)
            state.clear_buffer()
            state.offset = None
            state.reset = reset
            state.backoff_until_ms = 0

    def position(self, tp: TopicPartition, timeout_ms: int | None = None) -> int:
        """The offset of the next record :meth:`poll` returns for ``tp``, looking it up first
        if a seek or ``auto_offset_reset`` left it to be looked up.

        Raises ``ValueError`` for a partition not assigned,
        :class:`~odradek.client.errors.NoOffsetForPartitionError`, the typed error of the
        lookup, or :class:`~odradek.errors.RequestTimedOutError` after ``timeout_ms``
        (default ``default_api_timeout_ms``).
        """
        state = self._state(tp)
        if state.offset is None:
            timeout = self.config.default_api_timeout_ms if timeout_ms is None else timeout_ms
            self._resolve_positions([tp], timeout, raise_retriable=True)
        assert state.offset is not None
        return state.offset

    def highwater(self, tp: TopicPartition) -> int | None:
        """The high watermark of ``tp`` in the last fetch answer (``None`` before one)."""
        return self._state(tp).high_watermark

    def last_stable_offset(self, tp: TopicPartition) -> int | None:
        """The last stable offset of ``tp`` in the last fetch answer (``None`` before one):
        where a read_committed consumer's lag ends."""
        return self._state(tp).last_stable_offset

    def _state(self, tp: TopicPartition) -> _PartitionState:
        self._check_open()
        state = self._states.get(tp)
        if state is None:
            raise ValueError(f"partition {tp} is not assigned to this consumer")
        return state

    # --- offsets lookups --------------------------------------------------------------------

    def beginning_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """Each partition's log start offset. Raises the typed error of a partition that could
        not be looked up (after retrying retriable ones for ``timeout_ms``)."""
        return self._list_offsets(dict.fromkeys(partitions, EARLIEST_TIMESTAMP), timeout_ms)

    def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """Each partition's high watermark (the offset after the last record replicated), or
        with ``isolation_level="read_committed"`` its last stable offset. Raises like
        :meth:`beginning_offsets`."""
        return self._list_offsets(dict.fromkeys(partitions, LATEST_TIMESTAMP), timeout_ms)

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """For each partition, the first record whose timestamp is at or after the one given,
        or ``None`` if there is none. Raises ``ValueError`` for a negative timestamp, else like
        :meth:`beginning_offsets`."""
        for tp, ts in timestamps.items():
            if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
                raise ValueError(f"the timestamp for {tp} must be an integer >= 0, not {ts!r}")
        found = self._list_offsets_full(dict(timestamps), timeout_ms)
        return {
            tp: (
                OffsetAndTimestamp(a.offset, a.timestamp, _epoch(a.leader_epoch))
                if a.offset >= 0
                else None
            )
            for tp, a in found.items()
        }

    def max_timestamp_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """For each partition, the record with the largest timestamp (the first of them if
        several share it: Kafka's ``OffsetSpec.maxTimestamp()``, KIP-734), or ``None`` for a
        partition with no record. Raises like :meth:`beginning_offsets`."""
        found = self._list_offsets_full(dict.fromkeys(partitions, MAX_TIMESTAMP), timeout_ms)
        return {
            tp: (
                OffsetAndTimestamp(a.offset, a.timestamp, _epoch(a.leader_epoch))
                if a.offset >= 0
                else None
            )
            for tp, a in found.items()
        }

    def _list_offsets(
        self, queries: Mapping[TopicPartition, int], timeout_ms: int | None
    ) -> dict[TopicPartition, int]:
        return {tp: a.offset for tp, a in self._list_offsets_full(queries, timeout_ms).items()}

    def _list_offsets_full(
        self, queries: Mapping[TopicPartition, int], timeout_ms: int | None
    ) -> dict[TopicPartition, pb.ListOffsetsPartitionResponse]:
        self._check_open()
        timeout = self.config.default_api_timeout_ms if timeout_ms is None else timeout_ms
        results = self._send_list_offsets(queries, timeout)
        out: dict[TopicPartition, pb.ListOffsetsPartitionResponse] = {}
        for tp in queries:
            result = results[tp]
            if isinstance(result, OdradekError):
                raise result
            out[tp] = result
        return out

    def _send_list_offsets(
        self, queries: Mapping[TopicPartition, int], timeout_ms: int
    ) -> dict[TopicPartition, pb.ListOffsetsPartitionResponse | OdradekError]:
        timeout_s = self.config.request_timeout_ms / 1000

        def start(
            address: str, targets: list[LeaderTarget[int]]
        ) -> grpc.Future[pb.ListOffsetsResponse]:
            request = pb.ListOffsetsRequest(
                replica_id=-1,
                isolation_level=self._isolation,
                partitions=[
                    pb.ListOffsetsPartition(
                        topic=t.tp.topic,
                        partition=t.tp.partition,
                        timestamp=t.item,
                        current_leader_epoch=t.leader_epoch,
                    )
                    for t in targets
                ],
            )
            return self._pool.broker(address).ListOffsets.future(request, timeout=timeout_s)

        def answers(
            response: pb.ListOffsetsResponse,
        ) -> Iterable[Answer[pb.ListOffsetsPartitionResponse]]:
            for p in response.partitions:
                yield Answer(TopicPartition(p.topic, p.partition), p.error_code, p.error_message, p)

        return send_to_leaders(
            self._metadata,
            self._clock,
            queries,
            start,
            answers,
            timeout_ms=timeout_ms,
            retry_backoff_ms=self.config.retry_backoff_ms,
        )

    def _resolve_positions(
        self, partitions: Iterable[TopicPartition], timeout_ms: int, *, raise_retriable: bool
    ) -> None:
        """Look up the positions of ``partitions`` that have none."""
        queries: dict[TopicPartition, int] = {}
        for tp in partitions:
            state = self._states[tp]
            if state.offset is not None:
                continue
            reset = state.reset
            if reset is None:
                if self.config.auto_offset_reset == "none":
                    raise NoOffsetForPartitionError(
                        f"{tp} has no position and auto_offset_reset is 'none': seek first"
                    )
                reset = state.reset = self.config.auto_offset_reset
            if reset == "earliest":
                queries[tp] = EARLIEST_TIMESTAMP
            elif reset == "latest":
                queries[tp] = LATEST_TIMESTAMP
            else:
                assert isinstance(reset, int)
                queries[tp] = reset
        if not queries:
            return
        results = self._send_list_offsets(queries, timeout_ms)
        past_the_end: list[TopicPartition] = []
        for tp, result in results.items():
            current = self._states.get(tp)
            if current is None or current.offset is not None:
                continue
            if isinstance(result, OdradekError):
                if raise_retriable or not result.retriable:
                    raise result
                continue
            if result.offset >= 0:
                current.offset = result.offset
                current.reset = None
            elif queries[tp] >= 0:
                # No record at or after the timestamp: start at the end.
                current.reset = "latest"
                past_the_end.append(tp)
        if past_the_end:
            self._resolve_positions(past_the_end, timeout_ms, raise_retriable=raise_retriable)

    # --- polling ----------------------------------------------------------------------------

    def poll(self, timeout_ms: int = 0) -> list[ConsumerRecord]:
        """Records from the assigned partitions, waiting up to ``timeout_ms`` for some.

        Returns at most ``max_poll_records`` records, in offset order within each partition;
        an empty list if none arrived in time. Raises
        :class:`~odradek.errors.OffsetOutOfRangeError` (with ``auto_offset_reset="none"``),
        :class:`~odradek.client.errors.NoOffsetForPartitionError`,
        :class:`~odradek.errors.CorruptRecordError`, or the typed error of a non-retriable
        fetch failure. Retriable failures are retried within the timeout.
        """
        self._check_open()
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 0:
            raise ValueError(f"timeout_ms must be an integer >= 0, not {timeout_ms!r}")
        deadline = self._clock.monotonic_ms() + timeout_ms
        while True:
            if self._group is not None:
                self._group.poll()
            self._settle_fetches(block_ms=0)
            records = self._drain()
            if records:
                self._prefetch()
                return records
            if not self._states and not (self._group is not None and self._group.subscribed):
                raise RuntimeError("poll() needs partitions to read: call assign() first")
            self._metadata.maybe_refresh()
            self._raise_unauthorized()
            remaining = max(deadline - self._clock.monotonic_ms(), 0)
            self._resolve_positions(list(self._states), remaining, raise_retriable=False)
            remaining = max(deadline - self._clock.monotonic_ms(), 0)
            sent = self._send_fetches(min(self.config.fetch_max_wait_ms, remaining))
            # a group member must not block past its next heartbeat or auto-commit
            wake = (
                deadline
                if self._group is None
                else min(deadline, self._clock.monotonic_ms() + self._group.time_to_next_ms())
            )
            if self._fetches:
                self._settle_fetches(block_ms=max(wake - self._clock.monotonic_ms(), 0))
            records = self._drain()
            if records:
                self._prefetch()
                return records
            now = self._clock.monotonic_ms()
            if now >= deadline:
                return []
            if not sent and not self._fetches:
                time.sleep(max(min(self.config.retry_backoff_ms, wake - now), 0) / 1000)

    def _raise_unauthorized(self) -> None:
        """Raise TOPIC_AUTHORIZATION_FAILED for the topics assigned or subscribed to that the
        metadata answer refused: waiting will not help (Kafka's consumer raises its
        TopicAuthorizationException from poll, naming them, once per metadata update)."""
        snapshot = self._metadata.snapshot()
        if snapshot is self._authorization_checked:
            return
        self._authorization_checked = snapshot
        wanted = {tp.topic for tp in self._states}
        if self._group is not None and self._group.subscribed:
            wanted |= self._group.subscription()
        topics = snapshot.topics
        denied = TopicAuthorizationFailedError.code
        refused = sorted(
            t for t in wanted if (m := topics.get(t)) is not None and m.error_code == denied
        )
        if refused:
            raise TopicAuthorizationFailedError(
                f"not authorized to describe or read topic(s) {', '.join(refused)}"
            )

    def _prefetch(self) -> None:
        """Ask for the next records of every partition whose buffer is empty, now, so that
        they arrive while the caller works on the records it got (Kafka's consumer does the
        same: a fetch is sent for each fetchable partition as poll returns)."""
        self._send_fetches(self.config.fetch_max_wait_ms)

    def _drain(self) -> list[ConsumerRecord]:
        out: list[ConsumerRecord] = []
        limit = self.config.max_poll_records
        tps = list(self._states)
        if not tps:
            return out
        start = self._next_drain % len(tps)
        self._next_drain += 1
        for tp in tps[start:] + tps[:start]:
            if tp in self._paused:
                continue
            state = self._states[tp]
            buffer = state.buffer
            if buffer:
                taken = state.taken
                chunk = buffer[taken : taken + limit - len(out)]
                out += chunk
                state.offset = chunk[-1].offset + 1
                taken += len(chunk)
                if taken == len(buffer):
                    state.buffer = []
                    state.taken = 0
                else:
                    state.taken = taken
            if not state.buffer and state.next_fetch_offset is not None:
                if state.offset is None or state.next_fetch_offset > state.offset:
                    state.offset = state.next_fetch_offset
                state.next_fetch_offset = None
            if len(out) >= limit:
                break
        return out

    def _send_fetches(self, max_wait_ms: int) -> bool:
        """One fetch to every leader of partitions with a position, no buffered records and
        no fetch in flight; the calls go on in the background (gRPC futures). ``False`` if
        there was nothing to ask for."""
        cluster = self._metadata.snapshot()
        now = self._clock.monotonic_ms()
        by_leader: dict[str, list[pb.FetchPartition]] = {}
        for tp, state in self._states.items():
            if (
                state.offset is None
                or state.buffer
                or tp in self._paused
                or state.fetching
                or now < state.backoff_until_ms
            ):
                continue
            address = cluster.leader_address(tp)
            part = cluster.partition(tp)
            if address is None or part is None:
                self._metadata.request_update()
                continue
            by_leader.setdefault(address, []).append(
                pb.FetchPartition(
                    topic=tp.topic,
                    partition=tp.partition,
                    fetch_offset=state.offset,
                    partition_max_bytes=self.config.max_partition_fetch_bytes,
                    current_leader_epoch=part.leader_epoch,
                    last_fetched_epoch=-1,
                    log_start_offset=-1,
                )
            )
        if not by_leader:
            return False
        timeout_s = (max_wait_ms + self.config.request_timeout_ms) / 1000
        for address, partitions in by_leader.items():
            request = pb.FetchRequest(
                replica_id=-1,
                broker_epoch=-1,
                max_wait_ms=max_wait_ms,
                min_bytes=self.config.fetch_min_bytes,
                max_bytes=self.config.fetch_max_bytes,
                partitions=partitions,
                isolation_level=self._isolation,
            )
            future = self._pool.broker(address).Fetch.future(request, timeout=timeout_s)
            for p in partitions:
                self._states[TopicPartition(p.topic, p.partition)].fetching = True
            self._fetches.append((address, partitions, future))
        return True

    def _settle_fetches(self, block_ms: int) -> None:
        """Take in the answers of the fetches in flight: those done now, or — with
        ``block_ms`` — the first to finish within that time, and any done with it."""
        if not self._fetches:
            return
        if block_ms > 0 and not any(f.done() for _, _, f in self._fetches):
            finished = threading.Event()
            for _, _, future in self._fetches:
                future.add_done_callback(lambda _f: finished.set())
            finished.wait(block_ms / 1000)
        still: list[tuple[str, list[pb.FetchPartition], grpc.Future[pb.FetchResponse]]] = []
        try:
            while self._fetches:
                address, partitions, future = self._fetches.pop()
                if not future.done():
                    still.append((address, partitions, future))
                    continue
                for p in partitions:
                    state = self._states.get(TopicPartition(p.topic, p.partition))
                    if state is not None:
                        state.fetching = False
                self._settle_fetch(address, partitions, future)
        finally:
            self._fetches.extend(still)

    def _cancel_fetches(self) -> None:
        for _, partitions, future in self._fetches:
            cancel(future)
            for p in partitions:
                state = self._states.get(TopicPartition(p.topic, p.partition))
                if state is not None:
                    state.fetching = False
        self._fetches.clear()

    def _settle_fetch(
        self,
        address: str,
        partitions: list[pb.FetchPartition],
        future: grpc.Future[pb.FetchResponse],
    ) -> None:
        requested = {TopicPartition(p.topic, p.partition): p.fetch_offset for p in partitions}
        try:
            response = wait(future, address)
        except OdradekError as exc:
            if not exc.retriable:
                raise
            log.debug("fetch from %s failed: %s", address, exc)
            self._metadata.request_update()
            self._back_off(requested)
            return
        if response.error_code:
            error = error_from_code(response.error_code, "", f"fetch from node {address}")
            if not error.retriable:
                raise error
            self._metadata.request_update()
            self._back_off(requested)
            return
        for p in response.partitions:
            tp = TopicPartition(p.topic, p.partition)
            state = self._states.get(tp)
            if state is None or tp not in requested or state.offset != requested[tp]:
                continue  # unassigned or moved since the request was sent
            if p.error_code == 0:
                fetched = parse_fetched(
                    tp,
                    p.records,
                    requested[tp],
                    check_crcs=self.config.check_crcs,
                    aborted_transactions=(
                        [(a.producer_id, a.first_offset) for a in p.aborted_transactions]
                        if self._isolation == READ_COMMITTED
                        else None
                    ),
                )
                state.high_watermark = p.high_watermark
                state.last_stable_offset = p.last_stable_offset
                state.buffer = fetched.records  # empty before: only such partitions fetch
                state.taken = 0
                state.next_fetch_offset = fetched.next_offset
            elif p.error_code == _OFFSET_OUT_OF_RANGE:
                self._out_of_range(tp, state, p)
            else:
                self._partition_error(tp, state, p)

    def _out_of_range(
        self, tp: TopicPartition, state: _PartitionState, p: pb.FetchPartitionResponse
    ) -> None:
        strategy = self.config.auto_offset_reset
        text = (
            f"{tp}: fetch offset {state.offset} is out of range "
            f"(log start offset {p.log_start_offset}, high watermark {p.high_watermark})"
        )
        if strategy == "none":
            raise OffsetOutOfRangeError(text)
        log.info("%s; resetting to %s", text, strategy)
        state.clear_buffer()
        state.offset = None
        state.reset = strategy

    def _partition_error(
        self, tp: TopicPartition, state: _PartitionState, p: pb.FetchPartitionResponse
    ) -> None:
        error = error_from_code(p.error_code, p.error_message, str(tp))
        if not error.retriable:
            raise error
        log.debug("fetch of %s failed: %s", tp, error)
        hinted = False
        if p.HasField("current_leader") and p.current_leader.leader_id >= 0:
            # The broker says who leads now (KIP-951): fetch from there without waiting for
            # a metadata refresh, if that leader is a broker we know.
            hinted = self._metadata.update_leader(
                tp, p.current_leader.leader_id, p.current_leader.leader_epoch
            )
        if is_invalid_metadata(error):
            self._metadata.request_update()
        if not hinted:
            state.backoff_until_ms = self._clock.monotonic_ms() + self.config.retry_backoff_ms

    def _back_off(self, partitions: Iterable[TopicPartition]) -> None:
        until = self._clock.monotonic_ms() + self.config.retry_backoff_ms
        for tp in partitions:
            state = self._states.get(tp)
            if state is not None:
                state.backoff_until_ms = until

    # --- groups (odradek.client.group does the work; docs/groups.md) -------------------------

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group, member and epoch of this consumer, for a transactional producer's
        ``send_offsets_to_transaction`` (Kafka's ``groupMetadata()``). Raises
        ``ValueError`` without a ``group_id``."""
        member = self._require_group()
        return ConsumerGroupMetadata(
            member.client.group_id,
            member.member_epoch,
            member.member_id,
            member.group_instance_id,
        )

    def subscribe(
        self,
        topics: Iterable[str] | str | re.Pattern[str] = (),
        listener: object | None = None,
        *,
        pattern: str | re.Pattern[str] | None = None,
    ) -> None:
        """Join the consumer group and consume the partitions it assigns: of ``topics`` (a
        list of names), or of every topic whose name matches ``pattern`` (a compiled regular
        expression may also be passed as ``topics``). ``listener`` may have
        ``on_partitions_assigned``, ``on_partitions_revoked`` and ``on_partitions_lost``
        (called from :meth:`poll`). Raises ``ValueError`` without ``group_id``, with neither
        topics nor pattern, or after :meth:`assign`."""
        self._check_open()
        if self._group is None:
            raise ValueError("subscribe() needs a group_id (Kafka's InvalidGroupIdException)")
        if self._states and not self._group.subscribed:
            raise ValueError("subscribe() after assign(): call assign([]) first")
        if isinstance(topics, re.Pattern):
            pattern, topics = topics, ()
        elif isinstance(topics, str):
            topics = [topics]
        compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        names = list(topics)
        if not names and compiled is None:
            raise ValueError("subscribe() needs topics or a pattern")
        self._group.subscribe(names, compiled, listener)
        self._authorization_checked = None

    def unsubscribe(self) -> None:
        """Leave the group and stop consuming: positions are committed first (with
        auto-commit), then the listener's ``on_partitions_revoked`` is called with the
        partitions owned (``on_partitions_lost`` if the member was fenced), then the member
        leaves. Raises what the listener raises (after leaving)."""
        if self._group is not None and self._group.subscribed:
            try:
                close_group_member(self._group, self._group_positions())
            finally:
                self._group_set_assignment(set(), {})

    def subscription(self) -> set[str]:
        """The topics subscribed to (the pattern's matches so far)."""
        return set() if self._group is None else self._group.subscription()

    def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        timeout_ms: int | None = None,
    ) -> None:
        """Commit ``offsets`` (default: the positions of every assigned partition) to the
        group, waiting for the answer. Raises ``ValueError`` without ``group_id``, or the typed
        error of the commit (e.g. :class:`~odradek.errors.UnknownMemberIdError`,
        :class:`~odradek.errors.StaleMemberEpochError` for a partition not owned)."""
        group = self._require_group()
        chosen = self._group_positions() if offsets is None else offsets
        timeout = self.config.default_api_timeout_ms if timeout_ms is None else timeout_ms
        group.commit(
            {
                tp: o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)
                for tp, o in chosen.items()
            },
            timeout,
        )

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        callback: Callable[
            [Mapping[TopicPartition, OffsetAndMetadata | int], Exception | None], None
        ]
        | None = None,
    ) -> concurrent.futures.Future[None]:
        """Commit without waiting; the returned future (and ``callback(offsets, error)``,
        called from the commit's thread) tell the outcome."""
        chosen = dict(self._group_positions() if offsets is None else offsets)
        self._require_group()
        if self._commit_executor is None:
            self._commit_executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="odradek-commit"
            )
        future = self._commit_executor.submit(self.commit, chosen)
        if callback is not None:
            future.add_done_callback(lambda f: callback(chosen, f.exception()))  # type: ignore[arg-type]
        return future

    def committed(
        self, partitions: Iterable[TopicPartition], timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets of ``partitions`` (None where nothing is committed)."""
        group = self._require_group()
        timeout = self.config.default_api_timeout_ms if timeout_ms is None else timeout_ms
        wanted = list(partitions)
        found = group.client.committed(wanted, timeout)
        return {tp: found.get(tp) for tp in wanted}

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop fetching from ``partitions`` (and returning their buffered records) until
        :meth:`resume`; their positions and the group's assignment stay."""
        for tp in partitions:
            self._state(tp)
            self._paused.add(tp)

    def resume(self, *partitions: TopicPartition) -> None:
        for tp in partitions:
            self._paused.discard(tp)

    def paused(self) -> set[TopicPartition]:
        return set(self._paused)

    def __iter__(self) -> Iterator[ConsumerRecord]:
        """Records forever (until the consumer is closed), polling as needed."""
        while not self._closed:
            yield from self.poll(timeout_ms=1_000)

    def _require_group(self) -> GroupMember:
        self._check_open()
        if self._group is None:
            raise ValueError("this needs a consumer with a group_id")
        return self._group

    # hooks for odradek.client.group
    def _group_assignment(self) -> set[TopicPartition]:
        return set(self._states)

    def _group_set_assignment(
        self, partitions: set[TopicPartition], positions: Mapping[TopicPartition, int]
    ) -> None:
        """The group's assignment changed: keep the states (positions, buffers, fetches in
        flight) of partitions that stay, start new ones at ``positions`` (else
        ``auto_offset_reset``)."""
        self._states = {tp: self._states.get(tp) or _PartitionState() for tp in sorted(partitions)}
        for tp, offset in positions.items():
            state = self._states.get(tp)
            if state is not None and state.offset is None:
                state.offset = offset
        self._paused &= partitions
        self._metadata.add_topics({tp.topic for tp in partitions})

    def _group_positions(self) -> dict[TopicPartition, int]:
        return {tp: s.offset for tp, s in self._states.items() if s.offset is not None}

    # --- lifecycle --------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the consumer is closed")

    def close(self) -> None:
        """Close the consumer's connections; a group member first commits (with auto-commit),
        calls its listener's ``on_partitions_revoked`` for the partitions it owns
        (``on_partitions_lost`` if it was fenced) and leaves its group. Idempotent; raises
        what the listener raises, once everything is closed."""
        if not self._closed:
            failure: BaseException | None = None
            if self._group is not None:
                try:
                    close_group_member(self._group, self._group_positions())
                except Exception as exc:
                    failure = exc
            if self._commit_executor is not None:
                self._commit_executor.shutdown(wait=True)
            self._closed = True
            self._cancel_fetches()
            self._pool.close()
            if failure is not None:
                raise failure

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _epoch(epoch: int) -> int | None:
    return None if epoch < 0 else epoch
