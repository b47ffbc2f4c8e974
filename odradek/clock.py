"""Time as an input.

Every component that needs the time takes a :class:`Clock`. Only :class:`SystemClock` reads the
machine's clocks; everything else is handed one, so tests drive time with :class:`ManualClock`
(Kafka's ``Time``/``MockTime``, trio's ``MockClock``). ``ruff`` bans ``time.time`` and friends
everywhere but here.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

__all__ = ["Clock", "ManualClock", "SystemClock"]


class Clock(Protocol):
    """The two readings odradek needs.

    ``monotonic_ms`` measures intervals (timeouts, lags, schedules) and never goes backwards;
    ``wall_ms`` is milliseconds since the Unix epoch, for timestamps written into records and
    for retention by record time.
    """

    def monotonic_ms(self) -> int: ...

    def wall_ms(self) -> int: ...


class SystemClock:
    """The real clock. Thread-safe."""

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to. Thread-safe.

    Both readings advance together. ``advance`` refuses to go backwards, so code under test can
    rely on the monotonic reading being monotonic.
    """

    def __init__(self, wall_ms: int = 1_700_000_000_000, monotonic_ms: int = 0) -> None:
        if wall_ms < 0 or monotonic_ms < 0:
            raise ValueError("clock readings must be non-negative")
        self._wall_ms = wall_ms
        self._monotonic_ms = monotonic_ms
        self._lock = threading.Lock()

    def monotonic_ms(self) -> int:
        with self._lock:
            return self._monotonic_ms

    def wall_ms(self) -> int:
        with self._lock:
            return self._wall_ms

    def advance(self, ms: int) -> None:
        """Move both readings forward by ``ms``. Raises ``ValueError`` if ``ms < 0``."""
        if ms < 0:
            raise ValueError(f"a clock cannot go backwards (advance({ms}))")
        with self._lock:
            self._wall_ms += ms
            self._monotonic_ms += ms
