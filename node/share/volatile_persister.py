"""A share state persister that keeps everything in this node's memory: a STAND-IN.

The node's persister is the durable one, the share coordinator's client
(``node.replication.share_state_channel``, writing ``__share_group_state`` with acks=all); this
one is for unit and property tests of the share partitions. Its state is lost with the process
and is not shared between nodes.

It keeps the contract's rules (:mod:`node.share.persister`): a write of an older state epoch is
refused FENCED_STATE_EPOCH, one of an older leader epoch than the last writer's
FENCED_LEADER_EPOCH. Thread-safe.
"""

from __future__ import annotations

import threading

from node.share.persister import (
    PersisterError,
    ShareKey,
    ShareSnapshot,
    ShareSummary,
)
from odradek.errors import FencedLeaderEpochError, FencedStateEpochError

__all__ = ["VolatilePersister"]


class VolatilePersister:
    """:class:`~node.share.persister.ShareStatePersister` in memory (see the module
    docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[ShareKey, ShareSnapshot] = {}
        self.writes = 0
        """Writes taken (for tests)."""

    def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> None:
        with self._lock:
            self._states[key] = ShareSnapshot(state_epoch, start_offset)

    def read(self, key: ShareKey, leader_epoch: int) -> ShareSnapshot:
        with self._lock:
            state = self._states.get(key)
            if state is None:
                return ShareSnapshot(state_epoch=0, start_offset=-1)
            if leader_epoch < state.leader_epoch:
                raise PersisterError(FencedLeaderEpochError.code, "an older leader epoch")
            return state

    def write(self, key: ShareKey, snapshot: ShareSnapshot) -> None:
        with self._lock:
            state = self._states.get(key)
            if state is not None:
                if snapshot.state_epoch < state.state_epoch:
                    raise PersisterError(FencedStateEpochError.code, "an older state epoch")
                if snapshot.leader_epoch < state.leader_epoch:
                    raise PersisterError(FencedLeaderEpochError.code, "an older leader epoch")
            self._states[key] = snapshot
            self.writes += 1

    def delete(self, key: ShareKey) -> None:
        with self._lock:
            self._states.pop(key, None)

    def read_summary(self, key: ShareKey) -> ShareSummary:
        with self._lock:
            state = self._states.get(key)
            if state is None:
                return ShareSummary(state_epoch=0, start_offset=-1)
            return ShareSummary(state.state_epoch, state.start_offset)
