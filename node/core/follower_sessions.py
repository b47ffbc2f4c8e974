"""A leader's fast notice of a dead follower: its fetch sessions broke and none came back.

A follower fetches from its leader on one long-lived stream
(``node.replication.fetcher.FetchSession``).
When the follower's process dies its kernel closes the connection, and gRPC ends every call on
it at once: the leader hears of the death within milliseconds, long before the follower's
silence (``replica.fetch.silence.max.ms``), its lag (``replica.lag.time.max.ms``) or its
ZooKeeper session would tell it. Not a Kafka rule; Kafka's fetches are separate requests on a
connection it does not tie to the follower's liveness.

A live follower ends sessions too — it replaces each after ``request.timeout.ms``, after a
failed fetch, or when it stops following this leader — but opens the next one at once (or after
``replica.fetch.backoff.ms``). So a follower is *disconnected* only when every session it had
here has ended, no fetch has arrived since, and ``grace_ms`` has passed: a replaced session is
never mistaken for a death. A hung follower (paused, cut off by a network partition) keeps its
connection open; only its silence tells (``node.core.replication_rules.silent_replicas``).

Dropping a disconnected follower from the ISR is as safe as any shrink: the shrink goes through
the controller (AlterPartition) and the high watermark keeps counting the follower until the
controller has committed the smaller ISR; the follower rejoins once it fetches again and has
caught up (``node.core.replication_rules.can_join_isr``).
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping

from node.core.replication_rules import NEVER_MS, FollowerFetchState
from odradek.clock import Clock


class FollowerSessions:
    """Each follower's open fetch sessions to this node, and when its last one ended.

    The replication servicer calls :meth:`opened` when a session's first request names its
    follower and :meth:`closed` when that call ends (for whatever reason). Thread-safe: a short
    lock of its own, never held while calling out.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._open: dict[int, int] = {}
        self._lost_at: dict[int, int] = {}
        self._last_request: dict[int, int] = {}
        self._last_data: dict[int, int] = {}
        self.resumed_ms = NEVER_MS
        """When this node last resumed from a stall of its own (``resumed``)."""

    def opened(self, replica_id: int) -> None:
        with self._lock:
            self._open[replica_id] = self._open.get(replica_id, 0) + 1
            self._lost_at.pop(replica_id, None)

    def closed(self, replica_id: int) -> None:
        """A session of ``replica_id`` ended. Raises ``ValueError`` if it had none open."""
        with self._lock:
            count = self._open.get(replica_id, 0)
            if count <= 0:
                raise ValueError(f"replica {replica_id} has no open fetch session to close")
            if count == 1:
                del self._open[replica_id]
                self._lost_at[replica_id] = self._clock.monotonic_ms()
            else:
                self._open[replica_id] = count - 1

    def resumed(self) -> None:
        """This node was stalled (its ticker saw a long gap: the process paused or starved) and
        runs again: followers' silence counts from now
        (``node.core.replication_rules.silent_replicas``),
        as their fetches sent meanwhile wait unread in its sockets."""
        self.resumed_ms = self._clock.monotonic_ms()

    def fetched(self, replica_id: int) -> None:
        """A fetch request from ``replica_id`` arrived (on a session or alone)."""
        now = self._clock.monotonic_ms()
        with self._lock:
            self._last_request[replica_id] = now

    def answered_with_data(self, replica_id: int) -> None:
        """A fetch of ``replica_id`` was answered with records: it is due to fetch again."""
        now = self._clock.monotonic_ms()
        with self._lock:
            self._last_data[replica_id] = now

    def silence_ends_between(
        self, after_ms: int, until_ms: int, silence_ms: int, fetch_wait_max_ms: int
    ) -> bool:
        """Whether ``silence_ms`` passes in (``after_ms``, ``until_ms``] since a follower's last
        fetch request, its last answer with records, or its last request plus the long poll
        (``fetch_wait_max_ms``): the moments its partitions' silence rule
        (``node.core.replication_rules.silent_replicas``) may first find it silent, when the node's
        ticker
        checks the ISRs. Between them it checks only every half ``replica.lag.time.max.ms``."""
        with self._lock:
            moments = [*self._last_request.values(), *self._last_data.values()]
            moments += [last + fetch_wait_max_ms for last in self._last_request.values()]
        return any(after_ms < moment + silence_ms + 1 <= until_ms for moment in moments)

    def grace_ends_between(self, after_ms: int, until_ms: int, grace_ms: int) -> bool:
        """Whether the grace of a follower with no session left ends in (``after_ms``,
        ``until_ms``]: a check for disconnected followers is due (the node's ticker asks)."""
        with self._lock:
            return any(
                after_ms < lost + grace_ms + 1 <= until_ms for lost in self._lost_at.values()
            )

    def lost_at(self) -> dict[int, int]:
        """Follower -> when its last session ended, for each follower with none open now."""
        with self._lock:
            return dict(self._lost_at)


def disconnected_replicas(
    *,
    leader_id: int,
    isr: Collection[int],
    followers: Mapping[int, FollowerFetchState],
    lost_at: Mapping[int, int],
    leader_since_ms: int,
    now_ms: int,
    grace_ms: int,
) -> set[int]:
    """ISR members (other than the leader) whose every fetch session here ended more than
    ``grace_ms`` ago (``lost_at``, from :meth:`FollowerSessions.lost_at`) with no fetch from
    them since; none when ``grace_ms`` is 0 (off).

    Only sessions that ended during this leadership (at or after ``leader_since_ms``) count: a
    follower that had closed its session here before this node became leader (it followed
    another leader) is not yet expected to have opened a new one."""
    if grace_ms <= 0:
        return set()
    out: set[int] = set()
    for replica_id in isr:
        lost = lost_at.get(replica_id)
        if replica_id == leader_id or lost is None or lost < leader_since_ms:
            continue
        last_fetch = followers.get(replica_id, FollowerFetchState()).last_fetch_ms
        if last_fetch <= lost and now_ms - lost > grace_ms:
            out.add(replica_id)
    return out


def session_lost_grace_ms(*, silence_max_ms: int, fetch_backoff_ms: int) -> int:
    """How long a follower with no fetch session left may take to open the next one before it
    counts as disconnected: twice its ``replica.fetch.backoff.ms`` (the longest a live
    follower waits before fetching again after a failure), never more than the silence limit;
    0 (off) when the silence rule is off (``replica.fetch.silence.max.ms`` = 0, Kafka's
    behaviour)."""
    if silence_max_ms <= 0:
        return 0
    return min(silence_max_ms, 2 * max(fetch_backoff_ms, 1))
