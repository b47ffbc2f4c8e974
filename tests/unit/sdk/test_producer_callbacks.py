"""Per-record delivery callbacks (issue 27's callback path): ``send(..., callback=cb)`` and
``send(...).add_done_callback(cb)`` call ``cb`` once per record with its own future, on
delivery and on failure; a callback added after delivery runs at once; one that raises does
not stop the others."""

from __future__ import annotations

from odradek.client.futures import FutureRecordMetadata
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
