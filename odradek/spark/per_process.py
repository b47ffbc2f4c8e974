"""One client per process and bootstrap servers, made on first use.

Spark pickles readers and writers into worker processes and reuses those processes for later
tasks, so clients cannot travel on ``self``: each process makes its own where it is used, and
keeps it for the tasks that follow. The pid is part of the key because a forked worker inherits
its parent's cache but not its connections.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["PerProcess"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class PerProcess(Generic[K, V]):
    """``get(key)``: this process's value for ``key`` (the bootstrap servers and security
    settings), made by ``make`` once. Thread-safe."""

    def __init__(self, make: Callable[[K], V]) -> None:
        self._make = make
        self._values: dict[tuple[int, K], V] = {}
        self._lock = threading.Lock()

    def get(self, key: K) -> V:
        pid_key = (os.getpid(), key)
        with self._lock:
            value = self._values.get(pid_key)
            if value is None:
                value = self._make(key)
                self._values[pid_key] = value
            return value
