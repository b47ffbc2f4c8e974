"""The group coordinator on a real cluster, over the raw RPCs: __consumer_offsets created on
first use, members of a KIP-848 group sharing a topic, commits that survive the coordinator's
node being killed, and Kafka's typed errors for bad input."""

from __future__ import annotations

import subprocess
import sys
import uuid

import grpc

from node.coordinator.group_coordinator import partition_for
from odradek import Admin, NewTopic
from odradek.errors import (
    FencedMemberEpochError,
    GroupIdNotFoundError,
    StaleMemberEpochError,
    UnknownMemberIdError,
)
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.integration.helpers import wait_for

GROUP = "orders"
TOPIC = "events"


def _stub(address: str) -> pb_grpc.BrokerStub:
    return pb_grpc.BrokerStub(grpc.insecure_channel(address))


def _coordinator(bootstrap: str, group: str) -> tuple[int, str]:
    """(node id, address) of the group's coordinator, once there is one."""

    def find() -> tuple[int, str] | None:
        for address in bootstrap.split(","):
            try:
                response = _stub(address).FindCoordinator(
                    pb.FindCoordinatorRequest(group_ids=[group]), timeout=10
                )
            except grpc.RpcError:
                continue
            (c,) = response.coordinators
            if c.error_code == 0:
                return c.node_id, f"{c.host}:{c.port}"
        return None

    return wait_for(find, f"a coordinator for {group}")


class RawMember:
    """A KIP-848 member speaking the RPC directly; it revokes at once."""

    def __init__(self, bootstrap: str, member_id: str | None = None) -> None:
        self.bootstrap = bootstrap
        self.member_id = member_id or str(uuid.uuid4())
        self.epoch = 0
        self.owned: dict[str, list[int]] = {}

    def beat(self) -> pb.ConsumerGroupHeartbeatResponse:
        def send() -> pb.ConsumerGroupHeartbeatResponse | None:
            _, address = _coordinator(self.bootstrap, GROUP)
            join = self.epoch == 0
            request = pb.ConsumerGroupHeartbeatRequest(
                group_id=GROUP,
                member_id=self.member_id,
                member_epoch=self.epoch,
                rebalance_timeout_ms=60000 if join else -1,
                has_subscribed_topic_names=join,
                subscribed_topic_names=[TOPIC] if join else [],
                has_topic_partitions=True,
                topic_partitions=[
                    pb.HeartbeatTopicPartitions(topic_id=t, partitions=ps)
                    for t, ps in self.owned.items()
                ],
            )
            try:
                response = _stub(address).ConsumerGroupHeartbeat(request, timeout=10)
            except grpc.RpcError:
                return None
            if response.error_code in (14, 15, 16):  # retriable: find the coordinator again
                return None
            return response

        response = wait_for(send, "a heartbeat answer")
        if response.error_code == 0:
            self.epoch = response.member_epoch
            if response.has_assignment:
                self.owned = {a.topic_id: list(a.partitions) for a in response.assignment}
        return response

    def count(self) -> int:
        return sum(len(ps) for ps in self.owned.values())


def _commit(bootstrap: str, member: RawMember, partition: int, offset: int) -> int:
    def send() -> pb.OffsetCommitResponse | None:
        _, address = _coordinator(bootstrap, GROUP)
        try:
            response = _stub(address).OffsetCommit(
                pb.OffsetCommitRequest(
                    group_id=GROUP,
                    member_id=member.member_id,
                    member_epoch=member.epoch,
                    topics=[
                        pb.OffsetCommitTopic(
                            name=TOPIC,
                            partitions=[
                                pb.OffsetCommitPartition(
                                    partition=partition,
                                    committed_offset=offset,
                                    committed_leader_epoch=-1,
                                )
                            ],
                        )
                    ],
                ),
                timeout=20,
            )
        except grpc.RpcError:
            return None
        return None if response.error_code in (14, 15, 16) else response

    response = wait_for(send, "a commit answer")
    (p,) = response.partitions
    return p.error_code


def _fetch(bootstrap: str) -> dict[int, int]:
    def send() -> pb.OffsetFetchResponse | None:
        _, address = _coordinator(bootstrap, GROUP)
        try:
            response = _stub(address).OffsetFetch(
                pb.OffsetFetchRequest(group_id=GROUP, member_epoch=-1, all_topics=True),
                timeout=10,
            )
        except grpc.RpcError:
            return None
        return None if response.error_code in (14, 15, 16) else response

    response = wait_for(send, "an offset fetch answer")
    assert response.error_code == 0
    return {p.partition: p.committed_offset for p in response.partitions if p.topic == TOPIC}


def test_members_share_partitions_and_commits_survive_a_coordinator_crash(make_cluster):
    cluster = make_cluster(3, offsets_topic_num_partitions="4")
    bootstrap = cluster.bootstrap_servers
    admin = Admin(bootstrap)
    assert admin.create_topics([NewTopic(TOPIC, 12, 3)], timeout_ms=30000)[TOPIC] is None

    members = [RawMember(bootstrap) for _ in range(3)]
    for _ in range(6):
        for m in members:
            assert m.beat().error_code == 0
    assert [m.count() for m in members] == [4, 4, 4]
    owned = [p for m in members for ps in m.owned.values() for p in ps]
    assert sorted(owned) == list(range(12))

    # __consumer_offsets was created on first use, compacted, replicated
    described = admin.describe_topics(["__consumer_offsets"])["__consumer_offsets"]
    assert len(described.partitions) == 4
    assert all(len(p.replicas) == 3 for p in described.partitions)

    commits = {}
    for m in members:
        for ps in m.owned.values():
            for p in ps:
                assert _commit(bootstrap, m, p, 100 + p) == 0
                commits[p] = 100 + p
    assert _fetch(bootstrap) == commits

    # dump-log --offsets-decoder reads the commits and group records from the replicas' files
    partition = partition_for(GROUP, 4)
    node_id, _ = _coordinator(bootstrap, GROUP)
    directory = cluster.node(node_id).directory / "data" / f"__consumer_offsets-{partition}"
    out = subprocess.run(
        [sys.executable, "-m", "odradek", "dump-log", "--offsets-decoder", str(directory)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f'"data":{{"group":"{GROUP}","topic":"{TOPIC}","partition":0}}' in out
    assert '"type":"3","data":{"groupId":"orders"}' in out  # the group epoch record
    assert '"type":"8"' in out and '"state":"STABLE"' in out

    # bad input gets Kafka's typed errors
    first = members[0]
    not_owned = next(p for p in range(12) if p not in first.owned.get(next(iter(first.owned)), []))
    assert _commit(bootstrap, first, not_owned, 1) == StaleMemberEpochError.code
    stale = RawMember(bootstrap, first.member_id)
    stale.epoch, stale.owned = first.epoch + 5, first.owned
    assert stale.beat().error_code == FencedMemberEpochError.code
    assert RawMember(bootstrap, "nobody").beat().error_code == 0  # epoch 0 joins
    ghost = RawMember(bootstrap, "ghost")
    ghost.epoch = 3
    assert ghost.beat().error_code == UnknownMemberIdError.code

    node_id, _ = _coordinator(bootstrap, GROUP)
    cluster.node(node_id).kill()

    # the new coordinator has every commit, and the members carry on at their epochs
    assert _fetch(bootstrap) == commits
    assert _coordinator(bootstrap, GROUP)[0] != node_id
    for m in members:
        assert m.beat().error_code == 0

    _, address = _coordinator(bootstrap, GROUP)
    (found,) = (
        _stub(address)
        .ConsumerGroupDescribe(pb.ConsumerGroupDescribeRequest(group_ids=[GROUP]), timeout=10)
        .groups
    )
    assert found.error_code == 0 and len(found.members) == 4
    # a group on another partition: this node is not its coordinator; its own says not found
    _, other = _coordinator(bootstrap, "missing")
    (missing,) = (
        _stub(other)
        .ConsumerGroupDescribe(pb.ConsumerGroupDescribeRequest(group_ids=["missing"]), timeout=10)
        .groups
    )
    assert missing.error_code == GroupIdNotFoundError.code
