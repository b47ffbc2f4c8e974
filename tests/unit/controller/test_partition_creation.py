"""Adding partitions: Kafka's rules for the count, the automatic placement that continues the
existing spread, and the checks of an explicit placement."""

from __future__ import annotations

import pytest

from controller.assignment import assign_replicas
from controller.partition_creation import (
    JUTE_MAXBUFFER,
    MAX_PARTITIONS_PER_REQUEST,
    added_partitions,
    check_partitions_per_request,
    check_topic_znode_size,
    chunks,
    op_bytes,
    plan_new_partitions,
)
from controller.zk_data import TopicAssignment, TopicZNode, new_topic_id
from odradek.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    PolicyViolationError,
)

BROKERS = [(b, None) for b in range(5)]


def test_new_partitions_continue_the_existing_round_robin():
    # growing 5 → 10 places partitions 5..9 as a 10-partition creation would have
    existing = assign_replicas(5, 3, BROKERS, start_index=0)
    new = plan_new_partitions("t", existing, 10, BROKERS)
    assert sorted(new) == [5, 6, 7, 8, 9]
    assert {**existing, **new} == assign_replicas(10, 3, BROKERS, start_index=0)


def test_start_follows_partition_zeros_first_replica():
    existing = {0: [2, 3], 1: [3, 4]}
    new = plan_new_partitions("t", existing, 4, BROKERS)
    # startIndex = position of the first broker with id >= 2; partition 2 → broker (2 + 2) % 5
    assert new[2][0] == 4 and new[3][0] == 0
    assert all(len(r) == 2 and len(set(r)) == 2 for r in new.values())


def test_new_partitions_are_rack_aware():
    racks = [(1, "a"), (2, "a"), (3, "b"), (4, "b"), (5, "c"), (6, "c")]
    existing = assign_replicas(3, 3, racks, start_index=0)
    new = plan_new_partitions("t", existing, 12, racks)
    rack_of = dict(racks)
    assert all(len({rack_of[b] for b in r}) == 3 for r in new.values())


@pytest.mark.parametrize(
    ("count", "message"),
    [
        (2, "The topic t currently has 3 partition(s); 2 would not be an increase."),
        (3, "Topic already has 3 partition(s)."),
    ],
)
def test_count_must_grow(count, message):
    with pytest.raises(InvalidPartitionsError) as e:
        plan_new_partitions("t", {0: [0], 1: [1], 2: [2]}, count, BROKERS)
    assert e.value.message == message


def test_replication_factor_is_partition_zeros_and_needs_enough_brokers():
    with pytest.raises(InvalidReplicationFactorError):
        plan_new_partitions("t", {0: [0, 1, 2]}, 2, [(0, None), (1, None)])


def test_explicit_assignment_is_used_as_given():
    new = plan_new_partitions("t", {0: [0, 1]}, 3, BROKERS, [[3, 4], [4, 0]])
    assert new == {1: [3, 4], 2: [4, 0]}


@pytest.mark.parametrize(
    ("explicit", "words"),
    [
        ([[3, 4]], "by 2 but 1 assignments"),
        ([[3, 4], [4, 4]], "Duplicate brokers"),
        ([[3, 4], [4, 9]], "Unknown broker(s) in replica assignment: [9]"),
        ([[3, 4], [4]], "Inconsistent replication factor"),
        ([[3, 4], []], "empty replica list"),
    ],
)
def test_bad_explicit_assignment_is_invalid_replica_assignment(explicit, words):
    with pytest.raises(InvalidReplicaAssignmentError) as e:
        plan_new_partitions("t", {0: [0, 1]}, 3, BROKERS, explicit)
    assert words in e.value.message


def test_added_partitions_are_those_the_controller_does_not_know():
    assert added_partitions({0, 1}, {0: [1], 1: [2], 2: [3], 3: [1]}) == [2, 3]
    assert added_partitions({0, 1}, {0: [1], 1: [2]}) == []


def test_the_request_cap_is_kafkas():
    check_partitions_per_request(MAX_PARTITIONS_PER_REQUEST)
    with pytest.raises(PolicyViolationError) as e:
        check_partitions_per_request(MAX_PARTITIONS_PER_REQUEST + 1)
    assert e.value.message.startswith("Excessively large number of partitions per request.")


def _encoded(partitions: int, rf: int) -> bytes:
    replicas = tuple(range(100, 100 + rf))  # 3-digit broker ids
    return TopicZNode.encode(
        TopicAssignment(
            partitions=dict.fromkeys(range(partitions), replicas), topic_id=new_topic_id()
        )
    )


def test_a_capped_request_fits_a_topic_znode_and_100k_partitions_would_not():
    # the largest single request, at replication factor 3 on 3-digit broker ids
    check_topic_znode_size("t", _encoded(MAX_PARTITIONS_PER_REQUEST, 3), 10_000)
    # what the 100,000-partition request would have written: over jute.maxbuffer
    big = _encoded(100_000, 3)
    assert len(big) > JUTE_MAXBUFFER
    with pytest.raises(PolicyViolationError, match=r"jute\.maxbuffer"):
        check_topic_znode_size("t", big, 100_000)


def test_chunks_keep_order_and_bounds():
    items = list(range(10))
    out = list(chunks(items, size=lambda i: 10, max_bytes=35, max_ops=100))
    assert out == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    out = list(chunks(items, size=lambda i: 1, ops=lambda i: 2, max_bytes=100, max_ops=4))
    assert out == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]
    assert list(chunks([5], size=lambda i: 1000, max_bytes=10)) == [[5]]  # too big: alone
    assert list(chunks([], size=lambda i: 1)) == []
    assert op_bytes("/a", 10) > op_bytes("/a")
