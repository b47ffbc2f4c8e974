"""A fourth member joins three, with Kafka clients, three ways on one broker in one run: the
classic eager protocol (``range``), classic ``cooperative-sticky`` (KIP-429) and KIP-848
(``group.protocol=consumer``, the coordinator's assignor). The comparison KIP-848 was written
for (docs/groups.md), measured rather than quoted.

On a local three-node cluster (real ZooKeeper, nodes as processes, loopback, Kafka listeners on
every node), a topic of 12 partitions (replication factor 3) is written by a paced
confluent-kafka producer (``--rate`` records/s to every partition, 20 by default, acks=all,
linger.ms 0; each value carries its send time). Per round and mode, a fresh group: three
confluent-kafka consumers, each polling on its own thread with its own ``Consumer``
(librdkafka releases the GIL in ``consume()``; the longest ``consume()`` call and the
producer's pacing lag are reported to show whether this process kept up), record when each
partition delivered and every ``on_assign`` / ``on_revoke`` / ``on_lost`` with its time. Once
the three own the twelve and ``--steady-s`` seconds passed, a fourth subscribes.

Twice: with members that always poll (``consume()`` with a 50 ms timeout, nothing else), and
with busy members (``busy_`` keys): after each batch a member works, here sleeps, a random time
up to ``--busy-ms`` (500 ms; 0: no busy rounds), as an application processing what it read. A
classic member only answers a rebalance (revokes, rejoins) from its poll, so the eager group's
stop waits for the busiest member; idle librdkafka members, whose heartbeats are in step since
they synced together, all rejoin within milliseconds and the eager stop is short. Busy members
show the other side too: librdkafka pauses the fetchers of *every* assigned partition while a
rebalance callback waits to be served from the application's poll ("Pause currently assigned
partitions while waiting for rebalance callback to get called", rdkafka_cgrp.c; ``debug=cgrp``
logs "Pausing fetchers ... incremental rebalance"), so with cooperative-sticky and KIP-848 a
busy member's kept partitions stop until its next poll, twice per rebalance (revoke, then
assign, even an assign that adds and revokes nothing), and the pause drops what was already
fetched: after "Resuming fetchers" librdkafka sent its next Fetch 0.58 s later in the one trace
read (``debug=cgrp,fetch``; no request on the wire meanwhile). The busy rounds measure that
client-side cost, not the coordinator's.

Figures:

* ``join_to_settled_ms``: from the fourth's ``subscribe()`` to the last assignment callback of
  the rebalance, the one after which every partition is owned by exactly one member, the fourth
  owning some, nothing changes for a second and the coordinator answers STABLE (replayed from
  the callbacks: KIP-848 members reconcile one at a time, so a state where every partition has
  one owner can still be a step on the way);
* ``describe_stable_ms``: from the same instant to the start of the last stretch in which
  ``AdminClient.describe_consumer_groups`` (polled every 100 ms) answered STABLE with four
  members, a cross-check from the coordinator's side;
* ``steady_gap_ms``: the longest gap between two deliveries of any partition over the
  ``--steady-s`` window just before the join (the baseline, measured in the same round);
* ``kept_gap_ms``: the longest gap between two deliveries of a partition whose owner did not
  change, from the join to one second after settling; ``kept_gap_over_steady`` is the ratio
  (the target for cooperative and KIP-848: 1.0, no pause beyond the ordinary gap);
* ``kept_revoked``: how many of those kept partitions were revoked meanwhile (eager: all of them;
  cooperative and KIP-848: none), ``moved`` / ``kept``: how many partitions changed owner or not;
* ``redelivered``: records delivered more than once in the round (a partition that moves, or an
  eager member's partitions, resume at the last commit: ``enable.auto.commit`` every second);
* ``steady_latency_ms`` / ``kept_latency_ms``: the longest send-to-delivery time in the same two
  windows (a pause shows here too, whatever the batching of deliveries);
* ``steady_consume_call_ms`` / ``join_consume_call_ms``: the longest ``consume()`` call (timeout
  50 ms; the rebalance callbacks run inside it) of the three members in the same two windows, and
  ``producer_max_lag_ms``, the most a producer tick started late from the join on: the process's
  own stalls (the GIL, a starved CPU), to tell from the protocol's pauses.

Classic members get ``heartbeat.interval.ms`` ``--heartbeat-ms`` and the brokers
``group.consumer.heartbeat.interval.ms`` the same, so both protocols learn of the rebalance at the
same cadence (Kafka's defaults differ: 3 s and 5 s). ``group.initial.rebalance.delay.ms`` is
500 ms: it only delays the first rebalance of an empty group, not the fourth's join. The rate
is low on purpose: at 100 records/s per partition (1,200/s, linger.ms 0, acks=all) this
two-core machine, shared, fell behind and the send-to-delivery time grew from 3 s to 28 s over
the run, with no steady state left to compare against; ``producer_max_queued`` (records in the
producer's queue, at most) and the latencies show whether a run kept up. The modes
run in a rotating order each round; the medians per mode and every round's figures are printed,
with ratios against the eager protocol of the same run, and one JSON line ends the run.

    python -m bench.kafka_groups [--repeat 3] [--steady-s 6] [--heartbeat-ms 1000] [--rate 20]

The default run takes about four minutes on two cores.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from bench.cluster import _create_topic
from deploy.local.cluster import LocalCluster

TOPIC = "bench-kafka-groups"
PARTITIONS = 12
MODES = ("eager", "cooperative", "kip848")
TAIL_MS = 1_000
"""How long after settling the kept partitions' gaps are still watched."""
SETTLE_TIMEOUT_S = 60.0


def _ms() -> float:
    return time.perf_counter() * 1000.0


def mode_config(mode: str, heartbeat_ms: int) -> dict[str, Any]:
    """The consumer settings that make ``mode``."""
    if mode == "eager":
        return {
            "group.protocol": "classic",
            "partition.assignment.strategy": "range",
            "heartbeat.interval.ms": heartbeat_ms,
        }
    if mode == "cooperative":
        return {
            "group.protocol": "classic",
            "partition.assignment.strategy": "cooperative-sticky",
            "heartbeat.interval.ms": heartbeat_ms,
        }
    if mode == "kip848":
        return {"group.protocol": "consumer"}
    raise ValueError(f"unknown mode {mode!r}")


# -- the producer ------------------------------------------------------------------------------
class PacedProducer:
    """Writes one record to every partition ``rate`` times a second on its own thread; each
    value is its send time (perf_counter, ms). ``max_lag_ms``: the most a tick started late."""

    def __init__(self, bootstrap: str, rate: float) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
        self.step_ms = 1000.0 / rate
        self.max_lag_ms = 0.0
        self.max_queued = 0
        self.sent = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="paced-producer", daemon=True)

    def _report(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self.failures.append(str(err))

    def _run(self) -> None:
        start = _ms()
        for tick in itertools.count():
            if self._stop.is_set():
                break
            due = start + tick * self.step_ms
            now = _ms()
            if due > now:
                self.producer.poll(0)
                self._stop.wait((due - _ms()) / 1000.0 if due > _ms() else 0)
                now = _ms()
            self.max_lag_ms = max(self.max_lag_ms, now - due)
            self.max_queued = max(self.max_queued, len(self.producer))
            value = b"%.3f" % now
            for p in range(PARTITIONS):
                while True:
                    try:
                        self.producer.produce(TOPIC, value, partition=p, on_delivery=self._report)
                        break
                    except BufferError:
                        self.producer.poll(0.001)
                self.sent += 1
            self.producer.poll(0)

    def start(self) -> None:
        self._thread.start()

    def reset_lag(self) -> None:
        self.max_lag_ms = 0.0
        self.max_queued = 0

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        left = self.producer.flush(30)
        if left:
            self.failures.append(f"{left} records undelivered at the end")


# -- a member ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Event:
    """An assignment change seen by member ``member`` at ``at_ms``: ``kind`` is assign, revoke
    or lost; ``incremental``: the partitions are added to / taken from what it owns (the
    cooperative protocols) rather than replacing it (eager)."""

    at_ms: float
    member: int
    kind: str
    partitions: frozenset[int]
    incremental: bool


@dataclass
class Member:
    """A consumer polling on its own thread."""

    index: int
    config: dict[str, Any]
    events: list[Event]
    incremental: bool
    """Its callbacks add and take partitions (cooperative-sticky, KIP-848) rather than hand
    it a whole new assignment (eager): confluent-kafka's Python API has no
    rebalance_protocol()."""
    busy_ms: float = 0.0
    """After each batch it works (sleeps) a random time up to this long before polling again."""
    deliveries: dict[int, list[float]] = field(default_factory=dict)
    latencies: dict[int, list[tuple[float, float]]] = field(default_factory=dict)
    offsets: list[tuple[int, int]] = field(default_factory=list)
    calls: list[tuple[float, float]] = field(default_factory=list)
    """When each ``consume()`` call started and how long it took: far above its 50 ms timeout
    is this thread kept off the CPU or the GIL (or a callback's time)."""
    errors: list[str] = field(default_factory=list)
    subscribed_ms: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _ready: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        """Starts its thread and returns once it has subscribed."""
        self._thread = threading.Thread(target=self._run, name=f"member-{self.index}", daemon=True)
        self._thread.start()
        if not self._ready.wait(60):
            raise RuntimeError(f"member {self.index} did not subscribe within 60 s")
        if self.errors:
            raise RuntimeError(f"member {self.index}: {self.errors[0]}")

    def _callback(self, kind: str, partitions: list[TopicPartition]) -> None:
        self.events.append(
            Event(
                _ms(),
                self.index,
                kind,
                frozenset(tp.partition for tp in partitions),
                self.incremental,
            )
        )

    def _run(self) -> None:
        try:
            consumer = Consumer(self.config)
        except Exception as exc:
            self.errors.append(repr(exc))
            self._ready.set()
            return
        try:
            self.subscribed_ms = _ms()
            consumer.subscribe(
                [TOPIC],
                on_assign=lambda c, ps: self._callback("assign", ps),
                on_revoke=lambda c, ps: self._callback("revoke", ps),
                on_lost=lambda c, ps: self._callback("lost", ps),
            )
            self._ready.set()
            rng = random.Random(self.index)
            while not self._stop.is_set():
                called = _ms()
                messages = consumer.consume(num_messages=1000, timeout=0.05)
                now = _ms()
                self.calls.append((called, now - called))
                for m in messages:
                    err = m.error()
                    if err is not None:
                        if err.code() != KafkaError._PARTITION_EOF:
                            self.errors.append(str(err))
                        continue
                    p = int(m.partition() or 0)
                    self.deliveries.setdefault(p, []).append(now)
                    self.offsets.append((p, int(m.offset() or 0)))
                    value = m.value()
                    if value:
                        self.latencies.setdefault(p, []).append((now, now - float(value)))
                if messages and self.busy_ms:
                    self._stop.wait(rng.uniform(0, self.busy_ms) / 1000.0)
        except Exception as exc:
            self.errors.append(repr(exc))
        finally:
            self._ready.set()
            consumer.close()

    def stop(self) -> None:
        self._stop.set()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=60)


# -- reading the callbacks ---------------------------------------------------------------------
def owners_at(events: list[Event], members: int, until_ms: float) -> list[set[int]]:
    """What each member owned after every event up to ``until_ms``."""
    owned: list[set[int]] = [set() for _ in range(members)]
    for e in sorted(events, key=lambda e: e.at_ms):
        if e.at_ms > until_ms:
            break
        mine = owned[e.member]
        if e.kind == "assign":
            if not e.incremental:
                mine.clear()
            mine |= e.partitions
        else:
            mine -= e.partitions
    return owned


def settled(owned: list[set[int]]) -> bool:
    """Every partition owned by exactly one member, and every member owning some."""
    return (
        all(owned)
        and sum(len(o) for o in owned) == PARTITIONS
        and set().union(*owned) == set(range(PARTITIONS))
    )


def settled_at(events: list[Event], members: int, after_ms: float) -> float | None:
    """The first event time at or after ``after_ms`` after which the members are settled."""
    times = sorted({e.at_ms for e in events if e.at_ms >= after_ms})
    for t in times:
        if settled(owners_at(events, members, t)):
            return t
    return None


def wait_settled(events: list[Event], members: list[Member], after_ms: float, what: str) -> float:
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while time.monotonic() < deadline:
        for m in members:
            if m.errors:
                raise RuntimeError(f"member {m.index}: {m.errors[0]}")
        at = settled_at(list(events), len(members), after_ms)
        if at is not None:
            return at
        threading.Event().wait(0.02)
    owned = owners_at(list(events), len(members), _ms())
    raise TimeoutError(f"{what}: not settled after {SETTLE_TIMEOUT_S} s (owned: {owned})")


def wait_final(
    events: list[Event], members: list[Member], poller: DescribePoller, after_ms: float, what: str
) -> float:
    """Waits until the members are settled, no callback came for ``TAIL_MS`` and the coordinator
    answers STABLE with every member; returns the time of the last callback since ``after_ms``:
    when the group settled. (Settled alone is not the end: KIP-848 members reconcile one at a
    time, and a fourth member owning 2 of its 3 while another still holds 4 is settled.)"""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while time.monotonic() < deadline:
        for m in members:
            if m.errors:
                raise RuntimeError(f"member {m.index}: {m.errors[0]}")
        seen = list(events)
        last = max((e.at_ms for e in seen if e.at_ms >= after_ms), default=None)
        if (
            last is not None
            and _ms() - last >= TAIL_MS
            and settled(owners_at(seen, len(members), _ms()))
            and poller.last_stable_since(len(members)) is not None
        ):
            return last
        threading.Event().wait(0.02)
    owned = owners_at(list(events), len(members), _ms())
    raise TimeoutError(
        f"{what}: not settled and Stable after {SETTLE_TIMEOUT_S} s (owned: {owned}, "
        f"described: {poller.samples[-3:]})"
    )


def max_gap(times: list[float], start: float, end: float) -> float:
    """The longest gap between deliveries in [start, end], its ends counting as deliveries."""
    inside = [t for t in times if start <= t <= end]
    return max(b - a for a, b in itertools.pairwise([start, *inside, end]))


def max_latency(samples: list[tuple[float, float]], start: float, end: float) -> float:
    return max((lat for t, lat in samples if start <= t <= end), default=0.0)


# -- the coordinator's view --------------------------------------------------------------------
class DescribePoller:
    """Polls ``describe_consumer_groups`` every 100 ms: (time, state, member count)."""

    def __init__(self, admin: AdminClient, group: str) -> None:
        self.admin = admin
        self.group = group
        self.samples: list[tuple[float, str, int]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="describe", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            asked = _ms()
            try:
                d = self.admin.describe_consumer_groups([self.group])[self.group].result(timeout=10)
                self.samples.append((asked, d.state.name, len(d.members)))
            except Exception as exc:
                self.errors.append(repr(exc))
            self._stop.wait(0.1)

    def last_stable_since(self, members: int) -> float | None:
        """The first sample of the last stretch answering STABLE with ``members`` members, if
        the last sample is one."""
        start = None
        for at, state, count in self.samples:
            if state == "STABLE" and count == members:
                start = at if start is None else start
            else:
                start = None
        return start

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


# -- a round -----------------------------------------------------------------------------------
def join_round(
    bootstrap: str,
    admin: AdminClient,
    mode: str,
    group: str,
    steady_s: float,
    heartbeat_ms: int,
    producer: PacedProducer,
    busy_ms: float = 0.0,
) -> dict[str, float]:
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "latest",
        "auto.commit.interval.ms": 1000,
        "enable.partition.eof": False,
        **mode_config(mode, heartbeat_ms),
    }
    events: list[Event] = []
    members = [Member(i, config, events, mode != "eager", busy_ms) for i in range(3)]
    poller: DescribePoller | None = None
    try:
        for m in members:
            m.start()
        wait_settled(events, members, 0.0, f"{mode}: the three members")
        threading.Event().wait(steady_s)
        producer.reset_lag()
        fourth = Member(3, config, events, mode != "eager", busy_ms)
        poller = DescribePoller(admin, group)
        members.append(fourth)
        fourth.start()
        joined = fourth.subscribed_ms
        steady_start = joined - steady_s * 1000.0
        settled_ms = wait_final(events, members, poller, joined, f"{mode}: four members")
        tail_end = settled_ms + TAIL_MS
        poller.stop()
        stable_since = poller.last_stable_since(4)
        if stable_since is None:
            raise RuntimeError(
                f"{mode}: describe_consumer_groups no longer answers STABLE with 4 members "
                f"(last samples {poller.samples[-5:]}, errors {poller.errors[:3]})"
            )
        for m in members:
            if m.errors:
                raise RuntimeError(f"{mode}: member {m.index}: {m.errors[0]}")
        before = owners_at(events, 4, joined)
        after = owners_at(events, 4, settled_ms)
        kept = [(i, p) for i in range(3) for p in before[i] & after[i]]
        revoked = {
            (e.member, p)
            for e in events
            if joined <= e.at_ms <= settled_ms and e.kind != "assign"
            for p in e.partitions
        }
        steady_gap = max(
            max_gap(members[i].deliveries.get(p, []), steady_start, joined)
            for i in range(3)
            for p in before[i]
        )
        steady_latency = max(
            max_latency(members[i].latencies.get(p, []), steady_start, joined)
            for i in range(3)
            for p in before[i]
        )
        kept_gap = max(max_gap(members[i].deliveries.get(p, []), joined, tail_end) for i, p in kept)
        kept_latency = max(
            max_latency(members[i].latencies.get(p, []), joined, tail_end) for i, p in kept
        )
        delivered = [o for m in members for o in m.offsets]
        steady_call = max(
            (d for m in members[:3] for at, d in m.calls if steady_start <= at <= joined),
            default=0.0,
        )
        join_call = max(
            (d for m in members[:3] for at, d in m.calls if joined <= at <= tail_end),
            default=0.0,
        )
        return {
            "join_to_settled_ms": round(settled_ms - joined, 1),
            "describe_stable_ms": round(stable_since - joined, 1),
            "steady_gap_ms": round(steady_gap, 1),
            "kept_gap_ms": round(kept_gap, 1),
            "kept_gap_over_steady": round(kept_gap / max(steady_gap, 1.0), 2),
            "steady_latency_ms": round(steady_latency, 1),
            "kept_latency_ms": round(kept_latency, 1),
            "kept": len(kept),
            "moved": PARTITIONS - len(kept),
            "kept_revoked": sum(1 for k in kept if k in revoked),
            "redelivered": len(delivered) - len(set(delivered)),
            "fourth_owns": len(after[3]),
            "producer_max_lag_ms": round(producer.max_lag_ms, 1),
            "producer_max_queued": producer.max_queued,
            "steady_consume_call_ms": round(steady_call, 1),
            "join_consume_call_ms": round(join_call, 1),
        }
    finally:
        if poller is not None:
            poller.stop()
        for m in members:
            m.stop()
        for m in members:
            m.join()


def _cluster(root: Path, heartbeat_ms: int) -> LocalCluster:
    overrides = {
        "offsets.topic.num.partitions": "3",
        "group.consumer.heartbeat.interval.ms": str(heartbeat_ms),
        "group.initial.rebalance.delay.ms": "500",
    }
    for attempt in itertools.count(1):
        cluster = LocalCluster(root / str(attempt), 3, kafka_ports=[0, 0, 0], overrides=overrides)
        try:
            cluster.start()
        except RuntimeError as exc:  # a free port taken meanwhile by another process
            cluster.stop()
            if attempt == 3:
                raise
            print(f"starting the cluster failed ({exc}); again", flush=True)
            continue
        return cluster
    raise AssertionError("unreachable")


FIGURES = (
    "join_to_settled_ms",
    "describe_stable_ms",
    "steady_gap_ms",
    "kept_gap_ms",
    "kept_gap_over_steady",
    "steady_latency_ms",
    "kept_latency_ms",
    "kept",
    "moved",
    "kept_revoked",
    "redelivered",
    "fourth_owns",
    "producer_max_lag_ms",
    "producer_max_queued",
    "steady_consume_call_ms",
    "join_consume_call_ms",
)


def variants(busy_ms: float) -> list[tuple[str, float]]:
    """(key prefix, members' work per batch): idle members, and busy ones unless 0."""
    return [("", 0.0), *([("busy_", busy_ms)] if busy_ms > 0 else [])]


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="python -m bench.kafka_groups")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the three modes")
    parser.add_argument("--steady-s", type=float, default=6.0, help="steady window before a join")
    parser.add_argument("--heartbeat-ms", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=20.0, help="records/s per partition")
    parser.add_argument(
        "--busy-ms", type=float, default=500.0, help="busy members' work per batch, at most"
    )
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    cases = variants(args.busy_ms)
    rounds: dict[str, list[dict[str, float]]] = {p + m: [] for p, _ in cases for m in MODES}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        cluster = _cluster(Path(tmp), args.heartbeat_ms)
        producer: PacedProducer | None = None
        try:
            bootstrap = cluster.kafka_bootstrap_servers
            _create_topic(cluster.nodes[0].address, 3, topic=TOPIC, partitions=PARTITIONS)
            admin = AdminClient({"bootstrap.servers": bootstrap})
            producer = PacedProducer(bootstrap, args.rate)
            producer.start()
            for r in range(max(1, args.repeat)):
                order = MODES[r % len(MODES) :] + MODES[: r % len(MODES)]
                for prefix, busy in cases:
                    for mode in order:
                        figures = join_round(
                            bootstrap,
                            admin,
                            mode,
                            f"bench-{prefix}{mode}-{r}",
                            args.steady_s,
                            args.heartbeat_ms,
                            producer,
                            busy,
                        )
                        print(f"round {r} {prefix}{mode}: {figures}", flush=True)
                        rounds[prefix + mode].append(figures)
        finally:
            if producer is not None:
                producer.stop()
            cluster.stop()
    if producer.failures:
        raise RuntimeError(f"the producer failed: {producer.failures[:3]}")
    out: dict[str, Any] = {
        "partitions": PARTITIONS,
        "records_per_s_per_partition": args.rate,
        "heartbeat_interval_ms": args.heartbeat_ms,
        "steady_s": args.steady_s,
        "busy_ms": args.busy_ms,
        "repeat": max(1, args.repeat),
        "consumers": "threads",
        "records_sent": producer.sent,
    }
    for prefix, _ in cases:
        for mode in MODES:
            name = prefix + mode
            for key in FIGURES:
                out[f"{name}_{key}"] = statistics.median(r[key] for r in rounds[name])
            out[f"{name}_rounds"] = rounds[name]
            out[f"{name}_join_to_settled_over_heartbeat"] = round(
                out[f"{name}_join_to_settled_ms"] / args.heartbeat_ms, 2
            )
        for mode in ("cooperative", "kip848"):
            for key in ("join_to_settled_ms", "kept_gap_ms"):
                out[f"{prefix}{mode}_{key.removesuffix('_ms')}_over_eager"] = round(
                    out[f"{prefix}{mode}_{key}"] / max(out[f"{prefix}eager_{key}"], 1.0), 3
                )
    out["seconds"] = round(time.monotonic() - started, 1)
    report(out)
    return out


def report(out: dict[str, Any]) -> None:
    for prefix, busy in variants(float(out["busy_ms"])):
        print(
            f"a fourth member joins three on {out['partitions']} partitions "
            f"({out['records_per_s_per_partition']:g} records/s each; heartbeat "
            f"{out['heartbeat_interval_ms']} ms; medians of {out['repeat']} rounds); members "
            + (f"busy up to {busy:g} ms after each batch" if busy else "always polling")
        )
        print(
            f"{'':12} {'settled':>8} {'Stable':>8} {'steady':>7} {'kept':>7} {'ratio':>6} "
            f"{'lat.st':>7} {'lat.kept':>8} {'kept':>5} {'revoked':>7} {'again':>6}"
        )
        for mode in MODES:
            f = {key: out[f"{prefix}{mode}_{key}"] for key in FIGURES}
            print(
                f"{mode:12} {f['join_to_settled_ms']:>6.0f}ms {f['describe_stable_ms']:>6.0f}ms "
                f"{f['steady_gap_ms']:>5.0f}ms {f['kept_gap_ms']:>5.0f}ms "
                f"{f['kept_gap_over_steady']:>5.2f}x {f['steady_latency_ms']:>5.0f}ms "
                f"{f['kept_latency_ms']:>6.0f}ms {f['kept']:>5.0f} {f['kept_revoked']:>7.0f} "
                f"{f['redelivered']:>6.0f}"
            )
        for mode in MODES:
            f = {key: out[f"{prefix}{mode}_{key}"] for key in FIGURES}
            print(
                f"  {mode}: this process's own stalls: longest consume() call steady "
                f"{f['steady_consume_call_ms']:.0f} ms, during the join "
                f"{f['join_consume_call_ms']:.0f} ms; producer tick late by up to "
                f"{f['producer_max_lag_ms']:.0f} ms, at most {f['producer_max_queued']:.0f} queued"
            )
        for mode in ("cooperative", "kip848"):
            print(
                f"  {mode} over eager: time to settled "
                f"{out[f'{prefix}{mode}_join_to_settled_over_eager']}x, kept partitions' "
                f"longest gap {out[f'{prefix}{mode}_kept_gap_over_eager']}x"
            )
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
