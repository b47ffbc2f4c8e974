"""The fault suite's stall per fault, from a history (no containers needed)."""

from __future__ import annotations

from tests.containers.checker import (
    Verdict,
    client_leader_stalls,
    distribution,
    role_stalls_per_fault,
    stalls_per_fault,
    table,
)
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
    assert table([verdict]).splitlines()[2].split("|")[-2].strip() == "3.1, 0.4 s"


def test_each_role_gets_its_worst_partitions_stall():
    # partition 0 (led by the faulted node) stalls 6 s, partitions 1 and 2 (it followed them)
    # 0.5 s and 0.8 s: the gap between any two acks is only the shortest of them
    sends = []
    for partition, gap_from, gap_to in ((0, 5.0, 11.0), (1, 5.0, 5.5), (2, 5.0, 5.8)):
        times = [t / 10 for t in range(150) if not gap_from < t / 10 < gap_to]
        sends += [
            Send(0, f"{partition}-{t}".encode(), t, acked_at=t, partition=partition) for t in times
        ]
    history = History(
        sends=sends, faults=[(5.0, 9.0)], fault_roles=[{0: "leader", 1: "follower", 2: "follower"}]
    )
    assert [round(s, 2) for s in stalls_per_fault(history)] == [0.5]
    stalls = role_stalls_per_fault(history)
    assert {role: round(s, 2) for role, s in stalls[0].items()} == {"leader": 6.0, "follower": 0.8}
    verdict = Verdict("kill", 1, 1, 0, 0, 0.1, 0, role_stalls_s=stalls)
    verdict.targets_s = {"follower": 1.0}
    assert verdict.stall_text() == "follower 0.8/1.0 s, leader 6.0/- s"


def test_faults_without_roles_print_the_any_write_stall():
    verdict = Verdict("pause zookeeper", 10, 9, 1, 0, 3.1, 5, stalls_s=[3.1], role_stalls_s=[{}])
    assert verdict.stall_text() == "3.1 s"


def test_each_client_gets_its_own_stall_in_the_led_partitions():
    # producer 0 (the SDK) waits 0.6 s after the kill at 5.0, producer 1 (librdkafka) 1.5 s,
    # both in partition 0 (led by the killed node); partition 1 (followed) stalls 3 s for both
    # but is not a leader's partition
    sends = []
    for producer, partition, gap_to in ((0, 0, 5.6), (1, 0, 6.5), (0, 1, 8.0), (1, 1, 8.0)):
        times = [t / 10 for t in range(120) if not 5.0 < t / 10 < gap_to]
        sends += [
            Send(
                producer, f"{producer}-{partition}-{t}".encode(), t, acked_at=t, partition=partition
            )
            for t in times
        ]
    history = History(
        sends=sends,
        faults=[(5.0, 7.0), (9.0, 9.5)],
        fault_roles=[{0: "leader+controller", 1: "follower+controller"}, {1: "follower"}],
        producer_kinds={0: "sdk", 1: "librdkafka"},
    )
    stalls = client_leader_stalls(history)
    assert [{k: round(v, 2) for k, v in s.items()} for s in stalls] == [
        {"sdk": 0.6, "librdkafka": 1.5},
        {},
    ]


def test_a_distribution_by_nearest_rank():
    assert distribution([]) == {"n": 0, "p50": 0.0, "p99": 0.0, "max": 0.0}
    values = [float(v) for v in range(1, 21)]  # 1..20
    assert distribution(values) == {"n": 20, "p50": 10.0, "p99": 20.0, "max": 20.0}
    assert distribution([3.0, 1.0, 2.0]) == {"n": 3, "p50": 2.0, "p99": 3.0, "max": 3.0}
