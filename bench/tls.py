"""TLS benchmark: the SDK producing and consuming over mutual TLS, against plaintext in the same
run.

Two one-node clusters on one ZooKeeper, as processes on loopback: one plaintext, one whose
listener is SSL with ``ssl.client.auth=required`` (certificates from ``scripts/dev-certs.sh``;
the client presents one too). A round produces ``--records`` records of 100 bytes with acks=1
and then reads them back with a consumer, on each cluster in turn; rounds alternate which
cluster goes first. A round's ratio is its TLS figure over its plaintext figure (both measured
within seconds of each other, since the shared machine's speed drifts); the ratio reported is
the median round's. It ends with one JSON line holding every figure.

    python -m bench.tls [--records 20000] [--repeat 5] [--client-auth requested]

``--client-auth requested`` measures the TLS listener with ``ssl.client.auth=requested``
instead, which the node serves through its own TLS relay (node/security/tls_terminator.py); the
client
still presents its certificate.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deploy.local.cluster import ROOT, LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from odradek import Admin, Consumer, NewTopic, Producer, TopicPartition
from odradek.errors import OdradekError

RECORD_BYTES = 100
TOPIC = "bench"


def _now() -> float:
    return time.perf_counter()


def _produce(bootstrap: str, security: dict[str, Any], records: int) -> float:
    """Records per second producing ``records`` records with acks=1."""
    value = b"x" * RECORD_BYTES
    with Producer(bootstrap, acks=1, linger_ms=5, batch_size=65_536, **security) as producer:
        producer.send(TOPIC, value).result(timeout=60)  # connections and metadata first
        start = _now()
        for _ in range(records):
            producer.send(TOPIC, value)
        producer.flush()
        return records / (_now() - start)


def _consume(bootstrap: str, security: dict[str, Any], records: int) -> float:
    """Records per second reading the last ``records`` records of the topic."""
    tp = TopicPartition(TOPIC, 0)
    with Consumer(bootstrap, max_poll_records=5_000, **security) as consumer:
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        consumer.seek(tp, max(0, end - records))
        read = 0
        start = _now()
        deadline = start + 120
        while read < min(records, end) and _now() < deadline:
            read += len(consumer.poll(timeout_ms=500))
        return read / (_now() - start)


def _wait_for_leader(admin: Admin, name: str) -> None:
    deadline = _now() + 60
    while _now() < deadline:
        try:
            if admin.describe_topics([TOPIC])[TOPIC].partitions[0].leader >= 0:
                return
        except OdradekError:
            pass  # not known yet
        time.sleep(0.1)
    raise TimeoutError(f"no leader for {TOPIC} on the {name} cluster")


def _median_round(rounds: list[dict[str, float]], key: str) -> tuple[dict[str, float], list[float]]:
    ratios = [r[key] for r in rounds]
    median = sorted(rounds, key=lambda r: r[key])[(len(rounds) - 1) // 2]
    return median, ratios


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="python -m bench.tls")
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5, help="rounds, TLS and plaintext each")
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument(
        "--client-auth",
        choices=("required", "requested"),
        default="required",
        help="the TLS listener's ssl.client.auth (default required)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        base = Path(tmp)
        certs = base / "certs"
        subprocess.run(
            ["bash", str(ROOT / "scripts" / "dev-certs.sh"), str(certs), "1"],
            check=True,
            capture_output=True,
        )
        tls_security: dict[str, Any] = {
            "security_protocol": "SSL",
            "ssl_cafile": str(certs / "ca.crt"),
            "ssl_certfile": str(certs / "client.pem"),
        }
        tls_overrides = {
            # the single listener of listen.address is named PLAINTEXT: map it to SSL
            "listener.security.protocol.map": "PLAINTEXT:SSL",
            "ssl.keystore.location": str(certs / "node-1.pem"),
            "ssl.truststore.location": str(certs / "ca.crt"),
            "ssl.client.auth": args.client_auth,
        }
        zookeeper = ZooKeeperServer(base / "zookeeper")
        zookeeper.start()
        clusters = {
            "plaintext": LocalCluster(base / "plain", 1, zookeeper=zookeeper, chroot="/plain"),
            "tls": LocalCluster(
                base / "tls", 1, zookeeper=zookeeper, chroot="/tls", overrides=tls_overrides
            ),
        }
        security = {"plaintext": {}, "tls": tls_security}
        try:
            for name, cluster in clusters.items():
                cluster.start()
                with Admin(cluster.bootstrap_servers, **security[name]) as admin:
                    admin.create_topics([NewTopic(TOPIC, 1, 1)])
                    _wait_for_leader(admin, name)
            rounds: list[dict[str, float]] = []
            for i in range(max(1, args.repeat)):
                order = ["plaintext", "tls"] if i % 2 == 0 else ["tls", "plaintext"]
                figures: dict[str, float] = {}
                for what, run in (("produce", _produce), ("consume", _consume)):
                    measure: Callable[[str, dict[str, Any], int], float] = run
                    for name in order:
                        rate = measure(
                            clusters[name].bootstrap_servers, security[name], args.records
                        )
                        figures[f"{what}_{name}_records_per_s"] = round(rate, 1)
                    figures[f"{what}_tls_ratio"] = round(
                        figures[f"{what}_tls_records_per_s"]
                        / figures[f"{what}_plaintext_records_per_s"],
                        3,
                    )
                print(f"round {i + 1}: {figures}", flush=True)
                rounds.append(figures)
        finally:
            for cluster in clusters.values():
                cluster.stop()
            zookeeper.stop()
    out: dict[str, object] = {
        "records": args.records,
        "record_bytes": RECORD_BYTES,
        "client_auth": args.client_auth,
    }
    for what in ("produce", "consume"):
        median, ratios = _median_round(rounds, f"{what}_tls_ratio")
        for key in (f"{what}_plaintext_records_per_s", f"{what}_tls_records_per_s"):
            out[key] = median[key]
        out[f"{what}_tls_ratio"] = median[f"{what}_tls_ratio"]
        out[f"{what}_tls_ratios"] = ratios
        out[f"{what}_tls_ratio_spread"] = round(statistics.pstdev(ratios), 3)
    print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    main()
