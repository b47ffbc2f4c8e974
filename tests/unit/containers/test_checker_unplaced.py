"""The fault suite's judgement of acknowledgements that came without an offset (librdkafka's
implicit acks, ``Send.offset_reported``): still acknowledged, so a value missing from the log is
lost and one in another partition is misplaced; only their offset goes unjudged."""

from __future__ import annotations

from tests.containers.checker import check
from tests.containers.workload import History, Send


def _history(partition: int, offset_reported: bool) -> History:
    sends = [
        Send(producer=0, value=b"p0-0", sent_at=0.0, acked_at=0.1, partition=0, offset=0),
        Send(
            producer=0,
            value=b"p0-1",
            sent_at=0.0,
            acked_at=0.2,
            partition=partition,
            offset=-1 if not offset_reported else 5,
            offset_reported=offset_reported,
        ),
    ]
    return History(sends=sends)


FINAL = {0: [(0, b"p0-0"), (1, b"p0-1")], 1: []}
REPLICAS = {1: {0: [(0, 1, 0, 0)], 1: []}}


def test_an_acknowledgement_without_an_offset_passes_when_its_value_is_in_its_partition():
    verdict = check("s", _history(0, offset_reported=False), FINAL, REPLICAS)
    assert verdict.violations == {}
    assert (verdict.acknowledged, verdict.unplaced) == (2, 1)


def test_an_offset_that_was_reported_is_still_judged():
    verdict = check("s", _history(0, offset_reported=True), FINAL, REPLICAS)
    assert verdict.violations["misplaced"] == ["b'p0-1' acked at 0/5, which holds None"]


def test_an_acknowledgement_without_an_offset_is_misplaced_in_another_partition():
    verdict = check("s", _history(1, offset_reported=False), FINAL, REPLICAS)
    assert verdict.violations == {"misplaced": ["b'p0-1' acked in partition 1, which lacks it"]}


def test_an_acknowledgement_without_an_offset_is_lost_when_its_value_is_nowhere():
    final = {0: [(0, b"p0-0")], 1: []}
    verdict = check("s", _history(0, offset_reported=False), final, {1: {0: [(0, 0, 0, 0)]}})
    assert verdict.violations == {"lost": ["b'p0-1' acked in partition 0"]}
