"""kafka-acls.sh's and kafka-configs.sh's shapes turned into odradek's subcommands (issue 27):
operators' scripts written for Kafka's tools run unchanged."""

from __future__ import annotations

import pytest

from odradek.cli import main
from odradek.cli.common import InputError
from odradek.cli.kafka_shapes import rewrite


def test_kafka_acls_actions_become_subcommands() -> None:
    assert rewrite(
        [
            "acls",
            "--bootstrap-server",
            "h:1",
            "--add",
            "--allow-principal",
            "User:a",
            "--topic",
            "t",
        ]
    ) == ["acls", "add", "--bootstrap-server", "h:1", "--allow-principal", "User:a", "--topic", "t"]
    assert rewrite(["--bootstrap-server", "h:1", "acls", "--list", "--topic", "t"]) == [
        "--bootstrap-server", "h:1", "acls", "list", "--topic", "t",
    ]  # fmt: skip
    assert rewrite(["acls", "--remove", "--force", "--topic", "t"]) == [
        "acls", "remove", "--topic", "t",
    ]  # fmt: skip
    with pytest.raises(InputError, match="one of --add"):
        rewrite(["acls", "--add", "--remove", "--topic", "t"])


def test_kafka_configs_users_become_subcommands() -> None:
    shape = [
        "--command-config", "admin.properties", "users", "--bootstrap-server", "h:1",
        "--alter", "--entity-type", "users", "--entity-name", "alice",
        "--add-config", "SCRAM-SHA-256=[iterations=8192,password=pw]",
    ]  # fmt: skip
    assert rewrite(shape) == [
        "--command-config", "admin.properties", "users", "alter", "--bootstrap-server", "h:1",
        "--entity-name", "alice", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=pw]",
    ]  # fmt: skip
    assert rewrite(["users", "--describe", "--entity-type=users"]) == ["users", "describe"]
    with pytest.raises(InputError, match="--entity-type topics"):
        rewrite(["users", "--alter", "--entity-type", "topics", "--entity-name", "t"])


def test_odradek_s_own_shapes_and_other_commands_are_untouched() -> None:
    for argv in (
        ["acls", "add", "--topic", "t"],
        ["users", "describe"],
        ["topics", "--list"],
        ["consume", "acls", "--from-beginning"],
    ):
        assert rewrite(argv) == argv


def test_a_shape_it_cannot_take_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["users", "--alter", "--entity-type", "brokers", "--entity-name", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--entity-type brokers" in err[0]
