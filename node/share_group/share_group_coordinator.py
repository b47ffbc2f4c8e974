"""Share groups hosted by the group coordinator: ShareGroupHeartbeat, ShareGroupDescribe, and
share groups in ListGroups, DescribeGroups and DeleteGroups.

A share group lives where a consumer group of the same id would: on the coordinator of its
``__consumer_offsets`` partition (FindCoordinator key type GROUP), in that partition's shard
of :class:`~node.coordinator.group_coordinator.GroupCoordinator`, under the shard's lock. The
group coordinator only routes to this room: each shard holds a :class:`ShareGroupShard`
(``shard.share``), the shard's replay hands it the share group records, its timer calls
:meth:`ShareGroupCoordinator.tick`, and its ListGroups / DescribeGroups / DeleteGroups ask
:meth:`ShareGroupCoordinator.listed` / :meth:`~ShareGroupCoordinator.described` /
:meth:`~ShareGroupCoordinator.delete`.

* **Persistence**: the group's existence and epoch only, Kafka's ``ShareGroupMetadata``
  record (type 11) written on every group epoch change, a tombstone on DeleteGroups; members
  are in memory and rejoin after a failover (UNKNOWN_MEMBER_ID first), see
  :mod:`node.share_group.share_group`.
* **Sessions**: a member without a heartbeat for ``share.session.timeout.ms`` (the group's
  config, else ``group.share.session.timeout.ms``) is removed, bumping the group epoch; the
  heartbeat interval told to members is ``share.heartbeat.interval.ms`` likewise.
* **One kind per group id**: a share heartbeat for a consumer or classic group's id (or one
  with committed offsets only: Kafka's simple classic group) answers GROUP_ID_NOT_FOUND ("is
  not a share group"); the group coordinator refuses a consumer heartbeat for a share group's
  id the same way (:meth:`ShareGroupCoordinator.check_not_share`), and JoinGroup with
  INCONSISTENT_GROUP_PROTOCOL, as Kafka does.
* Share-partition state is not initialised here: the partition leaders do it on first fetch
  (``share.auto.offset.reset``).

Thread-safe: every method takes the shard's lock (the group coordinator's timer calls
:meth:`tick` and :meth:`listed` with it held; they take it again, it is reentrant).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol

from node.coordinator.group_config import GroupConfig
from node.coordinator.group_coordinator_config import GroupCoordinatorConfig
from node.coordinator.group_requests import (
    DescribedGroup,
    DescribedMember,
    HeartbeatResponse,
    ListedGroup,
    topic_partitions,
)
from node.coordinator.group_state import GroupRecord, TopicInfo
from node.share_group.share_group import (
    ShareGroup,
    ShareHeartbeatRequest,
    share_heartbeat,
    share_member_leave,
)
from node.share_group.simple_assignor import SIMPLE_ASSIGNOR
from odradek.clock import Clock
from odradek.errors import (
    GroupIdNotFoundError,
    NonEmptyGroupError,
    OdradekError,
)
from odradek.group_records import (
    GroupRecordKey,
    GroupRecordValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
)

__all__ = ["SHARE_PROTOCOL_TYPE", "ShareGroupCoordinator", "ShareGroupShard"]

SHARE_PROTOCOL_TYPE = "share"
"""A share group's protocol type and group type in ListGroups."""


@dataclass(slots=True)
class ShareGroupShard:
    """The share groups of one ``__consumer_offsets`` partition, and their members'
    session deadlines. Guarded by the shard's lock."""

    groups: dict[str, ShareGroup] = field(default_factory=dict)
    sessions: dict[tuple[str, str], int] = field(default_factory=dict)
    """(group, member) → monotonic deadline of its session."""

    def replay(self, key: GroupRecordKey, value: GroupRecordValue | None) -> None:
        """A record of the partition, written now or read back by a load: a share group's
        epoch (a group loaded from the log has no member yet), or its tombstone."""
        if not isinstance(key, ShareGroupMetadataKey):
            return
        if value is None:
            self.groups.pop(key.group_id, None)
            for k in [k for k in self.sessions if k[0] == key.group_id]:
                del self.sessions[k]
        elif isinstance(value, ShareGroupMetadataValue):
            group = self.groups.get(key.group_id)
            if group is None:
                self.groups[key.group_id] = ShareGroup(
                    key.group_id, value.epoch, value.epoch, value.metadata_hash
                )
            else:
                group.group_epoch = value.epoch
                group.metadata_hash = value.metadata_hash


class _Shard(Protocol):
    """What this room reads of the group coordinator's shard."""

    @property
    def lock(self) -> Any: ...
    @property
    def share(self) -> ShareGroupShard: ...
    @property
    def classic(self) -> Mapping[str, Any]: ...
    @property
    def state(self) -> Any: ...


ShardOf = Callable[[str], Any]
"""group id → its loaded shard; raises NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
INVALID_GROUP_ID."""
Write = Callable[[Any, list[GroupRecord]], None]
"""Append records to the shard's partition (and replay them); caller holds the lock."""
Durable = Callable[[Any], "Future[OdradekError | None]"]
"""A future of the shard's last write: None once replicated, else the error to answer."""


def _then(
    durable: Future[OdradekError | None], answer: Callable[[OdradekError | None], Any]
) -> Future[Any]:
    out: Future[Any] = Future()

    def done(f: Future[OdradekError | None]) -> None:
        try:
            out.set_result(answer(f.result()))
        except Exception as e:
            out.set_exception(e)

    durable.add_done_callback(done)
    return out


def _done(value: Any) -> Future[Any]:
    out: Future[Any] = Future()
    out.set_result(value)
    return out


class ShareGroupCoordinator:
    """Share group membership over the group coordinator's shards. Thread-safe."""

    def __init__(
        self,
        config: GroupCoordinatorConfig,
        clock: Clock,
        shard_of: ShardOf,
        write: Write,
        durable: Durable,
        topics: Callable[[], dict[str, TopicInfo]],
        group_configs: Callable[[str], GroupConfig] | None = None,
    ) -> None:
        self._config = config
        self._clock = clock
        self._shard_of = shard_of
        self._write = write
        self._durable = durable
        self._topics = topics
        self._group_configs = group_configs

    # -- configs ----------------------------------------------------------------------------

    def session_timeout_ms(self, group_id: str) -> int:
        if self._group_configs is None:
            return self._config.group_share_session_timeout_ms
        return self._group_configs(group_id).share_session_timeout_ms

    def heartbeat_interval_ms(self, group_id: str) -> int:
        if self._group_configs is None:
            return self._config.group_share_heartbeat_interval_ms
        return self._group_configs(group_id).share_heartbeat_interval_ms

    # -- kinds ------------------------------------------------------------------------------

    @staticmethod
    def _other_kind(shard: _Shard, group_id: str) -> bool:
        state = shard.state
        return group_id in state.groups or group_id in state.offsets or group_id in shard.classic

    @staticmethod
    def is_share_group(shard: _Shard, group_id: str) -> bool:
        """Caller holds the shard's lock."""
        return group_id in shard.share.groups

    @staticmethod
    def check_not_share(shard: _Shard, group_id: str, kind: str = "consumer") -> None:
        """GROUP_ID_NOT_FOUND for a share group's id asked as another kind (Kafka's "Group g is
        not a consumer group."). Caller holds the shard's lock."""
        if group_id in shard.share.groups:
            raise GroupIdNotFoundError(f"Group {group_id} is not a {kind} group.")

    # -- ShareGroupHeartbeat ----------------------------------------------------------------

    def heartbeat_later(self, request: ShareHeartbeatRequest) -> Future[HeartbeatResponse]:
        """KIP-932's ShareGroupHeartbeat: join (epoch 0), heartbeat, leave (-1); the member's
        assignment when it is news to it. Processed at once; a future of the answer, done
        once the group's epoch record it depends on is replicated. Errors are in the answer,
        never raised."""
        group_id = request.group_id

        def failed(e: OdradekError, interval: int = 0) -> HeartbeatResponse:
            return HeartbeatResponse(
                request.member_id, request.member_epoch, interval, e.code, e.message
            )

        try:
            interval = self.heartbeat_interval_ms(group_id) if group_id else 0
            shard = self._shard_of(group_id)
            topics = self._topics()
            names = {t.topic_id: t.name for t in topics.values()}
            with shard.lock:
                share: ShareGroupShard = shard.share
                old = share.groups.get(group_id)
                if old is None and self._other_kind(shard, group_id):
                    raise GroupIdNotFoundError(f"Group {group_id} is not a share group.")
                new, result = share_heartbeat(
                    old, request, topics, self._config.group_share_max_size
                )
                if old is None or new.group_epoch != old.group_epoch:
                    self._write(
                        shard,
                        [
                            (
                                ShareGroupMetadataKey(group_id),
                                ShareGroupMetadataValue(new.group_epoch, new.metadata_hash),
                            )
                        ],
                    )
                share.groups[group_id] = new  # after the write: a failed append changes nothing
                key = (group_id, request.member_id)
                if request.member_id in new.members:
                    share.sessions[key] = self._clock.monotonic_ms() + self.session_timeout_ms(
                        group_id
                    )
                else:
                    share.sessions.pop(key, None)
                durable = self._durable(shard)
        except OdradekError as e:
            return _done(failed(e, 0))
        answer = HeartbeatResponse(
            result.member_id,
            result.member_epoch,
            interval,
            assignment=None
            if result.assignment is None
            else topic_partitions(result.assignment, names),
        )
        return _then(durable, lambda error: answer if error is None else failed(error, interval))

    # -- timers -----------------------------------------------------------------------------

    def tick(self, shard: _Shard, now_ms: int) -> None:
        """Remove the members whose session expired (each bumps its group's epoch)."""
        with shard.lock:
            share: ShareGroupShard = shard.share
            for key in sorted(k for k, deadline in share.sessions.items() if deadline <= now_ms):
                del share.sessions[key]
                group_id, member_id = key
                group = share.groups.get(group_id)
                if group is None or member_id not in group.members:
                    continue
                new = share_member_leave(group, member_id)
                try:
                    self._write(
                        shard,
                        [
                            (
                                ShareGroupMetadataKey(group_id),
                                ShareGroupMetadataValue(new.group_epoch, new.metadata_hash),
                            )
                        ],
                    )
                except OdradekError:
                    pass  # the epoch is written with the group's next change
                share.groups[group_id] = new

    # -- reads ------------------------------------------------------------------------------

    def listed(self, shard: _Shard, wanted_states: set[str]) -> list[ListedGroup]:
        """The shard's share groups for ListGroups (``wanted_states`` lower case; empty: all)."""
        out = []
        with shard.lock:
            for gid, group in sorted(shard.share.groups.items()):
                state = group.state_name()
                if wanted_states and state.lower() not in wanted_states:
                    continue
                out.append(ListedGroup(gid, state, SHARE_PROTOCOL_TYPE, SHARE_PROTOCOL_TYPE))
        return out

    def described(self, shard: _Shard, group_id: str) -> DescribedGroup | None:
        """ShareGroupDescribe's view of a share group (group type "share"); None when the id
        is not a share group's. Caller holds the shard's lock."""
        group = shard.share.groups.get(group_id)
        if group is None:
            return None
        names = {t.topic_id: t.name for t in self._topics().values()}
        members = tuple(
            DescribedMember(
                member_id=m.member_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=m.subscribed_topic_names,
                assignment=topic_partitions(m.assigned, names),
                target_assignment=topic_partitions(group.target.get(m.member_id, {}), names),
                member_state="STABLE",
                rack_id=m.rack_id,
            )
            for m in sorted(group.members.values(), key=lambda m: m.member_id)
        )
        return DescribedGroup(
            group_id=group_id,
            group_state=group.state_name(),
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor_name=SIMPLE_ASSIGNOR,
            members=members,
            group_type=SHARE_PROTOCOL_TYPE,
            protocol_type=SHARE_PROTOCOL_TYPE,
        )

    def describe(self, group_ids: Sequence[str]) -> list[DescribedGroup]:
        """ShareGroupDescribe: each group in request order; GROUP_ID_NOT_FOUND for an unknown
        one or one of another kind ("is not a share group"), NOT_COORDINATOR and kin."""
        out = []
        for gid in group_ids:
            try:
                shard = self._shard_of(gid)
                with shard.lock:
                    described = self.described(shard, gid)
                    if described is None:
                        if self._other_kind(shard, gid):
                            raise GroupIdNotFoundError(f"Group {gid} is not a share group.")
                        raise GroupIdNotFoundError(f"Group {gid} not found.")
                out.append(described)
            except OdradekError as e:
                out.append(DescribedGroup(gid, e.code, e.message, group_type=SHARE_PROTOCOL_TYPE))
        return out

    # -- DeleteGroups -----------------------------------------------------------------------

    def delete(self, shard: _Shard, group_id: str) -> bool:
        """Delete ``group_id`` if it is a share group (its tombstone); False if it is not one.
        Raises NON_EMPTY_GROUP while it has members. Caller holds the shard's lock."""
        group = shard.share.groups.get(group_id)
        if group is None:
            return False
        if group.members:
            raise NonEmptyGroupError(f"Group {group_id} is not empty.")
        self._write(shard, [(ShareGroupMetadataKey(group_id), None)])
        return True

    # -- metrics ----------------------------------------------------------------------------

    @staticmethod
    def counts(shards: Sequence[_Shard]) -> tuple[dict[str, int], int]:
        """The share groups of ``shards`` by state (Empty, Stable), and their members."""
        by_state = {"Empty": 0, "Stable": 0}
        members = 0
        for shard in shards:
            with shard.lock:
                for group in shard.share.groups.values():
                    by_state[group.state_name()] += 1
                    members += len(group.members)
        return by_state, members
