"""What a new user hit starting and checking nodes: a taken port, ``node health``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from deploy.local.cluster import ROOT
from deploy.local.zookeeper import free_port


def _node_main(*args: str, timeout_s: float = 90) -> subprocess.CompletedProcess[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "node.main", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        out, err = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"the node kept running:\n{out}\n{err}") from None
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def test_a_node_refuses_a_port_another_node_holds(make_cluster, tmp_path):
    cluster = make_cluster(1)
    held = cluster.node(0)
    second = _node_main(
        "start",
        "--node-id",
        "7",
        "--listen",
        held.address,
        "--log-dirs",
        str(tmp_path / "second"),
        "--zookeeper",
        held.zookeeper_connect,
    )
    assert second.returncode == 1, second.stdout + second.stderr
    assert "listening on" not in second.stdout
    errors = [line for line in second.stderr.splitlines() if "error" in line]
    assert errors == [
        f"odradek node: error: cannot start node 7: cannot listen on {held.address} "
        "(listener PLAINTEXT): address already in use"
    ], second.stderr
    assert held.running


def _odradek(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "odradek", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_node_health_says_serving_and_takes_bootstrap_server_like_every_command(make_cluster):
    cluster = make_cluster(1)
    address = cluster.node(0).address
    down = f"127.0.0.1:{free_port()}"
    serving = f"{address}: SERVING\n"
    for args, env in [
        (("node", "health", "--bootstrap-server", address), {}),
        (("--bootstrap-server", address, "node", "health"), {}),
        (("node", "health"), {"ODRADEK_BOOTSTRAP_SERVERS": address}),
    ]:
        healthy = _odradek(*args, env=env)
        assert (healthy.returncode, healthy.stdout, healthy.stderr) == (0, serving, ""), args
    # the old option still works, and says it is deprecated
    old = _odradek("node", "health", "--address", address)
    assert (old.returncode, old.stdout) == (0, serving)
    assert old.stderr == (
        "odradek node health: warning: --address is deprecated, use --bootstrap-server\n"
    )
    # a positional address: what to type instead, on one line
    positional = _odradek("node", "health", address)
    assert positional.returncode == 2
    assert positional.stderr == (
        "odradek node health: error: the node's address goes after --bootstrap-server: "
        f"odradek node health --bootstrap-server {address}\n"
    )
    # a node that does not answer: one line naming it, exit 1; the live one is still reported
    both = _odradek("node", "health", "--bootstrap-server", f"{address},{down}", "--timeout", "1")
    assert both.returncode == 1
    assert both.stdout == serving
    assert both.stderr.splitlines() == [f"odradek node health: {down}: UNAVAILABLE"]


def test_log_format_json_writes_one_object_per_line(make_cluster):
    cluster = make_cluster(1, log_format="json")
    node = cluster.node(0)
    lines = node.log_path.read_text().splitlines()
    # the node's log records are JSON objects, none in the text format (gRPC's C core may
    # write lines of its own to stderr: they are not the node's records)
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert records, lines
    assert not [line for line in lines if re.match(r"\d{4}-\d\d-\d\d \S+ [A-Z]+ \[", line)]
    assert all({"ts", "level", "logger", "thread", "message"} <= set(r) for r in records)
    assert all(r["node_id"] == 0 for r in records)
    assert any(r["message"].startswith("node 0 serving on") for r in records)
