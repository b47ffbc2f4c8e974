"""Kafka's simple share assignor (KIP-932): which partitions each share group member reads.

Kafka's ``SimpleAssignor`` (``group-coordinator/.../assignor/SimpleAssignor.java`` and its
homogeneous / heterogeneous builders). Unlike a consumer group's assignors, a partition may
go to *several* members: a share partition hands each record to one consumer at a time
itself, so when a group has more members than partitions every member still gets work.

The rules, in Kafka's order of priority:

* **Coverage.** Every partition of a subscribed topic goes to at least one member subscribed
  to it (when one is).
* **Sharing.** A partition is shared by at most ``ceil(M / P)`` members (M members, P target
  partitions; one when there are at least as many partitions as members).
* **Balance.** With every member subscribed to the same topics (Kafka's *homogeneous* case)
  the members' partition counts differ by at most one: ``ceil(M / P) * P`` assignments in all.
* **Stickiness.** A member keeps what it had where these rules allow, so a new member takes
  only what balance demands from the others.

With members subscribed to different topics (*heterogeneous*) each topic is shared among its
own subscribers by the same sharing bound, the partitions going to the least-loaded member
first; balance is best effort there, as in Kafka.

Pure functions over plain values (topic ids, partition counts, member ids); deterministic
(members and partitions are visited in sorted order). Thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import TypeAlias

__all__ = ["SIMPLE_ASSIGNOR", "Assignment", "assign_simple"]

SIMPLE_ASSIGNOR = "simple"
"""The assignor's name, as ShareGroupDescribe reports it."""

Assignment: TypeAlias = Mapping[str, frozenset[int]]
"""topic id → partitions."""

_TP: TypeAlias = tuple[str, int]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def assign_simple(
    subscriptions: Mapping[str, Set[str]],
    partitions: Mapping[str, int],
    current: Mapping[str, Assignment],
) -> dict[str, dict[str, frozenset[int]]]:
    """The target assignment: member id → topic id → partitions, for every member of
    ``subscriptions`` (member id → the topic ids it subscribes to). ``partitions``: topic id →
    partition count (a topic missing there is not assignable: it does not exist);
    ``current``: the members' previous target assignment (for stickiness)."""
    members = sorted(subscriptions)
    if not members:
        return {}
    topics = {m: {t for t in subscriptions[m] if partitions.get(t, 0) > 0} for m in members}
    held: dict[str, set[_TP]] = {
        m: {
            (t, p)
            for t, ps in current.get(m, {}).items()
            if t in topics[m]
            for p in ps
            if 0 <= p < partitions[t]
        }
        for m in members
    }
    if all(topics[m] == topics[members[0]] for m in members):
        chosen = _homogeneous(members, sorted(topics[members[0]]), partitions, held)
    else:
        chosen = _heterogeneous(members, topics, partitions, held)
    out: dict[str, dict[str, frozenset[int]]] = {}
    for m in members:
        by_topic: dict[str, set[int]] = {}
        for t, p in chosen[m]:
            by_topic.setdefault(t, set()).add(p)
        out[m] = {t: frozenset(ps) for t, ps in sorted(by_topic.items())}
    return out


def _homogeneous(
    members: list[str],
    topics: list[str],
    partitions: Mapping[str, int],
    held: Mapping[str, set[_TP]],
) -> dict[str, set[_TP]]:
    """Every member subscribed to ``topics``: balance within one, sharing bounded, sticky."""
    targets = [(t, p) for t in topics for p in range(partitions[t])]
    if not targets:
        return {m: set() for m in members}
    sharing = _ceil_div(len(members), len(targets))
    total = sharing * len(targets)
    # the members keeping the most get the larger quotas (ties: by member id)
    by_keep = sorted(members, key=lambda m: (-len(held[m]), m))
    base, extra = divmod(total, len(members))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(by_keep)}
    holders: dict[_TP, set[str]] = {tp: set() for tp in targets}
    chosen: dict[str, set[_TP]] = {m: set() for m in members}
    # keep what each member had, within its quota and the sharing bound
    for m in by_keep:
        for tp in sorted(held[m]):
            if len(chosen[m]) < quota[m] and len(holders[tp]) < sharing:
                chosen[m].add(tp)
                holders[tp].add(m)
    # fill: each member takes the least-shared partitions it does not hold yet
    order = {tp: i for i, tp in enumerate(targets)}
    for m in members:
        while len(chosen[m]) < quota[m]:
            free = [tp for tp in targets if len(holders[tp]) < sharing and m not in holders[tp]]
            if free:
                tp = min(free, key=lambda tp: (len(holders[tp]), order[tp]))
                chosen[m].add(tp)
                holders[tp].add(m)
                continue
            if not _swap_in(m, targets, sharing, holders, chosen):
                break  # cannot happen with the quotas above; kept safe
    return chosen


def _swap_in(
    m: str,
    targets: list[_TP],
    sharing: int,
    holders: dict[_TP, set[str]],
    chosen: dict[str, set[_TP]],
) -> bool:
    """Every partition with room left is one ``m`` holds already: move another member ``x``
    from a full partition ``q`` that ``m`` lacks onto one with room ``f`` that ``x`` lacks,
    and give ``q`` to ``m`` (counts and sharing stay within their bounds)."""
    rooms = [tp for tp in targets if len(holders[tp]) < sharing]
    for q in targets:
        if m in holders[q]:
            continue
        for x in sorted(holders[q]):
            for f in rooms:
                if x not in holders[f]:
                    holders[q].discard(x)
                    chosen[x].discard(q)
                    holders[f].add(x)
                    chosen[x].add(f)
                    holders[q].add(m)
                    chosen[m].add(q)
                    return True
    return False


def _heterogeneous(
    members: list[str],
    topics: Mapping[str, set[str]],
    partitions: Mapping[str, int],
    held: Mapping[str, set[_TP]],
) -> dict[str, set[_TP]]:
    """Members subscribed to different topics: each topic's partitions among its own
    subscribers, sharing bounded per topic, least-loaded member first."""
    chosen: dict[str, set[_TP]] = {m: set() for m in members}
    all_topics = sorted({t for m in members for t in topics[m]})
    for t in all_topics:
        subscribers = [m for m in members if t in topics[m]]
        count = partitions[t]
        sharing = _ceil_div(len(subscribers), count)
        per_member = _ceil_div(sharing * count, len(subscribers))
        holders: dict[_TP, set[str]] = {(t, p): set() for p in range(count)}
        for m in subscribers:
            kept = 0
            for tp in sorted(tp for tp in held[m] if tp[0] == t):
                if kept < per_member and len(holders[tp]) < sharing:
                    chosen[m].add(tp)
                    holders[tp].add(m)
                    kept += 1
        # coverage first: every partition to its least-loaded subscriber
        for p in range(count):
            tp = (t, p)
            if not holders[tp]:
                m = min(subscribers, key=lambda m: (len(chosen[m]), m))
                chosen[m].add(tp)
                holders[tp].add(m)
        # then every subscriber without a partition of the topic shares one, if room is left
        for m in subscribers:
            if any(tp[0] == t for tp in chosen[m]):
                continue
            room = [tp for tp in sorted(holders) if len(holders[tp]) < sharing]
            if room:
                tp = min(room, key=lambda tp: (len(holders[tp]), tp[1]))
                chosen[m].add(tp)
                holders[tp].add(m)
    return chosen
