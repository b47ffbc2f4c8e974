"""The member's heartbeat thread (Kafka's consumer heartbeats from its background thread):
heartbeats go on while the application does not poll, only ``max_poll_interval_ms`` bounds the
time between polls (past it the member leaves, and its next poll loses the partitions and joins
again), and leaving calls the listener for the partitions owned (issue 27, items 1 and 2)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping

from odradek.client.group import GroupMember, OffsetAndMetadata, close_group_member
from odradek.client.types import TopicPartition
from odradek.clock import ManualClock
from odradek.errors import UnknownMemberIdError
from odradek.v1 import odradek_pb2 as pb
from tests.unit.sdk.test_group_member import TOPIC, FakeClient, FakeConsumer, FakeMetadata, tp


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, set[int]]] = []

    def on_partitions_revoked(self, revoked: set[object]) -> None:
        self.events.append(("revoked", {p.partition for p in revoked}))  # type: ignore[attr-defined]

    def on_partitions_assigned(self, assigned: set[object]) -> None:
        self.events.append(("assigned", {p.partition for p in assigned}))  # type: ignore[attr-defined]

    def on_partitions_lost(self, lost: set[object]) -> None:
        self.events.append(("lost", {p.partition for p in lost}))  # type: ignore[attr-defined]


class RecordingClient(FakeClient):
    """Also keeps every heartbeat request, and can answer them with an error."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[pb.ConsumerGroupHeartbeatRequest] = []
        self.error: Exception | None = None

    def send(self, rpc: object, request: object, error_of: object) -> object:
        assert isinstance(request, pb.ConsumerGroupHeartbeatRequest)
        self.requests.append(request)
        if self.error is not None:
            self.calls.append("heartbeat")
            raise self.error
        if request.member_epoch < 0:
            self.calls.append("leave")
            return pb.ConsumerGroupHeartbeatResponse(member_epoch=request.member_epoch)
        return super().send(rpc, request, error_of)


def _wait(done: Callable[[], bool]) -> None:
    for _ in range(2000):
        if done():
            return
        threading.Event().wait(0.005)
    raise AssertionError("never got there")


def _joined(
    max_poll_interval_ms: int = 300_000,
) -> tuple[GroupMember, FakeConsumer, RecordingClient, Recorder, ManualClock]:
    clock = ManualClock()
    consumer, client = FakeConsumer(), RecordingClient()
    member = GroupMember(
        client,  # type: ignore[arg-type]
        consumer,
        clock,
        group_instance_id=None,
        client_id="c",
        enable_auto_commit=False,
        auto_commit_interval_ms=60_000,
        request_timeout_ms=1_000,
        retry_backoff_ms=100,
        metadata=FakeMetadata(),  # type: ignore[arg-type]
        max_poll_interval_ms=max_poll_interval_ms,
    )
    recorder = Recorder()
    client.assignment = [0, 1]
    member.subscribe([TOPIC], None, recorder)
    for _ in range(2000):
        member.poll()
        if consumer._group_assignment() == {tp(0), tp(1)} and client.calls[-1] == "heartbeat":
            break
        threading.Event().wait(0.005)
    else:
        raise AssertionError("the member never joined")
    _wait(lambda: not member._in_flight)
    return member, consumer, client, recorder, clock


def test_heartbeats_go_out_while_the_application_does_not_poll() -> None:
    member, consumer, client, recorder, clock = _joined()
    sent = len(client.requests)
    for i in range(1, 6):  # five heartbeat intervals busy with a batch, no poll
        clock.advance(1_000)
        _wait(lambda i=i: len(client.requests) >= sent + i)  # type: ignore[misc]
    assert all(r.member_epoch > 0 for r in client.requests[sent:])
    # each reports the partitions the member still owns
    assert [list(r.topic_partitions[0].partitions) for r in client.requests[sent:]] == [[0, 1]] * 5
    member.poll()
    assert consumer._group_assignment() == {tp(0), tp(1)}
    assert recorder.events == [("assigned", {0, 1})]
    member.leave()


def test_past_max_poll_interval_the_member_leaves_and_rejoins_at_its_next_poll() -> None:
    member, consumer, client, recorder, clock = _joined(max_poll_interval_ms=3_000)
    clock.advance(2_000)
    _wait(lambda: client.calls[-1] == "heartbeat" and not member._in_flight)
    assert "leave" not in client.calls  # within the interval: still a member
    clock.advance(1_500)  # 3.5 s since the last poll
    _wait(lambda: "leave" in client.calls)
    leave = next(r for r in client.requests if r.member_epoch < 0)
    assert leave.member_epoch == -1 and leave.member_id == member.member_id
    sent = len(client.requests)
    clock.advance(5_000)
    threading.Event().wait(0.3)  # nothing more goes out until the application polls again
    assert len(client.requests) == sent
    assert consumer._group_assignment() == {tp(0), tp(1)}  # lost only at the next poll
    member.poll()  # the application is back
    assert recorder.events[-1] == ("lost", {0, 1})
    assert consumer._group_assignment() == set()
    _wait(lambda: len(client.requests) > sent and client.requests[-1].member_epoch == 0)
    assert client.requests[-1].has_subscribed_topic_names  # a full join
    member.leave()


def test_a_fenced_member_loses_its_partitions_at_its_next_poll() -> None:
    member, _consumer, client, recorder, clock = _joined()
    client.error = UnknownMemberIdError("fenced")
    clock.advance(1_000)
    _wait(lambda: member._fenced is not None)
    assert recorder.events == [("assigned", {0, 1})]  # listeners run on the poll thread only
    client.error = None
    member.poll()
    assert recorder.events[-1] == ("lost", {0, 1})
    member.leave()


def test_close_revokes_the_partitions_owned_then_leaves() -> None:
    member, consumer, client, recorder, _clock = _joined()
    close_group_member(member, consumer._group_positions())
    assert recorder.events == [("assigned", {0, 1}), ("revoked", {0, 1})]
    assert client.calls[-1] == "leave"


def test_close_after_fencing_calls_on_partitions_lost() -> None:
    member, consumer, client, recorder, clock = _joined()
    client.error = UnknownMemberIdError("fenced")
    clock.advance(1_000)
    _wait(lambda: member._fenced is not None)
    close_group_member(member, consumer._group_positions())
    assert recorder.events == [("assigned", {0, 1}), ("lost", {0, 1})]
    assert "leave" not in client.calls  # a fenced member is no longer in the group


def test_the_server_assignor_and_poll_interval_go_out_on_join() -> None:
    clock = ManualClock()
    consumer, client = FakeConsumer(), RecordingClient()
    member = GroupMember(
        client,  # type: ignore[arg-type]
        consumer,
        clock,
        group_instance_id=None,
        client_id="c",
        enable_auto_commit=False,
        auto_commit_interval_ms=60_000,
        request_timeout_ms=1_000,
        retry_backoff_ms=100,
        metadata=FakeMetadata(),  # type: ignore[arg-type]
        max_poll_interval_ms=12_345,
        server_assignor="range",
    )
    member.subscribe([TOPIC], None, None)
    _wait(lambda: bool(client.requests))
    assert client.requests[0].server_assignor == "range"
    assert client.requests[0].rebalance_timeout_ms == 12_345
    member.leave()


def test_leaving_and_subscribing_again_leaves_one_heartbeat_thread() -> None:
    member, _consumer, _client, recorder, _clock = _joined()
    for _ in range(3):
        member.leave()
        member.subscribe([TOPIC], None, recorder)

    def heartbeat_threads() -> int:
        return sum(t.name == "odradek-heartbeat-g" for t in threading.enumerate())

    _wait(lambda: heartbeat_threads() == 1)
    member.leave()
    _wait(lambda: heartbeat_threads() == 0)


class SlowOffsetsClient(RecordingClient):
    """Committed offsets wait for ``offsets``: a reconciliation stays half-way."""

    def __init__(self) -> None:
        super().__init__()
        self.offsets = threading.Event()

    def committed(
        self, partitions: Collection[TopicPartition] | None, timeout_ms: int
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        self.calls.append("committed")
        self.offsets.wait(10)
        return dict.fromkeys(partitions or ())


class SpyConsumer(FakeConsumer):
    def __init__(self) -> None:
        super().__init__()
        self.history: list[set[TopicPartition]] = []

    def _group_set_assignment(
        self, partitions: set[TopicPartition], positions: Mapping[TopicPartition, int]
    ) -> None:
        self.history.append(set(partitions))
        super()._group_set_assignment(partitions, positions)


def test_an_assignment_superseded_while_its_offsets_are_looked_up_is_not_taken() -> None:
    # the member reports owning none of partitions 0 and 1 while it looks up their offsets;
    # the coordinator's next answer gives 1 to another member: this member never reads 1
    clock = ManualClock()
    consumer, client = SpyConsumer(), SlowOffsetsClient()
    member = GroupMember(
        client,  # type: ignore[arg-type]
        consumer,
        clock,
        group_instance_id=None,
        client_id="c",
        enable_auto_commit=False,
        auto_commit_interval_ms=60_000,
        request_timeout_ms=1_000,
        retry_backoff_ms=100,
        metadata=FakeMetadata(),  # type: ignore[arg-type]
    )
    client.assignment = [0, 1]
    member.subscribe([TOPIC], None, None)
    for _ in range(2000):  # until the committed offsets of 0 and 1 are being looked up
        member.poll()
        if "committed" in client.calls:
            break
        threading.Event().wait(0.005)
    client.assignment = [0]  # a rebalance: 1 goes to another member
    sent = len(client.requests)
    clock.advance(1_000)
    _wait(lambda: len(client.requests) > sent and not member._in_flight)
    client.offsets.set()
    for _ in range(2000):
        member.poll()
        if consumer._group_assignment() == {tp(0)}:
            break
        threading.Event().wait(0.005)
    assert consumer._group_assignment() == {tp(0)}
    assert all(tp(1) not in h for h in consumer.history), consumer.history
    member.leave()
