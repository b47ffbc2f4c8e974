"""The classic group protocol's side of the group coordinator: JoinGroup, SyncGroup, Heartbeat,
LeaveGroup over the shards of :class:`~node.coordinator.group_coordinator.GroupCoordinator`.

The decisions are :mod:`node.coordinator.classic_group`'s; this facade holds, per shard, the
classic groups and the futures of requests that wait (a JoinGroup until the rebalance completes,
a SyncGroup until the leader's assignment is stored), writes the records through the
coordinator's ``write`` (acks=-1, under the shard's lock) and completes the futures only after
the write, so no member hears of an assignment a failover could lose (Kafka's coordinator
runtime answers after the commit). A waiting request holds no thread: the Kafka door awaits
the future on its loop.

A write is appended and applied at once, and the shard's lock released; the answers it
completes (and any answer read from the shard's state meanwhile) are delivered only once the
high watermark has passed the shard's last write
(:meth:`~node.coordinator.shard_writer.ShardWriter.when_durable`), or with that write's error
(COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR) if it was not replicated: a pending write holds
the answers, never the lock, so heartbeats and timers go on meanwhile.

A classic request for a group id a consumer (KIP-848) group with members holds is answered
from that group by :class:`~node.coordinator.mixed_coordinator.MixedGroups` (Kafka 4.0's mixed
groups); an empty consumer group is replaced by a new classic group (Kafka's offline path).

Thread-safe: every method takes the shard's lock.
"""

from __future__ import annotations

import copy
import logging
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from typing import Any

from node.coordinator.classic_group import (
    COORDINATOR_NOT_AVAILABLE,
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
    validate_offset_commit,
)
from node.coordinator.group_coordinator_config import GroupCoordinatorConfig
from node.coordinator.group_requests import ListedGroup
from node.coordinator.group_state import (
    ConsumerGroup,
    GroupRecord,
    delete_group_records,
)
from node.coordinator.mixed_coordinator import MixedGroups, MixedShard
from odradek.clock import Clock
from odradek.errors import InconsistentGroupProtocolError, NonEmptyGroupError, OdradekError
from odradek.group_records import (
    ClassicGroupMetadataKey,
    GroupMetadataValue,
    GroupRecordKey,
    GroupRecordValue,
)

__all__ = ["ClassicCoordinator", "ClassicShard", "classic_config"]

log = logging.getLogger(__name__)

NOT_COORDINATOR = 16


def classic_config(config: GroupCoordinatorConfig) -> ClassicGroupConfig:
    """The classic group settings of the coordinator's."""
    return ClassicGroupConfig(
        group_min_session_timeout_ms=config.group_min_session_timeout_ms,
        group_max_session_timeout_ms=config.group_max_session_timeout_ms,
        group_initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
        group_max_size=config.group_max_size,
    )


ClassicShard = MixedShard
"""What the facade needs of a coordinator shard: what the mixed groups need of it."""


def _mixed(shard: ClassicShard, group_id: str) -> ConsumerGroup | None:
    """The consumer group with members that holds ``group_id``, if any."""
    group = shard.state.groups.get(group_id)
    return group if group is not None and group.members else None


class ClassicCoordinator:
    """JoinGroup, SyncGroup, Heartbeat and LeaveGroup on the coordinator's shards."""

    def __init__(
        self,
        config: ClassicGroupConfig,
        clock: Clock,
        shard_of: Callable[[str], ClassicShard],
        write: Callable[[Any, list[GroupRecord]], None],
        mixed: MixedGroups,
    ) -> None:
        self.config = config
        self._clock = clock
        self._shard_of = shard_of
        self._write = write
        self._mixed = mixed

    # -- futures -----------------------------------------------------------------------------

    @staticmethod
    def _wait(shard: ClassicShard, kind: str, group_id: str, member_id: str) -> Future[Any]:
        future: Future[Any] = Future()
        shard.classic_waiters.setdefault((kind, group_id, member_id), []).append(future)
        return future

    @staticmethod
    def _complete(shard: ClassicShard, group_id: str, out: Outcome) -> None:
        """Answer the requests ``out`` completes once the shard's last write is replicated.
        Caller holds the lock."""
        deliveries = [
            (future, answer, kind, member_id)
            for kind, answers in (("join", out.joins), ("sync", out.syncs))
            for member_id, answer in answers.items()
            for future in shard.classic_waiters.pop((kind, group_id, member_id), [])
        ]
        if not deliveries:
            return

        def deliver(error: OdradekError | None) -> None:
            for future, answer, kind, member_id in deliveries:
                _settle(future, answer if error is None else _error_answer(kind, member_id, error))

        shard.writer.when_durable(deliver)

    @staticmethod
    def _after_write(shard: ClassicShard, answer: Any, kind: str, member_id: str) -> Future[Any]:
        """A future of ``answer``, completed once the shard's last write is replicated (else
        with its error). Caller holds the lock."""
        future: Future[Any] = Future()
        shard.writer.when_durable(
            lambda error: _settle(
                future, answer if error is None else _error_answer(kind, member_id, error)
            )
        )
        return future

    @staticmethod
    def _code_after_write(durable: Future[OdradekError | None], code: int) -> int:
        """``code``, or the error of the write it depends on (waited for, no lock held)."""
        error = durable.result()
        return code if error is None else error.code

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
                _settle(future, answer)

    # -- loading -----------------------------------------------------------------------------

    def replay(
        self, shard: ClassicShard, key: GroupRecordKey, value: GroupRecordValue | None
    ) -> None:
        """A record read while loading the shard (only ``GroupMetadata`` ones matter here).
        Caller holds the lock."""
        if isinstance(key, ClassicGroupMetadataKey):
            classic = value if isinstance(value, GroupMetadataValue) else None
            replay(shard.classic, key.group, classic, self._clock.monotonic_ms())

    # -- requests ----------------------------------------------------------------------------

    def join_group(self, req: JoinGroupRequest) -> Future[JoinGroupResult]:
        """A JoinGroup: a future completed when the member's join is answered (at once for an
        error or MEMBER_ID_REQUIRED, else when the rebalance's join phase completes)."""
        try:
            shard = self._shard_of(req.group_id)
        except OdradekError as e:
            return _done(JoinGroupResult(error_code=e.code, member_id=req.member_id))
        now = self._clock.monotonic_ms()
        new_id = f"{req.client_id or 'member'}-{uuid.uuid4()}"
        with shard.lock:
            if req.group_id in shard.share.groups:  # a share group's id (KIP-932): as Kafka
                return _done(
                    JoinGroupResult(
                        error_code=InconsistentGroupProtocolError.code, member_id=req.member_id
                    )
                )
            records: list[GroupRecord] = []
            consumer = shard.state.groups.get(req.group_id)
            if consumer is not None:
                if consumer.members:
                    answer = self._mixed.join(shard, consumer, req, new_id)
                    return self._after_write(shard, answer, "join", req.member_id)
                records += delete_group_records(consumer, req.group_id, [])
            group = shard.classic.get(req.group_id)
            created = group is None
            if group is None:
                group = ClassicGroup(req.group_id)
            before = (group.state, group.generation_id)
            # a static member taking its predecessor's place without a rebalance is written
            # before it is answered; if the write fails the group is put back as it was
            saved = copy.deepcopy(group) if req.instance_id is not None else None
            out = join(group, req, new_id, now, self.config, created=created)
            _log_change(group, before, f"join of {req.member_id or new_id}")
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
                log.info("could not store classic group %s: %s", req.group_id, e)
                if out.reply is not None:
                    out.reply = JoinGroupResult(error_code=e.code, member_id=req.member_id)
                    if saved is not None:
                        shard.classic[req.group_id] = saved
                        out.joins.clear()
                        out.syncs.clear()
            self._complete(shard, req.group_id, out)
            if isinstance(out.reply, JoinGroupResult):
                reply = out.reply
                shard.writer.when_durable(
                    lambda error: _settle(
                        future,
                        reply if error is None else _error_answer("join", req.member_id, error),
                    )
                )
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
            consumer = _mixed(shard, req.group_id)
            if consumer is not None:
                answer = self._mixed.sync(shard, consumer, req)
                return self._after_write(shard, answer, "sync", req.member_id)
            group = shard.classic.get(req.group_id)
            out = sync(group, req, now)
            if isinstance(out.reply, SyncGroupResult) or group is None or out.wait_key is None:
                return self._after_write(
                    shard,
                    out.reply
                    if isinstance(out.reply, SyncGroupResult)
                    else SyncGroupResult(COORDINATOR_NOT_AVAILABLE),
                    "sync",
                    req.member_id,
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
        """A Heartbeat's error code (0: alive); blocks until it may be answered
        (:meth:`heartbeat_later`)."""
        return self.heartbeat_later(group_id, member_id, generation_id, instance_id).result()

    def heartbeat_later(
        self, group_id: str, member_id: str, generation_id: int, instance_id: str | None = None
    ) -> Future[int]:
        """A Heartbeat, processed at once (the member's session restarted); a future of its
        error code, completed once the shard's last write is replicated (else its error)."""
        try:
            shard = self._shard_of(group_id)
        except OdradekError as e:
            return _done(e.code)
        with shard.lock:
            consumer = _mixed(shard, group_id)
            if consumer is not None:
                code = self._mixed.heartbeat(shard, consumer, member_id, generation_id, instance_id)
            else:
                code = heartbeat(
                    shard.classic.get(group_id),
                    member_id,
                    generation_id,
                    instance_id,
                    self._clock.monotonic_ms(),
                )
            out: Future[int] = Future()
            shard.writer.when_durable(
                lambda error: _settle(out, code if error is None else error.code)
            )
        return out

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
            consumer = _mixed(shard, group_id)
            if consumer is not None:
                code, results = self._mixed.leave(shard, consumer, members)
            else:
                group = shard.classic.get(group_id)
                before = (group.state, group.generation_id) if group is not None else None
                results, out = leave(group, members, now, self.config)
                if group is not None and before is not None:
                    _log_change(group, before, f"leave of {[m.member_id for m in members]}")
                self._write_and_complete(shard, group_id, out)
                code = 0
            durable = shard.writer.durable()
        code = self._code_after_write(durable, code)
        return (code, results) if code == 0 or results == [] else (code, [])

    # -- the coordinator's room for classic groups -------------------------------------------

    def check_offset_commit(
        self,
        shard: ClassicShard,
        group_id: str,
        member_id: str,
        generation_id: int,
        instance_id: str | None,
    ) -> tuple[str, int]:
        """An OffsetCommit to a classic group is checked here (Kafka's
        ``ClassicGroup.validateOffsetCommit``) and then written as a simple commit: returns
        ``("", -1)`` for it, the request's member id and epoch for any other group. Raises the
        check's errors. Caller holds the lock."""
        group = shard.classic.get(group_id)
        if group is None or group_id in shard.state.groups:
            return member_id, generation_id
        validate_offset_commit(group, member_id, generation_id, instance_id)
        return "", -1

    def listed(self, shard: ClassicShard, wanted: set[str]) -> list[ListedGroup]:
        """ListGroups' entries of the shard's classic groups in one of ``wanted`` (lower-case
        state names; empty: all). Caller holds the lock."""
        return [
            ListedGroup(gid, g.state.value, g.protocol_type or "", group_type="classic")
            for gid, g in sorted(shard.classic.items())
            if not wanted or g.state.value.lower() in wanted
        ]

    def delete(self, shard: ClassicShard, group_id: str, records: list[GroupRecord]) -> bool:
        """DeleteGroups of a classic group: with ``records`` (its offsets' tombstones), its
        own tombstone; False if ``group_id`` is no classic group. Raises NON_EMPTY_GROUP.
        Caller holds the lock."""
        group = shard.classic.get(group_id)
        if group is None:
            return False
        if not group.is_empty():
            raise NonEmptyGroupError(f"Group {group_id} is not empty.")
        self._write(shard, records + delete_records(group_id))
        del shard.classic[group_id]
        return True

    def tick(self, shard: ClassicShard, now_ms: int) -> None:
        """Run the classic groups' timers. Caller holds the lock."""
        for group_id, group in list(shard.classic.items()):
            before = (group.state, group.generation_id)
            out = expire(group, now_ms, self.config)
            _log_change(group, before, "timers")
            if out.records or out.joins or out.syncs:
                self._write_and_complete(shard, group_id, out)


def _log_change(group: ClassicGroup, before: tuple[Any, int], why: str) -> None:
    if (group.state, group.generation_id) != before:
        log.info(
            "classic group %s: %s generation %d -> %s generation %d (%s)",
            group.group_id,
            before[0].value,
            before[1],
            group.state.value,
            group.generation_id,
            why,
        )


def _error_answer(kind: str, member_id: str, error: OdradekError) -> Any:
    """A waiting JoinGroup's or SyncGroup's answer when the write it waited on failed."""
    if kind == "join":
        return JoinGroupResult(error_code=error.code, member_id=member_id)
    return SyncGroupResult(error.code)


def _settle(future: Future[Any], answer: Any) -> None:
    """Complete ``future`` unless it was already (an unload may race a delivery)."""
    try:
        future.set_result(answer)
    except InvalidStateError:
        pass


def _done(answer: Any) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(answer)
    return future
