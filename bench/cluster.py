"""Cluster benchmark: produce and consume over gRPC, against a bare gRPC echo in the same run.

For 100-byte records in 64 KiB batches it measures, with ``--inflight`` concurrent producers:

* one node, replication factor 1, acks=1;
* three nodes, replication factor 3, min.insync.replicas 2, acks=-1;
* a consumer reading the replication-factor-3 topic back from its leader (1 MiB fetches);

each as records/s, MB/s and p50 / p99 request latency, and as a ratio to a bare gRPC echo
server (a separate process, like a node, whose Produce handler returns at once; consumer reads
against an echo Fetch handler returning a prepared payload of the same size). Nodes and echo
run on loopback.

The machine is shared and its speed drifts by a factor of two or more within a minute, so a
baseline measured at another moment than its figure says little. Every figure is therefore
measured in ``--repeat`` rounds, each bracketed by an echo run just before and just after it;
a round's ratio is its figure over the mean of those two echo runs, and the ratio reported is
the median round's (every round's ratio is printed too). It ends with one JSON line holding
every figure.

    python -m bench.cluster [--batches 400] [--inflight 4] [--repeat 5]
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

    def InitProducerId(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "echo")


def serve_echo(port: int, fetch_bytes: int) -> None:
    """Runs the echo server (in its own process) until killed."""
    batch, _ = make_batch()
    payload = (batch * (fetch_bytes // len(batch) + 1))[:fetch_bytes]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=OPTIONS)
    pb_grpc.add_BrokerServicer_to_server(_Echo(payload), server)  # type: ignore[abstract]
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    print("echo ready", flush=True)
    server.wait_for_termination()


# -- measuring --------------------------------------------------------------------------------
def run_producers(
    stub: pb_grpc.BrokerStub,
    batch: bytes,
    batches: int,
    inflight: int,
    acks: int,
    topic: str = TOPIC,
) -> tuple[float, list[float]]:
    """Sends ``batches`` produce requests from ``inflight`` threads; (seconds, latencies).

    A warm-up of ``4 * inflight`` requests goes first and is not counted, for the echo and the
    nodes alike: it opens the connections and, on a new topic, lets the followers start
    fetching, which would otherwise put a one-off wait of a fetch back-off into the figures."""
    if batches > 0:
        _send_all(stub, batch, 4 * inflight, inflight, acks, topic)
    return _send_all(stub, batch, batches, inflight, acks, topic)


def _send_all(
    stub: pb_grpc.BrokerStub, batch: bytes, batches: int, inflight: int, acks: int, topic: str
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
                partitions=[pb.ProducePartitionData(topic=topic, partition=0, records=batch)],
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


def run_consumer(
    stub: pb_grpc.BrokerStub, end_offset: int | None, requests: int, topic: str = TOPIC
) -> float:
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
                        topic=topic,
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


def _create_topic(
    address: str, replication_factor: int, topic: str = TOPIC, partitions: int = 1
) -> None:
    admin = pb_grpc.AdminStub(grpc.insecure_channel(address, options=OPTIONS))
    response = admin.CreateTopics(
        pb.CreateTopicsRequest(
            topics=[
                pb.CreatableTopic(
                    name=topic,
                    num_partitions=partitions,
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


def _leader_stub(cluster: LocalCluster, topic: str = TOPIC) -> pb_grpc.BrokerStub:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for node in cluster.nodes:
            stub = pb_grpc.BrokerStub(grpc.insecure_channel(node.address, options=OPTIONS))
            md = stub.Metadata(pb.MetadataRequest(topics=[topic]), timeout=10)
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
    base: Path, size: int, fn: Callable[[LocalCluster], dict[str, object]]
) -> dict[str, object]:
    cluster = LocalCluster(base / f"cluster-{size}", size)
    cluster.start()
    try:
        return fn(cluster)
    finally:
        cluster.stop()


def _ratio_rounds(
    ratio_key: str,
    measure: Callable[[], dict[str, float]],
    echo: Callable[[], dict[str, float]],
    key: str,
    echo_key: str,
    rounds: int,
) -> tuple[dict[str, float], list[float], list[dict[str, float]]]:
    """``rounds`` runs of ``measure``, each bracketed by echo runs just before and after it.

    Each round's ratio is its figure over the mean of the two echo runs around it, so a
    baseline and its run see the same load from the rest of the (shared, noisy) machine.
    Returns the round with the median ratio, every round's ratio, and the echo runs."""
    echo_runs = [echo()]
    results: list[tuple[float, dict[str, float]]] = []
    for _ in range(max(1, rounds)):
        figures = measure()
        echo_runs.append(echo())
        baseline = (echo_runs[-2][echo_key] + echo_runs[-1][echo_key]) / 2
        results.append((figures[key] / baseline, figures))
    ratios = [round(ratio, 3) for ratio, _ in results]
    median_round = sorted(results, key=lambda r: r[0])[(len(results) - 1) // 2]
    figures = dict(median_round[1])
    figures[ratio_key] = round(median_round[0], 3)
    return figures, ratios, echo_runs


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster")
    parser.add_argument("--batches", type=int, default=400)
    parser.add_argument("--inflight", type=int, default=4)
    parser.add_argument(
        "--repeat", type=int, default=5, help="timed rounds per figure, each between echo runs"
    )
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    batch, records = make_batch()
    size = len(batch)
    rounds = max(1, args.repeat)
    out: dict[str, object] = {
        "record_bytes": RECORD_BYTES,
        "batch_bytes": size,
        "records_per_batch": records,
        "batches": args.batches,
        "inflight": args.inflight,
        "repeat": rounds,
    }

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
    echo_produce_runs: list[dict[str, float]] = []
    echo_consume_runs: list[dict[str, float]] = []
    try:
        assert echo.stdout is not None
        echo.stdout.readline()
        echo_stub = pb_grpc.BrokerStub(grpc.insecure_channel(f"127.0.0.1:{port}", options=OPTIONS))
        consumer_requests = max(1, args.batches * size // FETCH_BYTES)

        def echo_produce() -> dict[str, float]:
            seconds, lat = run_producers(echo_stub, batch, args.batches, args.inflight, acks=1)
            return figures_for("echo_produce", seconds, lat, args.batches, records, size)

        def echo_consume() -> dict[str, float]:
            seconds = run_consumer(echo_stub, None, consumer_requests)
            return {
                "echo_consume_mb_per_s": round(consumer_requests * FETCH_BYTES / seconds / 1e6, 2)
            }

        def produce_rounds(
            name: str, ratio: str, stub: pb_grpc.BrokerStub, acks: int
        ) -> dict[str, object]:
            def measure() -> dict[str, float]:
                seconds, lat = run_producers(stub, batch, args.batches, args.inflight, acks=acks)
                return figures_for(name, seconds, lat, args.batches, records, size)

            figures, ratios, echoes = _ratio_rounds(
                ratio,
                measure,
                echo_produce,
                f"{name}_records_per_s",
                "echo_produce_records_per_s",
                rounds,
            )
            echo_produce_runs.extend(echoes)
            return {**figures, f"{ratio}_rounds": ratios}

        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            base = Path(tmp)

            def rf1(cluster: LocalCluster) -> dict[str, object]:
                _create_topic(cluster.nodes[0].address, 1)
                return produce_rounds("rf1_acks1", "rf1_ratio", _leader_stub(cluster), acks=1)

            def rf3(cluster: LocalCluster) -> dict[str, object]:
                _create_topic(cluster.nodes[0].address, 3)
                stub = _leader_stub(cluster)
                figures = produce_rounds("rf3_acksall", "rf3_ratio", stub, acks=-1)
                # everything produced, warm-ups included, read back from the leader each round
                produced = rounds * (args.batches + 4 * args.inflight)
                end = produced * records

                def consume() -> dict[str, float]:
                    seconds = run_consumer(stub, end, 0)
                    return {
                        "consume_records_per_s": round(end / seconds),
                        "consume_mb_per_s": round(produced * size / seconds / 1e6, 2),
                    }

                consumed, ratios, echoes = _ratio_rounds(
                    "consume_ratio",
                    consume,
                    echo_consume,
                    "consume_mb_per_s",
                    "echo_consume_mb_per_s",
                    rounds,
                )
                echo_consume_runs.extend(echoes)
                return {**figures, **consumed, "consume_ratio_rounds": ratios}

            out.update(_with_cluster(base, 1, rf1))
            out.update(_with_cluster(base, 3, rf3))
    finally:
        echo.kill()
        echo.wait()
        if echo.stdout is not None:
            echo.stdout.close()

    median_echo = sorted(echo_produce_runs, key=lambda r: r["echo_produce_records_per_s"])[
        (len(echo_produce_runs) - 1) // 2
    ]
    out.update(median_echo)
    out["echo_produce_runs_records_per_s"] = [
        run["echo_produce_records_per_s"] for run in echo_produce_runs
    ]
    consume_echoes = [run["echo_consume_mb_per_s"] for run in echo_consume_runs]
    out["echo_consume_mb_per_s"] = sorted(consume_echoes)[(len(consume_echoes) - 1) // 2]
    out["echo_consume_runs_mb_per_s"] = consume_echoes

    print(f"batch: {records} records of {RECORD_BYTES} bytes, {size} bytes; {args.batches} batches")
    print(
        f"echo produce runs (around every round): {out['echo_produce_runs_records_per_s']} "
        f"records/s; echo fetch runs {out['echo_consume_runs_mb_per_s']} MB/s"
    )
    for name in ("echo_produce", "rf1_acks1", "rf3_acksall"):
        print(
            f"{name:>13}: {out[name + '_records_per_s']:>10} records/s "
            f"{out[name + '_mb_per_s']:>8} MB/s  p50 {out[name + '_p50_ms']} ms  "
            f"p99 {out[name + '_p99_ms']} ms"
        )
    print(
        f"      consume: {out['consume_records_per_s']:>10} records/s {out['consume_mb_per_s']:>8} "
        f"MB/s (echo median {out['echo_consume_mb_per_s']} MB/s)"
    )
    print(
        f"round ratios to the echo runs around them: rf1 acks=1 {out['rf1_ratio_rounds']}, "
        f"rf3 acks=-1 {out['rf3_ratio_rounds']}, consume {out['consume_ratio_rounds']}"
    )
    print(
        f"median ratios: rf1 acks=1 {out['rf1_ratio']} (target >= 0.5), "
        f"rf3 acks=-1 {out['rf3_ratio']} (target >= 0.25), consume {out['consume_ratio']}"
    )
    print(json.dumps(out, sort_keys=True))
    return out


if __name__ == "__main__":
    main()
