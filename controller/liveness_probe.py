"""Probes a silent broker's address: is anything listening there?

A broker that has missed a few heartbeats is *suspect* (:mod:`controller.broker_sessions`). The
controller asks this prober to open one TCP connection to its inter-broker address: refused
means no process listens there, so the broker that registered it is gone (killed, crashed) and
can acknowledge nothing more; the controller then fences it at once instead of at the end of its
session. Anything else (connected: the process lives, perhaps paused, its kernel still accepts;
a timeout or an unreachable network: cut off, not known to be dead) says nothing, and the
session runs its course. Only a refusal counts, so a broker that might still take writes is
never fenced early, and its leadership lease (:mod:`node.broker_lifecycle`) stays ahead of the
controller.

One daemon thread does the probing (a connection may take up to ``timeout_ms``), so neither
the event thread nor gRPC threads block on it. ``probe`` is thread-safe and never blocks.
"""

from __future__ import annotations

import logging
import queue
import socket
import threading
from collections.abc import Callable

__all__ = ["LivenessProbe", "refused"]

_log = logging.getLogger(__name__)


def refused(target: str, timeout_ms: int) -> bool:
    """Whether a TCP connection to ``target`` (``host:port``) is refused."""
    host, _, port = target.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_ms / 1000):
            return False
    except ConnectionRefusedError:
        return True
    except (OSError, ValueError):
        return False


class LivenessProbe:
    """Probes suspects' addresses on one thread; calls ``on_dead(broker_id, broker_epoch)``
    (on that thread) for each whose connection was refused."""

    def __init__(
        self,
        on_dead: Callable[[int, int], None],
        timeout_ms: int = 200,
        check: Callable[[str, int], bool] = refused,
    ) -> None:
        self._on_dead = on_dead
        self._timeout_ms = timeout_ms
        self._check = check
        self._queue: queue.SimpleQueue[tuple[int, int, str] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="liveness-probe", daemon=True)
        self._thread.start()

    def probe(self, broker_id: int, broker_epoch: int, target: str) -> None:
        self._queue.put((broker_id, broker_epoch, target))

    def shutdown(self) -> None:
        self._queue.put(None)

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            broker_id, broker_epoch, target = item
            try:
                dead = self._check(target, self._timeout_ms)
            except Exception:
                _log.exception("probing broker %d at %s failed", broker_id, target)
                continue
            if dead:
                _log.info("broker %d: nothing listens at %s any more", broker_id, target)
                self._on_dead(broker_id, broker_epoch)
