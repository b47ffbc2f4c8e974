"""PendingFetch: when a waiting consumer fetch is complete (Kafka's DelayedFetch.tryComplete),
what it answers, and which reads it makes, with reads and a clock of the test's own."""

from __future__ import annotations

import pytest

from node.core.pending_fetch import PendingFetch
from node.core.requests import FetchResult


def result(records: bytes) -> FetchResult:
    return FetchResult(
        topic="t",
        partition=0,
        high_watermark=len(records),
        last_stable_offset=len(records),
        log_start_offset=0,
        log_end_offset=len(records),
        records=records,
    )


class Reads:
    """What the log holds now, and every read asked of it (True: as slices)."""

    def __init__(self) -> None:
        self.available = b""
        self.stop = False
        self.asked: list[bool] = []

    def __call__(self, slices: bool) -> tuple[list[FetchResult], int, bool]:
        self.asked.append(slices)
        return [result(self.available)], len(self.available), self.stop


def pending(reads: Reads, *, as_slices: bool, min_bytes: int = 10, now: list[int] | None = None):
    clock = now if now is not None else [0]
    down = [False]
    fetch = PendingFetch(
        reads,
        lambda wake: lambda: None,
        as_slices=as_slices,
        min_bytes=min_bytes,
        deadline_ms=500,
        now_ms=lambda: clock[0],
        shutting_down=lambda: down[0],
    )
    return fetch, clock, down


def test_ready_once_min_bytes_are_available_and_answers_the_measured_slices():
    reads = Reads()
    fetch, _, _ = pending(reads, as_slices=True)
    reads.available = b"123456789"
    assert not fetch.ready()
    reads.available = b"1234567890"
    assert fetch.ready()
    assert fetch.ready()  # stays ready without reading again
    assert reads.asked == [True, True]
    assert fetch.results()[0].records == b"1234567890"
    assert reads.asked == [True, True]  # the slices measured are the answer


def test_without_slices_it_measures_with_slices_and_reads_the_bytes_for_the_answer():
    reads = Reads()
    fetch, _, _ = pending(reads, as_slices=False)
    assert fetch.reads_bytes
    reads.available = b"x" * 12
    assert fetch.ready()
    reads.available = b"x" * 20  # more came meanwhile: the answer holds it
    assert fetch.results()[0].records == b"x" * 20
    assert reads.asked == [True, False]


def test_the_deadline_an_error_or_a_shutdown_completes_it_short_of_min_bytes():
    reads = Reads()
    fetch, clock, _ = pending(reads, as_slices=True)
    assert not fetch.ready() and fetch.remaining_ms() == 500
    clock[0] = 500
    assert fetch.remaining_ms() == 0 and fetch.ready()
    assert fetch.results()[0].records == b""

    reads = Reads()
    fetch, _, _ = pending(reads, as_slices=True)
    reads.stop = True  # an error or a diverging epoch in one of the partitions
    assert fetch.ready()

    reads = Reads()
    fetch, _, down = pending(reads, as_slices=True)
    assert not fetch.ready()
    down[0] = True
    assert fetch.ready()


def test_results_before_ready_is_an_error():
    reads = Reads()
    fetch, _, _ = pending(reads, as_slices=True)
    with pytest.raises(RuntimeError):
        fetch.results()
