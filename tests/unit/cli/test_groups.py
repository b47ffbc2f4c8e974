"""``odradek groups``: the reset-offsets plan and its arguments; the ``--members`` and
``--state`` tables of both group types, and ``list --type``'s argument."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from odradek.cli import main
from odradek.cli.groups import (
    assignment_cell,
    members_table,
    parse_datetime,
    reset_plan,
    state_table,
)
from odradek.client.group_admin import ConsumerGroupDescription, MemberDescription
from odradek.client.types import TopicPartition

A, B = TopicPartition("t", 0), TopicPartition("t", 1)
STARTS = {A: 10, B: 0}
ENDS = {A: 50, B: 5}


@pytest.mark.parametrize(
    ("spec", "value", "committed", "by_time", "expected"),
    [
        ("to-earliest", None, {}, {}, {A: 10, B: 0}),
        ("to-latest", None, {}, {}, {A: 50, B: 5}),
        ("to-offset", 20, {}, {}, {A: 20, B: 5}),  # clamped to B's end
        ("to-offset", 0, {}, {}, {A: 10, B: 0}),  # clamped to A's start
        ("shift-by", -15, {A: 30, B: 3}, {}, {A: 15, B: 0}),
        ("shift-by", 1, {A: 30}, {}, {A: 31, B: 5}),  # no commit: from the end
        ("to-datetime", 0, {}, {A: 42, B: None}, {A: 42, B: 5}),  # none after: the end
    ],
)
def test_reset_plan(spec, value, committed, by_time, expected) -> None:
    assert reset_plan(spec, value, [A, B], STARTS, ENDS, committed, by_time) == expected


def test_parse_datetime() -> None:
    assert parse_datetime("2024-01-02T03:04:05.678+00:00") == 1704164645678
    with pytest.raises(argparse.ArgumentTypeError):
        parse_datetime("yesterday")


def test_one_reset_spec_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["groups", "reset-offsets", "g", "--topic", "t", "--to-earliest", "--to-latest"])
    assert exit_info.value.code == 2
    assert "exactly one reset specification" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["groups", "reset-offsets", "g", "--topic", "t"])
    assert "give one of --to-earliest" in capsys.readouterr().err


# --- list --type and describe --members/--state: the tables of both group types ----------------

T1, T2 = TopicPartition("t", 1), TopicPartition("u", 0)


def _member(member_id: str, instance_id: str | None = None) -> MemberDescription:
    return MemberDescription(
        member_id=member_id,
        instance_id=instance_id,
        client_id=f"client-{member_id}",
        host="/127.0.0.1",
        member_epoch=7,
        assignment=frozenset({A, T1, T2}),
        target_assignment=frozenset({A}),
        subscribed_topics=("t", "u"),
    )


def _group(kind: str, *members: MemberDescription) -> ConsumerGroupDescription:
    return ConsumerGroupDescription(
        group_id="g",
        state="Stable",
        group_epoch=4,
        assignment_epoch=3,
        assignor="roundrobin" if kind == "classic" else "uniform",
        coordinator="127.0.0.1:9999",
        members=members,
        coordinator_id=2,
        type=kind,
        protocol_type="consumer",
        protocol="roundrobin" if kind == "classic" else "",
    )


def test_assignment_cell_is_kafkas() -> None:
    assert assignment_cell([T2, T1, A]) == "t:0,1;u:0"
    assert assignment_cell([]) == "-"


def test_members_table_of_a_classic_group() -> None:
    lines = members_table(_group("classic", _member("m1")), verbose=True)
    assert lines[0].split() == [
        "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
        "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT",
    ]  # fmt: skip
    # a classic member has no epoch and no target of its own (Kafka 4 prints "-")
    assert lines[1].split() == [
        "g",
        "m1",
        "/127.0.0.1",
        "client-m1",
        "3",
        "-",
        "t:0,1;u:0",
        "-",
        "-",
    ]
    assert members_table(_group("classic", _member("m1")))[0].split() == [
        "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
    ]  # fmt: skip


def test_members_table_of_a_consumer_group_with_a_static_member() -> None:
    kip848 = dataclasses.replace(_member("m1", "i1"), upgraded=True)
    classic = dataclasses.replace(_member("m2"), upgraded=False)
    lines = members_table(_group("consumer", kip848, classic), verbose=True)
    assert lines[0].split()[:3] == ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID"]
    assert lines[0].split()[-1] == "UPGRADED"
    assert lines[1].split() == [
        "g", "m1", "i1", "/127.0.0.1", "client-m1", "3", "7", "t:0,1;u:0", "3", "t:0", "true",
    ]  # fmt: skip
    assert lines[2].split()[-1] == "false"  # a classic member of a group being migrated
    assert lines[2].split()[2] == "-"  # no instance id


def test_state_table_verbose_epochs_only_for_a_consumer_group() -> None:
    header = ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE"]
    verbose = [*header, "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"]
    lines = state_table(_group("classic", _member("m1")), verbose=True)
    assert lines[0].split() == verbose
    assert lines[1].split() == ["g", "127.0.0.1:9999", "(2)", "roundrobin", "Stable", "-", "-", "1"]
    lines = state_table(_group("consumer", _member("m1")), verbose=True)
    assert lines[1].split()[5:] == ["4", "3", "1"]
    assert state_table(_group("consumer"))[0].split() == [*header, "#MEMBERS"]


def test_a_bad_group_type_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["groups", "list", "--type", "classic,share"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid group type 'share' (valid: classic, consumer)" in err
    assert "Traceback" not in err
