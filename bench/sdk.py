"""SDK benchmark: what a user of ``odradek.Producer``, ``Consumer`` and the Spark reader gets,
beside what the broker takes from pre-built batches, in the same run.

On a local three-node cluster (real ZooKeeper, nodes as processes, loopback) and 100-byte
records, it measures:

* the broker's rate from pre-built 64 KiB batches (4 requests in flight, as ``bench/cluster.py``
  measures it) on a replication-factor-1 topic with acks=1 and a replication-factor-3 topic
  (min.insync.replicas 2) with acks=-1 — the baselines;
* the SDK producer's ``send()`` loop with its default settings, and its bulk path
  (``send_many`` in chunks of 10,000 values), on the same topics with the same acks;
* on the RF-1 topic, the ``send()`` loop with a per-record delivery callback
  (``send(topic, value, callback=cb)``, and ``send(...).add_done_callback(cb)``), each paired
  with the plain loop of the same round;
* p50 / p99 latency from ``send()`` to the record's result at half of the ``send()`` loop's own
  peak rate (a paced loop for ``--latency-s`` seconds);
* the producer's peak RSS while a loop sends 1 GB of records to a broker that answers each
  produce after 100 ms (a separate process; its peak RSS over its RSS before sending, beside
  ``buffer_memory``);
* one ``Consumer.poll()`` loop reading the RF-3 topic from the start, beside the broker's raw
  fetch rate of the same records (1 MiB fetches decoded to batch boundaries only);
* the Spark reader (``local[2]``, into the ``noop`` sink) on a four-partition topic of
  ``--spark-records`` records, beside one consumer reading the same records: a batch read, a
  streaming ``availableNow`` read in one trigger and in four, and a Spark job's own cost (see
  ``bench/spark.py``: reads much smaller than the default 4,000,000 records measure mostly
  that).

Every producer figure is measured in ``--repeat`` rounds, each right after its own baseline
run, and reported as the median round's ratio (the machine is shared and its speed drifts).
It ends with one JSON line.

    python -m bench.sdk [--records 300000] [--repeat 3] [--no-spark]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

from bench.cluster import _create_topic, _leader_stub, make_batch, run_consumer, run_producers
from deploy.local.cluster import ROOT, LocalCluster
from deploy.local.zookeeper import free_port
from odradek import Consumer, Producer, TopicPartition
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

RECORD_BYTES = 100
BASELINE_BATCHES = 200
INFLIGHT = 4
BULK_CHUNK = 10_000
SLOW_BROKER_DELAY_S = 0.1
LATENCY_SAMPLE = 16


# -- the producer's figures --------------------------------------------------------------------
def send_loop(servers: str, topic: str, acks: int, records: int, **settings: Any) -> float:
    """``records`` sends in a tight loop with the default settings (or ``settings``), then a
    flush; the records/s from the first send to the flush's return (a warm-up send goes
    first)."""
    value = os.urandom(RECORD_BYTES)
    with Producer(servers, acks=acks, **settings) as producer:
        producer.send(topic, value).result(timeout=60)
        send = producer.send
        start = time.perf_counter()
        for _ in range(records):
            send(topic, value)
        producer.flush()
        return records / (time.perf_counter() - start)


def callback_loop(
    servers: str, topic: str, acks: int, records: int, *, via_future: bool = False
) -> float:
    """The ``send()`` loop with a per-record delivery callback, as most Kafka programs learn of
    delivery: ``send(topic, value, callback=cb)`` (Kafka's ``send(record, callback)``), or with
    ``via_future`` ``send(topic, value).add_done_callback(cb)``; the callback counts the
    records that failed. Records/s; every callback has run when it returns."""
    value = os.urandom(RECORD_BYTES)
    failed = [0]
    called = [0]

    def delivered(future: Any) -> None:
        called[0] += 1
        if future.exception() is not None:
            failed[0] += 1

    with Producer(servers, acks=acks) as producer:
        producer.send(topic, value).result(timeout=60)
        send = producer.send
        start = time.perf_counter()
        if via_future:
            for _ in range(records):
                send(topic, value).add_done_callback(delivered)
        else:
            for _ in range(records):
                send(topic, value, callback=delivered)
        producer.flush()
        seconds = time.perf_counter() - start
    if called[0] != records or failed[0]:
        raise RuntimeError(f"{called[0]} callbacks for {records} records, {failed[0]} failed")
    return records / seconds


def bulk_loop(servers: str, topic: str, acks: int, records: int) -> float:
    """The same records through ``send_many`` in chunks of ``BULK_CHUNK``; records/s."""
    value = os.urandom(RECORD_BYTES)
    chunk = [value] * BULK_CHUNK
    with Producer(servers, acks=acks) as producer:
        producer.send(topic, value).result(timeout=60)
        start = time.perf_counter()
        pending = [producer.send_many(topic, chunk) for _ in range(max(1, records // BULK_CHUNK))]
        producer.flush()
        seconds = time.perf_counter() - start
        for p in pending:
            p.result(timeout=0)
        return len(pending) * BULK_CHUNK / seconds


def paced_latency(
    servers: str, topic: str, acks: int, rate: float, seconds: float, **settings: Any
) -> tuple[float, float]:
    """Send at ``rate`` records/s for ``seconds``; p50 and p99 ms from send() to result.

    Every ``LATENCY_SAMPLE``-th record is timed (a callback on each would cost the loop more
    than the producer does); the loop sleeps whenever it is ahead of its schedule."""
    value = os.urandom(RECORD_BYTES)
    latencies: list[float] = []
    with Producer(servers, acks=acks, **settings) as producer:
        producer.send(topic, value).result(timeout=60)
        send = producer.send
        total = int(rate * seconds)
        step = 1.0 / rate
        start = time.perf_counter()
        for i in range(total):
            if i % LATENCY_SAMPLE:
                send(topic, value)
                continue
            now = time.perf_counter()
            due = start + i * step
            if due > now:
                time.sleep(due - now)
                now = time.perf_counter()

            def done(_: object, sent: float = now) -> None:
                latencies.append(time.perf_counter() - sent)

            send(topic, value).add_done_callback(done)
        producer.flush()
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered) * 1000, p99 * 1000


# -- peak RSS against a slow broker ------------------------------------------------------------
class _SlowBroker(pb_grpc.BrokerServicer):
    """Answers metadata for one topic led by itself, and every produce after a delay."""

    def __init__(self, port: int) -> None:
        self._port = port

    def Metadata(self, request, context):  # noqa: N802
        return pb.MetadataResponse(
            brokers=[pb.BrokerInfo(node_id=1, host="127.0.0.1", port=self._port)],
            controller_id=1,
            topics=[
                pb.TopicMetadata(
                    name="slow",
                    partitions=[
                        pb.PartitionMetadata(
                            partition=p, leader=1, leader_epoch=0, replicas=[1], isr=[1]
                        )
                        for p in range(4)
                    ],
                )
            ],
        )

    def InitProducerId(self, request, context):  # noqa: N802
        return pb.InitProducerIdResponse(producer_id=1, producer_epoch=0)

    def Fetch(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "slow broker")

    def ListOffsets(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "slow broker")

    def DeleteRecords(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "slow broker")

    def Produce(self, request, context):  # noqa: N802
        time.sleep(SLOW_BROKER_DELAY_S)
        return pb.ProduceResponse(
            partitions=[
                pb.ProducePartitionResponse(topic=p.topic, partition=p.partition, base_offset=0)
                for p in request.partitions
            ]
        )


def serve_slow_broker(port: int) -> None:
    """In its own process: the slow broker on ``port`` until killed."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    pb_grpc.add_BrokerServicer_to_server(_SlowBroker(port), server)  # type: ignore[abstract]
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    print("slow broker ready", flush=True)
    server.wait_for_termination()


def rss_child(port: int, records: int) -> None:
    """In its own process: a producer with the default settings sending ``records`` records
    to the slow broker on ``port`` as fast as ``send()`` returns; prints its RSS before
    sending and its peak, in KiB."""
    value = os.urandom(RECORD_BYTES)
    with Producer(f"127.0.0.1:{port}") as producer:  # the defaults: idempotent, acks=-1
        producer.send("slow", value).result(timeout=60)
        before = _rss_kib()
        start = time.perf_counter()
        for _ in range(records):
            producer.send("slow", value)
        producer.flush()
        seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"rss_before_kib": before, "rss_peak_kib": peak, "seconds": seconds}))


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def peak_rss(records: int) -> dict[str, float]:
    """The producer's RSS growth sending ``records`` and twice as many records to the slow
    broker (separate processes): bounded memory shows as the same growth for both."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    broker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from bench.sdk import serve_slow_broker; serve_slow_broker({port})",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
    )
    try:
        assert broker.stdout is not None
        broker.stdout.readline()
        growth: list[float] = []
        peaks: list[float] = []
        for count in (records, 2 * records):
            out = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    f"from bench.sdk import rss_child; rss_child({port}, {count})",
                ],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
                check=True,
            )
            figures = json.loads(out.stdout.strip().splitlines()[-1])
            growth.append((figures["rss_peak_kib"] - figures["rss_before_kib"]) / 1024)
            peaks.append(figures["rss_peak_kib"] / 1024)
    finally:
        broker.kill()
        broker.wait()
        if broker.stdout is not None:
            broker.stdout.close()
    return {
        "rss_records_sent": records,
        "rss_mb_sent": round(records * RECORD_BYTES / 1e6),
        "rss_peak_mib": round(peaks[0], 1),
        "rss_growth_mib": round(growth[0], 1),
        "rss_growth_twice_the_records_mib": round(growth[1], 1),
        "rss_growth_over_buffer_memory": round(growth[0] / 32, 2),
    }


# -- the consumer's figures --------------------------------------------------------------------
def consumer_rate(servers: str, topic: str, end: int) -> float:
    """One ``Consumer`` polling ``topic``'s partition 0 from the start to ``end``; records/s."""
    with Consumer(servers) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        seen = 0
        start = time.perf_counter()
        while seen < end:
            seen += len(consumer.poll(timeout_ms=1000))
        return seen / (time.perf_counter() - start)


def end_offset(stub: pb_grpc.BrokerStub, topic: str) -> int:
    response = stub.ListOffsets(
        pb.ListOffsetsRequest(
            partitions=[pb.ListOffsetsPartition(topic=topic, partition=0, timestamp=-1)]
        ),
        timeout=30,
    )
    return int(response.partitions[0].offset)


# -- choosing the defaults ---------------------------------------------------------------------
SWEEP = [
    {"batch_size": 16_384, "linger_ms": 5},  # Kafka's producer defaults (4.0: linger 5 ms)
    {"batch_size": 65_536, "linger_ms": 5},
    {"batch_size": 262_144, "linger_ms": 5},
    {"batch_size": 1_048_576, "linger_ms": 5},
    {"batch_size": 1_048_576, "linger_ms": 0},
    {"batch_size": 1_048_576, "linger_ms": 20},
]


def sweep(servers: str, topic: str, acks: int, records: int, rate: float, seconds: float) -> None:
    """The settings the defaults were chosen among, each measured twice (interleaved): the
    send() loop's rate and p50/p99 latency at ``rate`` records/s. Prints one line each and a
    JSON line."""
    results: dict[str, list[tuple[float, float, float]]] = {}
    for _ in range(2):
        for settings in SWEEP:
            name = " ".join(f"{k}={v}" for k, v in settings.items())
            loop = send_loop(servers, topic, acks, records, **settings)
            p50, p99 = paced_latency(servers, topic, acks, rate, seconds, **settings)
            results.setdefault(name, []).append((loop, p50, p99))
    for name, runs in results.items():
        print(
            f"{name:>36}: send() loop {[round(r[0]) for r in runs]} records/s; at {rate:.0f}/s "
            f"p50 {[round(r[1], 1) for r in runs]} ms, p99 {[round(r[2], 1) for r in runs]} ms"
        )
    print(json.dumps({"sweep_topic": topic, "sweep_rate": rate, "sweep": results}))


# -- the run -----------------------------------------------------------------------------------
def _rounds(
    repeat: int, baseline: Callable[[], float], figures: dict[str, Callable[[], float]]
) -> dict[str, Any]:
    """``repeat`` rounds of the baseline followed by each figure; per figure the median round
    ratio (figure over that round's baseline), every round's ratio, and the median figures."""
    base_runs: list[float] = []
    runs: dict[str, list[float]] = {name: [] for name in figures}
    ratios: dict[str, list[float]] = {name: [] for name in figures}
    for _ in range(max(1, repeat)):
        base = baseline()
        base_runs.append(base)
        for name, measure in figures.items():
            value = measure()
            runs[name].append(value)
            ratios[name].append(round(value / base, 3))
    out: dict[str, Any] = {"baseline_records_per_s": round(statistics.median(base_runs))}
    for name in figures:
        out[f"{name}_records_per_s"] = round(statistics.median(runs[name]))
        out[f"{name}_ratio"] = statistics.median(ratios[name])
        out[f"{name}_ratio_rounds"] = ratios[name]
    return out


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="python -m bench.sdk")
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--latency-s", type=float, default=5.0)
    parser.add_argument("--rss-records", type=int, default=10_000_000)
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--spark-records", type=int, default=4_000_000)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument(
        "--sweep",
        type=float,
        metavar="RATE",
        help="instead: compare the candidate defaults (batch_size, linger_ms) on the RF 3 topic "
        "(send() loop rate, and latency at RATE records/s)",
    )
    args = parser.parse_args(argv)
    batch, per_batch = make_batch()
    out: dict[str, object] = {
        "record_bytes": RECORD_BYTES,
        "records": args.records,
        "repeat": args.repeat,
    }
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        cluster = LocalCluster(Path(tmp) / "cluster", 3)
        cluster.start()
        try:
            servers = cluster.bootstrap_servers
            address = cluster.nodes[0].address
            _create_topic(address, 1, "rf1")
            _create_topic(address, 3, "rf3")
            if args.sweep is not None:
                _leader_stub(cluster, "rf3")  # the topic is led, with a full ISR
                sweep(servers, "rf3", -1, args.records, args.sweep, args.latency_s)
                return out
            for rf, topic, acks in ((1, "rf1", 1), (3, "rf3", -1)):
                stub = _leader_stub(cluster, topic)

                def baseline(
                    stub: pb_grpc.BrokerStub = stub, topic: str = topic, acks: int = acks
                ) -> float:
                    seconds, _ = run_producers(stub, batch, BASELINE_BATCHES, INFLIGHT, acks, topic)
                    return BASELINE_BATCHES * per_batch / seconds

                def send(topic: str = topic, acks: int = acks) -> float:
                    return send_loop(servers, topic, acks, args.records)

                def bulk(topic: str = topic, acks: int = acks) -> float:
                    return bulk_loop(servers, topic, acks, args.records)

                def send_without_idempotence(topic: str = topic) -> float:
                    return send_loop(
                        servers,
                        topic,
                        -1,
                        args.records,
                        enable_idempotence=False,
                        max_in_flight_per_partition=5,
                    )

                def send_with_callback(topic: str = topic, acks: int = acks) -> float:
                    return callback_loop(servers, topic, acks, args.records)

                def send_add_done_callback(topic: str = topic, acks: int = acks) -> float:
                    return callback_loop(servers, topic, acks, args.records, via_future=True)

                measures: dict[str, Callable[[], float]] = {"send": send}
                if rf == 1:  # the delivery callback's cost: right after the plain loop
                    measures["send_callback"] = send_with_callback
                    measures["send_add_done_callback"] = send_add_done_callback
                measures["bulk"] = bulk
                if acks == -1:  # idempotence's cost: the same loop with it off, same in flight
                    measures["send_no_idempotence"] = send_without_idempotence
                figures = _rounds(args.repeat, baseline, measures)
                if acks == -1:
                    per_round = [
                        on / off
                        for on, off in zip(
                            figures["send_ratio_rounds"],
                            figures["send_no_idempotence_ratio_rounds"],
                            strict=True,
                        )
                    ]
                    figures["idempotence_ratio"] = round(statistics.median(per_round), 3)
                    figures["idempotence_ratio_rounds"] = [round(r, 3) for r in per_round]
                if rf == 1:
                    for name, loop in (
                        ("callback", "send_callback"),
                        ("add_done_callback", "send_add_done_callback"),
                    ):
                        paired = [
                            round(cb / plain, 3)
                            for cb, plain in zip(
                                figures[f"{loop}_ratio_rounds"],
                                figures["send_ratio_rounds"],
                                strict=True,
                            )
                        ]
                        figures[f"{name}_ratio"] = statistics.median(paired)
                        figures[f"{name}_ratio_rounds"] = paired
                out.update({f"rf{rf}_{name}": value for name, value in figures.items()})
                p50, p99 = paced_latency(
                    servers, topic, acks, figures["send_records_per_s"] / 2, args.latency_s
                )
                out[f"rf{rf}_half_load_records_per_s"] = round(figures["send_records_per_s"] / 2)
                out[f"rf{rf}_half_load_p50_ms"] = round(p50, 2)
                out[f"rf{rf}_half_load_p99_ms"] = round(p99, 2)
            stub = _leader_stub(cluster, "rf3")
            end = end_offset(stub, "rf3")
            broker_consume = end / run_consumer(stub, end, 0, "rf3")
            consumer = consumer_rate(servers, "rf3", end)
            out["consume_records"] = end
            out["broker_consume_records_per_s"] = round(broker_consume)
            out["consumer_records_per_s"] = round(consumer)
            out["consumer_ratio"] = round(consumer / broker_consume, 3)
            if not args.no_spark:
                out.update(spark_figures(cluster, args.spark_records))
        finally:
            cluster.stop()
    if args.rss_records:
        out.update(peak_rss(args.rss_records))
    report(out)
    return out


def spark_figures(cluster: LocalCluster, records: int) -> dict[str, object]:
    """The Spark reader (batch, and a streaming ``availableNow`` run) beside one SDK consumer
    on a four-partition topic: ``bench/spark.py``'s measurements on this run's cluster."""
    from bench import spark as spark_bench

    partitions = 4
    spark_bench.TOPIC = "spark"
    servers = cluster.bootstrap_servers
    _create_topic(cluster.nodes[0].address, 1, "spark", partitions=partitions)
    value = os.urandom(RECORD_BYTES)
    with Producer(servers, acks=1) as producer:  # the bulk path, sticky over the partitions
        chunk = [value] * BULK_CHUNK
        for _ in range(records // BULK_CHUNK):
            producer.send_many("spark", chunk)
        producer.flush()
    records = records // BULK_CHUNK * BULK_CHUNK
    consumer = records / spark_bench.consume(servers, records, partitions)
    spark = spark_bench.spark_session()
    try:
        import odradek.spark

        odradek.spark.register(spark)
        warm = json.dumps({"spark": {str(p): 1 for p in range(partitions)}})
        spark_bench.batch_read(spark, servers, warm)  # the JVM's and the workers' first run
        batch = records / spark_bench.batch_read(spark, servers)
        job_s = spark_bench.job_seconds(spark, servers, partitions)
        with tempfile.TemporaryDirectory() as checkpoint:
            spark_bench.warm_stream(spark, servers, partitions, Path(checkpoint))
        with tempfile.TemporaryDirectory() as checkpoint:
            stream = records / spark_bench.stream_read(spark, servers, None, Path(checkpoint))
        with tempfile.TemporaryDirectory() as checkpoint:
            limited = records / spark_bench.stream_read(
                spark, servers, max(1, records // 4), Path(checkpoint)
            )
    finally:
        spark.stop()
    return {
        "spark_topic_partitions": partitions,
        "spark_records": records,
        "spark_consumer_records_per_s": round(consumer),
        "spark_records_per_s": round(batch),
        "spark_ratio": round(batch / consumer, 3),
        "spark_stream_records_per_s": round(stream),
        "spark_stream_ratio": round(stream / consumer, 3),
        "spark_stream_4_triggers_records_per_s": round(limited),
        "spark_stream_4_triggers_ratio": round(limited / consumer, 3),
        "spark_job_s": round(job_s, 3),
    }


def report(out: dict[str, object]) -> None:
    for rf in (1, 3):
        print(
            f"RF {rf}: broker {out[f'rf{rf}_baseline_records_per_s']} records/s; "
            f"send() loop {out[f'rf{rf}_send_records_per_s']} "
            f"(ratio {out[f'rf{rf}_send_ratio']}, rounds {out[f'rf{rf}_send_ratio_rounds']}); "
            f"bulk {out[f'rf{rf}_bulk_records_per_s']} (ratio {out[f'rf{rf}_bulk_ratio']}); "
            f"at {out[f'rf{rf}_half_load_records_per_s']} records/s p50 "
            f"{out[f'rf{rf}_half_load_p50_ms']} ms p99 {out[f'rf{rf}_half_load_p99_ms']} ms"
        )
    print(
        f"send() with a per-record delivery callback (RF 1): send(callback=cb) "
        f"{out['rf1_send_callback_records_per_s']} records/s, send().add_done_callback(cb) "
        f"{out['rf1_send_add_done_callback_records_per_s']}, without "
        f"{out['rf1_send_records_per_s']}: {out['rf1_callback_ratio']} and "
        f"{out['rf1_add_done_callback_ratio']} of it (rounds {out['rf1_callback_ratio_rounds']},"
        f" {out['rf1_add_done_callback_ratio_rounds']}; target >= 0.8)"
    )
    print(
        f"idempotence on / off (RF 3 acks=-1 send() loop, 5 in flight): "
        f"{out['rf3_idempotence_ratio']} (rounds {out['rf3_idempotence_ratio_rounds']}; "
        "target >= 0.95)"
    )
    print(
        f"consumer: {out['consumer_records_per_s']} records/s, broker raw fetch "
        f"{out['broker_consume_records_per_s']} (ratio {out['consumer_ratio']})"
    )
    if "spark_records_per_s" in out:
        print(
            f"spark reader ({out['spark_topic_partitions']} partitions, local[2]): batch "
            f"{out['spark_records_per_s']} records/s, stream {out['spark_stream_records_per_s']}"
            f" (one trigger), {out['spark_stream_4_triggers_records_per_s']} (4 triggers); one "
            f"consumer {out['spark_consumer_records_per_s']} (ratios {out['spark_ratio']}, "
            f"{out['spark_stream_ratio']}, {out['spark_stream_4_triggers_ratio']}); a Spark "
            f"job's own cost {out['spark_job_s']} s"
        )
    if "rss_peak_mib" in out:
        print(
            f"producer RSS sending {out['rss_mb_sent']} MB to a slow broker: +"
            f"{out['rss_growth_mib']} MiB to {out['rss_peak_mib']} MiB (twice as many records: +"
            f"{out['rss_growth_twice_the_records_mib']} MiB; buffer_memory 32 MiB)"
        )
    print(
        "targets: send >= 0.3 (RF 1) / 0.6 (RF 3) of the broker; bulk >= 0.6 (RF 1); "
        "p99 <= 20 ms (RF 1) / 50 ms (RF 3); consumer >= 0.6; spark >= 1.0"
    )
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
