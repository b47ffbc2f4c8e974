"""A cluster of simulated nodes driven by a script instead of dice.

The same ``SimNode``, ``SimController`` and ``Checker`` as the random simulation, but messages
wait in an outbox until the script delivers, drops or keeps holding them, and time moves only
when the script says. Scenarios found by the random search are replayed here step by step, so
they keep reproducing whatever later changes do to the seeds (``test_scenarios.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from odradek.clock import ManualClock
from odradek.records import Record, build_batch
from storage import LogConfig
from tests.sim.checker import Checker
from tests.sim.messages import (
    AlterPartitionRequest,
    FetchRequest,
    FetchResponse,
    LeaderAndIsrResponse,
    Message,
    ProduceRequest,
    ProduceResponse,
    UpdateMetadataResponse,
    describe,
)
from tests.sim.mutations import Mutations
from tests.sim.router import CLIENT, CONTROLLER, endpoint_name
from tests.sim.sim_controller import SimController
from tests.sim.sim_node import NodeTimings, SimNode

NEVER = 1 << 40

Match = Callable[[int, int, Message], bool]


def matching(*, src: int | None = None, dst: int | None = None, kind: type | None = None) -> Match:
    def match(s: int, d: int, m: Message) -> bool:
        return (
            (src is None or s == src)
            and (dst is None or d == dst)
            and (kind is None or isinstance(m, kind))
        )

    return match


class ScriptedCluster:
    """Nodes 0..replicas-1 and a controller; nothing moves unless the script moves it."""

    def __init__(
        self,
        directory: Path,
        *,
        replicas: int = 3,
        min_insync_replicas: int = 2,
        replica_lag_time_max_ms: int = 300,
        session_timeout_ms: int = 500,
    ) -> None:
        self.clock = ManualClock(wall_ms=1_700_000_000_000, monotonic_ms=1_000)
        self.trace: list[str] = []
        self.outbox: list[tuple[int, int, Message]] = []
        self.session_timeout_ms = session_timeout_ms
        timings = NodeTimings(
            replica_lag_time_max_ms=replica_lag_time_max_ms,
            fetch_max_bytes=1 << 20,
            fetch_idle_ms=0,
            fetch_backoff_ms=0,
            fetch_timeout_ms=NEVER,
            alter_retry_ms=NEVER,
            produce_timeout_ms=NEVER,
            checkpoint_interval_ms=NEVER,
        )
        config = LogConfig(min_insync_replicas=min_insync_replicas)
        ids = tuple(range(replicas))
        self.nodes = [
            SimNode(
                i,
                directory=directory / f"node{i}",
                log_config=config,
                clock=self.clock,
                timings=timings,
                send=self._send,
                trace=self._trace,
                mutations=Mutations(),
                seed=0,
            )
            for i in ids
        ]
        self.controller = SimController(
            ids,
            clock=self.clock,
            session_timeout_ms=session_timeout_ms,
            resend_ms=NEVER,
            send=lambda dst, m: self._send(CONTROLLER, dst, m),
            trace=self._trace,
            mutations=Mutations(),
        )
        self.checker = Checker()
        self.acked: dict[int, tuple[int, tuple[bytes, ...]]] = {}  # request -> (base, values)
        self._requests: dict[int, ProduceRequest] = {}
        self._request_seq = 0

    def _trace(self, line: str) -> None:
        self.trace.append(f"{self.clock.monotonic_ms():>7} {line}")

    def _send(self, src: int, dst: int, message: Message) -> None:
        self.outbox.append((src, dst, message))

    def check(self) -> None:
        self.checker.check(self.nodes, self.controller)

    # -- membership --
    def start(self, node_id: int) -> None:
        """Start (or restart) a node and register it with the controller."""
        node = self.nodes[node_id]
        node.start()
        node.registered(self.controller.register(node_id))
        self.check()

    def expire_session(self, node_id: int) -> None:
        """The node's ZooKeeper session expires (it stays up, and keeps talking to peers)."""
        self.clock.advance(self.session_timeout_ms + 1)
        self.controller.tick(lambda n: n != node_id)
        self.check()

    def register_again(self, node_id: int) -> None:
        node = self.nodes[node_id]
        node.registered(self.controller.register(node_id))
        self.check()

    # -- messages --
    def deliver(self, match: Match, *, limit: int | None = None) -> int:
        """Deliver matching messages in the order they were sent (answers they cause included,
        if they match too); returns how many."""
        done = 0
        while limit is None or done < limit:
            found = next((i for i, m in enumerate(self.outbox) if match(*m)), None)
            if found is None:
                break
            src, dst, message = self.outbox.pop(found)
            self._deliver(src, dst, message)
            done += 1
            self.check()
        return done

    def drop(self, match: Match) -> int:
        kept = [m for m in self.outbox if not match(*m)]
        dropped = len(self.outbox) - len(kept)
        self.outbox = kept
        return dropped

    def _deliver(self, src: int, dst: int, message: Message) -> None:
        self._trace(f"{endpoint_name(src)}->{endpoint_name(dst)} {describe(message)}")
        if dst == CONTROLLER:
            if isinstance(message, AlterPartitionRequest):
                self._send(CONTROLLER, src, self.controller.alter_partition(message))
            elif isinstance(message, LeaderAndIsrResponse):
                self.controller.on_leader_and_isr_response(src, message)
            elif isinstance(message, UpdateMetadataResponse):
                self.controller.on_update_metadata_response(src, message)
        elif dst == CLIENT:
            assert isinstance(message, ProduceResponse)
            request = self._requests[message.request_id]
            if message.error_code == 0:
                self.acked[message.request_id] = (message.base_offset, request.values)
                if request.acks == -1:
                    self.checker.on_acked(message.base_offset, request.values)
        else:
            self.nodes[dst].handle(src, message)

    def control_plane(self) -> int:
        """Deliver every controller request and answer (LeaderAndIsr, UpdateMetadata,
        AlterPartition) now waiting."""
        return self.deliver(lambda s, d, m: s == CONTROLLER or d == CONTROLLER)

    # -- clients and fetchers --
    def produce(self, node_id: int, values: list[bytes], *, acks: int = -1) -> int:
        self._request_seq += 1
        rid = self._request_seq
        records = build_batch([Record(None, v, timestamp=self.clock.wall_ms()) for v in values])
        request = ProduceRequest(rid, acks, records, tuple(values))
        self._requests[rid] = request
        self._send(CLIENT, node_id, request)
        self.deliver(matching(src=CLIENT, dst=node_id, kind=ProduceRequest))
        return rid

    def fetch(self, follower: int, rounds: int = 1) -> None:
        """``rounds`` fetches by ``follower`` from its leader, each delivered and answered."""
        node = self.nodes[follower]
        for _ in range(rounds):
            node.tick()
            self.deliver(matching(src=follower, kind=FetchRequest))
            self.deliver(matching(dst=follower, kind=FetchResponse))
            self.deliver(matching(dst=CLIENT, kind=ProduceResponse))
