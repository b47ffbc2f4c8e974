"""A broker's registration in ZooKeeper (Kafka's ``KafkaZkClient.registerBroker`` and the
re-registration of ``KafkaServer`` after a session expiry).

The broker is live while its ephemeral ``/brokers/ids/<id>`` exists; the znode's creation zxid
(czxid) is the *broker epoch* (KIP-380), which grows with each registration, so the controller
and other brokers can tell a restarted broker from its former self (requests carrying an old
broker epoch are rejected with STALE_BROKER_EPOCH).

When the ZooKeeper session expires, the znode goes with it; once kazoo has a new session the
registration is written again, with a new epoch, and ``on_epoch_change(epoch)`` is called (from
a background thread).

Thread-safety: all public methods are thread-safe.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)

from controller.errors import NodeIdInUseError
from controller.zk_data import BrokerIdsZNode, BrokerIdZNode, BrokerRegistrationInfo, EndPoint
from odradek.clock import Clock, SystemClock

__all__ = ["BrokerRegistration", "NodeIdInUseError"]

_log = logging.getLogger(__name__)


class BrokerRegistration:
    """Registers one broker and keeps it registered across ZooKeeper session expiries."""

    def __init__(
        self,
        zk: KazooClient,
        node_id: int,
        host: str,
        port: int,
        rack: str | None,
        on_epoch_change: Callable[[int], None] | None = None,
        *,
        clock: Clock | None = None,
        reregister_timeout_ms: int = 60_000,
        endpoints: tuple[EndPoint, ...] = (),
    ) -> None:
        """``clock`` stamps the registration (default: the system clock);
        ``reregister_timeout_ms`` bounds how long a re-registration after a session expiry
        waits for a lingering old registration of this id to disappear. ``endpoints`` are the
        advertised listeners (default: one PLAINTEXT listener at ``host``:``port``, the
        address the controller and the other brokers use)."""
        self._zk = zk
        self.info = BrokerRegistrationInfo(
            node_id=node_id, host=host, port=port, rack=rack, endpoints=endpoints
        )
        self._on_epoch_change = on_epoch_change
        self._clock = clock or SystemClock()
        self._reregister_timeout_ms = reregister_timeout_ms
        self._lock = threading.Lock()
        self._epoch = -1
        self._registered = False
        self._session_lost = False
        self._stop = threading.Event()

    @property
    def node_id(self) -> int:
        return self.info.node_id

    @property
    def path(self) -> str:
        return BrokerIdZNode.path(self.info.node_id)

    @property
    def broker_epoch(self) -> int:
        """The current broker epoch; -1 before :meth:`register`."""
        with self._lock:
            return self._epoch

    def register(self, wait_ms: int = 0) -> int:
        """Create the ephemeral registration and return the broker epoch.

        If another ZooKeeper session holds this id, waits up to ``wait_ms`` for its znode to
        go: a previous process of this node that crashed (or was killed) leaves its session,
        and so its registration, until the session times out — also across a restart of
        ZooKeeper, which restores its sessions. Then raises :class:`NodeIdInUseError`: another
        live process has this id. Kafka fails at once; waiting out the old session lets a
        node restarted right after a crash come up without an operator waiting for it.
        :meth:`deregister` during the wait ends it with the same error. Kazoo's errors are
        raised if ZooKeeper is unreachable. Calling it again while registered returns the
        current epoch.
        """
        deadline = self._clock.monotonic_ms() + wait_ms
        self._stop.clear()
        waiting_logged = False
        while True:
            with self._lock:
                if self._registered:
                    return self._epoch
                try:
                    epoch = self._create()
                except NodeIdInUseError as e:
                    if self._clock.monotonic_ms() >= deadline:
                        raise
                    error = e
                    if not waiting_logged:
                        _log.info("%s; waiting up to %d ms for it to go", e, wait_ms)
                        waiting_logged = True
                else:
                    self._epoch = epoch
                    self._registered = True
                    break
            if self._stop.wait(0.2):
                raise error  # deregister() ended the wait
        self._zk.add_listener(self._on_state)
        _log.info("broker %d registered with epoch %d", self.node_id, epoch)
        return epoch

    def deregister(self) -> None:
        """Delete the registration (if this session holds it) and stop re-registering.
        Idempotent; ZooKeeper errors are logged, not raised."""
        with self._lock:
            was_registered, self._registered = self._registered, False
            self._epoch = -1
        self._stop.set()
        self._zk.remove_listener(self._on_state)
        if not was_registered:
            return
        try:
            _, stat = self._zk.get(self.path)
            if stat.ephemeralOwner == self._session_id():
                self._zk.delete(self.path, version=stat.version)
        except NoNodeError:
            pass
        except (ConnectionLoss, SessionExpiredError, ConnectionClosedError) as e:
            _log.warning("broker %d: could not deregister: %s", self.node_id, e)

    def _session_id(self) -> int | None:
        client_id = self._zk.client_id
        return int(client_id[0]) if client_id else None

    def _create(self) -> int:
        """Create the znode; returns its czxid. Must hold ``_lock``."""
        self._zk.ensure_path(BrokerIdsZNode.path)
        data = BrokerIdZNode.encode(self.info, self._clock.wall_ms())
        try:
            _, stat = self._zk.create(self.path, data, ephemeral=True, include_data=True)
            return int(stat.czxid)
        except NodeExistsError:
            pass
        try:
            _, stat = self._zk.get(self.path)
        except NoNodeError:
            return self._create()
        if stat.ephemeralOwner == self._session_id():
            return int(stat.czxid)  # ours already (a retried create)
        raise NodeIdInUseError(
            f"node id {self.node_id} is registered by another ZooKeeper session "
            f"(0x{int(stat.ephemeralOwner):x}): another live node has this id, or a previous "
            "process's session has not expired yet"
        )

    def _on_state(self, state: str) -> None:
        # kazoo's connection thread: no ZooKeeper calls here.
        if state == KazooState.LOST:
            self._session_lost = True
        elif state == KazooState.CONNECTED and self._session_lost:
            self._session_lost = False
            threading.Thread(
                target=self._reregister, name=f"reregister-{self.node_id}", daemon=True
            ).start()

    def _reregister(self) -> None:
        deadline = self._clock.monotonic_ms() + self._reregister_timeout_ms
        while not self._stop.is_set():
            try:
                with self._lock:
                    if not self._registered:
                        return
                    epoch = self._create()
                    self._epoch = epoch
                _log.info("broker %d re-registered with epoch %d", self.node_id, epoch)
                if self._on_epoch_change is not None:
                    self._on_epoch_change(epoch)
                return
            except NodeIdInUseError as e:
                # The expired session's znode may linger a moment on the server.
                if self._clock.monotonic_ms() >= deadline:
                    _log.error("broker %d: cannot re-register: %s", self.node_id, e)
                    return
            except (ConnectionLoss, SessionExpiredError) as e:
                _log.info("broker %d: re-registration waits for ZooKeeper: %s", self.node_id, e)
            except ConnectionClosedError:
                return
            self._stop.wait(0.2)
