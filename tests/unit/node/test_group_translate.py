"""The gRPC door's translation of ConsumerGroupDescribe and ListGroups answers: a classic group
keeps its type, protocol type and protocol on the wire, a consumer group its own."""

from __future__ import annotations

from node.coordinator.group_requests import (
    DescribedGroup,
    DescribedMember,
    ListedGroup,
    ListGroupsResult,
    TopicPartitions,
)
from node.grpc_door.group_translate import described_groups_to_wire, list_groups_to_wire


def _member() -> DescribedMember:
    return DescribedMember(
        member_id="kp-1-abc",
        member_epoch=3,
        client_id="kp-1",
        client_host="/127.0.0.1",
        subscribed_topic_names=("t",),
        assignment=(TopicPartitions("id-t", (0, 2), "t"),),
        target_assignment=(),
        member_state="",
        member_metadata=b"\x00\x01",
        member_assignment=b"\x00\x02",
    )


def test_a_classic_group_keeps_its_type_protocol_type_and_protocol() -> None:
    classic = DescribedGroup(
        group_id="g",
        group_state="CompletingRebalance",
        group_epoch=3,
        assignment_epoch=3,
        assignor_name="roundrobin",
        members=(_member(),),
        group_type="classic",
        protocol_type="consumer",
        protocol="roundrobin",
    )
    (g,) = described_groups_to_wire([classic]).groups
    assert (g.group_type, g.protocol_type, g.protocol, g.assignor_name) == (
        "classic",
        "consumer",
        "roundrobin",
        "roundrobin",
    )
    assert g.group_state == "CompletingRebalance"
    (m,) = g.members
    assert (m.client_id, m.client_host, m.member_epoch) == ("kp-1", "/127.0.0.1", 3)
    assert [(t.topic_name, list(t.partitions)) for t in m.assignment] == [("t", [0, 2])]


def test_a_consumer_group_and_an_error_say_consumer() -> None:
    wire = described_groups_to_wire(
        [
            DescribedGroup("c", group_state="Stable", assignor_name="uniform"),
            DescribedGroup("x", 69),
        ]
    )
    assert [(g.group_type, g.protocol_type, g.protocol) for g in wire.groups] == [
        ("consumer", "consumer", ""),
        ("consumer", "consumer", ""),
    ]
    assert wire.groups[1].error_code == 69


def test_listed_groups_keep_their_type_and_protocol_type() -> None:
    wire = list_groups_to_wire(
        ListGroupsResult(
            groups=(
                ListedGroup("a", "Stable", "consumer", "classic"),
                ListedGroup("b", "Empty", "", "classic"),
                ListedGroup("c", "Reconciling"),
            )
        )
    )
    assert [(g.group_id, g.group_type, g.protocol_type, g.group_state) for g in wire.groups] == [
        ("a", "classic", "consumer", "Stable"),
        ("b", "classic", "", "Empty"),
        ("c", "consumer", "consumer", "Reconciling"),
    ]
