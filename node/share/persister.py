"""The contract between a share partition (on its partition's leader) and the durable share
state (the share coordinator on ``__share_group_state``): Kafka's ``Persister`` interface
(``server-common/.../share/persister/Persister.java``), with its four calls per share
partition — initialize, read, write, delete — and the summary DescribeShareGroupOffsets reads.

A share partition is named by (group id, topic id, partition): the topic's id, not its name, so
that a topic deleted and created again under the same name starts with no state.

What is kept (Kafka's ``ShareSnapshotValue``): the state epoch (bumped by every initialize,
i.e. by an offset reset, so a write of an older epoch is refused with FENCED_STATE_EPOCH), the
share-partition start offset (SPSO: every offset below it is done), the leader epoch of the last
writer (a write from an older leader is refused with FENCED_LEADER_EPOCH) and the state batches
past the start offset: ranges of offsets with one delivery state and one delivery count.
Offsets at or past the start offset that no batch covers are AVAILABLE with delivery count 0.
Acquired records are persisted as AVAILABLE with their delivery count (a lock does not outlive
its leader).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "DeliveryState",
    "PersisterError",
    "ShareKey",
    "ShareSnapshot",
    "ShareStateBatch",
    "ShareStatePersister",
    "ShareSummary",
]


class DeliveryState(enum.IntEnum):
    """Kafka's ``RecordState`` ids as ``__share_group_state`` stores them."""

    AVAILABLE = 0
    ACQUIRED = 1  # in memory only; written as AVAILABLE
    ACKNOWLEDGED = 2
    ARCHIVED = 4


@dataclass(frozen=True, slots=True)
class ShareKey:
    """One share partition: ``group_id``'s share of partition ``partition`` of the topic whose
    id is ``topic_id`` (Kafka's ``SharePartitionKey``; its coordinator key is
    ``"{group_id}:{topic_id}:{partition}"``)."""

    group_id: str
    topic_id: str  # the topic's id as odradek's metadata spells it (a UUID's string)
    partition: int

    def coordinator_key(self) -> str:
        return f"{self.group_id}:{self.topic_id}:{self.partition}"


@dataclass(frozen=True, slots=True)
class ShareStateBatch:
    """Offsets ``first_offset..last_offset`` (inclusive), all in one state with one count."""

    first_offset: int
    last_offset: int
    delivery_state: DeliveryState
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareSnapshot:
    """A share partition's durable state. ``start_offset`` -1: not initialized yet (the share
    partition takes its start from ``share.auto.offset.reset``)."""

    state_epoch: int
    start_offset: int
    leader_epoch: int = -1
    batches: Sequence[ShareStateBatch] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class ShareSummary:
    """What DescribeShareGroupOffsets reports of a share partition (``start_offset`` -1: none)."""

    state_epoch: int
    start_offset: int


class PersisterError(Exception):
    """A persister call refused or failed: ``error_code`` is Kafka's, as odradek.errors has
    them (FENCED_LEADER_EPOCH 74, FENCED_STATE_EPOCH 124, COORDINATOR_NOT_AVAILABLE 15,
    NOT_COORDINATOR 16, COORDINATOR_LOAD_IN_PROGRESS 14, UNKNOWN_TOPIC_OR_PARTITION 3,
    INVALID_REQUEST 42); the caller retries the retriable ones."""

    def __init__(self, error_code: int, message: str = "") -> None:
        super().__init__(message or f"share state error {error_code}")
        self.error_code = error_code


class ShareStatePersister(Protocol):
    """The durable share state, as a partition leader uses it. Every call blocks until the
    state is durable (written with acks=all to ``__share_group_state``) or raises
    :class:`PersisterError`. Thread-safe."""

    def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> None:
        """Starts (or resets, with a new ``state_epoch``) a share partition at ``start_offset``
        with no batches (InitializeShareGroupState)."""

    def read(self, key: ShareKey, leader_epoch: int) -> ShareSnapshot:
        """The state, for a leader of ``leader_epoch`` taking the share partition over
        (ReadShareGroupState; an older leader epoch than the last writer's is refused). A share
        partition never initialized reads as ``ShareSnapshot(state_epoch=0, start_offset=-1)``."""

    def write(self, key: ShareKey, snapshot: ShareSnapshot) -> None:
        """Replaces the state past ``snapshot.start_offset`` with ``snapshot.batches``
        (WriteShareGroupState; Kafka's coordinator merges a write into its last snapshot, and
        so may an implementation, but the state read back must be what was last written)."""

    def delete(self, key: ShareKey) -> None:
        """Forgets the share partition (DeleteShareGroupState: group deleted, offsets deleted)."""

    def read_summary(self, key: ShareKey) -> ShareSummary:
        """The state epoch and start offset only (ReadShareGroupStateSummary)."""
