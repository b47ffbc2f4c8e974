"""Random interleavings of acquire / accept / release / reject / lock expiry / a member's
session closing / a new leader loading the state, on a SharePartition over a log of random
batches, against what the test saw delivered:

* an accepted record is never delivered again, nor a rejected one;
* a record's delivery count is the number of times it was delivered, and never passes
  ``group.share.delivery.count.limit``;
* nothing is lost: at the end, with every lock expired, fetching and accepting until nothing
  comes delivers every record not accepted, rejected or at its delivery limit;
* the start offset never passes a record that may still be delivered, and never goes back.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from node.share.partition import (
    AcknowledgementBatch,
    AcknowledgeType,
    FetchedBatch,
    SharePartition,
)
from node.share.persister import ShareKey
from node.share.volatile_persister import VolatilePersister
from odradek.clock import ManualClock

KEY = ShareKey("g", "t", 0)
LOCK_MS = 100
LIMIT = 3
MEMBERS = ("a", "b", "c")


def _log(sizes: list[int]) -> list[FetchedBatch]:
    batches, offset = [], 0
    for size in sizes:
        batches.append(FetchedBatch(offset, offset + size - 1))
        offset += size
    return batches


def _read(log: list[FetchedBatch], fetch_offset: int, count: int) -> list[FetchedBatch]:
    return [b for b in log if b.last_offset >= fetch_offset][:count]


step = st.one_of(
    st.tuples(st.just("acquire"), st.sampled_from(MEMBERS), st.integers(1, 8), st.integers(1, 3)),
    st.tuples(
        st.just("ack"),
        st.sampled_from(MEMBERS),
        st.sampled_from([AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT]),
        st.integers(0, 5),
    ),
    st.tuples(st.just("tick"), st.integers(1, 2 * LOCK_MS)),
    st.tuples(st.just("close"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("failover")),
)


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=8), steps=st.lists(step, max_size=40))
def test_interleavings_deliver_as_kafka(sizes: list[int], steps: list[tuple[object, ...]]) -> None:
    log = _log(sizes)
    log_end = log[-1].last_offset + 1
    persister = VolatilePersister()
    clock = ManualClock()
    epoch = 1

    def new_leader() -> SharePartition:
        sp = SharePartition(KEY, persister, clock, leader_epoch=epoch, delivery_count_limit=LIMIT)
        sp.load(reset_offset=0)
        return sp

    sp = new_leader()
    delivered = dict.fromkeys(range(log_end), 0)
    done: set[int] = set()  # accepted or rejected
    held: dict[str, set[int]] = {
        m: set() for m in (*MEMBERS, "drain")
    }  # what each member may still ack
    last_start = 0

    def check_acquired(member: str, ranges: list[tuple[int, int, int]]) -> None:
        for first, last, count in ranges:
            for offset in range(first, last + 1):
                assert offset not in done, f"offset {offset} delivered again after it was done"
                delivered[offset] += 1
                assert count == delivered[offset]
                assert count <= LIMIT
                for others in held.values():
                    others.discard(offset)
                held[member].add(offset)

    for s in steps:
        if s[0] == "acquire":
            _, member, max_records, reads = s
            assert isinstance(member, str) and isinstance(max_records, int)
            assert isinstance(reads, int)
            error, acquired = sp.acquire(
                member,
                _read(log, sp.next_fetch_offset(), reads),
                max_records=max_records,
                lock_duration_ms=LOCK_MS,
            )
            assert error == 0
            check_acquired(
                member, [(a.first_offset, a.last_offset, a.delivery_count) for a in acquired]
            )
        elif s[0] == "ack":
            _, member, kind, pick = s
            assert isinstance(member, str) and isinstance(pick, int)
            mine = sorted(held[member])
            if not mine:
                continue
            offset = mine[pick % len(mine)]
            error = sp.acknowledge(member, [AcknowledgementBatch(offset, offset, (int(kind),))])  # type: ignore[call-overload]
            if error:  # its lock expired meanwhile
                assert error == 121
                held[member].discard(offset)
                continue
            held[member].discard(offset)
            if kind != AcknowledgeType.RELEASE:
                done.add(offset)
        elif s[0] == "tick":
            assert isinstance(s[1], int)
            clock.advance(s[1])
        elif s[0] == "close":
            assert isinstance(s[1], str)
            assert sp.release_member(s[1]) == 0
            held[s[1]].clear()
        else:
            epoch += 1
            sp = new_leader()
            for m in MEMBERS:
                held[m].clear()
        assert sp.start_offset >= last_start
        last_start = sp.start_offset
        assert all(
            o in done or delivered[o] >= LIMIT for o in range(sp.start_offset) if o < log_end
        )

    # drain: every lock expires, then one member takes and accepts all that is left
    clock.advance(LOCK_MS)
    for m in MEMBERS:
        held[m].clear()
    while True:
        error, acquired = sp.acquire(
            "drain",
            _read(log, sp.next_fetch_offset(), len(log)),
            max_records=log_end,
            lock_duration_ms=LOCK_MS,
        )
        assert error == 0
        if not acquired:
            break
        check_acquired(
            "drain", [(a.first_offset, a.last_offset, a.delivery_count) for a in acquired]
        )
        batches = [
            AcknowledgementBatch(a.first_offset, a.last_offset, (int(AcknowledgeType.ACCEPT),))
            for a in acquired
        ]
        assert sp.acknowledge("drain", batches) == 0
        for a in acquired:
            done.update(range(a.first_offset, a.last_offset + 1))
    lost = [o for o in range(log_end) if o not in done and delivered[o] < LIMIT]
    assert not lost, f"never delivered again: {lost}"
    assert sp.start_offset == log_end
