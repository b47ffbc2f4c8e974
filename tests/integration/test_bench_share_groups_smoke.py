"""The share-group benchmark (``bench.share_groups``: four share consumers against one and
against a classic group on one partition with slow records, and share fetch against classic
fetch) still runs end to end on small numbers and reports every figure. It asserts no speed:
the figures are the benchmark's report."""

from __future__ import annotations

import json
from typing import Any

from bench.share_groups import SCALING, main

RATIOS = (
    "share_four_over_one",
    "share_four_over_classic",
    "share_one_over_classic",
    "share_four_over_one_span",
    "fetch_share_over_classic",
    "fetch_share_over_classic_from_subscribe",
)


def test_share_groups_benchmark_prints_its_figures_as_one_json_line(tmp_path, capsys):
    figures: dict[str, Any] = main(
        [
            *("--records", "400", "--work-ms", "1", "--fetch-records", "2000"),
            *("--repeat", "1", "--dir", str(tmp_path)),
        ]
    )
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == figures
    for name in (*SCALING, "fetch_share", "fetch_classic"):
        assert figures[f"{name}_steady_rate"] > 0, name
        assert figures[f"{name}_span_rate"] > 0, name
        assert figures[f"{name}_from_subscribe_rate"] > 0, name
        assert figures[f"{name}_first_record_s"] >= 0, name
        assert 0 <= figures[f"{name}_in_poll_fraction"] <= 1, name
        # every record processed, none twice (implicit acknowledgement, nobody fails)
        assert figures[f"{name}_processed_twice"] == 0, name
        assert figures[f"{name}_processed"] == (2000 if name.startswith("fetch") else 400), name
    assert figures["share_one_members_working"] == 1
    # how many of the four got records before 400 ran out depends on when each joined
    assert 1 <= figures["share_four_members_working"] <= 4
    for key in RATIOS:
        assert figures[key] > 0, key
    assert len(figures["rounds"]) == 1
