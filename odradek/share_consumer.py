"""``odradek.ShareConsumer``: read a share group's records (KIP-932's queues), over gRPC.

The members of a share group read the **same** partitions; the partition leaders hand each
record to one member at a time, locked until the member acknowledges it (or the lock
expires), and count its deliveries. The shape is confluent-kafka's (and Kafka's
``KafkaShareConsumer``)::

    with odradek.ShareConsumer(bootstrap_servers="127.0.0.1:9092", group_id="workers") as c:
        c.subscribe(["jobs"])
        while True:
            for record in c.poll(timeout_ms=1000):
                handle(record.value)  # implicit mode: accepted by the next poll

Semantics (``docs/sdk.md`` "ShareConsumer" has the long form):

* **Membership** (:mod:`odradek.client.share_membership`): FindCoordinator for the group,
  ShareGroupHeartbeat from a thread of its own at the interval the coordinator answers;
  UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH rejoin with epoch 0.
* **Share sessions**, one per leader of an assigned partition: the first ShareFetch to a
  leader opens it (epoch 0, naming all its partitions), the next ones name the session's next
  epoch (1, 2, …), the partitions added and the ones forgotten (no longer assigned, or led
  elsewhere). SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH or a failed call reset the
  session: the next fetch opens a new one. NOT_LEADER_OR_FOLLOWER (and the other stale
  metadata errors) take the answer's leader hint, refresh the metadata and move the partition
  to its new leader's session.
* **Records** are those the leader says were acquired (``acquired_records``), each with its
  ``delivery_count``; control batches and records outside the acquired ranges are dropped.
* **Acknowledgements.** ``acknowledgement_mode="implicit"`` (the default): the records of a
  poll are accepted by the next :meth:`ShareConsumer.poll`, :meth:`ShareConsumer.commit_sync`,
  :meth:`ShareConsumer.commit_async` or :meth:`ShareConsumer.close`. ``"explicit"``: the
  application calls :meth:`ShareConsumer.acknowledge` with ACCEPT, RELEASE (delivered again,
  its delivery count one more) or REJECT (never delivered again); a record not acknowledged
  stays locked to the member until its lock expires. Acknowledgements ride on the next
  ShareFetch to the record's leader (Kafka's piggy-backing), or go at once in a
  ShareAcknowledge with ``commit_sync`` / ``commit_async``. An acknowledgement that cannot be
  sent because its session was reset is dropped (the record's lock expires and it is
  delivered again: at least once).
* **Close** accepts the outstanding records (implicit mode), closes every share session
  (ShareAcknowledge with epoch -1, which releases the records still held) and leaves the group
  (heartbeat epoch -1).

Not thread-safe (as Kafka's): use a share consumer from one thread; ``commit_async``'s
acknowledgement is sent on a worker thread under the consumer's lock.
"""

from __future__ import annotations

import concurrent.futures
import enum
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal, NamedTuple, Self, Unpack

import grpc

from odradek.client.connection import ConnectionPool, cancel, parse_bootstrap_servers, wait
from odradek.client.errors import error_from_code, is_invalid_metadata
from odradek.client.fetcher import parse_fetched
from odradek.client.group import GroupClient
from odradek.client.metadata import MetadataCache
from odradek.client.security import SecurityConfig, SecurityOptions
from odradek.client.share_membership import ShareMembership
from odradek.client.types import TopicPartition
from odradek.clock import Clock, SystemClock
from odradek.errors import (
    InvalidShareSessionEpochError,
    OdradekError,
    ShareSessionNotFoundError,
)
from odradek.records import TimestampType
from odradek.v1 import odradek_pb2 as pb

__all__ = [
    "AcknowledgeType",
    "ShareConsumer",
    "ShareConsumerConfig",
    "ShareConsumerRecord",
]

log = logging.getLogger("odradek.share_consumer")

AcknowledgementMode = Literal["implicit", "explicit"]
_OPEN_EPOCH = 0
_CLOSE_EPOCH = -1
_MAX_EPOCH = 2**31 - 1
_SESSION_ERRORS = (ShareSessionNotFoundError, InvalidShareSessionEpochError)


class AcknowledgeType(enum.IntEnum):
    """How a record is acknowledged (Kafka's ``AcknowledgeType``, its wire values)."""

    ACCEPT = 1
    """Processed: never delivered again."""
    RELEASE = 2
    """Not processed: delivered again (to any member), its delivery count one more."""
    REJECT = 3
    """Unprocessable: never delivered again."""


class ShareConsumerRecord(NamedTuple):
    """A record as :meth:`ShareConsumer.poll` returns it: a
    :class:`~odradek.ConsumerRecord`'s fields and how many times it was delivered (1 the
    first time)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: TimestampType
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    leader_epoch: int | None
    delivery_count: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class ShareConsumerConfig:
    """A share consumer's settings, with Kafka's names. Raises ``ValueError``."""

    # host:port of one or more nodes to learn the cluster from.
    bootstrap_servers: tuple[str, ...]
    # The share group to join.
    group_id: str
    # implicit: a poll's records are accepted by the next poll/commit; explicit: acknowledge().
    acknowledgement_mode: str = "implicit"
    # The most records a leader hands out per ShareFetch (Kafka's max.poll.records).
    max_poll_records: int = 500
    # How long a leader may hold a ShareFetch that acquired nothing.
    fetch_max_wait_ms: int = 500
    # The most bytes a ShareFetch asks for.
    fetch_max_bytes: int = 52_428_800
    # How long to wait for a node's answer (on top of fetch_max_wait_ms for fetches).
    request_timeout_ms: int = 30_000
    # How long commit_sync() keeps trying by default.
    default_api_timeout_ms: int = 60_000
    # The pause before retrying a failed request.
    retry_backoff_ms: int = 100
    # Metadata older than this is refreshed even without errors.
    metadata_max_age_ms: int = 300_000
    # Check each fetched batch's CRC-32C.
    check_crcs: bool = True
    # Sent to the coordinator and shown by describe.
    client_id: str = "odradek-share-consumer"

    def __post_init__(self) -> None:
        if not isinstance(self.group_id, str) or not self.group_id:
            raise ValueError(f"group_id must be a non-empty string, not {self.group_id!r}")
        if self.acknowledgement_mode not in ("implicit", "explicit"):
            raise ValueError(
                "acknowledgement_mode must be 'implicit' or 'explicit', "
                f"not {self.acknowledgement_mode!r}"
            )
        checks = {
            "max_poll_records": (self.max_poll_records, 1),
            "fetch_max_wait_ms": (self.fetch_max_wait_ms, 0),
            "fetch_max_bytes": (self.fetch_max_bytes, 1),
            "request_timeout_ms": (self.request_timeout_ms, 1),
            "default_api_timeout_ms": (self.default_api_timeout_ms, 0),
            "retry_backoff_ms": (self.retry_backoff_ms, 0),
            "metadata_max_age_ms": (self.metadata_max_age_ms, 1),
        }
        for name, (value, low) in checks.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, not {value!r}")
            if value > _MAX_EPOCH:
                raise ValueError(f"{name} must fit in 32 bits")


@dataclass(eq=False)
class _ShareSession:
    """The member's share session on one leader: the epoch its next request names, the
    partitions the leader has in it, the ones to forget with the next request."""

    address: str
    epoch: int = _OPEN_EPOCH
    partitions: set[TopicPartition] = field(default_factory=set)
    forget: set[TopicPartition] = field(default_factory=set)
    backoff_until_ms: int = 0
    """After a failure: no fetch to this leader before then (monotonic)."""

    def reset(self) -> None:
        self.epoch = _OPEN_EPOCH
        self.partitions.clear()
        self.forget.clear()

    def advance(self) -> None:
        self.epoch = 1 if self.epoch >= _MAX_EPOCH else self.epoch + 1


def acknowledgement_batches(acks: Mapping[int, int]) -> list[pb.ShareAcknowledgementBatch]:
    """``acks`` (offset → acknowledge type) as batches: one per run of consecutive offsets
    with the same type. Pure."""
    out: list[pb.ShareAcknowledgementBatch] = []
    for offset in sorted(acks):
        kind = acks[offset]
        last = out[-1] if out else None
        if (
            last is not None
            and last.last_offset == offset - 1
            and last.acknowledge_types[0] == kind
        ):
            last.last_offset = offset
        else:
            out.append(
                pb.ShareAcknowledgementBatch(
                    first_offset=offset, last_offset=offset, acknowledge_types=[kind]
                )
            )
    return out


class ShareConsumer:
    """A member of the share group ``group_id`` (see the module docstring).

    Construct with ``bootstrap_servers``, ``group_id`` and any :class:`ShareConsumerConfig`
    field as a keyword, plus ``clock`` and the security options. Does not connect until
    :meth:`subscribe`. Raises ``ValueError`` for bad settings. Not thread-safe.
    """

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        group_id: str,
        *,
        acknowledgement_mode: AcknowledgementMode = "implicit",
        max_poll_records: int = 500,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 52_428_800,
        request_timeout_ms: int = 30_000,
        default_api_timeout_ms: int = 60_000,
        retry_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300_000,
        check_crcs: bool = True,
        client_id: str = "odradek-share-consumer",
        clock: Clock | None = None,
        **security: Unpack[SecurityOptions],
    ) -> None:
        self.config = ShareConsumerConfig(
            bootstrap_servers=tuple(parse_bootstrap_servers(bootstrap_servers)),
            group_id=group_id,
            acknowledgement_mode=acknowledgement_mode,
            max_poll_records=max_poll_records,
            fetch_max_wait_ms=fetch_max_wait_ms,
            fetch_max_bytes=fetch_max_bytes,
            request_timeout_ms=request_timeout_ms,
            default_api_timeout_ms=default_api_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            metadata_max_age_ms=metadata_max_age_ms,
            check_crcs=check_crcs,
            client_id=client_id,
        )
        self._implicit = acknowledgement_mode == "implicit"
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
        self._membership = ShareMembership(
            GroupClient(
                group_id,
                self._pool,
                self._metadata,
                self._clock,
                request_timeout_ms=request_timeout_ms,
                retry_backoff_ms=retry_backoff_ms,
            ),
            self._clock,
            client_id=client_id,
            retry_backoff_ms=retry_backoff_ms,
        )
        self._sessions: dict[str, _ShareSession] = {}
        # records delivered and not yet acknowledged, and acknowledgements not yet sent
        self._delivered: dict[TopicPartition, set[int]] = {}
        self._acks: dict[TopicPartition, dict[int, int]] = {}
        self._io = threading.RLock()  # the sessions and acknowledgements: poll vs commit_async
        self._commit_executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._closed = False

    @property
    def member_id(self) -> str:
        return self._membership.member_id

    # --- subscription -----------------------------------------------------------------------

    def subscribe(self, topics: Iterable[str] | str) -> None:
        """Join the share group (or change the subscription) to read ``topics``. Raises
        ``ValueError`` without topics."""
        self._check_open()
        names = [topics] if isinstance(topics, str) else list(topics)
        if not names:
            raise ValueError("subscribe() needs topics")
        self._metadata.add_topics(names)
        self._membership.subscribe(names)

    def subscription(self) -> set[str]:
        return self._membership.subscription()

    def assignment(self) -> set[TopicPartition]:
        """The partitions the group gave this member, by name (metadata is refreshed for a
        topic id it does not know yet)."""
        assigned = self._membership.assignment()
        topics = {t.topic_id: name for name, t in self._metadata.snapshot().topics.items()}
        if any(topic_id not in topics for topic_id in assigned):
            self._metadata.request_update()
            self._metadata.maybe_refresh()
            topics = {t.topic_id: name for name, t in self._metadata.snapshot().topics.items()}
        return {
            TopicPartition(topics[topic_id], p)
            for topic_id, parts in assigned.items()
            if topic_id in topics
            for p in parts
        }

    # --- polling ----------------------------------------------------------------------------

    def poll(self, timeout_ms: int = 0) -> list[ShareConsumerRecord]:
        """Records acquired for this member, waiting up to ``timeout_ms`` for some. In
        implicit mode the records of the previous poll are accepted first (with this poll's
        ShareFetch). Raises the membership's fatal errors and partitions' non-retriable errors
        (typed, e.g. :class:`~odradek.errors.TopicAuthorizationFailedError`)."""
        self._check_open()
        if not self._membership.subscribed:
            raise ValueError("poll() before subscribe()")
        deadline = self._clock.monotonic_ms() + max(timeout_ms, 0)
        with self._io:
            if self._implicit:
                self._accept_delivered()
            while True:
                self._membership.check()
                self._metadata.maybe_refresh()
                records = self._fetch_once(max(deadline - self._clock.monotonic_ms(), 0))
                if records or self._clock.monotonic_ms() >= deadline:
                    return records

    def __iter__(self) -> Iterator[ShareConsumerRecord]:
        """Records forever (until the consumer is closed), polling as needed."""
        while not self._closed:
            yield from self.poll(timeout_ms=1_000)

    def _by_leader(self) -> dict[str, list[tuple[TopicPartition, str]]]:
        """The assigned partitions (with their topic ids) by leader address; a partition whose
        leader or topic is not known yet asks for a metadata refresh."""
        cluster = self._metadata.snapshot()
        names = {t.topic_id: name for name, t in cluster.topics.items()}
        out: dict[str, list[tuple[TopicPartition, str]]] = {}
        for topic_id, parts in sorted(self._membership.assignment().items()):
            name = names.get(topic_id)
            if name is None:
                self._metadata.request_update()
                continue
            for p in parts:
                tp = TopicPartition(name, p)
                address = cluster.leader_address(tp)
                if address is None:
                    self._metadata.request_update()
                    continue
                out.setdefault(address, []).append((tp, topic_id))
        return out

    def _fetch_once(self, max_wait_ms: int) -> list[ShareConsumerRecord]:
        """One ShareFetch to each leader of an assigned partition (or of a session with
        something to send), all at once; their records."""
        by_leader = self._by_leader()
        if not by_leader:
            self._membership.wait_for_assignment(max_wait_ms)
            by_leader = self._by_leader()
            if not by_leader:
                return []
        now = self._clock.monotonic_ms()
        waiting = [
            s.backoff_until_ms
            for a, s in self._sessions.items()
            if a in by_leader and s.backoff_until_ms > now
        ]
        if len(waiting) == len(by_leader):
            # every leader failed a moment ago: wait out the backoff rather than spin
            time.sleep(max(min(min(waiting) - now, max_wait_ms), 0) / 1000)
            return []
        wanted = {tp for parts in by_leader.values() for tp, _ in parts}
        topic_ids = {tp: tid for parts in by_leader.values() for tp, tid in parts}
        # a partition that left a session's leader (unassigned, or led elsewhere) is forgotten
        for session in self._sessions.values():
            here = {tp for tp, _ in by_leader.get(session.address, [])}
            gone = session.partitions - here
            session.partitions -= gone
            session.forget |= gone
        max_wait = min(max_wait_ms, self.config.fetch_max_wait_ms)
        calls: list[tuple[_ShareSession, pb.ShareFetchRequest, grpc.Future[pb.ShareFetchResponse]]]
        calls = []
        cluster = self._metadata.snapshot()
        for address, parts in by_leader.items():
            session = self._sessions.setdefault(address, _ShareSession(address))
            if session.backoff_until_ms > now:
                continue
            request = pb.ShareFetchRequest(
                group_id=self.config.group_id,
                member_id=self.member_id,
                share_session_epoch=session.epoch,
                max_wait_ms=max_wait,
                min_bytes=1,
                max_bytes=self.config.fetch_max_bytes,
                max_records=self.config.max_poll_records,
                batch_size=self.config.max_poll_records,
            )
            for tp, topic_id in parts:
                session.forget.discard(tp)  # assigned here again: named, not forgotten
                acks = self._acks.get(tp) if session.epoch != _OPEN_EPOCH else None
                if tp in session.partitions and not acks:
                    continue  # in the session already: fetched without being named
                request.partitions.append(
                    pb.SharePartitionRequest(
                        topic_id=topic_id,
                        partition=tp.partition,
                        acknowledgements=acknowledgement_batches(acks or {}),
                    )
                )
            if session.epoch != _OPEN_EPOCH:
                for tp in sorted(session.forget):
                    topic = cluster.topics.get(tp.topic)
                    if topic is not None:
                        request.forgotten.append(
                            pb.ShareForgottenPartition(
                                topic_id=topic.topic_id, partition=tp.partition
                            )
                        )
            timeout_s = (max_wait + self.config.request_timeout_ms) / 1000
            future = self._pool.broker(address).ShareFetch.future(request, timeout=timeout_s)
            calls.append((session, request, future))
        records: list[ShareConsumerRecord] = []
        try:
            while calls:
                session, sent, answer = calls.pop()
                records.extend(self._fetched(session, sent, answer, wanted, topic_ids))
        finally:
            for _, _, unanswered in calls:
                cancel(unanswered)
        return records

    def _fetched(
        self,
        session: _ShareSession,
        request: pb.ShareFetchRequest,
        future: grpc.Future[pb.ShareFetchResponse],
        wanted: set[TopicPartition],
        topic_ids: Mapping[TopicPartition, str],
    ) -> list[ShareConsumerRecord]:
        response = self._answer(session, future)
        if response is None:
            return []
        named = {(p.topic_id, p.partition) for p in request.partitions}
        by_id = {(topic_ids[tp], tp.partition): tp for tp in wanted}
        session.partitions |= {by_id[k] for k in named if k in by_id}
        for p in request.partitions:
            tp = by_id.get((p.topic_id, p.partition))
            if tp is not None and p.acknowledgements:
                self._acks.pop(tp, None)  # sent (their outcome is the partition's answer)
        session.forget.clear()
        records: list[ShareConsumerRecord] = []
        for result in response.partitions:
            tp = by_id.get((result.topic_id, result.partition))
            if tp is None:
                continue
            if result.acknowledge_error_code:
                log.warning(
                    "%s: acknowledgement failed: %s",
                    tp,
                    error_from_code(result.acknowledge_error_code, "", str(tp)),
                )
            if result.error_code:
                self._partition_error(session, tp, result)
                continue
            records.extend(self._records_of(tp, result))
        return records

    def _answer(
        self, session: _ShareSession, future: grpc.Future[pb.ShareFetchResponse]
    ) -> pb.ShareFetchResponse | None:
        """The answer of a ShareFetch, or ``None`` after a retriable failure (the session
        reset); raises non-retriable errors."""
        try:
            response = wait(future, session.address)
        except OdradekError as exc:
            if not exc.retriable:
                raise
            log.debug("share fetch from %s failed: %s", session.address, exc)
            self._session_lost(session)
            self._back_off(session)
            self._metadata.request_update()
            return None
        if response.error_code:
            error = error_from_code(
                response.error_code, response.error_message, f"share fetch from {session.address}"
            )
            if isinstance(error, _SESSION_ERRORS):
                log.info("share session on %s: %s; opening a new one", session.address, error)
                self._session_lost(session)
                return None
            if not error.retriable:
                raise error
            self._session_lost(session)
            self._back_off(session)
            return None
        session.advance()
        return response

    def _back_off(self, session: _ShareSession) -> None:
        session.backoff_until_ms = self._clock.monotonic_ms() + self.config.retry_backoff_ms

    def _session_lost(self, session: _ShareSession) -> None:
        """The leader no longer has our session (or may not): a new one is opened. The
        acknowledgements of its partitions are dropped: their records are delivered again
        once their locks expire."""
        for tp in session.partitions:
            self._drop_acks(tp)
        session.reset()

    def _drop_acks(self, tp: TopicPartition) -> None:
        dropped = self._acks.pop(tp, None)
        self._delivered.pop(tp, None)
        if dropped:
            log.info("%s: %d acknowledgement(s) dropped with the share session", tp, len(dropped))

    def _partition_error(
        self, session: _ShareSession, tp: TopicPartition, result: pb.SharePartitionResult
    ) -> None:
        error = error_from_code(result.error_code, result.error_message, str(tp))
        if not error.retriable:
            raise error
        log.debug("share fetch of %s failed: %s", tp, error)
        hinted = result.leader_id >= 0 and self._metadata.update_leader(
            tp, result.leader_id, result.leader_epoch
        )
        if is_invalid_metadata(error):
            self._metadata.request_update()
            # the partition moves to its new leader's session; this leader forgets it
            session.partitions.discard(tp)
            session.forget.add(tp)
        if not hinted:
            self._back_off(session)

    def _records_of(
        self, tp: TopicPartition, result: pb.SharePartitionResult
    ) -> list[ShareConsumerRecord]:
        counts: dict[int, int] = {}
        for a in result.acquired_records:
            for offset in range(a.first_offset, a.last_offset + 1):
                counts[offset] = a.delivery_count
        if not counts:
            return []
        fetched = parse_fetched(tp, result.records, min(counts), check_crcs=self.config.check_crcs)
        out = [
            ShareConsumerRecord(*r, counts[r.offset]) for r in fetched.records if r.offset in counts
        ]
        self._delivered.setdefault(tp, set()).update(r.offset for r in out)
        return out

    # --- acknowledgements -------------------------------------------------------------------

    def acknowledge(
        self, record: ShareConsumerRecord, type: AcknowledgeType = AcknowledgeType.ACCEPT
    ) -> None:
        """Acknowledge ``record`` (sent with the next poll or commit). Raises ``ValueError``
        for a record not delivered to this consumer or acknowledged already."""
        self._check_open()
        kind = AcknowledgeType(type)
        with self._io:
            tp = TopicPartition(record.topic, record.partition)
            held = self._delivered.get(tp)
            if held is None or record.offset not in held:
                raise ValueError(
                    f"{tp} offset {record.offset} is not a record this consumer holds "
                    "unacknowledged"
                )
            held.discard(record.offset)
            self._acks.setdefault(tp, {})[record.offset] = int(kind)

    def _accept_delivered(self) -> None:
        for tp, offsets in self._delivered.items():
            acks = self._acks.setdefault(tp, {})
            for offset in offsets:
                acks[offset] = AcknowledgeType.ACCEPT
        self._delivered.clear()

    def commit_sync(
        self, timeout_ms: int | None = None
    ) -> dict[TopicPartition, OdradekError | None]:
        """Send the acknowledgements not yet sent (implicit mode: accept the last poll's
        records first) and wait for their outcome: per partition ``None`` or the typed error
        (e.g. :class:`~odradek.errors.InvalidRecordStateError`)."""
        self._check_open()
        with self._io:
            return self._acknowledge(timeout_ms, closing=False)

    def commit_async(
        self,
        callback: Callable[[Mapping[TopicPartition, OdradekError | None], Exception | None], None]
        | None = None,
    ) -> concurrent.futures.Future[dict[TopicPartition, OdradekError | None]]:
        """:meth:`commit_sync` on a worker thread; the returned future (and
        ``callback(outcomes, error)``, called from that thread) tell the outcome."""
        self._check_open()
        if self._commit_executor is None:
            self._commit_executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="odradek-share-commit"
            )
        future = self._commit_executor.submit(self.commit_sync)
        if callback is not None:

            def done(
                f: concurrent.futures.Future[dict[TopicPartition, OdradekError | None]],
            ) -> None:
                error = f.exception()
                callback({} if error is not None else f.result(), error)  # type: ignore[arg-type]

            future.add_done_callback(done)
        return future

    def _acknowledge(
        self, timeout_ms: int | None, *, closing: bool
    ) -> dict[TopicPartition, OdradekError | None]:
        """ShareAcknowledge to each session with something to send, or (``closing``) to
        every open session with epoch -1: it is closed after them."""
        if self._implicit:
            self._accept_delivered()
        timeout = self.config.default_api_timeout_ms if timeout_ms is None else timeout_ms
        cluster = self._metadata.snapshot()
        outcomes: dict[TopicPartition, OdradekError | None] = {}
        calls: list[
            tuple[_ShareSession, list[TopicPartition], grpc.Future[pb.ShareAcknowledgeResponse]]
        ] = []
        for session in self._sessions.values():
            mine = sorted(tp for tp in session.partitions if self._acks.get(tp))
            if session.epoch == _OPEN_EPOCH or (not mine and not closing):
                continue
            request = pb.ShareAcknowledgeRequest(
                group_id=self.config.group_id,
                member_id=self.member_id,
                share_session_epoch=_CLOSE_EPOCH if closing else session.epoch,
            )
            for tp in mine:
                topic = cluster.topics.get(tp.topic)
                if topic is None:
                    continue
                request.partitions.append(
                    pb.SharePartitionRequest(
                        topic_id=topic.topic_id,
                        partition=tp.partition,
                        acknowledgements=acknowledgement_batches(self._acks.pop(tp)),
                    )
                )
            future = self._pool.broker(session.address).ShareAcknowledge.future(
                request, timeout=timeout / 1000
            )
            calls.append((session, mine, future))
        for session, mine, answer in calls:
            try:
                response = wait(answer, session.address)
            except OdradekError as exc:
                session.reset()
                outcomes.update(dict.fromkeys(mine, exc))
                continue
            if response.error_code:
                error = error_from_code(
                    response.error_code, response.error_message, f"node {session.address}"
                )
                session.reset()
                outcomes.update(dict.fromkeys(mine, error))
                continue
            session.advance()
            for r in response.partitions:
                tp = TopicPartition(r.topic, r.partition)
                outcomes[tp] = (
                    error_from_code(r.error_code, r.error_message, str(tp))
                    if r.error_code
                    else None
                )
        return outcomes

    # --- lifecycle --------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the share consumer is closed")

    def close(self) -> None:
        """Accept the outstanding records (implicit mode), close the share sessions
        (releasing the records still held) and leave the group. Idempotent; errors of the
        final acknowledgements and the leave are logged, not raised."""
        if self._closed:
            return
        if self._commit_executor is not None:
            self._commit_executor.shutdown(wait=True)
        with self._io:
            try:
                outcomes = self._acknowledge(self.config.request_timeout_ms, closing=True)
            except OdradekError as exc:
                log.info("closing the share sessions failed: %s", exc)
            else:
                for tp, error in outcomes.items():
                    if error is not None:
                        log.info("%s: final acknowledgement failed: %s", tp, error)
            self._sessions.clear()
            self._membership.leave()
            self._closed = True
            self._pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
