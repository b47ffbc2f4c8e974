"""Which partition a record goes to: Kafka's murmur2 key hash and sticky partitioning.

A keyed record goes to ``to_positive(murmur2(key)) % num_partitions`` — Kafka's
``BuiltInPartitioner.partitionForKey`` — so a key lands on the partition a Kafka producer would
pick for it (given the same partition count). A record with neither key nor partition goes to
the topic's *sticky* partition, which changes only when a batch for it is completed (Kafka's
``StickyPartitionCache``, KIP-480): unkeyed records fill one batch at a time instead of
spreading one record per batch over every partition.

Pure apart from the random choice of the next sticky partition (the ``random.Random`` is
injected, so tests can seed it).
"""

from __future__ import annotations

import random
import struct
import threading
from collections.abc import Sequence
from typing import Protocol

__all__ = [
    "DefaultPartitioner",
    "Partitioner",
    "murmur2",
    "partition_for_key",
    "to_positive",
]

_MASK = 0xFFFFFFFF
_SEED = 0x9747B28C
_M = 0x5BD1E995
_R = 24


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: the 32-bit MurmurHash2 of ``data`` with Kafka's seed.

    Returns the value as Java's ``int`` holds it: signed, in ``[-2**31, 2**31)``.
    """
    length = len(data)
    h = (_SEED ^ length) & _MASK
    blocks = length // 4
    # Four bytes at a time, little-endian, as the Java loop assembles them.
    for k in struct.unpack_from(f"<{blocks}I", data):
        k = (k * _M) & _MASK
        k ^= k >> _R
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = blocks * 4
    rest = length - tail
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit (not ``abs``, which overflows)."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's producer picks for ``key`` among ``num_partitions``.

    Raises ``ValueError`` if ``num_partitions`` is not positive.
    """
    if num_partitions <= 0:
        raise ValueError(f"a topic has at least one partition, not {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions


class Partitioner(Protocol):
    """Chooses the partition of records sent without an explicit partition.

    ``available`` lists the partitions that have a leader (it may be empty). Implementations
    are called from any thread that sends, so they must be thread-safe.
    """

    def partition(
        self, topic: str, key: bytes | None, num_partitions: int, available: Sequence[int]
    ) -> int:
        """The partition of a record, in ``range(num_partitions)``."""
        ...

    def on_new_batch(
        self, topic: str, num_partitions: int, available: Sequence[int], previous: int
    ) -> None:
        """A record for ``previous`` (chosen by :meth:`partition` for an unkeyed record) would
        have started a new batch; the producer asks :meth:`partition` again after this call."""
        ...


class DefaultPartitioner:
    """Kafka's default: murmur2 for keys, a sticky partition per topic for unkeyed records.

    The sticky partition is chosen at random among the partitions with a leader (all of them
    if none has one), avoiding the previous sticky partition when there is a choice. It changes
    when a batch for it is done (:meth:`on_new_batch`). Thread-safe.
    """

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._sticky: dict[str, int] = {}
        self._lock = threading.Lock()

    def partition(
        self, topic: str, key: bytes | None, num_partitions: int, available: Sequence[int]
    ) -> int:
        if key is not None:
            return partition_for_key(key, num_partitions)
        with self._lock:
            current = self._sticky.get(topic)
            if current is not None and current < num_partitions:
                return current
            return self._next(topic, num_partitions, available, -1)

    def on_new_batch(
        self, topic: str, num_partitions: int, available: Sequence[int], previous: int
    ) -> None:
        with self._lock:
            if self._sticky.get(topic, previous) == previous:
                self._next(topic, num_partitions, available, previous)

    def _next(
        self, topic: str, num_partitions: int, available: Sequence[int], previous: int
    ) -> int:
        if num_partitions <= 0:
            raise ValueError(f"a topic has at least one partition, not {num_partitions}")
        pool = [p for p in available if 0 <= p < num_partitions] or list(range(num_partitions))
        if len(pool) > 1 and previous in pool:
            pool.remove(previous)
        chosen = pool[self._rng.randrange(len(pool))]
        self._sticky[topic] = chosen
        return chosen
