"""One client per process and bootstrap servers, made on first use.

Spark pickles readers and writers into worker processes and reuses those processes for later
tasks, so clients cannot travel on ``self``: each process makes its own where it is used, and
keeps it for the tasks that follow. The pid is part of the key because a forked worker inherits
its parent's cache but not its connections.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["PerProcess"]

V = TypeVar("V")


class PerProcess(Generic[V]):
    """``get(servers)``: this process's value for ``servers``, made by ``make`` once.
    Thread-safe."""

    def __init__(self, make: Callable[[str], V]) -> None:
        self._make = make
        self._values: dict[tuple[int, str], V] = {}
        self._lock = threading.Lock()

    def get(self, servers: str) -> V:
        key = (os.getpid(), servers)
        with self._lock:
            value = self._values.get(key)
            if value is None:
                value = self._make(servers)
                self._values[key] = value
            return value
