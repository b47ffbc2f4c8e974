"""The share coordinator's pure decisions (node.share_coordinator.share_state): Kafka's fencing
(FENCED_STATE_EPOCH for an older state epoch, FENCED_LEADER_EPOCH for an older leader epoch,
checked first), a write replacing the stored batches, a newer leader's read recording its
epoch, initialize keeping the leader epoch, replay of snapshots, updates and tombstones, and the
batch merge of update records."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from node.share.persister import DeliveryState, ShareKey, ShareSnapshot, ShareStateBatch
from node.share_coordinator import share_state as ss
from odradek.errors import FencedLeaderEpochError, FencedStateEpochError, InvalidRequestError
from odradek.share_state_records import (
    SHARE_UPDATE_KEY_TYPE,
    ShareStateBatchRecord,
    ShareStateKey,
    ShareStateValue,
)

A, ACK, ARC = DeliveryState.AVAILABLE, DeliveryState.ACKNOWLEDGED, DeliveryState.ARCHIVED
KEY = ShareKey("g", "AQIDBAUGBwgJCgsMDQ4PEA", 0)


def _stored(
    state_epoch: int = 1, start: int = 0, leader: int = 3, batches: Sequence[ShareStateBatch] = ()
) -> ss.StoredState:
    return ss.StoredState(ShareSnapshot(state_epoch, start, leader, tuple(batches)), 4, 10, 20)


def test_write_of_an_older_state_epoch_is_fenced() -> None:
    with pytest.raises(FencedStateEpochError) as e:
        ss.decide_write(_stored(state_epoch=2), ShareSnapshot(1, 0, 3), now_ms=1)
    assert e.value.code == 124


def test_write_or_read_of_an_older_leader_epoch_is_fenced_first() -> None:
    with pytest.raises(FencedLeaderEpochError) as e:
        # both epochs old: the leader epoch is checked first, as Kafka
        ss.decide_write(_stored(state_epoch=2, leader=3), ShareSnapshot(1, 0, 2), now_ms=1)
    assert e.value.code == 74
    with pytest.raises(FencedLeaderEpochError):
        ss.decide_read(_stored(leader=3), leader_epoch=2, now_ms=1)


def test_write_replaces_the_batches_and_moves_the_snapshot_epoch() -> None:
    before = _stored(batches=[ShareStateBatch(0, 9, ACK, 1)])
    after = ss.decide_write(
        before, ShareSnapshot(1, 5, 3, (ShareStateBatch(5, 6, ARC, 5),)), now_ms=99
    )
    assert after.snapshot == ShareSnapshot(1, 5, 3, (ShareStateBatch(5, 6, ARC, 5),))
    assert (after.snapshot_epoch, after.create_ms, after.write_ms) == (5, 10, 99)


def test_write_with_unset_fields_keeps_the_stored_ones() -> None:
    after = ss.decide_write(_stored(state_epoch=2, start=7, leader=3), ShareSnapshot(2, -1, 4), 1)
    assert after.snapshot.leader_epoch == 4
    assert after.snapshot.start_offset == 7
    # a -1 state epoch is compared as Kafka does: older than any stored one
    with pytest.raises(FencedStateEpochError):
        ss.decide_write(_stored(state_epoch=2), ShareSnapshot(-1, -1, 4), 1)


def test_write_drops_batches_below_the_start_offset() -> None:
    after = ss.decide_write(
        None,
        ShareSnapshot(0, 10, 0, (ShareStateBatch(0, 4, ACK, 1), ShareStateBatch(10, 12, A, 2))),
        now_ms=1,
    )
    assert after.snapshot.batches == (ShareStateBatch(10, 12, A, 2),)
    assert (after.snapshot_epoch, after.create_ms) == (0, 1)


def test_read_of_a_newer_leader_records_its_epoch() -> None:
    stored = _stored(leader=3, batches=[ShareStateBatch(0, 1, ACK, 1)])
    seen, after = ss.decide_read(stored, leader_epoch=3, now_ms=1)
    assert seen == stored.snapshot and after is None
    seen, after = ss.decide_read(stored, leader_epoch=5, now_ms=1)
    assert after is not None and after.snapshot.leader_epoch == 5
    assert seen == after.snapshot and seen.batches == stored.snapshot.batches
    # the old leader is fenced from then on
    with pytest.raises(FencedLeaderEpochError):
        ss.decide_write(after, ShareSnapshot(1, 0, 3), now_ms=2)


def test_uninitialized_reads_as_epoch_0_start_minus_1_and_writes_nothing() -> None:
    assert ss.decide_read(None, leader_epoch=0, now_ms=1) == (ss.UNINITIALIZED, None)
    assert ss.summary(None).start_offset == -1


def test_initialize_resets_the_batches_keeps_the_leader_epoch_fences_older_state() -> None:
    stored = _stored(state_epoch=2, start=3, leader=7, batches=[ShareStateBatch(3, 5, ACK, 1)])
    after = ss.decide_initialize(stored, state_epoch=3, start_offset=50, now_ms=1)
    assert after.snapshot == ShareSnapshot(3, 50, 7, ())
    with pytest.raises(FencedStateEpochError):
        ss.decide_initialize(after, state_epoch=2, start_offset=0, now_ms=2)
    assert ss.decide_initialize(None, 0, 0, 1).snapshot == ShareSnapshot(0, 0, -1, ())


def test_replay_snapshot_update_and_tombstone() -> None:
    states: dict[ShareKey, ss.StoredState] = {}
    key = ss.record_key(KEY)
    ss.replay(states, key, ss.to_value(_stored(batches=[ShareStateBatch(0, 9, A, 1)])))
    assert states[KEY].snapshot.batches == (ShareStateBatch(0, 9, A, 1),)
    update = ShareStateKey(KEY.group_id, KEY.topic_id, KEY.partition, SHARE_UPDATE_KEY_TYPE)
    ss.replay(states, update, ShareStateValue(5, -1, 6, 2, (ShareStateBatchRecord(4, 5, 2, 2),)))
    assert states[KEY].snapshot == ShareSnapshot(
        1,
        2,
        6,
        (ShareStateBatch(2, 3, A, 1), ShareStateBatch(4, 5, ACK, 2), ShareStateBatch(6, 9, A, 1)),
    )
    ss.replay(states, key, None)
    assert KEY not in states
    ss.replay(states, update, ShareStateValue(5, -1, 6, 2))  # no snapshot before: dropped
    assert KEY not in states


def test_to_value_round_trips_through_replay() -> None:
    stored = _stored(batches=[ShareStateBatch(0, 3, ARC, 4)])
    states: dict[ShareKey, ss.StoredState] = {}
    ss.replay(states, ss.record_key(KEY), ss.to_value(stored))
    assert states[KEY] == stored


def test_invalid_keys() -> None:
    for bad in (
        ShareKey("", KEY.topic_id, 0),
        ShareKey("g", "", 0),
        ShareKey("g", "not-a-topic-id", 0),
        ShareKey("g", KEY.topic_id, -1),
    ):
        with pytest.raises(InvalidRequestError):
            ss.check_key(bad)
