"""Incremental archive of odradek topics to Parquet: each run copies what arrived since the last.

A streaming query with ``trigger(availableNow=True)``: it reads every record from the offsets
in its checkpoint up to the end of each partition at start, writes them as Parquet files
partitioned by topic and record date, commits, and stops. Run it again (by cron, Airflow, a
Kubernetes CronJob) and it resumes from the checkpoint: every record is archived exactly once,
because Spark's file sink records each micro-batch's files in ``_spark_metadata`` and the
offsets of the batch in the checkpoint, and a failed batch is rewritten, not duplicated.

Columns: ``key``, ``value`` (binary), ``topic``, ``partition``, ``offset``, ``timestamp``,
``timestampType`` and ``headers``, plus the partition column ``date`` (``yyyy-MM-dd`` of the
record timestamp, UTC). Read it back with ``spark.read.parquet(output)``.

    python -m pipeline.archive --bootstrap-servers 127.0.0.1:9092 --topic events \\
        --output /data/archive/events --checkpoint /data/checkpoints/archive-events
    spark-submit --master yarn -m ... pipeline/archive.py --bootstrap-servers ... (same options)

Options: ``--topic`` (repeatable) or ``--topic-pattern``; ``--max-records-per-trigger`` caps
each micro-batch (Spark's ``maxOffsetsPerTrigger``: bounded memory while catching up);
``--starting-offsets`` for the first run only (default ``earliest``);
``--no-fail-on-data-loss`` archives what remains when retention deleted records the archive
had not copied yet (default: fail, naming the lost offsets); ``--master`` outside spark-submit.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from pipeline.session import configure_logging, job_session

__all__ = ["archive", "main", "parser"]

log = logging.getLogger("pipeline.archive")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pipeline.archive",
        description="Archive odradek topics to Parquet, incrementally (resumable).",
    )
    p.add_argument("--bootstrap-servers", required=True, help="host:port[,host:port...]")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", action="append", help="a topic to archive (repeatable)")
    which.add_argument("--topic-pattern", help="archive every topic matching this regex")
    p.add_argument("--output", required=True, help="the Parquet directory")
    p.add_argument("--checkpoint", required=True, help="the query's checkpoint directory")
    p.add_argument("--max-records-per-trigger", type=int, default=None)
    p.add_argument("--starting-offsets", default="earliest", help="first run only")
    p.add_argument("--no-fail-on-data-loss", action="store_true")
    p.add_argument("--master", default=None, help="Spark master outside spark-submit")
    return p


def archive(spark: SparkSession, args: argparse.Namespace) -> dict[str, int]:
    """Run one incremental archive; the records written per micro-batch and in all."""
    reader = (
        spark.readStream.format("odradek")
        .option("odradek.bootstrap.servers", args.bootstrap_servers)
        .option("startingOffsets", args.starting_offsets)
        .option("includeHeaders", "true")
        .option("failOnDataLoss", "false" if args.no_fail_on_data_loss else "true")
    )
    if args.topic_pattern:
        reader = reader.option("subscribePattern", args.topic_pattern)
    else:
        reader = reader.option("subscribe", ",".join(args.topic))
    if args.max_records_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_records_per_trigger))
    records: DataFrame = reader.load()
    rows = records.withColumn("date", sf.date_format(sf.col("timestamp"), "yyyy-MM-dd"))
    query = (
        rows.writeStream.format("parquet")
        .option("path", args.output)
        .option("checkpointLocation", args.checkpoint)
        .partitionBy("topic", "date")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    batches = [int(p["numInputRows"]) for p in query.recentProgress]
    return {"batches": len([b for b in batches if b]), "records": sum(batches)}


def main(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> dict[str, int]:
    """The command line; ``spark`` lets a caller (a test, a notebook) bring its session."""
    args = parser().parse_args(argv)
    session = spark or job_session("odradek-archive", args.master)
    result = archive(session, args)
    log.info("archived %d record(s) in %d micro-batch(es)", result["records"], result["batches"])
    sys.stdout.write(json.dumps(result) + "\n")
    return result


if __name__ == "__main__":
    configure_logging()
    main()
