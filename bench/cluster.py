"""Cluster benchmark: produce and consume over gRPC, against a bare gRPC echo in the same run.

For 100-byte records in 64 KiB batches it measures, with ``--inflight`` concurrent producers:

* one node, replication factor 1, acks=1;
* three nodes, replication factor 3, min.insync.replicas 2, acks=-1;
* a consumer reading the replication-factor-3 topic back from its leader (1 MiB fetches);

each as records/s, MB/s and p50 / p99 request latency, and as a ratio to a bare gRPC echo
server (a separate process, like a node, whose Produce handler returns at once; consumer reads
against an echo Fetch handler returning a prepared payload of the same size). Nodes and echo
run on loopback. The machine is shared and noisy, so each produce figure is the fastest of
``--repeat`` timed runs, and the echo's the fastest of its runs before, between and after the
clusters. It ends with one JSON line holding every figure.

    python -m bench.cluster [--batches 400] [--inflight 4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent import futures
from pathlib import Path

import grpc

from deploy.local.cluster import ROOT, LocalCluster
from deploy.local.zookeeper import free_port
from odradek.records import Record, build_batch, read_batches
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

RECORD_BYTES = 100
BATCH_BYTES = 64 * 1024
FETCH_BYTES = 1024 * 1024
TOPIC = "bench"
OPTIONS = [
    ("grpc.max_send_message_length", 128 * 1024 * 1024),
    ("grpc.max_receive_message_length", 128 * 1024 * 1024),
]


def make_batch() -> tuple[bytes, int]:
    """A client batch of 100-byte records, as close to 64 KiB as whole records allow."""
    value = os.urandom(RECORD_BYTES)
    records: list[Record] = []
    while True:
        candidate = [*records, Record(None, value)]
        if len(build_batch(candidate)) > BATCH_BYTES:
            break
        records = candidate
    return build_batch(records), len(records)


# -- the echo baseline ------------------------------------------------------------------------
class _Echo(pb_grpc.BrokerServicer):
    def __init__(self, fetch_payload: bytes) -> None:
        self._payload = fetch_payload

    def Produce(self, request, context):  # noqa: N802
        return pb.ProduceResponse(
            partitions=[
                pb.ProducePartitionResponse(topic=p.topic, partition=p.partition, base_offset=0)
                for p in request.partitions
            ]
        )

    def Fetch(self, request, context):  # noqa: N802
        return pb.FetchResponse(
            partitions=[
                pb.FetchPartitionResponse(
                    topic=p.topic, partition=p.partition, records=self._payload
                )
                for p in request.partitions
            ]
        )

    def ListOffsets(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "echo")

    def Metadata(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "echo")

    def DeleteRecords(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "echo")


def serve_echo(port: int, fetch_bytes: int) -> None:
    """Runs the echo server (in its own process) until killed."""
    batch, _ = make_batch()
    payload = (batch * (fetch_bytes // len(batch) + 1))[:fetch_bytes]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=OPTIONS)
    pb_grpc.add_BrokerServicer_to_server(_Echo(payload), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    print("echo ready", flush=True)
    server.wait_for_termination()


# -- measuring --------------------------------------------------------------------------------
def run_producers(
    stub: pb_grpc.BrokerStub, batch: bytes, batches: int, inflight: int, acks: int
) -> tuple[float, list[float]]:
    """Sends ``batches`` produce requests from ``inflight`` threads; (seconds, latencies).

    A warm-up of ``4 * inflight`` requests goes first and is not counted, for the echo and the
    nodes alike: it opens the connections and, on a new topic, lets the followers start
    fetching, which would otherwise put a one-off wait of a fetch back-off into the figures."""
    if batches > 0:
        _send_all(stub, batch, 4 * inflight, inflight, acks)
    return _send_all(stub, batch, batches, inflight, acks)


def _send_all(
    stub: pb_grpc.BrokerStub, batch: bytes, batches: int, inflight: int, acks: int
) -> tuple[float, list[float]]:
    latencies: list[float] = []
    lock = threading.Lock()
    counter = iter(range(batches))
    errors: list[str] = []

    def worker() -> None:
        while True:
            with lock:
                if next(counter, None) is None:
                    return
            request = pb.ProduceRequest(
                acks=acks,
                timeout_ms=30_000,
                partitions=[pb.ProducePartitionData(topic=TOPIC, partition=0, records=batch)],
            )
            start = time.perf_counter()
            response = stub.Produce(request, timeout=60)
            elapsed = time.perf_counter() - start
            code = response.partitions[0].error_code if response.partitions else 0
            with lock:
                latencies.append(elapsed)
                if code:
                    errors.append(f"error code {code}: {response.partitions[0].error_message}")

    threads = [threading.Thread(target=worker) for _ in range(inflight)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"{len(errors)} produce requests failed, first: {errors[0]}")
    return seconds, latencies


def run_consumer(stub: pb_grpc.BrokerStub, end_offset: int | None, requests: int) -> float:
    """Fetches from offset 0 until ``end_offset`` (or ``requests`` fetches); the seconds."""
    offset = 0
    start = time.perf_counter()
    for _ in range(requests if end_offset is None else 10**9):
        if end_offset is not None and offset >= end_offset:
            break
        response = stub.Fetch(
            pb.FetchRequest(
                replica_id=-1,
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=FETCH_BYTES,
                partitions=[
                    pb.FetchPartition(
                        topic=TOPIC,
                        partition=0,
                        fetch_offset=offset,
                        partition_max_bytes=FETCH_BYTES,
                        current_leader_epoch=-1,
                    )
                ],
            ),
            timeout=60,
        )
        p = response.partitions[0]
        if p.error_code:
            raise RuntimeError(f"fetch failed: {p.error_code} {p.error_message}")
        if end_offset is not None:
            for b in read_batches(p.records):
                offset = b.last_offset + 1
    return time.perf_counter() - start


def figures_for(
    name: str, seconds: float, latencies: list[float], batches: int, records: int, size: int
) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        f"{name}_records_per_s": round(batches * records / seconds),
        f"{name}_mb_per_s": round(batches * size / seconds / 1e6, 2),
        f"{name}_p50_ms": round(statistics.median(ordered) * 1000, 2),
        f"{name}_p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
    }


def _create_topic(address: str, replication_factor: int) -> None:
    admin = pb_grpc.AdminStub(grpc.insecure_channel(address, options=OPTIONS))
    response = admin.CreateTopics(
        pb.CreateTopicsRequest(
            topics=[
                pb.CreatableTopic(
                    name=TOPIC,
                    num_partitions=1,
                    replication_factor=replication_factor,
                    configs={"min.insync.replicas": str(min(2, replication_factor))},
                )
            ],
            timeout_ms=30_000,
        ),
        timeout=60,
    )
    result = response.topics[0]
    if result.error_code:
        raise RuntimeError(f"create topic failed: {result.error_code} {result.error_message}")


def _leader_stub(cluster: LocalCluster) -> pb_grpc.BrokerStub:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for node in cluster.nodes:
            stub = pb_grpc.BrokerStub(grpc.insecure_channel(node.address, options=OPTIONS))
            md = stub.Metadata(pb.MetadataRequest(topics=[TOPIC]), timeout=10)
            for t in md.topics:
                for p in t.partitions:
                    if p.leader >= 0 and len(p.isr) == len(p.replicas):
                        leader = next(b for b in md.brokers if b.node_id == p.leader)
                        return pb_grpc.BrokerStub(
                            grpc.insecure_channel(f"{leader.host}:{leader.port}", options=OPTIONS)
                        )
        time.sleep(0.2)
    raise TimeoutError("no leader with a full ISR")


def _with_cluster(
    base: Path, size: int, fn: Callable[[LocalCluster], dict[str, float]]
) -> dict[str, float]:
    cluster = LocalCluster(base / f"cluster-{size}", size)
    cluster.start()
    try:
        return fn(cluster)
    finally:
        cluster.stop()


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster")
    parser.add_argument("--batches", type=int, default=400)
    parser.add_argument("--inflight", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per cluster")
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    batch, records = make_batch()
    size = len(batch)
    out: dict[str, object] = {
        "record_bytes": RECORD_BYTES,
        "batch_bytes": size,
        "records_per_batch": records,
        "batches": args.batches,
        "inflight": args.inflight,
        "repeat": args.repeat,
    }

    def fastest_run(name: str, stub: pb_grpc.BrokerStub, acks: int) -> dict[str, float]:
        runs = []
        for _ in range(max(1, args.repeat)):
            seconds, lat = run_producers(stub, batch, args.batches, args.inflight, acks=acks)
            runs.append(figures_for(name, seconds, lat, args.batches, records, size))
        return max(runs, key=lambda run: run[f"{name}_records_per_s"])

    port = free_port()
    echo = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from bench.cluster import serve_echo; serve_echo({port}, {FETCH_BYTES})",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    # The echo runs before, between and after the clusters, and every ratio is taken against
    # its fastest run: load from other processes on a shared machine comes and goes, and a
    # baseline measured only while the machine was busy would flatter the nodes.
    echo_runs: list[dict[str, float]] = []
    echo_consume: list[float] = []
    try:
        assert echo.stdout is not None
        echo.stdout.readline()
        echo_stub = pb_grpc.BrokerStub(grpc.insecure_channel(f"127.0.0.1:{port}", options=OPTIONS))
        consumer_requests = max(1, args.batches * size // FETCH_BYTES)

        def measure_echo() -> None:
            seconds, lat = run_producers(echo_stub, batch, args.batches, args.inflight, acks=1)
            echo_runs.append(figures_for("echo_produce", seconds, lat, args.batches, records, size))
            echo_s = run_consumer(echo_stub, None, consumer_requests)
            echo_consume.append(round(consumer_requests * FETCH_BYTES / echo_s / 1e6, 2))

        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            base = Path(tmp)

            def rf1(cluster: LocalCluster) -> dict[str, float]:
                _create_topic(cluster.nodes[0].address, 1)
                return fastest_run("rf1_acks1", _leader_stub(cluster), acks=1)

            def rf3(cluster: LocalCluster) -> dict[str, float]:
                _create_topic(cluster.nodes[0].address, 3)
                stub = _leader_stub(cluster)
                figures = fastest_run("rf3_acksall", stub, acks=-1)
                # everything produced, warm-ups included, read back once
                produced = max(1, args.repeat) * (args.batches + 4 * args.inflight)
                end = produced * records
                consume_s = run_consumer(stub, end, 0)
                figures["consume_records_per_s"] = round(end / consume_s)
                figures["consume_mb_per_s"] = round(produced * size / consume_s / 1e6, 2)
                return figures

            measure_echo()
            out.update(_with_cluster(base, 1, rf1))
            measure_echo()
            out.update(_with_cluster(base, 3, rf3))
            measure_echo()
    finally:
        echo.kill()
        echo.wait()
        if echo.stdout is not None:
            echo.stdout.close()

    fastest_echo: dict[str, float] = max(
        echo_runs, key=lambda run: run["echo_produce_records_per_s"]
    )
    out.update(fastest_echo)
    out["echo_produce_runs_records_per_s"] = [
        run["echo_produce_records_per_s"] for run in echo_runs
    ]
    out["echo_consume_mb_per_s"] = max(echo_consume)
    out["echo_consume_runs_mb_per_s"] = echo_consume

    echo_rps = float(out["echo_produce_records_per_s"])  # type: ignore[arg-type]
    out["rf1_ratio"] = round(float(out["rf1_acks1_records_per_s"]) / echo_rps, 3)  # type: ignore[arg-type]
    out["rf3_ratio"] = round(float(out["rf3_acksall_records_per_s"]) / echo_rps, 3)  # type: ignore[arg-type]
    out["consume_ratio"] = round(
        float(out["consume_mb_per_s"]) / float(out["echo_consume_mb_per_s"]),  # type: ignore[arg-type]
        3,
    )
    print(f"batch: {records} records of {RECORD_BYTES} bytes, {size} bytes; {args.batches} batches")
    print(
        f"echo runs (before, between, after the clusters): "
        f"{out['echo_produce_runs_records_per_s']} records/s, "
        f"{out['echo_consume_runs_mb_per_s']} MB/s fetched; ratios use the fastest"
    )
    for name in ("echo_produce", "rf1_acks1", "rf3_acksall"):
        print(
            f"{name:>13}: {out[name + '_records_per_s']:>10} records/s "
            f"{out[name + '_mb_per_s']:>8} MB/s  p50 {out[name + '_p50_ms']} ms  "
            f"p99 {out[name + '_p99_ms']} ms"
        )
    print(
        f"      consume: {out['consume_records_per_s']:>10} records/s {out['consume_mb_per_s']:>8} "
        f"MB/s (echo {out['echo_consume_mb_per_s']} MB/s)"
    )
    print(
        f"ratios to the echo: rf1 acks=1 {out['rf1_ratio']} (target >= 0.5), "
        f"rf3 acks=-1 {out['rf3_ratio']} (target >= 0.25), consume {out['consume_ratio']}"
    )
    print(json.dumps(out, sort_keys=True))
    return out


if __name__ == "__main__":
    main()
