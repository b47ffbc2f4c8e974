"""Consumer group benchmark: what a member joining costs the group (KIP-848, docs/groups.md).

Three members consume a twelve-partition topic (replication factor 3) that a producer thread
keeps writing to, every partition every few milliseconds; the members are polled in turn from
one thread and each records, per partition, when records of it were delivered. Then a fourth
member joins. Measured, per round:

* ``join_to_stable_ms``: from the fourth member's first poll to the coordinator describing the
  group as Stable with four members (every member at the target epoch, nothing unreleased);
* ``kept_pause_ms``: the longest gap between two deliveries of a partition that did not move,
  from the join until one second after the group is stable — the pause the rebalance caused to
  members whose partitions stay (KIP-848's target: none beyond the ordinary gap);
* ``steady_gap_ms``, the baseline measured in the same round just before the join: the longest
  gap between two deliveries of the same partitions over a 3 s window with no rebalance, in the
  same loop (the describe calls that watch for stability included).

Ratios: ``kept_pause_ms / steady_gap_ms`` (1.0: the join did not pause them at all) and
``join_to_stable_ms / heartbeat_interval_ms`` (how many heartbeat intervals a join takes).
For comparison, Kafka's classic protocol stops every member for at least one JoinGroup/SyncGroup
round (the whole group pauses for the rebalance: of the order of seconds with default settings;
KIP-848's motivation); odradek has no classic protocol to measure it against.

Ends with one JSON line. ``python -m bench.groups [--repeat 3] [--heartbeat-ms 200]``
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
from odradek.clock import SystemClock

TOPIC = "bench-groups"
PARTITIONS = 12
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


def _stable(admin: Admin, group: str, members: int) -> bool:
    try:
        d = admin.describe_consumer_groups([group])[group]
    except Exception:
        return False
    return d.state == "Stable" and len(d.members) == members


class Member:
    def __init__(self, bootstrap: str, group: str) -> None:
        self.consumer = Consumer(bootstrap, group_id=group, auto_offset_reset="latest")
        self.consumer.subscribe([TOPIC])
        self.deliveries: dict[int, list[int]] = {}

    def poll(self) -> None:
        records = self.consumer.poll(timeout_ms=20)
        now = _now()
        for p in {r.partition for r in records}:
            self.deliveries.setdefault(p, []).append(now)

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}


def _max_gap(times: list[int], start: int, end: int) -> int:
    inside = [t for t in times if start <= t <= end]
    points = [start, *inside, end]
    return max(b - a for a, b in itertools.pairwise(points))


def one_round(bootstrap: str, admin: Admin, group: str) -> dict[str, float]:
    members = [Member(bootstrap, group) for _ in range(3)]
    deadline = _now() + 60_000
    while not _stable(admin, group, 3):
        for m in members:
            m.poll()
        if _now() > deadline:
            raise TimeoutError("the three members never became stable")
    # steady state baseline window: the same loop as during the join (describe included)
    steady_start = _now()
    while _now() < steady_start + 3_000:
        for m in members:
            m.poll()
        _stable(admin, group, 3)
    steady_end = _now()
    before = [m.owned() for m in members]
    fourth = Member(bootstrap, group)
    joined = _now()
    everyone = [*members, fourth]
    while not _stable(admin, group, 4):
        for m in everyone:
            m.poll()
        if _now() > joined + 60_000:
            raise TimeoutError("the four members never became stable")
    stable_at = _now()
    while _now() < stable_at + 1_000:
        for m in everyone:
            m.poll()
        _stable(admin, group, 4)
    window_end = _now()
    kept_pause = 0
    steady_gap = 0
    for m, owned_before in zip(members, before, strict=True):
        for p in owned_before & m.owned():
            times = m.deliveries.get(p, [])
            steady_gap = max(steady_gap, _max_gap(times, steady_start, steady_end))
            kept_pause = max(kept_pause, _max_gap(times, joined, window_end))
    for m in everyone:
        m.consumer.close()
    return {
        "join_to_stable_ms": stable_at - joined,
        "kept_pause_ms": kept_pause,
        "steady_gap_ms": steady_gap,
    }


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="python -m bench.groups")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--heartbeat-ms", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    rounds: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        cluster = LocalCluster(
            Path(tmp) / "cluster",
            3,
            overrides={
                "offsets.topic.num.partitions": "3",
                "group.consumer.heartbeat.interval.ms": str(args.heartbeat_ms),
                "group.consumer.session.timeout.ms": "10000",
            },
        )
        cluster.start()
        stop = threading.Event()
        try:
            bootstrap = cluster.bootstrap_servers
            admin = Admin(bootstrap)
            admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)], timeout_ms=30_000)
            producer = threading.Thread(target=_produce_forever, args=(bootstrap, stop))
            producer.start()
            for i in range(args.repeat):
                figures = one_round(bootstrap, admin, f"bench-{i}")
                print(f"round {i}: {figures}", flush=True)
                rounds.append(figures)
            stop.set()
            producer.join()
            admin.close()
        except grpc.RpcError:
            raise
        finally:
            stop.set()
            cluster.stop()
    median = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    out: dict[str, object] = {
        "heartbeat_interval_ms": args.heartbeat_ms,
        "partitions": PARTITIONS,
        "rounds": rounds,
        **median,
        "kept_pause_over_steady_gap": median["kept_pause_ms"] / max(median["steady_gap_ms"], 1),
        "join_to_stable_over_heartbeat": median["join_to_stable_ms"] / args.heartbeat_ms,
    }
    print(json.dumps(out, sort_keys=True))
    return out


if __name__ == "__main__":
    main()
