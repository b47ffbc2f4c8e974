"""Share sessions (KIP-932; Kafka's ``ShareSessionCache`` and ``SharePartitionManager.newContext``):
which share partitions a member fetches from one broker, so that a ShareFetch names only what
changed.

A session is keyed by (group id, member id) and carries the epoch its next request must name.
ShareFetch's ``ShareSessionEpoch``:

* 0 opens a session with the request's partitions, replacing the member's session on this
  broker if it had one (no acknowledgements allowed: INVALID_REQUEST); more sessions than
  ``group.share.max.share.sessions``: SHARE_SESSION_LIMIT_REACHED;
* -1 closes it (SHARE_SESSION_NOT_FOUND without one) after its acknowledgements, fetching
  nothing (Kafka 4.1's ``FinalContext``, which no longer refuses partitions named with it);
  the member's acquired records are released;
* any other epoch must be the session's next (INVALID_SHARE_SESSION_EPOCH; no session:
  SHARE_SESSION_NOT_FOUND); the request's partitions are added, its forgotten ones removed, and
  the epoch moves on (after 2**31-1 it wraps to 1).

A full cache makes room by evicting the session used least recently if it has been idle longer
than its group's ``share.session.timeout.ms`` (a member silent that long is no longer in its
group; Kafka's ``ShareSessionCache`` evicts idle sessions likewise); its member's records are
released by the caller (:meth:`ShareSessions.for_fetch` names it).

ShareAcknowledge uses the same epochs, except that 0 is INVALID_SHARE_SESSION_EPOCH (there is
nothing to acknowledge in a session not opened yet) and it changes no partitions.

Pure bookkeeping over plain values; thread-safe (one lock).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from odradek.clock import Clock
from odradek.errors import (
    InvalidRequestError,
    InvalidShareSessionEpochError,
    ShareSessionLimitReachedError,
    ShareSessionNotFoundError,
)

__all__ = ["FINAL_EPOCH", "INITIAL_EPOCH", "SessionPartition", "ShareSession", "ShareSessions"]

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1

SessionPartition = tuple[str, int]
"""(topic id, partition)."""


@dataclass(slots=True)
class ShareSession:
    """One member's share session on this broker."""

    group_id: str
    member_id: str
    epoch: int
    """The epoch its next request must name."""
    partitions: list[SessionPartition] = field(default_factory=list)
    """In the order they were added (a ShareFetch answers them in this order)."""
    last_used_ms: int = 0
    """When a request last used it (monotonic)."""


def _next(epoch: int) -> int:
    return 1 if epoch >= _MAX_EPOCH else epoch + 1


class ShareSessions:
    """The broker's share sessions (see the module docstring); ``max_sessions``:
    ``group.share.max.share.sessions``."""

    def __init__(
        self,
        max_sessions: int,
        clock: Clock | None = None,
        idle_ms: Callable[[str], int] | None = None,
    ) -> None:
        """``clock`` and ``idle_ms`` (a group's ``share.session.timeout.ms``): when an idle
        session may be evicted for a new one (``None``: never)."""
        self._max = max_sessions
        self._clock = clock
        self._idle_ms = idle_ms
        self._lock = threading.Lock()
        self._sessions: dict[tuple[str, str], ShareSession] = {}
        self.evicted: list[tuple[str, str]] = []
        """(group, member) of the sessions evicted and not yet taken by :meth:`take_evicted`."""

    def _now(self) -> int:
        return 0 if self._clock is None else self._clock.monotonic_ms()

    def _evict_one(self) -> bool:
        """Evicts the least recently used session if idle past its group's timeout."""
        if self._clock is None or self._idle_ms is None or not self._sessions:
            return False
        key, oldest = min(self._sessions.items(), key=lambda kv: kv[1].last_used_ms)
        if self._now() - oldest.last_used_ms <= self._idle_ms(oldest.group_id):
            return False
        del self._sessions[key]
        self.evicted.append(key)
        return True

    def take_evicted(self) -> list[tuple[str, str]]:
        """The (group, member) of the sessions evicted since the last call (their records are
        to be released)."""
        with self._lock:
            out, self.evicted = self.evicted, []
            return out

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        with self._lock:
            return self._sessions.get((group_id, member_id))

    def for_fetch(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        added: Iterable[SessionPartition],
        forgotten: Iterable[SessionPartition],
        *,
        has_acknowledgements: bool,
    ) -> tuple[int, list[SessionPartition]]:
        """A ShareFetch's session: (error code, the partitions to fetch from, in session
        order). Epoch -1: the session is removed (the caller releases the member's records
        after applying the acknowledgements) and nothing is fetched."""
        added = list(added)
        with self._lock:
            key = (group_id, member_id)
            if epoch == FINAL_EPOCH:
                if self._sessions.pop(key, None) is None:
                    return ShareSessionNotFoundError.code, []
                return 0, []
            if epoch == INITIAL_EPOCH:
                if has_acknowledgements:
                    return InvalidRequestError.code, []
                replaced = self._sessions.pop(key, None)
                if replaced is None and len(self._sessions) >= self._max and not self._evict_one():
                    return ShareSessionLimitReachedError.code, []
                session = ShareSession(
                    group_id, member_id, 1, list(dict.fromkeys(added)), self._now()
                )
                self._sessions[key] = session
                return 0, list(session.partitions)
            current = self._sessions.get(key)
            if current is None:
                return ShareSessionNotFoundError.code, []
            session = current
            if epoch != session.epoch:
                return InvalidShareSessionEpochError.code, []
            gone = set(forgotten)
            kept = [p for p in session.partitions if p not in gone]
            kept += [p for p in dict.fromkeys(added) if p not in kept]
            session.partitions = kept
            session.epoch = _next(session.epoch)
            session.last_used_ms = self._now()
            return 0, list(kept)

    def for_acknowledge(self, group_id: str, member_id: str, epoch: int) -> int:
        """A ShareAcknowledge's session check: 0, or its error code. Epoch -1 removes the
        session (the caller releases the member's records after the acknowledgements)."""
        with self._lock:
            key = (group_id, member_id)
            if epoch == INITIAL_EPOCH:
                return InvalidShareSessionEpochError.code
            session = self._sessions.get(key)
            if session is None:
                return ShareSessionNotFoundError.code
            if epoch == FINAL_EPOCH:
                del self._sessions[key]
                return 0
            if epoch != session.epoch:
                return InvalidShareSessionEpochError.code
            session.epoch = _next(session.epoch)
            session.last_used_ms = self._now()
            return 0

    def remove_member(self, group_id: str, member_id: str) -> bool:
        """Forgets the member's session (it left the group); whether it had one."""
        with self._lock:
            return self._sessions.pop((group_id, member_id), None) is not None
