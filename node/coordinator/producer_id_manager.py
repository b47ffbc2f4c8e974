"""Producer ids for idempotent producers, claimed from ZooKeeper a block at a time.

Kafka's ``ZkProducerIdManager`` (brokers before IBP 3.0 wrote ZooKeeper themselves) with the
prefetch of its ``RPCProducerIdManager``. ``/latest_producer_id_block`` holds the last block
any broker claimed (:class:`controller.zk_data.ProducerIdBlockZNode`). To claim the next one a
node reads the znode and its version, computes the block after it (:func:`next_block`; the
first block is ``[0, 999]``) and writes it with a setData conditional on that version; if
another node wrote first the version no longer matches, and it reads again. Each id is so
handed out by one node only, across restarts: a restarted node claims a new block and never
reuses the rest of its old one.

A node claims its first block at the first InitProducerId, and the next block in the
background once 90% of the current one is handed out. If the next block is not there when the
current one runs out (ZooKeeper slow or unreachable), the caller claims it itself; if that
fails, InitProducerId answers COORDINATOR_LOAD_IN_PROGRESS (retriable).

Thread-safe: :meth:`ProducerIdManager.generate_producer_id` may be called from any request
thread.
"""

from __future__ import annotations

import logging
import threading

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError

from controller.zk_data import (
    PRODUCER_ID_BLOCK_SIZE,
    ProducerIdBlockZNode,
    ProducerIdsBlock,
)
from node.core.replica_manager import error_of
from node.core.requests import InitProducerIdResult
from odradek.errors import (
    CoordinatorLoadInProgressError,
    InvalidRequestError,
    OdradekError,
    UnknownServerError,
)

__all__ = [
    "LONG_MAX",
    "PREFETCH_RATIO",
    "ProducerIdManager",
    "claim_block",
    "init_producer_id",
    "next_block",
]

log = logging.getLogger(__name__)

LONG_MAX = 2**63 - 1
PREFETCH_RATIO = 0.9
"""Claim the next block once this share of the current one is handed out (Kafka's 90%)."""
_MAX_CONFLICTS = 100


def next_block(
    latest: ProducerIdsBlock | None, broker_id: int, size: int = PRODUCER_ID_BLOCK_SIZE
) -> ProducerIdsBlock:
    """The block after ``latest`` (the first block, from 0, if there is none), for
    ``broker_id``. Raises ``UnknownServerError`` when the ids would pass ``2**63 - 1``."""
    first = 0 if latest is None else latest.last + 1
    if first > LONG_MAX - size:
        raise UnknownServerError(f"producer ids are exhausted: a block at {first} would overflow")
    return ProducerIdsBlock(broker_id, first, size)


def claim_block(
    zk: KazooClient, broker_id: int, size: int = PRODUCER_ID_BLOCK_SIZE
) -> ProducerIdsBlock:
    """Claim the next block in ZooKeeper for ``broker_id`` (conditional setData, retried on
    a version conflict). Raises kazoo's errors (connection loss, …), ``ValueError`` for a
    znode that cannot be decoded, and ``UnknownServerError`` if ids are exhausted or the
    znode changed under every one of many attempts."""
    path = ProducerIdBlockZNode.path
    for _ in range(_MAX_CONFLICTS):
        try:
            data, stat = zk.get(path)
        except NoNodeError:
            block = next_block(None, broker_id, size)
            try:
                zk.create(path, ProducerIdBlockZNode.encode(block))
            except NodeExistsError:
                continue  # another node created it first
            return block
        latest = ProducerIdBlockZNode.decode(data) if data else None
        block = next_block(latest, broker_id, size)
        try:
            zk.set(path, ProducerIdBlockZNode.encode(block), version=stat.version)
        except BadVersionError:
            log.debug("producer id block conflict at version %d; retrying", stat.version)
            continue
        return block
    raise UnknownServerError(f"could not claim a producer id block: {path} kept changing")


class ProducerIdManager:
    """Hands out producer ids from blocks claimed in ZooKeeper (see the module docstring).
    Thread-safe."""

    def __init__(
        self, zk: KazooClient, broker_id: int, block_size: int = PRODUCER_ID_BLOCK_SIZE
    ) -> None:
        if block_size < 1:
            raise ValueError(f"block size must be positive, not {block_size}")
        self._zk = zk
        self._broker_id = broker_id
        self._block_size = block_size
        self._lock = threading.Lock()
        self._claim_lock = threading.Lock()  # one claim at a time
        self._current: ProducerIdsBlock | None = None
        self._next_id = 0
        self._prefetched: ProducerIdsBlock | None = None
        self._prefetching = False

    @property
    def current_block(self) -> ProducerIdsBlock | None:
        return self._current

    def generate_producer_id(self) -> int:
        """A producer id no node has handed out before. Raises
        ``CoordinatorLoadInProgressError`` (retriable) if a block cannot be claimed now, and
        ``UnknownServerError`` if ids are exhausted."""
        while True:
            with self._lock:
                current = self._current
                exhausted = current is None or self._next_id > current.last
                if exhausted and self._prefetched is not None:
                    current = self._current = self._prefetched
                    self._prefetched = None
                    self._next_id = current.first
                if current is not None and self._next_id <= current.last:
                    pid = self._next_id
                    self._next_id += 1
                    used = self._next_id - current.first
                    if (
                        used >= PREFETCH_RATIO * current.size
                        and self._prefetched is None
                        and not self._prefetching
                    ):
                        self._prefetching = True
                        threading.Thread(
                            target=self._prefetch, name="producer-id-prefetch", daemon=True
                        ).start()
                    return pid
            self._claim_now()

    def _claim(self) -> ProducerIdsBlock:
        block = claim_block(self._zk, self._broker_id, self._block_size)
        log.info("node %d claimed producer ids %d..%d", self._broker_id, block.first, block.last)
        return block

    def _claim_now(self) -> None:
        """No id left and none prefetched: claim a block in this thread (or wait for the
        prefetch running now)."""
        with self._claim_lock:
            with self._lock:
                if self._prefetched is not None or (
                    self._current is not None and self._next_id <= self._current.last
                ):
                    return  # a prefetch finished meanwhile
            try:
                block = self._claim()
            except (KazooException, ValueError) as e:
                log.warning("claiming a producer id block failed", exc_info=e)
                raise CoordinatorLoadInProgressError(
                    "cannot claim a producer id block now (ZooKeeper did not answer); retry"
                ) from e
            with self._lock:
                self._prefetched = block

    def _prefetch(self) -> None:
        try:
            with self._claim_lock:
                with self._lock:
                    if self._prefetched is not None:
                        return
                try:
                    block = self._claim()
                except Exception as e:  # retried by the next caller that runs out
                    log.warning("prefetching a producer id block failed: %s", e)
                    return
                with self._lock:
                    self._prefetched = block
        finally:
            with self._lock:
                self._prefetching = False


def init_producer_id(
    manager: ProducerIdManager | None, transactional_id: str | None
) -> InitProducerIdResult:
    """InitProducerId for an idempotent producer (no ``transactional_id``): a new producer id,
    epoch 0, as Kafka's ``TransactionCoordinator.handleInitProducerId`` answers them.
    Transactions are not supported (INVALID_REQUEST, as an empty transactional id is);
    ``manager`` ``None`` (a node handing out no ids): INVALID_REQUEST; ZooKeeper unreachable:
    COORDINATOR_LOAD_IN_PROGRESS (retriable). Never raises. Thread-safe."""
    try:
        if transactional_id is not None:
            if not transactional_id:
                raise InvalidRequestError("the transactional id must not be empty")
            raise InvalidRequestError("transactions are not supported: send no transactional id")
        if manager is None:
            raise InvalidRequestError("this node hands out no producer ids")
        pid = manager.generate_producer_id()
    except Exception as e:
        err: OdradekError = error_of(e)
        return InitProducerIdResult(error_code=err.code, error_message=err.message)
    return InitProducerIdResult(producer_id=pid, producer_epoch=0)
