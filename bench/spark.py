"""Spark connector benchmark: batch and streaming read rates beside one SDK consumer.

It starts a one-node local cluster (its own ZooKeeper), writes ``--records`` records of 100
bytes over ``--partitions`` partitions (produce requests of ~64 KiB batches, straight to the
leader), then reads them all three ways in the same run:

* one :class:`odradek.Consumer` polling every partition (the baseline);
* the connector's batch read in ``local[2]``: ``spark.read.format("odradek")`` into Spark's
  ``noop`` sink, so every row crosses from the Python reader into the JVM and nothing else is
  measured (a warm-up read of a few records first: the JVM and Python workers start once);
* a streaming read with ``trigger(availableNow=True)`` into the ``noop`` sink (after a warm-up
  stream of one record a partition), all in one
  trigger (Spark's Kafka source's default: no ``maxOffsetsPerTrigger``), and again with
  ``maxOffsetsPerTrigger`` of a quarter of the records (four micro-batches);
* a Spark job's own cost: a batch read of one record per partition, the fastest of three.
  Every Spark job here pays it (scheduling, the Python workers' hand-over, the noop commit),
  whatever it reads, so it is printed beside the rates: it is why a read of too few records
  cannot beat a consumer, and why each extra trigger slows a stream.

It prints one line per figure and ends with one JSON line; ``connector_ratio`` and
``stream_ratio`` are the batch and streaming read rates over the consumer's (target: at least
1.0 on two cores).

    python -m bench.spark [--records 4000000] [--partitions 4] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import grpc

from deploy.local.cluster import ROOT, LocalCluster
from odradek import Admin, Consumer, NewTopic, TopicPartition
from odradek.records import Record, build_batch
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

RECORD_BYTES = 100
BATCH_BYTES = 64 * 1024
TOPIC = "spark-bench"
_NOT_READY_YET = (3, 5, 6)  # UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER


def make_batch(records: int) -> bytes:
    value = os.urandom(RECORD_BYTES)
    stamp = 1_800_000_000_000
    return build_batch([Record(None, value, timestamp=stamp + i) for i in range(records)])


def produce(address: str, total: int, partitions: int) -> float:
    """Write ``total`` records spread evenly over the partitions; the seconds taken."""
    per_batch = max(1, BATCH_BYTES // (RECORD_BYTES + 10))
    full = make_batch(per_batch)
    stub = pb_grpc.BrokerStub(
        grpc.insecure_channel(address, options=[("grpc.max_send_message_length", -1)])
    )
    errors: list[str] = []
    deadline = time.perf_counter() + 60

    def worker(partition: int) -> None:
        left = total // partitions + (1 if partition < total % partitions else 0)
        while left > 0 and not errors:
            n = min(per_batch, left)
            batch = full if n == per_batch else make_batch(n)
            response = stub.Produce(
                pb.ProduceRequest(
                    acks=1,
                    timeout_ms=30_000,
                    partitions=[
                        pb.ProducePartitionData(topic=TOPIC, partition=partition, records=batch)
                    ],
                ),
                timeout=60,
            )
            code = response.partitions[0].error_code
            if code in _NOT_READY_YET and time.perf_counter() < deadline:
                time.sleep(0.1)  # the new topic's leader is not serving yet
                continue
            if code:
                errors.append(f"partition {partition}: error {code}")
            left -= n

    threads = [threading.Thread(target=worker, args=(p,)) for p in range(partitions)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"produce failed: {errors[0]}")
    return time.perf_counter() - start


def consume(servers: str, total: int, partitions: int) -> float:
    """One SDK consumer reading every record from the beginning; the seconds taken."""
    tps = [TopicPartition(TOPIC, p) for p in range(partitions)]
    with Consumer(servers) as consumer:
        consumer.assign(tps)
        consumer.seek_to_beginning()
        seen = 0
        start = time.perf_counter()
        while seen < total:
            seen += len(consumer.poll(timeout_ms=1000))
        return time.perf_counter() - start


# What a failed launch names of this process's environment: what decides which Java runs, with
# which options and which Spark (never the whole environment: it may hold credentials).
LAUNCH_ENV = (
    "JAVA_HOME",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "SPARK_HOME",
    "SPARK_CONF_DIR",
    "SPARK_LOCAL_IP",
    "SPARK_SUBMIT_OPTS",
    "PYSPARK_PYTHON",
    "PYSPARK_DRIVER_PYTHON",
    "PYSPARK_SUBMIT_ARGS",
    "PYTHONPATH",
    "PATH",
    "TMPDIR",
)
LAUNCH_TIMEOUT_S = 300.0


class SparkLaunchError(RuntimeError):
    """Spark's JVM ended, or did not answer in time, before it told this process its gateway's
    port: the message names its exit status, the command, the environment that matters and
    the last lines of its output."""


def launch_failure(
    returncode: int | None,
    seconds: float,
    command: Sequence[str],
    env: Mapping[str, str],
    log_path: Path,
    output: str,
) -> str:
    """The message of a failed launch (``returncode`` None: it did not answer in time and was
    killed)."""
    if returncode is None:
        how = f"did not answer within {seconds:.0f} s (killed)"
    elif returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        how = f"was killed by {name} after {seconds:.1f} s"
    else:
        how = f"exited with status {returncode} after {seconds:.1f} s"
    shown = {name: env[name] for name in LAUNCH_ENV if name in env}
    lines = output.splitlines()[-60:]
    tail = "\n".join(f"    {line}" for line in lines) if lines else "    (no output at all)"
    return (
        f"Spark's JVM {how} before it wrote its gateway's port\n"
        f"  command: {shlex.join(command)}\n"
        f"  environment: {shown}\n"
        f"  this process: {threading.active_count()} threads, {_open_fds()} open descriptors\n"
        f"  its output ({log_path}), the last {len(lines)} lines:\n{tail}"
    )


def _open_fds() -> int | str:
    try:
        return sum(1 for _ in Path("/proc/self/fd").iterdir())
    except OSError:
        return "?"


def spawn_jvm(command: Sequence[str], env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """Start ``command`` with a pipe on its stdin (the JVM exits when this process closes it),
    its stdout and stderr on one pipe, in a process group of its own (a terminal's Ctrl-C is
    for the tests, not for Spark).

    No ``preexec_fn``, which PySpark's own ``launch_gateway`` passes (to ignore SIGINT): with
    one, CPython forks with ``fork()``, and the child runs the at-fork handlers of this
    process before it execs. gRPC's (any odradek client alive in this process) start its
    poller thread again in the child, and the child dies by SIGABRT or SIGSEGV when the file
    descriptors are closed under that thread: no JVM ever runs, and the one line printed is
    gRPC's ``Epoll1Poller ... epoll_wait error: Bad file descriptor``. Without a
    ``preexec_fn`` CPython uses ``vfork()``, which runs no handlers (docs/spark.md has the
    rates measured)."""
    return subprocess.Popen(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=dict(env),
        process_group=0,
    )


def _copy_output(source: IO[bytes], log: IO[bytes]) -> None:
    """Everything the JVM prints, to its log file and on to this process's stderr (under
    pytest: the capture of the test that runs at the time)."""
    with source, log:
        for chunk in iter(lambda: source.read1(65536), b""):  # type: ignore[attr-defined]
            log.write(chunk)
            log.flush()
            try:
                os.write(2, chunk)
            except OSError:  # no stderr left (the process is exiting): the file has it
                pass


def launch_jvm(conf: Mapping[str, str], log_path: Path, timeout_s: float = LAUNCH_TIMEOUT_S) -> Any:
    """Start Spark's JVM as PySpark's ``launch_gateway`` does (``spark-submit ... pyspark-shell``
    with ``conf``; the JVM writes its gateway's port and secret to the file named in
    ``_PYSPARK_DRIVER_CONN_INFO_PATH``) and return PySpark's gateway connected to it (PySpark
    connects to a running JVM named in ``PYSPARK_GATEWAY_PORT``, as under ``spark-submit``).

    It differs in how the process starts (:func:`spawn_jvm`: the cause of CI's launches that
    died with no output) and in what a failure says: the JVM's output goes to ``log_path``
    and a launch that fails raises :class:`SparkLaunchError` with the exit status, the
    command, the environment that matters and the output's tail. A JVM that has not answered
    in ``timeout_s`` is killed (PySpark would wait for ever)."""
    from pyspark.find_spark_home import _find_spark_home
    from pyspark.java_gateway import launch_gateway
    from pyspark.serializers import UTF8Deserializer, read_int

    command = [str(Path(_find_spark_home()) / "bin" / "spark-submit")]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    command.append("pyspark-shell")
    conn_dir = Path(tempfile.mkdtemp(prefix="odradek-spark-"))
    try:
        conn_info = conn_dir / "conn-info"
        env = dict(
            os.environ, SPARK_CONNECT_MODE="0", _PYSPARK_DRIVER_CONN_INFO_PATH=str(conn_info)
        )
        for name in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET"):
            env.pop(name, None)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log = log_path.open("ab")
        log.write(f"== {shlex.join(command)}\n".encode())
        log.flush()
        output_at = log.tell()  # this launch's output starts here (the file may be reused)
        start = time.monotonic()
        proc = spawn_jvm(command, env)
        assert proc.stdout is not None
        copier = threading.Thread(
            target=_copy_output, args=(proc.stdout, log), name="spark-jvm-output", daemon=True
        )
        copier.start()
        deadline = start + timeout_s
        while proc.poll() is None and not conn_info.is_file() and time.monotonic() < deadline:
            time.sleep(0.05)
        if not conn_info.is_file():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
                returncode = None
            else:
                returncode = proc.returncode
            assert proc.stdin is not None
            proc.stdin.close()
            copier.join(timeout=10)  # the output's last lines, written before it ended
            with log_path.open("rb") as written:
                written.seek(output_at)
                output = written.read().decode(errors="replace")
            raise SparkLaunchError(
                launch_failure(returncode, time.monotonic() - start, command, env, log_path, output)
            )
        with conn_info.open("rb") as info:
            port = read_int(info)
            secret = UTF8Deserializer().loads(info)
    finally:
        shutil.rmtree(conn_dir, ignore_errors=True)
    os.environ["PYSPARK_GATEWAY_PORT"] = str(port)
    os.environ["PYSPARK_GATEWAY_SECRET"] = secret
    try:
        gateway = launch_gateway()
    finally:  # spark-submit jobs started from this process must start JVMs of their own
        del os.environ["PYSPARK_GATEWAY_PORT"]
        del os.environ["PYSPARK_GATEWAY_SECRET"]
    gateway.proc = proc  # holds the JVM's stdin: it lives as long as this process keeps it
    return gateway


def start_session(conf: Mapping[str, str], jvm_log: Path) -> Any:
    """A SparkSession with ``conf`` (``spark.master``, ``spark.app.name`` and settings): on the
    JVM this process already runs (a session stopped leaves it running), or on a new one from
    :func:`launch_jvm` with its output in ``jvm_log``. No retry: a failed launch raises
    :class:`SparkLaunchError`, which says why."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._gateway is None:
        gateway = launch_jvm(conf, jvm_log)
        SparkContext(conf=SparkConf().setAll(list(conf.items())), gateway=gateway)
    return SparkSession.builder.config(map=dict(conf)).getOrCreate()


SESSION_CONF = {
    "spark.master": "local[2]",
    "spark.app.name": "odradek-spark-bench",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.showConsoleProgress": "false",
}


def spark_session(jvm_log: Path | None = None) -> Any:
    """The benchmark's local[2] session; the JVM's output in ``jvm_log`` (default: a file in
    the temporary directory named after this process)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # the driver on loopback, not the first interface
    path = os.environ.get("PYTHONPATH", "")
    if str(ROOT) not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), path) if p)
    if jvm_log is None:
        jvm_log = Path(tempfile.gettempdir()) / f"odradek-spark-jvm-{os.getpid()}.log"
    session = start_session(SESSION_CONF, jvm_log)
    session.sparkContext.setLogLevel("ERROR")
    return session


def batch_read(spark: Any, servers: str, ending: str | None = None) -> float:
    reader = (
        spark.read.format("odradek")
        .option("odradek.bootstrap.servers", servers)
        .option("subscribe", TOPIC)
    )
    if ending is not None:
        reader = reader.option("endingOffsets", ending)
    start = time.perf_counter()
    reader.load().write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


def job_seconds(spark: Any, servers: str, partitions: int) -> float:
    """What a Spark job costs whatever it reads: a batch read of one record per partition
    (the JVM and the Python workers already warm)."""
    ending = json.dumps({TOPIC: {str(p): 1 for p in range(partitions)}})
    return min(batch_read(spark, servers, ending) for _ in range(3))


def warm_stream(spark: Any, servers: str, partitions: int, checkpoint: Path) -> None:
    """A streaming read of the last record of each partition: the JVM's streaming code and
    the Python workers start once, before the streams that are timed (as the batch read's
    warm-up does for batch reads)."""
    tps = [TopicPartition(TOPIC, p) for p in range(partitions)]
    with Consumer(servers) as consumer:
        ends = consumer.end_offsets(tps)
    starting = json.dumps({TOPIC: {str(tp.partition): max(0, ends[tp] - 1) for tp in tps}})
    stream_read(spark, servers, None, checkpoint, starting)


def stream_read(
    spark: Any,
    servers: str,
    per_trigger: int | None,
    checkpoint: Path,
    starting: str = "earliest",
) -> float:
    """Seconds for an ``availableNow`` streaming read from ``starting`` to the end of the
    topic into the ``noop`` sink: in one trigger (``per_trigger`` None: Spark's Kafka source's
    default, no limit) or ``maxOffsetsPerTrigger`` records at a time."""
    start = time.perf_counter()
    reader = (
        spark.readStream.format("odradek")
        .option("odradek.bootstrap.servers", servers)
        .option("subscribe", TOPIC)
        .option("startingOffsets", starting)
    )
    if per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(per_trigger))
    query = (
        reader.load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    seconds = time.perf_counter() - start
    read = sum(int(p["numInputRows"]) for p in query.recentProgress)
    if read == 0:
        raise RuntimeError("the streaming read read nothing")
    return seconds


def main(argv: list[str] | None = None, spark: Any = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="python -m bench.spark")
    parser.add_argument("--records", type=int, default=4_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    total, partitions = args.records, args.partitions
    out: dict[str, object] = {
        "records": total,
        "record_bytes": RECORD_BYTES,
        "partitions": partitions,
        "spark_master": "local[2]",
    }
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        cluster = LocalCluster(Path(tmp) / "cluster", 1)
        cluster.start()
        own_session = spark is None
        try:
            servers = cluster.bootstrap_servers
            with Admin(servers) as admin:
                error = admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC]
                if error is not None:
                    raise error
            produce_s = produce(cluster.nodes[0].address, total, partitions)
            out["produce_records_per_s"] = round(total / produce_s)
            consume_s = consume(servers, total, partitions)
            out["consumer_records_per_s"] = round(total / consume_s)
            if spark is None:
                spark = spark_session()
            import odradek.spark

            odradek.spark.register(spark)
            warm = json.dumps({TOPIC: {str(p): 1 for p in range(partitions)}})
            batch_read(spark, servers, warm)  # start the JVM's and the workers' code paths
            batch_s = batch_read(spark, servers)
            out["connector_batch_records_per_s"] = round(total / batch_s)
            out["spark_job_s"] = round(job_seconds(spark, servers, partitions), 3)
            warm_stream(spark, servers, partitions, Path(tmp) / "warm")
            stream_s = stream_read(spark, servers, None, Path(tmp) / "checkpoint")
            out["connector_stream_records_per_s"] = round(total / stream_s)
            limited_s = stream_read(spark, servers, max(1, total // 4), Path(tmp) / "limited")
            out["connector_stream_4_triggers_records_per_s"] = round(total / limited_s)
        finally:
            if own_session and spark is not None:
                spark.stop()
            cluster.kill_all()
    consumer_rate = float(out["consumer_records_per_s"])  # type: ignore[arg-type]
    batch_rate = float(out["connector_batch_records_per_s"])  # type: ignore[arg-type]
    stream_rate = float(out["connector_stream_records_per_s"])  # type: ignore[arg-type]
    out["connector_ratio"] = round(batch_rate / consumer_rate, 3)
    out["stream_ratio"] = round(stream_rate / consumer_rate, 3)
    limited_rate = float(out["connector_stream_4_triggers_records_per_s"])  # type: ignore[arg-type]
    out["stream_4_triggers_ratio"] = round(limited_rate / consumer_rate, 3)
    print(f"{total} records of {RECORD_BYTES} bytes over {partitions} partitions, one node")
    print(f"          produce: {out['produce_records_per_s']:>10} records/s")
    print(f"     SDK consumer: {out['consumer_records_per_s']:>10} records/s (baseline)")
    print(
        f"  connector batch: {out['connector_batch_records_per_s']:>10} records/s "
        f"(ratio {out['connector_ratio']}, target >= 1.0)"
    )
    print(
        f"connector stream: {out['connector_stream_records_per_s']:>10} records/s "
        f"(ratio {out['stream_ratio']}, availableNow, one trigger; target >= 1.0)"
    )
    print(
        f"  ... 4 triggers: {out['connector_stream_4_triggers_records_per_s']:>10} records/s "
        f"(ratio {out['stream_4_triggers_ratio']}, maxOffsetsPerTrigger records/4)"
    )
    print(f"  a Spark job's own cost (1 record a partition): {out['spark_job_s']} s")
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
