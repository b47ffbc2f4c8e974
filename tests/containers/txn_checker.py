"""Judges a transactional read-process-write history (``txn_workload.py``) against the logs.

Inputs: the ``TxnHistory``; the final input log; the final output log read both
``read_committed`` and ``read_uncommitted`` (partition -> [(offset, value)]); the group's
committed offsets; the transactions the cluster still lists as open, and each output
partition's last stable offset and high watermark, all taken after the faults healed and the
processors stopped.

What must hold (each a list of violations in the ``TxnVerdict``; the scenario asserts it empty):

* inputs: every input the feeder's producer acknowledged is in the input log;
* lost: an input with no committed output;
* duplicated: an input with more than one committed output (processed twice, both kept);
* foreign: a committed output made from no input, or in another partition than its input;
* aborted: a record of an aborted transaction returned to a read_committed reader (the final
  one or the live one), or a record of a committed transaction missing from the committed
  output;
* reader: the live read_committed reader was given something other than the final committed
  log holds at that offset, or skipped an offset it holds;
* offsets: the group's committed offset of an input partition is not the number of inputs whose
  outputs are committed (every input is consumed at the end, so: its end);
* open: a transaction still listed Ongoing, PrepareCommit or PrepareAbort, or an output
  partition whose last stable offset is behind its high watermark.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

from tests.containers.txn_workload import TxnHistory, input_of

Log = dict[int, list[tuple[int, bytes]]]


@dataclass
class TxnVerdict:
    """The checker's findings about one transactional scenario."""

    scenario: str
    inputs: int
    committed: int
    aborted: int
    unknown: int
    outputs: int
    aborted_records: int
    """Records in the output that a read_committed reader must not see (aborted attempts)."""
    reads: int
    stalls_s: list[tuple[str, float]] = field(default_factory=list)
    """Per fault, the longest time no transaction committed around it."""
    inputs_lost: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    aborted_seen: list[str] = field(default_factory=list)
    reader: list[str] = field(default_factory=list)
    offsets: list[str] = field(default_factory=list)
    open: list[str] = field(default_factory=list)

    @property
    def violations(self) -> dict[str, list[str]]:
        found = {
            "inputs": self.inputs_lost,
            "lost": self.lost,
            "duplicated": self.duplicated,
            "foreign": self.foreign,
            "aborted": self.aborted_seen,
            "reader": self.reader,
            "offsets": self.offsets,
            "open": self.open,
        }
        return {name: items[:20] for name, items in found.items() if items}

    def row(self) -> tuple[str, ...]:
        """A row of the suite's table (checker.TABLE_HEADER): the inputs as operations, the
        committed outputs as acknowledged, the transactions beside the name, and per fault the
        longest time without a commit."""
        return (
            f"{self.scenario} ({self.committed} transactions committed, {self.aborted} aborted, "
            f"{self.unknown} unknown)",
            str(self.inputs),
            f"{self.outputs} outputs",
            str(len(self.lost)),
            str(len(self.duplicated)),
            f"{max((s for _, s in self.stalls_s), default=0.0):.1f} s",
            "; ".join(f"{what} {stall:.1f} s" for what, stall in self.stalls_s) or "-",
        )


def check_txn(
    scenario: str,
    history: TxnHistory,
    inputs: Log,
    committed_output: Log,
    uncommitted_output: Log,
    group_offsets: dict[int, int],
    open_transactions: list[str],
    stable: dict[int, tuple[int, int]],
) -> TxnVerdict:
    """``stable``: output partition -> (last stable offset, high watermark). Never raises on
    a violation."""
    txns = history.txns
    outcome = {v: t.outcome for t in txns for v in t.values}
    verdict = TxnVerdict(
        scenario=scenario,
        inputs=sum(len(r) for r in inputs.values()),
        committed=sum(1 for t in txns if t.outcome == "committed"),
        aborted=sum(1 for t in txns if t.outcome == "aborted"),
        unknown=sum(1 for t in txns if t.outcome == "unknown"),
        outputs=sum(len(r) for r in committed_output.values()),
        aborted_records=sum(len(r) for r in uncommitted_output.values())
        - sum(len(r) for r in committed_output.values()),
        reads=len(history.reads),
        stalls_s=commit_stalls(history),
    )
    input_partition = {v: p for p, records in inputs.items() for _, v in records}
    logged = set(input_partition)
    verdict.inputs_lost = [
        f"{v!r} acknowledged, not in the input log" for v in history.inputs if v not in logged
    ]

    made = Counter(input_of(v) for records in committed_output.values() for _, v in records)
    for value, partition in input_partition.items():
        if made[value] == 0:
            verdict.lost.append(f"{value!r} (input partition {partition}) has no committed output")
        elif made[value] > 1:
            verdict.duplicated.append(f"{value!r} has {made[value]} committed outputs")
    committed_values = set()
    for partition, records in sorted(committed_output.items()):
        for offset, value in records:
            committed_values.add(value)
            source = input_partition.get(input_of(value))
            if source is None:
                verdict.foreign.append(f"{value!r} at {partition}/{offset} made from no input")
            elif source != partition:
                verdict.foreign.append(
                    f"{value!r} at {partition}/{offset}, its input in partition {source}"
                )
            if outcome.get(value) == "aborted":
                verdict.aborted_seen.append(
                    f"{value!r} of an aborted transaction read committed at {partition}/{offset}"
                )
    for txn in txns:
        if txn.outcome == "committed":
            missing = [v for v in txn.values if v not in committed_values]
            if missing:
                verdict.aborted_seen.append(
                    f"processor {txn.processor}'s committed transaction {txn.number}: "
                    f"{len(missing)} of its {len(txn.values)} records not committed, first "
                    f"{missing[0]!r}"
                )

    at = {p: dict(records) for p, records in committed_output.items()}
    reached: dict[int, int] = {}
    for partition, offset, value in history.reads:
        if outcome.get(value) == "aborted":
            verdict.aborted_seen.append(
                f"the live reader was given {value!r} of an aborted transaction at "
                f"{partition}/{offset}"
            )
        final = at.get(partition, {}).get(offset)
        if final != value:
            verdict.reader.append(
                f"the live reader read {partition}/{offset} as {value!r}, the log holds {final!r}"
            )
        reached[partition] = max(reached.get(partition, -1), offset)
    for partition, last in sorted(reached.items()):
        expected = [o for o, _ in committed_output.get(partition, []) if o <= last]
        seen = sorted({o for p, o, _ in history.reads if p == partition})
        if seen != expected:
            verdict.reader.append(
                f"partition {partition}: the live reader read {len(seen)} records up to offset "
                f"{last}, the committed log has {len(expected)} there"
            )

    per_partition = Counter(
        input_partition[input_of(v)]
        for records in committed_output.values()
        for _, v in records
        if input_of(v) in input_partition
    )
    for partition, records in sorted(inputs.items()):
        offset = group_offsets.get(partition, -1)
        if offset != len(records) or per_partition[partition] != len(records):
            verdict.offsets.append(
                f"input partition {partition}: {len(records)} inputs, the group's committed "
                f"offset {offset}, {per_partition[partition]} of its inputs with a committed output"
            )

    verdict.open = [f"transaction {t} still open" for t in open_transactions]
    for partition, (lso, hw) in sorted(stable.items()):
        if lso != hw:
            verdict.open.append(
                f"output partition {partition}: last stable offset {lso}, high watermark {hw}"
            )
    return verdict


def commit_stalls(history: TxnHistory) -> list[tuple[str, float]]:
    """Per fault window, the longest gap between consecutive commits (of any processor) that
    overlaps it; from its start to the first commit after it if none came before."""
    ends = sorted(t.ended_at for t in history.txns if t.outcome == "committed" and t.ended_at)
    out = []
    for what, start, healed in history.faults:
        longest = 0.0
        for before, after in itertools.pairwise(ends):
            if before <= healed and after >= start:
                longest = max(longest, after - before)
        if not ends or ends[0] > healed:
            longest = max(longest, next((e for e in ends if e >= start), healed) - start)
        out.append((what, longest))
    return out
