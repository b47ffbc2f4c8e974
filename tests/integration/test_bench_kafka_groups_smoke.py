"""The Kafka-client group benchmark (``bench.kafka_groups``: a fourth member joins three with
the classic eager protocol, classic cooperative-sticky and KIP-848) still runs end to end and
reports every figure. It asserts no speed: the figures are the benchmark's report."""

from __future__ import annotations

import json
from typing import Any

from bench.kafka_groups import FIGURES, MODES, main

COUNTS = {"kept_revoked"}
"""Figures that may be 0 (cooperative and KIP-848 revoke no kept partition)."""


def test_kafka_groups_benchmark_prints_its_figures_as_one_json_line(tmp_path, capsys):
    figures: dict[str, Any] = main(
        ["--repeat", "1", "--steady-s", "1", "--heartbeat-ms", "500", "--dir", str(tmp_path)]
    )
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == figures
    for mode in MODES:
        rounds = figures[f"{mode}_rounds"]
        assert isinstance(rounds, list) and len(rounds) == 1
        for key in FIGURES:
            value = figures[f"{mode}_{key}"]
            assert isinstance(value, int | float), (mode, key)
            assert value >= 0 if key in COUNTS else value > 0, (mode, key, value)
        # the split itself, not its speed: 12 partitions over four members
        assert figures[f"{mode}_kept"] + figures[f"{mode}_moved"] == 12, mode
        assert figures[f"{mode}_fourth_owns"] == 3, mode
    # eager revokes everything, kept partitions included; the incremental protocols none
    assert figures["eager_kept_revoked"] == figures["eager_kept"]
    assert figures["cooperative_kept_revoked"] == 0
    assert figures["kip848_kept_revoked"] == 0
    for key in (
        "cooperative_join_to_settled_over_eager",
        "kip848_join_to_settled_over_eager",
        "cooperative_kept_gap_over_eager",
        "kip848_kept_gap_over_eager",
    ):
        assert figures[key] > 0, key
