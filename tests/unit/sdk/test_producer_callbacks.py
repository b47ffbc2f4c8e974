"""Per-record delivery callbacks (issue 27's callback path): ``send(..., callback=cb)`` and
``send(...).add_done_callback(cb)`` call ``cb`` once per record with its own future, on
delivery and on failure; a callback added after delivery runs at once; one that raises does
not stop the others."""

from __future__ import annotations

from odradek.client.futures import FutureRecordMetadata, ProduceRequestResult
from odradek.client.types import TopicPartition
from tests.unit.sdk.test_producer import make_producer


def test_each_record_s_callback_runs_once_with_its_own_future(cluster) -> None:
    cluster.create_topic("t", 2, leaders=[1, 2])
    seen: list[tuple[str, FutureRecordMetadata]] = []
    with make_producer(cluster, batch_size=300) as producer:  # several batches
        futures = []
        for i in range(40):
            if i % 2:
                f = producer.send("t", b"v%d" % i, callback=lambda f: seen.append(("param", f)))
            else:
                f = producer.send("t", b"v%d" % i)
                f.add_done_callback(lambda f: seen.append(("added", f)))
            futures.append(f)
        producer.flush(timeout=10)
        late: list[FutureRecordMetadata] = []
        futures[0].add_done_callback(late.append)  # already delivered: at once
    assert late == [futures[0]]
    assert len(seen) == 40
    assert {id(f) for _, f in seen} == {id(f) for f in futures}  # each its own future, once
    assert [kind for kind, f in sorted(seen, key=lambda s: futures.index(s[1]))] == [
        "param" if i % 2 else "added" for i in range(40)
    ]
    assert all(f.exception() is None and f.result().offset >= 0 for f in futures)


def test_a_failed_record_s_callback_sees_the_error_and_a_raising_one_stops_nothing(
    cluster,
) -> None:
    cluster.create_topic("t", 1, leaders=[1])
    outcomes: dict[str, BaseException | None] = {}

    def boom(_: object) -> None:
        raise RuntimeError("the application's bug")

    with make_producer(cluster, max_request_size=2000) as producer:
        producer.send("t", b"x", callback=boom)
        producer.send("t", b"x", callback=lambda f: outcomes.update(small=f.exception()))
        producer.send("t", b"x" * 5000, callback=lambda f: outcomes.update(big=f.exception()))
        producer.flush(timeout=10)
    assert outcomes["small"] is None
    assert type(outcomes["big"]).__name__ == "MessageTooLargeError"


class _CompletingList(list[object]):
    """A batch's callback list whose ``+=`` lets the batch complete right before or right
    after the pair lands: the two orders a lock-free add_done_callback can race a completion
    in, made deterministic."""

    def __init__(self, result: ProduceRequestResult, *, before: bool) -> None:
        super().__init__()
        self.result, self.before, self.armed = result, before, False

    def __iadd__(self, pair: object) -> _CompletingList:  # type: ignore[misc]
        if self.armed and self.before:
            self.armed = False
            self.result.complete(7, -1, None)
        super().__iadd__(pair)  # type: ignore[arg-type]
        if self.armed:
            self.armed = False
            self.result.complete(7, -1, None)
        return self


def _race(*, before: bool) -> list[int]:
    result = ProduceRequestResult(TopicPartition("t", 0))
    racing = _CompletingList(result, before=before)
    result._callbacks = racing
    first, second = FutureRecordMetadata(result, 0, 0), FutureRecordMetadata(result, 1, 0)
    runs: list[int] = []
    first.add_done_callback(lambda f: runs.append(0))  # an ordinary one, before
    racing.armed = True
    second.add_done_callback(lambda f: runs.append(1))  # the batch completes meanwhile
    assert second.result().offset == 8
    second.add_done_callback(lambda f: runs.append(2))  # after completion: at once
    return runs


def test_a_callback_added_as_its_batch_completes_runs_exactly_once() -> None:
    # add_done_callback takes no lock: a pair added as the completion seals the list is run
    # by the completion (added before the seal) or by its adder (after), never both or neither
    assert _race(before=False) == [0, 1, 2]  # the completion ran it
    assert _race(before=True) == [0, 1, 2]  # its adder did
