"""Helpers for tests against a real cluster: waiting on conditions, reading replicas' logs,
scraping the nodes' Prometheus endpoints."""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from prometheus_client.parser import text_string_to_metric_families

from deploy.local.cluster import LocalCluster, NodeProcess
from odradek import Admin, Consumer, TopicPartition
from odradek.client.metadata import PartitionMetadata
from odradek.clock import ManualClock
from odradek.records import read_batches
from storage import Log, LogConfig

T = TypeVar("T")


def wait_for(condition: Callable[[], T | None], what: str, timeout_s: float = 60.0) -> T:
    """Poll ``condition`` until it returns something truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout_s  # noqa: TID251  (test harness)
    last_error: Exception | None = None
    while time.monotonic() < deadline:  # noqa: TID251
        try:
            value = condition()
        except Exception as e:  # a node may be down while we poll
            last_error = e
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last error: {last_error!r})")


def partition_state(admin: Admin, topic: str, partition: int = 0) -> PartitionMetadata:
    return admin.describe_topics([topic])[topic].partitions[partition]


def wait_for_full_isr(admin: Admin, topic: str, partitions: int = 1, rf: int = 3) -> None:
    def full() -> bool:
        described = admin.describe_topics([topic])[topic]
        return len(described.partitions) == partitions and all(
            p.leader >= 0 and len(p.isr) == rf for p in described.partitions
        )

    wait_for(full, f"every partition of {topic} with {rf} in-sync replicas")


def consume_all(bootstrap: str, topic: str, partitions: int) -> dict[int, list[tuple[int, bytes]]]:
    """Every (offset, value) of every partition, from the beginning to the current end."""
    out: dict[int, list[tuple[int, bytes]]] = {}
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        for tp in tps:
            out[tp.partition] = []
        deadline = time.monotonic() + 60  # noqa: TID251
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, "consuming took too long"  # noqa: TID251
            for record in consumer.poll(timeout_ms=500):
                assert record.value is not None
                out[record.partition].append((record.offset, record.value))
    return out


def replica_log(
    cluster: LocalCluster, node_id: int, topic: str, partition: int
) -> list[tuple[int, int, int, int]]:
    """A stopped node's replica, read from its files: per batch (base offset, last offset,
    partition leader epoch, CRC) - the CRC covers every record."""
    directory = cluster.node(node_id).directory / "data" / f"{topic}-{partition}"
    log = Log.open(Path(directory), LogConfig(), ManualClock(), had_clean_shutdown=False)
    try:
        out: list[tuple[int, int, int, int]] = []
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            info = log.read(offset, 1 << 20)
            batches = list(read_batches(info.records))
            if not batches:
                break
            for b in batches:
                b.validate()
                out.append((b.base_offset, b.last_offset, b.partition_leader_epoch, b.crc))
                offset = b.last_offset + 1
        return out
    finally:
        log.close()


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def metrics_url(node: NodeProcess) -> str:
    """The node's Prometheus endpoint, as its log announces it (``metrics.port``)."""
    match = re.search(r"metrics on (http://\S+/metrics)", node.log_path.read_text())
    assert match, node.tail()
    return match.group(1)


def scrape_metrics(url: str) -> Samples:
    """Every sample of the endpoint by (name, sorted labels)."""
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def metric_value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def node_metric_total(
    cluster: LocalCluster, node_ids: Iterable[int], name: str, **labels: str
) -> float:
    """A sample's sum over the nodes ``node_ids`` (0 where a node has none)."""
    return sum(
        metric_value(scrape_metrics(metrics_url(cluster.node(n))), name, **labels) for n in node_ids
    )
