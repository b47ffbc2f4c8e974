"""Consumer group benchmark: what a rebalance costs the group (KIP-848, docs/groups.md).

Two scenarios, each on its own three-node cluster on this machine:

**A member joins** (heartbeat interval 200 ms). Three members consume a twelve-partition topic
(replication factor 3) that a producer thread keeps writing to, every partition every few
milliseconds. Each member runs its own poll loop on its own thread, as an application does, and
records per partition when records of it were delivered. Then a fourth member joins. Per round:

* ``join_to_stable_ms``: from the fourth member's start to the coordinator describing the
  group as Stable with four members (every member at the target epoch, nothing unreleased);
* ``kept_pause_ms``: the longest gap between two deliveries of a partition that did not move,
  from the join until one second after the group is stable: the pause the rebalance caused to
  members whose partitions stay (KIP-848's target: none beyond the ordinary gap);
* ``steady_gap_ms``, the baseline measured in the same round just before the join: the longest
  gap between two deliveries of the same partitions over a 3 s window without a rebalance;
* ``kept_rate_during_join_over_steady``: how often those partitions delivered from the join to
  Stable, over how often they did in the steady window (1.0: at full speed throughout).

**A subscribed topic grows by 900 partitions** (Kafka's defaults: heartbeat interval 5 s,
session timeout 45 s). Ten members (threads of this process) subscribe to a topic of ten
partitions (replication factor 3); then ``CreatePartitions`` adds 900. Measured from the
request: ``create_ms``, until the broker answers; ``coordinator_knows_ms``, until the group
coordinator's node has the 910 partitions in its metadata cache (the controller's
UpdateMetadata: no group can assign partitions before this); ``grow_to_stable_ms``, until every
member owns its share of the 910 and the group is Stable; ``group_share_ms``, the difference of
the last two (what the group protocol itself takes). This is the scenario of Kafka's published
figure: "a group with 10 consumers adding 900 partitions completes rebalancing in 5 seconds
instead of 103 seconds" (KIP-848's consumer protocol against the classic one;
https://karafka.io/docs/Kafka-New-Rebalance-Protocol/, a page based on librdkafka's KIP-848
documentation, INTRODUCTION.md of librdkafka v2.12.0).

Ratios: ``kept_pause_ms / steady_gap_ms`` (1.0: the join did not pause them at all),
``join_to_stable_ms / heartbeat_interval_ms``, ``grow_to_stable_ms / create_ms`` (the
baseline of the same run: the partitions' own creation), ``group_share_ms`` in heartbeat
intervals, and ``grow_to_stable_ms`` over Kafka's published 5 s (KIP-848) and 103 s (classic).
The classic protocol beside KIP-848, with Kafka clients: ``python -m bench.kafka_groups``.

Ends with one JSON line. ``python -m bench.groups [--repeat 3] [--heartbeat-ms 200]
[--grow-partitions 900] [--grow-members 10]``
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import tempfile
import threading
from pathlib import Path

import grpc

from deploy.local.cluster import LocalCluster
from odradek import Admin, Consumer, NewTopic, Producer
from odradek.admin import NewPartitions
from odradek.clock import SystemClock
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

TOPIC = "bench-groups"
GROW_TOPIC = "bench-groups-grow"
PARTITIONS = 12
GROW_INITIAL = 10
KAFKA_KIP848_MS = 5_000
"""Kafka's published time for 10 consumers to take 900 added partitions, KIP-848 protocol."""
KAFKA_CLASSIC_MS = 103_000
"""The same with the classic protocol."""
CLOCK = SystemClock()


def _now() -> int:
    return CLOCK.monotonic_ms()


def _produce_forever(bootstrap: str, stop: threading.Event) -> None:
    with Producer(bootstrap, acks=1, linger_ms=0) as producer:
        i = 0
        while not stop.is_set():
            for p in range(PARTITIONS):
                producer.send(TOPIC, b"x%d" % i, partition=p)
            i += 1
            stop.wait(0.005)


def _describe(admin: Admin, group: str) -> tuple[str, int]:
    try:
        d = admin.describe_consumer_groups([group])[group]
    except Exception:
        return "", 0
    return d.state, len(d.members)


class Member:
    """A consumer polling on its own thread, recording when each partition delivered."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.consumer = Consumer(bootstrap, group_id=group, auto_offset_reset="latest")
        self.consumer.subscribe([topic])
        self.deliveries: dict[int, list[int]] = {}
        self.owned: frozenset[int] = frozenset()
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                records = self.consumer.poll(timeout_ms=100)
                now = _now()
                for p in {r.partition for r in records}:
                    self.deliveries.setdefault(p, []).append(now)
                self.owned = frozenset(tp.partition for tp in self.consumer.assignment())
        except BaseException as exc:  # reported by the round
            self.error = exc

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.consumer.close()


def _max_gap(times: list[int], start: int, end: int) -> int:
    inside = [t for t in times if start <= t <= end]
    points = [start, *inside, end]
    return max(b - a for a, b in itertools.pairwise(points))


def _wait_stable(admin: Admin, group: str, members: list[Member], total: int, what: str) -> int:
    deadline = _now() + 300_000
    while True:
        for m in members:
            if m.error is not None:
                raise RuntimeError(f"a member failed: {m.error!r}")
        owned = [m.owned for m in members]
        if (
            all(owned)
            and sum(len(o) for o in owned) == total
            and len(frozenset().union(*owned)) == total
            and _describe(admin, group) == ("Stable", len(members))
        ):
            return _now()
        if _now() > deadline:
            raise TimeoutError(f"{what} never became stable")
        threading.Event().wait(0.02)


def join_round(bootstrap: str, admin: Admin, group: str) -> dict[str, float]:
    members = [Member(bootstrap, group, TOPIC) for _ in range(3)]
    fourth: Member | None = None
    try:
        _wait_stable(admin, group, members, PARTITIONS, "the three members")
        steady_start = _now()
        threading.Event().wait(3.0)
        steady_end = _now()
        before = [m.owned for m in members]
        joined = _now()
        fourth = Member(bootstrap, group, TOPIC)
        stable_at = _wait_stable(admin, group, [*members, fourth], PARTITIONS, "four members")
        threading.Event().wait(1.0)
        window_end = _now()
        kept_pause = 0
        steady_gap = 0
        steady_count = 0
        join_count = 0
        for m, owned_before in zip(members, before, strict=True):
            for p in owned_before & m.owned:
                times = list(m.deliveries.get(p, []))
                steady_gap = max(steady_gap, _max_gap(times, steady_start, steady_end))
                kept_pause = max(kept_pause, _max_gap(times, joined, window_end))
                steady_count += sum(1 for t in times if steady_start <= t <= steady_end)
                join_count += sum(1 for t in times if joined <= t <= stable_at)
    finally:
        for m in [*members, *([fourth] if fourth else [])]:
            m.close()
    steady_rate = steady_count / max(steady_end - steady_start, 1)
    join_rate = join_count / max(stable_at - joined, 1)
    return {
        "join_to_stable_ms": stable_at - joined,
        "kept_pause_ms": kept_pause,
        "steady_gap_ms": steady_gap,
        "kept_rate_during_join_over_steady": join_rate / max(steady_rate, 1e-9),
    }


def _partition_count(address: str, topic: str) -> int:
    """How many partitions of ``topic`` the node at ``address`` knows (its metadata cache)."""
    with grpc.insecure_channel(address) as channel:
        response = pb_grpc.BrokerStub(channel).Metadata(
            pb.MetadataRequest(topics=[topic]), timeout=10
        )
    return sum(len(t.partitions) for t in response.topics if t.name == topic)


def grow_round(bootstrap: str, admin: Admin, added: int, members_n: int) -> dict[str, float]:
    topic = GROW_TOPIC
    total = GROW_INITIAL + added
    admin.create_topics([NewTopic(topic, GROW_INITIAL, 3)], timeout_ms=60_000)
    group = "bench-grow"
    members = [Member(bootstrap, group, topic) for _ in range(members_n)]
    try:
        _wait_stable(admin, group, members, GROW_INITIAL, f"{members_n} members")
        coordinator = admin.describe_consumer_groups([group])[group].coordinator
        outcome: list[object] = []

        def create() -> None:
            try:
                outcome.append(
                    admin.create_partitions({topic: NewPartitions(total)}, timeout_ms=120_000)
                )
            except Exception as exc:
                outcome.append(exc)
            outcome.append(_now())

        start = _now()
        threading.Thread(target=create, daemon=True).start()
        known_at = None
        while known_at is None:  # the coordinator's node learns the new partitions
            if _partition_count(coordinator, topic) == total:
                known_at = _now()
            elif _now() > start + 300_000:
                raise TimeoutError("the coordinator's node never learned the new partitions")
            else:
                threading.Event().wait(0.02)
        stable_at = _wait_stable(
            admin, group, members, total, f"{members_n} members on more partitions"
        )
        while len(outcome) < 2:
            threading.Event().wait(0.02)
        if outcome[0] != {topic: None}:
            raise RuntimeError(f"CreatePartitions failed: {outcome[0]}")
        created = outcome[1]
        assert isinstance(created, int)
    finally:
        for m in members:
            m.close()
    return {
        "create_ms": created - start,
        "coordinator_knows_ms": known_at - start,
        "grow_to_stable_ms": stable_at - start,
        "group_share_ms": stable_at - known_at,
    }


def _cluster(root: Path, overrides: dict[str, str]) -> LocalCluster:
    for attempt in itertools.count(1):
        cluster = LocalCluster(
            root / str(attempt), 3, overrides={"offsets.topic.num.partitions": "3", **overrides}
        )
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


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="python -m bench.groups")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--heartbeat-ms", type=int, default=200)
    parser.add_argument("--grow-partitions", type=int, default=900)
    parser.add_argument("--grow-members", type=int, default=10)
    parser.add_argument("--grow-heartbeat-ms", type=int, default=5_000, help="Kafka's default")
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    rounds: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        cluster = _cluster(
            Path(tmp) / "join",
            {
                "group.consumer.heartbeat.interval.ms": str(args.heartbeat_ms),
                "group.consumer.session.timeout.ms": "10000",
            },
        )
        stop = threading.Event()
        producer = None
        try:
            bootstrap = cluster.bootstrap_servers
            with Admin(bootstrap) as admin:
                admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)], timeout_ms=30_000)
                producer = threading.Thread(target=_produce_forever, args=(bootstrap, stop))
                producer.start()
                for i in range(args.repeat):
                    figures = join_round(bootstrap, admin, f"bench-{i}")
                    print(f"join round {i}: {figures}", flush=True)
                    rounds.append(figures)
        finally:
            stop.set()
            if producer is not None:
                producer.join()
            cluster.stop()
        cluster = _cluster(
            Path(tmp) / "grow",
            {"group.consumer.heartbeat.interval.ms": str(args.grow_heartbeat_ms)},
        )
        try:
            with Admin(cluster.bootstrap_servers) as admin:
                grow = grow_round(
                    cluster.bootstrap_servers, admin, args.grow_partitions, args.grow_members
                )
            print(f"grow: {grow}", flush=True)
        finally:
            cluster.stop()
    median = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    out: dict[str, object] = {
        "heartbeat_interval_ms": args.heartbeat_ms,
        "partitions": PARTITIONS,
        "rounds": rounds,
        **median,
        "kept_pause_over_steady_gap": median["kept_pause_ms"] / max(median["steady_gap_ms"], 1),
        "join_to_stable_over_heartbeat": median["join_to_stable_ms"] / args.heartbeat_ms,
        "grow_members": args.grow_members,
        "grow_partitions_added": args.grow_partitions,
        "grow_heartbeat_interval_ms": args.grow_heartbeat_ms,
        **grow,
        "grow_to_stable_over_create": grow["grow_to_stable_ms"] / max(grow["create_ms"], 1),
        "grow_to_stable_over_heartbeat": grow["grow_to_stable_ms"] / args.grow_heartbeat_ms,
        "group_share_over_heartbeat": grow["group_share_ms"] / args.grow_heartbeat_ms,
        "kafka_published_kip848_ms": KAFKA_KIP848_MS,
        "kafka_published_classic_ms": KAFKA_CLASSIC_MS,
        "grow_to_stable_over_kafka_kip848": grow["grow_to_stable_ms"] / KAFKA_KIP848_MS,
        "grow_to_stable_over_kafka_classic": grow["grow_to_stable_ms"] / KAFKA_CLASSIC_MS,
    }
    ours = grow["grow_to_stable_ms"]
    print(
        f"{args.grow_members} members, +{args.grow_partitions} partitions: odradek "
        f"{ours / 1000:.1f} s (CreatePartitions answered {grow['create_ms'] / 1000:.1f} s, "
        f"the coordinator's node knew them {grow['coordinator_knows_ms'] / 1000:.1f} s, "
        f"the group's share {grow['group_share_ms'] / 1000:.1f} s); "
        f"Kafka published: KIP-848 {KAFKA_KIP848_MS / 1000:.0f} s "
        f"(ours / theirs {ours / KAFKA_KIP848_MS:.2f}), classic "
        f"{KAFKA_CLASSIC_MS / 1000:.0f} s (ours / theirs {ours / KAFKA_CLASSIC_MS:.3f})",
        flush=True,
    )
    print(json.dumps(out, sort_keys=True))
    return out


if __name__ == "__main__":
    main()
