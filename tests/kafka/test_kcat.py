"""Debian's kcat (librdkafka 2.0) against a real odradek cluster's Kafka listeners: ``kcat -L``,
produce with every codec, consume from the beginning, from the end and from a timestamp."""

from __future__ import annotations

import subprocess
import time
import uuid

import pytest

from tests.kafka.conftest import require


def kcat(*args: str, stdin: bytes | None = None, timeout: float = 60) -> str:
    result = subprocess.run(
        [require("kcat"), *args],
        input=stdin,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return result.stdout.decode()


def test_kcat_lists_brokers_and_topics(kafka_cluster, bootstrap):
    topic = f"kcat-l-{uuid.uuid4().hex[:6]}"
    # a produce to a missing topic creates it (auto.create.topics.enable)
    kcat("-b", bootstrap, "-P", "-t", topic, stdin=b"x\n")
    listing = kcat("-b", bootstrap, "-L", "-t", topic)
    assert "3 brokers:" in listing
    for node in kafka_cluster.nodes:
        assert f"broker {node.node_id} at {node.kafka_address}" in listing
    assert f'topic "{topic}" with 3 partitions' in listing


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kcat_produces_with_each_codec_and_reads_it_back(bootstrap, codec):
    topic = f"kcat-{codec}-{uuid.uuid4().hex[:6]}"
    lines = [f"{codec}-{i}" for i in range(200)]
    kcat(
        "-b",
        bootstrap,
        "-P",
        "-t",
        topic,
        "-p",
        "0",
        "-z",
        codec,
        stdin="\n".join(lines).encode() + b"\n",
    )
    out = kcat("-b", bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q")
    assert out.splitlines() == lines


def test_kcat_consumes_from_the_end_and_from_a_timestamp(bootstrap):
    topic = f"kcat-pos-{uuid.uuid4().hex[:6]}"
    kcat("-b", bootstrap, "-P", "-t", topic, "-p", "0", stdin=b"a\nb\nc\n")
    time.sleep(0.05)
    since = int(time.time() * 1000)  # noqa: TID251
    time.sleep(0.05)
    kcat("-b", bootstrap, "-P", "-t", topic, "-p", "0", stdin=b"d\ne\n")
    last_two = kcat("-b", bootstrap, "-C", "-t", topic, "-p", "0", "-o", "-2", "-e", "-q")
    assert last_two.splitlines() == ["d", "e"]
    by_time = kcat("-b", bootstrap, "-C", "-t", topic, "-p", "0", "-o", f"s@{since}", "-e", "-q")
    assert by_time.splitlines() == ["d", "e"]
