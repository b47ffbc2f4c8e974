"""A tiny controller with Kafka's (ZooKeeper-mode) rules, for the simulation only.

It does not use ``controller/``: the simulation must not depend on the code it may one day
test, and these rules are few (replication reference, sections 2.6 to 2.10):

* liveness is a ZooKeeper session: a node the controller cannot hear from for
  ``session_timeout_ms`` is dead; a node that comes back (restart, or a healed partition)
  registers again with a new broker epoch, and a restart the controller had not noticed counts
  as a failure followed by a startup (Kafka's "bounced broker");
* leader election (offline partition): the first replica in assignment order that is live and
  in the ISR; new ISR = ISR ∩ live; no such replica and unclean election disabled → leader -1;
* a dead follower leaves the ISR unless it is the last member;
* every change the controller makes bumps the leader epoch and the partition epoch and is sent
  to every live replica as LeaderAndIsr, carrying the target's broker epoch, resent until
  acknowledged; the live brokers go to every live node as UpdateMetadata, also resent until
  acknowledged (Kafka's controller channel retries until a request is delivered);
* AlterPartition from the leader (Kafka's ``processAlterPartition``): stale broker epoch →
  STALE_BROKER_EPOCH, older leader epoch → FENCED_LEADER_EPOCH, the ISR already as asked →
  the current state (idempotent, checked before the partition epoch), older partition epoch →
  INVALID_UPDATE_VERSION, a member not live → INELIGIBLE_REPLICA, else the ISR is written with
  partition epoch + 1 and the leader epoch unchanged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from node.core.partition import LeaderAndIsrState
from odradek.clock import ManualClock
from odradek.errors import (
    FencedLeaderEpochError,
    IneligibleReplicaError,
    InvalidUpdateVersionError,
    NotControllerError,
    NotLeaderOrFollowerError,
    StaleBrokerEpochError,
)
from tests.sim.messages import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    Message,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from tests.sim.mutations import Mutations

CONTROLLER_EPOCH = 1


class SimController:
    """The controller of the one simulated partition. Single-threaded."""

    def __init__(
        self,
        replicas: tuple[int, ...],
        *,
        clock: ManualClock,
        session_timeout_ms: int,
        resend_ms: int,
        send: Callable[[int, Message], None],
        trace: Callable[[str], None],
        mutations: Mutations,
    ) -> None:
        self.replicas = replicas
        self._clock = clock
        self._session_timeout_ms = session_timeout_ms
        self._resend_ms = resend_ms
        self._send = send
        self._trace = trace
        self._mutations = mutations
        self.created = False
        self.leader = -1
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.isr: tuple[int, ...] = ()
        self.live: dict[int, int] = {}  # node -> broker epoch
        self._last_heard: dict[int, int] = {}
        self._next_broker_epoch = 0
        self._request_seq = 0
        self._metadata_version = 0
        self._metadata_sent: dict[int, int] = {}  # node -> when the unacknowledged one went
        self._pending: dict[int, tuple[LeaderAndIsrRequest, int]] = {}  # node -> (req, sent at)
        self.leader_of_epoch: dict[int, int] = {}
        self.stats: Counter[str] = Counter()

    @property
    def state(self) -> LeaderAndIsrState:
        return LeaderAndIsrState(
            leader=self.leader,
            leader_epoch=self.leader_epoch,
            isr=self.isr,
            partition_epoch=self.partition_epoch,
            replicas=self.replicas,
            controller_epoch=CONTROLLER_EPOCH,
        )

    def _describe(self) -> str:
        return (
            f"leader={self.leader} ep={self.leader_epoch} isr={list(self.isr)} "
            f"pe={self.partition_epoch}"
        )

    # -- liveness --
    def register(self, node: int) -> int:
        """A node (re)registers (new ZooKeeper session); returns its new broker epoch."""
        if node in self.live:
            self._trace(f"C: n{node} bounced (registered again before its session expired)")
            self._broker_failure(node)
        self._next_broker_epoch += 1
        epoch = self._next_broker_epoch
        self.live[node] = epoch
        self._last_heard[node] = self._clock.monotonic_ms()
        self._trace(f"C: n{node} registered, broker epoch {epoch}")
        self._broker_startup(node)
        return epoch

    def create_partition(self) -> None:
        """Topic creation: the first live replica leads epoch 0, every live replica in sync."""
        live = [r for r in self.replicas if r in self.live]
        self.created = True
        self._change(live[0] if live else -1, tuple(sorted(live)), "partition created")

    def tick(self, reachable: Callable[[int], bool]) -> None:
        """Expire sessions of nodes not heard from; resend unacknowledged LeaderAndIsr."""
        now = self._clock.monotonic_ms()
        for node in sorted(self.live):
            if reachable(node):
                self._last_heard[node] = now
            elif now - self._last_heard[node] > self._session_timeout_ms:
                self._trace(f"C: n{node} session expired")
                self._broker_failure(node)
        for node, (request, sent_at) in sorted(self._pending.items()):
            if now - sent_at >= self._resend_ms:
                self._pending[node] = (request, now)
                self.stats["leader_and_isr_resent"] += 1
                self._send(node, request)
        for node, sent_at in sorted(self._metadata_sent.items()):
            if now - sent_at >= self._resend_ms:
                self._send_metadata(node)

    def _broker_failure(self, node: int) -> None:
        del self.live[node]
        self._pending.pop(node, None)
        self._metadata_sent.pop(node, None)
        self._broadcast_metadata()
        if not self.created:
            return
        if node == self.leader:
            candidates = [r for r in self.replicas if r in self.isr and r in self.live]
            if candidates:
                new_isr = tuple(r for r in self.isr if r in self.live)
                self._change(candidates[0], new_isr, f"leader n{node} failed")
            elif self._mutations.controller_unclean_election and self.live:
                chosen = min(self.live)
                self._change(chosen, (chosen,), f"leader n{node} failed, UNCLEAN election")
            else:
                new_isr = tuple(r for r in self.isr if r in self.live) or (node,)
                self._change(-1, new_isr, f"leader n{node} failed, no live ISR member")
        elif node in self.isr:
            new_isr = tuple(r for r in self.isr if r != node) or (node,)
            if new_isr != self.isr:
                self._change(self.leader, new_isr, f"follower n{node} failed")

    def _broker_startup(self, node: int) -> None:
        self._broadcast_metadata()
        if not self.created:
            return
        if self.leader == -1:
            candidates = [r for r in self.replicas if r in self.isr and r in self.live]
            if candidates:
                new_isr = tuple(r for r in self.isr if r in self.live)
                self._change(candidates[0], new_isr, f"ISR member n{node} returned")
                return
            if self._mutations.controller_unclean_election:
                self._change(node, (node,), f"n{node} returned, UNCLEAN election")
                return
        self._send_leader_and_isr(node)

    def _change(self, leader: int, isr: tuple[int, ...], reason: str) -> None:
        keep_epoch = (
            self._mutations.controller_keeps_epoch
            and leader >= 0
            and leader != self.leader
            and self.leader_epoch >= 0
        )
        if leader != self.leader and leader >= 0:
            self.stats["elections"] += 1
        self.leader = leader
        if not keep_epoch:
            self.leader_epoch += 1
        self.partition_epoch += 1
        self.isr = tuple(sorted(isr))
        if leader >= 0:
            self.leader_of_epoch.setdefault(self.leader_epoch, leader)
        self._trace(f"C: {reason}: {self._describe()}")
        for node in self.replicas:
            if node in self.live:
                self._send_leader_and_isr(node)

    def _send_leader_and_isr(self, node: int) -> None:
        self._request_seq += 1
        request = LeaderAndIsrRequest(
            request_id=self._request_seq,
            broker_epoch=self.live[node],
            controller_epoch=CONTROLLER_EPOCH,
            state=self.state,
            metadata_version=self._metadata_version,
            live_brokers=tuple(sorted(self.live)),
        )
        self._pending[node] = (request, self._clock.monotonic_ms())
        self._send(node, request)

    def _broadcast_metadata(self) -> None:
        self._metadata_version += 1
        for node in sorted(self.live):
            self._send_metadata(node)

    def _send_metadata(self, node: int) -> None:
        self._metadata_sent[node] = self._clock.monotonic_ms()
        self._send(node, UpdateMetadataRequest(self._metadata_version, tuple(sorted(self.live))))

    def on_update_metadata_response(self, node: int, response: UpdateMetadataResponse) -> None:
        if response.version == self._metadata_version:
            self._metadata_sent.pop(node, None)

    def on_leader_and_isr_response(self, node: int, response: LeaderAndIsrResponse) -> None:
        pending = self._pending.get(node)
        if pending is not None and pending[0].request_id == response.request_id:
            del self._pending[node]

    # -- AlterPartition --
    def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionResponse:
        change = request.change
        rid = request.request_id
        if self.live.get(request.broker_id) != request.broker_epoch:
            self.stats["alter_stale_broker_epoch"] += 1
            return AlterPartitionResponse(rid, StaleBrokerEpochError.code)
        if change.leader_epoch > self.leader_epoch or (
            change.leader_epoch == self.leader_epoch
            and change.partition_epoch > self.partition_epoch
        ):
            self.stats["alter_not_controller"] += 1
            return AlterPartitionResponse(rid, NotControllerError.code)
        if change.leader_epoch < self.leader_epoch:
            self.stats["alter_fenced"] += 1
            return AlterPartitionResponse(rid, FencedLeaderEpochError.code)
        if request.broker_id != self.leader:
            self.stats["alter_not_leader"] += 1
            return AlterPartitionResponse(rid, NotLeaderOrFollowerError.code)
        if set(change.new_isr) == set(self.isr):
            self.stats["alter_idempotent"] += 1
            return self._current(rid)
        if change.partition_epoch < self.partition_epoch:
            self.stats["alter_invalid_version"] += 1
            return AlterPartitionResponse(rid, InvalidUpdateVersionError.code)
        if any(r not in self.live for r in change.new_isr):
            self.stats["alter_ineligible"] += 1
            return AlterPartitionResponse(rid, IneligibleReplicaError.code)
        kind = "isr_expands" if len(change.new_isr) > len(self.isr) else "isr_shrinks"
        self.stats[kind] += 1
        self.isr = tuple(sorted(change.new_isr))
        self.partition_epoch += 1
        self._trace(f"C: AlterPartition from n{request.broker_id}: {self._describe()}")
        return self._current(rid)

    def _current(self, request_id: int) -> AlterPartitionResponse:
        return AlterPartitionResponse(
            request_id, 0, self.isr, self.leader_epoch, self.partition_epoch
        )
