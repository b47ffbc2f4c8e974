"""The share coordinator's decisions, pure: the state of each share partition a
``__share_group_state`` shard holds, how a record replays into it, and what each call of
Kafka's ``ShareCoordinatorShard`` decides — Initialize, Read, Write, Delete, ReadSummary — with
Kafka's fencing:

* a write (or initialize) of an older **state epoch** than stored is FENCED_STATE_EPOCH (an
  offset reset since: the writer's view is stale);
* a write or read of an older **leader epoch** than stored is FENCED_LEADER_EPOCH (the share
  partition has a newer leader: this one was deposed). A read by a newer leader records its
  epoch (durably: the read writes a snapshot), so its predecessor's later writes are fenced;
* a group id that is empty, a partition below 0: INVALID_REQUEST.

A state is kept as a whole snapshot (:class:`StoredState`); every change writes one, with the
next snapshot epoch. An *update* record (Kafka writes some between its snapshots; odradek never
does) replays by merging its batches into the snapshot (:func:`merge_batches`). Nothing here
does I/O or reads a clock (``now_ms`` is an input); every function is thread-safe.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, MutableMapping, Sequence
from dataclasses import dataclass

from node.share.persister import (
    DeliveryState,
    ShareKey,
    ShareSnapshot,
    ShareStateBatch,
    ShareSummary,
)
from odradek.errors import FencedLeaderEpochError, FencedStateEpochError, InvalidRequestError
from odradek.group_records import uuid_to_bytes
from odradek.share_state_records import (
    SHARE_SNAPSHOT_KEY_TYPE,
    SHARE_UPDATE_KEY_TYPE,
    ShareStateBatchRecord,
    ShareStateKey,
    ShareStateValue,
)

__all__ = [
    "StoredState",
    "check_key",
    "decide_initialize",
    "decide_read",
    "decide_write",
    "merge_batches",
    "record_key",
    "replay",
    "summary",
    "to_value",
    "UNINITIALIZED",
]

UNINITIALIZED = ShareSnapshot(state_epoch=0, start_offset=-1)
"""What a share partition never initialized (or deleted) reads as."""


@dataclass(frozen=True, slots=True)
class StoredState:
    """A share partition's state as its last snapshot holds it."""

    snapshot: ShareSnapshot
    snapshot_epoch: int = 0
    create_ms: int = -1
    write_ms: int = -1


def check_key(key: ShareKey) -> None:
    """Raises ``InvalidRequestError`` for a key Kafka refuses (an empty group id, a topic id
    that is not a Kafka ``Uuid`` as odradek's metadata prints it, a negative partition)."""
    if not key.group_id:
        raise InvalidRequestError("the group id must not be empty")
    try:
        uuid_to_bytes(key.topic_id)
    except ValueError:
        raise InvalidRequestError(f"topic id {key.topic_id!r} is not a topic id") from None
    if key.partition < 0:
        raise InvalidRequestError(f"partition {key.partition} is negative")


def record_key(key: ShareKey) -> ShareStateKey:
    return ShareStateKey(key.group_id, key.topic_id, key.partition, SHARE_SNAPSHOT_KEY_TYPE)


def to_value(state: StoredState) -> ShareStateValue:
    """The snapshot record's value of ``state``."""
    s = state.snapshot
    return ShareStateValue(
        snapshot_epoch=state.snapshot_epoch,
        state_epoch=s.state_epoch,
        leader_epoch=s.leader_epoch,
        start_offset=s.start_offset,
        batches=tuple(
            ShareStateBatchRecord(
                b.first_offset, b.last_offset, int(b.delivery_state), b.delivery_count
            )
            for b in s.batches
        ),
        create_timestamp=state.create_ms,
        write_timestamp=state.write_ms,
    )


def _batches(records: Iterable[ShareStateBatchRecord]) -> tuple[ShareStateBatch, ...]:
    return tuple(
        ShareStateBatch(
            b.first_offset, b.last_offset, DeliveryState(b.delivery_state), b.delivery_count
        )
        for b in records
    )


def replay(
    states: MutableMapping[ShareKey, StoredState],
    key: ShareStateKey,
    value: ShareStateValue | None,
) -> None:
    """Apply one record of the shard's partition, in log order. A tombstone forgets the
    share partition; a snapshot replaces its state; an update merges into it (an update with
    no snapshot before it is dropped, as Kafka does). Raises ``ValueError`` for a delivery
    state that is not Kafka's."""
    share_key = ShareKey(key.group_id, key.topic_id, key.partition)
    if value is None:
        states.pop(share_key, None)
        return
    if key.record_type == SHARE_SNAPSHOT_KEY_TYPE:
        states[share_key] = StoredState(
            ShareSnapshot(
                value.state_epoch, value.start_offset, value.leader_epoch, _batches(value.batches)
            ),
            value.snapshot_epoch,
            value.create_timestamp,
            value.write_timestamp,
        )
        return
    if key.record_type != SHARE_UPDATE_KEY_TYPE:
        return
    current = states.get(share_key)
    if current is None:
        return
    s = current.snapshot
    start = s.start_offset if value.start_offset == -1 else value.start_offset
    leader_epoch = s.leader_epoch if value.leader_epoch == -1 else value.leader_epoch
    states[share_key] = dataclasses.replace(
        current,
        snapshot=ShareSnapshot(
            s.state_epoch,
            start,
            leader_epoch,
            merge_batches(s.batches, _batches(value.batches), start),
        ),
    )


def merge_batches(
    old: Sequence[ShareStateBatch], new: Sequence[ShareStateBatch], start_offset: int
) -> tuple[ShareStateBatch, ...]:
    """``new`` over ``old`` (an offset both cover takes ``new``'s state and count), without
    the offsets below ``start_offset``; sorted by first offset (Kafka's
    ``combineStateBatches``)."""
    out: list[ShareStateBatch] = []
    for b in old:
        pieces = [(b.first_offset, b.last_offset)]
        for n in new:
            cut: list[tuple[int, int]] = []
            for first, last in pieces:
                if n.last_offset < first or n.first_offset > last:
                    cut.append((first, last))
                    continue
                if first < n.first_offset:
                    cut.append((first, n.first_offset - 1))
                if n.last_offset < last:
                    cut.append((n.last_offset + 1, last))
            pieces = cut
        out.extend(dataclasses.replace(b, first_offset=f, last_offset=last) for f, last in pieces)
    out.extend(new)
    clipped = []
    for b in sorted(out, key=lambda b: b.first_offset):
        if b.last_offset < start_offset:
            continue
        if b.first_offset < start_offset:
            b = dataclasses.replace(b, first_offset=start_offset)
        clipped.append(b)
    return tuple(clipped)


def _check_leader_epoch(current: StoredState | None, leader_epoch: int) -> None:
    if current is not None and current.snapshot.leader_epoch > leader_epoch:
        raise FencedLeaderEpochError(
            f"leader epoch {leader_epoch} is older than the share partition's "
            f"{current.snapshot.leader_epoch}"
        )


def _check_state_epoch(current: StoredState | None, state_epoch: int) -> None:
    if current is not None and current.snapshot.state_epoch > state_epoch:
        raise FencedStateEpochError(
            f"state epoch {state_epoch} is older than the share partition's "
            f"{current.snapshot.state_epoch}"
        )


def _next(current: StoredState | None, snapshot: ShareSnapshot, now_ms: int) -> StoredState:
    if current is None:
        return StoredState(snapshot, 0, now_ms, now_ms)
    return StoredState(snapshot, current.snapshot_epoch + 1, current.create_ms, now_ms)


def decide_initialize(
    current: StoredState | None, state_epoch: int, start_offset: int, now_ms: int
) -> StoredState:
    """InitializeShareGroupState: the share partition (re)starts at ``start_offset`` with no
    batches under ``state_epoch``, keeping the last leader epoch (so a deposed leader stays
    fenced). Raises ``FencedStateEpochError`` for an older state epoch than stored."""
    _check_state_epoch(current, state_epoch)
    leader_epoch = -1 if current is None else current.snapshot.leader_epoch
    return _next(current, ShareSnapshot(state_epoch, start_offset, leader_epoch, ()), now_ms)


def decide_write(current: StoredState | None, write: ShareSnapshot, now_ms: int) -> StoredState:
    """WriteShareGroupState: the state becomes ``write`` — its batches replace those stored
    (the persister's contract: what is read back is what was last written); a -1 start offset
    or state epoch keeps the stored one, and the leader epoch never goes back. Raises
    ``FencedLeaderEpochError`` (checked first, as Kafka) or ``FencedStateEpochError``."""
    _check_leader_epoch(current, write.leader_epoch)
    _check_state_epoch(current, write.state_epoch)
    stored = UNINITIALIZED if current is None else current.snapshot
    start = stored.start_offset if write.start_offset == -1 else write.start_offset
    state_epoch = stored.state_epoch if write.state_epoch == -1 else write.state_epoch
    leader_epoch = max(stored.leader_epoch, write.leader_epoch)
    batches = tuple(b for b in write.batches if b.last_offset >= start)
    return _next(current, ShareSnapshot(state_epoch, start, leader_epoch, batches), now_ms)


def decide_read(
    current: StoredState | None, leader_epoch: int, now_ms: int
) -> tuple[ShareSnapshot, StoredState | None]:
    """ReadShareGroupState by a leader of ``leader_epoch``: the state it reads, and the
    state to write first when it is a newer leader than stored (its epoch recorded, so that an
    older leader's writes are fenced from now on), else None. A share partition never
    initialized reads as :data:`UNINITIALIZED` and writes nothing. Raises
    ``FencedLeaderEpochError``."""
    if current is None:
        return UNINITIALIZED, None
    _check_leader_epoch(current, leader_epoch)
    s = current.snapshot
    if leader_epoch <= s.leader_epoch:
        return s, None
    after = _next(current, dataclasses.replace(s, leader_epoch=leader_epoch), now_ms)
    return after.snapshot, after


def summary(current: StoredState | None) -> ShareSummary:
    """ReadShareGroupStateSummary."""
    if current is None:
        return ShareSummary(UNINITIALIZED.state_epoch, UNINITIALIZED.start_offset)
    return ShareSummary(current.snapshot.state_epoch, current.snapshot.start_offset)
