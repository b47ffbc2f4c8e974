"""A broker's heartbeats to the active controller, and its leadership lease (KRaft's
``BrokerLifecycleManager`` and ``BrokerHeartbeatManager``, broker side).

Every ``broker.heartbeat.interval.ms`` one thread sends BrokerHeartbeat to the controller that
the metadata cache names. The controller fences a broker it has heard no heartbeat from for
``broker.session.timeout.ms`` (:mod:`controller.broker_sessions`) and moves its leaderships
away; this broker must by then have stopped acting as leader, or a paused leader that comes
back could acknowledge writes its successor never had. :class:`LeaderLease` decides, from the
heartbeats' outcomes alone, whether this broker may still lead (:meth:`LeaderLease.may_lead`,
which the replica manager asks before every produce):

* answered **fenced**: no, until an answer says unfenced (the controller says so only once it
  has taken this broker back in and sent it its partitions' new leaders);
* answered **unfenced** within ``lease_ms`` (the session timeout) of the answered heartbeat's
  *sending*: yes. The controller counted that session from the heartbeat's arrival, later, so
  this lease ends first;
* no answer for longer than that: yes only while the heartbeats kept being *sent* on time,
  every attempt failing to reach a controller (a controller that died is replaced only when its
  ZooKeeper session ends, and no controller fences this broker before its first heartbeat to
  it): leaders go on serving through a controller failover. A gap
  between attempts longer than ``stall_ms`` means this process stood still (SIGSTOP, a
  starved heartbeat thread): the controller may have fenced it meanwhile, so it leads nothing
  until a heartbeat is answered again.

A heartbeat that reaches no controller (the RPC fails) is also reported to this node's
controller candidate (``on_controller_unreachable``): a standby probes the active controller's
address and takes the role over if its process is gone (:mod:`controller.controller_takeover`),
so a dead controller is replaced about a heartbeat interval after its death rather than when its
ZooKeeper session ends.

What this does not cover, as in Kafka: a leader cut off from the controller alone (a network
partition, not a pause) keeps leading; the controller fences it and elects another. Its acks=-1
writes cannot be acknowledged (its followers fetch from the new leader; its ISR cannot shrink
without the controller), but acks=1 writes it acknowledges are lost when it learns its
successor (docs/replication.md, Failover).

Time is an input (:class:`LeaderLease` takes ``now_ms``); :class:`BrokerLifecycleManager` owns
one thread. Both are thread-safe.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import grpc

from node.core.metadata_cache import MetadataCache
from odradek.clock import Clock
from odradek.errors import error_for_code
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = ["BrokerLifecycleManager", "LeaderLease"]

log = logging.getLogger(__name__)


class LeaderLease:
    """Whether this broker may act as leader, from its heartbeats' outcomes. Thread-safe."""

    def __init__(self, lease_ms: int, stall_ms: int, now_ms: int) -> None:
        """``lease_ms``: the controller's session timeout (0: no lease, always may lead);
        ``stall_ms``: the longest gap between two heartbeat attempts of a running sender."""
        if lease_ms < 0 or stall_ms <= 0:
            raise ValueError("lease_ms must be 0 or more and stall_ms positive")
        self._lease_ms = lease_ms
        self._stall_ms = stall_ms
        self._lock = threading.Lock()
        # A starting broker has just registered: the controller's session for it starts now.
        self._acked_sent_ms = now_ms
        self._last_attempt_ms = now_ms
        self._fenced = False
        self._stalled = False

    def attempted(self, sent_ms: int, now_ms: int, *, answered: bool, fenced: bool) -> None:
        """A heartbeat sent at ``sent_ms`` ended at ``now_ms``: ``answered`` by the active
        controller (``fenced`` its answer), or not (no controller known, unreachable, not the
        controller, a stale broker epoch)."""
        with self._lock:
            # a gap before the attempt, or an attempt that outlasted its timeout: stood still
            if max(sent_ms - self._last_attempt_ms, now_ms - sent_ms) > self._stall_ms:
                self._stalled = True
            self._last_attempt_ms = max(self._last_attempt_ms, now_ms)
            if not answered:
                return
            self._fenced = fenced
            if not fenced:
                # an answer that came back late says nothing of the time after it was given
                self._stalled = now_ms - sent_ms > self._stall_ms
                self._acked_sent_ms = max(self._acked_sent_ms, sent_ms)

    def may_lead(self, now_ms: int) -> bool:
        """Whether a write may be taken as leader now (see the module docstring)."""
        if self._lease_ms == 0:
            return True
        with self._lock:
            if self._fenced:
                return False
            if now_ms - self._acked_sent_ms < self._lease_ms:
                return True
            return not self._stalled and now_ms - self._last_attempt_ms <= self._stall_ms

    @property
    def fenced(self) -> bool:
        """Whether the controller's last answer said fenced."""
        return self._fenced


class BrokerLifecycleManager:
    """Sends this broker's heartbeats and keeps its :class:`LeaderLease`. One thread."""

    def __init__(
        self,
        *,
        node_id: int,
        broker_epoch: Callable[[], int],
        metadata: MetadataCache,
        channel_for: Callable[[str], grpc.Channel],
        clock: Clock,
        heartbeat_interval_ms: int,
        session_timeout_ms: int,
        on_controller_unreachable: Callable[[int, str], None] | None = None,
    ) -> None:
        """``session_timeout_ms`` 0: heartbeats are sent, the lease is off.
        ``on_controller_unreachable(controller id, its address)``: called on the heartbeat
        thread when a heartbeat's RPC fails; it must return at once."""
        self._on_controller_unreachable = on_controller_unreachable
        self._node_id = node_id
        self._broker_epoch = broker_epoch
        self._metadata = metadata
        self._channel_for = channel_for
        self._clock = clock
        self._interval_ms = heartbeat_interval_ms
        # an attempt waits at most half a session: a controller that does not answer in time
        # counts as unreachable, and the next attempt goes out
        self._timeout_ms = max(heartbeat_interval_ms, session_timeout_ms // 2)
        self.lease = LeaderLease(
            session_timeout_ms, heartbeat_interval_ms + self._timeout_ms, clock.monotonic_ms()
        )
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._was_fenced = False

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="broker-heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop heartbeating (the controller fences this broker a session later, unless it
        has deregistered by then). Idempotent."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=self._timeout_ms / 1000 + 2)

    def may_lead(self) -> bool:
        """:meth:`LeaderLease.may_lead` now. Thread-safe."""
        return self.lease.may_lead(self._clock.monotonic_ms())

    def _run(self) -> None:
        while not self._stopped.is_set():
            sent = self._clock.monotonic_ms()
            answer = self._send()
            now = self._clock.monotonic_ms()
            fenced = answer is not None and answer.is_fenced
            self.lease.attempted(sent, now, answered=answer is not None, fenced=fenced)
            if answer is not None and fenced != self._was_fenced:
                self._was_fenced = fenced
                log.warning(
                    "node %d %s by the controller (epoch %d)",
                    self._node_id,
                    "fenced" if fenced else "unfenced",
                    answer.controller_epoch,
                )
            self._stopped.wait(max(0, sent + self._interval_ms - now) / 1000)

    def _send(self) -> pb.BrokerHeartbeatResponse | None:
        """One heartbeat; the active controller's answer, or None."""
        controller = self._metadata.controller()
        if controller is None:
            return None
        target = f"{controller.host}:{controller.port}"
        stub = pb_grpc.ControllerStub(self._channel_for(target))
        request = pb.BrokerHeartbeatRequest(
            broker_id=self._node_id, broker_epoch=self._broker_epoch()
        )
        try:
            response = stub.BrokerHeartbeat(request, timeout=self._timeout_ms / 1000)
        except grpc.RpcError as e:
            log.debug("heartbeat to node %d failed: %s", controller.node_id, e)
            if self._on_controller_unreachable is not None:
                self._on_controller_unreachable(controller.node_id, target)
            return None
        if response.error_code != 0:
            log.debug(
                "heartbeat to node %d: %s",
                controller.node_id,
                error_for_code(response.error_code).name,
            )
            return None
        return response
