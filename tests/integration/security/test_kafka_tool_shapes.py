"""Scripts written for Kafka's tools run against odradek unchanged (issue 27), after
AclCommandTest: ``odradek acls`` takes kafka-acls.sh's ``--add``, ``--list``, ``--remove
--force``; ``odradek users`` takes kafka-configs.sh's ``--alter --entity-type users
--entity-name U --add-config 'SCRAM-SHA-256=[...]'`` and ``--describe``."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek import Consumer, TopicPartition
from odradek.cli import main as cli
from tests.integration.helpers import wait_for
from tests.integration.security.test_acls import Cluster, cluster  # noqa: F401
from tests.integration.security.test_sasl import Setup, setup  # noqa: F401


def test_kafka_acls_shapes(
    cluster: Cluster,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "admin.properties"
    config.write_text(
        f"security.protocol=SSL\nssl.truststore.location={cluster.cafile}\n"
        f"ssl.keystore.location={cluster.pems['admin']}\n"
    )
    kafka_acls = ["acls", "--bootstrap-server", cluster.bootstrap, "--command-config", str(config)]
    grant = ["--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe"]
    assert cli([*kafka_acls, "--add", *grant, "--topic", "orders"]) == 0
    assert "Adding ACLs for resource" in capsys.readouterr().out
    with Consumer(cluster.bootstrap, **cluster.security("alice")) as consumer:
        consumer.assign([TopicPartition("orders", 0)])
        consumer.poll(timeout_ms=200)  # allowed: no error
    assert cli([*kafka_acls, "--list", "--topic", "orders"]) == 0
    out = capsys.readouterr().out
    assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in out
    assert cli([*kafka_acls, "--remove", "--force", *grant, "--topic", "orders"]) == 0
    assert "Removed ACLs" in capsys.readouterr().out
    assert cli([*kafka_acls, "--list", "--topic", "orders"]) == 0
    assert "User:alice" not in capsys.readouterr().out


def test_kafka_configs_users_shapes(
    setup: Setup,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "admin.properties"
    config.write_text(
        f"security.protocol=SSL\nssl.truststore.location={setup.cafile}\n"
        f"ssl.keystore.location={setup.admin['ssl_certfile']}\n"
    )
    kafka_configs = [
        "users", "--bootstrap-server", setup.internal, "--command-config", str(config),
    ]  # fmt: skip
    assert (
        cli(
            [
                *kafka_configs,
                "--alter",
                "--entity-type",
                "users",
                "--entity-name",
                "dave",
                "--add-config",
                "SCRAM-SHA-256=[iterations=8192,password=dave-pw]",
            ]
        )
        == 0
    )
    assert "Completed updating config for user dave." in capsys.readouterr().out
    describe = [*kafka_configs, "--describe", "--entity-type", "users", "--entity-name", "dave"]
    wait_for(lambda: cli(describe) == 0, "the description")
    assert "SCRAM-SHA-256=iterations=8192" in capsys.readouterr().out
