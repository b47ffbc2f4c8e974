"""``python -m deploy.local.cluster demo --tls``: a three-node cluster on mutual TLS (between
the nodes too), on development certificates, that plaintext clients cannot use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from deploy.local.cluster import ROOT
from deploy.local.zookeeper import free_port
from odradek import Admin
from odradek.client.errors import SslAuthenticationError


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deploy.local.cluster", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=240,
        check=False,
    )


def test_demo_on_mutual_tls(tmp_path: Path) -> None:
    directory = tmp_path / "cluster"
    ports = [free_port() for _ in range(3)]
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
    try:
        demo = _run(
            "demo",
            "--tls",
            "--dir",
            str(directory),
            "--ports",
            ",".join(map(str, ports)),
            "--zookeeper-port",
            str(free_port()),
        )
        assert demo.returncode == 0, demo.stdout + demo.stderr
        # the demo produced and consumed its six records through TLS, replicated three ways
        assert "hello 5" in demo.stdout
        assert f"--command-config {directory / 'certs' / 'admin.properties'}" in demo.stdout
        certs = directory / "certs"
        with Admin(
            bootstrap,
            security_protocol="SSL",
            ssl_cafile=str(certs / "ca.crt"),
            ssl_certfile=str(certs / "client.pem"),
        ) as admin:
            assert "demo" in admin.list_topics()
        with (
            Admin(bootstrap, request_timeout_ms=3_000) as plaintext,
            pytest.raises(SslAuthenticationError, match="requires TLS"),
        ):
            plaintext.list_topics()
    finally:
        stopped = _run("stop", "--dir", str(directory))
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
