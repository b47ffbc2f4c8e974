"""A partition's leader-epoch cache: which leader epoch began at which offset.

Kafka's ``LeaderEpochFileCache``. Entries ``(epoch, start_offset)`` are kept with both fields
strictly increasing, and persisted in the partition directory as ``leader-epoch-checkpoint``
(version 0, Kafka's text format) every time they change, so a follower can find where its log
diverges from a new leader's after any restart.

Crash policy: the file is replaced atomically (write, fsync, rename). An entry is written
before the batch that starts the epoch is appended; an entry above the log end offset (the
append never happened) is removed when the log is opened (``truncate_from_end``).

Not thread-safe on its own: the owning ``Log`` calls it under its lock.
"""

from __future__ import annotations

from pathlib import Path

from storage.checkpoint_file import LeaderEpochCheckpointFile

LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    """``(epoch, start_offset)`` entries, oldest first, mirrored to a checkpoint file."""

    def __init__(self, checkpoint: LeaderEpochCheckpointFile) -> None:
        self._checkpoint = checkpoint
        self._entries: list[tuple[int, int]] = []
        for epoch, start in checkpoint.read():
            self._assign(epoch, start)

    @classmethod
    def in_dir(cls, directory: Path) -> LeaderEpochCache:
        return cls(LeaderEpochCheckpointFile(directory / LEADER_EPOCH_CHECKPOINT_FILE))

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        """The newest epoch, or -1 when there is none."""
        return self._entries[-1][0] if self._entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; returns whether anything changed.

        Entries with an epoch ≥ ``epoch`` or a start offset ≥ ``start_offset`` are removed
        first, so both stay strictly increasing (Kafka's ``assign``). A negative epoch is
        ignored. Raises ``OSError`` if the checkpoint cannot be written.
        """
        if epoch < 0:
            return False
        if self._entries and self._entries[-1][0] == epoch and self._entries[-1][1] <= start_offset:
            return False  # the epoch is already known from an earlier offset
        if self._assign(epoch, start_offset):
            self._flush()
            return True
        return False

    def _assign(self, epoch: int, start_offset: int) -> bool:
        kept = [(e, s) for e, s in self._entries if e < epoch and s < start_offset]
        kept.append((epoch, start_offset))
        if kept == self._entries:
            return False
        self._entries = kept
        return True

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch of the batch holding ``offset`` as far as the cache knows, or -1."""
        found = UNDEFINED_EPOCH
        for epoch, start in self._entries:
            if start > offset:
                break
            found = epoch
        return found

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end_offset)`` for an OffsetForLeaderEpoch question (Kafka's ``endOffsetFor``).

        - an undefined epoch, or one above every known epoch: ``(-1, -1)``;
        - the latest epoch: ``(latest, log_end_offset)``;
        - an epoch below the first known one: ``(requested, first start offset)``;
        - otherwise the largest known epoch ≤ the requested one, ending where the next known
          epoch starts.
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        latest, _ = self._entries[-1]
        if requested_epoch == latest:
            return latest, log_end_offset
        if requested_epoch > latest:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        first_epoch, first_start = self._entries[0]
        if requested_epoch < first_epoch:
            return requested_epoch, first_start
        floor_epoch = UNDEFINED_EPOCH
        for index, (epoch, _) in enumerate(self._entries):
            if epoch > requested_epoch:
                return floor_epoch, self._entries[index][1]
            floor_epoch = epoch
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET  # not reached: requested < latest

    def truncate_from_end(self, end_offset: int) -> None:
        """Remove the entries that start at or after ``end_offset`` (the log was truncated)."""
        kept = [(e, s) for e, s in self._entries if s < end_offset]
        if kept != self._entries:
            self._entries = kept
            self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries wholly below ``start_offset`` and move the earliest one's start up."""
        if not self._entries or self._entries[0][1] >= start_offset:
            return
        kept = [(e, s) for e, s in self._entries if s > start_offset]
        floor = [(e, s) for e, s in self._entries if s <= start_offset]
        if floor:
            kept.insert(0, (floor[-1][0], start_offset))
        self._entries = kept
        self._flush()

    def clear(self) -> None:
        """Remove every entry (the log was emptied and restarted)."""
        if self._entries:
            self._entries = []
            self._flush()

    def _flush(self) -> None:
        self._checkpoint.write(self._entries)
