"""ShareFetch and ShareAcknowledge (KIP-932), whatever the front door: their policy in front of
the :class:`~node.share.manager.SharePartitionManager`, as Kafka's
``KafkaApis.handleShareFetchRequest`` / ``handleShareAcknowledgeRequest``:

* READ on the group, else the whole request is GROUP_AUTHORIZATION_FAILED (30); an empty group
  or member id INVALID_REQUEST (42);
* the share session (:mod:`node.share.sessions`): its errors answer the whole request
  (SHARE_SESSION_NOT_FOUND 122, INVALID_SHARE_SESSION_EPOCH 123, SHARE_SESSION_LIMIT_REACHED
  133, INVALID_REQUEST for acknowledgements in a session's first ShareFetch);
* per partition: a topic id this node does not know UNKNOWN_TOPIC_ID (100), a topic the
  principal may not READ TOPIC_AUTHORIZATION_FAILED (29), a partition this node does not lead
  NOT_LEADER_OR_FOLLOWER (6) with the current leader and its endpoint (KIP-951, as Fetch's:
  :func:`node.apis.current_leader.current_leader`);
* the acknowledgements first (a ShareFetch's piggy-backed ones in ``acknowledge_error_code``),
  then, epoch -1, the member's records released and the session closed, else the fetch from
  every partition of the session.

A ShareFetch's answer holds the session's every partition when it opens the session, else the
partitions it named, those with records and those with errors (Kafka's
``ShareSessionContext``). Thread-safe (no state of its own).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from node.apis.current_leader import current_leader
from node.core.metadata_cache import MetadataCache
from node.core.requests import Broker
from node.security.auth_helper import AuthHelper, Caller
from node.share.manager import (
    PendingShareFetch,
    ShareFetchParams,
    ShareFetchResult,
    SharePartitionManager,
    ShareTarget,
)
from node.share.partition import AcknowledgementBatch
from node.share.sessions import FINAL_EPOCH
from odradek.acl import AclOperation, ResourceType
from odradek.errors import (
    GroupAuthorizationFailedError,
    InvalidRequestError,
    NotLeaderOrFollowerError,
    TopicAuthorizationFailedError,
)

__all__ = [
    "ShareAcknowledgeAnswer",
    "ShareAcknowledgeRequest",
    "ShareFetchAnswer",
    "ShareFetchApis",
    "ShareFetchRequest",
    "SharePartitionRequest",
    "StartedShareFetch",
]

UNKNOWN_TOPIC_ID = 100
GROUP_DENIED = GroupAuthorizationFailedError.code
TOPIC_DENIED = TopicAuthorizationFailedError.code
INVALID_REQUEST = InvalidRequestError.code
NOT_LEADER = NotLeaderOrFollowerError.code


@dataclass(frozen=True, slots=True)
class SharePartitionRequest:
    """A partition of a ShareFetch or ShareAcknowledge: its topic's id, and the
    acknowledgements of its records."""

    topic_id: str
    partition: int
    acknowledgements: tuple[AcknowledgementBatch, ...] = ()


@dataclass(frozen=True, slots=True)
class ShareFetchRequest:
    """A ShareFetch (v1-v2) as the doors decode it."""

    group_id: str
    member_id: str
    share_session_epoch: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    max_records: int
    batch_size: int
    partitions: tuple[SharePartitionRequest, ...] = ()
    forgotten: tuple[tuple[str, int], ...] = ()
    """(topic id, partition) to remove from the session."""
    is_renew_ack: bool = False
    """v2: the acknowledgements include RENEW; nothing is fetched."""


@dataclass(frozen=True, slots=True)
class ShareAcknowledgeRequest:
    group_id: str
    member_id: str
    share_session_epoch: int
    partitions: tuple[SharePartitionRequest, ...] = ()
    is_renew_ack: bool = False


@dataclass(frozen=True, slots=True)
class ShareFetchAnswer:
    """A ShareFetch's answer: a top-level error, or each partition's."""

    error_code: int = 0
    error_message: str = ""
    acquisition_lock_timeout_ms: int = 0
    results: tuple[ShareFetchResult, ...] = ()
    endpoints: tuple[Broker, ...] = ()
    """The endpoints of the leaders named by NOT_LEADER_OR_FOLLOWER partitions."""


ShareAcknowledgeAnswer = ShareFetchAnswer
"""A ShareAcknowledge's answer (``error_code`` per partition; no records)."""


@dataclass(slots=True)
class StartedShareFetch:
    """A ShareFetch past its acknowledgements: its answer now, or a wait
    (:class:`~node.share.manager.PendingShareFetch`) whose :meth:`finish` gives it."""

    answer: ShareFetchAnswer | None
    pending: PendingShareFetch | None = None
    then: Callable[[], ShareFetchAnswer] | None = None

    def finish(self) -> ShareFetchAnswer:
        """The answer (blocks: reads and acquires once more for a waiting fetch)."""
        if self.answer is not None:
            return self.answer
        assert self.then is not None
        return self.then()


class ShareFetchApis:
    """ShareFetch and ShareAcknowledge over one node's share partition manager. ``auth``
    ``None``: everything is allowed."""

    def __init__(
        self,
        manager: SharePartitionManager,
        metadata: MetadataCache,
        auth: AuthHelper | None,
    ) -> None:
        self.manager = manager
        self.metadata = metadata
        self.auth = auth

    # -- shared checks ---------------------------------------------------------------------

    def _top_error(self, caller: Caller, group_id: str, member_id: str) -> tuple[int, str]:
        if not group_id or not member_id:
            return INVALID_REQUEST, "a share group request needs a group id and a member id"
        if self.auth is not None and not self.auth.allowed(
            caller, AclOperation.READ, ResourceType.GROUP, group_id
        ):
            return GROUP_DENIED, f"{caller.principal} may not Read group {group_id!r}"
        return 0, ""

    def _targets(
        self, caller: Caller, wanted: Sequence[tuple[str, int]]
    ) -> tuple[dict[tuple[str, int], ShareTarget], dict[tuple[str, int], ShareFetchResult]]:
        """The partitions ``wanted`` ((topic id, partition)) resolved, and those refused."""
        names = {
            state.topic_id: topic
            for (topic, _), state in self.metadata.snapshot.partitions.items()
            if state.topic_id
        }
        resolved: dict[tuple[str, int], ShareTarget] = {}
        refused: dict[tuple[str, int], ShareFetchResult] = {}
        allowed = (
            dict.fromkeys(names.values(), True)
            if self.auth is None
            else self.auth.topics(
                caller, AclOperation.READ, {names[t] for t, _ in wanted if t in names}
            )
        )
        for topic_id, partition in wanted:
            name = names.get(topic_id)
            if name is None:
                refused[(topic_id, partition)] = ShareFetchResult(
                    "", topic_id, partition, UNKNOWN_TOPIC_ID
                )
            elif not allowed.get(name, False):
                refused[(topic_id, partition)] = ShareFetchResult(
                    name,
                    topic_id,
                    partition,
                    TOPIC_DENIED,
                    AuthHelper.topic_message(caller, AclOperation.READ, name),
                )
            else:
                resolved[(topic_id, partition)] = ShareTarget(name, topic_id, partition)
        return resolved, refused

    def _with_leaders(
        self, results: Sequence[ShareFetchResult], listener_name: str | None
    ) -> tuple[tuple[ShareFetchResult, ...], tuple[Broker, ...]]:
        out: list[ShareFetchResult] = []
        endpoints: dict[int, Broker] = {}
        for r in results:
            if NOT_LEADER not in (r.error_code, r.acknowledge_error_code) or not r.topic:
                out.append(r)
                continue
            leader = current_leader(self.manager.replicas, self.metadata, r.topic, r.partition)
            out.append(dataclasses.replace(r, current_leader=leader))
            if leader.leader_id >= 0 and leader.leader_id not in endpoints:
                broker = self.metadata.broker(leader.leader_id)
                reachable = None if broker is None else broker.on_listener(listener_name)
                if reachable is not None:
                    endpoints[leader.leader_id] = reachable
        return tuple(out), tuple(endpoints[k] for k in sorted(endpoints))

    def _acknowledge(
        self,
        group_id: str,
        member_id: str,
        partitions: Sequence[SharePartitionRequest],
        resolved: dict[tuple[str, int], ShareTarget],
        refused: dict[tuple[str, int], ShareFetchResult],
        renew: bool,
    ) -> dict[tuple[str, int], int]:
        codes: dict[tuple[str, int], int] = {}
        for p in partitions:
            if not p.acknowledgements:
                continue
            key = (p.topic_id, p.partition)
            if key in refused:
                codes[key] = refused[key].error_code
                continue
            codes[key] = self.manager.acknowledge(
                group_id, member_id, resolved[key], p.acknowledgements, renew_lock=renew
            )
        return codes

    # -- ShareFetch ------------------------------------------------------------------------

    def start_share_fetch(
        self, caller: Caller, request: ShareFetchRequest, listener_name: str | None
    ) -> StartedShareFetch:
        """Checks, applies the acknowledgements, and fetches once: the answer, or a wait.
        Blocks (the persister, the reads)."""
        code, message = self._top_error(caller, request.group_id, request.member_id)
        if code:
            return StartedShareFetch(ShareFetchAnswer(code, message))
        group, member = request.group_id, request.member_id
        lock_ms = self.manager.lock_duration_ms(group)
        named = [(p.topic_id, p.partition) for p in request.partitions]
        resolved, refused = self._targets(caller, named)
        has_acks = any(p.acknowledgements for p in request.partitions)
        error, in_session = self.manager.sessions.for_fetch(
            group,
            member,
            request.share_session_epoch,
            [(t.topic_id, t.partition) for t in resolved.values()],
            request.forgotten,
            has_acknowledgements=has_acks,
        )
        self.manager.release_evicted()
        if error:
            return StartedShareFetch(ShareFetchAnswer(error, acquisition_lock_timeout_ms=lock_ms))
        acks = self._acknowledge(
            group, member, request.partitions, resolved, refused, request.is_renew_ack
        )
        if request.share_session_epoch == FINAL_EPOCH:
            self.manager.release_member(group, member)
        fetch_from = [] if request.is_renew_ack else self._session_targets(in_session)
        full = request.share_session_epoch == 0
        if full:
            # a new session: a share partition reset or deleted by the group's admin since it
            # was loaded here is loaded again (node.apis.share_admin)
            self.manager.drop_stale(group, fetch_from)
        params = ShareFetchParams(
            max_wait_ms=request.max_wait_ms,
            min_bytes=request.min_bytes,
            max_bytes=request.max_bytes,
            max_records=request.max_records,
            batch_size=request.batch_size,
        )

        def answer(fetched: Sequence[ShareFetchResult]) -> ShareFetchAnswer:
            by_key = {(r.topic_id, r.partition): r for r in fetched}
            out: list[ShareFetchResult] = []
            order = [*named, *by_key]
            for key in dict.fromkeys(order):
                r = by_key.get(key) or refused.get(key)
                if r is None:
                    t = resolved.get(key)
                    r = ShareFetchResult("" if t is None else t.topic, key[0], key[1])
                if key in acks:
                    r = dataclasses.replace(r, acknowledge_error_code=acks[key])
                keep = full or key in named or r.acquired or r.error_code or key in acks
                if keep:
                    out.append(r)
            results, endpoints = self._with_leaders(out, listener_name)
            return ShareFetchAnswer(
                acquisition_lock_timeout_ms=lock_ms, results=results, endpoints=endpoints
            )

        if not fetch_from:
            return StartedShareFetch(answer([]))
        started = self.manager.start_fetch(group, member, fetch_from, params)
        if not isinstance(started, PendingShareFetch):
            return StartedShareFetch(answer(started))
        pending = started
        return StartedShareFetch(None, pending, lambda: answer(pending.finish()))

    def _session_targets(self, in_session: Sequence[tuple[str, int]]) -> list[ShareTarget]:
        names = {
            state.topic_id: topic
            for (topic, _), state in self.metadata.snapshot.partitions.items()
            if state.topic_id
        }
        return [
            ShareTarget(names[topic_id], topic_id, partition)
            for topic_id, partition in in_session
            if topic_id in names
        ]

    def share_fetch(
        self, caller: Caller, request: ShareFetchRequest, listener_name: str | None = None
    ) -> ShareFetchAnswer:
        """:meth:`start_share_fetch`, waiting on this thread (long poll) for a wait."""
        started = self.start_share_fetch(caller, request, listener_name)
        pending = started.pending
        if pending is not None:
            replicas = self.manager.replicas
            replicas.wait_until(
                pending.ready,
                self.manager.clock.monotonic_ms() + pending.remaining_ms(),
                pending.keys,
                pending.kinds,
            )
        return started.finish()

    # -- ShareAcknowledge ------------------------------------------------------------------

    def share_acknowledge(
        self, caller: Caller, request: ShareAcknowledgeRequest, listener_name: str | None = None
    ) -> ShareAcknowledgeAnswer:
        """Checks and applies the acknowledgements; epoch -1 then closes the session and
        releases the member's records. Blocks (the persister)."""
        code, message = self._top_error(caller, request.group_id, request.member_id)
        if code:
            return ShareFetchAnswer(code, message)
        group, member = request.group_id, request.member_id
        named = [(p.topic_id, p.partition) for p in request.partitions]
        resolved, refused = self._targets(caller, named)
        error = self.manager.sessions.for_acknowledge(group, member, request.share_session_epoch)
        if error:
            return ShareFetchAnswer(error)
        acks = self._acknowledge(
            group, member, request.partitions, resolved, refused, request.is_renew_ack
        )
        if request.share_session_epoch == FINAL_EPOCH:
            self.manager.release_member(group, member)
        out = []
        for key in dict.fromkeys(named):
            t = resolved.get(key)
            base = refused.get(key) or ShareFetchResult(
                "" if t is None else t.topic, key[0], key[1]
            )
            out.append(dataclasses.replace(base, error_code=acks.get(key, base.error_code)))
        results, endpoints = self._with_leaders(out, listener_name)
        return ShareFetchAnswer(results=results, endpoints=endpoints)
