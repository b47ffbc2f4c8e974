"""The transactions benchmark (``bench.transactions``) still runs end to end and reports every
figure. It asserts no speed: the figures are the benchmark's report."""

from __future__ import annotations

import json
from typing import Any

from bench.transactions import main


def test_transactions_benchmark_prints_its_figures_as_one_json_line(tmp_path, capsys):
    figures: dict[str, Any] = main(
        [
            *("--records", "2000", "--repeat", "1", "--commit-ms", "50"),
            *("--read-records", "2000", "--read-txn-records", "500", "--txns", "5"),
            *("--dir", str(tmp_path)),
        ]
    )
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == figures
    for name in ("p1", "p4"):
        assert figures[f"txn_{name}_records_per_s"] > 0
        assert figures[f"txn_{name}_ratio"] > 0
        assert figures[f"flush_{name}_ratio"] > 0
        assert figures[f"txn_over_flush_{name}_ratio"] > 0
        assert len(figures[f"txn_{name}_ratio_rounds"]) == 1
        assert figures[f"txn_{name}_transactions"] >= 1
        assert figures[f"txn_{name}_records_per_transaction"] > 0
        for kind in ("txn", "idempotent"):  # a short run may burn less than a clock tick
            assert figures[f"client_cores_{kind}_{name}"] >= 0
    assert figures["read_committed_records_per_s"] > 0
    assert figures["read_committed_ratio"] > 0
    for name in ("p1", "p10"):
        for q in ("p50", "p99"):
            assert figures[f"endtxn_{name}_{q}_ms"] > 0
            assert figures[f"produce_{name}_{q}_ms"] > 0
            assert figures[f"endtxn_{name}_{q}_over_produce"] > 0
    assert figures["nodes_running"] == 3
