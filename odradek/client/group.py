"""A consumer's group membership (KIP-848): coordinator, heartbeats, reconciliation, commits.

The client half of Kafka's consumer group protocol (Kafka's ``ConsumerMembershipManager``,
``ConsumerHeartbeatRequestManager`` and ``CommitRequestManager``). Heartbeats go out from the
member's heartbeat thread, whether or not the application is in :meth:`odradek.Consumer.poll`:
a member busy with a batch keeps its partitions. The other group requests (auto-commits, the
commit before a revocation, committed offsets) go out one at a time from a worker thread;
``poll`` takes each answer in and never waits for one. Listeners and assignment changes run on
the poll thread only.

* **Coordinator.** Found with ``FindCoordinator`` (any node answers); NOT_COORDINATOR,
  COORDINATOR_NOT_AVAILABLE and COORDINATOR_LOAD_IN_PROGRESS (or an unreachable coordinator)
  make the member look it up again and retry.
* **Membership.** The member id is a random UUID generated once (KIP-1082). It joins with
  epoch 0 and its subscription, then heartbeats every ``heartbeat_interval_ms`` (the
  coordinator's) with its epoch and the partitions it owns. An assignment in an answer is
  reconciled step by step: partitions no longer assigned are paused at once, revoked once
  their positions are committed (with auto-commit), then ``on_partitions_revoked``; newly
  assigned ones get the group's committed offsets as positions (``auto_offset_reset`` where
  none is committed), then ``on_partitions_assigned``; the next heartbeat, sent at once,
  acknowledges. Partitions that stay assigned are never touched: their fetching goes on.
* **Fencing.** FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID: every partition is lost
  (``on_partitions_lost``, nothing committed, at the next ``poll``) and the member rejoins with
  epoch 0.
* **The poll interval.** Only ``max_poll_interval_ms`` bounds the time between two ``poll``
  calls: past it the heartbeat thread leaves the group (epoch -1, -2 for a static member) so
  that the partitions move to members that poll; the next ``poll`` treats them as lost
  (``on_partitions_lost``) and joins again (Kafka's poll timer).
  UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR, INVALID_REQUEST and other
  non-retriable errors are raised from ``poll``.
* **Leaving.** ``close`` and ``unsubscribe`` commit (with auto-commit), call
  ``on_partitions_revoked`` with the partitions owned (``on_partitions_lost`` if the member was
  fenced or past its poll interval), then leave: epoch -1, or -2 for a static member
  (``group_instance_id``), whose partitions wait for it for the session timeout.

Not thread-safe: used from the consumer's thread only. The heartbeat thread shares only the
state under ``_lock`` (epoch, heartbeat schedule, the answers it leaves for ``poll``).
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass
from typing import Protocol, TypeVar

import grpc

from odradek.client.connection import ConnectionPool, call
from odradek.client.errors import NetworkError, error_from_code
from odradek.client.metadata import MetadataCache
from odradek.client.types import TopicPartition
from odradek.clock import Clock
from odradek.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    FencedMemberEpochError,
    GroupIdNotFoundError,
    NotCoordinatorError,
    OdradekError,
    RequestTimedOutError,
    StaleMemberEpochError,
    UnknownMemberIdError,
)
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = [
    "ConsumerRebalanceListener",
    "GroupClient",
    "GroupMember",
    "OffsetAndMetadata",
    "close_group_member",
    "new_group_member",
]

log = logging.getLogger("odradek.consumer.group")

_COORDINATOR_ERRORS = (
    NotCoordinatorError,
    CoordinatorNotAvailableError,
    CoordinatorLoadInProgressError,
)
_REJOIN_ERRORS = (FencedMemberEpochError, UnknownMemberIdError, GroupIdNotFoundError)
MAX_POLL_INTERVAL_MS = 300_000
"""Kafka's ``max.poll.interval.ms`` default; sent on join as the rebalance timeout."""

_HEARTBEAT_THREAD_TICK_MS = 100
"""The longest the heartbeat thread sleeps before looking at the clock again."""

_PENDING_CHECK_MS = 5
"""How often ``poll`` looks for the answer of a group request in flight."""

Resp = TypeVar("Resp")


@dataclass(frozen=True, slots=True)
class _Pending:
    """A group request sent from the worker thread, and what to do on the poll thread with
    its outcome."""

    future: Future[object]
    then: Callable[[Future[object]], None]


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset: the next record to read, its leader epoch, and free-form metadata."""

    offset: int
    metadata: str = ""
    leader_epoch: int | None = None


class ConsumerRebalanceListener(Protocol):
    """Callbacks around assignment changes, called from ``poll`` (Kafka's
    ``ConsumerRebalanceListener``). Any may be left out of an object passed to ``subscribe``."""

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None: ...

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None: ...

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None: ...


class GroupClient:
    """The group RPCs of one group, sent to its coordinator (found and re-found as needed)."""

    def __init__(
        self,
        group_id: str,
        pool: ConnectionPool,
        metadata: MetadataCache,
        clock: Clock,
        *,
        request_timeout_ms: int,
        retry_backoff_ms: int,
    ) -> None:
        self.group_id = group_id
        self._pool = pool
        self._metadata = metadata
        self._clock = clock
        self._request_timeout_ms = request_timeout_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._coordinator: str | None = None
        self.coordinator_id = -1
        """The coordinator's node id, once found (-1 before)."""

    def forget_coordinator(self) -> None:
        self._coordinator = None

    def coordinator(self) -> str:
        """The coordinator's address. Raises COORDINATOR_NOT_AVAILABLE (retriable) or the
        typed error of FindCoordinator."""
        if self._coordinator is not None:
            return self._coordinator
        last: OdradekError = CoordinatorNotAvailableError("no node answered FindCoordinator")
        for address in self._metadata.candidates():
            try:
                response = call(
                    self._pool.broker(address).FindCoordinator,
                    pb.FindCoordinatorRequest(group_ids=[self.group_id]),
                    address=address,
                    timeout_ms=self._request_timeout_ms,
                )
            except OdradekError as exc:
                last = exc
                continue
            (c,) = response.coordinators
            if c.error_code:
                raise error_from_code(c.error_code, c.error_message, f"group {self.group_id}")
            self._coordinator = f"{c.host}:{c.port}"
            self.coordinator_id = c.node_id
            return self._coordinator
        raise last

    def send(
        self,
        rpc: Callable[[pb_grpc.BrokerStub], grpc.UnaryUnaryMultiCallable[object, Resp]],
        request: object,
        error_of: Callable[[Resp], tuple[int, str]],
    ) -> Resp:
        """One call to the coordinator. Coordinator errors (in the answer or an unreachable
        node) forget the coordinator and raise, retriable; other errors in the answer are
        raised typed."""
        address = self.coordinator()
        try:
            response = call(
                rpc(self._pool.broker(address)),
                request,
                address=address,
                timeout_ms=self._request_timeout_ms,
            )
        except (NetworkError, RequestTimedOutError):
            self.forget_coordinator()
            raise
        code, message = error_of(response)
        if code:
            error = error_from_code(code, message, f"group {self.group_id}")
            if isinstance(error, _COORDINATOR_ERRORS):
                self.forget_coordinator()
            raise error
        return response

    def retrying(self, attempt: Callable[[], Resp], timeout_ms: int) -> Resp:
        """``attempt()`` until it does not raise a retriable error or ``timeout_ms`` passes."""
        deadline = self._clock.monotonic_ms() + timeout_ms
        while True:
            try:
                return attempt()
            except OdradekError as exc:
                if not exc.retriable or self._clock.monotonic_ms() >= deadline:
                    raise
                log.debug("group %s: %s; retrying", self.group_id, exc)
                time.sleep(self._retry_backoff_ms / 1000)

    # -- offsets -----------------------------------------------------------------------------

    def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        member_id: str,
        member_epoch: int,
        timeout_ms: int,
    ) -> None:
        """OffsetCommit; raises the first partition's error (typed), after retrying retriable
        ones for ``timeout_ms``."""
        if not offsets:
            return
        by_topic: dict[str, list[pb.OffsetCommitPartition]] = {}
        for tp, om in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(
                pb.OffsetCommitPartition(
                    partition=tp.partition,
                    committed_offset=om.offset,
                    committed_leader_epoch=-1 if om.leader_epoch is None else om.leader_epoch,
                    committed_metadata=om.metadata,
                )
            )
        request = pb.OffsetCommitRequest(
            group_id=self.group_id,
            member_id=member_id,
            member_epoch=member_epoch,
            topics=[pb.OffsetCommitTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
        )

        def attempt() -> pb.OffsetCommitResponse:
            response = self.send(
                lambda s: s.OffsetCommit,  # type: ignore[arg-type, return-value]
                request,
                lambda r: (r.error_code, ""),
            )
            for p in response.partitions:
                if p.error_code:
                    error = error_from_code(
                        p.error_code, p.error_message, f"{p.topic}-{p.partition}"
                    )
                    if isinstance(error, _COORDINATOR_ERRORS):
                        self.forget_coordinator()
                    raise error
            return response

        self.retrying(attempt, timeout_ms)

    def committed(
        self, partitions: Collection[TopicPartition] | None, timeout_ms: int
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets of ``partitions`` (None: every committed one)."""
        topics: dict[str, list[int]] = {}
        for tp in partitions or ():
            topics.setdefault(tp.topic, []).append(tp.partition)
        request = pb.OffsetFetchRequest(
            group_id=self.group_id,
            member_epoch=-1,
            all_topics=partitions is None,
            topics=[pb.OffsetFetchTopic(name=t, partitions=ps) for t, ps in topics.items()],
        )
        response: pb.OffsetFetchResponse = self.retrying(
            lambda: self.send(
                lambda s: s.OffsetFetch,  # type: ignore[arg-type, return-value]
                request,
                lambda r: (r.error_code, r.error_message),
            ),
            timeout_ms,
        )
        out: dict[TopicPartition, OffsetAndMetadata | None] = {}
        for p in response.partitions:
            tp = TopicPartition(p.topic, p.partition)
            if p.error_code:
                raise error_from_code(p.error_code, p.error_message, str(tp))
            out[tp] = (
                None
                if p.committed_offset < 0
                else OffsetAndMetadata(
                    p.committed_offset,
                    p.metadata,
                    None if p.committed_leader_epoch < 0 else p.committed_leader_epoch,
                )
            )
        return out


class ConsumerHooks(Protocol):
    """What the membership needs of its consumer."""

    def _group_assignment(self) -> set[TopicPartition]: ...

    def _group_set_assignment(
        self, partitions: set[TopicPartition], positions: Mapping[TopicPartition, int]
    ) -> None: ...

    def _group_positions(self) -> dict[TopicPartition, int]: ...

    def pause(self, *partitions: TopicPartition) -> None: ...


class GroupMember:
    """A consumer's membership of a KIP-848 group. Not thread-safe (its heartbeat thread is
    internal)."""

    def __init__(
        self,
        client: GroupClient,
        consumer: ConsumerHooks,
        clock: Clock,
        *,
        group_instance_id: str | None,
        client_id: str,
        enable_auto_commit: bool,
        auto_commit_interval_ms: int,
        request_timeout_ms: int,
        retry_backoff_ms: int,
        metadata: MetadataCache,
        max_poll_interval_ms: int = MAX_POLL_INTERVAL_MS,
        server_assignor: str | None = None,
    ) -> None:
        self.client = client
        self._consumer = consumer
        self._clock = clock
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.enable_auto_commit = enable_auto_commit
        self.auto_commit_interval_ms = auto_commit_interval_ms
        self.max_poll_interval_ms = max_poll_interval_ms
        self.server_assignor = server_assignor
        self._request_timeout_ms = request_timeout_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._metadata = metadata
        self.member_id = str(uuid.uuid4())
        self.member_epoch = 0
        self.heartbeat_interval_ms = 1_000
        self._topics: tuple[str, ...] = ()
        self._pattern: re.Pattern[str] | None = None
        self._listener: object | None = None
        self._next_heartbeat_ms = 0
        self._next_commit_ms = clock.monotonic_ms() + auto_commit_interval_ms
        self._subscription_changed = True
        self._subscription_version = 0
        self._had_pattern = False
        self._sent_subscription = 0
        self._pending: _Pending | None = None
        self._executor: ThreadPoolExecutor | None = None
        self.subscribed = False
        # Shared with the heartbeat thread, under _lock:
        self._lock = threading.Condition(threading.RLock())
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._in_flight = False  # a heartbeat is on its way
        self._answers = 0  # heartbeat answers taken in (heartbeat() waits for the next)
        self._generation = 0  # bumped when the poll thread resets the membership
        self._owned: frozenset[TopicPartition] = frozenset()  # as the heartbeat reports them
        self._deferred: pb.ConsumerGroupHeartbeatResponse | None = None  # to reconcile
        self._fenced: OdradekError | None = None  # a rejoin error for the poll thread
        self._fatal: BaseException | None = None  # raised from the next poll
        self._poll_expired = False  # left the group: max_poll_interval_ms passed
        self._last_poll_ms = clock.monotonic_ms()

    # -- subscription ------------------------------------------------------------------------

    def subscribe(
        self, topics: Iterable[str] | None, pattern: re.Pattern[str] | None, listener: object
    ) -> None:
        """Subscribe to ``topics`` or to the topics ``pattern`` matches in full. The pattern is
        sent to the coordinator (``SubscribedTopicRegex``), which resolves it against the
        cluster's topics, now and as topics are created. Raises ``ValueError`` for a pattern
        compiled with flags (they cannot be sent: write them inline, ``(?i)``)."""
        if pattern is not None and re.compile(pattern.pattern).flags != pattern.flags:
            raise ValueError(
                "a pattern's flags are not sent to the coordinator: write them inline, e.g. (?i)"
            )
        with self._lock:
            self._listener = listener
            self._had_pattern = self._had_pattern or self._pattern is not None
            self._pattern = pattern
            self._topics = () if pattern is not None else tuple(sorted(set(topics or ())))
            self._metadata.add_topics(self._topics)
            self.subscribed = True
            self._subscription_changed = True
            self._subscription_version += 1
            self._next_heartbeat_ms = 0
            self._last_poll_ms = self._clock.monotonic_ms()
            self._stopping = False
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._heartbeat_loop,
                    name=f"odradek-heartbeat-{self.client.group_id}",
                    daemon=True,
                )
                self._thread.start()
            self._lock.notify_all()

    def subscription(self) -> set[str]:
        """The topic names subscribed to; for a pattern, the topics assigned from it."""
        if self._pattern is not None:
            return {tp.topic for tp in self._consumer._group_assignment()}
        return set(self._topics)

    # -- the heartbeat thread ----------------------------------------------------------------
    #
    # Why a thread of its own: a member is alive as long as it heartbeats, and an application
    # may work on a batch for longer than the session timeout between two polls. Kafka's
    # consumer heartbeats from its background thread; only max.poll.interval.ms bounds the
    # time between polls. The thread sends heartbeats and takes in their answers (epoch,
    # interval); what needs the application's thread (an assignment to reconcile, a fencing to
    # call on_partitions_lost for, a fatal error) it leaves for the next poll.

    def _heartbeat_loop(self) -> None:
        while True:
            with self._lock:
                action = self._next_action()
                if action is None:
                    return
                generation = self._generation
            kind, request = action
            response: pb.ConsumerGroupHeartbeatResponse | None = None
            error: BaseException | None = None
            try:
                response = self.client.send(
                    lambda s: s.ConsumerGroupHeartbeat,  # type: ignore[arg-type, return-value]
                    request,
                    lambda r: (r.error_code, r.error_message),
                )
            except Exception as exc:
                error = exc
            with self._lock:
                if self._thread is not threading.current_thread():
                    return  # left (and maybe subscribed again: another thread heartbeats)
                self._in_flight = False
                if kind == "leave":
                    if error is not None:
                        log.info("group %s: leaving failed: %s", self.client.group_id, error)
                elif generation == self._generation:
                    self._heartbeat_answered(request, response, error)
                self._answers += 1
                self._lock.notify_all()

    def _next_action(self) -> tuple[str, pb.ConsumerGroupHeartbeatRequest] | None:
        """Under the lock: wait until a heartbeat (or a leave) is due and return it, or
        ``None`` when the thread is to stop."""
        while True:
            if self._stopping or self._thread is not threading.current_thread():
                return None
            now = self._clock.monotonic_ms()
            active = (
                self.subscribed
                and self._fenced is None
                and self._fatal is None
                and not self._poll_expired
            )
            if active and now - self._last_poll_ms > self.max_poll_interval_ms:
                log.warning(
                    "group %s: member %s did not poll for %d ms (max_poll_interval_ms %d): "
                    "leaving the group; its partitions are lost and it joins again at its "
                    "next poll (poll more often, or process less per poll: "
                    "max_poll_records, or raise max_poll_interval_ms)",
                    self.client.group_id,
                    self.member_id,
                    now - self._last_poll_ms,
                    self.max_poll_interval_ms,
                )
                self._poll_expired = True
                self._generation += 1
                epoch, self.member_epoch = self.member_epoch, 0
                if epoch > 0:
                    self._in_flight = True
                    return "leave", self._leave_request()
                continue
            if active and not self._in_flight and now >= self._next_heartbeat_ms:
                self._in_flight = True
                self._next_heartbeat_ms = now + self.heartbeat_interval_ms
                return "heartbeat", self._heartbeat_request()
            wait_ms = _HEARTBEAT_THREAD_TICK_MS
            if active and not self._in_flight:
                wait_ms = min(wait_ms, self._next_heartbeat_ms - now)
            if active:
                wait_ms = min(wait_ms, self._last_poll_ms + self.max_poll_interval_ms + 1 - now)
            self._lock.wait(max(wait_ms, 1) / 1000)

    def _heartbeat_request(self) -> pb.ConsumerGroupHeartbeatRequest:
        """Under the lock: the heartbeat to send (the partitions owned as of now)."""
        full = self.member_epoch == 0 or self._subscription_changed
        owned: dict[str, list[int]] = {}
        cluster = self._metadata.snapshot()
        for tp in self._owned:
            topic = cluster.topics.get(tp.topic)
            if topic is not None:
                owned.setdefault(topic.topic_id, []).append(tp.partition)
        request = pb.ConsumerGroupHeartbeatRequest(
            group_id=self.client.group_id,
            member_id=self.member_id,
            member_epoch=self.member_epoch,
            rebalance_timeout_ms=self.max_poll_interval_ms if full else -1,
            has_subscribed_topic_names=full,
            subscribed_topic_names=list(self._topics) if full else [],
            has_topic_partitions=True,
            topic_partitions=[
                pb.HeartbeatTopicPartitions(topic_id=t, partitions=sorted(ps))
                for t, ps in sorted(owned.items())
            ],
            client_id=self.client_id,
        )
        if self.group_instance_id is not None:
            request.instance_id = self.group_instance_id
        if full and self.server_assignor is not None:
            request.server_assignor = self.server_assignor
        if full and self._pattern is not None:
            request.subscribed_topic_regex = self._pattern.pattern
        elif full and self._had_pattern:
            request.subscribed_topic_regex = ""  # names now: the pattern no longer applies
        self._sent_subscription = self._subscription_version
        return request

    def _heartbeat_answered(
        self,
        request: pb.ConsumerGroupHeartbeatRequest,
        response: pb.ConsumerGroupHeartbeatResponse | None,
        error: BaseException | None,
    ) -> None:
        """Under the lock, on the heartbeat thread: take in a heartbeat's answer."""
        now = self._clock.monotonic_ms()
        if error is not None:
            if not isinstance(error, OdradekError):
                self._fatal = error
            elif isinstance(error, _REJOIN_ERRORS):
                self._fenced = error
            elif error.retriable:
                log.debug("group %s: heartbeat failed: %s", self.client.group_id, error)
                self._next_heartbeat_ms = now + self._retry_backoff_ms
            else:
                self._fatal = error
            return
        assert response is not None
        if self._sent_subscription == self._subscription_version:
            self._subscription_changed = False
        self.member_epoch = response.member_epoch
        self.heartbeat_interval_ms = max(response.heartbeat_interval_ms, 1)
        self._next_heartbeat_ms = now + self.heartbeat_interval_ms
        if response.has_assignment:
            self._deferred = response  # the newest wins; the poll thread reconciles it

    def _heartbeat_now(self) -> None:
        with self._lock:
            self._next_heartbeat_ms = self._clock.monotonic_ms()
            self._lock.notify_all()

    # -- polling -----------------------------------------------------------------------------
    #
    # Why a worker thread too: the commit before a revocation and the committed offsets of new
    # partitions each wait for the coordinator, whose answers wait for an acks=-1 write to
    # __consumer_offsets. Sent from the poll thread they stopped it for that long, and so
    # stopped the delivery of the partitions that do not move. One worker thread sends them,
    # one at a time, and ``poll`` takes in the answer when it is there (listeners and
    # assignment changes stay on the poll thread).

    def time_to_next_ms(self) -> int:
        """How long ``poll`` may block before the membership needs it again (a few
        milliseconds while a request of the group is in flight or an answer waits)."""
        now = self._clock.monotonic_ms()
        with self._lock:
            if (
                self._pending is not None
                or self._in_flight
                or self._deferred is not None
                or self._fenced is not None
                or self._fatal is not None
                or self._poll_expired
            ):
                return _PENDING_CHECK_MS
            due = self._next_heartbeat_ms
        if self.enable_auto_commit:
            due = min(due, self._next_commit_ms)
        return max(due - now, _PENDING_CHECK_MS)

    def poll(self) -> None:
        """Take in what the heartbeat thread left (a fencing, an expired poll interval, an
        assignment) and the answer of the group request in flight (reconciling an assignment
        one step further), or send an auto-commit that is due. Never waits for the network.
        Raises the non-retriable errors of the protocol."""
        if not self.subscribed:
            return
        with self._lock:
            self._last_poll_ms = self._clock.monotonic_ms()
            fatal, self._fatal = self._fatal, None
            fenced, self._fenced = self._fenced, None
            expired, self._poll_expired = self._poll_expired, False
            self._lock.notify_all()
        if fatal is not None:
            raise fatal
        if fenced is not None or expired:
            log.info(
                "group %s: %s; rejoining",
                self.client.group_id,
                fenced if fenced is not None else "left after max_poll_interval_ms",
            )
            self._lose_all()
            return
        if self._pending is not None:
            if not self._pending.future.done():
                return
            pending, self._pending = self._pending, None
            pending.then(pending.future)
            return  # the next step, if any, is in flight; else the next poll sends what is due
        with self._lock:
            deferred, self._deferred = self._deferred, None
        if deferred is not None:
            self._reconcile(deferred)
            if self._reconciling():
                return
        now = self._clock.monotonic_ms()
        if self.enable_auto_commit and now >= self._next_commit_ms and self.member_epoch > 0:
            self._next_commit_ms = now + self.auto_commit_interval_ms
            positions = self._consumer._group_positions()
            if positions:
                self._submit(self._commit_work(positions, timeout_ms=0), self._auto_committed)

    def _reconciling(self) -> bool:
        """A step of a reconciliation (or a commit) is in flight on the worker."""
        return self._pending is not None

    def _submit(self, work: Callable[[], object], then: Callable[[Future[object]], None]) -> None:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="odradek-group")
        self._pending = _Pending(self._executor.submit(work), then)

    def _commit_work(
        self, positions: Mapping[TopicPartition, int], timeout_ms: int
    ) -> Callable[[], None]:
        """A commit of ``positions`` as this member at its current epoch, for the worker."""
        offsets = {tp: OffsetAndMetadata(o) for tp, o in positions.items()}
        member_id, epoch = self.member_id, self.member_epoch
        return lambda: self.client.commit(offsets, member_id, epoch, timeout_ms)

    def _wait_pending(self) -> None:
        """Finish the request in flight and take in its answer (blocking)."""
        while self._pending is not None:
            pending, self._pending = self._pending, None
            wait_futures([pending.future])
            pending.then(pending.future)

    def _auto_committed(self, future: Future[object]) -> None:
        exc = future.exception()
        if exc is not None:
            if not isinstance(exc, OdradekError):
                raise exc
            log.info("group %s: auto-commit failed: %s", self.client.group_id, exc)

    def heartbeat(self) -> None:
        """Have a heartbeat sent now and wait for its answer (at most the request timeout);
        the epoch it brings is this member's when it returns. Thread-safe."""
        with self._lock:
            target = self._answers + (2 if self._in_flight else 1)
            self._next_heartbeat_ms = self._clock.monotonic_ms()
            self._lock.notify_all()
            self._lock.wait_for(
                lambda: (
                    self._answers >= target
                    or self._stopping
                    or self._fenced is not None
                    or self._fatal is not None
                ),
                timeout=self._request_timeout_ms / 1000,
            )

    def _reconcile(self, response: pb.ConsumerGroupHeartbeatResponse) -> None:
        """Start moving to the assignment of ``response``: revoke first (the partitions
        paused at once, their positions committed in the background with auto-commit, then
        ``on_partitions_revoked``), then look up the committed offsets of the new ones in the
        background, then assign them; then acknowledge with a heartbeat at once. Partitions
        that stay are not touched."""
        target = self._target_of(response)
        if target is None:
            # a topic we have no metadata for yet: keep the assignment for a later poll
            self._metadata.request_update()
            with self._lock:
                if self._deferred is None:
                    self._deferred = response
            return
        owned = self._consumer._group_assignment()
        revoked = owned - target
        added = target - owned
        if not revoked and not added:
            return
        if not revoked:
            self._assign(target, added)
            return
        # no more records of them, and their positions stay where the application is
        self._consumer.pause(*revoked)
        if not self.enable_auto_commit:
            self._revoked(target, revoked, added)
            return
        current = self._consumer._group_positions()
        positions = {tp: o for tp, o in current.items() if tp in revoked}

        def committed(future: Future[object]) -> None:
            exc = future.exception()
            if exc is not None:
                if not isinstance(exc, OdradekError):
                    raise exc
                log.info("group %s: commit before revocation failed: %s", self.client.group_id, exc)
            self._revoked(target, revoked, added)

        self._submit(self._commit_work(positions, self._request_timeout_ms), committed)

    def _target_of(self, response: pb.ConsumerGroupHeartbeatResponse) -> set[TopicPartition] | None:
        """The partitions an assignment names (``None``: a topic not in the metadata yet)."""
        by_id = {t.topic_id: name for name, t in self._metadata.snapshot().topics.items()}
        target: set[TopicPartition] = set()
        for a in response.assignment:
            name = a.topic_name or by_id.get(a.topic_id)
            if name is None:
                return None
            target.update(TopicPartition(name, p) for p in a.partitions)
        return target

    def _set_assignment(
        self, partitions: set[TopicPartition], positions: Mapping[TopicPartition, int]
    ) -> None:
        self._consumer._group_set_assignment(partitions, positions)
        with self._lock:
            self._owned = frozenset(partitions)

    def _revoked(
        self, target: set[TopicPartition], revoked: set[TopicPartition], added: set[TopicPartition]
    ) -> None:
        self._call("on_partitions_revoked", revoked)
        self._set_assignment(self._consumer._group_assignment() - revoked, {})
        if added:
            self._assign(target, added)
        else:
            self._acknowledge(target, added, revoked)

    def _assign(self, target: set[TopicPartition], added: set[TopicPartition]) -> None:
        def fetched(future: Future[object]) -> None:
            exc = future.exception()
            if exc is not None:
                if not isinstance(exc, OdradekError) or not exc.retriable:
                    raise exc
                log.info("group %s: committed offsets: %s; retrying", self.client.group_id, exc)
                self._assign(target, added)
                return
            # Heartbeats report the partitions owned, and these are not yet: an answer to one
            # may have given some of them to another member (a rebalance computed meanwhile).
            # So they are taken only with no heartbeat in flight, and not if the newest answer
            # no longer assigns them all: then the next poll reconciles that one instead.
            with self._lock:
                if self._stopping:
                    return
                if self._in_flight:
                    self._pending = _Pending(future, fetched)  # after the answer
                    return
                newer = self._deferred
            if newer is not None:
                newer_target = self._target_of(newer)
                if newer_target is None or not added <= newer_target:
                    log.info(
                        "group %s: the assignment changed while its offsets were looked up; "
                        "reconciling the newer one",
                        self.client.group_id,
                    )
                    return
            committed = future.result()
            assert isinstance(committed, dict)
            positions = {tp: om.offset for tp, om in committed.items() if om is not None}
            self._set_assignment(target, positions)
            self._call("on_partitions_assigned", added)
            self._acknowledge(target, added, set())

        self._submit(lambda: self.client.committed(added, self._request_timeout_ms), fetched)

    def _acknowledge(
        self, target: set[TopicPartition], added: set[TopicPartition], revoked: set[TopicPartition]
    ) -> None:
        self._heartbeat_now()
        log.info(
            "group %s: member %s at epoch %d owns %d partitions (+%d -%d)",
            self.client.group_id,
            self.member_id,
            self.member_epoch,
            len(target),
            len(added),
            len(revoked),
        )

    def _lose_all(self) -> None:
        """Every partition is lost (``on_partitions_lost``); join again with epoch 0."""
        self._pending = None  # a reconciliation under way is void
        with self._lock:
            self._generation += 1  # a heartbeat answer on its way is void too
            self._deferred = None
            self.member_epoch = 0
            self._subscription_changed = True
        owned = self._consumer._group_assignment()
        if owned:
            self._call("on_partitions_lost", owned)
            self._set_assignment(set(), {})
        self._heartbeat_now()

    def _call(self, name: str, partitions: set[TopicPartition]) -> None:
        callback = getattr(self._listener, name, None)
        if callback is None and name == "on_partitions_lost":
            callback = getattr(self._listener, "on_partitions_revoked", None)
        if callback is not None:
            callback(set(partitions))

    # -- commits -----------------------------------------------------------------------------

    def commit_positions(self, positions: Mapping[TopicPartition, int], timeout_ms: int) -> None:
        self.commit({tp: OffsetAndMetadata(o) for tp, o in positions.items()}, timeout_ms)

    def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata], timeout_ms: int) -> None:
        """Commit as this member (its id and epoch; an admin commit while not subscribed),
        retrying retriable errors until ``timeout_ms`` passes, then raising the commit's own
        error; the heartbeat thread keeps the membership meanwhile. STALE_MEMBER_EPOCH makes
        it wait for a heartbeat and try once more."""
        if not self.subscribed:
            self.client.commit(offsets, "", -1, timeout_ms)
            return
        try:
            self.client.commit(offsets, self.member_id, self.member_epoch, timeout_ms)
        except StaleMemberEpochError:
            self.heartbeat()
            self.client.commit(offsets, self.member_id, self.member_epoch, timeout_ms)

    def release_assignment(self) -> None:
        """Before leaving: ``on_partitions_revoked`` with the partitions owned, or
        ``on_partitions_lost`` if the member was fenced or left after its poll interval
        (Kafka's consumer does the same on close and unsubscribe). On the poll thread."""
        owned = self._consumer._group_assignment()
        if not owned:
            return
        with self._lock:
            lost = (
                self.member_epoch <= 0
                or self._fenced is not None
                or self._poll_expired
                or self._fatal is not None
            )
        self._call("on_partitions_lost" if lost else "on_partitions_revoked", owned)

    def _leave_request(self) -> pb.ConsumerGroupHeartbeatRequest:
        request = pb.ConsumerGroupHeartbeatRequest(
            group_id=self.client.group_id,
            member_id=self.member_id,
            member_epoch=-2 if self.group_instance_id is not None else -1,
        )
        if self.group_instance_id is not None:
            request.instance_id = self.group_instance_id
        return request

    def leave(self) -> None:
        """Leave the group (epoch -1; -2 for a static member) and stop the heartbeat thread.
        Errors are logged."""
        with self._lock:
            self._stopping = True
            self._generation += 1
            left = self._poll_expired or self._fenced is not None
            self._lock.notify_all()
        try:
            self._wait_pending()
        except OdradekError as exc:
            log.info("group %s: %s", self.client.group_id, exc)
        finally:
            self._pending = None
            if self._executor is not None:
                self._executor.shutdown(wait=False)
                self._executor = None
        with self._lock:
            self._thread = None  # the thread stops at its next look (a heartbeat's answer)
            self._in_flight = False
            self._deferred = None
            self._fenced = None
            self._fatal = None
            self._poll_expired = False
            self._owned = frozenset()
            epoch, self.member_epoch = self.member_epoch, 0
            was_subscribed, self.subscribed = self.subscribed, False
            self._subscription_changed = True
        if not was_subscribed or epoch <= 0 or left:
            return
        try:
            self.client.send(
                lambda s: s.ConsumerGroupHeartbeat,  # type: ignore[arg-type, return-value]
                self._leave_request(),
                lambda r: (r.error_code, r.error_message),
            )
        except OdradekError as exc:
            log.info("group %s: leaving failed: %s", self.client.group_id, exc)


def new_group_member(
    consumer: ConsumerHooks,
    client: GroupClient,
    metadata: MetadataCache,
    clock: Clock,
    group_instance_id: str | None,
    client_id: str,
    enable_auto_commit: bool,
    auto_commit_interval_ms: int,
    max_poll_interval_ms: int = MAX_POLL_INTERVAL_MS,
    server_assignor: str | None = None,
) -> GroupMember:
    """The membership of a consumer built with a ``group_id`` (not joined until subscribe)."""
    if not client.group_id:
        raise ValueError("group_id must not be empty")
    if group_instance_id == "":
        raise ValueError("group_instance_id must not be empty")
    if auto_commit_interval_ms <= 0:
        raise ValueError(f"auto_commit_interval_ms must be positive, not {auto_commit_interval_ms}")
    if max_poll_interval_ms <= 0:
        raise ValueError(f"max_poll_interval_ms must be positive, not {max_poll_interval_ms}")
    if server_assignor == "":
        raise ValueError("group_remote_assignor must not be empty")
    return GroupMember(
        client,
        consumer,
        clock,
        group_instance_id=group_instance_id,
        client_id=client_id,
        enable_auto_commit=enable_auto_commit,
        auto_commit_interval_ms=auto_commit_interval_ms,
        request_timeout_ms=client._request_timeout_ms,
        retry_backoff_ms=client._retry_backoff_ms,
        metadata=metadata,
        max_poll_interval_ms=max_poll_interval_ms,
        server_assignor=server_assignor,
    )


def close_group_member(member: GroupMember, positions: Mapping[TopicPartition, int]) -> None:
    """Commit ``positions`` (with auto-commit), call the listener for the partitions owned
    (revoked, or lost if fenced) and leave; commit and leave failures are logged."""
    if member.enable_auto_commit and member.subscribed and member.member_epoch > 0 and positions:
        try:
            member.commit_positions(positions, timeout_ms=member._request_timeout_ms)
        except OdradekError as exc:
            log.info("group %s: commit on close failed: %s", member.client.group_id, exc)
    try:
        if member.subscribed:
            member.release_assignment()
    finally:
        member.leave()
