"""The fault suite's judgement of duplicates and order, from a history (no containers): with
idempotent producers a value stored twice, or a producer's values out of order in a partition,
is a violation; without idempotence duplicates are only counted."""

from __future__ import annotations

from tests.containers.checker import check
from tests.containers.workload import History, Send


def _sends(values: list[tuple[bytes, int]]) -> list[Send]:
    return [
        Send(producer=0, value=v, sent_at=0.0, acked_at=0.1, partition=0, offset=o)
        for v, o in values
    ]


def _final(values: list[bytes]) -> dict[int, list[tuple[int, bytes]]]:
    return {0: list(enumerate(values))}


def _replicas(values: list[bytes]) -> dict[int, dict[int, list[tuple[int, int, int, int]]]]:
    """One node holding the log as one batch (the replica check has nothing to compare)."""
    return {1: {0: [(0, len(values) - 1, 0, 0)]}}


def test_a_clean_log_passes_either_way():
    log = [b"p0-0", b"p1-0", b"p0-1", b"p1-1"]
    for idempotent in (True, False):
        history = History(sends=_sends([(v, i) for i, v in enumerate(log)]), idempotent=idempotent)
        assert check("s", history, _final(log), _replicas(log)).violations == {}


def test_duplicates_are_violations_only_with_idempotence():
    log = [b"p0-0", b"p0-1", b"p0-1", b"p0-2"]
    sends = _sends([(b"p0-0", 0), (b"p0-1", 1), (b"p0-2", 3)])
    judged = check("s", History(sends=sends, idempotent=True), _final(log), _replicas(log))
    assert judged.duplicated == 1
    assert judged.violations["duplicated"] == ["b'p0-1' stored 2 times"]
    counted = check("s", History(sends=sends, idempotent=False), _final(log), _replicas(log))
    assert counted.duplicated == 1
    assert counted.violations == {}
    assert counted.row()[0] == "s (idempotence off)"


def test_a_producers_values_out_of_order_are_a_violation():
    log = [b"p0-0", b"p0-2", b"p1-0", b"p0-1"]
    sends = _sends([(v, i) for i, v in enumerate(log)])
    verdict = check("s", History(sends=sends, idempotent=True), _final(log), _replicas(log))
    assert verdict.violations["order"] == ["partition 0: b'p0-1' at 3 after p0-2 at 1"]
