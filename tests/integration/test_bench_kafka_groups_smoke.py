"""The Kafka-client group benchmark (``bench.kafka_groups``: a fourth member joins three with
the classic eager protocol, classic cooperative-sticky and KIP-848) still runs end to end and
reports every figure. It asserts no speed: the figures are the benchmark's report."""

from __future__ import annotations

import json
from typing import Any

from bench.kafka_groups import FIGURES, MODES, main

COUNTS = {"kept_revoked", "redelivered", "producer_max_queued"}
"""Figures that may be 0 (cooperative and KIP-848 revoke no kept partition, and may read
nothing twice)."""


def test_kafka_groups_benchmark_prints_its_figures_as_one_json_line(tmp_path, capsys):
    figures: dict[str, Any] = main(
        [
            *("--repeat", "1", "--steady-s", "1", "--heartbeat-ms", "500"),
            *("--busy-ms", "200", "--dir", str(tmp_path)),
        ]
    )
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == figures
    for prefix in ("", "busy_"):
        for mode in MODES:
            name = prefix + mode
            rounds = figures[f"{name}_rounds"]
            assert isinstance(rounds, list) and len(rounds) == 1
            for key in FIGURES:
                value = figures[f"{name}_{key}"]
                assert isinstance(value, int | float), (name, key)
                assert value >= 0 if key in COUNTS else value > 0, (name, key, value)
            # the split itself, not its speed: 12 partitions over four members
            assert figures[f"{name}_kept"] + figures[f"{name}_moved"] == 12, name
            assert figures[f"{name}_fourth_owns"] == 3, name
        # eager revokes everything, kept partitions included; the incremental protocols none
        assert figures[f"{prefix}eager_kept_revoked"] == figures[f"{prefix}eager_kept"]
        assert figures[f"{prefix}cooperative_kept_revoked"] == 0
        assert figures[f"{prefix}kip848_kept_revoked"] == 0
        for mode in ("cooperative", "kip848"):
            for key in ("join_to_settled_over_eager", "kept_gap_over_eager"):
                assert figures[f"{prefix}{mode}_{key}"] > 0, (prefix, mode, key)
