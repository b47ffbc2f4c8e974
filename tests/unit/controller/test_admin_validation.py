"""Pure checks of the Admin service: explicit assignments and topic name collisions."""

from __future__ import annotations

import pytest

from node.admin.admin_manager import has_collision, validate_replica_assignment
from odradek.errors import InvalidReplicaAssignmentError


def test_valid_explicit_assignment():
    assert validate_replica_assignment([(1, [2, 1]), (0, [1, 2])], {1, 2, 3}) == {
        1: [2, 1],
        0: [1, 2],
    }


@pytest.mark.parametrize(
    ("assignments", "match"),
    [
        ([(0, [1]), (0, [2])], "assigned twice"),
        ([(0, [])], "no replicas"),
        ([(0, [1, 1])], "Duplicate replica"),
        ([(0, [1]), (2, [2])], "consecutive 0-based"),
        ([(1, [1])], "consecutive 0-based"),
        ([(0, [1, 2]), (1, [1])], "same number of replicas"),
        ([(0, [1, 7])], r"Unknown broker\(s\) in replica assignment: \[7\]"),
    ],
)
def test_invalid_explicit_assignments(assignments, match):
    with pytest.raises(InvalidReplicaAssignmentError, match=match):
        validate_replica_assignment(assignments, {1, 2})


def test_topic_name_collisions():
    assert has_collision("a.b", "a_b")
    assert has_collision("a_b", "a.b")
    assert not has_collision("a.b", "a.c")
