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
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

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
    p.add_argument("--master", default=None, help="Spark master outside spark-submit")
    return p


def counts(events: DataFrame, args: argparse.Namespace) -> DataFrame:
    """The (key, value) records of the windowed counts of ``events`` (the source's rows)."""
    group = sf.get_json_object(sf.col("value").cast("string"), f"$.{args.group_field}")
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
    writer = (
        counts(reader.load(), args)
        .writeStream.outputMode("update")
        .option("checkpointLocation", args.checkpoint)
        .foreachBatch(_writer(args.bootstrap_servers, args.output))
    )
    if args.interval:
        query = writer.trigger(processingTime=args.interval).start()
    else:
        query = writer.trigger(availableNow=True).start()
    query.awaitTermination()
    progress = query.recentProgress
    return {
        "batches": len([p for p in progress if p["numInputRows"]]),
        "events": sum(int(p["numInputRows"]) for p in progress),
    }


def _writer(servers: str, topic: str) -> Callable[[DataFrame, int], None]:
    # Update mode needs a sink that takes it: each micro-batch's changed windows go through the
    # batch writer (acknowledged by every in-sync replica before the batch commits).
    def write(batch: DataFrame, batch_id: int) -> None:
        (
            batch.write.format("odradek")
            .option("odradek.bootstrap.servers", servers)
            .option("topic", topic)
            .mode("append")
            .save()
        )

    return write


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
