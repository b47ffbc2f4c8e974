"""The invariants, checked after every step of the simulation.

``committed`` is the largest high watermark any leader has exposed so far; the records below it
are copied (as the leader's raw batch bytes) into the checker's own record of the committed log
the moment it grows. With unclean leader election disabled, Kafka promises (replication
reference, 2.2 to 2.9):

1. **hw-went-backwards** — a replica's high watermark never decreases while it runs (a restart
   may bring back a lower, checkpointed one; a new leader may expose a lower one than the old
   leader did, so there is no cluster-wide "the HW" to hold monotonic — the committed offset
   is);
2. **two-leaders-in-epoch** / **leader-not-elected** — at most one replica ever acts as leader
   in a given leader epoch, and only the one the controller elected for it;
3. **committed-diverged** / **committed-lost** / **hw-above-committed** — committed records
   are never changed or lost: every running replica matches the committed log below its own
   high watermark (which never exceeds ``committed``), and every running member of the
   controller's ISR holds the whole committed log, byte for byte (so whoever is elected next
   has it);
4. **acked-not-committed** — an acks=-1 write is acknowledged only once committed, and the
   committed record at its offset is the one written (acks=1 writes may be lost and are not
   checked);
5. **consumer-saw-uncommitted** — consumers read only committed records.

Checking is incremental: each replica's log is compared with the committed log only past the
offset already verified (reset by truncation and restarts), and in full at the end of a run.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import TYPE_CHECKING

from odradek.records import RecordBatch, read_batches
from storage import Log

if TYPE_CHECKING:
    from tests.sim.sim_controller import SimController
    from tests.sim.sim_node import SimNode


class InvariantError(AssertionError):
    """An invariant failed; ``kind`` names it (see the module docstring)."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"[{kind}] {detail}")
        self.kind = kind


def read_range(log: Log, start: int, end: int) -> tuple[bytes, int]:
    """The raw batches of ``log`` from offset ``start`` (which must begin a batch) up to
    ``end``, and the offset reached (``end``, or less if the log is shorter or a batch
    straddles ``end``). Raises InvariantError if ``start`` does not begin a batch."""
    out = bytearray()
    offset = start
    while offset < end:
        data = bytes(log.read(offset, 1 << 30, max_offset=end).records)
        moved = False
        for batch in read_batches(data):
            if batch.base_offset >= end or batch.last_offset >= end:
                break
            if batch.base_offset != offset:
                raise InvariantError(
                    "committed-diverged",
                    f"{log!r}: offset {offset} falls inside the batch "
                    f"{batch.base_offset}..{batch.last_offset}",
                )
            out += data[batch.position : batch.position + batch.size_in_bytes]
            offset = batch.last_offset + 1
            moved = True
        if not moved:
            break
    return bytes(out), offset


def describe_batches(data: bytes, limit: int = 3) -> str:
    parts = []
    for batch in read_batches(data):
        values = [r.value for r in batch.records()]
        parts.append(
            f"[{batch.base_offset}..{batch.last_offset} ep={batch.partition_leader_epoch} {values}]"
        )
        if len(parts) >= limit:
            break
    return " ".join(parts) or "(nothing)"


class Checker:
    """Tracks what has been committed and checks the invariants against the replicas."""

    def __init__(self) -> None:
        self.committed = 0
        self._bytes = bytearray()
        self._bases: list[int] = []  # base offset of each committed batch
        self._starts: list[int] = []  # its byte position in self._bytes
        self.leader_of_epoch: dict[int, int] = {}
        self._hw: dict[int, tuple[int, int]] = {}  # node -> (incarnation, high watermark)
        self._verified: dict[int, tuple[int, int]] = {}  # node -> (incarnation, offset)
        self.acked: dict[int, bytes] = {}
        self.consumed_batches = 0

    # -- the committed log --
    def committed_bytes(self) -> bytes:
        return bytes(self._bytes)

    def _position(self, offset: int, who: str) -> int:
        if offset == self.committed:
            return len(self._bytes)
        i = bisect.bisect_left(self._bases, offset)
        if i < len(self._bases) and self._bases[i] == offset:
            return self._starts[i]
        j = bisect.bisect_right(self._bases, offset) - 1
        batch = RecordBatch(self._bytes, self._starts[j])
        raise InvariantError(
            "committed-diverged",
            f"{who}: offset {offset} falls inside the committed batch "
            f"{batch.base_offset}..{batch.last_offset}",
        )

    def _extend(self, data: bytes) -> None:
        for batch in read_batches(data):
            self._bases.append(batch.base_offset)
            self._starts.append(len(self._bytes) + batch.position)
        self._bytes += data

    # -- the checks --
    def check(self, nodes: Sequence[SimNode], controller: SimController) -> None:
        running = [n for n in nodes if n.running]
        for n in running:
            self._check_leadership(n, controller)
        for n in running:
            self._check_high_watermark(n)
        self._advance_committed(running)
        for n in running:
            self._check_replica(n, controller)

    def _check_leadership(self, n: SimNode, controller: SimController) -> None:
        p = n.partition
        if not p.is_leader:
            return
        owner = self.leader_of_epoch.setdefault(p.leader_epoch, n.node_id)
        if owner != n.node_id:
            raise InvariantError(
                "two-leaders-in-epoch",
                f"n{n.node_id} leads epoch {p.leader_epoch}, which n{owner} led before",
            )
        elected = controller.leader_of_epoch.get(p.leader_epoch)
        if elected != n.node_id:
            raise InvariantError(
                "leader-not-elected",
                f"n{n.node_id} leads epoch {p.leader_epoch}, for which the controller elected "
                f"{elected}",
            )

    def _check_high_watermark(self, n: SimNode) -> None:
        log = n.log
        hw, leo, start = log.high_watermark, log.log_end_offset, log.log_start_offset
        if not start <= hw <= leo:
            raise InvariantError(
                "offsets-out-of-order",
                f"n{n.node_id}: log start {start}, high watermark {hw}, log end {leo}",
            )
        previous = self._hw.get(n.node_id)
        if previous is not None and previous[0] == n.incarnation and hw < previous[1]:
            raise InvariantError(
                "hw-went-backwards",
                f"n{n.node_id}: high watermark {previous[1]} -> {hw} (leo {leo})",
            )
        self._hw[n.node_id] = (n.incarnation, hw)

    def _advance_committed(self, running: Sequence[SimNode]) -> None:
        leaders = [n for n in running if n.partition.is_leader]
        if not leaders:
            return
        best = max(leaders, key=lambda n: (n.log.high_watermark, -n.node_id))
        hw = best.log.high_watermark
        if hw <= self.committed:
            return
        self._verify(best, self.committed)
        if best.log.log_end_offset < self.committed:
            raise InvariantError(
                "committed-lost",
                f"leader n{best.node_id} (leo {best.log.log_end_offset}) lacks committed "
                f"records below {self.committed}",
            )
        data, reached = read_range(best.log, self.committed, hw)
        if reached != hw:
            raise InvariantError(
                "committed-diverged",
                f"leader n{best.node_id}: high watermark {hw} is not a batch boundary "
                f"(read stopped at {reached})",
            )
        self._extend(data)
        self.committed = hw

    def _verify(self, n: SimNode, upto: int) -> None:
        """Compare n's log with the committed log on [0, min(upto, committed))."""
        log = n.log
        incarnation, done = self._verified.get(n.node_id, (n.incarnation, 0))
        if incarnation != n.incarnation:
            done = 0
        if n.lowest_truncation is not None:
            done = min(done, n.lowest_truncation)
            n.lowest_truncation = None
        done = min(done, log.log_end_offset)
        upto = min(upto, self.committed)
        if upto > done:
            who = f"n{n.node_id}"
            expected = self._bytes[self._position(done, who) : self._position(upto, who)]
            data, _ = read_range(log, done, upto)
            if data != expected:
                raise InvariantError(
                    "committed-diverged",
                    f"n{n.node_id} differs from the committed log in [{done}, {upto}): "
                    f"has {_first_difference(data, bytes(expected))}",
                )
            done = upto
        self._verified[n.node_id] = (n.incarnation, done)

    def _check_replica(self, n: SimNode, controller: SimController) -> None:
        log = n.log
        hw, leo = log.high_watermark, log.log_end_offset
        if hw > self.committed:
            raise InvariantError(
                "hw-above-committed",
                f"n{n.node_id} has high watermark {hw}, but only {self.committed} is committed",
            )
        self._verify(n, min(hw, leo))
        if n.node_id in controller.isr:
            if leo < self.committed:
                raise InvariantError(
                    "committed-lost",
                    f"n{n.node_id} is in the ISR {list(controller.isr)} (epoch "
                    f"{controller.leader_epoch}) but its log ends at {leo}, below the "
                    f"committed offset {self.committed}",
                )
            self._verify(n, self.committed)

    def verify_fully(self, n: SimNode) -> None:
        """Forget what was verified and compare n's log with the committed log again."""
        self._verified.pop(n.node_id, None)
        self._verify(n, min(n.log.high_watermark, n.log.log_end_offset))

    # -- what clients saw --
    def on_acked(self, base_offset: int, values: Sequence[bytes]) -> None:
        """An acks=-1 produce succeeded: its records must be committed, as written."""
        for i, value in enumerate(values):
            offset = base_offset + i
            if offset >= self.committed:
                raise InvariantError(
                    "acked-not-committed",
                    f"acks=-1 write acknowledged at offset {offset}, but only "
                    f"{self.committed} is committed",
                )
            found = self._record_value(offset)
            if found != value:
                raise InvariantError(
                    "acked-not-committed",
                    f"acks=-1 write {value!r} acknowledged at offset {offset}, where the "
                    f"committed log has {found!r}",
                )
            self.acked[offset] = value

    def _record_value(self, offset: int) -> bytes | None:
        i = bisect.bisect_right(self._bases, offset) - 1
        for record in RecordBatch(self._bytes, self._starts[i]).records():
            if record.offset == offset:
                return record.value
        return None

    def on_consumed(self, data: bytes, who: str) -> None:
        """A consumer fetch answered: every whole batch must be committed, byte for byte."""
        for batch in read_batches(data):
            if batch.position + batch.size_in_bytes > len(data):
                break
            if batch.last_offset >= self.committed:
                raise InvariantError(
                    "consumer-saw-uncommitted",
                    f"a consumer read {batch.base_offset}..{batch.last_offset} from {who}, "
                    f"beyond the committed offset {self.committed}",
                )
            start = self._position(batch.base_offset, who)
            mine = data[batch.position : batch.position + batch.size_in_bytes]
            if self._bytes[start : start + len(mine)] != mine:
                raise InvariantError(
                    "consumer-saw-uncommitted",
                    f"a consumer read from {who} {describe_batches(mine)}, but the committed "
                    f"log has {describe_batches(bytes(self._bytes[start:]), 1)}",
                )
            self.consumed_batches += 1


def _first_difference(actual: bytes, expected: bytes) -> str:
    actual_batches = list(read_batches(actual))
    expected_batches = list(read_batches(expected))
    for a, e in zip(actual_batches, expected_batches, strict=False):
        a_bytes = actual[a.position : a.position + a.size_in_bytes]
        e_bytes = expected[e.position : e.position + e.size_in_bytes]
        if a_bytes != e_bytes:
            return (
                f"{describe_batches(a_bytes, 1)} where the committed log has "
                f"{describe_batches(e_bytes, 1)}"
            )
    return (
        f"{len(actual_batches)} batches ending at offset "
        f"{actual_batches[-1].last_offset + 1 if actual_batches else '?'} where the committed "
        f"log has {len(expected_batches)}"
    )
