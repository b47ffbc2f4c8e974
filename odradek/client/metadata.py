"""The client's view of the cluster: brokers, the controller, and who leads each partition.

:class:`ClusterMetadata` is an immutable snapshot built from a ``Metadata`` answer.
:class:`MetadataCache` holds the current snapshot and refreshes it: on demand (a topic the
client has not seen, an error saying a leader moved), and when it is older than
``metadata_max_age_ms`` (Kafka's ``metadata.max.age.ms``, 5 minutes).

Leader epochs only go forward: a partition in a new answer whose leader epoch is lower than
the one already known is ignored (a node with stale metadata answered), unless the topic id
changed (the topic was deleted and created again). This is Kafka's
``Metadata.updateLatestMetadata`` rule; without it a client could flip back to a deposed
leader and be fenced over and over.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from odradek.client.connection import ConnectionPool, call, format_address
from odradek.client.errors import NetworkError, error_from_code
from odradek.client.leader_watch import order_candidates
from odradek.client.tls_diagnosis import SslAuthenticationError
from odradek.client.types import TopicPartition
from odradek.clock import Clock
from odradek.errors import (
    OdradekError,
    RequestTimedOutError,
    SaslAuthenticationFailedError,
    TopicAuthorizationFailedError,
    UnsupportedSaslMechanismError,
)
from odradek.v1 import odradek_pb2 as pb

__all__ = [
    "BrokerInfo",
    "ClusterMetadata",
    "MetadataCache",
    "PartitionMetadata",
    "TopicMetadata",
]

log = logging.getLogger("odradek.client")


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """A live node as clients reach it."""

    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return format_address(self.host, self.port)


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """One partition: its leader (-1: none), leader epoch, replicas, ISR and offline replicas.

    ``error_code`` is the broker's (``LEADER_NOT_AVAILABLE`` when there is no leader).
    """

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error_code: int = 0

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def under_replicated(self) -> bool:
        """Fewer in-sync replicas than replicas."""
        return len(self.isr) < len(self.replicas)

    @property
    def offline(self) -> bool:
        """No leader."""
        return self.leader < 0


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """A topic and its partitions in partition order; ``error_code`` is non-zero (e.g.
    ``UNKNOWN_TOPIC_OR_PARTITION``) when the broker could not describe it."""

    name: str
    topic_id: str
    partitions: tuple[PartitionMetadata, ...]
    error_code: int = 0

    def error(self) -> OdradekError | None:
        """The typed error of ``error_code``, or ``None``."""
        if self.error_code == 0:
            return None
        return error_from_code(self.error_code, f"topic {self.name!r}")

    def partition(self, partition: int) -> PartitionMetadata | None:
        parts = self.partitions
        if 0 <= partition < len(parts) and parts[partition].partition == partition:
            return parts[partition]
        return next((p for p in parts if p.partition == partition), None)


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """One snapshot of the cluster. ``controller_id`` is -1 when no controller is active."""

    cluster_id: str = ""
    controller_id: int = -1
    brokers: Mapping[int, BrokerInfo] = field(default_factory=dict)
    topics: Mapping[str, TopicMetadata] = field(default_factory=dict)

    @classmethod
    def from_response(cls, response: pb.MetadataResponse) -> ClusterMetadata:
        brokers = {
            b.node_id: BrokerInfo(b.node_id, b.host, b.port, b.rack or None)
            for b in response.brokers
        }
        topics: dict[str, TopicMetadata] = {}
        for t in response.topics:
            parts = sorted(
                (
                    PartitionMetadata(
                        topic=t.name,
                        partition=p.partition,
                        leader=p.leader,
                        leader_epoch=p.leader_epoch,
                        replicas=tuple(p.replicas),
                        isr=tuple(p.isr),
                        offline_replicas=tuple(p.offline_replicas),
                        error_code=p.error_code,
                    )
                    for p in t.partitions
                ),
                key=lambda p: p.partition,
            )
            topics[t.name] = TopicMetadata(t.name, t.topic_id, tuple(parts), t.error_code)
        return cls(response.cluster_id, response.controller_id, brokers, topics)

    def partition(self, tp: TopicPartition) -> PartitionMetadata | None:
        topic = self.topics.get(tp.topic)
        return topic.partition(tp.partition) if topic is not None else None

    def leader_address(self, tp: TopicPartition) -> str | None:
        """The address of ``tp``'s leader, or ``None`` when unknown or not among the brokers."""
        part = self.partition(tp)
        if part is None or part.leader < 0:
            return None
        broker = self.brokers.get(part.leader)
        return broker.address if broker is not None else None

    def leader_id(self, tp: TopicPartition) -> int | None:
        """The node id of ``tp``'s leader when it is known and among the live brokers."""
        part = self.partition(tp)
        if part is None or part.leader < 0 or part.leader not in self.brokers:
            return None
        return part.leader

    def merge(self, newer: ClusterMetadata, *, replace_topics: bool) -> ClusterMetadata:
        """``newer`` with this snapshot's partitions kept where ``newer`` has a lower leader
        epoch for the same topic id. Topics absent from ``newer`` are kept unless
        ``replace_topics`` (``newer`` describes every topic)."""
        topics: dict[str, TopicMetadata] = {} if replace_topics else dict(self.topics)
        for name, topic in newer.topics.items():
            old = self.topics.get(name)
            if old is None or topic.error_code or old.error_code:
                topics[name] = topic
                continue
            if old.topic_id and topic.topic_id and old.topic_id != topic.topic_id:
                topics[name] = topic  # deleted and created again: epochs restart
                continue
            parts = []
            for p in topic.partitions:
                known = old.partition(p.partition)
                if known is not None and known.leader_epoch > p.leader_epoch:
                    parts.append(known)
                else:
                    parts.append(p)
            topics[name] = replace(topic, partitions=tuple(parts))
        return ClusterMetadata(newer.cluster_id, newer.controller_id, newer.brokers, topics)

    def with_leader(self, tp: TopicPartition, leader: int, leader_epoch: int) -> ClusterMetadata:
        """This snapshot with ``tp`` led by ``leader`` at ``leader_epoch``, if that epoch is newer
        than the one known and ``leader`` is a known broker (a leader hint from a broker's error
        answer, taken as Kafka's clients do since KIP-951); else unchanged."""
        topic = self.topics.get(tp.topic)
        part = topic.partition(tp.partition) if topic is not None else None
        if topic is None or part is None or leader_epoch <= part.leader_epoch:
            return self
        if leader not in self.brokers:
            return self  # cannot reach it anyway; the metadata refresh will tell
        moved = replace(part, leader=leader, leader_epoch=leader_epoch, error_code=0)
        parts = tuple(moved if p.partition == tp.partition else p for p in topic.partitions)
        topics = dict(self.topics)
        topics[tp.topic] = replace(topic, partitions=parts)
        return replace(self, topics=topics)


class MetadataCache:
    """The current :class:`ClusterMetadata` of a client and the means to refresh it.

    Refreshes ask the last node that answered, then every known broker, then the bootstrap
    servers, until one answers. With ``all_topics`` every refresh asks for every topic, else
    for the topics added with :meth:`add_topics`. Thread-safe: readers get immutable
    snapshots; refreshes are serialised.
    """

    def __init__(
        self,
        bootstrap: Sequence[str],
        pool: ConnectionPool,
        clock: Clock,
        *,
        request_timeout_ms: int = 30_000,
        max_age_ms: int = 300_000,
        retry_backoff_ms: int = 100,
        all_topics: bool = False,
    ) -> None:
        self._bootstrap = list(bootstrap)
        self._pool = pool
        self._clock = clock
        self._request_timeout_ms = request_timeout_ms
        self._max_age_ms = max_age_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._all_topics = all_topics
        self._lock = threading.Lock()
        self._refresh_lock = threading.Lock()
        self._snapshot = ClusterMetadata()
        self._topics: set[str] = set()
        self._update_requested = True
        self._last_success_ms: int | None = None
        self._last_attempt_ms: int | None = None
        self._preferred: str | None = None

    def snapshot(self) -> ClusterMetadata:
        """The current snapshot (never ``None``; empty before the first refresh)."""
        return self._snapshot

    @property
    def has_snapshot(self) -> bool:
        return self._last_success_ms is not None

    def add_topics(self, topics: Iterable[str]) -> None:
        """Track ``topics``; an update is requested if any is new."""
        with self._lock:
            new = set(topics) - self._topics
            if new:
                self._topics |= new
                self._update_requested = True

    def request_update(self) -> None:
        """Ask for a refresh at the next :meth:`maybe_refresh` (after the retry backoff)."""
        with self._lock:
            self._update_requested = True

    def time_to_update_ms(self, now_ms: int) -> int:
        """Milliseconds until a refresh is due (0: due now)."""
        with self._lock:
            if self._last_attempt_ms is not None:
                backoff = self._last_attempt_ms + self._retry_backoff_ms - now_ms
            else:
                backoff = 0
            if self._update_requested or self._last_success_ms is None:
                return max(backoff, 0)
            age_due = self._last_success_ms + self._max_age_ms - now_ms
            return max(age_due, backoff, 0)

    def maybe_refresh(self, avoid: Collection[str] = ()) -> bool:
        """Refresh if one is due; ``True`` if the snapshot changed. Failures are logged and
        leave the update requested. Nodes in ``avoid`` (e.g. with a call stuck on them) are
        asked last."""
        if self.time_to_update_ms(self._clock.monotonic_ms()) > 0:
            return False
        try:
            self.refresh(avoid=avoid)
        except OdradekError as exc:
            log.debug("metadata refresh failed: %s", exc)
            return False
        return True

    def refresh(
        self, topics: Collection[str] | None = None, *, avoid: Collection[str] = ()
    ) -> ClusterMetadata:
        """Ask a node for metadata now and return the new snapshot.

        ``topics`` are tracked from now on; nodes in ``avoid`` are asked last. Raises
        :class:`NetworkError` when no node answers.
        """
        if topics:
            self.add_topics(topics)
        with self._refresh_lock:
            with self._lock:
                self._update_requested = False
                self._last_attempt_ms = self._clock.monotonic_ms()
                wanted = sorted(self._topics)
            if self._all_topics:
                request = pb.MetadataRequest(all_topics=True)
            else:
                request = pb.MetadataRequest(topics=wanted)
            response, address = self._ask_any_node(request, avoid)
            newer = ClusterMetadata.from_response(response)
            with self._lock:
                self._snapshot = self._snapshot.merge(newer, replace_topics=self._all_topics)
                self._last_success_ms = self._clock.monotonic_ms()
                self._preferred = address
                return self._snapshot

    def candidates(self) -> list[str]:
        """Addresses to ask a question any node can answer, best first: the last node that
        answered, the known brokers, the bootstrap servers."""
        out: list[str] = []
        with self._lock:
            if self._preferred is not None:
                out.append(self._preferred)
            out.extend(b.address for b in self._snapshot.brokers.values())
        out.extend(self._bootstrap)
        return list(dict.fromkeys(out))

    def prefer(self, address: str) -> None:
        """Remember that ``address`` answered: ask it first next time."""
        with self._lock:
            self._preferred = address

    def _ask_any_node(
        self, request: pb.MetadataRequest, avoid: Collection[str] = ()
    ) -> tuple[pb.MetadataResponse, str]:
        tried: list[str] = []
        last: OdradekError | None = None
        for address in order_candidates(self.candidates(), avoid):
            tried.append(address)
            try:
                response = call(
                    self._pool.broker(address).Metadata,
                    request,
                    address=address,
                    timeout_ms=self._request_timeout_ms,
                )
            except (
                SaslAuthenticationFailedError,
                UnsupportedSaslMechanismError,
                SslAuthenticationError,
            ):
                raise  # wrong credentials: another node or a retry will not help (Kafka's too)
            except OdradekError as exc:
                last = exc
                continue
            return response, address
        with self._lock:
            self._update_requested = True
        reason = f": {last.message}" if last is not None else ""
        raise NetworkError(
            f"no node answered a metadata request (tried {', '.join(tried)}){reason}"
        )

    def update_leader(self, tp: TopicPartition, leader: int, leader_epoch: int) -> bool:
        """Take a leader hint (from a broker's ``current_leader``) if its epoch is newer than
        the one known; ``True`` if it was taken."""
        if leader < 0:
            return False
        with self._lock:
            before = self._snapshot
            self._snapshot = before.with_leader(tp, leader, leader_epoch)
            return self._snapshot is not before

    def wait_for_topic(self, topic: str, timeout_ms: int) -> TopicMetadata:
        """The metadata of ``topic`` with its partitions, refreshing until it is known.

        Raises the topic's error (e.g. :class:`~odradek.errors.UnknownTopicOrPartitionError`)
        or :class:`~odradek.errors.RequestTimedOutError` if it is still not known after
        ``timeout_ms``; :class:`NetworkError` if no node could be asked.
        """
        self.add_topics([topic])
        deadline = self._clock.monotonic_ms() + timeout_ms
        last: OdradekError | None = None
        while True:
            known = self._snapshot.topics.get(topic)
            if known is not None and known.error_code == 0 and known.partitions:
                return known
            now = self._clock.monotonic_ms()
            if now >= deadline:
                break
            try:
                self.refresh()
                last = None
            except (
                SaslAuthenticationFailedError,
                UnsupportedSaslMechanismError,
                SslAuthenticationError,
            ):
                raise
            except OdradekError as exc:
                last = exc
            known = self._snapshot.topics.get(topic)
            if known is not None and known.error_code == 0 and known.partitions:
                return known
            if known is not None and known.error_code == TopicAuthorizationFailedError.code:
                # waiting will not help, as Kafka's Metadata.maybeThrowExceptionForTopic says
                raise error_from_code(known.error_code, "not authorized", f"topic {topic!r}")
            pause = min(self._retry_backoff_ms, max(deadline - self._clock.monotonic_ms(), 0))
            time.sleep(pause / 1000)
        known = self._snapshot.topics.get(topic)
        error = known.error() if known is not None else None
        text = f"topic {topic!r} not present in metadata after {timeout_ms} ms"
        if error is not None:
            raise type(error)(text)
        if last is not None:
            raise type(last)(f"{text}: {last.message}")
        raise RequestTimedOutError(text)
