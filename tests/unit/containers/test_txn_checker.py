"""The transactional fault scenario's judgement (tests/containers/txn_checker.py): a clean
history passes; an input processed twice, one never processed, an aborted attempt read
committed, offsets that do not match the outputs and a transaction left open are each caught."""

from __future__ import annotations

from tests.containers.txn_checker import check_txn
from tests.containers.txn_workload import Txn, TxnHistory

INPUTS = {0: [(0, b"in-0"), (1, b"in-3")], 1: [(0, b"in-1")]}


def _history() -> TxnHistory:
    return TxnHistory(
        inputs=[b"in-0", b"in-1", b"in-3"],
        txns=[
            Txn(0, 1, [b"in-0|0.1", b"in-1|0.1"], {0: 1, 1: 1}, "aborted", 1.0),
            Txn(0, 2, [b"in-0|0.2", b"in-1|0.2"], {0: 1, 1: 1}, "committed", 2.0),
            Txn(1, 1, [b"in-3|1.1"], {0: 2}, "committed", 3.0),
        ],
        reads=[(0, 2, b"in-0|0.2")],
    )


# the aborted attempt is at offsets 0-1 and its marker at 2 of partition 0 (read uncommitted)
COMMITTED = {0: [(2, b"in-0|0.2"), (4, b"in-3|1.1")], 1: [(1, b"in-1|0.2")]}
UNCOMMITTED = {
    0: [(0, b"in-0|0.1"), (2, b"in-0|0.2"), (4, b"in-3|1.1")],
    1: [(0, b"in-1|0.1"), (1, b"in-1|0.2")],
}


def _check(
    history: TxnHistory | None = None,
    committed: dict[int, list[tuple[int, bytes]]] | None = None,
    offsets: dict[int, int] | None = None,
    open_transactions: list[str] | None = None,
    stable: dict[int, tuple[int, int]] | None = None,
) -> dict[str, list[str]]:
    verdict = check_txn(
        "t",
        history or _history(),
        INPUTS,
        COMMITTED if committed is None else committed,
        UNCOMMITTED,
        {0: 2, 1: 1} if offsets is None else offsets,
        open_transactions or [],
        stable or {0: (5, 5), 1: (2, 2)},
    )
    return verdict.violations


def test_a_clean_history_passes() -> None:
    assert _check() == {}


def test_an_input_committed_twice_is_duplicated() -> None:
    twice = {**COMMITTED, 1: [(1, b"in-1|0.2"), (3, b"in-1|1.2")]}
    assert set(_check(committed=twice)) == {"duplicated", "offsets"}  # 2 outputs of 1 input


def test_an_input_without_output_is_lost() -> None:
    violations = _check(committed={**COMMITTED, 1: []}, offsets={0: 2, 1: 0})
    assert set(violations) == {"lost", "aborted", "offsets"}  # txn 0.2 committed, in-1 missing


def test_an_aborted_attempt_read_committed_is_caught() -> None:
    committed = {**COMMITTED, 0: [(0, b"in-0|0.1"), *COMMITTED[0]]}
    violations = _check(committed=committed)
    assert "aborted" in violations and "duplicated" in violations


def test_the_live_reader_given_an_aborted_record_is_caught() -> None:
    history = _history()
    history.reads = [(0, 0, b"in-0|0.1")]
    assert set(_check(history=history)) == {"aborted", "reader"}


def test_offsets_behind_the_outputs_are_caught() -> None:
    assert set(_check(offsets={0: 1, 1: 1})) == {"offsets"}


def test_an_open_transaction_or_lso_behind_is_caught() -> None:
    assert set(_check(open_transactions=["txn-etl-0 (Ongoing at node 1)"])) == {"open"}
    assert set(_check(stable={0: (2, 5), 1: (2, 2)})) == {"open"}
