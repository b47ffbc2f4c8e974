"""``odradek groups reset-offsets``: the plan, and its arguments."""

from __future__ import annotations

import argparse

import pytest

from odradek.cli import main
from odradek.cli.groups import parse_datetime, reset_plan
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
