"""Kafka's simple share assignor: coverage, sharing, balance, stickiness."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from node.share_group.simple_assignor import assign_simple


def counts(result: dict[str, dict[str, frozenset[int]]]) -> dict[str, int]:
    return {m: sum(len(ps) for ps in a.values()) for m, a in result.items()}


def holders(result: dict[str, dict[str, frozenset[int]]]) -> dict[tuple[str, int], set[str]]:
    out: dict[tuple[str, int], set[str]] = {}
    for m, a in result.items():
        for t, ps in a.items():
            for p in ps:
                out.setdefault((t, p), set()).add(m)
    return out


def test_fewer_members_than_partitions_each_partition_once() -> None:
    result = assign_simple({"a": {"T"}, "b": {"T"}}, {"T": 4}, {})
    assert counts(result) == {"a": 2, "b": 2}
    assert all(len(h) == 1 for h in holders(result).values())
    assert len(holders(result)) == 4


def test_more_members_than_partitions_share_them() -> None:
    """Four members on one partition: all four read it (a consumer group would idle three)."""
    result = assign_simple({m: {"T"} for m in "abcd"}, {"T": 1}, {})
    assert all(a == {"T": frozenset({0})} for a in result.values())


def test_three_members_two_partitions() -> None:
    result = assign_simple({m: {"T"} for m in "abc"}, {"T": 2}, {})
    assert sorted(counts(result).values()) == [1, 1, 2]
    assert {tp: len(h) for tp, h in holders(result).items()} == {("T", 0): 2, ("T", 1): 2}


def test_a_new_member_takes_only_what_balance_demands() -> None:
    first = assign_simple({"a": {"T"}}, {"T": 4}, {})
    assert first["a"] == {"T": frozenset(range(4))}
    second = assign_simple({"a": {"T"}, "b": {"T"}}, {"T": 4}, first)
    assert len(second["a"]["T"]) == 2 and second["a"]["T"] <= first["a"]["T"]
    assert second["b"]["T"] == frozenset(range(4)) - second["a"]["T"]


def test_unsubscribed_and_unknown_topics_are_dropped() -> None:
    result = assign_simple(
        {"a": {"T", "gone"}}, {"T": 1, "U": 2}, {"a": {"U": frozenset({0}), "T": frozenset({0})}}
    )
    assert result == {"a": {"T": frozenset({0})}}


def test_no_topics_no_assignment() -> None:
    assert assign_simple({"a": set()}, {"T": 3}, {}) == {"a": {}}
    assert assign_simple({}, {"T": 3}, {}) == {}


def test_heterogeneous_subscriptions() -> None:
    result = assign_simple({"a": {"T"}, "b": {"U"}, "c": {"T", "U"}}, {"T": 2, "U": 1}, {})
    h = holders(result)
    assert set(h) == {("T", 0), ("T", 1), ("U", 0)}
    assert all(t in {"T"} for t in result["a"])
    assert all(t in {"U"} for t in result["b"])
    assert all(counts(result)[m] >= 1 for m in "abc")


# -- properties, against the rules themselves --------------------------------------------------

_members = st.lists(st.sampled_from([f"m{i}" for i in range(12)]), min_size=1, unique=True)
_topics = st.dictionaries(st.sampled_from(["T", "U", "V"]), st.integers(0, 6), min_size=1)


@st.composite
def _homogeneous_case(
    draw: st.DrawFn,
) -> tuple[dict[str, set[str]], dict[str, int], dict[str, Any]]:
    members = draw(_members)
    partitions = draw(_topics)
    subscribed = draw(st.sets(st.sampled_from([*sorted(partitions), "X"])))
    previous_members = draw(st.lists(st.sampled_from(members), unique=True))
    previous = assign_simple(dict.fromkeys(previous_members, subscribed), partitions, {})
    return {m: set(subscribed) for m in members}, partitions, previous


@given(_homogeneous_case())
@settings(max_examples=300, deadline=None)
def test_homogeneous_rules(
    case: tuple[dict[str, set[str]], dict[str, int], dict[str, Any]],
) -> None:
    subscriptions, partitions, previous = case
    result = assign_simple(subscriptions, partitions, previous)
    members = sorted(subscriptions)
    assert sorted(result) == members
    topics = next(iter(subscriptions.values()))
    targets = {(t, p) for t in topics for p in range(partitions.get(t, 0))}
    h = holders(result)
    assert set(h) == targets  # coverage, and only subscribed, existing partitions
    if targets:
        sharing = -(-len(members) // len(targets))
        assert all(len(x) <= sharing for x in h.values())  # sharing bound
        c = counts(result).values()
        assert max(c) - min(c) <= 1  # balance
        assert sum(c) == sharing * len(targets)
        if len(members) <= len(targets):
            assert all(len(x) == 1 for x in h.values())
    # stickiness: the assignment is a fixed point of itself
    assert assign_simple(subscriptions, partitions, result) == result


@given(
    st.dictionaries(
        st.sampled_from([f"m{i}" for i in range(8)]),
        st.sets(st.sampled_from(["T", "U", "V"]), min_size=1),
        min_size=1,
    ),
    _topics,
)
@settings(max_examples=300, deadline=None)
def test_heterogeneous_coverage(
    subscriptions: dict[str, set[str]], partitions: dict[str, int]
) -> None:
    result = assign_simple(subscriptions, partitions, {})
    h = holders(result)
    wanted = {
        (t, p) for s in subscriptions.values() for t in s for p in range(partitions.get(t, 0))
    }
    assert set(h) == wanted
    for m, a in result.items():
        assert set(a) <= subscriptions[m]
