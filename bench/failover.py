"""Failover benchmark: the write stall when a partition leader goes, per client.

Four nodes as processes on loopback with a ZooKeeper of their own, a topic per client (one
partition, replication factor 3, ``min.insync.replicas`` 2, on the three nodes that are not the
active controller, moved there before each event if need be, all led by one node), and one
writer per client sending one record at a time and waiting for its acknowledgement: odradek's
SDK (idempotent, acks=-1), confluent-kafka (librdkafka; ``enable.idempotence``, acks=all) and
kafka-python (``enable_idempotence``, acks=all), the last two on the nodes' Kafka listeners.
Each record's value is unique, so that the topics read back at the end show every
acknowledged record stored exactly once.

Events, each after every partition is fully in sync again:

* ``kill``: SIGKILL the leader (then restart it: it comes back as a follower);
* ``shutdown``: SIGTERM the leader (a controlled shutdown; then restart it);
* ``controller``: SIGKILL the active controller (then restart it), which replicates none of
  the topics: their leaders live on. (A controller that is also an ISR follower holds acks=-1
  writes until a new controller shrinks the ISR: docs/operations.md, Failover.)

An event's **write stall** is, per client, the longest wait for an acknowledgement from the
event until leadership has moved and every writer has been acknowledged by the new leader: for
a kill, the time from the kill to the first acknowledged write on the new leader. Printed as a
distribution (p50 / p99 / max) per client and event; then the records lost and duplicated (both
must be 0). ``--overhead`` also measures produce throughput with the heartbeats (the default
``broker.session.timeout.ms``) and without (0: liveness by the ZooKeeper session alone), in
alternating rounds, as a ratio. It ends with one JSON line holding every figure.

    python -m bench.failover [--kills 20] [--shutdowns 5] [--controller-kills 3] [--overhead]
        [--clients sdk,confluent-kafka,kafka-python] [--rdkafka-debug FILE] [--directory DIR]

``--rdkafka-debug FILE`` writes librdkafka's debug log to FILE and ``--directory DIR`` keeps the
nodes' logs (``DIR/cluster/node-N/node.log``; by default the run is in a temporary directory,
removed at the end): the two to read side by side when a client takes long to find a new leader.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import logging
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from deploy.local.cluster import LocalCluster, NodeProcess
from deploy.local.zookeeper import ZooKeeperServer
from odradek import Admin, Consumer, NewTopic, Producer, TopicPartition

__all__ = ["CLIENTS", "FailoverRun", "Writer", "main", "summary"]

CLIENTS = ("sdk", "confluent-kafka", "kafka-python")


def _now() -> float:
    return time.monotonic()


@dataclass
class Writer:
    """One client writing one record at a time to its own topic; thread-safe reads."""

    client: str
    topic: str
    bootstrap: str
    """gRPC addresses for the SDK, Kafka listeners for the others."""
    acks: list[tuple[float, int]] = field(default_factory=list)
    """(monotonic time of the acknowledgement, value) of every acknowledged record."""
    failures: int = 0
    rdkafka_log: Path | None = None
    """confluent-kafka only: where librdkafka's debug log (broker, topic, metadata, msg, eos)
    goes, to read how the producer found the new leader; none by default."""
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"writer-{self.client}")
        self._thread.daemon = True
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=180)

    def last_ack(self) -> float:
        with self._lock:
            return self.acks[-1][0] if self.acks else 0.0

    def ack_times(self) -> list[float]:
        with self._lock:
            return [t for t, _ in self.acks]

    def _acked(self, value: int) -> None:
        with self._lock:
            self.acks.append((_now(), value))

    def _run(self) -> None:
        send = {"sdk": self._sdk, "confluent-kafka": self._confluent, "kafka-python": self._kp}
        send[self.client]()

    def _values(self) -> Iterator[int]:
        value = 0
        while not self._stop.is_set():
            yield value
            value += 1

    def _sdk(self) -> None:
        with Producer(self.bootstrap, linger_ms=0) as producer:
            for value in self._values():
                try:
                    producer.send(self.topic, str(value).encode(), partition=0).result(120)
                except Exception:
                    self.failures += 1
                    continue
                self._acked(value)

    def _confluent(self) -> None:
        import confluent_kafka

        config: dict[str, object] = {
            "bootstrap.servers": self.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 0,
            "message.timeout.ms": 120_000,
        }
        if self.rdkafka_log is None:
            producer = confluent_kafka.Producer(config)
        else:
            config["debug"] = "broker,topic,metadata,msg,eos"
            logger = logging.getLogger(f"bench.failover.rdkafka.{self.topic}")
            logger.propagate = False
            logger.setLevel(logging.DEBUG)
            handler = logging.FileHandler(self.rdkafka_log)
            handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
            logger.addHandler(handler)
            producer = confluent_kafka.Producer(config, logger=logger)
        for value in self._values():
            outcome: list[object] = []

            def delivered(err: object, _msg: object, out: list[object] = outcome) -> None:
                out.append(err)

            producer.produce(self.topic, str(value).encode(), partition=0, on_delivery=delivered)
            while not outcome:
                producer.poll(0.005)
            if outcome[0] is None:
                self._acked(value)
            else:
                self.failures += 1
        producer.flush(30)

    def _kp(self) -> None:
        import kafka

        producer = kafka.KafkaProducer(
            bootstrap_servers=self.bootstrap.split(","),
            acks="all",
            enable_idempotence=True,
            linger_ms=0,
            retries=2**31 - 1,
            delivery_timeout_ms=120_000,
        )
        try:
            for value in self._values():
                try:
                    producer.send(self.topic, str(value).encode(), partition=0).get(120)
                except Exception:
                    self.failures += 1
                    continue
                self._acked(value)
        finally:
            producer.close(timeout=10)


def wait_for(condition: Callable[[], object], what: str, timeout_s: float = 90.0) -> None:
    deadline = _now() + timeout_s
    while _now() < deadline:
        try:
            if condition():
                return
        except Exception:
            pass  # a node may be down while we poll
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


def stall_ms(acks: Sequence[float], start: float, end: float) -> float:
    """The longest wait for an acknowledgement in [start, end]: from ``start`` or an
    acknowledgement to the next one."""
    waits, previous = [], start
    for t in acks:
        if t <= start:
            continue
        waits.append(t - previous)
        previous = t
        if t >= end:
            break
    return 1000 * max(waits) if waits else float("inf")


def summary(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]

    return {
        "n": len(ordered),
        "p50": round(statistics.median(ordered), 1),
        "p99": round(pct(99), 1),
        "max": round(ordered[-1], 1),
    }


class FailoverRun:
    """A cluster, a topic and a writer per client, and the events. Not thread-safe."""

    def __init__(
        self,
        cluster: LocalCluster,
        clients: Sequence[str] = CLIENTS,
        log: Callable[[str], None] = print,
        rdkafka_log: Path | None = None,
    ) -> None:
        self.cluster = cluster
        self.log = log
        self.admin = Admin(cluster.bootstrap_servers)
        self.writers: list[Writer] = []
        self.stalls: dict[str, dict[str, list[float]]] = {}
        for client in clients:
            topic = f"failover-{client}"
            self.admin.create_topics(
                [
                    NewTopic(
                        topic,
                        assignments={0: [0, 1, 2]},
                        configs={"min.insync.replicas": "2"},
                    )
                ]
            )
            bootstrap = (
                cluster.bootstrap_servers if client == "sdk" else cluster.kafka_bootstrap_servers
            )
            debug = rdkafka_log if client == "confluent-kafka" else None
            self.writers.append(Writer(client, topic, bootstrap, rdkafka_log=debug))
        self.wait_in_sync()

    def __enter__(self) -> FailoverRun:
        for w in self.writers:
            w.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for w in self.writers:
            w.stop()
        self.admin.close()

    def leaders(self) -> set[int]:
        described = self.admin.describe_topics([w.topic for w in self.writers])
        return {described[w.topic].partitions[0].leader for w in self.writers}

    def in_sync(self) -> bool:
        described = self.admin.describe_topics([w.topic for w in self.writers])
        parts = [described[w.topic].partitions[0] for w in self.writers]
        return len({p.leader for p in parts}) == 1 and all(
            p.leader >= 0 and len(p.isr) == len(p.replicas) == 3 for p in parts
        )

    def wait_in_sync(self) -> None:
        wait_for(self.in_sync, "one leader and a full ISR for every topic")

    def wait_writing(self, since: float) -> None:
        wait_for(lambda: all(w.last_ack() > since for w in self.writers), "every writer acked")

    def _event(self, kind: str, act: Callable[[], NodeProcess], moved: Callable[[], bool]) -> None:
        self.wait_writing(_now())
        start = _now()
        at = datetime.datetime.now().strftime("%H:%M:%S,%f")[:-3]  # to read the nodes' logs by
        node = act()
        wait_for(moved, f"leadership to move after {kind}", 120)
        self.wait_writing(_now())
        end = _now()
        for w in self.writers:
            value = stall_ms(w.ack_times(), start, end)
            self.stalls.setdefault(kind, {}).setdefault(w.client, []).append(value)
        self.log(
            f"{kind} of node {node.node_id} at {at}: stall "
            + ", ".join(
                f"{w.client} {self.stalls[kind][w.client][-1]:.0f} ms" for w in self.writers
            )
        )

    def arrange(self) -> tuple[int, int]:
        """Wait until every topic is in sync, its replicas the nodes other than the active
        controller (moved there if need be); returns (leader, controller)."""
        self.wait_in_sync()
        controller = self.admin.describe_cluster().controller_id
        described = self.admin.describe_topics([w.topic for w in self.writers])
        replicas = {described[w.topic].partitions[0].replicas for w in self.writers}
        if len(replicas) > 1 or controller in next(iter(replicas)):
            (leader,) = self.leaders()
            others = [n for n in range(len(self.cluster.nodes)) if n != controller]
            target = sorted(others, key=lambda n: n != leader)[:3]
            self.log(f"moving the topics to {target}, away from controller {controller}")
            self.admin.alter_partition_reassignments(
                {TopicPartition(w.topic, 0): target for w in self.writers}
            )

            def moved() -> bool:
                d = self.admin.describe_topics([w.topic for w in self.writers])
                return (
                    all(d[w.topic].partitions[0].replicas == tuple(target) for w in self.writers)
                    and not self.admin.list_partition_reassignments()
                )

            wait_for(moved, "the reassignment", 120)
            self.admin.elect_leaders([TopicPartition(w.topic, 0) for w in self.writers])
            self.wait_in_sync()
        (leader,) = self.leaders()
        return leader, controller

    def kill_leader(self) -> None:
        leader, _ = self.arrange()
        node = self.cluster.node(leader)

        def act() -> NodeProcess:
            node.kill()
            return node

        self._event("kill", act, lambda: bool(self.leaders() - {leader, -1}))
        node.start()

    def shut_down_leader(self) -> None:
        leader, _ = self.arrange()
        node = self.cluster.node(leader)
        stopping = threading.Thread(target=node.stop, daemon=True)

        def act() -> NodeProcess:
            stopping.start()
            return node

        self._event("shutdown", act, lambda: bool(self.leaders() - {leader, -1}))
        stopping.join(120)
        node.start()

    def kill_controller(self) -> None:
        leader, controller = self.arrange()
        node = self.cluster.node(controller)

        def act() -> NodeProcess:
            node.kill()
            return node

        def replaced() -> bool:
            now = self.admin.describe_cluster().controller_id
            return now not in (-1, controller) and self.leaders() == {leader}

        self._event("controller", act, replaced)
        node.start()

    def check_records(self) -> dict[str, dict[str, int]]:
        """Per client: acknowledged, lost (acknowledged, not stored) and duplicated (stored
        more than once) records."""
        for w in self.writers:
            w.stop()
        out = {}
        with Consumer(self.cluster.bootstrap_servers, auto_offset_reset="earliest") as consumer:
            for w in self.writers:
                tp = TopicPartition(w.topic, 0)
                consumer.assign([tp])
                end = consumer.end_offsets([tp])[tp]
                stored: dict[int, int] = {}
                position = 0
                deadline = _now() + 120
                while position < end and _now() < deadline:
                    for record in consumer.poll(1000):
                        value = int(record.value or b"-1")
                        stored[value] = stored.get(value, 0) + 1
                        position = record.offset + 1
                acked = {v for _, v in w.acks}
                out[w.client] = {
                    "acknowledged": len(acked),
                    "lost": len(acked - set(stored)),
                    "duplicated": sum(1 for n in stored.values() if n > 1),
                    "failed_sends": w.failures,
                }
        return out

    def report(self) -> dict[str, dict[str, dict[str, float]]]:
        return {
            kind: {client: summary(values) for client, values in by_client.items()}
            for kind, by_client in self.stalls.items()
        }


def measure_overhead(directory: Path, zookeeper: ZooKeeperServer, rounds: int) -> float:
    """Produce throughput with heartbeats (the defaults) over without
    (``broker.session.timeout.ms=0``): three nodes, replication factor 3, the SDK sending
    100-byte records in 1,000-record ``send_many`` calls. Each round runs one cluster of each
    kind, one after the other (the order alternating between rounds), and measures three bursts
    on each; a round's ratio is the ratio of its two median bursts, and the figure is the median
    round's. The machine's speed drifts, so read it beside every round's figures (printed)."""
    ratios = []
    for r in range(rounds):
        rates: dict[str, float] = {}
        for mode in ("on", "off") if r % 2 == 0 else ("off", "on"):
            overrides = {} if mode == "on" else {"broker.session.timeout.ms": "0"}
            cluster = LocalCluster(
                directory / f"overhead-{r}-{mode}",
                3,
                zookeeper=zookeeper,
                chroot=f"/overhead{r}{mode}",
                overrides=overrides,
            )
            cluster.start()
            try:
                with Admin(cluster.bootstrap_servers) as admin:
                    admin.create_topics([NewTopic("t", 3, 3, configs={"min.insync.replicas": "2"})])

                    def in_sync(a: Admin = admin) -> bool:
                        return all(
                            len(p.isr) == 3 for p in a.describe_topics(["t"])["t"].partitions
                        )

                    wait_for(in_sync, "in sync")
                payload = [b"x" * 100] * 1000
                bursts = []
                with Producer(cluster.bootstrap_servers, linger_ms=5) as producer:
                    producer.send_many("t", payload).result(60)  # warm up
                    for _ in range(3):
                        start = _now()
                        futures = [producer.send_many("t", payload) for _ in range(200)]
                        for f in futures:
                            f.result(120)
                        bursts.append(200 * len(payload) / (_now() - start))
                rates[mode] = statistics.median(bursts)
                print(f"overhead round {r} {mode}: " + ", ".join(f"{b:.0f}/s" for b in bursts))
            finally:
                cluster.stop()
        ratios.append(rates["on"] / rates["off"])
        print(f"overhead round {r}: ratio on/off {ratios[-1]:.3f}")
    return round(statistics.median(ratios), 3)


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--shutdowns", type=int, default=5)
    parser.add_argument("--controller-kills", type=int, default=3)
    parser.add_argument("--overhead", action="store_true")
    parser.add_argument("--overhead-rounds", type=int, default=5)
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument(
        "--rdkafka-debug",
        type=Path,
        help="write confluent-kafka's librdkafka debug log (broker,topic,metadata,msg,eos) here",
    )
    parser.add_argument(
        "--directory", type=Path, help="run here (kept) rather than in a temporary directory"
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        help="a node setting KEY=VALUE (broker.session.timeout.ms=0: ZooKeeper alone)",
    )
    args = parser.parse_args(argv)
    result: dict[str, object] = {}
    with contextlib.ExitStack() as stack:
        if args.directory is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-failover-"))
        else:
            args.directory.mkdir(parents=True, exist_ok=True)
            tmp = str(args.directory)
        zookeeper = ZooKeeperServer(Path(tmp) / "zookeeper")
        zookeeper.start()
        try:
            cluster = LocalCluster(
                Path(tmp) / "cluster",
                4,
                zookeeper=zookeeper,
                kafka_ports=[0, 0, 0, 0],
                overrides=dict(o.split("=", 1) for o in args.override),
            )
            cluster.start()
            try:
                with FailoverRun(
                    cluster, args.clients.split(","), rdkafka_log=args.rdkafka_debug
                ) as run:
                    for _ in range(args.kills):
                        run.kill_leader()
                    for _ in range(args.shutdowns):
                        run.shut_down_leader()
                    for _ in range(args.controller_kills):
                        run.kill_controller()
                    result["records"] = run.check_records()
                    result["stall_ms"] = run.report()
            finally:
                cluster.kill_all()
            if args.overhead:
                result["throughput_ratio_on_over_off"] = measure_overhead(
                    Path(tmp), zookeeper, args.overhead_rounds
                )
        finally:
            zookeeper.stop()
    stalls: dict[str, dict[str, dict[str, float]]] = result["stall_ms"]  # type: ignore[assignment]
    for kind, by_client in stalls.items():
        for client, s in by_client.items():
            print(
                f"{kind:10s} {client:16s} n={s['n']:3.0f} p50 {s['p50']:7.1f} ms  "
                f"p99 {s['p99']:7.1f} ms  max {s['max']:7.1f} ms"
            )
    print("records", result["records"])
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
