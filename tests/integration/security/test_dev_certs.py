"""scripts/dev-certs.sh makes certificates a TLS node with an authorizer accepts: the node's
own subject and the admin's, as the script documents them, are the super users."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from deploy.local.cluster import ROOT
from node.config import NodeConfig
from node.listeners import Listener
from node.security.authorizer import AuthorizerConfig
from node.security.tls import SslConfig
from node.server import Node
from odradek.cli import main as cli


def test_a_cluster_on_dev_certificates(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str]
) -> None:
    certs = tmp_path / "certs"
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "dev-certs.sh"), str(certs), "1"],
        check=True,
        capture_output=True,
    )
    config = NodeConfig(
        node_id=1,
        log_dirs=(tmp_path / "data",),
        zookeeper_connect=zk_connect,
        listeners=(Listener("SSL", "127.0.0.1", 0),),
        advertised_listeners=(Listener("SSL", "localhost", 0),),
        ssl=SslConfig(
            keystore_location=str(certs / "node-1.pem"),
            truststore_location=str(certs / "ca.crt"),
            client_auth="required",
        ),
        authorizer=AuthorizerConfig(
            authorizer_class_name="kafka.security.authorizer.AclAuthorizer",
            super_users=("User:CN=node-1,OU=Brokers", "User:CN=admin,OU=Users"),
        ),
        zookeeper_session_timeout_ms=6_000,
    )
    node = Node(config)
    try:
        node.start()
        base = [
            "--bootstrap-server",
            f"localhost:{node.port}",
            "--command-config",
            str(certs / "admin.properties"),
        ]
        # the controller reached the node as CN=node-1 (a super user) and the admin is one
        assert cli([*base, "topics", "create", "dev", "--partitions", "1"]) == 0
        assert cli([*base, "acls", "list"]) == 0
        client = tmp_path / "client.properties"
        client.write_text(
            (certs / "admin.properties").read_text().replace("admin.pem", "client.pem")
        )
        capsys.readouterr()
        # the other client certificate is no super user: it sees no topic
        assert (
            cli(
                [
                    "--bootstrap-server",
                    f"localhost:{node.port}",
                    "--command-config",
                    str(client),
                    "topics",
                    "list",
                ]
            )
            == 0
        )
        assert "dev" not in capsys.readouterr().out
    finally:
        node.stop(controlled=False)
