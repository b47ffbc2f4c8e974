"""Replica assignment: Kafka's round robin, its rack-alternated variant, and their errors."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from controller.assignment import assign_replicas, rack_alternated_broker_list
from odradek.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
)


def no_racks(*ids):
    return [(b, None) for b in ids]


def test_rack_unaware_assignment_matches_kafka():
    # Kafka AdminUtilsTest#testReplicaAssignment: 5 brokers, 10 partitions, RF 3, start 0
    assignment = assign_replicas(10, 3, no_racks(0, 1, 2, 3, 4), start_index=0)
    assert assignment == {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        5: [0, 2, 3],  # the followers shift once the leaders wrap around
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }


def test_broker_order_does_not_matter_without_racks():
    shuffled = no_racks(3, 0, 4, 1, 2)
    assert assign_replicas(10, 3, shuffled, start_index=0) == assign_replicas(
        10, 3, no_racks(0, 1, 2, 3, 4), start_index=0
    )


def test_rack_alternated_broker_list_matches_kafka():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 5, 4, 2]
    del racks[5]  # uneven racks: an exhausted rack is skipped
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 4, 2]
    nine = {b: f"rack{b // 3 + 1}" for b in range(9)}
    assert rack_alternated_broker_list(nine) == [0, 3, 6, 1, 4, 7, 2, 5, 8]


def test_rack_aware_assignment_matches_kafka():
    # Kafka AdminRackAwareTest#testGetRackAlternatedBrokerListAndAssignReplicasToBrokers
    brokers = [(0, "rack1"), (1, "rack3"), (2, "rack3"), (3, "rack2"), (4, "rack2"), (5, "rack1")]
    assignment = assign_replicas(7, 3, brokers, start_index=0)
    assert assignment == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],  # second round: shifted followers, not a repeat of partition 0
    }


@pytest.mark.parametrize("seed", range(20))
def test_rack_aware_puts_replicas_on_distinct_racks_and_spreads_evenly(seed):
    rng = random.Random(seed)
    brokers = [(b, f"rack{b % 3}") for b in range(9)]
    rng.shuffle(brokers)
    assignment = assign_replicas(18, 3, brokers, rng=rng)
    rack = dict(brokers)
    assert sorted(assignment) == list(range(18))
    for replicas in assignment.values():
        assert len(set(replicas)) == 3
        assert len({rack[b] for b in replicas}) == 3, replicas
    leader_counts = Counter(r[0] for r in assignment.values())
    replica_counts = Counter(b for r in assignment.values() for b in r)
    assert set(leader_counts.values()) == {2}  # 18 leaders over 9 brokers
    assert set(replica_counts.values()) == {6}  # 54 replicas over 9 brokers


def test_rack_aware_with_fewer_racks_than_replicas_uses_every_rack():
    brokers = [(0, "a"), (1, "a"), (2, "b"), (3, "b")]
    for replicas in assign_replicas(8, 3, brokers, start_index=1).values():
        assert len(set(replicas)) == 3
        assert {dict(brokers)[b] for b in replicas} == {"a", "b"}


@pytest.mark.parametrize("seed", range(10))
def test_rack_unaware_spreads_leaders_and_replicas_evenly(seed):
    assignment = assign_replicas(12, 2, no_racks(*range(4)), rng=random.Random(seed))
    assert Counter(r[0] for r in assignment.values()) == dict.fromkeys(range(4), 3)
    assert Counter(b for r in assignment.values() for b in r) == dict.fromkeys(range(4), 6)
    assert all(len(set(r)) == 2 for r in assignment.values())


def test_start_partition_id_continues_the_leaders_round_robin():
    # As in Kafka, only the leaders continue; the follower shift restarts from start_index.
    whole = assign_replicas(10, 3, no_racks(0, 1, 2, 3, 4), start_index=0)
    tail = assign_replicas(4, 3, no_racks(0, 1, 2, 3, 4), start_index=0, start_partition_id=6)
    assert sorted(tail) == [6, 7, 8, 9]
    assert [tail[p][0] for p in tail] == [whole[p][0] for p in range(6, 10)]


def test_replication_factor_larger_than_brokers_is_rejected():
    with pytest.raises(InvalidReplicationFactorError, match="larger than available brokers: 2"):
        assign_replicas(1, 3, no_racks(0, 1))


@pytest.mark.parametrize("rf", [0, -1])
def test_replication_factor_must_be_positive(rf):
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas(1, rf, no_racks(0, 1))


@pytest.mark.parametrize("n", [0, -3])
def test_partition_count_must_be_positive(n):
    with pytest.raises(InvalidPartitionsError):
        assign_replicas(n, 1, no_racks(0))


def test_partial_rack_information_is_rejected():
    with pytest.raises(InvalidReplicaAssignmentError, match="Not all brokers have rack"):
        assign_replicas(3, 2, [(0, "a"), (1, None), (2, "b")])


def test_single_broker_single_replica():
    assert assign_replicas(3, 1, no_racks(7), rng=random.Random(1)) == {0: [7], 1: [7], 2: [7]}
