"""The door-independent ACL checks (node.security.auth_helper) over plain values: each API's
split into what goes on to the core and what is refused with Kafka's codes. The ACLs are
decided by odradek.acl's real rules (matching_acls + authorize) over a fixed list."""

from __future__ import annotations

from dataclasses import dataclass, field

from node.coordinator.group_requests import ListedGroup
from node.core.requests import (
    DeleteRecordsPartition,
    FetchPartition,
    ListOffsetsPartition,
    MetadataResult,
    ProducePartition,
    TopicMetadata,
)
from node.security.auth_helper import (
    CLUSTER_DENIED,
    GROUP_DENIED,
    TOPIC_DENIED,
    AuthHelper,
    Caller,
)
from node.security.principal import KafkaPrincipal
from odradek.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
    authorize,
    matching_acls,
)

ALICE = Caller(KafkaPrincipal("User", "alice"), "127.0.0.1")


@dataclass
class _Acls:
    """An authorizer over a fixed list of ACLs, deciding with odradek.acl's rules."""

    acls: list[AclBinding] = field(default_factory=list)

    def allow(self, resource_type: ResourceType, name: str, op: AclOperation) -> None:
        entry = AccessControlEntry("User:alice", "*", op, AclPermissionType.ALLOW)
        self.acls.append(AclBinding(ResourcePattern(resource_type, name), entry))

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        return authorize(matching_acls(self.acls, resource_type, name), principal, host, operation)

    def bindings(self) -> list[AclBinding]:
        return list(self.acls)


def test_produce_fetch_list_offsets_delete_records_refuse_per_topic_with_29():
    acls = _Acls()
    acls.allow(ResourceType.TOPIC, "ok", AclOperation.ALL)
    auth = AuthHelper(acls)
    allowed, refused = auth.produce(
        ALICE, [ProducePartition("ok", 0, b""), ProducePartition("no", 1, b"")]
    )
    assert [p.topic for p in allowed] == ["ok"]
    assert [(r.topic, r.partition, r.error_code, r.base_offset) for r in refused] == [
        ("no", 1, TOPIC_DENIED, -1)
    ]
    assert refused[0].error_message == "User:alice may not Write topic 'no'"
    fetch_ok, fetch_refused = auth.fetch(ALICE, [FetchPartition("no", 0, 5)])
    assert fetch_ok == [] and fetch_refused[0].error_code == TOPIC_DENIED
    assert fetch_refused[0].records == b"" and fetch_refused[0].high_watermark == -1
    lo_ok, lo_refused = auth.list_offsets(ALICE, [ListOffsetsPartition("ok", 0, -1)])
    assert len(lo_ok) == 1 and lo_refused == []
    dr_ok, dr_refused = auth.delete_records(ALICE, [DeleteRecordsPartition("no", 0, 3)])
    assert dr_ok == [] and dr_refused[0].low_watermark == -1


def test_metadata_hides_topics_from_all_and_refuses_named_ones_whether_they_exist_or_not():
    acls = _Acls()
    acls.allow(ResourceType.TOPIC, "seen", AclOperation.DESCRIBE)
    auth = AuthHelper(acls)
    asked: list[object] = []

    def answer(topics):
        asked.append(topics)
        names = ["hidden", "seen"] if topics is None else list(topics)
        return MetadataResult(topics=tuple(TopicMetadata(n) for n in names), cluster_id="c")

    everything = auth.metadata(ALICE, None, answer)
    assert [t.name for t in everything.topics] == ["seen"] and everything.cluster_id == "c"
    named = auth.metadata(ALICE, ["missing", "seen", "missing"], answer)
    assert [(t.name, t.error_code) for t in named.topics] == [
        ("missing", TOPIC_DENIED),
        ("seen", 0),
    ]
    assert asked == [None, ["seen"]]  # the core is never asked about a refused topic


def test_init_producer_id_needs_idempotent_write_or_write_on_some_topic():
    acls = _Acls()
    auth = AuthHelper(acls)
    refused = auth.init_producer_id(ALICE)
    assert refused is not None and refused.error_code == CLUSTER_DENIED
    assert refused.producer_id == -1
    acls.allow(ResourceType.TOPIC, "events", AclOperation.WRITE)
    assert auth.init_producer_id(ALICE) is None


def test_group_checks_name_each_refused_group_and_list_groups_hides_them():
    acls = _Acls()
    acls.allow(ResourceType.GROUP, "mine", AclOperation.READ)
    auth = AuthHelper(acls)
    assert auth.consumer_group_heartbeat(ALICE, "mine") == []
    assert auth.offset_commit(ALICE, "mine") == []
    assert auth.offset_fetch(ALICE, "mine") == []  # READ implies DESCRIBE
    [refusal] = auth.delete_groups(ALICE, ["mine"])
    assert (refusal.name, refusal.error_code) == ("mine", GROUP_DENIED)
    refused = auth.describe_groups(ALICE, ["mine", "theirs", "theirs"])
    assert [r.name for r in refused] == ["theirs"]
    groups = (ListedGroup("mine", "Stable"), ListedGroup("theirs", "Empty"))
    assert [g.group_id for g in auth.list_groups(ALICE, groups)] == ["mine"]
    acls.allow(ResourceType.CLUSTER, CLUSTER_NAME, AclOperation.DESCRIBE)
    assert auth.list_groups(ALICE, groups) == groups


def test_inter_broker_calls_need_cluster_action():
    acls = _Acls()
    auth = AuthHelper(acls)
    refusal = auth.cluster_action(ALICE)
    assert refusal is not None and refusal.error_code == CLUSTER_DENIED
    assert "may not ClusterAction on the cluster" in refusal.error_message
    acls.allow(ResourceType.CLUSTER, CLUSTER_NAME, AclOperation.CLUSTER_ACTION)
    assert auth.cluster_action(ALICE) is None
