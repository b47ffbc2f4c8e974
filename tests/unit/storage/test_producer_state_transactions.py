"""Producer state and transactions (Kafka's ProducerAppendInfo / ProducerStateManager): an open
transaction per producer, markers ending it, INVALID_TXN_STATE, TRANSACTION_COORDINATOR_FENCED,
the open transactions in snapshots, and the events behind the last stable offset."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
)
from odradek.records import ControlRecordType, EndTransactionMarker
from storage.producer_state import (
    AppendOrigin,
    ProducerBatch,
    ProducerStateManager,
    decode_snapshot,
    encode_snapshot,
)
from storage.transaction_index import AbortedTxn
from storage.transaction_state import CompletedTxn, StartedTxn

CLIENT, COORDINATOR, REPLICATION = (
    AppendOrigin.CLIENT,
    AppendOrigin.COORDINATOR,
    AppendOrigin.REPLICATION,
)
DAY = 86_400_000
COMMIT, ABORT = ControlRecordType.COMMIT, ControlRecordType.ABORT


class Partition:
    """Appends to a manager as a log would: offsets follow each other, one batch an append."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(exist_ok=True)
        self.psm = ProducerStateManager(directory, DAY)
        self.next_offset = 0
        self.sequences: dict[int, int] = {}

    def data(
        self,
        pid: int,
        *,
        txn: bool = True,
        epoch: int = 0,
        count: int = 1,
        origin: AppendOrigin = CLIENT,
    ) -> list[AbortedTxn]:
        seq = self.sequences.get(pid, 0)
        batch = ProducerBatch(
            pid, epoch, seq, self.next_offset, self.next_offset + count - 1, 1000, txn
        )
        aborted = self._append(batch, origin)
        self.sequences[pid] = seq + count
        return aborted

    def marker(
        self,
        pid: int,
        control: ControlRecordType,
        *,
        epoch: int = 0,
        coordinator_epoch: int = 0,
        origin: AppendOrigin = COORDINATOR,
    ) -> list[AbortedTxn]:
        batch = ProducerBatch(
            pid,
            epoch,
            -1,
            self.next_offset,
            self.next_offset,
            2000,
            True,
            True,
            EndTransactionMarker(control, coordinator_epoch),
        )
        return self._append(batch, origin)

    def _append(self, batch: ProducerBatch, origin: AppendOrigin) -> list[AbortedTxn]:
        analysis = self.psm.analyze([batch], origin)
        self.next_offset = batch.last_offset + 1
        return self.psm.apply(analysis, self.next_offset)

    def ongoing(self) -> dict[int, int]:
        return self.psm.transactions.ongoing


@pytest.fixture
def part(tmp_path: Path) -> Partition:
    return Partition(tmp_path / "t-0")


def test_first_transactional_batch_opens_the_transaction(part: Partition) -> None:
    part.data(1, count=3)  # 0..2
    part.data(1)  # 3: the same transaction
    assert part.psm.last_entry(1).current_txn_first_offset == 0  # type: ignore[union-attr]
    assert part.ongoing() == {0: 1}
    assert part.marker(1, COMMIT) == []  # 4: a commit indexes nothing
    entry = part.psm.last_entry(1)
    assert entry is not None and entry.current_txn_first_offset == -1
    assert part.ongoing() == {}
    assert [t.last_offset for t in part.psm.transactions.unreplicated] == [4]


def test_abort_yields_the_index_entry_with_the_last_stable_offset(part: Partition) -> None:
    part.data(1)  # 0: producer 1 opens
    part.data(2)  # 1: producer 2 opens
    part.data(1)  # 2
    # 3: producer 1 aborts; producer 2's transaction (first offset 1) is still open
    assert part.marker(1, ABORT) == [AbortedTxn(1, 0, 3, 1)]
    # 4: producer 2 aborts with nothing else open: its LSO is past its marker
    assert part.marker(2, ABORT) == [AbortedTxn(2, 1, 4, 5)]


def test_marker_without_an_open_transaction_completes_nothing(part: Partition) -> None:
    assert part.marker(1, ABORT, coordinator_epoch=3) == []
    entry = part.psm.last_entry(1)
    assert entry is not None and entry.coordinator_epoch == 3
    assert part.psm.transactions.unreplicated == []


def test_non_transactional_batch_in_an_open_transaction_is_invalid_txn_state(
    part: Partition,
) -> None:
    part.data(1)
    with pytest.raises(InvalidTxnStateError) as raised:
        part.psm.analyze([ProducerBatch(1, 0, 1, 1, 1, 1000, False)], CLIENT)
    assert raised.value.code == 48
    with pytest.raises(InvalidTxnStateError):
        part.psm.analyze([ProducerBatch(1, 0, 1, 1, 1, 1000, False)], COORDINATOR)
    # after the marker the producer may write non-transactionally again
    part.marker(1, COMMIT)
    part.data(1, txn=False)
    assert part.ongoing() == {}


def test_follower_logs_a_mix_and_keeps_the_transaction_open(part: Partition) -> None:
    part.data(1, origin=REPLICATION)
    part.data(1, txn=False, origin=REPLICATION)
    assert part.ongoing() == {0: 1}


def test_marker_from_an_older_coordinator_epoch_is_fenced(part: Partition) -> None:
    part.data(1)
    part.marker(1, COMMIT, coordinator_epoch=5)
    part.data(1)
    with pytest.raises(TransactionCoordinatorFencedError) as raised:
        part.marker(1, ABORT, coordinator_epoch=4)
    assert raised.value.code == 52
    assert part.ongoing() == {2: 1}  # nothing changed
    # the same epoch, or a newer one, is accepted
    assert part.marker(1, ABORT, coordinator_epoch=5) == [AbortedTxn(1, 2, 3, 4)]


def test_follower_applies_a_marker_from_an_older_coordinator_epoch(part: Partition) -> None:
    part.data(1, origin=REPLICATION)
    part.marker(1, COMMIT, coordinator_epoch=5, origin=REPLICATION)
    part.data(1, origin=REPLICATION)
    part.marker(1, ABORT, coordinator_epoch=4, origin=REPLICATION)
    entry = part.psm.last_entry(1)
    assert entry is not None and entry.coordinator_epoch == 4
    assert part.ongoing() == {}


def test_marker_of_an_older_producer_epoch_is_refused(part: Partition) -> None:
    part.data(1, epoch=2)
    with pytest.raises(InvalidProducerEpochError):
        part.marker(1, ABORT, epoch=1)


def test_marker_of_a_new_epoch_ends_the_transaction_and_forgets_the_batches(
    part: Partition,
) -> None:
    part.data(1, epoch=0, count=2)
    part.marker(1, ABORT, epoch=1)  # the coordinator bumped the epoch (a timeout)
    entry = part.psm.last_entry(1)
    assert entry is not None
    assert (entry.producer_epoch, entry.batches, entry.current_txn_first_offset) == (1, (), -1)


def test_unknown_or_empty_control_batch_is_skipped(part: Partition) -> None:
    part.data(1)
    skipped = ProducerBatch(1, 0, -1, 1, 1, 2000, True, True, None)
    analysis = part.psm.analyze([skipped], CLIENT)
    assert analysis.events == ()
    part.psm.apply(analysis, 2)
    assert part.ongoing() == {0: 1}


def test_events_follow_log_order_within_one_append(part: Partition) -> None:
    # a follower's append of several batches: started and completed in log order, so the LSO
    # of producer 1's abort does not see producer 2's later transaction
    marker = EndTransactionMarker(ABORT, 0)
    batches = [
        ProducerBatch(1, 0, 0, 0, 0, 1000, True),
        ProducerBatch(1, 0, -1, 1, 1, 1000, True, True, marker),
        ProducerBatch(2, 0, 0, 2, 2, 1000, True),
    ]
    analysis = part.psm.analyze(batches, REPLICATION)
    assert analysis.events == (
        StartedTxn(1, 0),
        CompletedTxn(1, 0, 1, True),
        StartedTxn(2, 2),
    )
    assert part.psm.apply(analysis, 3) == [AbortedTxn(1, 0, 1, 2)]
    assert part.ongoing() == {2: 2}


def test_duplicate_detection_ignores_markers(part: Partition) -> None:
    part.data(1, count=2)
    # a marker has no sequence: it is never taken for a retry of the data batch
    assert part.marker(1, ABORT) == [AbortedTxn(1, 0, 2, 3)]


def test_open_transactions_survive_a_snapshot(part: Partition, tmp_path: Path) -> None:
    part.data(1)  # 0
    part.data(2)  # 1
    part.marker(2, COMMIT, coordinator_epoch=7)  # 2
    part.data(3, txn=False)  # 3
    part.psm.take_snapshot()
    decoded = {e.producer_id: e for e in decode_snapshot(encode_snapshot(part.psm))}
    assert decoded[1].current_txn_first_offset == 0
    assert decoded[2].coordinator_epoch == 7 and decoded[2].current_txn_first_offset == -1
    reloaded = ProducerStateManager(tmp_path / "t-0", DAY)
    reloaded.truncate_and_reload(0, 4, 0)
    assert reloaded.transactions.ongoing == {0: 1}
    assert reloaded.transactions.first_unstable_offset() == 0


def test_producer_with_an_open_transaction_never_expires(part: Partition) -> None:
    part.data(1)
    part.data(2, txn=False)
    assert part.psm.remove_expired_producers(10 * DAY) == [2]
    assert part.ongoing() == {0: 1}


def test_producers_gone_below_the_log_start_take_their_transaction(part: Partition) -> None:
    part.data(1)  # 0
    part.data(2)  # 1
    part.data(2)  # 2
    assert part.psm.remove_producers_below(1) == [1]
    assert part.ongoing() == {1: 2}
