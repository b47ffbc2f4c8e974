"""The fault suite's stall per fault, from a history (no containers needed)."""

from __future__ import annotations

from tests.containers.checker import Verdict, stalls_per_fault, table
from tests.containers.workload import History, Send


def _history(acks: list[float], faults: list[tuple[float, float]]) -> History:
    sends = [Send(producer=0, value=str(t).encode(), sent_at=t, acked_at=t) for t in acks]
    return History(sends=sends, faults=faults)


def test_each_fault_gets_the_longest_ack_gap_around_it():
    # acks every 0.1 s, except 3 s without any after the first fault and 1 s after the second
    acks = [i / 10 for i in range(50)] + [8.0 + i / 10 for i in range(20)]
    acks += [11.0 + i / 10 for i in range(20)]
    history = _history(acks, [(4.95, 5.0), (10.0, 10.5)])
    stalls = stalls_per_fault(history)
    assert [round(s, 2) for s in stalls] == [3.1, 1.1]


def test_a_fault_with_no_ack_after_it_stalls_until_it_healed():
    assert stalls_per_fault(_history([], [(1.0, 4.0)])) == [3.0]
    assert [round(s, 2) for s in stalls_per_fault(_history([6.0], [(1.0, 4.0)]))] == [5.0]


def test_the_table_has_the_stalls():
    verdict = Verdict("kill follower", 10, 9, 1, 0, 3.1, 5, stalls_s=[3.1, 0.4])
    assert table([verdict]).splitlines()[2].endswith("| 3.1, 0.4 s      |")
