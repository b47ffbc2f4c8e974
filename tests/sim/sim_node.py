"""One simulated broker hosting one replica: a real ``storage.Log`` and a real ``Partition``.

What the broker's threads do (``node.core.replica_manager``, ``node.replication.fetcher``,
``node.replication.alter_partition``) is done here step by step, from the simulation's single
thread:

* LeaderAndIsr: stale broker epoch refused; a state not newer than the replica's (``is_newer``)
  ignored once the replica has one; then ``make_leader`` or ``make_follower`` and the fetcher
  restarted if the leader or epoch changed, as ``ReplicaManager._apply_partition_state``;
* produce: ``append_records_to_leader``; acks=-1 waits in a purgatory polled with
  ``check_replicated`` until replicated, refused, or ``produce_timeout_ms``;
* follower fetch, on the leader: ``read_for_follower``; an ISR expansion it proposes goes to
  the AlterPartition sender;
* follower fetch, on the follower: one fetch in flight (abandoned after ``fetch_timeout_ms``);
  the answer is processed as ``ReplicaFetcher._process`` does: divergence → truncate where
  ``node.core.replication_rules.follower_truncation`` says; records →
  ``append_records_as_follower``;
  then ``update_follower_high_watermark``; OFFSET_OUT_OF_RANGE → ``_handle_out_of_range``;
  other errors → back off;
* the ISR-expiration task: ``maybe_shrink_isr`` every ``replica_lag_time_max_ms / 2``;
* AlterPartition: one change in flight, resent until answered; the answer goes to
  ``complete_isr_change``;
* the high-watermark and recovery-point checkpoints, written every ``checkpoint_interval_ms``:
  they are what a restart finds, with the log's files as they were (a process crash: what was
  written is in the page cache; power loss is not simulated).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from node.core import replication_rules as rules
from node.core.partition import IsrChange, LeaderAndIsrState, Partition
from node.core.requests import records_bytes
from odradek.clock import ManualClock
from odradek.errors import (
    NotLeaderOrFollowerError,
    OdradekError,
    OffsetOutOfRangeError,
    RequestTimedOutError,
    StaleBrokerEpochError,
    error_for_code,
)
from storage import Log, LogConfig
from tests.sim.messages import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    ConsumerFetchRequest,
    ConsumerFetchResponse,
    FetchRequest,
    FetchResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    Message,
    ProduceRequest,
    ProduceResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from tests.sim.mutations import Mutations
from tests.sim.router import CONTROLLER

TOPIC = "sim"
PARTITION = 0


@dataclass(frozen=True, slots=True)
class NodeTimings:
    replica_lag_time_max_ms: int
    fetch_max_bytes: int
    fetch_idle_ms: int
    """Wait before the next fetch after an empty answer (the leader's long poll)."""
    fetch_backoff_ms: int
    fetch_timeout_ms: int
    alter_retry_ms: int
    produce_timeout_ms: int
    checkpoint_interval_ms: int
    replica_fetch_silence_max_ms: int = 0
    """The leader's silence rule (``node.core.replication_rules.silent_replicas``; 0: off)."""

    @property
    def isr_check_interval_ms(self) -> int:
        """Half the lag limit, as the node's ticker; a quarter of the silence limit if on (the
        node's ticker checks when a follower's fetches go silent; the simulation polls)."""
        interval = self.replica_lag_time_max_ms // 2
        if self.replica_fetch_silence_max_ms > 0:
            interval = min(interval, max(1, self.replica_fetch_silence_max_ms // 4))
        return interval


@dataclass(slots=True)
class _FetchState:
    leader: int
    leader_epoch: int
    next_fetch_ms: int
    in_flight: int | None = None
    fetch_offset: int = -1
    sent_ms: int = 0


@dataclass(frozen=True, slots=True)
class _WaitingProduce:
    request: ProduceRequest
    src: int
    required_offset: int
    leader_term: int
    base_offset: int
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class _AlterInFlight:
    request_id: int
    change: IsrChange
    sent_ms: int


class SimNode:
    """A simulated broker. Single-threaded; all time comes from the shared ManualClock."""

    def __init__(
        self,
        node_id: int,
        *,
        directory: Path,
        log_config: LogConfig,
        clock: ManualClock,
        timings: NodeTimings,
        send: Callable[[int, int, Message], None],
        trace: Callable[[str], None],
        mutations: Mutations,
        seed: int,
    ) -> None:
        self.node_id = node_id
        self._dir = directory / f"{TOPIC}-{PARTITION}"
        self._log_config = log_config
        self._clock = clock
        self.timings = timings
        self._send_raw = send
        self._trace = trace
        self._mutations = mutations
        self._seed = seed
        self.running = False
        self.incarnation = 0
        self.broker_epoch = -1
        self._log: Log | None = None
        self._partition: Partition | None = None
        self._has_state = False
        self._live: tuple[int, ...] = ()
        self._metadata_version = -1
        self._fetch: _FetchState | None = None
        self._fetch_seq = 0
        self._waiting: list[_WaitingProduce] = []
        self._alter: _AlterInFlight | None = None
        self._alter_seq = 0
        self._next_isr_check_ms = 0
        self._next_checkpoint_ms = 0
        # the checkpoint files, as a restart reads them (they survive crashes)
        self.hw_checkpoint = 0
        self.recovery_point_checkpoint = 0
        self.lowest_truncation: int | None = None
        """The lowest LEO a truncation left since the checker last looked (it re-verifies)."""
        self.stats: Counter[str] = Counter()

    # -- accessors for the checker --
    @property
    def log(self) -> Log:
        assert self._log is not None, f"n{self.node_id} is down"
        return self._log

    @property
    def partition(self) -> Partition:
        assert self._partition is not None, f"n{self.node_id} is down"
        return self._partition

    def _now(self) -> int:
        return self._clock.monotonic_ms()

    def _send(self, dst: int, message: Message) -> None:
        self._send_raw(self.node_id, dst, message)

    # -- lifecycle --
    def start(self) -> None:
        """Open the log as the files and checkpoints left it (recovering it unless this is
        the first start) and host a replica that has no state yet."""
        first = self.incarnation == 0
        self.incarnation += 1
        self._log = Log.open(
            self._dir,
            self._log_config,
            self._clock,
            recovery_point=self.recovery_point_checkpoint,
            had_clean_shutdown=first,
            high_watermark=self.hw_checkpoint,
            rng=random.Random(self._seed * 1000 + self.node_id),
        )
        self._partition = Partition(
            TOPIC,
            PARTITION,
            node_id=self.node_id,
            log=self._log,
            clock=self._clock,
            replica_lag_time_max_ms=self.timings.replica_lag_time_max_ms,
            replica_fetch_silence_max_ms=self.timings.replica_fetch_silence_max_ms,
            replica_fetch_wait_max_ms=self.timings.fetch_idle_ms,
            live_brokers=lambda: self._live,
            on_progress=lambda kinds: None,
        )
        self.running = True
        self._has_state = False
        self._fetch = None
        self._waiting = []
        self._alter = None
        now = self._now()
        self._next_isr_check_ms = now + self.timings.isr_check_interval_ms
        self._next_checkpoint_ms = now + self.timings.checkpoint_interval_ms
        log = self._log
        self._trace(
            f"n{self.node_id}: started (incarnation {self.incarnation}): "
            f"leo={log.log_end_offset} hw={log.high_watermark} "
            f"epochs={log.leader_epoch_entries()}"
        )

    def crash(self) -> None:
        """Stop at once: in-memory state is lost; the files and checkpoints stay."""
        assert self._log is not None
        self._log.close()  # releases the files; does not flush
        self._log = None
        self._partition = None
        self.running = False
        self.broker_epoch = -1
        self._fetch = None
        self._waiting = []
        self._alter = None

    def registered(self, broker_epoch: int) -> None:
        self.broker_epoch = broker_epoch

    # -- message handling --
    def handle(self, src: int, message: Message) -> None:
        match message:
            case LeaderAndIsrRequest():
                self._on_leader_and_isr(message)
            case UpdateMetadataRequest():
                self._update_live(message.version, message.live_brokers)
                self._send(CONTROLLER, UpdateMetadataResponse(message.version))
            case FetchRequest():
                self._on_fetch_request(src, message)
            case FetchResponse():
                self._on_fetch_response(message)
            case ProduceRequest():
                self._on_produce(src, message)
            case ConsumerFetchRequest():
                self._on_consumer_fetch(src, message)
            case AlterPartitionResponse():
                self._on_alter_response(message)
            case _:
                raise AssertionError(f"n{self.node_id} got an unexpected {message!r}")
        self._complete_waiting_produces()

    def _update_live(self, version: int, live: tuple[int, ...]) -> None:
        if version > self._metadata_version:
            self._metadata_version = version
            self._live = live

    def _on_leader_and_isr(self, request: LeaderAndIsrRequest) -> None:
        # as node/core/replica_manager.py: only an older broker epoch is stale
        if request.broker_epoch != -1 and request.broker_epoch < self.broker_epoch:
            self._trace(
                f"n{self.node_id}: LeaderAndIsr#{request.request_id} refused: broker epoch "
                f"{request.broker_epoch} is older than ours ({self.broker_epoch})"
            )
            self._send(
                CONTROLLER, LeaderAndIsrResponse(request.request_id, StaleBrokerEpochError.code)
            )
            return
        self._update_live(request.metadata_version, request.live_brokers)
        self._send(CONTROLLER, LeaderAndIsrResponse(request.request_id, 0))
        state = request.state
        partition = self.partition
        if self._has_state and not partition.is_newer(state):
            return
        self._has_state = True
        if state.leader == self.node_id:
            self._fetch = None
            new_epoch = partition.make_leader(state)
            self._trace(
                f"n{self.node_id}: make_leader ep={state.leader_epoch} isr={list(state.isr)} "
                f"new_epoch={new_epoch} leo={self.log.log_end_offset} hw={self.log.high_watermark}"
            )
        else:
            changed = partition.make_follower(state)
            self._trace(
                f"n{self.node_id}: make_follower leader={state.leader} ep={state.leader_epoch} "
                f"changed={changed}"
            )
            if changed:
                self._fetch = None
                if state.leader >= 0:
                    self._start_fetching(state)

    def _start_fetching(self, state: LeaderAndIsrState) -> None:
        """``ReplicaFetcher.add``: a log without epochs starts from its high watermark."""
        log = self.log
        if log.latest_epoch < 0 and log.log_end_offset > log.high_watermark:
            self._truncate(
                log.high_watermark, "no epochs: start from the high watermark", state.leader_epoch
            )
        self._fetch = _FetchState(state.leader, state.leader_epoch, next_fetch_ms=self._now())

    def _truncate(self, offset: int, why: str, leader_epoch: int) -> None:
        log = self.log
        before = log.log_end_offset
        self.partition.truncate_to(offset, leader_epoch=leader_epoch)
        after = log.log_end_offset
        if after < before:
            self.stats["truncations"] += 1
        self._note_truncation(after)
        self._trace(f"n{self.node_id}: truncate_to({offset}) {why}: leo {before} -> {after}")

    def _note_truncation(self, leo: int) -> None:
        low = self.lowest_truncation
        self.lowest_truncation = leo if low is None else min(low, leo)

    # -- leader side --
    def _on_produce(self, src: int, request: ProduceRequest) -> None:
        partition = self.partition
        epoch = partition.leader_epoch
        term = partition.leader_term
        try:
            info, _ = partition.append_records_to_leader(
                request.records, required_acks=request.acks
            )
        except OdradekError as e:
            self._send(src, ProduceResponse(request.request_id, e.code))
            return
        self._trace(
            f"n{self.node_id}: appended produce#{request.request_id} at "
            f"{info.first_offset}..{info.last_offset} ep={epoch} acks={request.acks}"
        )
        if request.acks == 1:
            self._send(src, ProduceResponse(request.request_id, 0, info.first_offset))
            return
        self._waiting.append(
            _WaitingProduce(
                request,
                src,
                info.last_offset + 1,
                term,
                info.first_offset,
                self._now() + self.timings.produce_timeout_ms,
            )
        )

    def _complete_waiting_produces(self) -> None:
        if not self._waiting or self._partition is None:
            return
        now = self._now()
        still: list[_WaitingProduce] = []
        for w in self._waiting:
            outcome = self._partition.check_replicated(w.required_offset, w.leader_term)
            code: int | None = None
            if outcome is True:
                code = 0
            elif isinstance(outcome, OdradekError):
                code = outcome.code
            elif now >= w.deadline_ms:
                code = RequestTimedOutError.code
            if code is None:
                still.append(w)
                continue
            base = w.base_offset if code == 0 else -1
            if code == NotLeaderOrFollowerError.code:
                base = -1
            self._send(w.src, ProduceResponse(w.request.request_id, code, base))
        self._waiting = still

    def _on_fetch_request(self, src: int, request: FetchRequest) -> None:
        partition = self.partition
        log = self.log
        try:
            result, change = partition.read_for_follower(
                replica_id=request.replica_id,
                fetch_offset=request.fetch_offset,
                max_bytes=self.timings.fetch_max_bytes,
                current_leader_epoch=request.current_leader_epoch,
                last_fetched_epoch=request.last_fetched_epoch,
                follower_log_start_offset=request.log_start_offset,
                broker_epoch=request.broker_epoch,
            )
        except OdradekError as e:
            # carries the leader's offsets, as Kafka's follower would learn them (ListOffsets)
            self._send(
                src,
                FetchResponse(
                    request.fetch_id,
                    e.code,
                    high_watermark=log.high_watermark,
                    log_start_offset=log.log_start_offset,
                    log_end_offset=log.log_end_offset,
                ),
            )
            return
        if change is not None:
            self._trace(f"n{self.node_id}: proposes ISR expansion to {list(change.new_isr)}")
            self._submit_alter(change)
        self._send(
            src,
            FetchResponse(
                request.fetch_id,
                0,
                records_bytes(result.records),
                result.high_watermark,
                result.log_start_offset,
                result.log_end_offset,
                result.diverging_epoch,
            ),
        )

    def _on_consumer_fetch(self, src: int, request: ConsumerFetchRequest) -> None:
        try:
            result = self.partition.read_for_consumer(
                fetch_offset=request.fetch_offset,
                max_bytes=request.max_bytes,
                current_leader_epoch=-1,
            )
        except OdradekError as e:
            self._send(src, ConsumerFetchResponse(request.request_id, e.code))
            return
        self._send(
            src,
            ConsumerFetchResponse(
                request.request_id, 0, records_bytes(result.records), result.high_watermark
            ),
        )

    def _submit_alter(self, change: IsrChange) -> None:
        self._alter_seq += 1
        self._alter = _AlterInFlight(self._alter_seq, change, self._now())
        self._send(
            CONTROLLER,
            AlterPartitionRequest(self._alter_seq, self.node_id, self.broker_epoch, change),
        )

    def resend_alter(self) -> None:
        """Give up on the AlterPartition call in flight and make it again (as the real sender
        does after a transport error: the answer to the first call, if any, is ignored)."""
        assert self._alter is not None, f"n{self.node_id} has no AlterPartition in flight"
        self._submit_alter(self._alter.change)

    def _on_alter_response(self, response: AlterPartitionResponse) -> None:
        alter = self._alter
        if alter is None or alter.request_id != response.request_id:
            return  # an answer to a call we gave up on
        self._alter = None
        if response.error_code:
            self.partition.complete_isr_change(
                alter.change, error=error_for_code(response.error_code)
            )
        else:
            self.partition.complete_isr_change(
                alter.change,
                error=None,
                isr=response.isr,
                leader_epoch=response.leader_epoch,
                partition_epoch=response.partition_epoch,
            )

    # -- follower side --
    def _send_fetch(self, st: _FetchState) -> None:
        log = self.log
        self._fetch_seq += 1
        st.in_flight = self._fetch_seq
        st.fetch_offset = log.log_end_offset
        st.sent_ms = self._now()
        last_epoch = -1 if self._mutations.follower_skips_truncation else log.latest_epoch
        self._send(
            st.leader,
            FetchRequest(
                fetch_id=self._fetch_seq,
                replica_id=self.node_id,
                broker_epoch=self.broker_epoch,
                fetch_offset=st.fetch_offset,
                current_leader_epoch=st.leader_epoch,
                last_fetched_epoch=last_epoch,
                log_start_offset=log.log_start_offset,
            ),
        )

    def _on_fetch_response(self, response: FetchResponse) -> None:
        st = self._fetch
        if st is None or st.in_flight != response.fetch_id:
            return  # the fetcher was reset, or gave up on this fetch
        st.in_flight = None
        now = self._now()
        partition = self.partition
        log = self.log
        if response.error_code == 0:
            if response.diverging_epoch is not None:
                self.stats["divergences"] += 1
                if self._mutations.follower_skips_truncation:
                    st.next_fetch_ms = now + self.timings.fetch_backoff_ms
                    return
                self._truncate_on_divergence(response.diverging_epoch)
                st.next_fetch_ms = now
                return
            if response.records:
                try:
                    partition.append_records_as_follower(
                        response.records, st.fetch_offset, leader_epoch=st.leader_epoch
                    )
                except OdradekError as e:
                    if not self._mutations.follower_skips_truncation:
                        raise  # never happens to a correct follower: fail the run loudly
                    # the broken follower otherwise behaves like ReplicaFetcher: log, retry
                    self._trace(f"n{self.node_id}: follower append failed: {e}")
                    st.next_fetch_ms = now + self.timings.fetch_backoff_ms
                    return
            if self._mutations.follower_hw_from_leader:
                log.update_high_watermark(min(response.high_watermark, log.log_end_offset))
            else:
                partition.update_follower_high_watermark(
                    response.high_watermark, response.log_start_offset, leader_epoch=st.leader_epoch
                )
            grew = log.log_end_offset > st.fetch_offset
            st.next_fetch_ms = now if grew else now + self.timings.fetch_idle_ms
        elif response.error_code == OffsetOutOfRangeError.code:
            self.stats["out_of_range"] += 1
            self._handle_out_of_range(response)
            st.next_fetch_ms = now
        else:
            st.next_fetch_ms = now + self.timings.fetch_backoff_ms

    def _truncate_on_divergence(self, diverging: tuple[int, int]) -> None:
        """``ReplicaFetcher._truncate_on_divergence``."""
        log = self.log
        epoch, end_offset = diverging
        state = rules.follower_truncation(
            leader_epoch=epoch,
            leader_end_offset=end_offset,
            follower_end_for_leader_epoch=log.end_offset_for_epoch(epoch),
            follower_leo=log.log_end_offset,
            follower_high_watermark=log.high_watermark,
        )
        assert self._fetch is not None
        self._truncate(
            state.offset,
            f"diverging epoch {epoch} ends at {end_offset}",
            self._fetch.leader_epoch,
        )

    def _handle_out_of_range(self, response: FetchResponse) -> None:
        """``ReplicaFetcher._handle_out_of_range`` (Kafka's ``fetchOffsetAndTruncate``)."""
        log = self.log
        leo = log.log_end_offset
        assert self._fetch is not None
        epoch = self._fetch.leader_epoch
        if response.log_end_offset < leo:
            self._truncate(response.log_end_offset, "out of range: above the leader's LEO", epoch)
        elif response.log_start_offset > leo:
            self.partition.truncate_fully_and_start_at(
                response.log_start_offset, leader_epoch=epoch
            )
            self._note_truncation(log.log_end_offset)
            self._trace(f"n{self.node_id}: restarted log at {response.log_start_offset}")

    # -- timers --
    def tick(self) -> None:
        """Whatever is due: a fetch, the ISR-expiration task, an AlterPartition retry, waiting
        produce requests, the checkpoints."""
        if not self.running:
            return
        now = self._now()
        st = self._fetch
        if st is not None:
            timed_out = (
                st.in_flight is not None and now - st.sent_ms >= self.timings.fetch_timeout_ms
            )
            if timed_out or (st.in_flight is None and now >= st.next_fetch_ms):
                self._send_fetch(st)
        partition = self.partition
        if now >= self._next_isr_check_ms:
            self._next_isr_check_ms = now + self.timings.isr_check_interval_ms
            change = partition.maybe_shrink_isr()
            if change is not None:
                self._trace(f"n{self.node_id}: proposes ISR shrink to {list(change.new_isr)}")
                self._submit_alter(change)
        alter = self._alter
        if alter is not None and now - alter.sent_ms >= self.timings.alter_retry_ms:
            self.resend_alter()
        self._complete_waiting_produces()
        if now >= self._next_checkpoint_ms:
            self._next_checkpoint_ms = now + self.timings.checkpoint_interval_ms
            self.hw_checkpoint = self.log.high_watermark
            self.recovery_point_checkpoint = self.log.recovery_point

    def describe(self) -> str:
        if not self.running:
            return f"n{self.node_id}: down"
        p, log = self.partition, self.log
        role = "leader" if p.is_leader else f"follower of {p.leader_id}"
        isr = f" isr={sorted(p.isr)}" if p.is_leader else ""
        return (
            f"n{self.node_id}: {role} ep={p.leader_epoch} pe={p.partition_epoch}{isr} "
            f"leo={log.log_end_offset} hw={log.high_watermark} be={self.broker_epoch} "
            f"epochs={log.leader_epoch_entries()}"
        )
