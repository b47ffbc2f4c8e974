"""The consumer's group membership (odradek.client.group.GroupMember) against a scripted
coordinator: ``poll()`` never waits for a group request, revoked partitions stop at once and
are committed before ``on_partitions_revoked``, partitions that stay are never touched."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from odradek.client.group import GroupMember, OffsetAndMetadata
from odradek.client.types import TopicPartition
from odradek.clock import ManualClock
from odradek.v1 import odradek_pb2 as pb

TOPIC = "t"
TID = "topic-id-t"


def tp(p: int) -> TopicPartition:
    return TopicPartition(TOPIC, p)


@dataclass
class _Topic:
    topic_id: str


class FakeMetadata:
    def snapshot(self) -> FakeMetadata:
        return self

    @property
    def topics(self) -> dict[str, _Topic]:
        return {TOPIC: _Topic(TID)}

    def add_topics(self, topics: object) -> None:
        pass

    def request_update(self) -> None:
        pass


class FakeConsumer:
    def __init__(self) -> None:
        self.states: dict[TopicPartition, int | None] = {}
        self.paused: set[TopicPartition] = set()

    def _group_assignment(self) -> set[TopicPartition]:
        return set(self.states)

    def _group_set_assignment(
        self, partitions: set[TopicPartition], positions: Mapping[TopicPartition, int]
    ) -> None:
        self.states = {p: self.states.get(p, positions.get(p)) for p in partitions}
        self.paused &= partitions

    def _group_positions(self) -> dict[TopicPartition, int]:
        return {p: o for p, o in self.states.items() if o is not None}

    def pause(self, *partitions: TopicPartition) -> None:
        self.paused.update(partitions)


class FakeClient:
    """Answers heartbeats with the scripted assignment; every call waits for ``release``."""

    group_id = "g"

    def __init__(self) -> None:
        self.assignment: list[int] = []
        self.release = threading.Event()
        self.release.set()
        self.calls: list[str] = []
        self.commits: list[dict[TopicPartition, int]] = []
        self.committed_offsets: dict[TopicPartition, int] = {}

    def send(self, rpc: object, request: object, error_of: object) -> object:
        assert isinstance(request, pb.ConsumerGroupHeartbeatRequest)
        self.calls.append("heartbeat")
        self.release.wait(10)
        return pb.ConsumerGroupHeartbeatResponse(
            member_id=request.member_id,
            member_epoch=request.member_epoch + 1,
            heartbeat_interval_ms=1000,
            has_assignment=True,
            assignment=[pb.HeartbeatTopicPartitions(topic_id=TID, partitions=self.assignment)],
        )

    def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        member_id: str,
        member_epoch: int,
        timeout_ms: int,
    ) -> None:
        self.calls.append("commit")
        self.release.wait(10)
        self.commits.append({p: om.offset for p, om in offsets.items()})

    def committed(
        self, partitions: Collection[TopicPartition] | None, timeout_ms: int
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        self.calls.append("committed")
        self.release.wait(10)
        return {
            p: OffsetAndMetadata(self.committed_offsets[p]) if p in self.committed_offsets else None
            for p in partitions or ()
        }


class Listener:
    def __init__(self, consumer: FakeConsumer, client: FakeClient) -> None:
        self.events: list[tuple[str, set[int], list[dict[TopicPartition, int]]]] = []
        self.consumer, self.client = consumer, client

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        # still assigned, paused, and already committed
        assert revoked <= self.consumer._group_assignment()
        assert revoked <= self.consumer.paused
        self.events.append(("revoked", {p.partition for p in revoked}, list(self.client.commits)))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.events.append(("assigned", {p.partition for p in assigned}, []))


def _member(
    auto_commit: bool = True,
) -> tuple[GroupMember, FakeConsumer, FakeClient, Listener, ManualClock]:
    clock = ManualClock()
    consumer, client = FakeConsumer(), FakeClient()
    member = GroupMember(
        client,  # type: ignore[arg-type]
        consumer,
        clock,
        group_instance_id=None,
        client_id="c",
        enable_auto_commit=auto_commit,
        auto_commit_interval_ms=60_000,
        request_timeout_ms=1_000,
        retry_backoff_ms=100,
        metadata=FakeMetadata(),  # type: ignore[arg-type]
    )
    listener = Listener(consumer, client)
    member.subscribe([TOPIC], None, listener)
    return member, consumer, client, listener, clock


def _wait(done: Callable[[], bool]) -> None:
    """Wait (without polling the member) for what its heartbeat thread does."""
    for _ in range(1000):
        if done():
            return
        threading.Event().wait(0.005)
    raise AssertionError("the heartbeat thread never got there")


def _until(member: GroupMember, done: Callable[[], bool]) -> None:
    for _ in range(1000):
        member.poll()
        if done():
            return
        threading.Event().wait(0.005)
    raise AssertionError("the membership never got there")


def test_poll_does_not_wait_for_the_coordinator() -> None:
    member, consumer, client, _, _ = _member()
    client.assignment = [0, 1]
    client.release.clear()  # the coordinator does not answer
    member.poll()
    member.poll()
    _wait(lambda: client.calls == ["heartbeat"])  # sent once, in the background; poll returned
    assert member.time_to_next_ms() <= 5
    client.release.set()
    _until(member, lambda: consumer._group_assignment() == {tp(0), tp(1)})
    member.leave()


def test_revocation_pauses_commits_then_calls_back_and_keeps_the_rest() -> None:
    member, consumer, client, listener, clock = _member()
    client.assignment = [0, 1, 2]
    client.committed_offsets = {tp(0): 5}
    _until(member, lambda: len(consumer._group_assignment()) == 3)
    assert consumer.states == {tp(0): 5, tp(1): None, tp(2): None}
    consumer.states.update({tp(1): 7, tp(2): 9})  # the application read on
    _until(member, lambda: client.calls[-1] == "heartbeat")  # the acknowledgement
    calls = len(client.calls)

    client.assignment = [0, 1]  # partition 2 moves to another member
    clock.advance(1_000)
    client.release.clear()
    _until(member, lambda: client.calls[calls:] == ["heartbeat"])
    client.release.set()
    _until(member, lambda: tp(2) in consumer.paused)  # stopped at once ...
    assert tp(2) in consumer._group_assignment()  # ... but revoked only once committed
    _until(member, lambda: tp(2) not in consumer._group_assignment())
    assert client.commits[-1] == {tp(2): 9}
    assert listener.events[-1] == ("revoked", {2}, client.commits)
    assert consumer.states == {tp(0): 5, tp(1): 7}  # the others untouched, never paused
    assert not consumer.paused
    member.leave()


def test_without_auto_commit_nothing_is_committed_on_revocation() -> None:
    member, consumer, client, listener, clock = _member(auto_commit=False)
    client.assignment = [0, 1]
    _until(member, lambda: len(consumer._group_assignment()) == 2)
    client.assignment = [0]
    clock.advance(1_000)
    _until(member, lambda: consumer._group_assignment() == {tp(0)})
    assert client.commits == []
    assert [e[:2] for e in listener.events] == [("assigned", {0, 1}), ("revoked", {1})]
    member.leave()
