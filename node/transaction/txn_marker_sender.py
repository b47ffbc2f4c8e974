"""The transaction markers' channel (Kafka's ``TransactionMarkerChannelManager``): a
coordinator's ended transactions, written to each partition's leader and retried until done.

:meth:`TxnMarkerSender.send` queues one transaction's markers; a thread of its own groups the
partitions still to write by their current leader (the metadata cache) and hands each leader its
markers (``write``: the node's own core when it leads the partition, WriteTxnMarkers over gRPC
otherwise). Per partition, as Kafka's ``TransactionMarkerRequestCompletionHandler``:

* written: done;
* the leader unknown or moving (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS,
  REQUEST_TIMED_OUT, a broker not reached, ...): retried after ``retry_backoff_ms`` with the
  leader the metadata then names;
* UNKNOWN_TOPIC_OR_PARTITION for a partition the metadata no longer has (its topic deleted):
  done, nothing to end there;
* INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED: this coordinator or producer epoch
  is stale (another completed the transaction): the send stops and ``on_done`` is not called.

When every partition is done ``on_done`` runs on the sender's thread (the coordinator writes
CompleteCommit / CompleteAbort). Thread-safe.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from node.core.metadata_cache import MetadataCache
from node.core.txn_markers import TxnMarker, TxnMarkerResult
from odradek.clock import Clock

__all__ = ["TxnMarkerSender", "WriteMarkers"]

log = logging.getLogger(__name__)

Partition = tuple[str, int]
WriteMarkers = Callable[[int, Sequence[TxnMarker]], Sequence[TxnMarkerResult]]
"""(leader node id, markers) → one result per (marker, partition); raises when the node is
not reached."""

_STALE = frozenset({47, 52})  # INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED


@dataclass
class _Pending:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    left: set[Partition]
    on_done: Callable[[], None]
    started_ms: int
    attempts: int = 0
    stopped: bool = field(default=False)


class TxnMarkerSender:
    """Writes ended transactions' markers (see the module doc). ``start()`` then
    ``shutdown()``."""

    def __init__(
        self,
        metadata: MetadataCache,
        write: WriteMarkers,
        clock: Clock,
        *,
        retry_backoff_ms: int = 100,
        on_latency: Callable[[int], None] | None = None,
    ) -> None:
        self._metadata = metadata
        self._write = write
        self._clock = clock
        self._backoff_ms = retry_backoff_ms
        self._on_latency = on_latency
        self._lock = threading.Condition()
        self._queue: list[_Pending] = []
        self._stopped = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="txn-markers", daemon=True)
        self._thread.start()

    def shutdown(self) -> None:
        with self._lock:
            self._stopped = True
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def pending(self) -> int:
        """Transactions whose markers are not all written."""
        with self._lock:
            return len(self._queue)

    def send(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Iterable[Partition],
        on_done: Callable[[], None],
    ) -> None:
        pending = _Pending(
            transactional_id,
            producer_id,
            producer_epoch,
            commit,
            coordinator_epoch,
            set(partitions),
            on_done,
            self._clock.monotonic_ms(),
        )
        with self._lock:
            # a newer send for the same transaction replaces an older one (a reloaded shard)
            self._queue = [
                p
                for p in self._queue
                if not (p.transactional_id == transactional_id and p.producer_id == producer_id)
            ]
            self._queue.append(pending)
            self._lock.notify_all()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._stopped:
                    self._lock.wait()
                if self._stopped:
                    return
                batch = list(self._queue)
            progressed = self._round(batch)
            done = [p for p in batch if not p.left or p.stopped]
            with self._lock:
                self._queue = [p for p in self._queue if p not in done]
            for p in done:
                if p.stopped:
                    continue
                if self._on_latency is not None:
                    self._on_latency(self._clock.monotonic_ms() - p.started_ms)
                try:
                    p.on_done()
                except Exception:
                    log.exception("completing the transaction of %s failed", p.transactional_id)
            if not progressed:
                with self._lock:
                    if not self._stopped:
                        self._lock.wait(self._backoff_ms / 1000)

    def _round(self, batch: list[_Pending]) -> bool:
        """One attempt at every partition left; whether any finished."""
        snapshot = self._metadata.snapshot
        by_leader: dict[int, list[TxnMarker]] = {}
        owners: dict[tuple[int, int], _Pending] = {}
        progressed = False
        for p in batch:
            p.attempts += 1
            grouped: dict[int, list[Partition]] = {}
            for tp in sorted(p.left):
                state = snapshot.partitions.get(tp)
                if state is None and snapshot.partitions:
                    log.info("%s-%d is gone: no marker to write there", *tp)
                    p.left.discard(tp)
                    progressed = True
                    continue
                if state is None or state.leader < 0:
                    continue
                grouped.setdefault(state.leader, []).append(tp)
            for leader, tps in grouped.items():
                by_leader.setdefault(leader, []).append(
                    TxnMarker(
                        p.producer_id, p.producer_epoch, p.commit, p.coordinator_epoch, tuple(tps)
                    )
                )
                owners[(leader, p.producer_id)] = p
        for leader, markers in by_leader.items():
            try:
                results = self._write(leader, markers)
            except Exception as e:
                log.info("writing transaction markers to node %d failed: %s", leader, e)
                continue
            for r in results:
                p = owners[(leader, r.producer_id)]
                tp = (r.topic, r.partition)
                if r.error_code == 0:
                    p.left.discard(tp)
                    progressed = True
                elif r.error_code in _STALE:
                    log.info(
                        "stopping the markers of %s: %s-%d answered %d (%s)",
                        p.transactional_id,
                        r.topic,
                        r.partition,
                        r.error_code,
                        r.error_message,
                    )
                    p.stopped = True
                    progressed = True
                elif p.attempts % 50 == 0:
                    log.warning(
                        "the %s marker of %s on %s-%d still fails after %d attempts: %d (%s)",
                        "commit" if p.commit else "abort",
                        p.transactional_id,
                        r.topic,
                        r.partition,
                        p.attempts,
                        r.error_code,
                        r.error_message,
                    )
        return progressed
