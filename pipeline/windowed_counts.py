"""Windowed counts of a JSON event topic, written to an odradek topic keyed by window and group.

Reads JSON events (``{"group": "checkout", ...}``; other fields are ignored) from a topic,
counts them per tumbling event-time window (the record timestamp) and group, and writes one
record per updated (window, group) to the output topic:

* key: ``<window start, ISO-8601 UTC>/<group>``, e.g. ``2026-11-21T13:05:00Z/checkout``;
* value: JSON ``{"window_start": ..., "window_end": ..., "group": ..., "count": n}``.

It is a streaming query in *update* mode with a watermark: each micro-batch writes the windows
whose count changed, with their new count, so the latest record per key is the window's count
(make the output topic compacted: ``cleanup.policy=compact`` keeps exactly that). The count
state lives in the checkpoint, so runs resume and keep counting; events older than the
watermark (``--watermark`` behind the newest event seen) are dropped, as Spark does. Events
that are not JSON objects with a string ``group`` field (``--group-field``) are not counted.

    python -m pipeline.windowed_counts --bootstrap-servers 127.0.0.1:9092 \\
        --input events --output event-counts --checkpoint /data/checkpoints/counts \\
        [--window "1 minute"] [--watermark "10 minutes"] [--group-field group] \\
        [--available-now | --interval "30 seconds"] [--max-records-per-trigger N]

With ``--available-now`` (the default) the job processes what is there and stops, for
schedulers; with ``--interval`` it runs until stopped. Under spark-submit, the same options.

Output is exactly once (``--delivery exactly-once``, the default): each micro-batch's records
are written in one transaction with a marker naming the batch
(:class:`~odradek.spark.exactly_once.TransactionalBatchSink`; the marker topic is
``--marker-topic``, default ``<output>-spark-batches``; the transactional id is
``--transactional-id``, default one derived from the output topic and the checkpoint), so a
micro-batch replayed after a driver crash is recognised and skipped, and a read_committed reader
of the output sees every record once. ``--delivery at-least-once`` writes with the plain batch
writer: a replayed micro-batch writes its records again.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql.types import BooleanType

from odradek.spark.exactly_once import TransactionalBatchSink, default_transactional_id
from pipeline.session import configure_logging, job_session

__all__ = ["counts", "main", "parser", "windowed_counts"]

log = logging.getLogger("pipeline.windowed_counts")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pipeline.windowed_counts",
        description="Count JSON events per event-time window and group into an odradek topic.",
    )
    p.add_argument("--bootstrap-servers", required=True, help="host:port[,host:port...]")
    p.add_argument("--input", required=True, help="the topic of JSON events")
    p.add_argument("--output", required=True, help="the topic the counts go to")
    p.add_argument("--checkpoint", required=True, help="the query's checkpoint directory")
    p.add_argument("--window", default="1 minute", help="tumbling window length")
    p.add_argument("--watermark", default="10 minutes", help="how late an event may be")
    p.add_argument("--group-field", default="group", help="the JSON field to group by")
    p.add_argument("--starting-offsets", default="earliest", help="first run only")
    p.add_argument("--max-records-per-trigger", type=int, default=None)
    when = p.add_mutually_exclusive_group()
    when.add_argument("--available-now", action="store_true", default=True)
    when.add_argument("--interval", default=None, help="run continuously, one batch per interval")
    p.add_argument(
        "--delivery",
        choices=["exactly-once", "at-least-once"],
        default="exactly-once",
        help="exactly-once: one transaction per micro-batch, replays recognised",
    )
    p.add_argument("--transactional-id", default=None, help="default: from output+checkpoint")
    p.add_argument("--marker-topic", default=None, help="default: <output>-spark-batches")
    p.add_argument("--master", default=None, help="Spark master outside spark-submit")
    # Fault injection for the tests (not for production use): kill this job's process group
    # (driver and JVM) at BATCH_ID:before-commit|after-commit; fail one task once (FILE marks
    # the failure done; needs a master with task retries, e.g. local[1,4]).
    p.add_argument("--crash-at", default=None, help=argparse.SUPPRESS)
    p.add_argument("--fail-task-once", default=None, help=argparse.SUPPRESS)
    return p


def counts(events: DataFrame, args: argparse.Namespace) -> DataFrame:
    """The (key, value) records of the windowed counts of ``events`` (the source's rows)."""
    group = sf.get_json_object(sf.col("value").cast("string"), f"$.{args.group_field}")
    if getattr(args, "fail_task_once", None):
        events = events.where(_fail_once(args.fail_task_once)(sf.col("offset")))
    counted = (
        events.select(sf.col("timestamp").alias("event_time"), group.alias("group"))
        .where(sf.col("group").isNotNull())
        .withWatermark("event_time", args.watermark)
        .groupBy(sf.window("event_time", args.window), sf.col("group"))
        .count()
    )
    start = sf.date_format(sf.col("window.start"), "yyyy-MM-dd'T'HH:mm:ss'Z'")
    end = sf.date_format(sf.col("window.end"), "yyyy-MM-dd'T'HH:mm:ss'Z'")
    return counted.select(
        sf.concat(start, sf.lit("/"), sf.col("group")).alias("key"),
        sf.to_json(
            sf.struct(
                start.alias("window_start"),
                end.alias("window_end"),
                sf.col("group"),
                sf.col("count"),
            )
        ).alias("value"),
    )


def windowed_counts(spark: SparkSession, args: argparse.Namespace) -> dict[str, int]:
    """Run the job (one availableNow run, or until stopped with ``--interval``)."""
    reader = (
        spark.readStream.format("odradek")
        .option("odradek.bootstrap.servers", args.bootstrap_servers)
        .option("subscribe", args.input)
        .option("startingOffsets", args.starting_offsets)
    )
    if args.max_records_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_records_per_trigger))
    sink = _writer(args)
    writer = (
        counts(reader.load(), args)
        .writeStream.outputMode("update")
        .option("checkpointLocation", args.checkpoint)
        .foreachBatch(sink)
    )
    try:
        if args.interval:
            query = writer.trigger(processingTime=args.interval).start()
        else:
            query = writer.trigger(availableNow=True).start()
        query.awaitTermination()
    finally:
        if isinstance(sink, TransactionalBatchSink):
            sink.close()
    progress = query.recentProgress
    return {
        "batches": len([p for p in progress if p["numInputRows"]]),
        "events": sum(int(p["numInputRows"]) for p in progress),
    }


def _writer(args: argparse.Namespace) -> Callable[[DataFrame, int], None]:
    # Update mode needs a sink that takes it: foreachBatch, with the transactional sink
    # (exactly once) or the batch writer (at least once: acknowledged by every in-sync replica
    # before the batch commits, written again when the batch is replayed).
    crash = _crash_hook(args.crash_at)
    if args.delivery == "exactly-once":
        return TransactionalBatchSink(
            args.bootstrap_servers,
            args.output,
            args.transactional_id or default_transactional_id(args.output, args.checkpoint),
            args.marker_topic or f"{args.output}-spark-batches",
            after_write=crash,
        )

    def write(batch: DataFrame, batch_id: int) -> None:
        (
            batch.write.format("odradek")
            .option("odradek.bootstrap.servers", args.bootstrap_servers)
            .option("topic", args.output)
            .mode("append")
            .save()
        )
        if crash is not None:
            crash(batch_id, "after-commit")

    return write


def _crash_hook(spec: str | None) -> Callable[[int, str], None] | None:
    """``--crash-at BATCH_ID:PHASE``: SIGKILL this process group (the driver and its JVM, as a
    crashed machine leaves them) when batch ``BATCH_ID`` reaches ``PHASE``."""
    if spec is None:
        return None
    batch, _, phase = spec.partition(":")
    target = (int(batch), phase or "after-commit")

    def crash(batch_id: int, reached: str) -> None:
        if (batch_id, reached) == target:
            log.warning("--crash-at %s: killing the job", spec)
            os.killpg(os.getpgrp(), signal.SIGKILL)

    return crash


def _fail_once(marker: str) -> Callable[[Column], Column]:
    """A filter that keeps every row, but whose first call anywhere raises once (the task
    fails and Spark retries it): ``marker`` is created atomically by the failing call."""

    def keep(offset: int) -> bool:
        try:
            with open(marker, "x"):
                pass
        except FileExistsError:
            return True
        raise RuntimeError(f"--fail-task-once: the injected task failure (offset {offset})")

    return sf.udf(keep, BooleanType())


def main(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> dict[str, int]:
    """The command line; ``spark`` lets a caller (a test, a notebook) bring its session."""
    args = parser().parse_args(argv)
    session = spark or job_session("odradek-windowed-counts", args.master)
    result = windowed_counts(session, args)
    log.info("counted %d event(s) in %d micro-batch(es)", result["events"], result["batches"])
    sys.stdout.write(json.dumps(result) + "\n")
    return result


if __name__ == "__main__":
    configure_logging()
    main()
