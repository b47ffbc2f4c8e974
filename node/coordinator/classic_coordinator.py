"""The classic group protocol's side of the group coordinator: JoinGroup, SyncGroup, Heartbeat,
LeaveGroup over the shards of :class:`~node.coordinator.group_coordinator.GroupCoordinator`.

The decisions are :mod:`node.coordinator.classic_group`'s; this facade holds, per shard, the
classic groups and the futures of requests that wait (a JoinGroup until the rebalance completes,
a SyncGroup until the leader's assignment is stored), writes the records through the
coordinator's ``write`` (acks=-1, under the shard's lock) and completes the futures only after
the write, so no member hears of an assignment a failover could lose (Kafka's coordinator
runtime answers after the commit). A waiting request holds no thread: the Kafka door awaits
the future on its loop.

A group id held by a KIP-848 group with members is refused to classic joins with
INCONSISTENT_GROUP_PROTOCOL (Kafka 4.0 with ``group.consumer.migration.policy=disabled``; the
online migration between the protocols is not built); an empty KIP-848 group is replaced.

Thread-safe: every method takes the shard's lock.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, Protocol

from node.coordinator.classic_group import (
    COORDINATOR_NOT_AVAILABLE,
    INCONSISTENT_GROUP_PROTOCOL,
    ClassicGroup,
    ClassicGroupConfig,
    JoinGroupRequest,
    JoinGroupResult,
    LeaveMember,
    LeaveMemberResult,
    Outcome,
    SyncGroupRequest,
    SyncGroupResult,
    delete_records,
    expire,
    fail_sync_store,
    heartbeat,
    join,
    leave,
    replay,
    store_assignment,
    sync,
)
from node.coordinator.group_state import GroupRecord, GroupShard, delete_group_records
from odradek.clock import Clock
from odradek.errors import GroupIdNotFoundError, OdradekError
from odradek.group_records import GroupMetadataValue

__all__ = ["ClassicCoordinator", "ClassicShard"]

log = logging.getLogger(__name__)

NOT_COORDINATOR = 16


class ClassicShard(Protocol):
    """What the facade needs of a coordinator shard."""

    partition: int
    lock: Any
    state: GroupShard
    classic: dict[str, ClassicGroup]
    classic_waiters: dict[tuple[str, str, str], list[Future[Any]]]


class ClassicCoordinator:
    """JoinGroup, SyncGroup, Heartbeat and LeaveGroup on the coordinator's shards."""

    def __init__(
        self,
        config: ClassicGroupConfig,
        clock: Clock,
        shard_of: Callable[[str], ClassicShard],
        write: Callable[[Any, list[GroupRecord]], None],
    ) -> None:
        self.config = config
        self._clock = clock
        self._shard_of = shard_of
        self._write = write

    # -- futures -----------------------------------------------------------------------------

    @staticmethod
    def _wait(shard: ClassicShard, kind: str, group_id: str, member_id: str) -> Future[Any]:
        future: Future[Any] = Future()
        shard.classic_waiters.setdefault((kind, group_id, member_id), []).append(future)
        return future

    @staticmethod
    def _complete(shard: ClassicShard, group_id: str, out: Outcome) -> None:
        for kind, answers in (("join", out.joins), ("sync", out.syncs)):
            for member_id, answer in answers.items():
                for future in shard.classic_waiters.pop((kind, group_id, member_id), []):
                    if not future.done():
                        future.set_result(answer)

    def _write_and_complete(self, shard: ClassicShard, group_id: str, out: Outcome) -> None:
        try:
            self._write(shard, out.records)
        except OdradekError as e:
            log.info("could not store classic group %s: %s", group_id, e)
        self._complete(shard, group_id, out)

    def unloaded(self, shard: ClassicShard) -> None:
        """The shard is no longer this node's: every waiting request gets NOT_COORDINATOR."""
        with shard.lock:
            waiters = shard.classic_waiters
            shard.classic_waiters = {}
        for (kind, _, member_id), futures in waiters.items():
            answer: Any = (
                JoinGroupResult(error_code=NOT_COORDINATOR, member_id=member_id)
                if kind == "join"
                else SyncGroupResult(NOT_COORDINATOR)
            )
            for future in futures:
                if not future.done():
                    future.set_result(answer)

    # -- loading -----------------------------------------------------------------------------

    def replay(self, shard: ClassicShard, group_id: str, value: GroupMetadataValue | None) -> None:
        """A ``GroupMetadata`` record read while loading the shard. Caller holds the lock."""
        replay(shard.classic, group_id, value, self._clock.monotonic_ms())

    # -- requests ----------------------------------------------------------------------------

    def join_group(self, req: JoinGroupRequest) -> Future[JoinGroupResult]:
        """A JoinGroup: a future completed when the member's join is answered (at once for an
        error or MEMBER_ID_REQUIRED, else when the rebalance's join phase completes)."""
        try:
            shard = self._shard_of(req.group_id)
        except OdradekError as e:
            return _done(JoinGroupResult(error_code=e.code, member_id=req.member_id))
        now = self._clock.monotonic_ms()
        with shard.lock:
            records: list[GroupRecord] = []
            consumer = shard.state.groups.get(req.group_id)
            if consumer is not None:
                if consumer.members:
                    return _done(
                        JoinGroupResult(
                            error_code=INCONSISTENT_GROUP_PROTOCOL,
                            member_id=req.member_id,
                            error_message=f"Group {req.group_id} is a consumer (KIP-848) group.",
                        )
                    )
                records += delete_group_records(consumer, req.group_id, [])
            group = shard.classic.get(req.group_id)
            created = group is None
            if group is None:
                group = ClassicGroup(req.group_id)
            new_id = f"{req.client_id or 'member'}-{uuid.uuid4()}"
            out = join(group, req, new_id, now, self.config, created=created)
            if not (created and group.is_empty()):
                shard.classic[req.group_id] = group
            future: Future[JoinGroupResult] = (
                self._wait(shard, "join", req.group_id, out.wait_key)
                if out.wait_key is not None
                else Future()
            )
            try:
                self._write(shard, records + out.records)
            except OdradekError as e:
                if out.reply is not None:
                    out.reply = JoinGroupResult(error_code=e.code, member_id=req.member_id)
                log.info("could not store classic group %s: %s", req.group_id, e)
            self._complete(shard, req.group_id, out)
            if isinstance(out.reply, JoinGroupResult):
                future.set_result(out.reply)
        return future

    def sync_group(self, req: SyncGroupRequest) -> Future[SyncGroupResult]:
        """A SyncGroup: a future completed with the member's assignment once the leader's is
        stored (at once in a Stable group, or for an error)."""
        try:
            shard = self._shard_of(req.group_id)
        except OdradekError as e:
            return _done(SyncGroupResult(e.code))
        now = self._clock.monotonic_ms()
        with shard.lock:
            group = shard.classic.get(req.group_id)
            out = sync(group, req, now)
            if isinstance(out.reply, SyncGroupResult) or group is None or out.wait_key is None:
                return _done(
                    out.reply
                    if isinstance(out.reply, SyncGroupResult)
                    else SyncGroupResult(COORDINATOR_NOT_AVAILABLE)
                )
            future: Future[SyncGroupResult] = self._wait(shard, "sync", req.group_id, out.wait_key)
            if out.store is not None:
                generation = group.generation_id
                try:
                    self._write(shard, out.records)
                except OdradekError as e:
                    after = fail_sync_store(group, generation, e.code, now, self.config)
                else:
                    after = store_assignment(group, generation, out.store, now)
                self._write_and_complete(shard, req.group_id, after)
        return future

    def heartbeat(
        self, group_id: str, member_id: str, generation_id: int, instance_id: str | None = None
    ) -> int:
        """A Heartbeat's error code (0: alive)."""
        try:
            shard = self._shard_of(group_id)
        except OdradekError as e:
            return e.code
        with shard.lock:
            return heartbeat(
                shard.classic.get(group_id),
                member_id,
                generation_id,
                instance_id,
                self._clock.monotonic_ms(),
            )

    def leave_group(
        self, group_id: str, members: Sequence[LeaveMember]
    ) -> tuple[int, list[LeaveMemberResult]]:
        """A LeaveGroup: the request's error code and one result per member."""
        try:
            shard = self._shard_of(group_id)
        except OdradekError as e:
            return e.code, []
        now = self._clock.monotonic_ms()
        with shard.lock:
            results, out = leave(shard.classic.get(group_id), members, now, self.config)
            self._write_and_complete(shard, group_id, out)
        return 0, results

    # -- the coordinator's room for classic groups -------------------------------------------

    def refuse_consumer_group(self, shard: ClassicShard, group_id: str) -> None:
        """A KIP-848 heartbeat for ``group_id``: GROUP_ID_NOT_FOUND while a classic group with
        members holds the id (no migration); an empty classic group is deleted. Caller holds the
        lock."""
        group = shard.classic.get(group_id)
        if group is None:
            return
        if not group.is_empty():
            raise GroupIdNotFoundError(f"Group {group_id} is not a consumer group.")
        self._write(shard, delete_records(group_id))
        shard.classic.pop(group_id, None)

    def tick(self, shard: ClassicShard, now_ms: int) -> None:
        """Run the classic groups' timers. Caller holds the lock."""
        for group_id, group in list(shard.classic.items()):
            out = expire(group, now_ms, self.config)
            if out.records or out.joins or out.syncs:
                self._write_and_complete(shard, group_id, out)


def _done(answer: Any) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(answer)
    return future
