"""The simulation driver: builds a cluster from a seed, runs it step by step, checks it.

One ``random.Random`` per concern, all derived from the seed, drive the scenario (cluster size,
network quality, fault rate), the network, the faults and the clients; a ``ManualClock`` is the
only time. Nothing else is random and nothing runs on another thread, so a seed replays exactly:
the event trace of two runs of one seed is identical (``test_same_seed_same_trace``).

A step advances the clock by a few milliseconds, heals expired partitions, maybe injects one
fault (crash, restart, isolation, cut link), lets the controller check sessions, delivers every
message now due, runs each node's timers and maybe has a client produce or consume; the
invariants (``tests.sim.checker``) are checked after each of these. After ``steps`` steps the
faults stop, every node is restarted and every link healed, and the run continues until the
cluster converges (all replicas in sync with identical logs) or ``quiesce_max_ms`` pass.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from odradek.clock import ManualClock
from odradek.records import Record, build_batch
from storage import LogConfig
from tests.sim.checker import Checker, InvariantError, read_range
from tests.sim.messages import (
    AlterPartitionRequest,
    ConsumerFetchRequest,
    ConsumerFetchResponse,
    LeaderAndIsrResponse,
    Message,
    ProduceRequest,
    ProduceResponse,
    UpdateMetadataResponse,
    describe,
)
from tests.sim.mutations import Mutations
from tests.sim.router import CLIENT, CONTROLLER, Envelope, Router, endpoint_name
from tests.sim.sim_controller import SimController
from tests.sim.sim_node import NodeTimings, SimNode

TRACE_TAIL = 80


@dataclass(frozen=True, slots=True)
class SimConfig:
    seed: int
    steps: int = 300
    quiesce_max_ms: int = 60_000
    """How long (simulated) the cluster may take to converge once the faults stop."""
    mutations: Mutations = field(default_factory=Mutations)


@dataclass(frozen=True, slots=True)
class Scenario:
    """What the seed chose for this run."""

    replicas: int
    min_insync_replicas: int
    segment_bytes: int
    min_delay_ms: int
    max_delay_ms: int
    drop_probability: float
    max_tick_ms: int
    fault_probability: float
    produce_probability: float
    acks_all_share: float
    session_timeout_ms: int
    timings: NodeTimings

    @classmethod
    def draw(cls, rng: random.Random) -> Scenario:
        replicas = rng.choice([3, 3, 3, 4, 5])
        lag = rng.choice([200, 300, 500])
        return cls(
            replicas=replicas,
            min_insync_replicas=rng.choice([2, 2, 3]) if replicas > 3 else 2,
            segment_bytes=rng.choice([1024, 2048, 8192]),
            min_delay_ms=1,
            max_delay_ms=rng.choice([5, 20, 60]),
            drop_probability=rng.choice([0.0, 0.02, 0.08]),
            max_tick_ms=rng.choice([10, 20]),
            fault_probability=rng.choice([0.02, 0.04, 0.08]),
            produce_probability=rng.choice([0.3, 0.6, 0.9]),
            acks_all_share=rng.choice([0.5, 0.8]),
            session_timeout_ms=rng.choice([300, 600]),
            timings=NodeTimings(
                replica_lag_time_max_ms=lag,
                fetch_max_bytes=rng.choice([200, 600, 4096]),
                fetch_idle_ms=rng.choice([5, 20]),
                fetch_backoff_ms=50,
                fetch_timeout_ms=200,
                alter_retry_ms=150,
                produce_timeout_ms=1000,
                checkpoint_interval_ms=rng.choice([50, 250]),
                # drawn last: the draws before it (and so older seeds' scenarios) are unchanged
                replica_fetch_silence_max_ms=rng.choice([0, 60, 150]),
            ),
        )


@dataclass(frozen=True, slots=True)
class SimResult:
    seed: int
    trace: list[str]
    stats: Counter[str]
    final_logs: dict[int, bytes]


class SimulationError(AssertionError):
    """A run failed: the message names the seed, what broke, and the trace's tail."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class Simulation:
    """One seeded run of a replicated partition. Single-threaded and deterministic."""

    def __init__(self, config: SimConfig, directory: Path) -> None:
        self.config = config
        seed = config.seed
        self.scenario = scenario = Scenario.draw(random.Random(seed))
        self._fault_rng = random.Random(seed * 4 + 1)
        self._client_rng = random.Random(seed * 4 + 2)
        self._tick_rng = random.Random(seed * 4 + 3)
        self.clock = ManualClock(wall_ms=1_700_000_000_000, monotonic_ms=1_000)
        self.trace: list[str] = []
        self.stats: Counter[str] = Counter()
        self.step = 0
        self.phase = "faults"
        self.router = Router(
            random.Random(seed * 4 + 4),
            min_delay_ms=scenario.min_delay_ms,
            max_delay_ms=scenario.max_delay_ms,
            drop_probability=scenario.drop_probability,
        )
        self.replica_ids = tuple(range(scenario.replicas))
        log_config = LogConfig(
            segment_bytes=scenario.segment_bytes,
            segment_index_bytes=4096,
            index_interval_bytes=256,
            min_insync_replicas=scenario.min_insync_replicas,
        )
        self.nodes = [
            SimNode(
                i,
                directory=directory / f"node{i}",
                log_config=log_config,
                clock=self.clock,
                timings=scenario.timings,
                send=self._send,
                trace=self._trace,
                mutations=config.mutations,
                seed=seed,
            )
            for i in self.replica_ids
        ]
        self.controller = SimController(
            self.replica_ids,
            clock=self.clock,
            session_timeout_ms=scenario.session_timeout_ms,
            resend_ms=200,
            send=lambda dst, m: self._send(CONTROLLER, dst, m),
            trace=self._trace,
            mutations=config.mutations,
        )
        self.checker = Checker()
        self._request_seq = 0
        self._outstanding: dict[int, ProduceRequest] = {}

    # -- plumbing --
    def _trace(self, line: str) -> None:
        self.trace.append(f"{self.clock.monotonic_ms():>7} {line}")

    def _send(self, src: int, dst: int, message: Message) -> None:
        self.router.send(src, dst, message, self.clock.monotonic_ms())

    def _check(self) -> None:
        self.checker.check(self.nodes, self.controller)

    # -- running --
    def run(self) -> SimResult:
        try:
            self._boot()
            for step in range(self.config.steps):
                self.step = step
                self._step(faults=True, produce=True)
            self._quiesce()
        except Exception as e:
            raise self._failure(e) from e
        stats = self._collect_stats()
        logs = {n.node_id: read_range(n.log, 0, n.log.log_end_offset)[0] for n in self.nodes}
        for n in self.nodes:
            n.crash()  # closes the logs
        return SimResult(self.config.seed, self.trace, stats, logs)

    def _boot(self) -> None:
        mutations = self.config.mutations.enabled()
        self._trace(
            f"seed {self.config.seed}: {self.scenario}"
            + (f" MUTATIONS {mutations}" if mutations else "")
        )
        for node in self.nodes:
            node.start()
            node.registered(self.controller.register(node.node_id))
        self.controller.create_partition()
        self._check()

    def _step(self, *, faults: bool, produce: bool) -> None:
        self.clock.advance(self._tick_rng.randint(1, self.scenario.max_tick_ms))
        now = self.clock.monotonic_ms()
        for a, b in self.router.heal_expired(now):
            self._trace(f"healed {endpoint_name(a)}<->{endpoint_name(b)}")
        if faults and self._fault_rng.random() < self.scenario.fault_probability:
            self._inject_fault()
            self._check()
        self._controller_tick()
        self._check()
        while (envelope := self.router.pop_due(now)) is not None:
            self._deliver(envelope)
            self._check()
        for node in self.nodes:
            node.tick()
            self._check()
        if produce and self._client_rng.random() < self.scenario.produce_probability:
            self._produce()
        if self._client_rng.random() < 0.1:
            self._consume()

    def _controller_tick(self) -> None:
        """Nodes that can reach ZooKeeper without a session of their own (restarted, or
        expired while cut off) register; then the controller checks the sessions."""
        controller, router = self.controller, self.router

        def can_reach(node: SimNode) -> bool:
            return node.running and not router.is_cut(node.node_id, CONTROLLER)

        for node in self.nodes:
            if can_reach(node) and controller.live.get(node.node_id) != node.broker_epoch:
                node.registered(controller.register(node.node_id))

        def session_alive(node_id: int) -> bool:
            node = self.nodes[node_id]
            return can_reach(node) and controller.live.get(node_id) == node.broker_epoch

        controller.tick(session_alive)

    # -- faults --
    def _inject_fault(self) -> None:
        rng = self._fault_rng
        running = [n for n in self.nodes if n.running]
        down = [n for n in self.nodes if not n.running]
        now = self.clock.monotonic_ms()
        kind = rng.choices(
            ["crash", "restart", "isolate", "cut_controller", "cut_link", "slow_controller"],
            weights=[2, 4, 1.5, 1, 1.5, 1.5],
        )[0]
        if kind == "crash" and running:
            leader = self.controller.leader
            leaders = [n for n in running if n.node_id == leader]
            victim = leaders[0] if leaders and rng.random() < 0.5 else rng.choice(running)
            self._trace(f"FAULT crash n{victim.node_id}")
            victim.crash()
            self.router.down.add(victim.node_id)
            self.stats["crashes"] += 1
        elif kind == "restart" and down:
            node = rng.choice(down)
            self.router.down.discard(node.node_id)
            node.start()
            self.stats["restarts"] += 1
        elif kind == "isolate" and running:
            node = rng.choice(running)
            until = now + rng.randint(100, 1500)
            self._trace(f"FAULT isolate n{node.node_id} until {until}")
            self.router.isolate(node.node_id, list(self.replica_ids), until)
            self.stats["isolations"] += 1
        elif kind == "cut_controller" and running:
            node = rng.choice(running)
            until = now + rng.randint(100, 1500)
            self._trace(f"FAULT cut n{node.node_id}<->C until {until}")
            self.router.cut(node.node_id, CONTROLLER, until)
            self.stats["controller_cuts"] += 1
        elif kind == "slow_controller" and running:
            node = rng.choice(running)
            until, extra = now + rng.randint(200, 2000), rng.randint(100, 600)
            self._trace(f"FAULT slow n{node.node_id}<->C (+{extra} ms) until {until}")
            self.router.slow_down(node.node_id, CONTROLLER, extra, until)
            self.stats["slow_controller_links"] += 1
        elif kind == "cut_link":
            a, b = rng.sample(self.replica_ids, 2)
            until = now + rng.randint(100, 1000)
            self._trace(f"FAULT cut n{a}<->n{b} until {until}")
            self.router.cut(a, b, until)
            self.stats["link_cuts"] += 1

    # -- delivery --
    def _deliver(self, envelope: Envelope) -> None:
        src, dst, message = envelope.src, envelope.dst, envelope.message
        self._trace(f"{endpoint_name(src)}->{endpoint_name(dst)} {describe(message)}")
        if dst == CONTROLLER:
            if isinstance(message, AlterPartitionRequest):
                self._send(CONTROLLER, src, self.controller.alter_partition(message))
            elif isinstance(message, LeaderAndIsrResponse):
                self.controller.on_leader_and_isr_response(src, message)
            elif isinstance(message, UpdateMetadataResponse):
                self.controller.on_update_metadata_response(src, message)
            else:
                raise AssertionError(f"the controller got an unexpected {message!r}")
        elif dst == CLIENT:
            self._client_receive(src, message)
        else:
            self.nodes[dst].handle(src, message)

    # -- clients --
    def _produce(self) -> None:
        rng = self._client_rng
        leader = self.controller.leader
        target = leader if leader >= 0 and rng.random() < 0.8 else rng.choice(self.replica_ids)
        acks = -1 if rng.random() < self.scenario.acks_all_share else 1
        self._request_seq += 1
        rid = self._request_seq
        values = tuple(f"s{self.config.seed}-p{rid}-{i}".encode() for i in range(rng.randint(1, 3)))
        records = build_batch(
            [Record(f"k{rid % 7}".encode(), v, timestamp=self.clock.wall_ms()) for v in values]
        )
        request = ProduceRequest(rid, acks, records, values)
        self._outstanding[rid] = request
        self._send(CLIENT, target, request)

    def _consume(self) -> None:
        rng = self._client_rng
        leader = self.controller.leader
        target = leader if leader >= 0 and rng.random() < 0.8 else rng.choice(self.replica_ids)
        self._request_seq += 1
        offset = rng.randint(0, self.checker.committed) if self.checker.committed else 0
        self._send(
            CLIENT,
            target,
            ConsumerFetchRequest(self._request_seq, offset, rng.choice([100, 1000, 100_000])),
        )

    def _client_receive(self, src: int, message: Message) -> None:
        if isinstance(message, ProduceResponse):
            request = self._outstanding.pop(message.request_id)
            acks = "all" if request.acks == -1 else "one"
            if message.error_code:
                self.stats[f"produce_errors_{message.error_code}"] += 1
                return
            self.stats[f"acked_{acks}_records"] += len(request.values)
            if request.acks == -1:
                self.checker.on_acked(message.base_offset, request.values)
        elif isinstance(message, ConsumerFetchResponse):
            if message.error_code == 0:
                self.checker.on_consumed(message.records, f"n{src}")
        else:
            raise AssertionError(f"the client got an unexpected {message!r}")

    # -- the end --
    def _quiesce(self) -> None:
        self.phase = "quiesce"
        self._trace("QUIESCE: faults stop; every node restarts, every link heals")
        self.router.heal_all()
        for node in self.nodes:
            if not node.running:
                self.router.down.discard(node.node_id)
                node.start()
        deadline = self.clock.monotonic_ms() + self.config.quiesce_max_ms
        step = 0
        while step < 100 or not self._converged():
            if self.clock.monotonic_ms() > deadline:
                raise InvariantError(
                    "no-convergence",
                    f"the cluster did not converge within {self.config.quiesce_max_ms} ms "
                    "after the faults stopped",
                )
            self.step = self.config.steps + step
            self._step(faults=False, produce=step < 100)
            step += 1
        self._trace("converged")
        for node in self.nodes:
            self.checker.verify_fully(node)
        committed = self.checker.committed_bytes()
        for node in self.nodes:
            data, _ = read_range(node.log, 0, node.log.log_end_offset)
            if data != committed:
                raise InvariantError(
                    "committed-diverged",
                    f"after convergence n{node.node_id}'s log differs from the committed log",
                )

    def _converged(self) -> bool:
        c = self.controller
        if c.leader < 0 or sorted(c.isr) != list(self.replica_ids):
            return False
        leader = self.nodes[c.leader]
        p = leader.partition
        if not p.is_leader or p.leader_epoch != c.leader_epoch or sorted(p.isr) != sorted(c.isr):
            return False
        leo = leader.log.log_end_offset
        if self.checker.committed != leo:
            return False
        return all(n.log.log_end_offset == leo and n.log.high_watermark == leo for n in self.nodes)

    def _collect_stats(self) -> Counter[str]:
        stats = Counter(self.stats)
        stats.update(self.controller.stats)
        for node in self.nodes:
            stats.update(node.stats)
        stats["committed"] = self.checker.committed
        stats["acked_all_checked"] = len(self.checker.acked)
        stats["consumed_batches"] = self.checker.consumed_batches
        stats["epochs"] = self.controller.leader_epoch
        stats["messages_sent"] = self.router.sent
        stats["messages_dropped"] = self.router.dropped
        stats["sim_ms"] = self.clock.monotonic_ms()
        stats["steps"] = self.step + 1
        return stats

    def _failure(self, error: BaseException) -> SimulationError:
        kind = error.kind if isinstance(error, InvariantError) else type(error).__name__
        lines = [
            f"simulation seed {self.config.seed} failed at step {self.step} ({self.phase}), "
            f"t={self.clock.monotonic_ms()} ms: {error}",
            f"re-run: SIM_SEEDS={self.config.seed} SIM_STEPS={self.config.steps} "
            "python -m pytest tests/sim -k test_simulation",
        ]
        mutations = self.config.mutations.enabled()
        if mutations:
            lines.append(f"mutations: {mutations}")
        c = self.controller
        lines.append(
            f"controller: leader={c.leader} ep={c.leader_epoch} isr={list(c.isr)} "
            f"pe={c.partition_epoch} live={sorted(c.live)} committed={self.checker.committed}"
        )
        lines.extend(n.describe() for n in self.nodes)
        lines.append(f"last {TRACE_TAIL} of {len(self.trace)} trace lines:")
        lines.extend(self.trace[-TRACE_TAIL:])
        return SimulationError("\n".join(lines), kind)
