"""The share coordinator's metrics (node.metrics.share_coordinator_metrics) as Prometheus reads
them: partitions by state read at scrape time, writes by result, the write latency histogram,
and the partition load times over the last 30 s."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from node.metrics.share_coordinator_metrics import LOAD_WINDOW_MS, ShareCoordinatorMetrics

P = "kafka_server_share_coordinator_metrics_"


def _samples(
    metrics: ShareCoordinatorMetrics,
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(metrics)
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_nothing_yet_reads_zero_and_nan() -> None:
    samples = _samples(ShareCoordinatorMetrics())
    assert samples[(P + "num_partitions", (("state", "active"),))] == 0
    assert samples[(P + "write_total", (("result", "durable"),))] == 0
    assert samples[(P + "write_latency_ms_count", ())] == 0
    assert math.isnan(samples[(P + "partition_load_time_max", ())])


def test_partitions_writes_latencies_and_loads() -> None:
    metrics = ShareCoordinatorMetrics()
    now = [100_000]
    metrics.watch(lambda: {"active": 3, "loading": 1}, lambda: now[0])
    metrics.write_done(4, durable=True)
    metrics.write_done(6, durable=True)
    metrics.write_done(5_000, durable=False)
    metrics.partition_loaded(20, now_ms=now[0] - LOAD_WINDOW_MS - 1)  # out of the window
    metrics.partition_loaded(30, now_ms=now[0])
    metrics.partition_loaded(10, now_ms=now[0])
    samples = _samples(metrics)
    assert samples[(P + "num_partitions", (("state", "active"),))] == 3
    assert samples[(P + "num_partitions", (("state", "loading"),))] == 1
    assert samples[(P + "write_total", (("result", "durable"),))] == 2
    assert samples[(P + "write_total", (("result", "failed"),))] == 1
    assert samples[(P + "write_latency_ms_count", ())] == 3
    assert samples[(P + "write_latency_ms_sum", ())] == 5_010
    assert samples[(P + "partition_load_time_max", ())] == 30
    assert samples[(P + "partition_load_time_avg", ())] == 20
