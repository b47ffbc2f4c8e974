"""Sends a leader's ISR changes to the active controller (Kafka's ``AlterPartitionManager``).

Partitions propose changes (one in flight per partition, enforced by ``Partition``); this
manager batches whatever is queued into one AlterPartition request to the controller that the
metadata cache names, retries on transport errors, NOT_CONTROLLER and STALE_BROKER_EPOCH, and
hands each answer back to its partition. One thread; ``submit`` is thread-safe and never
blocks.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import grpc

from node.core.metadata_cache import MetadataCache
from node.core.partition import IsrChange, Partition
from odradek.errors import NotControllerError, OdradekError, StaleBrokerEpochError, error_for_code
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

_RETRIED = frozenset({NotControllerError.code, StaleBrokerEpochError.code})
"""Request-level answers after which every change is sent again (after the backoff)."""


class AlterPartitionManager:
    """Queues ISR changes and sends them to the controller. Thread-safe."""

    def __init__(
        self,
        *,
        node_id: int,
        metadata: MetadataCache,
        partition_for: Callable[[str, int], Partition | None],
        channel_for: Callable[[str], grpc.Channel],
        broker_epoch: Callable[[], int],
        retry_backoff_ms: int = 200,
        request_timeout_ms: int = 10_000,
    ) -> None:
        self._node_id = node_id
        self._metadata = metadata
        self._partition_for = partition_for
        self._channel_for = channel_for
        self._broker_epoch = broker_epoch
        self._backoff_s = retry_backoff_ms / 1000
        self._timeout_s = request_timeout_ms / 1000
        self._cond = threading.Condition()
        self._queue: dict[tuple[str, int], IsrChange] = {}
        self._running = True
        self.isr_shrinks = 0  # ISR changes committed (written by this manager's thread only)
        self.isr_expands = 0
        self._failures = 0  # sends retried in a row: only the first of a streak logs at INFO
        self._thread = threading.Thread(target=self._run, name="alter-partition", daemon=True)
        self._thread.start()

    def submit(self, change: IsrChange) -> None:
        with self._cond:
            self._queue[(change.topic, change.partition)] = change
            self._cond.notify()

    def shutdown(self) -> None:
        with self._cond:
            self._running = False
            self._cond.notify()
        self._thread.join(timeout=self._timeout_s + 2)

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._running and not self._queue:
                    self._cond.wait()
                if not self._running:
                    return
                batch, self._queue = self._queue, {}
            unsent = self._send(list(batch.values()))
            self._failures = self._failures + 1 if unsent else 0
            if unsent:
                with self._cond:
                    for change in unsent:
                        self._queue.setdefault((change.topic, change.partition), change)
                    self._cond.wait(self._backoff_s)

    def _send(self, changes: list[IsrChange]) -> list[IsrChange]:
        """Sends ``changes``; returns those to retry."""
        controller = self._metadata.controller()
        if controller is None:
            return changes
        request = pb.AlterPartitionRequest(
            broker_id=self._node_id,
            broker_epoch=self._broker_epoch(),
            partitions=[
                pb.AlterPartitionItem(
                    topic=c.topic,
                    partition=c.partition,
                    leader_epoch=c.leader_epoch,
                    new_isr=list(c.new_isr),
                    partition_epoch=c.partition_epoch,
                )
                for c in changes
            ],
        )
        stub = pb_grpc.ControllerStub(self._channel_for(f"{controller.host}:{controller.port}"))
        try:
            response = stub.AlterPartition(request, timeout=self._timeout_s)
        except grpc.RpcError as e:
            code = e.code() if hasattr(e, "code") else None
            log.log(
                self._retry_level(),
                "AlterPartition to node %d failed: %s",
                controller.node_id,
                code,
            )
            return changes
        if response.error_code in _RETRIED:
            # STALE_BROKER_EPOCH: the controller has not yet seen this node's new registration
            # (Kafka retries it too); the next send carries the epoch current then
            log.log(
                self._retry_level(),
                "AlterPartition to node %d: %s; retrying",
                controller.node_id,
                error_for_code(response.error_code).name,
            )
            return changes
        if response.error_code != 0:
            err = error_for_code(response.error_code)
            log.warning("AlterPartition refused: %s", err.name)
            for change in changes:
                self._complete(change, err)
            return []
        by_tp = {(r.topic, r.partition): r for r in response.partitions}
        for change in changes:
            r = by_tp.get((change.topic, change.partition))
            if r is None:
                continue
            if r.error_code != 0:
                err = error_for_code(r.error_code)
                log.info(
                    "ISR change of %s-%d to %s refused: %s %s",
                    change.topic,
                    change.partition,
                    list(change.new_isr),
                    err.name,
                    r.error_message,
                )
                self._complete(change, err)
            else:
                partition = self._partition_for(change.topic, change.partition)
                if partition is not None:
                    before = len(partition.isr)
                    partition.complete_isr_change(
                        change,
                        error=None,
                        isr=tuple(r.isr),
                        leader_epoch=r.leader_epoch,
                        partition_epoch=r.partition_epoch,
                    )
                    # counted as committed, for the metrics (IsrShrinks/ExpandsPerSec)
                    after = len(partition.isr)
                    self.isr_shrinks += after < before
                    self.isr_expands += after > before
        return []

    def _retry_level(self) -> int:
        """INFO for the first failed send of a streak, DEBUG for the retries (every backoff)
        after it, as the replica fetchers log theirs."""
        return logging.DEBUG if self._failures else logging.INFO

    def _complete(self, change: IsrChange, err: OdradekError) -> None:
        partition = self._partition_for(change.topic, change.partition)
        if partition is not None:
            partition.complete_isr_change(change, error=err)
