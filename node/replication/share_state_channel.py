"""How a partition leader reaches the durable share state: the
:class:`~node.share.persister.ShareStatePersister` of the node (Kafka's
``DefaultStatePersister`` with its ``PersisterStateManager``).

Each call finds the share partition's coordinator — the leader, in the node's metadata cache,
of the key's ``__share_group_state`` partition (``abs(javaHash("group:topicId:partition")) %
partitions``) — and calls it: in-process when it is this node
(:class:`~node.share_coordinator.share_coordinator.ShareCoordinator`), else the share-state
RPC of its Replication service on the inter-broker listener. NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, a coordinator not known or not
reached, and a topic not created yet (this node's coordinator creates it) are retried, after a
backoff doubling from ``backoff_ms`` to ``max_backoff_ms``, until ``deadline_ms`` has passed
since the call began: then :class:`~node.share.persister.PersisterError` with the last error's
code. Any other error (FENCED_STATE_EPOCH, FENCED_LEADER_EPOCH, INVALID_REQUEST, ...) is raised
at once as a ``PersisterError``.

Thread-safe: no state but the channels (shared, thread-safe) and the shutdown flag. A call
blocks its thread until answered, refused or out of time; :meth:`ShareStateChannel.close` ends
the backoffs of the calls in flight (they raise COORDINATOR_NOT_AVAILABLE).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import grpc

from node.core.metadata_cache import MetadataCache
from node.replication.share_state_wire import batches_from_wire, batches_to_wire, key_to_wire
from node.share.persister import PersisterError, ShareKey, ShareSnapshot, ShareSummary
from node.share_coordinator.share_coordinator import ShareCoordinator
from odradek.clock import Clock
from odradek.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    NotCoordinatorError,
    OdradekError,
    error_for_code,
)
from odradek.share_state_records import SHARE_GROUP_STATE_TOPIC
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = ["RETRIABLE", "ShareStateChannel"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

RETRIABLE = frozenset(
    {
        NotCoordinatorError.code,
        CoordinatorNotAvailableError.code,
        CoordinatorLoadInProgressError.code,
    }
)
"""The coordinator's errors a call retries (Kafka's ``PersisterStateManager`` finds the
coordinator again for each)."""


class _RetryError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ShareStateChannel:
    """:class:`~node.share.persister.ShareStatePersister` over the node's share coordinator
    and the others' (see the module). Thread-safe."""

    def __init__(
        self,
        node_id: int,
        coordinator: ShareCoordinator,
        metadata: MetadataCache,
        channel_for: Callable[[str], grpc.Channel],
        clock: Clock,
        *,
        timeout_ms: int,
        deadline_ms: int,
        backoff_ms: int = 50,
        max_backoff_ms: int = 1_000,
    ) -> None:
        """``timeout_ms``: one RPC's; ``deadline_ms``: a call's, retries included."""
        self._node_id = node_id
        self._coordinator = coordinator
        self._metadata = metadata
        self._channel_for = channel_for
        self._clock = clock
        self._timeout_ms = timeout_ms
        self._deadline_ms = deadline_ms
        self._backoff_ms = backoff_ms
        self._max_backoff_ms = max_backoff_ms
        self._closed = threading.Event()

    def close(self) -> None:
        self._closed.set()

    # -- the persister -------------------------------------------------------------------------

    def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> None:
        self._call(
            key,
            lambda c: c.initialize(key, state_epoch, start_offset),
            lambda stub, t: _status(
                stub.InitializeShareGroupState(
                    pb.InitializeShareGroupStateRequest(
                        key=key_to_wire(key), state_epoch=state_epoch, start_offset=start_offset
                    ),
                    timeout=t,
                )
            ),
        )

    def read(self, key: ShareKey, leader_epoch: int) -> ShareSnapshot:
        def remote(stub: pb_grpc.ReplicationStub, timeout_s: float) -> ShareSnapshot:
            r = stub.ReadShareGroupState(
                pb.ReadShareGroupStateRequest(key=key_to_wire(key), leader_epoch=leader_epoch),
                timeout=timeout_s,
            )
            _status(r)
            return ShareSnapshot(
                r.state_epoch, r.start_offset, r.leader_epoch, batches_from_wire(r.batches)
            )

        return self._call(key, lambda c: c.read(key, leader_epoch), remote)

    def write(self, key: ShareKey, snapshot: ShareSnapshot) -> None:
        request = pb.WriteShareGroupStateRequest(
            key=key_to_wire(key),
            state_epoch=snapshot.state_epoch,
            leader_epoch=snapshot.leader_epoch,
            start_offset=snapshot.start_offset,
            batches=batches_to_wire(snapshot.batches),
        )
        self._call(
            key,
            lambda c: c.write(key, snapshot),
            lambda stub, t: _status(stub.WriteShareGroupState(request, timeout=t)),
        )

    def delete(self, key: ShareKey) -> None:
        self._call(
            key,
            lambda c: c.delete(key),
            lambda stub, t: _status(
                stub.DeleteShareGroupState(
                    pb.DeleteShareGroupStateRequest(key=key_to_wire(key)), timeout=t
                )
            ),
        )

    def read_summary(self, key: ShareKey) -> ShareSummary:
        def remote(stub: pb_grpc.ReplicationStub, timeout_s: float) -> ShareSummary:
            r = stub.ReadShareGroupStateSummary(
                pb.ReadShareGroupStateSummaryRequest(key=key_to_wire(key)), timeout=timeout_s
            )
            _status(r)
            return ShareSummary(r.state_epoch, r.start_offset)

        return self._call(key, lambda c: c.read_summary(key), remote)

    # -- finding the coordinator, retrying -------------------------------------------------------

    def _call(
        self,
        key: ShareKey,
        local: Callable[[ShareCoordinator], _T],
        remote: Callable[[pb_grpc.ReplicationStub, float], _T],
    ) -> _T:
        deadline = self._clock.monotonic_ms() + self._deadline_ms
        backoff = self._backoff_ms
        while True:
            try:
                return self._attempt(key, local, remote, deadline)
            except _RetryError as e:
                last = e
            now = self._clock.monotonic_ms()
            if self._closed.is_set() or now + backoff > deadline:
                log.info(
                    "share state call for %s gave up after %d ms: %s",
                    key.coordinator_key(),
                    self._deadline_ms,
                    last.message,
                )
                raise PersisterError(last.code, last.message)
            log.debug("share state call for %s retried: %s", key.coordinator_key(), last.message)
            self._closed.wait(backoff / 1000)
            backoff = min(2 * backoff, self._max_backoff_ms)

    def _attempt(
        self,
        key: ShareKey,
        local: Callable[[ShareCoordinator], _T],
        remote: Callable[[pb_grpc.ReplicationStub, float], _T],
        deadline: int,
    ) -> _T:
        snapshot = self._metadata.snapshot
        if not any(t == SHARE_GROUP_STATE_TOPIC for t, _ in snapshot.partitions):
            self._coordinator.maybe_create_topic()
            raise _RetryError(
                CoordinatorNotAvailableError.code, f"{SHARE_GROUP_STATE_TOPIC} is being created"
            )
        partition = self._coordinator.partition_for(key)
        state = snapshot.partitions.get((SHARE_GROUP_STATE_TOPIC, partition))
        leader = -1 if state is None else state.leader
        try:
            if leader == self._node_id:
                return local(self._coordinator)
            broker = snapshot.brokers.get(leader)
            if broker is None:
                raise _RetryError(
                    CoordinatorNotAvailableError.code,
                    f"{SHARE_GROUP_STATE_TOPIC}-{partition} has no live leader",
                )
            remaining_ms = max(1, min(self._timeout_ms, deadline - self._clock.monotonic_ms()))
            stub = pb_grpc.ReplicationStub(self._channel_for(f"{broker.host}:{broker.port}"))
            try:
                return remote(stub, remaining_ms / 1000)
            except grpc.RpcError as e:
                raise _RetryError(
                    CoordinatorNotAvailableError.code,
                    f"share coordinator {leader} not reached: {e.code()}",
                ) from None
        except OdradekError as e:
            if e.code in RETRIABLE:
                raise _RetryError(e.code, e.message) from None
            raise PersisterError(e.code, e.message) from None


def _status(response: Any) -> None:
    """Raises the response's error (as the coordinator's ``OdradekError``) if it has one."""
    code = int(response.error_code)
    if code:
        raise error_for_code(code, str(response.error_message))
