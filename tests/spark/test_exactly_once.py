"""``pipeline.windowed_counts`` writes exactly once across driver crashes and task failures.

Real job processes (driver and JVM, one process group) are SIGKILLed at chosen points of a
micro-batch (``--crash-at``: with the transaction open, and after it committed but before
Spark's commit log recorded the batch), a task failure is injected (``--fail-task-once``),
and each run resumes from the checkpoint. A read_committed reader of the output topic then
sees every (window, group, count) record once and the final counts right; the at-least-once
mode, crashed the same way, writes a replayed batch twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from deploy.local.cluster import ROOT
from pipeline import windowed_counts
from tests.spark.conftest import produce

pytestmark = pytest.mark.spark

MINUTE = 60_000
BASE = 1_800_000_000_000  # a minute boundary
GROUPS = ["a", "b", "c"]
EVENTS = 60


def send_events(servers: str, topic: str) -> dict[str, int]:
    """60 events over 3 windows and 3 groups; the expected count per output key."""
    stamps = [BASE + (i % 3) * MINUTE + i for i in range(EVENTS)]
    values = [
        (i % 2, None, json.dumps({"group": GROUPS[(i // 3) % 3]}).encode()) for i in range(EVENTS)
    ]
    produce(servers, topic, values, timestamps=stamps)
    seen = Counter(
        (s - s % MINUTE, GROUPS[(i // 3) % 3]) for i, s in zip(range(EVENTS), stamps, strict=True)
    )
    return {
        f"{datetime.fromtimestamp(start / 1000, UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}/{g}": n
        for (start, g), n in seen.items()
    }


def argv(servers: str, events: str, output: str, checkpoint: Path, *extra: str) -> list[str]:
    return [
        "--bootstrap-servers",
        servers,
        "--input",
        events,
        "--output",
        output,
        "--checkpoint",
        str(checkpoint),
        "--watermark",
        "1 hour",
        "--max-records-per-trigger",
        "10",
        *extra,
    ]


def run_killed(args: list[str]) -> None:
    """Run the job in a process group of its own; it must kill itself (``--crash-at``)."""
    job = subprocess.run(
        [sys.executable, "-m", "pipeline.windowed_counts", *args, "--master", "local[1,4]"],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), PYSPARK_PYTHON=sys.executable),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        timeout=600,
        check=False,
    )
    assert job.returncode == -signal.SIGKILL, job.stderr.decode()[-3000:]


def output_records(spark, servers: str, topic: str, isolation: str) -> list[tuple[str, str]]:
    rows = (
        spark.read.format("odradek")
        .option("kafka.bootstrap.servers", servers)
        .option("subscribe", topic)
        .option("kafka.isolation.level", isolation)
        .load()
        .orderBy("partition", "offset")
        .collect()
    )
    return [(bytes(r.key).decode(), bytes(r.value).decode()) for r in rows]


def final_counts(records: list[tuple[str, str]]) -> dict[str, int]:
    return {k: json.loads(v)["count"] for k, v in records}


def test_exactly_once_across_driver_crashes_and_a_task_failure(
    spark, spark_cluster, new_topic, tmp_path
):
    servers = spark_cluster.bootstrap_servers
    events, output = new_topic(2), new_topic(1)
    expected = send_events(servers, events)
    base = argv(servers, events, output, tmp_path / "checkpoint")
    # 1: a task fails once (retried), then the driver dies with batch 1's transaction open
    run_killed(
        [*base, "--fail-task-once", str(tmp_path / "failed"), "--crash-at", "1:before-commit"]
    )
    assert (tmp_path / "failed").exists()
    # 2: batch 1 replayed (its open transaction aborted by the new driver's fencing), then the
    # driver dies after batch 3's transaction committed, before Spark's commit log has it
    run_killed([*base, "--crash-at", "3:after-commit"])
    assert not (tmp_path / "checkpoint" / "commits" / "3").exists()
    # 3: to the end; batch 3 is replayed by Spark and recognised as committed
    windowed_counts.main(base, spark=spark)

    committed = output_records(spark, servers, output, "read_committed")
    duplicates = {r: n for r, n in Counter(committed).items() if n > 1}
    assert duplicates == {}
    assert final_counts(committed) == expected
    # the aborted write of run 1 is in the log, read only uncommitted
    assert len(output_records(spark, servers, output, "read_uncommitted")) > len(committed)


def test_at_least_once_writes_a_replayed_batch_again(spark, spark_cluster, new_topic, tmp_path):
    servers = spark_cluster.bootstrap_servers
    events, output = new_topic(2), new_topic(1)
    expected = send_events(servers, events)
    base = argv(servers, events, output, tmp_path / "checkpoint", "--delivery", "at-least-once")
    run_killed([*base, "--crash-at", "1:after-commit"])
    windowed_counts.main(base, spark=spark)
    records = output_records(spark, servers, output, "read_committed")
    assert final_counts(records) == expected
    assert any(n > 1 for n in Counter(records).values())  # batch 1 written twice
