"""The pipeline jobs end to end: archive to Parquet (resumable) and windowed counts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter

import pytest

from deploy.local.cluster import ROOT
from pipeline import archive, windowed_counts
from tests.integration.helpers import wait_for
from tests.spark.conftest import produce

pytestmark = pytest.mark.spark

MINUTE = 60_000
BASE = 1_800_000_000_000  # a minute boundary (2027-01-15T08:00:00Z)


def test_archive_is_incremental_and_exact(spark, spark_cluster, new_topic, tmp_path):
    servers = spark_cluster.bootstrap_servers
    topic = new_topic(2)
    argv = [
        "--bootstrap-servers",
        servers,
        "--topic",
        topic,
        "--output",
        str(tmp_path / "archive"),
        "--checkpoint",
        str(tmp_path / "checkpoint"),
        "--max-records-per-trigger",
        "25",
    ]
    sent = produce(
        servers,
        topic,
        [(i % 2, f"k{i}".encode(), f"v{i}".encode()) for i in range(40)],
        headers=[[("i", str(i).encode())] for i in range(40)],
    )
    first = archive.main(argv, spark=spark)
    assert first == {"batches": 2, "records": 40}
    sent += produce(servers, topic, [(i % 2, None, f"w{i}".encode()) for i in range(25)])
    second = archive.main(argv, spark=spark)
    assert second["records"] == 25
    assert archive.main(argv, spark=spark)["records"] == 0
    rows = spark.read.parquet(str(tmp_path / "archive")).collect()
    got = sorted(((r.topic, r.partition, r.offset, r.key, r.value) for r in rows), key=repr)
    want = sorted(((topic, p, o, k, v) for p, o, k, v in sent), key=repr)
    assert got == want
    assert {str(r.date) for r in rows} == {r.timestamp.strftime("%Y-%m-%d") for r in rows}
    assert {r.partition: len(r.headers or []) for r in rows if r.key} == {0: 1, 1: 1}


def test_archive_resumes_exactly_after_its_driver_is_killed(
    spark, spark_cluster, new_topic, tmp_path
):
    """A real job process (driver and its JVM) SIGKILLed mid-run, as a crashed machine would
    leave it; the next run resumes from the checkpoint: every record archived exactly once."""
    servers = spark_cluster.bootstrap_servers
    topic = new_topic(2)
    argv = [
        "--bootstrap-servers",
        servers,
        "--topic",
        topic,
        "--output",
        str(tmp_path / "archive"),
        "--checkpoint",
        str(tmp_path / "checkpoint"),
        "--max-records-per-trigger",
        "20",
    ]
    sent = produce(servers, topic, [(i % 2, None, f"v{i}".encode()) for i in range(400)])
    commits = tmp_path / "checkpoint" / "commits"
    job = subprocess.Popen(
        [sys.executable, "-m", "pipeline.archive", *argv, "--master", "local[1]"],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), PYSPARK_PYTHON=sys.executable),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # the driver and its JVM: one process group to kill
    )
    try:

        def three_commits_or_ended() -> bool:
            # commits/<batch id> per committed micro-batch (beside hidden .crc files)
            done = commits.is_dir() and len(list(commits.glob("[0-9]*"))) >= 3
            return done or job.poll() is not None

        wait_for(three_commits_or_ended, "the job to commit 3 micro-batches", 120)
        assert job.poll() is None, f"the job ended early: {job.stderr.read()!r}"  # type: ignore[union-attr]
        os.killpg(job.pid, signal.SIGKILL)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
        job.wait()
        job.stderr.close()  # type: ignore[union-attr]
    assert job.returncode == -signal.SIGKILL  # killed mid-run, not finished
    before = spark.read.parquet(str(tmp_path / "archive")).count()
    assert 60 <= before < 400
    resumed = archive.main(argv, spark=spark)
    assert 0 < resumed["records"] <= 400 - 60
    rows = spark.read.parquet(str(tmp_path / "archive")).collect()
    got = sorted((r.partition, r.offset, r.value) for r in rows)
    assert got == sorted((p, o, v) for p, o, _, v in sent)  # no duplicate, no gap


def latest_per_key(spark, servers, topic) -> dict[str, dict[str, object]]:
    rows = (
        spark.read.format("odradek")
        .option("kafka.bootstrap.servers", servers)
        .option("subscribe", topic)
        .load()
        .orderBy("partition", "offset")
        .collect()
    )
    return {r.key.decode(): json.loads(r.value) for r in rows}


def test_windowed_counts_keyed_by_window_and_group(spark, spark_cluster, new_topic, tmp_path):
    servers = spark_cluster.bootstrap_servers
    events = new_topic(2)
    output = new_topic(1)
    argv = [
        "--bootstrap-servers",
        servers,
        "--input",
        events,
        "--output",
        output,
        "--checkpoint",
        str(tmp_path / "checkpoint"),
        "--window",
        "1 minute",
        "--watermark",
        "1 hour",
    ]
    groups = ["a", "b", "c"]

    def send(n: int, offset: int) -> list[tuple[int, str]]:
        stamps = [BASE + ((i * 7) % 3) * MINUTE + i * 100 for i in range(offset, offset + n)]
        values = [
            (i % 2, None, json.dumps({"group": groups[i % 3], "n": i}).encode())
            for i in range(offset, offset + n)
        ]
        values.append((0, None, b"not json"))
        stamps.append(BASE)
        produce(servers, events, values, timestamps=stamps)
        return [
            (s - s % MINUTE, groups[i % 3])
            for i, s in zip(range(offset, offset + n), stamps[:n], strict=True)
        ]

    def expected(seen: list[tuple[int, str]]) -> dict[str, int]:
        from datetime import UTC, datetime

        out = {}
        for (start, group), n in Counter(seen).items():
            iso = datetime.fromtimestamp(start / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            out[f"{iso}/{group}"] = n
        return out

    seen = send(30, 0)
    assert windowed_counts.main(argv, spark=spark)["events"] == 31
    got = latest_per_key(spark, servers, output)
    assert {k: v["count"] for k, v in got.items()} == expected(seen)
    sample = got[next(iter(sorted(got)))]
    assert set(sample) == {"window_start", "window_end", "group", "count"}
    seen += send(20, 30)
    windowed_counts.main(argv, spark=spark)
    got = latest_per_key(spark, servers, output)
    assert {k: v["count"] for k, v in got.items()} == expected(seen)


@pytest.mark.parametrize("module", ["pipeline.archive", "pipeline.windowed_counts"])
def test_jobs_document_their_options(module):
    result = subprocess.run(
        [sys.executable, "-m", module, "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert "--bootstrap-servers" in result.stdout and "--checkpoint" in result.stdout
