"""Brokers' sessions with the active controller (KRaft's ``BrokerHeartbeatManager``).

Every broker heartbeats to the active controller every ``broker.heartbeat.interval.ms``
(:mod:`node.broker_lifecycle`). The controller keeps, per registered broker, the monotonic time
of its last heartbeat; a broker heard from no heartbeat for ``broker.session.timeout.ms`` is
*fenced*: the controller treats it as gone (its leaderships move to other ISR members, it leaves
the ISRs, as when its ``/brokers/ids`` znode disappears) although it is still registered in
ZooKeeper. The ZooKeeper session stays the backstop and the registration: a broker whose znode
goes is gone whatever its heartbeats say, and a new registration (a larger broker epoch) starts
a new, unfenced session.

A fenced broker that heartbeats again is *unfenced* in two steps, so that it never hears it may
lead before the controller has sent it the new leaderships: its heartbeat asks for unfencing
(:attr:`HeartbeatOutcome.UNFENCE`, answered still fenced), the controller's event thread takes it
back in as a starting broker (LeaderAndIsr for every partition it replicates, UpdateMetadata)
and then calls :meth:`BrokerSessions.unfence`; its next heartbeat is answered unfenced.

A broker silent for a few heartbeat intervals is *suspect* (:meth:`BrokerSessions.suspects`):
the controller probes its address once, and if nothing listens there (the connection is
refused: its process is gone) fences it at once (:meth:`BrokerSessions.fence_dead`) rather than
at the end of its session. A paused or cut-off broker still has its listener (or does not
answer at all), so only a broker that can no longer acknowledge anything is fenced early.

A broker this controller has not heard from yet -- one that registers (anew, or with a larger
epoch), and every broker when a controller becomes active (:meth:`BrokerSessions.reset`) -- has
no session to lapse before its first heartbeat: until the controller's UpdateMetadata reaches
it, it does not know which node to heartbeat to (its metadata names the previous controller, or
none), a starting or loaded process may take longer than a session to get there, and fencing it
would stop those requests, so that it would never learn and stay fenced. (KRaft's new
controller gives every broker a full session instead: its brokers know the controller quorum
from their configuration.) Such a broker is still probed after a few intervals and fenced at
once if nothing listens at its address: a registered node's listener is open before it
registers, so a refusal means its process is gone -- how a controller that took over from a
dead one (:mod:`controller.controller_takeover`) fences the dead node as a broker too. A broker
that is paused across a controller change is fenced only once it has heartbeated to the new
controller and fallen silent again, or when its ZooKeeper session ends.

No broker is fenced by a controller that has not waited a whole session for it: a session's
clock starts at its first heartbeat to this controller.

Time is an input: every method takes ``now_ms`` (monotonic). Thread-safe: heartbeats are
answered on gRPC threads, expiry and membership changes happen on the controller's event thread.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["BrokerSessions", "HeartbeatOutcome"]


class HeartbeatOutcome(enum.Enum):
    """What a heartbeat found."""

    ACTIVE = "active"
    """The session goes on; the broker is not fenced."""
    FENCED = "fenced"
    """The broker is fenced and its unfencing is already under way (or it asked before)."""
    UNFENCE = "unfence"
    """The broker was fenced and is heard again: the caller must have the event thread take
    it back in (then :meth:`BrokerSessions.unfence`); it is answered fenced meanwhile."""
    STALE = "stale"
    """Not the registration the controller knows (an older epoch, an unknown broker, or one
    whose re-registration the controller has not read yet): STALE_BROKER_EPOCH, retried."""


@dataclass(slots=True)
class _Session:
    broker_epoch: int
    last_heartbeat_ms: int
    fenced: bool = False
    unfencing: bool = False
    probed: bool = False
    heard: bool = True
    """Heard from by this controller: only then can the session lapse."""


class BrokerSessions:
    """The registered brokers' sessions, for one active controller epoch."""

    def __init__(self, session_timeout_ms: int) -> None:
        """``session_timeout_ms`` 0: sessions never lapse (liveness by ZooKeeper alone)."""
        if session_timeout_ms < 0:
            raise ValueError("session_timeout_ms must be 0 (off) or more")
        self._timeout_ms = session_timeout_ms
        self._lock = threading.Lock()
        self._sessions: dict[int, _Session] = {}

    @property
    def session_timeout_ms(self) -> int:
        return self._timeout_ms

    def reset(self, registered: Mapping[int, int], now_ms: int) -> None:
        """A new active controller: every registered broker (id -> broker epoch) gets an
        unfenced session, which cannot lapse before its first heartbeat (its silence is
        counted from ``now_ms`` for probing)."""
        with self._lock:
            self._sessions = {
                b: _Session(epoch, now_ms, heard=False) for b, epoch in registered.items()
            }

    def clear(self) -> None:
        """The controller resigned: no sessions."""
        with self._lock:
            self._sessions = {}

    def sync(self, registered: Mapping[int, int], now_ms: int) -> None:
        """Follow ZooKeeper's registrations (id -> broker epoch): a broker registered anew (or
        with a larger epoch: it restarted) gets a fresh unfenced session from ``now_ms``; a
        broker no longer registered loses its session."""
        with self._lock:
            for broker_id in list(self._sessions):
                if broker_id not in registered:
                    del self._sessions[broker_id]
            for broker_id, epoch in registered.items():
                session = self._sessions.get(broker_id)
                if session is None or epoch > session.broker_epoch:
                    self._sessions[broker_id] = _Session(epoch, now_ms, heard=False)

    def heartbeat(self, broker_id: int, broker_epoch: int, now_ms: int) -> HeartbeatOutcome:
        """Record a heartbeat of ``broker_id`` at registration ``broker_epoch``."""
        with self._lock:
            session = self._sessions.get(broker_id)
            if session is None or broker_epoch != session.broker_epoch:
                return HeartbeatOutcome.STALE
            session.last_heartbeat_ms = max(session.last_heartbeat_ms, now_ms)
            session.probed = False
            session.heard = True
            if not session.fenced:
                return HeartbeatOutcome.ACTIVE
            if session.unfencing:
                return HeartbeatOutcome.FENCED
            session.unfencing = True
            return HeartbeatOutcome.UNFENCE

    def expire(self, now_ms: int) -> list[int]:
        """Fence every unfenced broker not heard from for the session timeout; returns them
        (sorted). Also ends an unfencing whose broker fell silent again."""
        if self._timeout_ms == 0:
            return []
        fenced = []
        with self._lock:
            for broker_id, session in sorted(self._sessions.items()):
                if not session.heard or now_ms - session.last_heartbeat_ms < self._timeout_ms:
                    continue
                session.unfencing = False
                if not session.fenced:
                    session.fenced = True
                    fenced.append(broker_id)
        return fenced

    def suspects(self, now_ms: int, silence_ms: int) -> list[tuple[int, int]]:
        """Unfenced brokers silent for ``silence_ms`` and not probed since their last
        heartbeat (or since their session began, if not heard from yet), as (id, broker
        epoch), sorted; each is returned once per silence."""
        found = []
        with self._lock:
            for broker_id, session in sorted(self._sessions.items()):
                if session.fenced or session.probed:
                    continue
                if now_ms - session.last_heartbeat_ms >= silence_ms:
                    session.probed = True
                    found.append((broker_id, session.broker_epoch))
        return found

    def next_suspect_ms(self, silence_ms: int) -> int | None:
        """When the earliest unprobed, unfenced broker becomes a suspect if it stays
        silent."""
        with self._lock:
            times = [
                s.last_heartbeat_ms
                for s in self._sessions.values()
                if not s.fenced and not s.probed
            ]
        return min(times) + silence_ms if times else None

    def fence_dead(self, broker_id: int, broker_epoch: int) -> bool:
        """Fence at once a suspect found dead (nothing listens at its address), if it is
        still silent since it was probed and still at ``broker_epoch``; ``True`` if fenced."""
        with self._lock:
            session = self._sessions.get(broker_id)
            if (
                session is None
                or session.broker_epoch != broker_epoch
                or session.fenced
                or not session.probed  # heard from since
            ):
                return False
            session.fenced = True
            return True

    def unfence(self, broker_id: int) -> bool:
        """Finish an unfencing :meth:`heartbeat` asked for; ``False`` (nothing done) when the
        broker is not waiting for it any more (silent again, or gone)."""
        with self._lock:
            session = self._sessions.get(broker_id)
            if session is None or not session.unfencing:
                return False
            session.fenced = False
            session.unfencing = False
            return True

    def is_fenced(self, broker_id: int) -> bool:
        with self._lock:
            session = self._sessions.get(broker_id)
            return session is not None and session.fenced

    def fenced(self) -> set[int]:
        with self._lock:
            return {b for b, s in self._sessions.items() if s.fenced}

    def next_expiry_ms(self) -> int | None:
        """When the earliest unfenced session lapses if its broker stays silent; ``None`` with
        no such session or with sessions off."""
        if self._timeout_ms == 0:
            return None
        with self._lock:
            times = [
                s.last_heartbeat_ms for s in self._sessions.values() if not s.fenced and s.heard
            ]
        return min(times) + self._timeout_ms if times else None
