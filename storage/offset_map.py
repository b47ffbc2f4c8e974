"""The log cleaner's key → latest offset map, in a fixed memory budget (Kafka's
``SkimpyOffsetMap``).

Layout: one array of ``2 * slots`` signed 64-bit integers, allocated when the map is made and
never resized, so the memory is the budget whatever the number of keys. Slot ``i`` is::

    table[2i]      fingerprint: Python's 64-bit ``hash`` of the key bytes (SipHash)
    table[2i + 1]  (offset - base + 1) << 24 | (CRC-32 of the key & 0xFFFFFF); 0 = empty

16 bytes an entry against Kafka's 24 (a 16-byte MD5 and an 8-byte offset), and one cache line
per probe. As in Kafka the map keeps a fingerprint of the key, never the key: two keys whose
88-bit fingerprints (64 bits of SipHash, keyed at random per process, and 24 of CRC-32) were
equal would share an entry, and the older record of one would be dropped as if the other
superseded it. For ``n`` keys in a pass the chance is about ``n² / 2**89``: 10**-13 for ten
million keys. (MD5's 128 bits are no safer in practice: MD5 collisions can be made on purpose,
while SipHash's key is secret — unless ``PYTHONHASHSEED`` fixes it.)

Clearing the map writes the whole table (128 MiB by default), which would cost a small log's
pass more than cleaning it; so the map also keeps the slots of its first ``slots / 64`` keys
(in ``touched``, half a byte a slot, within the budget) and clears only those when a pass put
no more keys than that.

Offsets are stored relative to the ``base`` given to :meth:`OffsetMap.clear` (the pass's first
dirty offset) in 39 bits: a pass covers at most ``MAX_OFFSET_SPAN`` offsets (5.5 · 10**11), and
the map counts as full past that.

Why open addressing with double hashing over a prime number of slots: the map must not
allocate per key (a ``dict`` grows with every key and holds a key object each), and at Kafka's
load factor of 0.9 linear probing would average some 50 probes for a missing key where double
hashing needs about 10. The first probe is ``fingerprint mod slots``, then steps of
``1 + check mod (slots - 1)``: every slot is visited because ``slots`` is prime.

The cleaner calls the map full at ``max_entries = slots * load_factor`` distinct keys
(:meth:`OffsetMap.is_full`). There are no deletes: a pass starts with :meth:`OffsetMap.clear`.

Not thread-safe: one cleaner uses it at a time.
"""

from __future__ import annotations

from array import array
from zlib import crc32

__all__ = ["BYTES_PER_ENTRY", "CHECK_BITS", "CHECK_MASK", "MAX_OFFSET_SPAN", "OffsetMap"]

BYTES_PER_ENTRY = 16
TOUCHED_SHARE = 64
"""One slot in this many gets a ``touched`` entry (8 bytes)."""
CHECK_BITS = 24
CHECK_MASK = (1 << CHECK_BITS) - 1
MAX_OFFSET_SPAN = (1 << (63 - CHECK_BITS)) - 2
"""Offsets a pass can map above its base (the packed word must stay a positive int64)."""

_ZERO_CHUNK = 1 << 12  # words zeroed per slice assignment in clear() (32 KiB)


def _largest_prime_at_most(n: int) -> int:
    """The largest prime ≤ ``n`` (``n ≥ 2``), by trial division: a handful of candidates."""

    def is_prime(k: int) -> bool:
        if k % 2 == 0:
            return k == 2
        d = 3
        while d * d <= k:
            if k % d == 0:
                return False
            d += 2
        return k > 1

    while not is_prime(n):
        n -= 1
    return n


class OffsetMap:
    """Key → latest offset in ``memory_bytes``. See the module docstring."""

    __slots__ = (
        "_base",
        "_latest_offset",
        "_max_entries",
        "_size",
        "_slots",
        "_table",
        "_touched",
        "lookups",
        "probes",
    )

    def __init__(self, memory_bytes: int, load_factor: float = 0.9) -> None:
        """Allocate the map. Raises ``ValueError`` if ``memory_bytes`` holds fewer than 3
        slots or the load factor leaves no room for one entry."""
        if memory_bytes < 3 * BYTES_PER_ENTRY:
            raise ValueError(f"an offset map needs at least {3 * BYTES_PER_ENTRY} bytes")
        per_slot = BYTES_PER_ENTRY + 8 / TOUCHED_SHARE
        slots = _largest_prime_at_most(int(memory_bytes / per_slot))
        # One slot stays empty whatever the load factor, so that every probe loop ends.
        max_entries = min(int(slots * load_factor), slots - 1)
        if not 0 < load_factor <= 1 or max_entries < 1:
            raise ValueError(f"load factor {load_factor} leaves no room in {slots} slots")
        self._slots = slots
        self._max_entries = max_entries
        # array * n allocates the words once, with no temporary of the same size.
        self._table = array("q", [0]) * (2 * slots)
        self._touched = array("q", [0]) * (slots // TOUCHED_SHARE)
        self._base = 0
        self._size = 0
        self._latest_offset = -1
        self.lookups = 0
        """Calls to put and get since the last clear (with ``probes``, for tuning)."""
        self.probes = 0
        """Slots examined by those calls."""

    # -- sizes --
    @property
    def slots(self) -> int:
        return self._slots

    @property
    def max_entries(self) -> int:
        """Distinct keys the cleaner puts before it calls the map full."""
        return self._max_entries

    @property
    def size(self) -> int:
        """Distinct keys in the map."""
        return self._size

    def is_full(self) -> bool:
        return self._size >= self._max_entries

    @property
    def utilization(self) -> float:
        """Share of the slots in use."""
        return self._size / self._slots

    @property
    def memory_bytes(self) -> int:
        """The bytes of the table and of ``touched``: fixed at construction."""
        return (len(self._table) + len(self._touched)) * 8

    @property
    def base(self) -> int:
        """The offset stored offsets are relative to (set by :meth:`clear`)."""
        return self._base

    @property
    def latest_offset(self) -> int:
        """The highest offset the cleaner has mapped (-1 after clear)."""
        return self._latest_offset

    def update_latest_offset(self, offset: int) -> None:
        """Record that the map covers the log up to ``offset`` (gaps, keyless records)."""
        self._latest_offset = offset

    # -- the inlined probe loops --
    def tables(self) -> tuple[array[int], int, array[int]]:
        """``(table, slots, touched)`` for the cleaner's record loops
        (:mod:`storage.batch_filter`), which probe inline — a method call per record costs as
        much as the probe. They must probe exactly as :meth:`put` and :meth:`get` do, record the
        slot of the n-th new key at ``touched[n]`` while ``n < len(touched)``, and account
        through :meth:`record_puts`."""
        return self._table, self._slots, self._touched

    def record_puts(self, added: int, latest_offset: int) -> None:
        """Account for puts made through :meth:`tables`: ``added`` new keys, the latest
        offset put. (The inlined loops do not count lookups and probes.)"""
        self._size += added
        self._latest_offset = latest_offset

    # -- operations --
    def clear(self, base: int = 0) -> None:
        """Empty the map in place; offsets put from now on must be in
        ``[base, base + MAX_OFFSET_SPAN]``."""
        if self._size <= len(self._touched):
            table = self._table
            for slot in self._touched[: self._size]:
                table[2 * slot] = table[2 * slot + 1] = 0
        else:
            view = memoryview(self._table)
            words = len(self._table)
            zero = array("q", [0]) * min(_ZERO_CHUNK, words)
            for start in range(0, words, _ZERO_CHUNK):
                stop = min(start + _ZERO_CHUNK, words)
                view[start:stop] = zero[: stop - start]
            view.release()
        self._base = base
        self._size = 0
        self._latest_offset = -1
        self.lookups = 0
        self.probes = 0

    def put(self, key: bytes, offset: int) -> None:
        """Map ``key`` to ``offset`` (replacing its previous offset) and make ``offset`` the
        latest. Raises ``OverflowError`` if the key is new and no slot is left, ``ValueError``
        if ``offset`` is outside the span of the base."""
        relative = offset - self._base
        if not 0 <= relative <= MAX_OFFSET_SPAN:
            raise ValueError(f"offset {offset} is outside the map's span from {self._base}")
        i, word, fingerprint, check = self._probe(key)
        table = self._table
        if word == 0:
            if self._size >= self._slots - 1:
                raise OverflowError(f"the offset map is full ({self._slots} slots)")
            table[2 * i] = fingerprint
            if self._size < len(self._touched):
                self._touched[self._size] = i
            self._size += 1
        table[2 * i + 1] = (relative + 1) << CHECK_BITS | check
        self._latest_offset = offset

    def get(self, key: bytes) -> int:
        """The offset mapped to ``key``, or -1 if it is not in the map."""
        _, word, _, _ = self._probe(key)
        return -1 if word == 0 else (word >> CHECK_BITS) - 1 + self._base

    def _probe(self, key: bytes) -> tuple[int, int, int, int]:
        """``(slot, its word, fingerprint, check)``: the slot holding ``key``, or the empty
        one where it would go (word 0). Counts the lookup and its probes."""
        fingerprint = hash(key)
        check = crc32(key) & CHECK_MASK
        slots = self._slots
        table = self._table
        i = fingerprint % slots
        step = 1 + check % (slots - 1)
        probes = 1
        while True:
            word = table[2 * i + 1]
            if word == 0 or (table[2 * i] == fingerprint and word & CHECK_MASK == check):
                break
            i += step
            if i >= slots:
                i -= slots
            probes += 1
        self.lookups += 1
        self.probes += probes
        return i, word, fingerprint, check
