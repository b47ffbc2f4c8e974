"""The transactional producer's calls to its transaction coordinator: FindCoordinator for the
transactional id (``key_type`` 1), InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn and
EndTxn, each retried as Kafka's ``TransactionManager`` handlers retry it.

:meth:`TransactionCoordinatorClient.run` makes one call until it succeeds or fails for good:
an answer :func:`~odradek.client.transaction_manager.classify` sorts as ``LOOKUP`` forgets the
coordinator and finds it again, one it sorts as ``RETRY`` (``CONCURRENT_TRANSACTIONS``,
``COORDINATOR_LOAD_IN_PROGRESS``, …) is asked again after ``retry_backoff_ms``; both until the
deadline passes, when the last error is raised (``TimeoutError``). Any other error is raised
typed, for the caller to make the transaction abortable or the producer fenced.

Blocking (the user's thread for init, commit, abort and offsets; the producer's I/O thread for
AddPartitionsToTxn). Thread-safe: the coordinator's address is the only state, behind a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from odradek.client.connection import ConnectionPool, call
from odradek.client.errors import error_from_code
from odradek.client.metadata import MetadataCache
from odradek.client.producer_id import ProducerIdAndEpoch
from odradek.client.transaction_manager import LOOKUP, RETRY, classify
from odradek.client.types import TopicPartition
from odradek.clock import Clock
from odradek.errors import (
    CoordinatorNotAvailableError,
    OdradekError,
    OperationNotAttemptedError,
)
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = ["TransactionCoordinatorClient"]

Resp = TypeVar("Resp")
TRANSACTION_KEY = 1  # FindCoordinator's key_type for a transactional id


class TransactionCoordinatorClient:
    """The calls of one transactional id to its coordinator."""

    def __init__(
        self,
        transactional_id: str,
        pool: ConnectionPool,
        metadata: MetadataCache,
        clock: Clock,
        *,
        request_timeout_ms: int,
        retry_backoff_ms: int,
    ) -> None:
        self.transactional_id = transactional_id
        self._pool = pool
        self._metadata = metadata
        self._clock = clock
        self._request_timeout_ms = request_timeout_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._lock = threading.Lock()
        self._coordinator: str | None = None
        self._group_coordinators: dict[str, str] = {}
        """Each group's coordinator (TxnOffsetCommit goes there)."""
        self._closed = threading.Event()

    def close(self) -> None:
        """Ends any backoff now (a call in progress raises its last error)."""
        self._closed.set()

    def coordinator(self) -> str:
        """The coordinator's address, found with FindCoordinator (any node answers). Raises
        the typed error of its answer (COORDINATOR_NOT_AVAILABLE while ``__transaction_state``
        is being created: retriable)."""
        with self._lock:
            if self._coordinator is not None:
                return self._coordinator
        found = self._find(
            pb.FindCoordinatorRequest(
                key_type=TRANSACTION_KEY, transactional_ids=[self.transactional_id]
            ),
            f"transactional id {self.transactional_id!r}",
        )
        with self._lock:
            self._coordinator = found
        return found

    def group_coordinator(self, group_id: str) -> str:
        """The coordinator of ``group_id`` (FindCoordinator for a group)."""
        with self._lock:
            known = self._group_coordinators.get(group_id)
        if known is not None:
            return known
        found = self._find(pb.FindCoordinatorRequest(group_ids=[group_id]), f"group {group_id!r}")
        with self._lock:
            self._group_coordinators[group_id] = found
        return found

    def _find(self, request: pb.FindCoordinatorRequest, what: str) -> str:
        last: OdradekError = CoordinatorNotAvailableError("no node answered FindCoordinator")
        for address in self._metadata.candidates():
            try:
                response = call(
                    self._pool.broker(address).FindCoordinator,
                    request,
                    address=address,
                    timeout_ms=self._request_timeout_ms,
                )
            except OdradekError as exc:
                last = exc
                continue
            (c,) = response.coordinators
            if c.error_code:
                raise error_from_code(c.error_code, c.error_message, what)
            return f"{c.host}:{c.port}"
        raise last

    def forget_coordinator(self, group_id: str | None = None) -> None:
        with self._lock:
            if group_id is None:
                self._coordinator = None
            else:
                self._group_coordinators.pop(group_id, None)

    def run(
        self,
        rpc: Callable[[pb_grpc.BrokerStub], Callable[..., object]],
        request: object,
        error_of: Callable[[Resp], OdradekError | None],
        *,
        deadline_ms: int,
        init: bool = False,
        group_id: str | None = None,
    ) -> Resp:
        """Call the coordinator until the answer is not one to retry (see the module
        docstring); returns the answer without error. Raises the error of an answer that is
        not retried, or, once ``deadline_ms`` (the clock's monotonic time) passes, a
        ``TimeoutError`` from the last error. ``group_id``: call that group's coordinator
        instead (TxnOffsetCommit)."""
        while True:
            try:
                address = (
                    self.coordinator() if group_id is None else self.group_coordinator(group_id)
                )
                response: Resp = call(
                    rpc(self._pool.broker(address)),  # type: ignore[arg-type]
                    request,
                    address=address,
                    timeout_ms=self._request_timeout_ms,
                )
                error = error_of(response)
                if error is None:
                    return response
            except OdradekError as exc:
                error = exc
            verdict = classify(error, init=init)
            if verdict not in (LOOKUP, RETRY):
                raise error
            if verdict == LOOKUP:
                self.forget_coordinator(group_id)
            if self._clock.monotonic_ms() + self._retry_backoff_ms > deadline_ms:
                raise TimeoutError(
                    f"transactional id {self.transactional_id!r}: no answer before the "
                    f"deadline (max_block_ms); last: {error}"
                ) from error
            if self._closed.wait(self._retry_backoff_ms / 1000):
                raise error

    def _error(self, code: int, message: str = "") -> OdradekError | None:
        if code == 0:
            return None
        return error_from_code(code, message, f"transactional id {self.transactional_id!r}")

    # -- the calls ------------------------------------------------------------------------

    def init_producer_id(
        self, timeout_ms: int, current: ProducerIdAndEpoch | None, *, deadline_ms: int
    ) -> ProducerIdAndEpoch:
        """InitProducerId with the transactional id: its producer id and a new epoch
        (``current``: the producer's id and epoch, to bump them, KIP-360)."""
        request = pb.InitProducerIdRequest(
            transactional_id=self.transactional_id,
            transaction_timeout_ms=timeout_ms,
            producer_id=-1 if current is None else current.producer_id,
            producer_epoch=-1 if current is None else current.epoch,
        )
        response: pb.InitProducerIdResponse = self.run(
            lambda stub: stub.InitProducerId,
            request,
            lambda r: self._error(r.error_code, r.error_message),
            deadline_ms=deadline_ms,
            init=True,
        )
        return ProducerIdAndEpoch(response.producer_id, response.producer_epoch)

    def add_partitions(
        self, ids: ProducerIdAndEpoch, partitions: Sequence[TopicPartition], *, deadline_ms: int
    ) -> None:
        """AddPartitionsToTxn: raises the first partition's error that is not
        OPERATION_NOT_ATTEMPTED (the partitions failed together)."""
        request = pb.AddPartitionsToTxnRequest(
            transactional_id=self.transactional_id,
            producer_id=ids.producer_id,
            producer_epoch=ids.epoch,
            partitions=[
                pb.TopicPartition(topic=tp.topic, partition=tp.partition) for tp in partitions
            ],
        )

        def error_of(response: pb.AddPartitionsToTxnResponse) -> OdradekError | None:
            failed = [r for r in response.results if r.error_code]
            first = next(
                (r for r in failed if r.error_code != OperationNotAttemptedError.code),
                failed[0] if failed else None,
            )
            if first is None:
                return None
            return error_from_code(first.error_code, "", f"{first.topic}-{first.partition}")

        self.run(lambda stub: stub.AddPartitionsToTxn, request, error_of, deadline_ms=deadline_ms)

    def add_offsets(self, ids: ProducerIdAndEpoch, group_id: str, *, deadline_ms: int) -> None:
        """AddOffsetsToTxn: the group's offsets partition joins the transaction."""
        request = pb.AddOffsetsToTxnRequest(
            transactional_id=self.transactional_id,
            producer_id=ids.producer_id,
            producer_epoch=ids.epoch,
            group_id=group_id,
        )
        self.run(
            lambda stub: stub.AddOffsetsToTxn,
            request,
            lambda r: self._error(r.error_code),
            deadline_ms=deadline_ms,
        )

    def txn_offset_commit(
        self,
        ids: ProducerIdAndEpoch,
        group_id: str,
        member_id: str,
        generation_id: int,
        instance_id: str | None,
        offsets: Mapping[TopicPartition, int],
        *,
        deadline_ms: int,
    ) -> None:
        """TxnOffsetCommit at the group's coordinator: the offsets pending in the transaction
        (committed with it). Raises the first partition's error."""
        by_topic: dict[str, list[pb.OffsetCommitPartition]] = {}
        for tp, offset in offsets.items():
            by_topic.setdefault(tp.topic, []).append(
                pb.OffsetCommitPartition(
                    partition=tp.partition, committed_offset=offset, committed_leader_epoch=-1
                )
            )
        request = pb.TxnOffsetCommitRequest(
            transactional_id=self.transactional_id,
            group_id=group_id,
            producer_id=ids.producer_id,
            producer_epoch=ids.epoch,
            generation_id=generation_id,
            member_id=member_id,
            topics=[pb.OffsetCommitTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
        )
        if instance_id is not None:
            request.group_instance_id = instance_id

        def error_of(response: pb.OffsetCommitResponse) -> OdradekError | None:
            failed = [p for p in response.partitions if p.error_code]
            if not failed:
                return None
            first = failed[0]
            return error_from_code(
                first.error_code, first.error_message, f"{first.topic}-{first.partition}"
            )

        self.run(
            lambda stub: stub.TxnOffsetCommit,
            request,
            error_of,
            deadline_ms=deadline_ms,
            group_id=group_id,
        )

    def end_txn(self, ids: ProducerIdAndEpoch, commit: bool, *, deadline_ms: int) -> None:
        """EndTxn: the coordinator commits or aborts the transaction (its markers are written
        after it answers)."""
        request = pb.EndTxnRequest(
            transactional_id=self.transactional_id,
            producer_id=ids.producer_id,
            producer_epoch=ids.epoch,
            committed=commit,
        )
        self.run(
            lambda stub: stub.EndTxn,
            request,
            lambda r: self._error(r.error_code),
            deadline_ms=deadline_ms,
        )
