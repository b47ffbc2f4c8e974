"""Followers' fetchers: one thread per leader node, copying its partitions' logs.

Kafka's ``ReplicaFetcherManager`` / ``ReplicaFetcherThread``. Each fetch carries, per
partition, the follower's log end offset, the epoch of its last batch and the leader epoch it
follows. The leader answers with records (appended as they are, offsets and epochs kept), or
with a diverging epoch, after which the follower truncates its log where it leaves the leader's
(``node.core.replication_rules.follower_truncation``) — never blindly to its high watermark. After
an
append the follower's high watermark becomes min(leader's, own LEO) and its log start offset
follows the leader's.

Fetches go to the leader on one long-lived stream, a fetch session (``FetchSessions``), rather
than one call each: the leader's gRPC server spends about half the CPU on a message of an open
stream that it spends on a new call.

Threads: ``ReplicaFetcherManager`` is thread-safe; each ``ReplicaFetcher`` owns its thread and
its partition map (guarded by a lock, as partitions come and go with LeaderAndIsr requests).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import grpc

from node.config import NodeConfig
from node.core import replication_rules as rules
from node.core.partition import Partition
from node.core.requests import Broker
from odradek.clock import Clock
from odradek.errors import (
    CorruptRecordError,
    FencedLeaderEpochError,
    OffsetOutOfRangeError,
    error_for_code,
)
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class SessionEndedError(Exception):
    """The leader ended a fetch session without answering the request sent on it."""


class FetchSession:
    """One open ``Replication.FetchSession`` stream to a leader: a request goes in, its answer
    comes out, one at a time. Followers fetch through it because a message on an open stream
    costs the leader about half the CPU of a new call (``bench/cluster.py`` measures the
    result).

    The stream has a gRPC deadline of ``timeout_s``; its owner stops sending on it at
    ``used_until_ms`` and opens a new one, so a leader that stops answering is noticed within
    the deadline, as with one call per fetch. Not thread-safe: one thread sends and reads.
    """

    def __init__(
        self, stub: pb_grpc.ReplicationStub, *, used_until_ms: int, timeout_s: float
    ) -> None:
        self.used_until_ms = used_until_ms
        self._requests: queue.SimpleQueue[pb.FetchRequest | None] = queue.SimpleQueue()
        self._call = stub.FetchSession(self._request_stream(), timeout=timeout_s)
        self._responses: Iterator[pb.FetchResponse] = iter(self._call)

    def _request_stream(self) -> Iterator[pb.FetchRequest]:
        while (request := self._requests.get()) is not None:
            yield request

    def fetch(self, request: pb.FetchRequest) -> pb.FetchResponse:
        """Send ``request`` and wait for its answer. Raises ``grpc.RpcError`` when the stream
        fails (deadline, leader gone, aborted) and ``SessionEndedError`` when the leader ended
        it without answering."""
        self._requests.put(request)
        response = next(self._responses, None)
        if response is None:
            raise SessionEndedError("the leader ended the fetch session")
        return response

    def close(self) -> None:
        """End the stream: its requests end and the call is cancelled, which frees the
        leader's thread serving it at once (gRPC would cancel it anyway once dropped). Nothing
        is waited for."""
        self._requests.put(None)
        self._call.cancel()  # type: ignore[no-untyped-call]  # grpc-stubs leave it unannotated


class FetchSessions:
    """A fetcher's sessions to its leader: at most one open, opened by the first fetch that
    needs one, replaced once past its use window (``request_timeout_ms``) or after a failure.
    Not thread-safe: the fetcher's thread alone uses it."""

    def __init__(self, stub: pb_grpc.ReplicationStub, config: NodeConfig, clock: Clock) -> None:
        self._stub = stub
        self._config = config
        self._clock = clock
        self._session: FetchSession | None = None

    def fetch(self, request: pb.FetchRequest) -> pb.FetchResponse:
        """One fetch on the open session (see :meth:`FetchSession.fetch` for what it raises).
        A failed session is closed; the next fetch opens another."""
        now = self._clock.monotonic_ms()
        session = self._session
        if session is not None and session.used_until_ms <= now:
            self.close()
            session = None
        if session is None:
            c = self._config
            session = self._session = FetchSession(
                self._stub,
                used_until_ms=now + c.request_timeout_ms,
                # every request sent within the use window has wait_max + request_timeout left
                timeout_s=(2 * c.request_timeout_ms + c.replica_fetch_wait_max_ms) / 1000,
            )
        try:
            return session.fetch(request)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """End the open session, if any (it frees the leader's thread serving it)."""
        if self._session is not None:
            self._session.close()
            self._session = None


@dataclass(slots=True)
class _FetchState:
    partition: Partition
    leader_epoch: int
    delayed_until_ms: int = 0
    fetch_offset: int = -1  # of the fetch in flight


class ReplicaFetcher:
    """Fetches every partition this node follows from one leader. Thread-safe."""

    def __init__(
        self,
        leader: Broker,
        *,
        config: NodeConfig,
        clock: Clock,
        channel: grpc.Channel,
        broker_epoch: Callable[[], int],
    ) -> None:
        self.leader = leader
        self._config = config
        self._clock = clock
        self._sessions = FetchSessions(pb_grpc.ReplicationStub(channel), config, clock)
        self._broker_epoch = broker_epoch
        self._lock = threading.Lock()
        self._partitions: dict[TopicPartition, _FetchState] = {}
        self._wakeup = threading.Event()
        self._running = True
        self._thread = threading.Thread(
            target=self._run, name=f"replica-fetcher-{leader.node_id}", daemon=True
        )
        self._thread.start()

    def add(self, partition: Partition) -> None:
        log_ = partition.log
        if log_.latest_epoch < 0 and log_.log_end_offset > log_.high_watermark:
            # a log without epochs cannot find its divergence: start from the high watermark
            partition.truncate_to(log_.high_watermark, leader_epoch=partition.leader_epoch)
        with self._lock:
            self._partitions[(partition.topic, partition.partition)] = _FetchState(
                partition, partition.leader_epoch
            )
        self._wakeup.set()

    def partitions(self) -> list[Partition]:
        """The partitions this fetcher follows."""
        with self._lock:
            return [st.partition for st in self._partitions.values()]

    def remove(self, tps: Iterable[TopicPartition]) -> None:
        with self._lock:
            for tp in tps:
                self._partitions.pop(tp, None)

    def shutdown(self) -> None:
        self._running = False
        self._wakeup.set()
        self._thread.join(timeout=self._config.replica_fetch_wait_max_ms / 1000 + 5)

    def _run(self) -> None:
        backoff_s = self._config.replica_fetch_backoff_ms / 1000
        failures = 0
        while self._running:
            now = self._clock.monotonic_ms()
            with self._lock:
                idle = not self._partitions
                ready = {
                    tp: st for tp, st in self._partitions.items() if st.delayed_until_ms <= now
                }
            if not ready:
                if idle:
                    # nothing to follow from this leader: free the thread it serves us with
                    self._sessions.close()
                self._wakeup.wait(backoff_s)
                self._wakeup.clear()
                continue
            request = self._build_request(ready)
            try:
                response = self._sessions.fetch(request)
            except (grpc.RpcError, SessionEndedError) as e:
                if self._running:
                    # the first failure of a streak at INFO, the rest (every backoff) at DEBUG
                    log.log(
                        logging.DEBUG if failures else logging.INFO,
                        "fetch from node %d failed: %s",
                        self.leader.node_id,
                        _rpc_text(e),
                    )
                failures += 1
                self._wakeup.wait(backoff_s)
                self._wakeup.clear()
                continue
            failures = 0
            for r in response.partitions:
                self._process(r, ready)
        self._sessions.close()

    def _build_request(self, ready: dict[TopicPartition, _FetchState]) -> pb.FetchRequest:
        partitions = []
        for (topic, partition), st in ready.items():
            log_ = st.partition.log
            st.fetch_offset = log_.log_end_offset
            partitions.append(
                pb.FetchPartition(
                    topic=topic,
                    partition=partition,
                    fetch_offset=st.fetch_offset,
                    partition_max_bytes=self._config.replica_fetch_max_bytes,
                    current_leader_epoch=st.leader_epoch,
                    last_fetched_epoch=log_.latest_epoch,
                    log_start_offset=log_.log_start_offset,
                )
            )
        return pb.FetchRequest(
            replica_id=self._config.node_id,
            broker_epoch=self._broker_epoch(),
            max_wait_ms=self._config.replica_fetch_wait_max_ms,
            min_bytes=1,
            max_bytes=self._config.replica_fetch_response_max_bytes,
            partitions=partitions,
        )

    def _delay(self, tp: TopicPartition, st: _FetchState) -> None:
        st.delayed_until_ms = self._clock.monotonic_ms() + self._config.replica_fetch_backoff_ms

    def _process(
        self, r: pb.FetchPartitionResponse, ready: dict[TopicPartition, _FetchState]
    ) -> None:
        tp = (r.topic, r.partition)
        st = ready.get(tp)
        with self._lock:
            current = self._partitions.get(tp)
        if st is None or current is not st:
            return  # removed or re-added while the fetch was in flight
        partition = st.partition
        try:
            if r.error_code == 0:
                if r.HasField("diverging_epoch"):
                    self._truncate_on_divergence(partition, r.diverging_epoch, st.leader_epoch)
                    return
                if r.records:
                    info = partition.append_records_as_follower(
                        r.records, st.fetch_offset, leader_epoch=st.leader_epoch
                    )
                    if info.batch_count == 0:
                        # never expected: the next fetch would ask for the same offset again
                        partition.warn_at_most_every_interval(
                            "nothing appended",
                            "fetched %d bytes of %s-%d at %d from node %d and none of them "
                            "was a whole batch",
                            len(r.records),
                            *tp,
                            st.fetch_offset,
                            self.leader.node_id,
                        )
                partition.update_follower_high_watermark(
                    r.high_watermark, r.log_start_offset, leader_epoch=st.leader_epoch
                )
            elif r.error_code == OffsetOutOfRangeError.code:
                self._handle_out_of_range(partition, r, st.leader_epoch)
            elif r.error_code == FencedLeaderEpochError.code:
                # our view is older than the leader's: wait for the controller's LeaderAndIsr
                self._delay(tp, st)
            else:
                err = error_for_code(r.error_code)
                log.info(
                    "fetch of %s-%d from node %d: %s %s",
                    *tp,
                    self.leader.node_id,
                    err.name,
                    r.error_message,
                )
                self._delay(tp, st)
        except FencedLeaderEpochError as e:
            # this replica moved on (leads now, or follows another epoch) while the answer was
            # in flight or being processed: it belongs to no one now
            log.info("%s", e.message)
        except CorruptRecordError as e:
            log.warning("corrupt data fetched for %s-%d, retrying: %s", *tp, e)
            self._delay(tp, st)
        except Exception:
            log.exception("processing the fetch of %s-%d failed", *tp)
            self._delay(tp, st)

    def _truncate_on_divergence(
        self, partition: Partition, diverging: pb.EpochEndOffset, leader_epoch: int
    ) -> None:
        log_ = partition.log
        state = rules.follower_truncation(
            leader_epoch=diverging.epoch,
            leader_end_offset=diverging.end_offset,
            follower_end_for_leader_epoch=log_.end_offset_for_epoch(diverging.epoch),
            follower_leo=log_.log_end_offset,
            follower_high_watermark=log_.high_watermark,
        )
        log.info(
            "truncating %s-%d to %d (leader epoch %d ends at %d; our LEO %d)",
            partition.topic,
            partition.partition,
            state.offset,
            diverging.epoch,
            diverging.end_offset,
            log_.log_end_offset,
        )
        partition.truncate_to(state.offset, leader_epoch=leader_epoch)

    def _handle_out_of_range(
        self, partition: Partition, r: pb.FetchPartitionResponse, leader_epoch: int
    ) -> None:
        """Kafka's ``fetchOffsetAndTruncate``: the leader's range decides where to go on."""
        log_ = partition.log
        leo = log_.log_end_offset
        if r.log_end_offset < leo:
            partition.truncate_to(r.log_end_offset, leader_epoch=leader_epoch)
        elif r.log_start_offset > leo:
            partition.truncate_fully_and_start_at(r.log_start_offset, leader_epoch=leader_epoch)


def _rpc_text(e: grpc.RpcError | SessionEndedError) -> str:
    code = e.code() if hasattr(e, "code") else None
    details = e.details() if hasattr(e, "details") else str(e)
    return f"{code.name if code else 'ERROR'}: {details}"


class ReplicaFetcherManager:
    """The fetchers of this node, one per leader. Thread-safe."""

    def __init__(
        self,
        config: NodeConfig,
        clock: Clock,
        channel_for: Callable[[str], grpc.Channel],
        broker_epoch: Callable[[], int],
    ) -> None:
        self._config = config
        self._clock = clock
        self._channel_for = channel_for
        self._broker_epoch = broker_epoch
        self._lock = threading.Lock()
        self._fetchers: dict[int, ReplicaFetcher] = {}
        self._owner: dict[TopicPartition, int] = {}

    def add_partition(self, partition: Partition, leader: Broker) -> None:
        tp = (partition.topic, partition.partition)
        with self._lock:
            self._remove_locked([tp])
            fetcher = self._fetchers.get(leader.node_id)
            if fetcher is None or (fetcher.leader.host, fetcher.leader.port) != (
                leader.host,
                leader.port,
            ):
                # the leader's node came back at another address: the partitions its old
                # fetcher followed (their leadership unchanged) move to the new one
                moved = []
                if fetcher is not None:
                    moved = fetcher.partitions()
                    fetcher.shutdown()
                fetcher = ReplicaFetcher(
                    leader,
                    config=self._config,
                    clock=self._clock,
                    channel=self._channel_for(f"{leader.host}:{leader.port}"),
                    broker_epoch=self._broker_epoch,
                )
                self._fetchers[leader.node_id] = fetcher
                for other in moved:
                    fetcher.add(other)
            fetcher.add(partition)
            self._owner[tp] = leader.node_id

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> None:
        with self._lock:
            self._remove_locked(list(tps))

    def _remove_locked(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            leader = self._owner.pop(tp, None)
            if leader is not None and leader in self._fetchers:
                self._fetchers[leader].remove([tp])

    def shutdown(self) -> None:
        with self._lock:
            fetchers, self._fetchers = list(self._fetchers.values()), {}
            self._owner.clear()
        for fetcher in fetchers:
            fetcher.shutdown()
