"""Share groups (KIP-932) as a work queue, with confluent-kafka's ``ShareConsumer`` (librdkafka
2.16's share consumer), measured against classic consumers of the same library in the same run.

On a local three-node cluster (real ZooKeeper, nodes as processes, loopback, Kafka listeners on
every node), two things the share-groups issue asks for:

1. **Scaling one partition with slow records.** A one-partition topic (replication factor 3)
   holds ``--records`` records written in batches of four (``batch.num.messages`` 4: a share
   consumer acquires whole batches, so one 400-record batch would go to one consumer whole).
   Every consumer runs in its own process (``multiprocessing``, spawned) and works 2 ms per
   record (``--work-ms``, a sleep, as an application processing it). Three groups read the
   whole topic from the start, each a fresh group: one share consumer (``share_one``), four
   share consumers (``share_four``), both with implicit acknowledgement (the next poll accepts
   what the previous one returned) and ``max.poll.records`` ``--max-poll`` (8), and four
   classic consumers in one classic group (``classic``: one partition, so one member works,
   ``consume()`` of up to ``--max-poll``; the baseline). ``share_four_over_one`` is what the
   issue expects to be at least 3; ``share_four_over_classic`` the same against the classic
   group.
2. **Fetch throughput without work.** One share consumer (implicit acknowledgement, default
   ``max.poll.records``) against one classic ``Consumer`` (``consume()`` of up to 500), each a
   fresh group reading from the start a one-partition topic of ``--fetch-records`` records of
   ``--fetch-value-bytes`` bytes written with the producer's ordinary batching, no work per
   record: ``fetch_share_over_classic`` (span rates: the first fetch, and the joining before
   it, are outside both; librdkafka's classic consumer keeps fetching ahead into its queue,
   so by its first record most of a small topic is already here), and
   ``fetch_share_over_classic_from_subscribe``, from ``subscribe()`` to the last record
   (joining and the first fetch inside both; ``first_record_s`` says how long they took).

A rate is records over the time between the first and the last record processed (``span``),
and, for the figures that compare, over the stretch in which every member that processed
anything was processing (``steady``: from the last member's first record to the first
member's last record; for a classic group, whose partition may move once, its busiest
member's own rate): members join a share group one heartbeat apart at most, and a member
that starts late or runs dry early is not the protocol's throughput. ``in_poll_fraction``: of
the working members' time from their first record to their last, the share spent waiting
inside ``poll()`` / ``consume()`` (the rest is the work and the process's own overhead: a
share consumer waits there for its next ShareFetch, a classic one finds its records queued
ahead). ``members_working``: how
many members processed a record; ``processed_twice``: records processed more than once in a
group (implicit acknowledgement and no failures: 0). The share groups' heartbeat interval is
1 s (the brokers' ``group.share.heartbeat.interval.ms``); their ``share.auto.offset.reset`` is
``earliest`` (IncrementalAlterConfigs on the GROUP resource).

    python -m bench.share_groups [--records 4000] [--work-ms 2] [--max-poll 8] [--repeat 3]
                                 [--fetch-records 50000] [--fetch-value-bytes 100]

The default run takes about two minutes on two cores.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import statistics
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.synchronize import Event as EventType
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, ShareConsumer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from bench.cluster import _create_topic
from deploy.local.cluster import LocalCluster

QUEUE_TOPIC = "bench-share-queue"
"""One partition, batches of four: the work queue of (1)."""
FETCH_TOPIC = "bench-share-fetch"
"""One partition, the producer's ordinary batching: (2)."""
SCALING = ("share_one", "share_four", "classic")
FETCHES = ("share", "classic")
RUN_TIMEOUT_S = 300.0
"""A run that has not processed every record by then fails (a bound, not a measurement)."""


# -- a member (its own process) ----------------------------------------------------------------
def _member(
    kind: str,
    config: dict[str, Any],
    topic: str,
    work_s: float,
    max_poll: int,
    done: Any,
    stop: EventType,
    results: Any,
) -> None:
    """Reads ``topic`` until ``stop``: ``kind`` ``share`` (a ``ShareConsumer``, implicit
    acknowledgement) or ``classic`` (a ``Consumer``). Sleeps ``work_s`` per record, adds what it
    processed to ``done`` after every poll, and puts (processing times, record indexes, errors,
    seconds spent inside poll() from its first record to its last, when it subscribed) on
    ``results`` at the end."""
    times: list[float] = []
    indexes: list[int] = []
    errors: list[str] = []
    in_poll = in_poll_to_last = 0.0
    share = kind == "share"
    consumer: Any = ShareConsumer(config) if share else Consumer(config)
    subscribed = time.monotonic()
    try:
        consumer.subscribe([topic])
        while not stop.is_set():
            called = time.monotonic()
            if share:
                messages = consumer.poll(0.1)
            else:
                messages = consumer.consume(num_messages=max_poll, timeout=0.1)
            if times:  # from its first record on: waits that are not the queue's start
                in_poll += time.monotonic() - called
            processed = 0
            for m in messages:
                err = m.error()
                if err is not None:
                    if err.code() != KafkaError._PARTITION_EOF:
                        errors.append(str(err))
                    continue
                if work_s:
                    time.sleep(work_s)  # the record's work, not a wait on anything
                times.append(time.monotonic())
                indexes.append(int(m.value()))
                processed += 1
            if processed:
                in_poll_to_last = in_poll  # polls after its last record are not its work's
                with done.get_lock():
                    done.value += processed
    except Exception as exc:
        errors.append(repr(exc))
    finally:
        consumer.close()
        results.put((times, indexes, errors, in_poll_to_last, subscribed))


@dataclass(frozen=True, slots=True)
class Run:
    """What the members of one group processed: per member, its processing times (monotonic,
    comparable across processes on one machine) and record indexes."""

    times: list[list[float]]
    indexes: list[list[int]]
    in_poll: list[float]
    """Per member, seconds inside poll() / consume() from its first record to its last."""
    subscribed: list[float]
    """Per member, when it called subscribe()."""

    def describe(self) -> str:
        """Per member: records processed, from / to (seconds after the group's first record)."""
        start = min((t[0] for t in self.times if t), default=0.0)
        return ", ".join(
            f"{len(t)} in {t[0] - start:.2f}..{t[-1] - start:.2f} s" if t else "0"
            for t in self.times
        )

    def figures(self, prefix: str) -> dict[str, float]:
        working = [t for t in self.times if t]
        first = min(t[0] for t in working)
        last = max(t[-1] for t in working)
        steady_from = max(t[0] for t in working)
        steady_to = min(t[-1] for t in working)
        every = [i for idx in self.indexes for i in idx]
        out = {
            "processed": len(every),
            "processed_twice": len(every) - len(set(every)),
            "members_working": len(working),
            "span_s": round(last - first, 3),
            "span_rate": round(len(set(every)) / max(last - first, 1e-6), 1),
            # from the first subscribe() on: joining and the first fetch included
            "first_record_s": round(first - min(self.subscribed), 3),
            "from_subscribe_rate": round(len(set(every)) / (last - min(self.subscribed)), 1),
            # of the working members' time from their first record to their last, the share
            # spent waiting inside poll() (the rest: the work and this process's own overhead)
            "in_poll_fraction": round(
                sum(p for t, p in zip(self.times, self.in_poll, strict=True) if t)
                / max(sum(t[-1] - t[0] for t in working), 1e-6),
                3,
            ),
        }
        in_steady = sum(1 for t in working for x in t if steady_from <= x <= steady_to)
        if steady_to - steady_from > 0.2 and len(working) > 1:
            out["steady_rate"] = round(in_steady / (steady_to - steady_from), 1)
        else:  # one member (or a classic partition handed over): the busiest member's own rate
            busiest = max(working, key=len)
            out["steady_rate"] = round(len(busiest) / max(busiest[-1] - busiest[0], 1e-6), 1)
        return {f"{prefix}_{k}": v for k, v in out.items()}


def run_group(
    kind: str,
    members: int,
    bootstrap: str,
    group: str,
    topic: str,
    count: int,
    work_ms: float,
    max_poll: int | None,
) -> Run:
    """``members`` processes of ``kind`` in a fresh ``group`` read ``topic``'s ``count`` records
    from the start; returns once every record was processed (or fails after RUN_TIMEOUT_S)."""
    ctx = multiprocessing.get_context("spawn")
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group}
    if kind == "share":
        set_group_configs(bootstrap, group, share_auto_offset_reset="earliest")
        if max_poll is not None:
            config["max.poll.records"] = max_poll
    else:
        config.update({"auto.offset.reset": "earliest", "enable.partition.eof": False})
    done = ctx.Value("q", 0)
    stop = ctx.Event()
    results = ctx.Queue()
    procs = [
        ctx.Process(
            target=_member,
            args=(kind, config, topic, work_ms / 1000.0, max_poll or 500, done, stop, results),
            name=f"{group}-{i}",
            daemon=True,
        )
        for i in range(members)
    ]
    for p in procs:
        p.start()
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while done.value < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{group}: {done.value} of {count} records processed")
            if not any(p.is_alive() for p in procs):
                break
            stop.wait(0.05)  # the parent's progress check; the figures come from the members
    finally:
        stop.set()
        got = [results.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=60)
    errors = [e for g in got for e in g[2]]
    if errors:
        raise RuntimeError(f"{group}: {errors[:3]}")
    run = Run([g[0] for g in got], [g[1] for g in got], [g[3] for g in got], [g[4] for g in got])
    print(f"  {group}: {run.describe()}", flush=True)
    processed = {i for idx in run.indexes for i in idx}
    if len(processed) < count:
        raise RuntimeError(f"{group}: {len(processed)} of {count} records processed")
    return run


# -- the cluster and its topics ----------------------------------------------------------------
def set_group_configs(bootstrap: str, group: str, **configs: str) -> None:
    """Sets ``group``'s configs (IncrementalAlterConfigs on the GROUP resource)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(
        ResourceType.GROUP,
        group,
        incremental_configs=[
            ConfigEntry(name.replace("_", "."), value, incremental_operation=AlterConfigOpType.SET)
            for name, value in configs.items()
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def produce(bootstrap: str, topic: str, count: int, size: int, **config: Any) -> None:
    """Writes ``count`` records whose values are their indexes (padded with spaces to ``size``
    bytes), acks=all, idempotent (a retried batch is not written twice)."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, **config}
    )
    failures: list[str] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    for i in range(count):
        while True:
            try:
                producer.produce(topic, (b"%d" % i).ljust(size), on_delivery=report)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    left = producer.flush(120)
    if left or failures:
        raise RuntimeError(f"producing to {topic}: {left} undelivered, {failures[:3]}")


def _cluster(root: Path) -> LocalCluster:
    overrides = {
        "offsets.topic.num.partitions": "3",
        "group.share.heartbeat.interval.ms": "1000",
        "group.initial.rebalance.delay.ms": "0",
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


# -- the run -----------------------------------------------------------------------------------
def one_round(r: int, bootstrap: str, args: argparse.Namespace) -> dict[str, float]:
    figures: dict[str, float] = {}
    scaling = {
        "share_one": ("share", 1, args.max_poll),
        "share_four": ("share", 4, args.max_poll),
        "classic": ("classic", 4, args.max_poll),
    }
    order = SCALING[r % len(SCALING) :] + SCALING[: r % len(SCALING)]
    for name in order:
        kind, members, max_poll = scaling[name]
        run = run_group(
            kind,
            members,
            bootstrap,
            f"bench-{name}-{r}",
            QUEUE_TOPIC,
            args.records,
            args.work_ms,
            max_poll,
        )
        figures.update(run.figures(name))
    for kind in FETCHES if r % 2 == 0 else FETCHES[::-1]:
        group = f"bench-fetch-{kind}-{r}"
        run = run_group(kind, 1, bootstrap, group, FETCH_TOPIC, args.fetch_records, 0.0, None)
        figures.update(run.figures(f"fetch_{kind}"))
    return figures


def ratios(f: dict[str, float]) -> dict[str, float]:
    out = {
        "share_four_over_one": f["share_four_steady_rate"] / f["share_one_steady_rate"],
        "share_four_over_classic": f["share_four_steady_rate"] / f["classic_steady_rate"],
        "share_one_over_classic": f["share_one_steady_rate"] / f["classic_steady_rate"],
        "share_four_over_one_span": f["share_four_span_rate"] / f["share_one_span_rate"],
        "fetch_share_over_classic": f["fetch_share_span_rate"] / f["fetch_classic_span_rate"],
        "fetch_share_over_classic_from_subscribe": f["fetch_share_from_subscribe_rate"]
        / f["fetch_classic_from_subscribe_rate"],
    }
    return {k: round(v, 3) for k, v in out.items()}


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="python -m bench.share_groups")
    parser.add_argument("--records", type=int, default=4000, help="records of the work queue")
    parser.add_argument("--work-ms", type=float, default=2.0, help="work per record (a sleep)")
    parser.add_argument("--max-poll", type=int, default=8, help="share max.poll.records")
    parser.add_argument("--fetch-records", type=int, default=50_000, help="records of (2)")
    parser.add_argument("--fetch-value-bytes", type=int, default=100, help="their size")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    started = time.monotonic()
    rounds: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        cluster = _cluster(Path(tmp))
        try:
            bootstrap = cluster.kafka_bootstrap_servers
            for topic in (QUEUE_TOPIC, FETCH_TOPIC):
                _create_topic(cluster.nodes[0].address, 3, topic=topic, partitions=1)
            produce(bootstrap, QUEUE_TOPIC, args.records, 0, **{"batch.num.messages": 4})
            produce(bootstrap, FETCH_TOPIC, args.fetch_records, args.fetch_value_bytes)
            for r in range(max(1, args.repeat)):
                figures = one_round(r, bootstrap, args)
                figures.update(ratios(figures))
                print(f"round {r}: {figures}", flush=True)
                rounds.append(figures)
        finally:
            cluster.stop()
    out: dict[str, Any] = {
        "records": args.records,
        "work_ms": args.work_ms,
        "max_poll_records": args.max_poll,
        "fetch_records": args.fetch_records,
        "fetch_value_bytes": args.fetch_value_bytes,
        "repeat": len(rounds),
        "consumers": "processes",
    }
    for key in rounds[0]:
        out[key] = statistics.median(r[key] for r in rounds)
    out["rounds"] = rounds
    out["seconds"] = round(time.monotonic() - started, 1)
    report(out)
    return out


def report(out: dict[str, Any]) -> None:
    print(
        f"one partition, {out['records']} records in batches of 4, {out['work_ms']:g} ms of work "
        f"per record, max.poll.records {out['max_poll_records']}, medians of {out['repeat']} "
        "rounds (records/s)"
    )
    print(f"{'':28} {'steady':>8} {'span':>8} {'working':>8} {'twice':>6} {'in poll':>8}")
    labels = {
        "share_one": "1 share consumer",
        "share_four": "4 share consumers",
        "classic": "4 classic (1 partition)",
    }
    for name in SCALING:
        print(
            f"{labels[name]:28} {out[f'{name}_steady_rate']:>8.0f} {out[f'{name}_span_rate']:>8.0f}"
            f" {out[f'{name}_members_working']:>8.0f} {out[f'{name}_processed_twice']:>6.0f}"
            f" {out[f'{name}_in_poll_fraction']:>8.2f}"
        )
    print(
        f"  4 share over 1 share: {out['share_four_over_one']}x "
        f"(span {out['share_four_over_one_span']}x);"
        f" 4 share over classic: {out['share_four_over_classic']}x;"
        f" 1 share over classic: {out['share_one_over_classic']}x"
    )
    print(
        f"fetch, no work, one consumer, {out['fetch_records']} records of "
        f"{out['fetch_value_bytes']} bytes in the producer's ordinary batches: share "
        f"{out['fetch_share_span_rate']:.0f}/s, classic {out['fetch_classic_span_rate']:.0f}/s, "
        f"share over classic {out['fetch_share_over_classic']}x; from subscribe() (joining and "
        f"the first fetch included: first record after {out['fetch_share_first_record_s']:.2f} s "
        f"/ {out['fetch_classic_first_record_s']:.2f} s) "
        f"{out['fetch_share_from_subscribe_rate']:.0f}/s against "
        f"{out['fetch_classic_from_subscribe_rate']:.0f}/s, "
        f"{out['fetch_share_over_classic_from_subscribe']}x"
    )
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
