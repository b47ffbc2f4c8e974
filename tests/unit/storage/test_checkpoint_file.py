"""Kafka's text checkpoint format."""

from __future__ import annotations

import pytest

from storage.checkpoint_file import LeaderEpochCheckpointFile, OffsetCheckpointFile
from storage.errors import CheckpointError


def test_offset_checkpoint_format_is_kafkas(tmp_path):
    f = OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint")
    f.write({("my-topic", 0): 1234, ("my-topic", 1): 99})
    assert f.path.read_text() == "0\n2\nmy-topic 0 1234\nmy-topic 1 99\n"
    assert f.read() == {("my-topic", 0): 1234, ("my-topic", 1): 99}
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()


def test_missing_empty_and_version_only_files_read_as_empty(tmp_path):
    f = OffsetCheckpointFile(tmp_path / "cp")
    assert f.read() == {}
    f.path.write_text("")
    assert f.read() == {}
    f.path.write_text("0\n")
    assert f.read() == {}


@pytest.mark.parametrize(
    "text",
    ["1\n0\n", "0\n2\nt 0 1\n", "0\n1\nt 0\n", "0\n1\nt x 1\n", "zero\n", "0\nmany\n"],
)
def test_malformed_files_raise(tmp_path, text):
    f = OffsetCheckpointFile(tmp_path / "cp")
    f.path.write_text(text)
    with pytest.raises(CheckpointError):
        f.read()


def test_leader_epoch_checkpoint(tmp_path):
    f = LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint")
    f.write([(0, 0), (3, 120)])
    assert f.path.read_text() == "0\n2\n0 0\n3 120\n"
    assert f.read() == [(0, 0), (3, 120)]
