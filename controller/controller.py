"""The ZooKeeper-backed controller (Kafka's ``KafkaController`` in ZooKeeper mode).

Every node runs a :class:`Controller` candidate; at most one is *active*. The active controller
owns partition leadership: it elects leaders, changes ISRs on behalf of the cluster, creates and
deletes topics' state, drives reassignments and controlled shutdowns, and tells brokers the
outcome over gRPC (``LeaderAndIsr``, ``UpdateMetadata``, ``StopReplica`` on the Replication
service). docs/controller.md describes the whole; in short:

**Election and fencing.** A candidate becomes active by creating the ephemeral ``/controller``
and bumping ``/controller_epoch`` in one multi-operation; every later write of the active
controller is a multi that first checks ``/controller_epoch``'s version, so a controller that
has been replaced cannot write. A failed check (:class:`ControllerMovedError`) makes it resign.
When ``/controller`` disappears, every candidate campaigns; the winner rebuilds its view from
ZooKeeper.

**Events.** Everything the controller does happens on one event thread (Kafka's
``ControllerEventManager``): ZooKeeper watches, the brokers' AlterPartition and
ControlledShutdown requests (handed over from gRPC threads with a future), responses to
StopReplica, and the periodic preferred leader rebalance all become events processed in order.
Decisions are the pure functions of :mod:`controller.election`, :mod:`controller.isr`,
:mod:`controller.reassignment`; the event handlers read and write ZooKeeper and queue requests
(:mod:`controller.request_batch`) that the channel manager sends at the end of each event.

**Broker liveness.** Brokers heartbeat to the active controller
(:meth:`Controller.broker_heartbeat`, answered on the gRPC thread);
:class:`controller.broker_sessions.BrokerSessions` fences a broker whose session lapses, and the
broker-change handling then treats it as gone though it is still registered (its leaderships
move at once, not when its ZooKeeper session ends). A fenced broker that heartbeats again is
taken back in as a starting broker.

**Takeover.** A standby whose node's heartbeat cannot reach the active controller probes its
address; if nothing listens there, it takes the role over at once in a fenced multi rather than
waiting for the dead controller's ZooKeeper session to end
(:mod:`controller.controller_takeover`).

**Session.** On SUSPENDED (connection lost, session maybe alive) the controller stops acting:
events wait, broker requests are answered NOT_CONTROLLER; on reconnection it carries on. On LOST
(session expired; ``/controller`` is gone with it) it resigns, and campaigns again once kazoo
has a new session.

Thread-safety: the public methods and properties are thread-safe.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from dataclasses import dataclass
from typing import Any

import grpc
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from controller.broker_sessions import BrokerSessions, HeartbeatOutcome
from controller.channel_manager import ControllerChannelManager, Response
from controller.config import ControllerConfig
from controller.context import ControllerContext
from controller.controller_takeover import ControllerTakeover
from controller.election import (
    Election,
    controlled_shutdown_leader,
    offline_leader,
    preferred_leader,
    reassignment_leader,
    remove_replica_from_isr,
)
from controller.errors import ControllerMovedError, StateWriteConflictError
from controller.isr import IsrChangeRejected, validate_alter_partition
from controller.liveness_probe import LivenessProbe
from controller.partition_creation import added_partitions
from controller.reassignment import (
    ReplicaAssignment,
    completed_reassignment_leader,
    validate_target_replicas,
)
from controller.request_batch import BrokerRequest, RequestBatch
from controller.zk_client import ControllerZkClient, get_or_create_cluster_id
from controller.zk_data import (
    INITIAL_LEADER_EPOCH,
    LEADER_RECOVERY_RECOVERING,
    NO_LEADER,
    BrokerIdsZNode,
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityChangeNotificationZNode,
    ControllerZNode,
    DeleteTopicsTopicZNode,
    DeleteTopicsZNode,
    LeaderIsrAndControllerEpoch,
    PreferredReplicaElectionZNode,
    ReassignPartitionsZNode,
    TopicAssignment,
    TopicPartition,
    TopicPartitionsZNode,
    TopicsZNode,
    TopicZNode,
    UncleanLeaderElectionZNode,
    new_topic_id,
)
from odradek.clock import Clock
from odradek.errors import (
    BrokerNotAvailableError,
    InvalidReplicaAssignmentError,
    NotControllerError,
    RequestTimedOutError,
    StaleBrokerEpochError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from odradek.v1 import odradek_pb2 as pb

__all__ = ["Controller", "ControllerConfig"]

_log = logging.getLogger(__name__)

_CONNECTION_ERRORS = (
    ConnectionLoss,
    SessionExpiredError,
    ConnectionClosedError,
    OperationTimeoutError,
)


# ---------------------------------------------------------------------------------------------
# Events


@dataclass(frozen=True, slots=True)
class _Startup:
    pass


@dataclass(frozen=True, slots=True)
class _Elect:
    pass


@dataclass(frozen=True, slots=True)
class _BrokerChange:
    pass


@dataclass(frozen=True, slots=True)
class _TopicChange:
    pass


@dataclass(frozen=True, slots=True)
class _TopicDeletion:
    pass


@dataclass(frozen=True, slots=True)
class _PartitionModifications:
    topic: str


@dataclass(frozen=True, slots=True)
class _PartitionReassignment:
    pass


@dataclass(frozen=True, slots=True)
class _PreferredReplicaElection:
    pass


@dataclass(frozen=True, slots=True)
class _UncleanLeaderElection:
    pass


@dataclass(frozen=True, slots=True)
class _ConfigChange:
    pass


@dataclass(frozen=True, slots=True)
class _AutoRebalance:
    pass


@dataclass(frozen=True, slots=True)
class _StopReplicaResponse:
    epoch: int
    broker_id: int
    partitions: tuple[TopicPartition, ...]
    response: Response


@dataclass(frozen=True, slots=True)
class _AlterPartition:
    request: pb.AlterPartitionRequest
    future: Future[pb.AlterPartitionResponse]


@dataclass(frozen=True, slots=True)
class _ControlledShutdown:
    request: pb.ControlledShutdownRequest
    future: Future[pb.ControlledShutdownResponse]


@dataclass(frozen=True, slots=True)
class _Unfence:
    broker_id: int


@dataclass(frozen=True, slots=True)
class _ProbedDead:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class _ControllerGone:
    """A standby's probe found nothing listening at the active controller's address."""

    holder: tuple[int, int]


@dataclass(frozen=True, slots=True)
class _SessionSuspended:
    pass


@dataclass(frozen=True, slots=True)
class _SessionReconnected:
    pass


@dataclass(frozen=True, slots=True)
class _SessionLost:
    pass


@dataclass(frozen=True, slots=True)
class _Shutdown:
    pass


_Event = (
    _Startup
    | _Elect
    | _BrokerChange
    | _TopicChange
    | _TopicDeletion
    | _PartitionModifications
    | _PartitionReassignment
    | _PreferredReplicaElection
    | _UncleanLeaderElection
    | _ConfigChange
    | _AutoRebalance
    | _StopReplicaResponse
    | _AlterPartition
    | _ControlledShutdown
    | _Unfence
    | _ProbedDead
    | _ControllerGone
    | _SessionSuspended
    | _SessionReconnected
    | _SessionLost
    | _Shutdown
)

_Decide = Callable[[TopicPartition, LeaderIsrAndControllerEpoch], Election | None]


def _reply_not_controller(event: _Event, message: str = "not the active controller") -> bool:
    """Answer a broker request event with NOT_CONTROLLER; ``False`` for other events."""
    if isinstance(event, _AlterPartition):
        if not event.future.done():
            event.future.set_result(pb.AlterPartitionResponse(error_code=NotControllerError.code))
        return True
    if isinstance(event, _ControlledShutdown):
        if not event.future.done():
            event.future.set_result(
                pb.ControlledShutdownResponse(error_code=NotControllerError.code)
            )
        return True
    return False


# ---------------------------------------------------------------------------------------------


class Controller:
    """A controller candidate on one node; active while it holds ``/controller``."""

    def __init__(
        self,
        zk: KazooClient,
        node_id: int,
        clock: Clock,
        config: ControllerConfig = ControllerConfig(),  # noqa: B008 - immutable
        channel_factory: Callable[[str], grpc.Channel] = grpc.insecure_channel,
    ) -> None:
        self._zk = zk
        self._zkc = ControllerZkClient(zk, config.inter_broker_listener_name)
        self._node_id = node_id
        self._clock = clock
        self._config = config
        self._channel_factory = channel_factory
        self._events: queue.Queue[_Event] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lifecycle = threading.Lock()
        self._closed = False
        # Owned by the event thread:
        self._ctx: ControllerContext | None = None
        self._failover_done = False
        self._channels: ControllerChannelManager | None = None
        self._batch = RequestBatch()
        self._suspended = False
        self._deferred: list[_Event] = []
        self._watches_installed = False
        self._next_rebalance_ms: int | None = None
        self._unclean_default = config.unclean_leader_election_enable
        """``unclean.leader.election.enable`` for topics without an override: this broker's
        dynamic config, else the cluster-wide dynamic default, else ``config``'s (Kafka's
        controller reads its broker's config, which KIP-226 makes dynamic)."""
        self._broker_configs_changed = False
        # Topics whose znode this process watches for added partitions (kazoo threads too):
        self._partition_watches: set[str] = set()
        self._partition_watches_lock = threading.Lock()
        # Read by other threads (single reference reads):
        self._active_controller_id = -1
        # Brokers' heartbeat sessions (thread-safe; heartbeats arrive on gRPC threads):
        self._sessions = BrokerSessions(config.broker_session_timeout_ms)
        self._probe_after_ms = 2 * config.broker_heartbeat_interval_ms
        self._probe: LivenessProbe | None = None
        # A standby's probes of the active controller (controller.controller_takeover):
        self._takeover: ControllerTakeover | None = None
        self._takeover_probe: LivenessProbe | None = None
        if self._probe_after_ms and config.broker_session_timeout_ms:
            self._probe = LivenessProbe(lambda b, epoch: self._events.put(_ProbedDead(b, epoch)))
            self._takeover = ControllerTakeover(node_id, self._probe_after_ms)
            self._takeover_probe = LivenessProbe(
                lambda c, session: self._events.put(_ControllerGone((c, session)))
            )

    # -- public API -------------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self._node_id

    @property
    def is_active(self) -> bool:
        """Whether this node is the active controller and connected to ZooKeeper."""
        return (
            self._ctx is not None
            and self._failover_done
            and not self._suspended
            and not self._closed
        )

    @property
    def epoch(self) -> int:
        """The controller epoch this node won, while it is active; -1 otherwise."""
        ctx = self._ctx
        return ctx.epoch if ctx is not None else -1

    @property
    def active_controller_id(self) -> int:
        """The id in ``/controller`` (kept current by a watch); -1 when there is none."""
        return self._active_controller_id

    @property
    def config(self) -> ControllerConfig:
        return self._config

    def startup(self) -> None:
        """Start the event thread, which installs the watches and campaigns for
        ``/controller``. Returns at once; the controller becomes active when it wins.
        Raises ``RuntimeError`` if called twice or after :meth:`shutdown`."""
        with self._lifecycle:
            if self._thread is not None or self._closed:
                raise RuntimeError("a controller starts once")
            self._zk.add_listener(self._on_zk_state)
            self._thread = threading.Thread(
                target=self._run, name=f"controller-event-{self._node_id}", daemon=True
            )
            self._thread.start()
            self._events.put(_Startup())

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Resign (deleting ``/controller`` if this node holds it, so another candidate takes
        over at once), stop the event thread and the broker connections. Idempotent. Pending
        broker requests are answered NOT_CONTROLLER."""
        with self._lifecycle:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        self._zk.remove_listener(self._on_zk_state)
        if self._probe is not None:
            self._probe.shutdown()
        if self._takeover_probe is not None:
            self._takeover_probe.shutdown()
        if thread is None:
            return
        self._events.put(_Shutdown())
        if threading.current_thread() is not thread:
            thread.join(timeout_s)

    def alter_partition(
        self, request: pb.AlterPartitionRequest, timeout_ms: int | None = None
    ) -> pb.AlterPartitionResponse:
        """Handle a leader's AlterPartition on the event thread and wait for the outcome.

        Answers NOT_CONTROLLER at once when not active, REQUEST_TIMED_OUT after ``timeout_ms``
        (default ``request_timeout_ms``). Thread-safe; meant for gRPC threads.
        """
        if not self.is_active:
            return pb.AlterPartitionResponse(error_code=NotControllerError.code)
        future: Future[pb.AlterPartitionResponse] = Future()
        self._events.put(_AlterPartition(request, future))
        try:
            return future.result(self._timeout_s(timeout_ms))
        except FutureTimeoutError:
            return pb.AlterPartitionResponse(error_code=RequestTimedOutError.code)

    def controlled_shutdown(
        self, request: pb.ControlledShutdownRequest, timeout_ms: int | None = None
    ) -> pb.ControlledShutdownResponse:
        """Handle a broker's ControlledShutdown on the event thread and wait for the outcome;
        errors as :meth:`alter_partition`. Thread-safe."""
        if not self.is_active:
            return pb.ControlledShutdownResponse(error_code=NotControllerError.code)
        future: Future[pb.ControlledShutdownResponse] = Future()
        self._events.put(_ControlledShutdown(request, future))
        try:
            return future.result(self._timeout_s(timeout_ms))
        except FutureTimeoutError:
            return pb.ControlledShutdownResponse(error_code=RequestTimedOutError.code)

    def broker_heartbeat(self, request: pb.BrokerHeartbeatRequest) -> pb.BrokerHeartbeatResponse:
        """A broker's heartbeat (:mod:`controller.broker_sessions`): answered here, on the
        calling thread, so that a busy event thread never delays it; an unfencing is handed to
        the event thread. NOT_CONTROLLER when not active, STALE_BROKER_EPOCH for a
        registration the controller does not know (yet). Thread-safe."""
        ctx = self._ctx
        if ctx is None or not self.is_active:
            return pb.BrokerHeartbeatResponse(error_code=NotControllerError.code)
        outcome = self._sessions.heartbeat(
            request.broker_id, request.broker_epoch, self._clock.monotonic_ms()
        )
        if outcome is HeartbeatOutcome.STALE:
            return pb.BrokerHeartbeatResponse(error_code=StaleBrokerEpochError.code)
        if outcome is HeartbeatOutcome.UNFENCE:
            self._events.put(_Unfence(request.broker_id))
        return pb.BrokerHeartbeatResponse(
            is_fenced=outcome is not HeartbeatOutcome.ACTIVE,
            controller_epoch=ctx.epoch,
            session_timeout_ms=self._sessions.session_timeout_ms,
        )

    def active_controller_unreachable(self, controller_id: int, target: str) -> None:
        """This node's heartbeat to ``controller_id`` at ``target`` reached no controller: a
        standby probes that address (at most once per probe interval) and takes the role over
        if nothing listens there (:mod:`controller.controller_takeover`). Returns at once.
        Thread-safe; meant for the node's heartbeat thread."""
        if self._takeover is None or self._takeover_probe is None or self._ctx is not None:
            return
        holder = self._takeover.unreachable(controller_id, self._clock.monotonic_ms())
        if holder is not None:
            self._takeover_probe.probe(holder[0], holder[1], target)

    def _timeout_s(self, timeout_ms: int | None) -> float:
        return (timeout_ms if timeout_ms is not None else self._config.request_timeout_ms) / 1000

    # -- kazoo callbacks (kazoo's threads: enqueue only) -------------------------------------

    def _on_zk_state(self, state: str) -> None:
        if state == KazooState.SUSPENDED:
            self._events.put(_SessionSuspended())
        elif state == KazooState.LOST:
            self._events.put(_SessionLost())
        else:
            self._events.put(_SessionReconnected())

    def _watch_children(self, path: str, event: _Event) -> None:
        def on_children(_children: list[str]) -> bool | None:
            if self._closed:
                return False
            self._events.put(event)
            return None

        ChildrenWatch(self._zk, path, on_children)

    def _watch_data(self, path: str, event: _Event) -> None:
        def on_data(_data: bytes | None, _stat: Any, _event: Any = None) -> bool | None:
            if self._closed:
                return False
            self._events.put(event)
            return None

        DataWatch(self._zk, path, on_data)

    def _watch_partition_modifications(self, topic: str) -> None:
        """Kafka's ``PartitionModificationsHandler``: a data watch on ``/brokers/topics/<t>``
        for the partitions CreatePartitions adds; one per topic for the process's life, ended
        when the znode goes."""
        with self._partition_watches_lock:
            if topic in self._partition_watches:
                return
            self._partition_watches.add(topic)

        def on_data(data: bytes | None, _stat: Any, _event: Any = None) -> bool | None:
            if data is None or self._closed:
                with self._partition_watches_lock:
                    self._partition_watches.discard(topic)
                return False
            self._events.put(_PartitionModifications(topic))
            return None

        DataWatch(self._zk, TopicZNode.path(topic), on_data)

    def _on_controller_data(self, data: bytes | None, stat: Any, _event: Any = None) -> bool | None:
        if self._closed:
            return False
        try:
            self._active_controller_id = ControllerZNode.decode(data) if data else -1
        except ValueError:
            self._active_controller_id = -1
        if self._takeover is not None:
            holder = self._active_controller_id
            self._takeover.holder_changed(
                (holder, int(stat.ephemeralOwner)) if holder >= 0 and stat is not None else None
            )
        self._events.put(_Elect())
        return None

    # -- event loop -------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            try:
                event = self._events.get(timeout=self._timer_wait_s())
            except queue.Empty:
                self._fire_timers()
                continue
            if isinstance(event, _Shutdown):
                self._handle_shutdown()
                return
            self._process(event)
            self._fire_timers()

    def _timer_wait_s(self) -> float | None:
        due = [self._next_rebalance_ms]
        if self._ctx is not None:
            due.append(self._sessions.next_expiry_ms())
            if self._probe is not None:
                due.append(self._sessions.next_suspect_ms(self._probe_after_ms))
        if all(d is None for d in due):
            return None
        remaining = min(d for d in due if d is not None) - self._clock.monotonic_ms()
        # Wake at least every 100 ms so that a manual clock moved by a test is noticed.
        return min(max(remaining, 0), 100) / 1000

    def _fire_timers(self) -> None:
        if self.is_active:
            fenced = self._sessions.expire(self._clock.monotonic_ms())
            if fenced:
                _log.warning(
                    "controller %d: fencing brokers %s: no heartbeat for %d ms",
                    self._node_id,
                    fenced,
                    self._sessions.session_timeout_ms,
                )
                self._process(_BrokerChange())
            ctx = self._ctx
            if self._probe is not None and ctx is not None:
                now = self._clock.monotonic_ms()
                for b, epoch in self._sessions.suspects(now, self._probe_after_ms):
                    broker = ctx.live_brokers.get(b)
                    if broker is not None:
                        self._probe.probe(b, epoch, broker.info.target)
        if (
            self._next_rebalance_ms is not None
            and not self._suspended
            and self._clock.monotonic_ms() >= self._next_rebalance_ms
        ):
            self._next_rebalance_ms = (
                self._clock.monotonic_ms() + self._config.leader_imbalance_check_interval_ms
            )
            self._process(_AutoRebalance())

    def _process(self, event: _Event) -> None:
        if isinstance(event, _SessionSuspended):
            _log.info("controller %d: ZooKeeper connection suspended", self._node_id)
            self._suspended = True
            return
        if isinstance(event, _SessionLost):
            _log.warning("controller %d: ZooKeeper session lost", self._node_id)
            self._resign()
            for deferred in self._deferred:
                _reply_not_controller(deferred, "ZooKeeper session lost")
            self._deferred.clear()
            self._suspended = True
            return
        if isinstance(event, _SessionReconnected):
            if not self._suspended:
                return
            _log.info("controller %d: ZooKeeper connection back", self._node_id)
            self._suspended = False
            pending: list[_Event] = [_Startup(), *self._deferred, _Elect()]
            self._deferred = []
            for e in pending:
                self._process(e)
            return
        if self._suspended:
            if not _reply_not_controller(event):
                self._deferred.append(event)
            return
        if self._ctx is None and _reply_not_controller(event):
            return
        try:
            self._handle(event)
            self._flush()
        except ControllerMovedError as e:
            _log.warning("controller %d: %s; resigning", self._node_id, e)
            _reply_not_controller(event)
            self._resign()
            self._retry_connection_errors(self._zkc.delete_controller_if_owned)
            self._events.put(_Elect())
        except _CONNECTION_ERRORS as e:
            _log.info("controller %d: ZooKeeper unavailable (%s)", self._node_id, type(e).__name__)
            _reply_not_controller(event)
            if isinstance(event, _Elect | _Startup | _ControllerGone) and self._ctx is not None:
                self._resign()
            if self._zk.connected:
                self._events.put(event)
            else:
                self._suspended = True
                if not isinstance(event, _AlterPartition | _ControlledShutdown):
                    self._deferred.append(event)
        except Exception:
            _log.exception("controller %d: error handling %s", self._node_id, event)
            if self._ctx is not None and not self._failover_done:
                # A failover that cannot finish: give the election to another candidate.
                self._resign()
                self._retry_connection_errors(self._zkc.delete_controller_if_owned)
            if isinstance(event, _AlterPartition) and not event.future.done():
                event.future.set_result(
                    pb.AlterPartitionResponse(error_code=UnknownServerError.code)
                )
            if isinstance(event, _ControlledShutdown) and not event.future.done():
                event.future.set_result(
                    pb.ControlledShutdownResponse(error_code=UnknownServerError.code)
                )

    def _retry_connection_errors(self, action: Callable[[], Any]) -> None:
        try:
            action()
        except _CONNECTION_ERRORS:
            pass

    def _handle(self, event: _Event) -> None:
        if isinstance(event, _Startup):
            self._install_watches()
        elif isinstance(event, _Elect):
            self._elect()
        elif isinstance(event, _ControllerGone):
            self._take_over(event.holder)
        elif self._ctx is None:
            return  # not active: watches fire on every candidate; only the active one acts
        elif isinstance(event, _BrokerChange):
            self._on_broker_change()
        elif isinstance(event, _TopicChange):
            self._on_topic_change()
        elif isinstance(event, _TopicDeletion):
            self._on_topic_deletion()
        elif isinstance(event, _PartitionModifications):
            self._on_partition_modifications(event.topic)
        elif isinstance(event, _PartitionReassignment):
            self._on_reassign_partitions_znode()
        elif isinstance(event, _PreferredReplicaElection):
            self._on_preferred_replica_election_znode()
        elif isinstance(event, _UncleanLeaderElection):
            self._on_unclean_leader_election_znode()
        elif isinstance(event, _ConfigChange):
            self._on_config_change()
        elif isinstance(event, _AutoRebalance):
            self._check_and_trigger_auto_leader_rebalance()
        elif isinstance(event, _StopReplicaResponse):
            self._on_stop_replica_response(event)
        elif isinstance(event, _AlterPartition):
            self._on_alter_partition(event)
        elif isinstance(event, _ControlledShutdown):
            self._on_controlled_shutdown(event)
        elif isinstance(event, _ProbedDead) and self._sessions.fence_dead(
            event.broker_id, event.broker_epoch
        ):
            _log.warning(
                "controller %d: fencing broker %d: silent, and nothing listens at its address",
                self._node_id,
                event.broker_id,
            )
            self._on_broker_change()
        elif isinstance(event, _Unfence) and self._sessions.unfence(event.broker_id):
            _log.info("controller %d: unfencing broker %d", self._node_id, event.broker_id)
            self._on_broker_change()

    def _handle_shutdown(self) -> None:
        ctx = self._ctx
        if ctx is not None and not self._suspended:
            try:
                self._zkc.delete_controller(ctx.epoch_zk_version)
            except (ControllerMovedError, *_CONNECTION_ERRORS):
                pass
        self._resign()
        for event in self._deferred:
            _reply_not_controller(event)
        self._deferred.clear()
        while True:
            try:
                _reply_not_controller(self._events.get_nowait())
            except queue.Empty:
                break

    def _install_watches(self) -> None:
        if self._watches_installed:
            return
        self._zkc.ensure_persistent_paths()
        self._watch_children(BrokerIdsZNode.path, _BrokerChange())
        self._watch_children(TopicsZNode.path, _TopicChange())
        self._watch_children(DeleteTopicsZNode.path, _TopicDeletion())
        self._watch_children(ConfigEntityChangeNotificationZNode.path, _ConfigChange())
        self._watch_data(ReassignPartitionsZNode.path, _PartitionReassignment())
        self._watch_data(PreferredReplicaElectionZNode.path, _PreferredReplicaElection())
        self._watch_data(UncleanLeaderElectionZNode.path, _UncleanLeaderElection())
        DataWatch(self._zk, ControllerZNode.path, self._on_controller_data)
        self._watches_installed = True

    # -- election and failover --------------------------------------------------------------

    def _elect(self) -> None:
        holder = self._zkc.get_controller()
        session = self._zkc.session_id
        if holder is not None:
            holder_id, owner = holder
            self._active_controller_id = holder_id
            ours = holder_id == self._node_id and owner == session
            if self._ctx is not None:
                if not ours:
                    _log.info("controller %d: controller moved to %d", self._node_id, holder_id)
                    self._resign()
                return
            if ours:
                # We hold /controller but are not acting (a failover that did not finish):
                # give it up so that a clean election runs.
                self._zkc.delete_controller_if_owned()
            return
        if self._ctx is not None:
            self._resign()
        try:
            epoch, epoch_zk_version = self._zkc.register_controller_and_increment_epoch(
                self._node_id, self._clock.wall_ms()
            )
        except ControllerMovedError:
            holder = self._zkc.get_controller()
            self._active_controller_id = holder[0] if holder is not None else -1
            return
        self._active_controller_id = self._node_id
        _log.info("controller %d: active with epoch %d", self._node_id, epoch)
        self._on_controller_failover(epoch, epoch_zk_version)

    def _take_over(self, gone: tuple[int, int]) -> None:
        """Replace the active controller ``gone`` (id, session) found dead by a standby's probe
        (:mod:`controller.controller_takeover`)."""
        if self._ctx is not None or self._takeover is None or not self._takeover.still_holder(gone):
            return
        try:
            epoch, epoch_zk_version = self._zkc.take_over_controller(
                self._node_id, gone, self._clock.wall_ms()
            )
        except ControllerMovedError as e:
            _log.info("controller %d: no takeover: %s", self._node_id, e)
            return
        self._active_controller_id = self._node_id
        _log.warning(
            "controller %d: controller %d is gone (nothing listens at its address); "
            "active with epoch %d before its ZooKeeper session ends",
            self._node_id,
            gone[0],
            epoch,
        )
        self._on_controller_failover(epoch, epoch_zk_version)

    def _resign(self) -> None:
        """Stop acting (Kafka's ``onControllerResignation``); no ZooKeeper calls."""
        if self._ctx is not None:
            _log.info("controller %d: resigning epoch %d", self._node_id, self._ctx.epoch)
        self._ctx = None
        self._failover_done = False
        self._sessions.clear()
        self._batch = RequestBatch()
        self._next_rebalance_ms = None
        if self._channels is not None:
            self._channels.shutdown(timeout_s=0)
            self._channels = None

    def _on_controller_failover(self, epoch: int, epoch_zk_version: int) -> None:
        """Rebuild the view from ZooKeeper, tell every broker, and finish what the previous
        controller left: new and offline partitions, reassignments, deletions, elections."""
        self._zkc.ensure_persistent_paths()
        ctx = ControllerContext(epoch=epoch, epoch_zk_version=epoch_zk_version)
        ctx.cluster_id = get_or_create_cluster_id(self._zk)
        ctx.live_brokers = self._zkc.get_all_brokers()
        self._sessions.reset(
            {b: v.epoch for b, v in ctx.live_brokers.items()}, self._clock.monotonic_ms()
        )
        self._ctx = ctx
        self._batch = RequestBatch()
        channels = ControllerChannelManager(self._config, self._channel_factory)
        self._channels = channels
        for broker_id, broker in ctx.live_brokers.items():
            channels.add_broker(broker_id, broker.info.target)
        for topic in self._zkc.get_all_topics():
            self._load_topic(topic)
        for topic in self._zkc.get_children(DeleteTopicsZNode.path):
            if topic in ctx.topic_ids:
                ctx.topics_to_delete.add(topic)
            else:
                self._zkc.delete_path(DeleteTopicsTopicZNode.path(topic), ctx.epoch_zk_version)
        self._consume_config_changes()
        self._unclean_default = self._read_unclean_default()
        for tp, state in ctx.states.items():
            if not ctx.is_deleting(tp.topic) and state is not None:
                self._batch.add_leader_and_isr(ctx.live_replicas(tp), tp)
        self._batch.add_update_metadata()
        self._trigger_online_partition_state_change()
        # Brokers that died while no controller was active leave the ISRs now (Kafka's replica
        # state machine startup moves them to OfflineReplica).
        self._remove_offline_replicas_from_isrs(
            {r for a in ctx.assignments.values() for r in a.replicas} - set(ctx.live_brokers)
        )
        for tp in ctx.partitions_being_reassigned():
            self._maybe_complete_reassignment(tp)
        self._on_reassign_partitions_znode()
        self._on_preferred_replica_election_znode()
        self._on_unclean_leader_election_znode()
        self._resume_deletions()
        if self._config.auto_leader_rebalance_enable:
            self._next_rebalance_ms = (
                self._clock.monotonic_ms() + self._config.leader_imbalance_check_interval_ms
            )
        self._failover_done = True

    def _load_topic(self, topic: str) -> bool:
        """Read a topic's assignment, config and partition states into the context."""
        ctx = self._active()
        assignment = self._zkc.get_topic_assignment(topic)
        if assignment is None:
            return False
        topic_id = assignment.topic_id
        if topic_id is None:
            # Kafka's controller gives topics created by old tools an id.
            topic_id = new_topic_id()
            assignment = dataclasses.replace(assignment, topic_id=topic_id)
            self._zkc.set_topic_assignment(topic, assignment, ctx.epoch_zk_version)
        ctx.add_topic(
            topic,
            topic_id,
            {
                p: ReplicaAssignment(
                    replicas=tuple(replicas),
                    adding_replicas=tuple(assignment.adding_replicas.get(p, ())),
                    removing_replicas=tuple(assignment.removing_replicas.get(p, ())),
                )
                for p, replicas in assignment.partitions.items()
            },
            self._zkc.get_topic_config(topic),
        )
        # Only partitions with a znode can have a state: a new topic's are not read one by one.
        created = set(self._zkc.get_children(TopicPartitionsZNode.path(topic)))
        ctx.states.update(
            self._zkc.get_partition_states(
                tp for tp in ctx.partitions_of(topic) if str(tp.partition) in created
            )
        )
        self._watch_partition_modifications(topic)
        return True

    def _active(self) -> ControllerContext:
        if self._ctx is None:
            raise ControllerMovedError("not the active controller")
        return self._ctx

    def _flush(self) -> None:
        """Send the requests the event produced."""
        ctx = self._ctx
        channels = self._channels
        if ctx is None or channels is None or self._batch.is_empty():
            return
        for item in self._batch.build(ctx, self._node_id):
            channels.send(item.broker_id, item.request, self._callback_for(ctx, item))

    def _callback_for(
        self, ctx: ControllerContext, item: BrokerRequest
    ) -> Callable[[Response], None] | None:
        if not item.deletion or not isinstance(item.request, pb.StopReplicaRequest):
            return None
        partitions = tuple(TopicPartition(p.topic, p.partition) for p in item.request.partitions)
        epoch, broker_id = ctx.epoch, item.broker_id

        def on_response(response: Response) -> None:
            self._events.put(_StopReplicaResponse(epoch, broker_id, partitions, response))

        return on_response

    # -- partition state changes ------------------------------------------------------------

    def _change_states(
        self,
        partitions: Iterable[TopicPartition],
        decide: _Decide,
        *,
        exclude: int | None = None,
        force: bool = False,
    ) -> list[TopicPartition]:
        """Apply ``decide`` to each partition's current state and write the outcome with the
        leader epoch + 1, conditional on the partition epoch; on a lost version race, re-read
        and decide again. Queues LeaderAndIsr to the live replicas (but ``exclude``). Unless
        ``force``, an outcome equal to the current leader and ISR is not written."""
        ctx = self._active()
        changed = []
        for tp in partitions:
            for _ in range(self._config.max_state_write_retries):
                current = ctx.states.get(tp)
                if current is None:
                    break
                decision = decide(tp, current)
                if decision is None:
                    break
                recovery = (
                    LEADER_RECOVERY_RECOVERING
                    if decision.unclean
                    else current.leader_recovery_state
                )
                if (
                    not force
                    and decision.leader == current.leader
                    and decision.isr == current.isr
                    and recovery == current.leader_recovery_state
                ):
                    break
                new = LeaderIsrAndControllerEpoch(
                    leader=decision.leader,
                    leader_epoch=current.leader_epoch + 1,
                    isr=decision.isr,
                    controller_epoch=ctx.epoch,
                    partition_epoch=current.partition_epoch,
                    leader_recovery_state=recovery,
                )
                try:
                    written = self._zkc.update_partition_state(
                        tp, new, current.partition_epoch, ctx.epoch_zk_version
                    )
                except StateWriteConflictError:
                    self._refresh_state(tp)
                    continue
                except NoNodeError:
                    ctx.states.pop(tp, None)
                    break
                ctx.states[tp] = written
                if decision.unclean:
                    _log.warning("unclean leader election for %s: leader %d", tp, written.leader)
                self._batch.add_leader_and_isr(
                    (b for b in ctx.live_replicas(tp) if b != exclude), tp
                )
                changed.append(tp)
                break
        return changed

    def _refresh_state(self, tp: TopicPartition) -> None:
        ctx = self._active()
        fresh = self._zkc.get_partition_state(tp)
        if fresh is None:
            ctx.states.pop(tp, None)
            return
        if fresh.controller_epoch > ctx.epoch:
            raise ControllerMovedError(
                f"{tp} was written by controller epoch {fresh.controller_epoch} > {ctx.epoch}"
            )
        ctx.states[tp] = fresh

    def _trigger_online_partition_state_change(self, topics: Iterable[str] | None = None) -> None:
        """Start new partitions and elect leaders for offline ones (Kafka's
        ``triggerOnlinePartitionStateChange``)."""
        ctx = self._active()
        needing = ctx.partitions_needing_leader(topics)
        self._initialize_partitions([tp for tp in needing if tp not in ctx.states])
        self._elect_offline([tp for tp in needing if tp in ctx.states])

    def _initialize_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        """Create the state of new partitions: the first live replica leads, the live replicas
        form the ISR, leader epoch 0. Partitions with no live replica stay new."""
        ctx = self._active()
        live = ctx.live_broker_ids
        offline = []
        wanted: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        for tp in partitions:
            live_replicas = [r for r in ctx.replicas(tp) if r in live]
            if not live_replicas:
                _log.info("%s has no live replica; it stays offline", tp)
                continue
            wanted[tp] = LeaderIsrAndControllerEpoch(
                leader=live_replicas[0],
                leader_epoch=INITIAL_LEADER_EPOCH,
                isr=tuple(live_replicas),
                controller_epoch=ctx.epoch,
            )
        created = self._zkc.create_partition_states(wanted, ctx.epoch_zk_version)
        for tp, outcome in created.items():
            if isinstance(outcome, NodeExistsError):
                self._refresh_state(tp)
                offline.append(tp)
            elif not isinstance(outcome, NoNodeError):  # NoNode: the topic went away meanwhile
                ctx.states[tp] = outcome
                self._batch.add_leader_and_isr(ctx.live_replicas(tp), tp)
        if offline:
            self._elect_offline(offline)

    def _elect_offline(
        self, partitions: Iterable[TopicPartition], unclean: bool | None = None
    ) -> list[TopicPartition]:
        """Offline election for partitions whose leader is none or not live; ``unclean``
        overrides the topic's ``unclean.leader.election.enable``."""
        ctx = self._active()
        live = ctx.live_broker_ids

        def decide(tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> Election | None:
            if state.leader in live:
                return None
            allow = (
                unclean
                if unclean is not None
                else ctx.unclean_leader_election_enable(tp.topic, self._unclean_default)
            )
            return offline_leader(ctx.replicas(tp), state.isr, live, allow)

        return self._change_states(partitions, decide)

    def _remove_offline_replicas_from_isrs(self, brokers: Iterable[int]) -> None:
        ctx = self._active()
        for b in sorted(brokers):
            partitions = [
                tp
                for tp in ctx.partitions_on_broker(b)
                if not ctx.is_deleting(tp.topic) and tp in ctx.states and b in ctx.states[tp].isr
            ]
            self._remove_replica_from_isr(b, partitions)

    def _remove_replica_from_isr(
        self, broker_id: int, partitions: Iterable[TopicPartition]
    ) -> None:
        """The OfflineReplica transition: out of the ISR unless last; leader -1 if it led."""

        def decide(_tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> Election | None:
            outcome = remove_replica_from_isr(state.leader, state.isr, broker_id)
            return None if outcome is None else Election(outcome[0], outcome[1])

        self._change_states(partitions, decide, exclude=broker_id)

    # -- brokers ----------------------------------------------------------------------------

    def _on_broker_change(self) -> None:
        ctx = self._active()
        channels = self._channels
        assert channels is not None
        registered = self._zkc.get_all_brokers()
        self._sessions.sync({b: v.epoch for b, v in registered.items()}, self._clock.monotonic_ms())
        # a fenced broker is handled as gone: registered, but leading and following nothing
        fenced = self._sessions.fenced()
        current = {b: v for b, v in registered.items() if b not in fenced}
        previous = ctx.live_brokers
        new = set(current) - set(previous)
        dead = set(previous) - set(current)
        bounced = {b for b in set(current) & set(previous) if current[b].epoch > previous[b].epoch}
        _log.info(
            "controller %d: new brokers %s, dead %s, bounced %s, live %s",
            self._node_id,
            sorted(new),
            sorted(dead),
            sorted(bounced),
            sorted(current),
        )
        for b in dead | bounced:
            channels.remove_broker(b)
        if dead or bounced:
            ctx.live_brokers = {b: v for b, v in current.items() if b not in bounced}
            self._on_broker_failure(dead | bounced)
        ctx.live_brokers = dict(current)
        for b, broker in current.items():
            channels.add_broker(b, broker.info.target)  # new, bounced, or moved address
        if new or bounced:
            self._on_broker_startup(new | bounced)
        self._batch.add_update_metadata()

    def _on_broker_failure(self, dead: Collection[int]) -> None:
        """Elect new leaders for the partitions the dead brokers led, then take the dead
        replicas out of the ISRs (Kafka's ``onBrokerFailure``)."""
        ctx = self._active()
        ctx.shutting_down -= set(dead)
        ctx.deletion_in_flight = {x for x in ctx.deletion_in_flight if x[0] not in dead}
        self._trigger_online_partition_state_change()
        self._remove_offline_replicas_from_isrs(dead)
        self._batch.add_update_metadata()

    def _on_broker_startup(self, new: Collection[int]) -> None:
        """Tell new brokers about every partition they replicate, and start or elect what
        they make possible (Kafka's ``onBrokerStartup``)."""
        ctx = self._active()
        for b in sorted(new):
            for tp in ctx.partitions_on_broker(b):
                if tp in ctx.states and not ctx.is_deleting(tp.topic):
                    self._batch.add_leader_and_isr([b], tp)
        self._trigger_online_partition_state_change()
        self._resume_deletions()
        self._batch.add_update_metadata()

    # -- topics -----------------------------------------------------------------------------

    def _on_topic_change(self) -> None:
        ctx = self._active()
        topics = set(self._zkc.get_all_topics())
        for topic in sorted(ctx.topics - topics):
            _log.info("topic %s disappeared from ZooKeeper", topic)
            ctx.remove_topic(topic)
            self._batch.add_update_metadata()
        new = sorted(topics - ctx.topics)
        loaded = [t for t in new if self._load_topic(t)]
        if loaded:
            _log.info("controller %d: new topics %s", self._node_id, loaded)
            self._trigger_online_partition_state_change(loaded)
            self._batch.add_update_metadata()

    def _on_partition_modifications(self, topic: str) -> int:
        """Start the partitions CreatePartitions added to ``topic`` (none while it is being
        deleted, as Kafka skips them). Returns the version of the topic znode read (-1: none
        read)."""
        ctx = self._active()
        if topic not in ctx.topic_ids:
            return -1  # not loaded yet: the topic change event loads every partition
        found = self._zkc.get_topic_assignment_version(topic)
        if found is None:
            return -1
        assignment, version = found
        known = {tp.partition for tp in ctx.partitions_of(topic)}
        new = added_partitions(known, assignment.partitions)
        if not new:
            return version
        if ctx.is_deleting(topic):
            _log.info("skipping new partitions %s of %s: it is being deleted", new, topic)
            return version
        _log.info("controller %d: new partitions %s of %s", self._node_id, new, topic)
        for p in new:
            ctx.assignments[TopicPartition(topic, p)] = ReplicaAssignment(
                replicas=tuple(assignment.partitions[p])
            )
        self._initialize_partitions([TopicPartition(topic, p) for p in new])
        self._batch.add_update_metadata()
        return version

    def _on_topic_deletion(self) -> None:
        ctx = self._active()
        for topic in self._zkc.get_children(DeleteTopicsZNode.path):
            if topic not in ctx.topic_ids:
                self._zkc.delete_path(DeleteTopicsTopicZNode.path(topic), ctx.epoch_zk_version)
            elif topic not in ctx.topics_to_delete:
                _log.info("controller %d: deleting topic %s", self._node_id, topic)
                ctx.topics_to_delete.add(topic)
                self._batch.add_update_metadata()
        self._resume_deletions()

    def _resume_deletions(self) -> None:
        """Send StopReplica(delete) to every replica of the topics being deleted that has not
        confirmed yet; remove a topic's znodes once all replicas have. A replica on a dead
        broker holds its topic's deletion until the broker returns (Kafka)."""
        ctx = self._active()
        for topic in sorted(ctx.topics_to_delete):
            needed = {(b, tp) for tp in ctx.partitions_of(topic) for b in ctx.replicas(tp)}
            if needed <= ctx.deletion_done:
                self._zkc.delete_topic(topic, ctx.epoch_zk_version)
                ctx.remove_topic(topic)
                self._batch.add_update_metadata()
                _log.info("controller %d: deleted topic %s", self._node_id, topic)
                continue
            for b, tp in sorted(needed - ctx.deletion_done - ctx.deletion_in_flight):
                if b in ctx.live_brokers:
                    self._batch.add_deletion(b, tp)
                    ctx.deletion_in_flight.add((b, tp))

    def _on_stop_replica_response(self, event: _StopReplicaResponse) -> None:
        ctx = self._active()
        if event.epoch != ctx.epoch:
            return
        response = event.response
        if not isinstance(response, pb.StopReplicaResponse):
            return
        errors = {(p.topic, p.partition): p.error_code for p in response.partitions}
        for tp in event.partitions:
            ctx.deletion_in_flight.discard((event.broker_id, tp))
            code = errors.get((tp.topic, tp.partition), 0)
            if response.error_code == 0 and code in (0, UnknownTopicOrPartitionError.code):
                ctx.deletion_done.add((event.broker_id, tp))
            else:
                _log.warning(
                    "broker %d failed to delete %s (errors %d/%d); retrying when it re-registers",
                    event.broker_id,
                    tp,
                    response.error_code,
                    code,
                )
        if any(tp.topic in ctx.topics_to_delete for tp in event.partitions):
            self._resume_deletions()

    def _consume_config_changes(self) -> set[str]:
        """Read and delete the config change notifications; returns the topics named."""
        ctx = self._active()
        topics: set[str] = set()
        for child in self._zkc.get_children(ConfigEntityChangeNotificationZNode.path):
            if not child.startswith(ConfigEntityChangeNotificationSequenceZNode.prefix):
                continue
            path = f"{ConfigEntityChangeNotificationZNode.path}/{child}"
            found = self._zkc.get_data(path)
            if found is not None:
                try:
                    entity = ConfigEntityChangeNotificationSequenceZNode.decode_entity(found[0])
                except ValueError as e:
                    _log.error("ignoring config change %s: %s", child, e)
                    entity = ""
                kind, _, name = entity.partition("/")
                if kind == "topics" and name:
                    topics.add(name)
                elif kind == "brokers":
                    self._broker_configs_changed = True
            self._zkc.delete_path(path, ctx.epoch_zk_version)
        return topics

    def _read_unclean_default(self) -> bool:
        for broker in (self._node_id, None):
            value = self._zkc.get_broker_config(broker).get("unclean.leader.election.enable")
            if value is not None and value.strip().lower() in ("true", "false"):
                return value.strip().lower() == "true"
        return self._config.unclean_leader_election_enable

    def _on_config_change(self) -> None:
        ctx = self._active()
        topics = self._consume_config_changes() & ctx.topics
        if self._broker_configs_changed:
            self._broker_configs_changed = False
            was, self._unclean_default = self._unclean_default, self._read_unclean_default()
            if self._unclean_default and not was:
                # Kafka's enableDefaultUncleanLeaderElection: leaderless partitions of topics
                # without an override may now elect any live replica
                self._trigger_online_partition_state_change(
                    [t for t in ctx.topics if ctx.unclean_leader_election_enable(t, True)]
                )
        if not topics:
            return
        for topic in topics:
            ctx.topic_configs[topic] = self._zkc.get_topic_config(topic)
        self._batch.add_update_metadata()
        unclean = [
            t for t in topics if ctx.unclean_leader_election_enable(t, self._unclean_default)
        ]
        if unclean:
            self._trigger_online_partition_state_change(unclean)

    def _write_topic_assignment(self, topic: str) -> None:
        """Write the topic znode from the context, conditional on the version whose added
        partitions the context has taken in first: partitions a CreatePartitions wrote since
        the last event are started, not overwritten."""
        ctx = self._active()
        while True:
            version = self._on_partition_modifications(topic)
            partitions = {tp.partition: ctx.assignments[tp] for tp in ctx.partitions_of(topic)}
            assignment = TopicAssignment(
                partitions={p: a.replicas for p, a in partitions.items()},
                adding_replicas={
                    p: a.adding_replicas for p, a in partitions.items() if a.adding_replicas
                },
                removing_replicas={
                    p: a.removing_replicas for p, a in partitions.items() if a.removing_replicas
                },
                topic_id=ctx.topic_ids.get(topic),
            )
            try:
                self._zkc.set_topic_assignment(topic, assignment, ctx.epoch_zk_version, version)
                return
            except BadVersionError:
                continue  # a CreatePartitions came between: take its partitions in too

    # -- elections on request ---------------------------------------------------------------

    def _elect_preferred(self, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
        ctx = self._active()
        live = ctx.live_broker_ids

        def decide(tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> Election | None:
            replicas = ctx.replicas(tp)
            if not replicas or state.leader == replicas[0]:
                return None
            return preferred_leader(replicas, state.isr, live)

        eligible = [
            tp
            for tp in sorted(set(partitions))
            if tp in ctx.states and not ctx.is_deleting(tp.topic)
        ]
        return self._change_states(eligible, decide)

    def _on_preferred_replica_election_znode(self) -> None:
        ctx = self._active()
        found = self._zkc.get_data(PreferredReplicaElectionZNode.path)
        if found is None:
            return
        data, stat = found
        try:
            partitions = PreferredReplicaElectionZNode.decode(data)
        except ValueError as e:
            _log.error("ignoring %s: %s", PreferredReplicaElectionZNode.path, e)
            partitions = set()
        elected = self._elect_preferred(partitions)
        _log.info("controller %d: preferred leaders elected for %s", self._node_id, elected)
        self._zkc.delete_path(
            PreferredReplicaElectionZNode.path, ctx.epoch_zk_version, stat.version
        )

    def _on_unclean_leader_election_znode(self) -> None:
        ctx = self._active()
        found = self._zkc.get_data(UncleanLeaderElectionZNode.path)
        if found is None:
            return
        data, stat = found
        try:
            partitions = UncleanLeaderElectionZNode.decode(data)
        except ValueError as e:
            _log.error("ignoring %s: %s", UncleanLeaderElectionZNode.path, e)
            partitions = set()
        eligible = [
            tp for tp in sorted(partitions) if tp in ctx.states and not ctx.is_deleting(tp.topic)
        ]
        self._elect_offline(eligible, unclean=True)
        self._zkc.delete_path(UncleanLeaderElectionZNode.path, ctx.epoch_zk_version, stat.version)

    def _check_and_trigger_auto_leader_rebalance(self) -> None:
        """Kafka's ``checkAndTriggerAutoLeaderRebalance``: for each broker, if more than the
        configured share of the partitions it prefers are led elsewhere, elect it back."""
        ctx = self._active()
        if ctx.partitions_being_reassigned():
            return
        by_preferred: dict[int, list[TopicPartition]] = {}
        for tp, assignment in ctx.assignments.items():
            if tp in ctx.states and assignment.replicas and not ctx.is_deleting(tp.topic):
                by_preferred.setdefault(assignment.replicas[0], []).append(tp)
        live = ctx.live_broker_ids
        threshold = self._config.leader_imbalance_per_broker_percentage / 100
        for broker, partitions in sorted(by_preferred.items()):
            elsewhere = [tp for tp in partitions if ctx.states[tp].leader != broker]
            if broker in live and elsewhere and len(elsewhere) / len(partitions) > threshold:
                self._elect_preferred(elsewhere)

    # -- reassignment -----------------------------------------------------------------------

    def _on_reassign_partitions_znode(self) -> None:
        ctx = self._active()
        found = self._zkc.get_data(ReassignPartitionsZNode.path)
        if found is None:
            return
        data, stat = found
        try:
            entries = ReassignPartitionsZNode.decode(data)
        except ValueError as e:
            _log.error("ignoring %s: %s", ReassignPartitionsZNode.path, e)
            entries = {}
        for tp, target in sorted(entries.items()):
            current = ctx.assignments.get(tp)
            if current is None or tp not in ctx.states or ctx.is_deleting(tp.topic):
                _log.warning("ignoring reassignment of %s: unknown, offline or deleted", tp)
                continue
            if target is None:
                if not current.is_being_reassigned:
                    continue
                new = current.cancel()
            else:
                try:
                    validate_target_replicas(target, ctx.live_or_shutting_down_ids)
                except InvalidReplicaAssignmentError as e:
                    _log.warning("ignoring reassignment of %s: %s", tp, e.message)
                    continue
                new = current.reassign_to(target)
            if new != current or current.is_being_reassigned:
                self._on_partition_reassignment(tp, new)
        self._zkc.delete_path(ReassignPartitionsZNode.path, ctx.epoch_zk_version, stat.version)

    def _on_partition_reassignment(self, tp: TopicPartition, new: ReplicaAssignment) -> None:
        """Start (phase A) or complete (phase B) a reassignment; see
        :mod:`controller.reassignment`."""
        ctx = self._active()
        old = ctx.assignments[tp]
        unneeded = [r for r in old.replicas if r not in new.replicas]
        ctx.assignments[tp] = new
        self._write_topic_assignment(tp.topic)
        state = ctx.states[tp]
        if new.is_reassignment_complete(state.isr):
            self._complete_reassignment(tp, unneeded)
            return
        live = ctx.live_broker_ids

        def decide(_tp: TopicPartition, st: LeaderIsrAndControllerEpoch) -> Election | None:
            isr = tuple(r for r in st.isr if r not in unneeded) or st.isr
            leader = st.leader
            if leader in unneeded:
                elected = reassignment_leader(new.replicas, isr, live)
                leader = elected.leader if elected is not None else NO_LEADER
            return Election(leader, isr)

        # A1/A2: bump the leader epoch so every replica, adding ones included, learns RS.
        self._change_states([tp], decide, force=True)
        self._stop_removed_replicas(tp, unneeded)
        _log.info("controller %d: reassigning %s: %s", self._node_id, tp, new)

    def _maybe_complete_reassignment(self, tp: TopicPartition) -> None:
        ctx = self._active()
        assignment = ctx.assignments.get(tp)
        state = ctx.states.get(tp)
        if (
            assignment is not None
            and state is not None
            and assignment.is_being_reassigned
            and assignment.is_reassignment_complete(state.isr)
        ):
            self._complete_reassignment(tp)

    def _complete_reassignment(self, tp: TopicPartition, also_removed: Iterable[int] = ()) -> None:
        """Phase B: leader from the targets, ISR without the removed replicas, stop and delete
        them, RS = TRS in ZooKeeper.

        As in Kafka the reassignment completes even if no target replica can lead (possible
        only when every target replica in the ISR is dead, or when a cancelled reassignment's
        original replicas have all left the ISR): the partition is then left without a leader
        (leader -1, the ISR as it was) until an ISR member returns.
        """
        ctx = self._active()
        assignment = ctx.assignments[tp]
        target = assignment.target_replicas
        removed = [r for r in assignment.replicas if r not in target]
        removed += [r for r in also_removed if r not in removed and r not in target]
        live = ctx.live_broker_ids

        def decide(_tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> Election:
            elected = completed_reassignment_leader(target, state, live)
            if elected is not None:
                return elected
            _log.warning("reassignment of %s completes with no live target replica to lead", tp)
            return Election(NO_LEADER, tuple(r for r in state.isr if r in target) or state.isr)

        ctx.assignments[tp] = assignment.completed()
        self._change_states([tp], decide, force=True)
        self._stop_removed_replicas(tp, removed)
        self._write_topic_assignment(tp.topic)
        self._batch.add_update_metadata()
        _log.info("controller %d: reassignment of %s completed: %s", self._node_id, tp, target)

    def _stop_removed_replicas(self, tp: TopicPartition, removed: Iterable[int]) -> None:
        ctx = self._active()
        epoch = ctx.states[tp].leader_epoch if tp in ctx.states else -1
        for r in removed:
            if r in ctx.live_brokers:
                self._batch.add_stop_replica(r, tp, epoch, delete=True)

    # -- requests from brokers --------------------------------------------------------------

    def _on_alter_partition(self, event: _AlterPartition) -> None:
        ctx = self._active()
        request = event.request
        broker = ctx.live_brokers.get(request.broker_id)
        if broker is None or broker.epoch != request.broker_epoch:
            event.future.set_result(
                pb.AlterPartitionResponse(error_code=StaleBrokerEpochError.code)
            )
            return
        results = []
        changed = []
        eligible = ctx.live_broker_ids
        for item in request.partitions:
            tp = TopicPartition(item.topic, item.partition)
            current = None if ctx.is_deleting(tp.topic) else ctx.states.get(tp)
            decision = validate_alter_partition(
                broker_id=request.broker_id,
                leader_epoch=item.leader_epoch,
                new_isr=list(item.new_isr),
                partition_epoch=item.partition_epoch,
                current=current,
                replicas=ctx.replicas(tp),
                eligible_brokers=eligible,
                controller_epoch=ctx.epoch,
            )
            result = pb.AlterPartitionResult(topic=tp.topic, partition=tp.partition)
            if isinstance(decision, IsrChangeRejected):
                result.error_code = decision.error_code
                result.error_message = decision.error.message
                results.append(result)
                continue
            new = decision.new_state
            if decision.write and current is not None:
                try:
                    new = self._zkc.update_partition_state(
                        tp, new, current.partition_epoch, ctx.epoch_zk_version
                    )
                except StateWriteConflictError:
                    self._refresh_state(tp)
                    result.error_code = 95  # INVALID_UPDATE_VERSION
                    result.error_message = "the partition state changed meanwhile"
                    results.append(result)
                    continue
                except NoNodeError:
                    ctx.states.pop(tp, None)
                    result.error_code = UnknownTopicOrPartitionError.code
                    results.append(result)
                    continue
                ctx.states[tp] = new
                changed.append(tp)
                _log.info(
                    "ISR of %s is now %s (partition epoch %d)",
                    tp,
                    list(new.isr),
                    new.partition_epoch,
                )
            result.leader_id = new.leader
            result.leader_epoch = new.leader_epoch
            result.isr.extend(new.isr)
            result.partition_epoch = new.partition_epoch
            results.append(result)
        event.future.set_result(pb.AlterPartitionResponse(partitions=results))
        if changed:
            self._batch.add_update_metadata()
        for tp in changed:
            self._maybe_complete_reassignment(tp)

    def _on_controlled_shutdown(self, event: _ControlledShutdown) -> None:
        """Kafka's ``doControlledShutdown``: move leadership off the broker, stop it as a
        follower, and answer with the partitions it still leads."""
        ctx = self._active()
        request = event.request
        broker_id = request.broker_id
        broker = ctx.live_brokers.get(broker_id)
        if broker is None:
            event.future.set_result(
                pb.ControlledShutdownResponse(error_code=BrokerNotAvailableError.code)
            )
            return
        if request.broker_epoch != -1 and request.broker_epoch < broker.epoch:
            event.future.set_result(
                pb.ControlledShutdownResponse(error_code=StaleBrokerEpochError.code)
            )
            return
        _log.info("controller %d: controlled shutdown of broker %d", self._node_id, broker_id)
        ctx.shutting_down.add(broker_id)
        act_on = [
            tp
            for tp in ctx.partitions_on_broker(broker_id)
            if len(ctx.replicas(tp)) > 1 and tp in ctx.states and not ctx.is_deleting(tp.topic)
        ]
        led = [tp for tp in act_on if ctx.states[tp].leader == broker_id]
        followed = [tp for tp in act_on if ctx.states[tp].leader != broker_id]
        live = ctx.live_broker_ids

        def decide(tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> Election | None:
            if state.leader not in ctx.shutting_down:
                return None
            return controlled_shutdown_leader(ctx.replicas(tp), state.isr, live, ctx.shutting_down)

        self._change_states(led, decide)
        self._remove_replica_from_isr(broker_id, followed)
        for tp in followed:
            self._batch.add_stop_replica(broker_id, tp, ctx.states[tp].leader_epoch, delete=False)
        # Kafka's replicatedPartitionsBrokerLeads: a partition with one replica has nowhere
        # to move and does not hold the broker's shutdown
        remaining = [
            tp
            for tp, state in sorted(ctx.states.items())
            if state.leader == broker_id
            and not ctx.is_deleting(tp.topic)
            and len(ctx.replicas(tp)) > 1
        ]
        event.future.set_result(
            pb.ControlledShutdownResponse(
                remaining_partitions=[
                    pb.TopicPartition(topic=tp.topic, partition=tp.partition) for tp in remaining
                ]
            )
        )
