"""The transaction coordinator's metrics (node.metrics.transaction_metrics) as Prometheus reads
them: open transactions by state and pending markers read at scrape time, completed commits and
aborts, timeouts, the marker latency histogram, and Kafka's partition load times over the last
30 s."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from node.metrics.request_metrics import REQUEST_BUCKETS_MS
from node.metrics.transaction_metrics import LOAD_WINDOW_MS, TransactionMetrics

P = "kafka_coordinator_transaction_"


def _samples(metrics: TransactionMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(metrics)
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_nothing_watched_yet_reads_zero() -> None:
    samples = _samples(TransactionMetrics())
    assert samples[(P + "transactionmarkerchannelmanager_pendingtransactions", ())] == 0
    assert (
        samples[(P + "transactioncoordinator_completedtransactions_total", (("result", "commit"),))]
        == 0
    )
    assert samples[(P + "transactionmarkerchannelmanager_markerlatencyms_count", ())] == 0


def test_counts_and_latencies() -> None:
    metrics = TransactionMetrics()
    open_now = {"Ongoing": 2, "PrepareCommit": 1, "PrepareAbort": 0}
    metrics.watch(lambda: open_now, lambda: 3, lambda: 0)
    for commit in (True, True, False):
        metrics.transaction_completed(commit)
    metrics.transaction_timed_out()
    for ms in (0, 7, 100_000):
        metrics.observe_marker_latency(ms)
    samples = _samples(metrics)
    for state, count in open_now.items():
        key = (P + "transactionstatemanager_opentransactions", (("state", state),))
        assert samples[key] == count
    completed = P + "transactioncoordinator_completedtransactions_total"
    assert samples[(completed, (("result", "commit"),))] == 2
    assert samples[(completed, (("result", "abort"),))] == 1
    assert samples[(P + "transactioncoordinator_timedouttransactions_total", ())] == 1
    assert samples[(P + "transactionmarkerchannelmanager_pendingtransactions", ())] == 3
    latency = P + "transactionmarkerchannelmanager_markerlatencyms"
    assert samples[(latency + "_count", ())] == 3
    assert samples[(latency + "_sum", ())] == 100_007
    assert samples[(latency + "_bucket", (("le", "1"),))] == 1
    assert samples[(latency + "_bucket", (("le", "10"),))] == 2
    last = str(REQUEST_BUCKETS_MS[-1])
    assert samples[(latency + "_bucket", (("le", last),))] == 2
    assert samples[(latency + "_bucket", (("le", "+Inf"),))] == 3


def test_partition_load_times_cover_the_last_30_seconds() -> None:
    metrics = TransactionMetrics()
    now = [100_000]
    metrics.watch(dict, lambda: 0, lambda: now[0])
    load_max = "kafka_server_transaction_coordinator_metrics_partition_load_time_max"
    load_avg = "kafka_server_transaction_coordinator_metrics_partition_load_time_avg"
    samples = _samples(metrics)
    assert math.isnan(samples[(load_max, ())]) and math.isnan(samples[(load_avg, ())])
    metrics.partition_loaded(40, 90_000)
    metrics.partition_loaded(10, 100_000)
    samples = _samples(metrics)
    assert (samples[(load_max, ())], samples[(load_avg, ())]) == (40, 25)
    now[0] = 90_000 + LOAD_WINDOW_MS  # the first has left the window
    samples = _samples(metrics)
    assert (samples[(load_max, ())], samples[(load_avg, ())]) == (10, 10)
    now[0] = 100_000 + LOAD_WINDOW_MS
    assert math.isnan(_samples(metrics)[(load_max, ())])
