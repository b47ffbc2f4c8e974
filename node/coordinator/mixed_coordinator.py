"""Mixed groups on the coordinator's shards: classic members in consumer groups and the online
conversions between a classic group and a consumer (KIP-848) group, as Kafka 4.0.

The decisions are :mod:`node.coordinator.mixed_group`'s (classic requests answered from a
consumer group) and :mod:`node.coordinator.group_migration`'s (the conversions); this facade
writes their records through the coordinator's ``write`` (acks=-1, under the shard's lock),
answers only after the write, and keeps the timers:

* a classic member of a consumer group has a session timer of its own ``session.timeout.ms``
  (``shard.sessions``), and one deadline in ``shard.revocations``: after a JoinGroup it must
  sync, after a REBALANCE_IN_PROGRESS join again, within its rebalance timeout; either expiry
  removes it, as the coordinator's timers remove a KIP-848 member;
* an **upgrade** (a KIP-848 member joins a classic group that has members) replaces the classic
  group by the consumer group in one write, answers the classic requests still waiting
  REBALANCE_IN_PROGRESS and starts every member's session at its classic timeout;
* a **downgrade** (the last KIP-848 member leaves or expires, or a static classic member takes
  its place) replaces the consumer group by a classic group in one write; after a leave or an
  expiry the classic group starts a rebalance, so its members join again and a classic leader
  assigns.

``group.consumer.migration.policy`` says which conversions are made. Caller holds the shard's
lock for every method.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from typing import Any, Protocol

from node.coordinator.classic_group import (
    REBALANCE_IN_PROGRESS,
    ClassicGroup,
    ClassicGroupConfig,
    JoinGroupRequest,
    JoinGroupResult,
    LeaveMember,
    LeaveMemberResult,
    SyncGroupRequest,
    SyncGroupResult,
    delete_records,
    prepare_rebalance,
)
from node.coordinator.group_coordinator_config import GroupCoordinatorConfig
from node.coordinator.group_migration import (
    ConsumerGroupMigrationPolicy,
    Downgrade,
    Upgrade,
    classic_group_from_consumer,
    consumer_group_from_classic,
    validate_online_downgrade,
    validate_online_downgrade_with_replaced_member,
    validate_online_upgrade,
)
from node.coordinator.group_state import (
    LEAVE_GROUP_MEMBER_EPOCH,
    ConsumerGroup,
    GroupRecord,
    GroupShard,
    HeartbeatRequest,
    HeartbeatResult,
    TopicInfo,
    heartbeat,
    member_leave_records,
)
from node.coordinator.mixed_group import (
    classic_heartbeat,
    classic_join,
    classic_leave,
    classic_sync,
)
from node.coordinator.shard_writer import ShardWriter
from node.share_group.share_group_coordinator import ShareGroupShard
from odradek.clock import Clock
from odradek.errors import GroupIdNotFoundError, OdradekError

__all__ = ["MixedGroups", "MixedShard"]

log = logging.getLogger(__name__)


class MixedShard(Protocol):
    """What the facade needs of a coordinator shard."""

    partition: int
    lock: Any
    state: GroupShard
    classic: dict[str, ClassicGroup]
    classic_waiters: dict[tuple[str, str, str], list[Future[Any]]]
    sessions: dict[tuple[str, str], int]
    revocations: dict[tuple[str, str], int]
    writer: ShardWriter
    share: ShareGroupShard
    """Share groups (their ids are refused to the classic protocol)."""


class MixedGroups:
    """Classic requests to consumer groups, and the conversions."""

    def __init__(
        self,
        config: GroupCoordinatorConfig,
        classic_config: ClassicGroupConfig,
        clock: Clock,
        write: Callable[[Any, list[GroupRecord]], None],
        topics: Callable[[], dict[str, TopicInfo]],
    ) -> None:
        self._config = config
        self._classic_config = classic_config
        self._clock = clock
        self._write = write
        self._topics = topics
        self.policy = ConsumerGroupMigrationPolicy.parse(config.group_consumer_migration_policy)

    # -- classic requests to a consumer group with members -----------------------------------

    def join(
        self, shard: MixedShard, group: ConsumerGroup, req: JoinGroupRequest, new_member_id: str
    ) -> JoinGroupResult:
        now = self._clock.monotonic_ms()
        topics = self._topics()
        out = classic_join(
            group,
            req,
            new_member_id,
            topics,
            self._classic_config,
            max_group_size=self._config.group_consumer_max_size,
        )
        if out.member is None:
            return out.reply
        records = list(out.records)
        down: Downgrade | None = None
        rebalance = False
        replaced = out.replaced_member_id
        if replaced is not None:
            refusal = validate_online_downgrade_with_replaced_member(
                group, replaced, self.policy, self._classic_config.group_max_size
            )
            if refusal is None:
                # KAFKA-19546: a replacement subscribing to other topics rebalances
                rebalance = (
                    group.members[replaced].subscribed_topic_names
                    != out.member.subscribed_topic_names
                )
                try:
                    down = classic_group_from_consumer(
                        group, replaced, topics, now, joining_member=out.member
                    )
                except GroupIdNotFoundError as e:
                    log.info("group %s stays a consumer group: %s", group.group_id, e)
                else:
                    records += down.records
            else:
                log.debug("%s", refusal.reason)
        try:
            self._write(shard, records)
        except OdradekError as e:
            log.info("could not store group %s: %s", group.group_id, e)
            return JoinGroupResult(error_code=e.code, member_id=req.member_id)
        gid = group.group_id
        if replaced is not None:
            self._forget(shard, gid, replaced)
        if down is not None:
            # the records were replayed: ``group`` is what is left of the consumer group
            self._downgraded(shard, gid, down, rebalance=rebalance, why="a static replacement")
            return out.reply
        key = (gid, out.member.member_id)
        shard.sessions[key] = now + req.session_timeout_ms
        shard.revocations[key] = now + max(req.rebalance_timeout_ms, 0)  # the sync timer
        return out.reply

    def sync(
        self, shard: MixedShard, group: ConsumerGroup, req: SyncGroupRequest
    ) -> SyncGroupResult:
        out = classic_sync(group, req, self._topics())
        member = group.members.get(req.member_id)
        if member is None or member.classic is None:
            return out.reply
        now = self._clock.monotonic_ms()
        key = (group.group_id, member.member_id)
        if out.rejoin:
            shard.revocations.setdefault(key, now + max(member.rebalance_timeout_ms, 0))
        elif out.reply.error_code == 0:
            shard.revocations.pop(key, None)
            shard.sessions[key] = now + member.classic.session_timeout_ms
        return out.reply

    def heartbeat(
        self,
        shard: MixedShard,
        group: ConsumerGroup,
        member_id: str,
        generation_id: int,
        instance_id: str | None,
    ) -> int:
        code = classic_heartbeat(group, member_id, generation_id, instance_id)
        member = group.members.get(member_id)
        if member is None or member.classic is None or code not in (0, REBALANCE_IN_PROGRESS):
            return code
        now = self._clock.monotonic_ms()
        key = (group.group_id, member_id)
        shard.sessions[key] = now + member.classic.session_timeout_ms
        if code == REBALANCE_IN_PROGRESS:
            shard.revocations.setdefault(key, now + max(member.rebalance_timeout_ms, 0))
        return code

    def leave(
        self, shard: MixedShard, group: ConsumerGroup, members: Sequence[LeaveMember]
    ) -> tuple[int, list[LeaveMemberResult]]:
        out = classic_leave(group, members, self._topics())
        try:
            self._write(shard, out.records)
        except OdradekError as e:
            return e.code, []
        for mid in out.removed:
            self._forget(shard, group.group_id, mid)
        return 0, out.results

    # -- KIP-848 requests and timers that may convert a group ------------------------------

    def consumer_heartbeat(
        self, shard: MixedShard, request: HeartbeatRequest, topics: dict[str, TopicInfo]
    ) -> tuple[HeartbeatResult, bool]:
        """A ConsumerGroupHeartbeat, written: its result, and whether it converted the group
        back to a classic group (the last KIP-848 member left; no session to track then). A
        joining member converts a classic group first (:meth:`upgrade`), in the same write.
        Raises the heartbeat's errors, nothing written."""
        group = shard.state.groups.get(request.group_id)
        upgrade = self.upgrade(shard, request)
        if upgrade is not None:
            group = upgrade.group
        result = heartbeat(
            group, request, topics, max_group_size=self._config.group_consumer_max_size
        )
        if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH and group is not None:
            down = self.downgrade(shard, group, result.member_id)
            if down is not None:
                self._write(shard, list(down.records))
                self.downgraded(shard, group, down)
                return result, True
        self._write(shard, [*(upgrade.records if upgrade else ()), *result.records])
        if upgrade is not None:
            self.upgraded(shard, upgrade)
        return result, False

    def remove_expired(self, shard: MixedShard, group: ConsumerGroup, member_id: str) -> None:
        """A member's session or rebalance deadline passed: it is removed, or, the last KIP-848
        member of a group of classic members, the group converts back. Raises the write's
        errors."""
        down = self.downgrade(shard, group, member_id)
        if down is None:
            self._write(shard, member_leave_records(group, member_id))
        else:
            self._write(shard, list(down.records))
            self.downgraded(shard, group, down)

    # -- conversions --------------------------------------------------------------------------

    def upgrade(self, shard: MixedShard, request: HeartbeatRequest) -> Upgrade | None:
        """A ConsumerGroupHeartbeat for a group id a classic group holds: None if there is
        none (an empty one is deleted: Kafka's offline path), else the conversion to write
        with the heartbeat's records (then call :meth:`upgraded`). Raises GROUP_ID_NOT_FOUND
        (a member that is not joining, the policy, a protocol type other than ``consumer``, a
        group larger than ``group.consumer.max.size``, malformed member metadata, assignor
        user data a consumer group would lose)."""
        gid = request.group_id
        classic = shard.classic.get(gid)
        if classic is None:
            return None
        if classic.is_empty():
            self._write(shard, delete_records(gid))
            shard.classic.pop(gid, None)
            return None
        if request.member_epoch != 0:
            raise GroupIdNotFoundError(f"Group {gid} is not a consumer group.")
        refusal = validate_online_upgrade(
            classic, self.policy, self._config.group_consumer_max_size
        )
        if refusal is not None:
            log.info("%s", refusal.reason)
            raise GroupIdNotFoundError(refusal.message)
        try:
            return consumer_group_from_classic(classic, self._topics(), self._clock.monotonic_ms())
        except GroupIdNotFoundError as e:
            log.info("%s", e.message)
            raise

    def upgraded(self, shard: MixedShard, up: Upgrade) -> None:
        """The upgrade's records are written: the classic group goes, its waiting requests
        are answered REBALANCE_IN_PROGRESS, its members' sessions start."""
        gid = up.group.group_id
        shard.classic.pop(gid, None)
        for (kind, group_id, member_id), futures in list(shard.classic_waiters.items()):
            if group_id != gid:
                continue
            del shard.classic_waiters[(kind, group_id, member_id)]
            answer: Any = (
                JoinGroupResult(error_code=REBALANCE_IN_PROGRESS, member_id=member_id)
                if kind == "join"
                else SyncGroupResult(REBALANCE_IN_PROGRESS)
            )
            for future in futures:
                try:
                    future.set_result(answer)
                except InvalidStateError:
                    pass  # answered by an unload meanwhile
        for mid, deadline in up.session_deadlines_ms.items():
            shard.sessions[(gid, mid)] = deadline
        log.info(
            "classic group %s converted to a consumer group at epoch %d (%d members)",
            gid,
            up.group.group_epoch,
            len(up.group.members),
        )

    def downgrade(
        self, shard: MixedShard, group: ConsumerGroup, leaving_member_id: str
    ) -> Downgrade | None:
        """``leaving_member_id`` leaves or expires: the conversion to a classic group to write
        instead of its removal (then call :meth:`downgraded`), or None (it is removed as
        usual)."""
        refusal = validate_online_downgrade(
            group, leaving_member_id, self.policy, self._classic_config.group_max_size
        )
        if refusal is not None:
            return None
        try:
            return classic_group_from_consumer(
                group, leaving_member_id, self._topics(), self._clock.monotonic_ms()
            )
        except GroupIdNotFoundError as e:
            log.info("group %s stays a consumer group: %s", group.group_id, e)
            return None

    def downgraded(self, shard: MixedShard, group: ConsumerGroup, down: Downgrade) -> None:
        """The downgrade's records are written: the classic group takes the consumer group's
        place, its members' sessions are its own, and it rebalances."""
        self._downgraded(
            shard, group.group_id, down, rebalance=down.rebalance, why="the last KIP-848 leave"
        )

    def _downgraded(
        self, shard: MixedShard, gid: str, down: Downgrade, *, rebalance: bool, why: str
    ) -> None:
        for key in [k for k in (*shard.sessions, *shard.revocations) if k[0] == gid]:
            shard.sessions.pop(key, None)
            shard.revocations.pop(key, None)
        shard.classic[gid] = down.group
        if rebalance:
            prepare_rebalance(down.group, self._clock.monotonic_ms(), self._classic_config)
        log.info(
            "consumer group %s converted to a classic group at generation %d (%s)",
            gid,
            down.group.generation_id,
            why,
        )

    @staticmethod
    def _forget(shard: MixedShard, group_id: str, member_id: str) -> None:
        shard.sessions.pop((group_id, member_id), None)
        shard.revocations.pop((group_id, member_id), None)
