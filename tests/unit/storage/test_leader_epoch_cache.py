"""The leader-epoch cache, after Kafka's LeaderEpochFileCacheTest, and its life inside a Log."""

from storage.checkpoint_file import LeaderEpochCheckpointFile
from storage.leader_epoch_cache import LeaderEpochCache
from tests.storage_helpers import make_batch, open_log


def _cache(tmp_path, entries=()):
    cache = LeaderEpochCache(LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint"))
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def test_assign_enforces_increasing_epochs_and_offsets(tmp_path):
    cache = _cache(tmp_path, [(2, 6), (3, 8)])
    cache.assign(1, 7)  # lower epoch at a higher offset: everything conflicting goes
    assert cache.entries == [(1, 7)]
    (tmp_path / "b").mkdir()
    cache = _cache(tmp_path / "b")
    cache.assign(2, 6)
    cache.assign(3, 5)  # higher epoch at a lower offset replaces the older entry
    assert cache.entries == [(3, 5)]


def test_same_epoch_at_a_later_offset_is_not_a_new_entry(tmp_path):
    cache = _cache(tmp_path, [(2, 6)])
    assert not cache.assign(2, 10)
    assert cache.entries == [(2, 6)]


def test_end_offset_for_follows_kafkas_table(tmp_path):
    cache = _cache(tmp_path, [(0, 10), (2, 13), (4, 17)])
    assert cache.end_offset_for(1, 20) == (0, 13)
    assert cache.end_offset_for(3, 20) == (2, 17)
    assert cache.end_offset_for(4, 20) == (4, 20)
    assert cache.end_offset_for(5, 20) == (-1, -1)
    assert cache.end_offset_for(-1, 20) == (-1, -1)
    (tmp_path / "b").mkdir()
    other = _cache(tmp_path / "b", [(5, 11), (6, 12), (7, 13)])
    assert other.end_offset_for(4, 20) == (4, 11)


def test_truncation_from_both_ends(tmp_path):
    cache = _cache(tmp_path, [(0, 0), (1, 5), (2, 9)])
    cache.truncate_from_end(9)
    assert cache.entries == [(0, 0), (1, 5)]
    cache.truncate_from_start(7)
    assert cache.entries == [(1, 7)]
    cache.truncate_from_start(5)
    assert cache.entries == [(1, 7)]


def test_entries_survive_in_the_checkpoint_file(tmp_path):
    _cache(tmp_path, [(0, 0), (3, 42)])
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n3 42\n"
    assert _cache(tmp_path).entries == [(0, 0), (3, 42)]


def test_log_tracks_epochs_of_leader_and_follower_appends_and_truncation(tmp_path, clock):
    log = open_log(tmp_path, clock)
    log.append_as_leader(make_batch(3), leader_epoch=0)
    log.append_as_leader(make_batch(2), leader_epoch=0)
    log.assign_epoch_start_offset(2, log.log_end_offset)
    log.append_as_leader(make_batch(4), leader_epoch=2)
    assert log.leader_epoch_entries() == [(0, 0), (2, 5)]
    assert log.end_offset_for_epoch(0) == (0, 5)
    assert log.end_offset_for_epoch(1) == (0, 5)
    assert log.end_offset_for_epoch(2) == (2, 9)
    assert log.epoch_for_offset(6) == 2
    log.truncate_to(5)
    assert log.leader_epoch_entries() == [(0, 0)]
    log.close()
    reopened = open_log(tmp_path, clock)
    assert reopened.leader_epoch_entries() == [(0, 0)]
    follower_data = make_batch(2, base_offset=5, partition_leader_epoch=7)
    reopened.append_as_follower(follower_data)
    assert reopened.latest_epoch == 7
    assert reopened.leader_epoch_entries() == [(0, 0), (7, 5)]
    reopened.truncate_fully_and_start_at(100)
    assert reopened.leader_epoch_entries() == []
