"""Standby controllers take over from an active controller whose process is gone.

An active controller holds the ephemeral ``/controller`` for as long as its ZooKeeper session
lives, so a controller that was killed is, by ZooKeeper alone, replaced only once that session
expires (``zookeeper.session.timeout.ms``, several seconds): meanwhile no ISR changes, no
leader elections, no fencing of brokers (a node that was leader *and* controller leaves its
partitions without a leader for that long). KRaft replaces its active controller when the
standbys stop hearing from it (``controller.quorum.fetch.timeout.ms``, 2 s by default) and hold an
election; ZooKeeper-mode Kafka waits for the session.

Here the standbys use the evidence the brokers' heartbeats already give
(:mod:`node.broker_lifecycle`, :mod:`controller.broker_sessions`): every node heartbeats to the
active controller every ``broker.heartbeat.interval.ms``; when a node's heartbeat fails to reach
it, that node's controller candidate (a standby) probes the active controller's address once
(:mod:`controller.liveness_probe`, at most once per :attr:`ControllerTakeover.probe_interval_ms`).
Refused means nothing listens there: the process that held the role is gone and can act no
more. The standby then takes the role over in one fenced multi
(:meth:`controller.zk_client.ControllerZkClient.take_over_controller`): the dead controller's
``/controller`` deleted, its own created, ``/controller_epoch`` bumped, conditional on the epoch
version and on ``/controller`` still being held by the same session. Several standbys may try at
once; one multi wins, the others find ``/controller`` moved. Anything other than a refusal (the
process answers: paused, busy; or a timeout: cut off) proves nothing, and the ZooKeeper session
decides as before.

Why it is safe: a controller is fenced by the epoch, not by its session. Every write of a
controller checks the ``/controller_epoch`` version it won; once a standby has taken over, a
controller we were wrong about (alive after all: a listener closed early in a shutdown) cannot
write anything, sees ``/controller`` move (its watch) and resigns; brokers refuse its
LeaderAndIsr and UpdateMetadata for their older controller epoch. The new controller lets
no broker's session lapse before it has heard from it (:meth:`BrokerSessions.reset`), as after
any election, so the brokers' leadership leases (which run on while heartbeats reach no
controller) are never cut short; it probes the brokers it has not heard from, and so fences the
dead node as a broker too (silent, and refused) and moves its leaderships. What it trades: a
refusal is the only evidence, so a standby never replaces a controller that is merely slow; one
whose process is gone is replaced about one heartbeat interval after its death instead of a
ZooKeeper session later (docs/operations.md, Failover).

Time is an input (``now_ms``). Thread-safe: heartbeat failures arrive on a node's heartbeat
thread, ``/controller``'s watch on kazoo's.
"""

from __future__ import annotations

import threading

__all__ = ["ControllerTakeover"]


class ControllerTakeover:
    """When this standby probes the active controller. Thread-safe."""

    def __init__(self, node_id: int, probe_interval_ms: int) -> None:
        if probe_interval_ms <= 0:
            raise ValueError("probe_interval_ms must be positive")
        self._node_id = node_id
        self._probe_interval_ms = probe_interval_ms
        self._lock = threading.Lock()
        self._holder: tuple[int, int] | None = None
        self._last_probe_ms: int | None = None

    @property
    def probe_interval_ms(self) -> int:
        return self._probe_interval_ms

    def holder_changed(self, holder: tuple[int, int] | None) -> None:
        """``/controller`` as its watch last read it: ``(broker id, owning session id)``, or
        ``None`` when absent. A new holder may be probed at once."""
        with self._lock:
            if holder != self._holder:
                self._holder = holder
                self._last_probe_ms = None

    def unreachable(self, controller_id: int, now_ms: int) -> tuple[int, int] | None:
        """A heartbeat of this node to ``controller_id`` reached no controller: the holder to
        probe now, or ``None`` (not the holder known here, this node itself, or probed less
        than :attr:`probe_interval_ms` ago)."""
        with self._lock:
            holder = self._holder
            if holder is None or holder[0] != controller_id or controller_id == self._node_id:
                return None
            if (
                self._last_probe_ms is not None
                and now_ms - self._last_probe_ms < self._probe_interval_ms
            ):
                return None
            self._last_probe_ms = now_ms
            return holder

    def still_holder(self, holder: tuple[int, int]) -> bool:
        """Whether ``holder`` (found gone) is still the holder known here."""
        with self._lock:
            return self._holder == holder
