"""Kafka's text checkpoint files.

On-disk format (``server-common/.../CheckpointFile.java``)::

    0                 <- version
    2                 <- number of entries
    my-topic 0 1234   <- one entry per line, fields separated by single spaces
    my-topic 1 99

Used for ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
``replication-offset-checkpoint`` and ``cleaner-offset-checkpoint`` (entries
``topic partition offset``) and for ``leader-epoch-checkpoint`` (entries ``epoch start_offset``).

Crash policy: a write goes to ``<name>.tmp``, is fsynced, renamed over the target and the
directory is fsynced, so a crash leaves either the old or the new file, never a torn one.
Reading a malformed file raises :class:`~storage.errors.CheckpointError`; callers that must
start anyway (the log manager) treat that as an empty checkpoint, which only costs a longer
recovery.

Not thread-safe: each file has one writer (the log manager or the partition).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from storage.errors import CheckpointError

__all__ = [
    "CURRENT_VERSION",
    "OffsetCheckpointFile",
    "LeaderEpochCheckpointFile",
    "write_atomically",
    "fsync_dir",
]

CURRENT_VERSION = 0

TopicPartition = tuple[str, int]


def fsync_dir(path: Path) -> None:
    """fsync a directory so a rename or create inside it is durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: write ``.tmp``, fsync, rename, fsync the directory."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    tmp.replace(path)
    fsync_dir(path.parent)


def _read_lines(path: Path) -> list[str] | None:
    """The checkpoint's entry lines, or None if the file is missing or empty."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as e:
        raise CheckpointError(f"{path}: not a text checkpoint ({e})") from None
    lines = text.splitlines()
    if not lines:
        return None
    try:
        version = int(lines[0].strip())
    except ValueError:
        raise CheckpointError(f"{path}: malformed version line {lines[0]!r}") from None
    if version != CURRENT_VERSION:
        raise CheckpointError(f"{path}: unrecognised version {version}")
    if len(lines) == 1:
        return []
    try:
        count = int(lines[1].strip())
    except ValueError:
        raise CheckpointError(f"{path}: malformed count line {lines[1]!r}") from None
    entries = [line for line in lines[2:] if line.strip()]
    if count != len(entries):
        raise CheckpointError(f"{path}: expected {count} entries but found {len(entries)}")
    return entries


def _format(entries: list[str]) -> bytes:
    return "".join([f"{CURRENT_VERSION}\n{len(entries)}\n", *(e + "\n" for e in entries)]).encode()


class OffsetCheckpointFile:
    """A ``topic partition offset`` checkpoint file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Atomically replace the file with ``offsets``. Raises ``OSError``."""
        entries = [
            f"{topic} {partition} {offset}" for (topic, partition), offset in offsets.items()
        ]
        write_atomically(self.path, _format(entries))

    def read(self) -> dict[TopicPartition, int]:
        """The checkpointed offsets; empty if the file is missing or has no entries.

        Raises ``CheckpointError`` on a bad version, count or line.
        """
        lines = _read_lines(self.path)
        out: dict[TopicPartition, int] = {}
        for line in lines or ():
            parts = line.split()
            if len(parts) != 3:
                raise CheckpointError(f"{self.path}: malformed line {line!r}")
            try:
                out[(parts[0], int(parts[1]))] = int(parts[2])
            except ValueError:
                raise CheckpointError(f"{self.path}: malformed line {line!r}") from None
        return out


class LeaderEpochCheckpointFile:
    """A partition's ``leader-epoch-checkpoint``: ``epoch start_offset`` lines, oldest first."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, entries: list[tuple[int, int]]) -> None:
        """Atomically replace the file with ``(epoch, start_offset)`` entries."""
        write_atomically(self.path, _format([f"{epoch} {start}" for epoch, start in entries]))

    def read(self) -> list[tuple[int, int]]:
        """The entries; empty if the file is missing. Raises ``CheckpointError``."""
        out: list[tuple[int, int]] = []
        for line in _read_lines(self.path) or ():
            parts = line.split()
            if len(parts) != 2:
                raise CheckpointError(f"{self.path}: malformed line {line!r}")
            try:
                out.append((int(parts[0]), int(parts[1])))
            except ValueError:
                raise CheckpointError(f"{self.path}: malformed line {line!r}") from None
        return out
