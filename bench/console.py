"""Console benchmark: what an operator waits for in ``odradek console``, beside the SDK calls
beneath it, in the same run.

On a local three-node cluster (real ZooKeeper, nodes as processes, loopback) with the real
``odradek console`` process, over HTTP (httpx, the way a browser asks):

* the topics page with ``--topics`` topics (1,000), beside the SDK calls it makes (metadata of
  every topic, the offsets of every partition, and every broker's log dirs for the sizes) —
  the page's own cost is the ratio;
* a seek to the middle offset of a ``--small`` (10,000) and a ``--big`` (10,000,000) record
  partition: the offset index makes it constant, so the ratio of the two is about 1;
* the live tail's latency from a producer's ``send()`` (acks=-1) to the record arriving on the
  page's event stream, p50 and p99, beside a plain SDK consumer's send-to-poll latency (both
  include the produce: a record may reach the page before its producer has read the ack);
* the console's RSS while its tail carries ``--tail-rate`` (10,000) records/s for
  ``--tail-s`` (60) seconds, beside its RSS before: bounded if the peak does not grow with time.

It ends with one JSON line.

    python -m bench.console [--topics 1000] [--big 10000000] [--tail-s 60]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from deploy.local.cluster import LocalCluster
from odradek import Admin, Consumer, NewTopic, Producer, TopicPartition
from odradek.client.connection import ConnectionPool
from odradek.client.metadata import MetadataCache
from odradek.clock import SystemClock
from odradek.console.offsets import partition_offsets


def start_console(bootstrap: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "odradek",
            "--bootstrap-server",
            bootstrap,
            "console",
            "--listen",
            "127.0.0.1:0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if "http://" not in line:
        process.kill()
        raise SystemExit(f"the console did not start: {line}")
    return process, line.split("odradek console: ", 1)[1].split()[0].rstrip("/")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def wait_leaders(admin: Admin, names: list[str]) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        meta = admin.cluster_metadata()
        if all(
            n in meta.topics and all(p.leader >= 0 for p in meta.topics[n].partitions)
            for n in names
        ):
            return
        time.sleep(0.2)
    raise SystemExit("topics without leaders")


def timed(fn: Any, repeat: int = 5) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def topics_page(client: httpx.Client, bootstrap: str, count: int) -> dict[str, float]:
    with Admin(bootstrap) as admin:
        names = [f"bench-topic-{i:04d}" for i in range(count)]
        for i in range(0, count, 100):
            chunk = names[i : i + 100]
            admin.create_topics([NewTopic(n, 1, 1) for n in chunk])
        wait_leaders(admin, names)
    clock = SystemClock()
    pool = ConnectionPool()
    cache = MetadataCache(bootstrap.split(","), pool, clock)
    admin = Admin(bootstrap)

    def sdk() -> None:
        meta = admin.cluster_metadata()
        tps = [
            TopicPartition(t.name, p.partition) for t in meta.topics.values() for p in t.partitions
        ]
        partition_offsets(pool, cache, clock, tps)
        admin.describe_log_dirs()

    def page() -> None:
        response = client.get("/topics")
        response.raise_for_status()
        assert response.text.count("bench-topic-") >= count

    page()  # warm: connections, templates
    sdk()
    sdk_s, page_s = timed(sdk), timed(page)
    admin.close()
    pool.close()
    return {
        "topics": count,
        "topics_page_s": page_s,
        "topics_sdk_s": sdk_s,
        "topics_page_ratio": page_s / sdk_s,
    }


def fill(bootstrap: str, topic: str, count: int) -> None:
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)])
        wait_leaders(admin, [topic])
    chunk = 50_000
    values = [b"v" * 90 + b"%09d" % i for i in range(chunk)]
    with Producer(bootstrap, linger_ms=20) as producer:
        pending = []
        for start in range(0, count, chunk):
            n = min(chunk, count - start)
            pending.append(producer.send_many(topic, values[:n], partition=0))
            if len(pending) > 8:
                pending.pop(0).result(timeout=300)
        for f in pending:
            f.result(timeout=300)


def seek(client: httpx.Client, topic: str, count: int) -> float:
    middle = count // 2

    def one() -> None:
        r = client.get(
            f"/api/topics/{topic}/messages",
            params={"partition": "0", "seek": "offset", "value": str(middle), "limit": "100"},
        )
        r.raise_for_status()
        assert r.json()["records"][0]["offset"] == middle

    one()
    return timed(one, 9)


def tail_latency(client: httpx.Client, bootstrap: str, samples: int) -> dict[str, float]:
    topic = "bench-tail"
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)])
        wait_leaders(admin, [topic])
    arrived: dict[int, float] = {}
    ready = threading.Event()

    def listen() -> None:
        with client.stream(
            "GET", f"/api/topics/{topic}/tail", params={"from": "0:0"}, timeout=None
        ) as r:
            ready.set()
            for line in r.iter_lines():
                if line.startswith("data: "):
                    now = time.perf_counter()
                    for rec in json.loads(line[6:]):
                        arrived[rec["offset"]] = now
                    if len(arrived) >= samples:
                        return

    t = threading.Thread(target=listen, daemon=True)
    t.start()
    ready.wait(30)
    latencies = []
    with Producer(bootstrap, linger_ms=0) as producer:
        for _ in range(samples):
            sent = time.perf_counter()
            meta = producer.send(topic, b"ping").result(timeout=30)
            while meta.offset not in arrived:
                time.sleep(0.0005)
            latencies.append(arrived[meta.offset] - sent)
            time.sleep(0.01)
    # the baseline: a plain SDK consumer polling the same topic
    base = []
    with (
        Producer(bootstrap, linger_ms=0) as producer,
        Consumer(bootstrap, fetch_max_wait_ms=500) as c,
    ):
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_end(tp)
        c.position(tp)
        for _ in range(samples):
            sent = time.perf_counter()
            meta = producer.send(topic, b"ping").result(timeout=30)
            got = False
            while not got:
                got = any(r.offset == meta.offset for r in c.poll(timeout_ms=1000))
            base.append(time.perf_counter() - sent)
    q = statistics.quantiles
    return {
        "tail_p50_ms": statistics.median(latencies) * 1000,
        "tail_p99_ms": q(latencies, n=100)[98] * 1000,
        "consumer_p50_ms": statistics.median(base) * 1000,
        "consumer_p99_ms": q(base, n=100)[98] * 1000,
    }


def tail_memory(
    client: httpx.Client, bootstrap: str, pid: int, rate: int, seconds: float
) -> dict[str, Any]:
    topic = "bench-tail-load"
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(topic, 3, 1)])
        wait_leaders(admin, [topic])
    received = [0]
    stop = threading.Event()

    def listen() -> None:
        with client.stream(
            "GET", f"/api/topics/{topic}/tail", params={"from": "0:0,1:0,2:0"}, timeout=None
        ) as r:
            for line in r.iter_lines():
                if line.startswith("data: "):
                    received[0] += len(json.loads(line[6:]))
                if stop.is_set():
                    return

    t = threading.Thread(target=listen, daemon=True)
    t.start()
    before = rss_kib(pid)
    samples = []
    sent = 0
    start = time.perf_counter()
    value = b"x" * 100
    with Producer(bootstrap, linger_ms=5) as producer:
        while (elapsed := time.perf_counter() - start) < seconds:
            due = int(elapsed * rate)
            if due > sent:
                producer.send_many(topic, [value] * (due - sent))
                sent = due
            samples.append((elapsed, rss_kib(pid)))
            time.sleep(0.05)
        producer.flush(timeout=60)
    deadline = time.perf_counter() + 60
    while received[0] < sent and time.perf_counter() < deadline:
        time.sleep(0.05)
    stop.set()
    half = [kib for s, kib in samples if s >= seconds / 2]
    first = [kib for s, kib in samples if s < seconds / 2]
    return {
        "tail_rate": rate,
        "tail_seconds": seconds,
        "tail_sent": sent,
        "tail_received": received[0],
        "rss_before_kib": before,
        "rss_peak_kib": max(kib for _, kib in samples),
        "rss_peak_first_half_kib": max(first),
        "rss_peak_second_half_kib": max(half),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.console")
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--big", type=int, default=10_000_000)
    parser.add_argument("--latency-samples", type=int, default=200)
    parser.add_argument("--tail-rate", type=int, default=10_000)
    parser.add_argument("--tail-s", type=float, default=60.0)
    args = parser.parse_args(argv)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cluster = LocalCluster(Path(tmp) / "cluster", 3)
        cluster.start()
        process = None
        try:
            bootstrap = cluster.bootstrap_servers
            with Admin(bootstrap) as admin:
                while len(admin.describe_cluster().brokers) < 3:
                    time.sleep(0.2)
            process, url = start_console(bootstrap)
            with httpx.Client(base_url=url, timeout=300) as client:
                client.get("/").raise_for_status()
                out.update(topics_page(client, bootstrap, args.topics))
                print(
                    f"topics page, {args.topics} topics: {out['topics_page_s'] * 1000:.0f} ms "
                    f"({out['topics_page_ratio']:.2f}x the SDK calls beneath it, "
                    f"{out['topics_sdk_s'] * 1000:.0f} ms)",
                    flush=True,
                )
                fill(bootstrap, "bench-small", args.small)
                fill(bootstrap, "bench-big", args.big)
                small, big = (
                    seek(client, "bench-small", args.small),
                    seek(client, "bench-big", args.big),
                )
                out.update(
                    {
                        "seek_small_records": args.small,
                        "seek_big_records": args.big,
                        "seek_small_ms": small * 1000,
                        "seek_big_ms": big * 1000,
                        "seek_ratio": big / small,
                    }
                )
                print(
                    f"seek to the middle: {small * 1000:.1f} ms at {args.small:,} records, "
                    f"{big * 1000:.1f} ms at {args.big:,} ({big / small:.2f}x)",
                    flush=True,
                )
                out.update(tail_latency(client, bootstrap, args.latency_samples))
                print(
                    "tail, produce to page: p50 {:.1f} ms, p99 {:.1f} ms (an SDK consumer: "
                    "p50 {:.1f} ms, p99 {:.1f} ms)".format(
                        out["tail_p50_ms"],
                        out["tail_p99_ms"],
                        out["consumer_p50_ms"],
                        out["consumer_p99_ms"],
                    ),
                    flush=True,
                )
                out.update(tail_memory(client, bootstrap, process.pid, args.tail_rate, args.tail_s))
                print(
                    "tail at {:,}/s for {:.0f} s: {:,} of {:,} records arrived; console RSS "
                    "{} MiB before, peak {} MiB in the first half, {} MiB in the second".format(
                        args.tail_rate,
                        args.tail_s,
                        out["tail_received"],
                        out["tail_sent"],
                        out["rss_before_kib"] // 1024,
                        out["rss_peak_first_half_kib"] // 1024,
                        out["rss_peak_second_half_kib"] // 1024,
                    ),
                    flush=True,
                )
        finally:
            if process is not None:
                process.terminate()
                process.wait(timeout=30)
                if process.stdout is not None:
                    process.stdout.close()
            cluster.stop()
    print(json.dumps(out, sort_keys=True))
    return out


if __name__ == "__main__":
    main()
