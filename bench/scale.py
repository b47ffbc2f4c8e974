"""Scale benchmark: how topic creation, controller failover and a node's restart grow with the
number of partitions in the cluster.

For each size (default 1,000, 10,000 and 50,000 partitions), on a fresh local cluster
(``--nodes`` node processes on loopback and one ZooKeeper):

* **creation**: CreateTopics in requests of at most 10,000 partitions (the per-request cap,
  ``controller.partition_creation.MAX_PARTITIONS_PER_REQUEST``), timed until every partition
  has a leader in the metadata a node serves (``create_requests_s``: until the requests
  answered, i.e. the controller had written every partition's state);
* **restart**: a node that is not the controller is stopped cleanly, then started again, timed
  from its start until every partition has a leader again (its logs are loaded, it registers,
  the controller sends it LeaderAndIsr);
* **failover**: the controller's node is SIGKILLed, timed until another node is the controller
  and every partition has a live leader (or, with all its replicas on the dead node, is marked
  leaderless). This includes ZooKeeper's session timeout (``zookeeper.session.timeout.ms``,
  reported), which does not grow with the size; ``failover_beyond_session_s`` is the rest.

Each figure is also given as a ratio to the first (smallest) size's, measured in the same
run; the run ends with one JSON line holding every figure. A size the machine cannot hold is
skipped with the reason (each partition replica keeps about three files open: a node needs
``RLIMIT_NOFILE`` above three times its replicas), and every wait has a deadline
(``--phase-timeout-s``), so a run is bounded in time. Run by hand, not in CI::

    python -m bench.scale [--sizes 1000,10000,50000] [--nodes 3] [--rf 1]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from controller.partition_creation import MAX_PARTITIONS_PER_REQUEST
from deploy.local.cluster import LocalCluster
from odradek import Admin, NewTopic
from odradek.client.metadata import ClusterMetadata

SESSION_TIMEOUT_MS = 6_000
FILES_PER_REPLICA = 3
FILES_SLACK = 1_000


class PhaseTimeoutError(Exception):
    pass


POLL_S = 0.2


def _wait(condition: Callable[[], bool], deadline: float, what: str) -> None:
    """Poll ``condition`` every ``POLL_S`` (the run sets it: one metadata answer of 50,000
    partitions is a load on a node of its own)."""
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except Exception:  # a node may be down, or behind, while we poll
            pass
        time.sleep(POLL_S)
    raise PhaseTimeoutError(f"timed out waiting for {what}")


def _all_led(
    admin: Admin, size: int, live: set[int], dead_only: Callable[[tuple[int, ...]], bool]
) -> bool:
    cluster: ClusterMetadata = admin.cluster_metadata()
    partitions = [p for t in cluster.topics.values() for p in t.partitions]
    if len(partitions) != size:
        return False
    return all(p.leader in live or (dead_only(p.replicas) and p.leader < 0) for p in partitions)


def _raise_file_limit() -> int:
    """Raise this process's (and so its children's) open-file limit to the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        return hard
    return hard if hard != resource.RLIM_INFINITY else 1 << 20


def measure(size: int, args: argparse.Namespace, directory: Path) -> dict[str, float]:
    """The three figures for one size, in seconds. Raises ``PhaseTimeoutError``."""
    cluster = LocalCluster(
        directory,
        args.nodes,
        overrides={
            "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "controlled.shutdown.max.retries": "1",
        },
    )
    cluster.start()
    everyone = set(range(args.nodes))
    try:
        with Admin(cluster.bootstrap_servers, request_timeout_ms=120_000) as admin:
            _wait(
                lambda: admin.describe_cluster().controller_id >= 0, _deadline(args), "a controller"
            )
            # creation
            start = time.monotonic()
            deadline = start + args.phase_timeout_s
            remaining, index = size, 0
            while remaining > 0:
                count = min(remaining, MAX_PARTITIONS_PER_REQUEST)
                wait_ms = max(1, int((deadline - time.monotonic()) * 1000))
                error = admin.create_topics(
                    [NewTopic(f"scale-{index}", count, args.rf)], timeout_ms=wait_ms
                )[f"scale-{index}"]
                if error is not None:
                    raise PhaseTimeoutError(f"creating scale-{index}: {error}")
                remaining -= count
                index += 1
            requested = time.monotonic() - start
            _wait(lambda: _all_led(admin, size, everyone, lambda _r: False), deadline, "leaders")
            creation = time.monotonic() - start

            # restart of a node that is not the controller
            controller = admin.describe_cluster().controller_id
            other = next(n for n in sorted(everyone) if n != controller)
            stop_start = time.monotonic()
            cluster.node(other).stop(timeout_s=args.phase_timeout_s)
            stopped = time.monotonic() - stop_start
            start = time.monotonic()
            cluster.node(other).start(timeout_s=args.phase_timeout_s)
            _wait(
                lambda: _all_led(admin, size, everyone, lambda _r: False),
                start + args.phase_timeout_s,
                "every partition led after the restart",
            )
            restart = time.monotonic() - start

        # controller failover: kill the controller's node
        with Admin(cluster.bootstrap_servers, request_timeout_ms=120_000) as admin:
            controller = admin.describe_cluster().controller_id
        survivors = everyone - {controller}
        bootstrap = ",".join(cluster.node(n).address for n in sorted(survivors))
        with Admin(bootstrap, request_timeout_ms=120_000) as admin:
            start = time.monotonic()
            cluster.node(controller).kill()

            def failed_over() -> bool:
                now = admin.describe_cluster().controller_id
                return now in survivors and _all_led(
                    admin, size, survivors, lambda replicas: set(replicas) <= {controller}
                )

            _wait(failed_over, start + args.phase_timeout_s, "the controller failover")
            failover = time.monotonic() - start
    finally:
        cluster.kill_all()
    return {
        "creation_s": round(creation, 2),
        "create_requests_s": round(requested, 2),
        "restart_s": round(restart, 2),
        "stop_s": round(stopped, 2),
        "failover_s": round(failover, 2),
        "failover_beyond_session_s": round(failover - SESSION_TIMEOUT_MS / 1000, 2),
    }


def _deadline(args: argparse.Namespace) -> float:
    timeout: float = args.phase_timeout_s
    return time.monotonic() + timeout


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="python -m bench.scale")
    parser.add_argument(
        "--sizes",
        default="1000,10000,50000",
        help="partition counts, comma-separated; the first is the baseline of the ratios",
    )
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--rf", type=int, default=1, help="replication factor")
    parser.add_argument(
        "--phase-timeout-s", type=float, default=900.0, help="deadline of each timed wait"
    )
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    file_limit = _raise_file_limit()
    out: dict[str, object] = {
        "sizes": sizes,
        "nodes": args.nodes,
        "replication_factor": args.rf,
        "session_timeout_ms": SESSION_TIMEOUT_MS,
        "open_file_limit": file_limit,
    }
    figures: dict[int, dict[str, float]] = {}
    skipped: dict[str, str] = {}
    root = args.dir or Path(tempfile.mkdtemp(prefix="odradek-scale-"))
    try:
        for size in sizes:
            per_node = -(-size * args.rf // args.nodes)
            needed = per_node * FILES_PER_REPLICA + FILES_SLACK
            if needed > file_limit:
                skipped[str(size)] = (
                    f"needs about {needed} open files per node ({per_node} replicas), above "
                    f"RLIMIT_NOFILE {file_limit}: use more --nodes or raise the limit"
                )
                print(f"{size} partitions: skipped: {skipped[str(size)]}", flush=True)
                continue
            global POLL_S
            POLL_S = 0.2 if size < 10_000 else 1.0
            try:
                figures[size] = measure(size, args, root / f"size-{size}")
            except PhaseTimeoutError as exc:
                skipped[str(size)] = str(exc)
                print(f"{size} partitions: {exc}", flush=True)
                continue
            finally:
                shutil.rmtree(root / f"size-{size}", ignore_errors=True)
            print(f"{size} partitions: {figures[size]}", flush=True)
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    base = figures.get(sizes[0])
    for key in ("creation_s", "restart_s", "failover_s", "failover_beyond_session_s"):
        out[key] = {str(s): f[key] for s, f in figures.items()}
        if base is not None:
            out[key[: -len("_s")] + "_ratio"] = {
                str(s): round(f[key] / base[key], 2) if base[key] > 0 else None
                for s, f in figures.items()
            }
    out["skipped"] = skipped
    print(json.dumps(out, sort_keys=True))
    return out


if __name__ == "__main__":
    main()
