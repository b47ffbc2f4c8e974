"""Metrics benchmark: what the Prometheus endpoint (``metrics.port``) costs the produce path.

Two single-node clusters run side by side on loopback, one without metrics and one with
``metrics.port`` (its request interceptor counting every produce, and a scraper reading
``/metrics`` every ``--scrape-interval`` s during the run, 0.2 by default: far more often than
Prometheus would). Each round
measures acks=1 produce throughput (100-byte records in 64 KiB batches, ``--inflight``
concurrent requests) on both nodes, one after the other (which goes first alternates, so a
drift in the shared machine's speed favours neither); the round's ratio is with over without,
and the median round's ratio is reported (every round's too). A ratio near
1.0 means the metrics cost nothing measurable. It ends with one JSON line holding every figure.

    python -m bench.metrics [--batches 400] [--inflight 4] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import threading
import urllib.request
from pathlib import Path

from bench.cluster import _create_topic, _leader_stub, figures_for, make_batch, run_producers
from deploy.local.cluster import LocalCluster


def _scraper(url: str, interval_s: float, stop: threading.Event, scrapes: list[int]) -> None:
    while interval_s > 0:
        with urllib.request.urlopen(url, timeout=10) as answer:
            answer.read()
        scrapes.append(1)
        if stop.wait(interval_s):
            return


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="python -m bench.metrics")
    parser.add_argument("--batches", type=int, default=400)
    parser.add_argument("--inflight", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5, help="rounds, each measuring both")
    parser.add_argument(
        "--scrape-interval", type=float, default=0.2, help="seconds between scrapes (0: none)"
    )
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    batch, records = make_batch()
    size = len(batch)
    rounds = max(1, args.repeat)
    out: dict[str, object] = {"batches": args.batches, "inflight": args.inflight, "repeat": rounds}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        plain = LocalCluster(Path(tmp) / "plain", 1)
        metered = LocalCluster(Path(tmp) / "metered", 1, overrides={"metrics.port": "0"})
        plain.start()
        try:
            metered.start()
            try:
                log = metered.node(0).log_path.read_text()
                match = re.search(r"metrics on (http://\S+/metrics)", log)
                assert match, log
                url = match.group(1)
                stubs = {}
                for name, cluster in (("plain", plain), ("metered", metered)):
                    _create_topic(cluster.nodes[0].address, 1)
                    stubs[name] = _leader_stub(cluster)
                results: list[tuple[float, dict[str, float], dict[str, float]]] = []
                scrapes: list[int] = []
                for index in range(rounds):

                    def plain_run() -> dict[str, float]:
                        seconds, lat = run_producers(
                            stubs["plain"], batch, args.batches, args.inflight, acks=1
                        )
                        return figures_for("plain", seconds, lat, args.batches, records, size)

                    def metered_run() -> dict[str, float]:
                        stop = threading.Event()
                        scraper = threading.Thread(
                            target=_scraper, args=(url, args.scrape_interval, stop, scrapes)
                        )
                        scraper.start()
                        try:
                            seconds, lat = run_producers(
                                stubs["metered"], batch, args.batches, args.inflight, acks=1
                            )
                        finally:
                            stop.set()
                            scraper.join()
                        return figures_for("metered", seconds, lat, args.batches, records, size)

                    if index % 2 == 0:
                        off, on = plain_run(), metered_run()
                    else:
                        on, off = metered_run(), plain_run()
                    ratio = on["metered_records_per_s"] / off["plain_records_per_s"]
                    results.append((ratio, off, on))
            finally:
                metered.stop()
        finally:
            plain.stop()
    ratios = [round(r, 3) for r, _, _ in results]
    ratio, off, on = sorted(results, key=lambda r: r[0])[(len(results) - 1) // 2]
    out.update(off)
    out.update(on)
    out["metrics_ratio"] = round(ratio, 3)
    out["metrics_ratio_rounds"] = ratios
    out["scrapes"] = len(scrapes)
    for name in ("plain", "metered"):
        print(
            f"{name:>8}: {out[name + '_records_per_s']:>10} records/s "
            f"{out[name + '_mb_per_s']:>8} MB/s  p50 {out[name + '_p50_ms']} ms  "
            f"p99 {out[name + '_p99_ms']} ms"
        )
    print(
        f"with metrics / without, per round: {ratios}; median {out['metrics_ratio']} "
        f"({len(scrapes)} scrapes during the metered runs)"
    )
    print(json.dumps(out, sort_keys=True))
    return out


if __name__ == "__main__":
    main()
