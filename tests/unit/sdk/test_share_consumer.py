"""The pure parts of ``odradek.ShareConsumer`` and its membership: acknowledgements as ranges,
settings, and the heartbeat thread's join / rejoin-on-fencing / leave against a scripted
coordinator (the real-cluster behaviour is ``tests/kafka/test_sdk_share_consumer.py``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, cast

import pytest

from odradek.client.group import GroupClient
from odradek.client.share_membership import ShareMembership
from odradek.clock import SystemClock
from odradek.errors import FencedMemberEpochError, GroupAuthorizationFailedError, OdradekError
from odradek.share_consumer import AcknowledgeType, ShareConsumer, acknowledgement_batches
from odradek.v1 import odradek_pb2 as pb

WAIT_S = 30.0
"""A deadline for the heartbeat thread, not a timing assertion."""


def ranges(acks: Mapping[int, int]) -> list[tuple[int, int, list[int]]]:
    return [
        (b.first_offset, b.last_offset, list(b.acknowledge_types))
        for b in acknowledgement_batches(acks)
    ]


def test_acknowledgements_are_runs_of_consecutive_offsets_of_one_type() -> None:
    accept, release, reject = (
        AcknowledgeType.ACCEPT,
        AcknowledgeType.RELEASE,
        AcknowledgeType.REJECT,
    )
    acks = {5: accept, 3: accept, 4: accept, 6: release, 7: release, 9: reject, 10: accept}
    assert ranges(acks) == [(3, 5, [1]), (6, 7, [2]), (9, 9, [3]), (10, 10, [1])]
    assert ranges({}) == []


@pytest.mark.parametrize(
    "settings",
    [
        {"group_id": ""},
        {"acknowledgement_mode": "manual"},
        {"max_poll_records": 0},
        {"fetch_max_wait_ms": -1},
        {"request_timeout_ms": True},
    ],
)
def test_bad_settings_are_refused(settings: dict[str, Any]) -> None:
    kwargs: dict[str, Any] = {"group_id": "g", **settings}
    with pytest.raises(ValueError):
        ShareConsumer(bootstrap_servers="127.0.0.1:1", **kwargs)


def test_poll_before_subscribe_and_use_after_close_are_refused() -> None:
    consumer = ShareConsumer(bootstrap_servers="127.0.0.1:1", group_id="g")
    with pytest.raises(ValueError):
        consumer.poll()
    consumer.close()
    consumer.close()  # idempotent
    with pytest.raises(RuntimeError):
        consumer.subscribe(["t"])


class ScriptedCoordinator:
    """Answers ShareGroupHeartbeats in order from ``script`` (an answer or an error) and keeps
    the requests; past the script, it answers the member's epoch with a long interval."""

    group_id = "g"

    def __init__(self, script: list[pb.ShareGroupHeartbeatResponse | OdradekError]) -> None:
        self.script = script
        self.requests: list[pb.ShareGroupHeartbeatRequest] = []
        self.changed = threading.Condition()

    def send(self, rpc: object, request: Any, error_of: Callable[[Any], object]) -> Any:
        with self.changed:
            self.requests.append(request)
            self.changed.notify_all()
            answer = self.script.pop(0) if self.script else None
        if isinstance(answer, OdradekError):
            raise answer
        return answer or pb.ShareGroupHeartbeatResponse(
            member_epoch=max(request.member_epoch, 0), heartbeat_interval_ms=600_000
        )

    def wait_for(self, count: int) -> list[pb.ShareGroupHeartbeatRequest]:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.requests) >= count, WAIT_S)
            return list(self.requests)


def assigned(epoch: int, topic_id: str, *partitions: int) -> pb.ShareGroupHeartbeatResponse:
    return pb.ShareGroupHeartbeatResponse(
        member_epoch=epoch,
        heartbeat_interval_ms=600_000,
        has_assignment=True,
        assignment=[pb.HeartbeatTopicPartitions(topic_id=topic_id, partitions=list(partitions))],
    )


def membership(coordinator: ScriptedCoordinator) -> ShareMembership:
    return ShareMembership(
        cast(GroupClient, coordinator), SystemClock(), client_id="c", retry_backoff_ms=1
    )


def test_a_fenced_member_rejoins_with_epoch_zero_and_its_topics_and_leaves_with_minus_one() -> None:
    coordinator = ScriptedCoordinator(
        [
            assigned(1, "tid", 0, 1),
            FencedMemberEpochError("fenced"),
            assigned(3, "tid", 1),
        ]
    )
    member = membership(coordinator)
    member.subscribe(["jobs"])
    member.wait_for_assignment(int(WAIT_S * 1000))
    assert member.assignment() == {"tid": (0, 1)}
    member.subscribe(["jobs"])  # heartbeats at once: the coordinator answers FENCED_MEMBER_EPOCH
    requests = coordinator.wait_for(3)
    assert [r.member_epoch for r in requests] == [0, 1, 0]
    assert list(requests[2].subscribed_topic_names) == ["jobs"]
    assert len({r.member_id for r in requests}) == 1

    def rejoined() -> bool:
        return member.assignment() == {"tid": (1,)}

    with member._lock:
        assert member._lock.wait_for(rejoined, WAIT_S)
    member.leave()
    last = coordinator.wait_for(4)[-1]
    assert (last.member_epoch, last.member_id) == (-1, requests[0].member_id)
    member.check()


def test_a_non_retriable_heartbeat_error_is_raised_by_check() -> None:
    coordinator = ScriptedCoordinator([GroupAuthorizationFailedError("no")])
    member = membership(coordinator)
    member.subscribe(["jobs"])
    member.wait_for_assignment(int(WAIT_S * 1000))
    with pytest.raises(GroupAuthorizationFailedError):
        member.check()
    member.leave()
    assert len(coordinator.requests) == 1  # never joined: nothing to leave
