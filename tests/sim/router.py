"""The simulated network: messages in flight, delayed, dropped, and cut by partitions.

Endpoints are the replica node ids (0, 1, ...), :data:`CONTROLLER` and :data:`CLIENT`. A message
sent is either dropped at once (at random, or because the link is cut) or delivered after a
random delay; it is dropped at delivery too if the link has been cut meanwhile or the
destination is down. Delays are drawn per message, so messages overtake each other. Nothing is
duplicated (RPCs over TCP are not). All randomness comes from the simulation's ``Random``.

A cut link blocks both directions. Isolating a node cuts all its links, the controller's
(that is, ZooKeeper's: its session expires) and the clients' included. A slow link adds up to
``extra_ms`` to each message's delay, both directions (a congested connection or a long
request queue), so answers can come after their sender has given up and retried.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

from tests.sim.messages import Message

CONTROLLER = 100
CLIENT = 200


def endpoint_name(endpoint: int) -> str:
    if endpoint == CONTROLLER:
        return "C"
    if endpoint == CLIENT:
        return "client"
    return f"n{endpoint}"


@dataclass(order=True, frozen=True, slots=True)
class Envelope:
    deliver_at_ms: int
    seq: int
    src: int = field(compare=False)
    dst: int = field(compare=False)
    message: Message = field(compare=False)


class Router:
    """Messages in flight between endpoints. Not thread-safe (the simulation has one thread)."""

    def __init__(
        self,
        rng: random.Random,
        *,
        min_delay_ms: int,
        max_delay_ms: int,
        drop_probability: float,
    ) -> None:
        if min_delay_ms < 1:
            raise ValueError("a message takes at least 1 ms (so handling never recurses)")
        self._rng = rng
        self.min_delay_ms = min_delay_ms
        self.max_delay_ms = max_delay_ms
        self.drop_probability = drop_probability
        self._heap: list[Envelope] = []
        self._seq = 0
        self._cuts: dict[tuple[int, int], int] = {}  # (low, high) endpoint pair -> heals at
        self._slow: dict[tuple[int, int], tuple[int, int]] = {}  # pair -> (heals at, extra)
        self.down: set[int] = set()
        self.sent = 0
        self.dropped = 0

    # -- partitions --
    @staticmethod
    def _pair(a: int, b: int) -> tuple[int, int]:
        return (a, b) if a < b else (b, a)

    def cut(self, a: int, b: int, until_ms: int) -> None:
        pair = self._pair(a, b)
        self._cuts[pair] = max(until_ms, self._cuts.get(pair, 0))

    def isolate(self, node: int, others: list[int], until_ms: int) -> None:
        """Cut every link of ``node``: to the other nodes, the controller and the clients."""
        for other in [*others, CONTROLLER, CLIENT]:
            if other != node:
                self.cut(node, other, until_ms)

    def slow_down(self, a: int, b: int, extra_ms: int, until_ms: int) -> None:
        self._slow[self._pair(a, b)] = (until_ms, extra_ms)

    def is_cut(self, a: int, b: int) -> bool:
        return self._pair(a, b) in self._cuts

    def heal_expired(self, now_ms: int) -> list[tuple[int, int]]:
        """Heal the cut and slow links whose time is up; returns the pairs healed."""
        healed = sorted(p for p, until in self._cuts.items() if until <= now_ms)
        for p in healed:
            del self._cuts[p]
        sped_up = sorted(p for p, (until, _) in self._slow.items() if until <= now_ms)
        for p in sped_up:
            del self._slow[p]
        return sorted(healed + sped_up)

    def heal_all(self) -> None:
        self._cuts.clear()
        self._slow.clear()

    @property
    def cuts(self) -> list[tuple[int, int]]:
        return sorted(self._cuts)

    # -- messages --
    def send(self, src: int, dst: int, message: Message, now_ms: int) -> bool:
        """Queue ``message``; returns False if it was dropped on the spot."""
        self.sent += 1
        if self.is_cut(src, dst) or self._rng.random() < self.drop_probability:
            self.dropped += 1
            return False
        delay = self._rng.randint(self.min_delay_ms, self.max_delay_ms)
        slow = self._slow.get(self._pair(src, dst))
        if slow is not None:
            delay += self._rng.randint(0, slow[1])
        self._seq += 1
        heapq.heappush(self._heap, Envelope(now_ms + delay, self._seq, src, dst, message))
        return True

    def pop_due(self, now_ms: int) -> Envelope | None:
        """The next message due by ``now_ms`` that survives the links and the destination's
        state, or None. Messages lost on the way are counted and skipped."""
        while self._heap and self._heap[0].deliver_at_ms <= now_ms:
            envelope = heapq.heappop(self._heap)
            if self.is_cut(envelope.src, envelope.dst) or envelope.dst in self.down:
                self.dropped += 1
                continue
            return envelope
        return None

    @property
    def in_flight(self) -> int:
        return len(self._heap)
