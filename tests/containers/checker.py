"""Judges a workload's history against the log, in the spirit of Jepsen's Kafka checkers.

Inputs: the ``History`` (every send with its acknowledgement or error, every consumer's reads,
the fault windows), the final log (every partition read from the beginning to its high
watermark after the fault healed and the ISR was full again), and each replica's batches read
from its files after a controlled stop.

What must hold (each a list of violations in the ``Verdict``; the scenario asserts it empty):

* lost: an acknowledged value that is nowhere in the final log;
* misplaced: an acknowledged value not at the (partition, offset) it was acknowledged at (for
  an acknowledgement that came without an offset, librdkafka's implicit ones: not in the
  partition it was acknowledged in);
* offsets: in each partition the final log's offsets are unique and increasing (contiguous:
  odradek has no transactions or compaction in this topic);
* consumers: each consumer's view of a partition is a prefix of the final log (the same value
  at every offset it read, and no offset skipped);
* replicas: every replica holds the same batches (base and last offset, leader epoch, CRC,
  which covers every record) up to the high watermark.

With an idempotent producer (the SDK's default, ``History.idempotent``) also:

* duplicated: a value in the log more than once (a retry after a lost answer stored twice);
* order: a producer's values in one partition not in the order it sent them.

Without idempotence duplicates are counted, not judged (a send retried after a lost answer may
be written twice). Also counted: sends that failed (their values may or may not be in the log),
and the longest unavailability around the faults; and, per client and fault, how long that
client's writes to the faulted leader's partitions stalled (:func:`client_leader_stalls`), as a
distribution over the faults (:func:`distribution`).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from odradek.clock import ManualClock
from odradek.records import read_batches
from storage import Log, LogConfig
from tests.containers.workload import History

Batch = tuple[int, int, int, int]
"""(base offset, last offset, partition leader epoch, CRC) of one record batch."""


@dataclass
class Verdict:
    """The checker's findings about one scenario."""

    scenario: str
    operations: int
    acknowledged: int
    failed: int
    duplicated: int
    unavailable_s: float
    reads: int
    unplaced: int = 0
    """Acknowledgements without an offset (``Send.offset_reported``): judged for loss and
    partition, not offset."""
    lost: list[str] = field(default_factory=list)
    misplaced: list[str] = field(default_factory=list)
    offsets: list[str] = field(default_factory=list)
    consumers: list[str] = field(default_factory=list)
    replicas: list[str] = field(default_factory=list)
    idempotent: bool = False
    duplicates: list[str] = field(default_factory=list)
    order: list[str] = field(default_factory=list)
    stalls_s: list[float] = field(default_factory=list)
    """Per fault window, in order: the longest time no acks=-1 write was acknowledged around
    it (:func:`stalls_per_fault`)."""
    role_stalls_s: list[dict[str, float]] = field(default_factory=list)
    """Per fault window, in order: per role the faulted node had (leader, follower, ...), the
    longest stall of a partition in that role (:func:`role_stalls_per_fault`)."""
    targets_s: dict[str, float] = field(default_factory=dict)
    """The stall each role aims at (printed beside the measure, never asserted)."""

    def stall_text(self) -> str:
        """Each fault's stalls by role with their targets: ``follower 0.4/1.0 s, leader 6.2/7.0
        s; ...`` (``-`` for a role without a target); the any-write stall if no roles."""
        if not any(self.role_stalls_s):
            return ", ".join(f"{s:.1f}" for s in self.stalls_s) + " s" if self.stalls_s else "-"
        faults = []
        for stalls in self.role_stalls_s:
            parts = []
            for role, stall in sorted(stalls.items()):
                target = self.targets_s.get(role)
                limit = f"/{target:.1f}" if target is not None else "/-"
                parts.append(f"{role} {stall:.1f}{limit} s")
            faults.append(", ".join(parts))
        return "; ".join(faults)

    @property
    def violations(self) -> dict[str, list[str]]:
        found = {
            "lost": self.lost,
            "misplaced": self.misplaced,
            "offsets": self.offsets,
            "consumers": self.consumers,
            "replicas": self.replicas,
            "order": self.order,
        }
        if self.idempotent:
            found["duplicated"] = self.duplicates
        return {name: items for name, items in found.items() if items}

    def row(self) -> tuple[str, ...]:
        return (
            self.scenario + ("" if self.idempotent else " (idempotence off)"),
            str(self.operations),
            str(self.acknowledged),
            str(len(self.lost)),
            str(self.duplicated),
            f"{self.unavailable_s:.1f} s",
            self.stall_text(),
        )


TABLE_HEADER = (
    "scenario",
    "operations",
    "acknowledged",
    "lost",
    "duplicated",
    "unavailable",
    "stall per fault (role: measured/target)",
)


class Row(Protocol):
    """A scenario's verdict as the table shows it (``Verdict``, ``txn_checker.TxnVerdict``)."""

    def row(self) -> tuple[str, ...]: ...


def table(verdicts: Sequence[Row]) -> str:
    """A Markdown table, one row per scenario."""
    rows = [TABLE_HEADER, *(v.row() for v in verdicts)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(TABLE_HEADER))]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def check(
    scenario: str,
    history: History,
    final: dict[int, list[tuple[int, bytes]]],
    replicas: dict[int, dict[int, list[Batch]]],
) -> Verdict:
    """Checks ``history`` against the ``final`` log (partition -> [(offset, value)]) and the
    ``replicas`` (node -> partition -> batches); never raises on a violation."""
    acked = [s for s in history.sends if s.ok]
    values = Counter(v for records in final.values() for _, v in records)
    verdict = Verdict(
        scenario=scenario,
        operations=len(history.sends),
        acknowledged=len(acked),
        failed=sum(1 for s in history.sends if s.error is not None),
        duplicated=sum(n - 1 for n in values.values() if n > 1),
        unavailable_s=longest_unavailability(history),
        reads=sum(len(r) for r in history.reads.values()),
        stalls_s=stalls_per_fault(history),
        role_stalls_s=role_stalls_per_fault(history),
        idempotent=history.idempotent,
    )
    verdict.duplicates = [f"{v!r} stored {n} times" for v, n in values.items() if n > 1]
    if history.idempotent:
        verdict.order = out_of_order(final)
    at = {p: dict(records) for p, records in final.items()}
    in_partition = {p: {v for _, v in records} for p, records in final.items()}
    for send in acked:
        if not send.offset_reported:  # acknowledged in a partition, at an offset not told
            verdict.unplaced += 1
            if send.value not in values:
                verdict.lost.append(f"{send.value!r} acked in partition {send.partition}")
            elif send.value not in in_partition.get(send.partition, set()):
                verdict.misplaced.append(
                    f"{send.value!r} acked in partition {send.partition}, which lacks it"
                )
            continue
        found = at.get(send.partition, {}).get(send.offset)
        if send.value not in values:
            verdict.lost.append(f"{send.value!r} acked at {send.partition}/{send.offset}")
        elif found != send.value:
            verdict.misplaced.append(
                f"{send.value!r} acked at {send.partition}/{send.offset}, which holds {found!r}"
            )
    for partition, records in sorted(final.items()):
        offsets = [o for o, _ in records]
        if offsets != list(range(len(offsets))):  # no retention here: every log starts at 0
            bad = next(i for i, o in enumerate(offsets) if o != i)
            verdict.offsets.append(f"partition {partition}: offset {offsets[bad]} at index {bad}")
    for consumer, reads in sorted(history.reads.items()):
        seen: dict[int, dict[int, bytes]] = {}
        for read in reads:
            previous = seen.setdefault(read.partition, {}).setdefault(read.offset, read.value)
            if previous != read.value:
                verdict.consumers.append(
                    f"consumer {consumer} read {read.partition}/{read.offset} as "
                    f"{previous!r} and later as {read.value!r}"
                )
        for partition, view in sorted(seen.items()):
            log = at.get(partition, {})
            differing = [o for o, v in view.items() if log.get(o) != v]
            if differing:
                o = differing[0]
                verdict.consumers.append(
                    f"consumer {consumer}, partition {partition}: {len(differing)} offsets differ "
                    f"from the final log, first {o}: read {view[o]!r}, log {log.get(o)!r}"
                )
            if sorted(view) != list(range(len(view))):
                verdict.consumers.append(
                    f"consumer {consumer}, partition {partition}: read offsets with gaps "
                    f"({len(view)} offsets up to {max(view)})"
                )
    verdict.replicas = compare_replicas(replicas, {p: len(r) for p, r in final.items()})
    return verdict


def out_of_order(final: dict[int, list[tuple[int, bytes]]]) -> list[str]:
    """Places where a producer's values (``p<producer>-<seq>``) in one partition do not follow
    the order it sent them in."""
    problems = []
    for partition, records in sorted(final.items()):
        last: dict[bytes, tuple[int, int]] = {}
        for offset, value in records:
            producer, _, seq = value.rpartition(b"-")
            number = int(seq)
            before = last.get(producer)
            if before is not None and number <= before[0]:
                problems.append(
                    f"partition {partition}: {value!r} at {offset} after "
                    f"{producer.decode()}-{before[0]} at {before[1]}"
                )
            last[producer] = (number, offset)
    return problems


def compare_replicas(
    replicas: dict[int, dict[int, list[Batch]]], high_watermarks: dict[int, int]
) -> list[str]:
    """Differences between replicas of each partition, up to its high watermark."""
    problems = []
    for partition, hw in sorted(high_watermarks.items()):
        committed = {
            node: [b for b in batches.get(partition, []) if b[0] < hw]
            for node, batches in sorted(replicas.items())
        }
        reference_node, reference = next(iter(committed.items()))
        count = sum(last - base + 1 for base, last, _, _ in reference)
        if count < hw:
            problems.append(
                f"partition {partition}: node {reference_node} has {count} records below the "
                f"high watermark {hw}"
            )
        for node, batches in committed.items():
            if batches != reference:
                first = next(
                    (i for i, (a, b) in enumerate(zip(batches, reference, strict=False)) if a != b),
                    min(len(batches), len(reference)),
                )
                problems.append(
                    f"partition {partition}: node {node} differs from node {reference_node} at "
                    f"batch {first}: {batches[first : first + 1]} vs {reference[first : first + 1]}"
                )
    return problems


def longest_unavailability(history: History) -> float:
    """The longest gap between consecutive acknowledgements (of any producer) that overlaps a
    fault window: how long the cluster accepted no acks=-1 write around a fault."""
    acks = sorted(s.acked_at for s in history.sends if s.acked_at is not None)
    longest = 0.0
    for before, after in itertools.pairwise(acks):
        if any(before <= healed and after >= start for start, healed in history.faults):
            longest = max(longest, after - before)
    return longest


def stalls_per_fault(history: History) -> list[float]:
    """For each fault window, the longest gap between consecutive acknowledgements (of any
    producer) that overlaps it: how long acks=-1 writes stalled because of that fault. A
    window with no acknowledgement on either side counts the time from its start to the first
    acknowledgement after it (or to its healing, if none came)."""
    acks = sorted(s.acked_at for s in history.sends if s.acked_at is not None)
    return [_longest_gap(acks, start, healed) for start, healed in history.faults]


def role_stalls_per_fault(history: History) -> list[dict[str, float]]:
    """For each fault window, per role of the faulted node (``History.fault_roles``: partition
    -> role, e.g. ``leader`` for the partitions it led), the longest stall among the partitions
    in that role: the longest gap between consecutive acknowledgements *in that partition*
    that overlaps the window (as :func:`stalls_per_fault`, one partition at a time).

    Per partition, because a node fault is a leader fault for the partitions it leads and a
    follower fault for those it follows, and writes to the others go on meanwhile: the gap
    between any two acknowledgements would hide the longer stall."""
    acks: dict[int, list[float]] = {}
    for send in history.sends:
        if send.acked_at is not None:
            acks.setdefault(send.partition, []).append(send.acked_at)
    for times in acks.values():
        times.sort()
    out = []
    for index, (start, healed) in enumerate(history.faults):
        roles = history.fault_roles[index] if index < len(history.fault_roles) else {}
        stalls: dict[str, float] = {}
        for partition, role in roles.items():
            stall = _longest_gap(acks.get(partition, []), start, healed)
            stalls[role] = max(stalls.get(role, 0.0), stall)
        out.append(stalls)
    return out


def client_leader_stalls(history: History) -> list[dict[str, float]]:
    """For each fault window, per client (``History.producer_kinds``), the longest stall of
    that client's acknowledgements in a partition the faulted node led (a role starting with
    ``leader``): as :func:`role_stalls_per_fault`, one client's sends at a time. For a leader
    killed, the time from the kill to the client's first acknowledgement by the new leader
    (or the longest wait between two, if longer). Faults that touched no leader are left out
    of a client's figures (an empty dict)."""
    acks: dict[tuple[str, int], list[float]] = {}
    for send in history.sends:
        if send.acked_at is not None:
            kind = history.producer_kinds.get(send.producer, "sdk")
            acks.setdefault((kind, send.partition), []).append(send.acked_at)
    for times in acks.values():
        times.sort()
    kinds = sorted(set(history.producer_kinds.values()))
    out = []
    for index, (start, healed) in enumerate(history.faults):
        roles = history.fault_roles[index] if index < len(history.fault_roles) else {}
        led = [p for p, role in roles.items() if role.startswith("leader")]
        stalls: dict[str, float] = {}
        for kind in kinds if led else []:
            stalls[kind] = max(_longest_gap(acks.get((kind, p), []), start, healed) for p in led)
        out.append(stalls)
    return out


def distribution(values: Sequence[float]) -> dict[str, float]:
    """``n``, ``p50``, ``p99`` and ``max`` of ``values`` (nearest rank); zeros when empty."""
    ordered = sorted(values)
    if not ordered:
        return {"n": 0, "p50": 0.0, "p99": 0.0, "max": 0.0}

    def rank(p: float) -> float:
        return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]

    return {"n": len(ordered), "p50": rank(50), "p99": rank(99), "max": ordered[-1]}


def _longest_gap(acks: list[float], start: float, healed: float) -> float:
    """The longest gap between consecutive ``acks`` (sorted) that overlaps [start, healed]; with
    no acknowledgement before the window, from its start to the first one after it (or to its
    healing, if none came)."""
    longest = 0.0
    for before, after in itertools.pairwise(acks):
        if before <= healed and after >= start:
            longest = max(longest, after - before)
    if not acks or acks[0] > healed:
        first_after = next((a for a in acks if a >= start), healed)
        longest = max(longest, first_after - start)
    return longest


def replica_batches(data_dir: Path, topic: str, partition: int) -> list[Batch]:
    """A stopped node's replica of ``topic``-``partition``, read from its files (a replica
    that does not exist is empty)."""
    directory = data_dir / f"{topic}-{partition}"
    if not directory.exists():
        return []
    log = Log.open(directory, LogConfig(), ManualClock(), had_clean_shutdown=False)
    try:
        out: list[Batch] = []
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            batches = list(read_batches(log.read(offset, 1 << 20).records))
            if not batches:
                break
            for batch in batches:
                batch.validate()
                out.append(
                    (batch.base_offset, batch.last_offset, batch.partition_leader_epoch, batch.crc)
                )
                offset = batch.last_offset + 1
        return out
    finally:
        log.close()
