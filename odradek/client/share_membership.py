"""A share consumer's membership of its share group (KIP-932's ShareGroupHeartbeat).

The client half of ``docs/groups.md`` "Share groups (KIP-932): membership" (Kafka's
``ShareMembershipManager`` and ``ShareHeartbeatRequestManager``):

* **Coordinator.** Found with FindCoordinator (key type GROUP) through
  :class:`~odradek.client.group.GroupClient`, which forgets it on NOT_COORDINATOR,
  COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS or an unreachable node; the next
  heartbeat finds it again.
* **Membership.** The member id is a random UUID generated once (KIP-1082). The member joins
  with epoch 0 and its subscribed topic names, then heartbeats at its epoch every
  ``heartbeat_interval_ms`` the coordinator answers, from a thread of its own (a member busy
  between two polls keeps its partitions). An answer with an assignment replaces the member's
  partitions at once: share groups have no revocation phase (the partition leaders lock
  records one by one).
* **Fencing.** UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH or GROUP_ID_NOT_FOUND drop the
  assignment and rejoin with epoch 0 at once (after a coordinator failover, a session expiry).
  Retriable errors are retried after ``retry_backoff_ms``; any other error is kept and raised
  from :meth:`ShareMembership.check` (the consumer's ``poll``).
* **Leaving.** :meth:`ShareMembership.leave` stops the thread and heartbeats with epoch -1.

Thread-safe: the heartbeat thread and the consumer's thread share the state under ``_lock``.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterable

from odradek.client.group import GroupClient
from odradek.clock import Clock
from odradek.errors import (
    FencedMemberEpochError,
    GroupIdNotFoundError,
    OdradekError,
    UnknownMemberIdError,
)
from odradek.v1 import odradek_pb2 as pb

__all__ = ["LEAVE_EPOCH", "ShareMembership"]

log = logging.getLogger("odradek.share_consumer.group")

LEAVE_EPOCH = -1
_REJOIN_ERRORS = (FencedMemberEpochError, UnknownMemberIdError, GroupIdNotFoundError)
_TICK_MS = 100
"""The longest the heartbeat thread sleeps before looking at the clock again."""


class ShareMembership:
    """One share consumer's membership (see the module docstring)."""

    def __init__(
        self, client: GroupClient, clock: Clock, *, client_id: str, retry_backoff_ms: int
    ) -> None:
        self.client = client
        self.member_id = str(uuid.uuid4())
        self.member_epoch = 0
        self.heartbeat_interval_ms = 0
        """The coordinator's (0 until its first answer)."""
        self._clock = clock
        self._client_id = client_id
        self._retry_backoff_ms = retry_backoff_ms
        self._lock = threading.Condition()
        self._topics: list[str] = []
        self._subscription_sent = True
        self._assignment: dict[str, tuple[int, ...]] = {}
        self._next_heartbeat_ms = 0
        self._fatal: OdradekError | None = None
        self._stopping = False
        self._thread: threading.Thread | None = None

    # -- the consumer's thread -------------------------------------------------------------

    def subscribe(self, topics: Iterable[str]) -> None:
        """Subscribe to ``topics`` (joining the group with the first call) and heartbeat now."""
        with self._lock:
            self._topics = sorted(set(topics))
            self._subscription_sent = False
            self._next_heartbeat_ms = self._clock.monotonic_ms()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._heartbeat_loop, name="odradek-share-heartbeat", daemon=True
                )
                self._thread.start()
            self._lock.notify_all()

    @property
    def subscribed(self) -> bool:
        return self._thread is not None

    def subscription(self) -> set[str]:
        with self._lock:
            return set(self._topics)

    def assignment(self) -> dict[str, tuple[int, ...]]:
        """The partitions the member reads now, by topic id."""
        with self._lock:
            return dict(self._assignment)

    def check(self) -> None:
        """Raise the error that stopped the membership, if any (non-retriable: e.g.
        :class:`~odradek.errors.GroupAuthorizationFailedError`)."""
        with self._lock:
            if self._fatal is not None:
                raise self._fatal

    def wait_for_assignment(self, timeout_ms: int) -> None:
        """Wait up to ``timeout_ms`` for a non-empty assignment (or a fatal error)."""
        deadline = self._clock.monotonic_ms() + timeout_ms
        with self._lock:
            while not self._assignment and self._fatal is None:
                left = deadline - self._clock.monotonic_ms()
                if left <= 0:
                    return
                self._lock.wait(min(left, _TICK_MS) / 1000)

    def leave(self) -> None:
        """Stop heartbeating and leave the group (epoch -1) if the member joined. Errors of the
        leave are logged, not raised (the coordinator expires the member anyway)."""
        with self._lock:
            thread, self._thread = self._thread, None
            self._stopping = True
            self._lock.notify_all()
        if thread is None:
            return
        thread.join()
        if self.member_epoch <= 0:
            return
        request = pb.ShareGroupHeartbeatRequest(
            group_id=self.client.group_id,
            member_id=self.member_id,
            member_epoch=LEAVE_EPOCH,
            client_id=self._client_id,
        )
        try:
            self.client.send(
                lambda s: s.ShareGroupHeartbeat,  # type: ignore[arg-type, return-value]
                request,
                lambda r: (r.error_code, r.error_message),
            )
        except OdradekError as exc:
            log.info("share group %s: leaving failed: %s", self.client.group_id, exc)
        self.member_epoch = LEAVE_EPOCH

    # -- the heartbeat thread ---------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        while True:
            with self._lock:
                request = self._next_heartbeat()
                if request is None:
                    return
            try:
                response = self.client.send(
                    lambda s: s.ShareGroupHeartbeat,  # type: ignore[arg-type, return-value]
                    request,
                    lambda r: (r.error_code, r.error_message),
                )
            except OdradekError as exc:
                with self._lock:
                    self._heartbeat_failed(exc)
                continue
            except Exception as exc:  # a bug or a broken channel: poll raises it
                with self._lock:
                    self._fatal = OdradekError(f"share group heartbeat failed: {exc!r}")
                    self._lock.notify_all()
                return
            with self._lock:
                self._heartbeat_answered(request, response)

    def _next_heartbeat(self) -> pb.ShareGroupHeartbeatRequest | None:
        """Under the lock: wait until a heartbeat is due and return it (``None``: stop)."""
        while True:
            if self._stopping or self._fatal is not None:
                return None
            now = self._clock.monotonic_ms()
            if now >= self._next_heartbeat_ms:
                full = self.member_epoch == 0 or not self._subscription_sent
                self._subscription_sent = True
                return pb.ShareGroupHeartbeatRequest(
                    group_id=self.client.group_id,
                    member_id=self.member_id,
                    member_epoch=self.member_epoch,
                    has_subscribed_topic_names=full,
                    subscribed_topic_names=self._topics if full else [],
                    client_id=self._client_id,
                )
            self._lock.wait(min(self._next_heartbeat_ms - now, _TICK_MS) / 1000)

    def _heartbeat_failed(self, error: OdradekError) -> None:
        now = self._clock.monotonic_ms()
        if isinstance(error, _REJOIN_ERRORS):
            log.info(
                "share group %s: member %s: %s; rejoining",
                self.client.group_id,
                self.member_id,
                error,
            )
            self.member_epoch = 0
            self._assignment = {}
            self._next_heartbeat_ms = now
        elif error.retriable:
            log.debug("share group %s: heartbeat failed: %s", self.client.group_id, error)
            self._subscription_sent = False  # the next heartbeat names the topics again
            self._next_heartbeat_ms = now + self._retry_backoff_ms
        else:
            self._fatal = error
        self._lock.notify_all()

    def _heartbeat_answered(
        self, request: pb.ShareGroupHeartbeatRequest, response: pb.ShareGroupHeartbeatResponse
    ) -> None:
        if self._stopping:
            # close() is leaving: keep the epoch the coordinator knows for the leave
            self.member_epoch = response.member_epoch
            return
        self.member_epoch = response.member_epoch
        self.heartbeat_interval_ms = max(response.heartbeat_interval_ms, 1)
        self._next_heartbeat_ms = self._clock.monotonic_ms() + self.heartbeat_interval_ms
        if response.has_assignment:
            self._assignment = {
                a.topic_id: tuple(sorted(a.partitions)) for a in response.assignment
            }
        self._lock.notify_all()
