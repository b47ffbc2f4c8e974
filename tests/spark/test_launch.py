"""How Spark's JVM is launched (bench.spark.launch_jvm): in a process where odradek clients are
alive, as in the long test run, and what a launch that fails says."""

from __future__ import annotations

import os
import resource
from collections import Counter
from pathlib import Path

import pytest

from bench.spark import SparkLaunchError, launch_failure, launch_jvm, spawn_jvm
from odradek import Producer

pytestmark = pytest.mark.spark


def test_the_jvm_is_spawned_safely_beside_live_grpc_clients(spark, spark_cluster, new_topic):
    """``spawn_jvm`` (how ``launch_jvm`` starts spark-submit), 1000 times while an odradek
    producer's channel is open in this process and many descriptors are open, as in a long
    test run: no child dies before it execs. With PySpark's ``preexec_fn`` instead (CPython
    then forks with ``fork()``, and gRPC's at-fork handler starts its poller again in the
    child) 20 of 1000 died by SIGABRT here, which PySpark reports as JAVA_GATEWAY_EXITED."""
    topic = new_topic()
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    ballast = [os.open(os.devnull, os.O_RDONLY) for _ in range(min(10_000, soft // 2))]
    deaths: Counter[int] = Counter()
    try:
        with Producer(spark_cluster.bootstrap_servers, linger_ms=1) as producer:
            producer.send(topic, b"x").result(timeout=30)  # the channel is connected
            for _ in range(1000):
                child = spawn_jvm(["true"], os.environ)
                child.communicate()
                if child.returncode != 0:
                    deaths[child.returncode] += 1
    finally:
        for fd in ballast:
            os.close(fd)
    assert not deaths, f"children that died before exec, by exit status: {dict(deaths)}"
    # the session's gateway is not left in the environment for spark-submit jobs to find
    assert "PYSPARK_GATEWAY_PORT" not in os.environ
    assert "PYSPARK_GATEWAY_SECRET" not in os.environ


def test_a_failed_launch_says_how_the_jvm_ended_and_what_it_printed(spark, tmp_path):
    log = tmp_path / "jvm.log"
    with pytest.raises(SparkLaunchError) as failure:
        launch_jvm({"spark.driver.memory": "plenty"}, log)
    message = str(failure.value)
    assert "exited with status 1" in message
    assert "spark-submit --conf spark.driver.memory=plenty pyspark-shell" in message
    assert "Invalid maximum heap size: -Xmxplenty" in message  # the JVM's own words
    assert "Invalid maximum heap size: -Xmxplenty" in log.read_text()
    assert "PYSPARK_PYTHON" in message  # the environment that decides what runs


def test_a_launch_killed_before_it_printed_anything_is_named_so():
    message = launch_failure(
        -6,
        0.1,
        ["spark-submit", "pyspark-shell"],
        {"JAVA_HOME": "/usr/lib/jvm/java-17", "SECRET_TOKEN": "x"},
        Path("jvm.log"),
        "",
    )
    assert "was killed by SIGABRT after 0.1 s" in message
    assert "(no output at all)" in message
    assert "/usr/lib/jvm/java-17" in message
    assert "SECRET_TOKEN" not in message  # only the variables that decide what runs


def test_a_launch_that_does_not_answer_in_time_is_killed(tmp_path):
    message = launch_failure(None, 300.0, ["spark-submit"], {}, tmp_path / "jvm.log", "x\ny")
    assert "did not answer within 300 s (killed)" in message
    assert "the last 2 lines:\n    x\n    y" in message


def test_spawn_jvm_gives_the_child_a_process_group_and_a_stdin_pipe():
    child = spawn_jvm(["cat"], os.environ)
    try:
        assert os.getpgid(child.pid) == child.pid  # a terminal's Ctrl-C is not for the JVM
    finally:
        out, _ = child.communicate(b"from stdin\n", timeout=30)
    assert (child.returncode, out) == (0, b"from stdin\n")  # the JVM ends when stdin does
