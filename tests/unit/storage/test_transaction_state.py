"""TransactionState: the first unstable offset over open and unreplicated transactions."""

from storage.transaction_index import AbortedTxn
from storage.transaction_state import CompletedTxn, StartedTxn, TransactionState


def test_first_unstable_offset_waits_for_the_high_watermark_to_pass_the_marker() -> None:
    state = TransactionState()
    assert state.first_unstable_offset() is None
    state.apply([StartedTxn(1, 10), StartedTxn(2, 12)])
    assert state.first_unstable_offset() == 10
    assert state.apply([CompletedTxn(1, 10, 15, False)]) == []
    # committed at 15 but the HW has not passed it: still unstable from 10
    assert state.first_unstable_offset() == 10
    state.on_high_watermark_updated(15)
    assert state.first_unstable_offset() == 10
    state.on_high_watermark_updated(16)
    assert state.first_unstable_offset() == 12


def test_last_stable_offset_of_an_abort_skips_its_own_producer() -> None:
    state = TransactionState()
    state.apply([StartedTxn(1, 0), StartedTxn(2, 5)])
    assert state.apply([CompletedTxn(2, 5, 6, True)]) == [AbortedTxn(2, 5, 6, 0)]
    assert state.apply([CompletedTxn(1, 0, 7, True)]) == [AbortedTxn(1, 0, 7, 8)]


def test_load_sorts_and_remove_producers_forgets() -> None:
    state = TransactionState()
    state.load([(2, 9), (1, 3)])
    assert list(state.ongoing) == [3, 9]
    state.remove_producers([1])
    assert state.ongoing == {9: 2}
