"""The share group APIs (KIP-932), whatever the front door: ShareGroupHeartbeat and
ShareGroupDescribe, each with its policy in front of the group coordinator's share group room
(:class:`~node.share_group.share_group_coordinator.ShareGroupCoordinator`). As Kafka's
``KafkaApis.handleShareGroupHeartbeat`` / ``handleShareGroupDescribe``:

===================  ===================================================================  ======
API                  checks, in Kafka's order                                             codes
===================  ===================================================================  ======
ShareGroupHeartbeat  READ on the group (30); DESCRIBE on every subscribed topic: a        30, 29
                     refused one answers TOPIC_AUTHORIZATION_FAILED naming the refused
                     topics (whether they exist or not)
ShareGroupDescribe   DESCRIBE on each group (30); a described group whose members          30, 29
                     subscribe to or are assigned a topic the caller may not DESCRIBE
                     answers TOPIC_AUTHORIZATION_FAILED
===================  ===================================================================  ======

ListGroups' ``share`` type, DescribeGroups and DeleteGroups of share groups are
:class:`~node.apis.groups.GroupApis`' (the coordinator answers them for every kind).

Takes plain values and the :class:`~node.security.auth_helper.Caller`; answers plain values
with Kafka's error codes. Thread-safe (no state of its own).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future

from node.coordinator.group_coordinator import GroupCoordinator
from node.coordinator.group_requests import DescribedGroup, HeartbeatResponse
from node.security.auth_helper import AuthHelper, Caller
from node.share_group.share_group import ShareHeartbeatRequest
from odradek.acl import AclOperation
from odradek.errors import TopicAuthorizationFailedError

__all__ = ["ShareGroupApis"]

TOPIC_AUTHORIZATION_FAILED = TopicAuthorizationFailedError.code


def _done(value: HeartbeatResponse) -> Future[HeartbeatResponse]:
    out: Future[HeartbeatResponse] = Future()
    out.set_result(value)
    return out


class ShareGroupApis:
    """The share group APIs over one group coordinator. ``auth`` ``None``: no authorizer,
    everything is allowed."""

    def __init__(self, coordinator: GroupCoordinator, auth: AuthHelper | None) -> None:
        self.coordinator = coordinator
        self.auth = auth

    def _refused_topics(self, caller: Caller, topics: Sequence[str]) -> list[str]:
        if self.auth is None or not topics:
            return []
        allowed = self.auth.topics(caller, AclOperation.DESCRIBE, list(dict.fromkeys(topics)))
        return sorted(t for t, ok in allowed.items() if not ok)

    def share_group_heartbeat(
        self, caller: Caller, request: ShareHeartbeatRequest
    ) -> HeartbeatResponse:
        """:meth:`share_group_heartbeat_later`, waited for on this thread."""
        return self.share_group_heartbeat_later(caller, request).result()

    def share_group_heartbeat_later(
        self, caller: Caller, request: ShareHeartbeatRequest
    ) -> Future[HeartbeatResponse]:
        """Processed at once; a future of the answer, done once the group's write it depends
        on is replicated (no thread need wait for it)."""
        if self.auth is not None:
            refusals = self.auth.consumer_group_heartbeat(caller, request.group_id)
            if refusals:
                return _done(
                    HeartbeatResponse(
                        request.member_id,
                        request.member_epoch,
                        0,
                        refusals[0].error_code,
                        refusals[0].error_message,
                    )
                )
        refused = self._refused_topics(caller, request.subscribed_topic_names or ())
        if refused:
            return _done(
                HeartbeatResponse(
                    request.member_id,
                    request.member_epoch,
                    0,
                    TOPIC_AUTHORIZATION_FAILED,
                    f"The group has subscribed to topics that are not authorized: {refused}",
                )
            )
        return self.coordinator.share.heartbeat_later(request)

    def share_group_describe(
        self, caller: Caller, group_ids: Sequence[str]
    ) -> list[DescribedGroup]:
        """Each group in request order: described, or GROUP_AUTHORIZATION_FAILED (refused),
        GROUP_ID_NOT_FOUND (unknown, or not a share group), TOPIC_AUTHORIZATION_FAILED (a
        member's topic the caller may not see)."""
        refused = (
            {}
            if self.auth is None
            else {r.name: r for r in self.auth.describe_groups(caller, list(group_ids))}
        )
        allowed = [g for g in dict.fromkeys(group_ids) if g not in refused]
        described = {g.group_id: g for g in self.coordinator.share.describe(allowed)}
        out = []
        for gid in group_ids:
            if gid in refused:
                out.append(
                    DescribedGroup(
                        gid,
                        refused[gid].error_code,
                        refused[gid].error_message,
                        group_type="share",
                    )
                )
                continue
            group = described[gid]
            topics = [
                name
                for m in group.members
                for name in (*m.subscribed_topic_names, *(t.topic_name for t in m.assignment))
                if name
            ]
            hidden = self._refused_topics(caller, topics)
            if hidden:
                group = DescribedGroup(
                    gid,
                    TOPIC_AUTHORIZATION_FAILED,
                    "The group has described topic(s) that the client is not authorized to "
                    "describe.",
                    group_type="share",
                )
            out.append(group)
        return out
