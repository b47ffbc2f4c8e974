"""Door parity: an ACL means the same through both front doors.

For every API that both doors serve, the same principal sends the same request through Kafka's
wire protocol (raw kio frames over TLS) and through gRPC (the generated stub over TLS), and both
answers must carry the same Kafka error codes. The table is principals by APIs by resources
(existing or missing, and a few API-specific cases); each cell is one parametrized test, named
``<api>-<principal>-<case>``.

One in-process node on a real ZooKeeper with the ACL authorizer, a gRPC listener and a Kafka
listener, both SSL with client certificates required: each principal is a client certificate,
``CN=x`` mapped to ``User:CN=x``. The super user ``CN=admin`` sets up, through gRPC, a topic with
records, a group with committed offsets, a SCRAM user and the principals' ACLs:

* ``none``: no ACL;
* ``group``: ALL on every group;
* ``topic``: ALL on every topic;
* ``both``: ALL on every topic, every group and every transactional id;
* ``cluster``: ALL on the cluster only (the admin APIs that need the cluster);
* ``deny``: ALL on every topic, group, transactional id and the cluster, and a DENY of the
  operation the API needs (one certificate per API, ``CN=deny-<api>``: :data:`DENIED`).

The resources: ``parity-topic`` (one partition, records) and a missing topic;
``parity-group`` (offsets committed by the super user) and a missing group;
``parity-transaction`` (a transactional id the super user initialised, so that its coordinator
is loaded) and a missing one. A cell never
changes what another sees: deletions take a fresh topic or group made just before each door's
call (or a missing one), creations and alterations are ``validate_only`` or repeat what is
there, a commit commits the offset already committed.

A gRPC call refused whole (``PERMISSION_DENIED``) carries the Kafka error code in the
``odradek-error-code`` trailing metadata; it is read as that code for every resource of the
request, as the Kafka door answers it. Where the gRPC API has another shape the comparison is
of what both carry (said at each API).
"""

from __future__ import annotations

import itertools
import ssl
import struct
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import grpc
import pytest
from kio.schema.add_offsets_to_txn.v3.request import AddOffsetsToTxnRequest
from kio.schema.add_partitions_to_txn.v3 import request as add_partitions
from kio.schema.alter_partition_reassignments.v0 import request as alter_reassign
from kio.schema.alter_share_group_offsets.v0 import request as alter_share_offsets
from kio.schema.alter_user_scram_credentials.v0 import request as alter_scram
from kio.schema.consumer_group_describe.v0.request import ConsumerGroupDescribeRequest
from kio.schema.consumer_group_heartbeat.v0.request import ConsumerGroupHeartbeatRequest
from kio.schema.create_acls.v2.request import AclCreation, CreateAclsRequest
from kio.schema.create_partitions.v1 import request as create_partitions
from kio.schema.create_topics.v4 import request as create_topics
from kio.schema.delete_acls.v2.request import DeleteAclsFilter, DeleteAclsRequest
from kio.schema.delete_groups.v1.request import DeleteGroupsRequest
from kio.schema.delete_records.v1 import request as delete_records
from kio.schema.delete_share_group_offsets.v0 import request as delete_share_offsets
from kio.schema.delete_topics.v3.request import DeleteTopicsRequest
from kio.schema.describe_acls.v2.request import DescribeAclsRequest
from kio.schema.describe_configs.v2 import request as describe_configs
from kio.schema.describe_groups.v4.request import DescribeGroupsRequest
from kio.schema.describe_log_dirs.v2 import request as describe_log_dirs
from kio.schema.describe_producers.v0 import request as describe_producers
from kio.schema.describe_share_group_offsets.v1 import request as describe_share_offsets
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.describe_user_scram_credentials.v0 import request as describe_scram
from kio.schema.elect_leaders.v2 import request as elect_leaders
from kio.schema.end_txn.v3.request import EndTxnRequest
from kio.schema.find_coordinator.v2.request import FindCoordinatorRequest
from kio.schema.find_coordinator.v6.request import FindCoordinatorRequest as FindCoordinatorV6
from kio.schema.incremental_alter_configs.v1 import request as alter_configs
from kio.schema.init_producer_id.v1.request import InitProducerIdRequest
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.list_offsets.v5 import request as list_offsets
from kio.schema.list_partition_reassignments.v0 import request as list_reassign
from kio.schema.list_transactions.v1.request import ListTransactionsRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.offset_commit.v9 import request as offset_commit
from kio.schema.offset_delete.v0 import request as offset_delete
from kio.schema.offset_fetch.v8 import request as offset_fetch
from kio.schema.produce.v8 import request as produce
from kio.schema.share_acknowledge.v1 import request as share_acknowledge
from kio.schema.share_fetch.v1 import request as share_fetch
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from kio.schema.txn_offset_commit.v3 import request as txn_offset_commit
from kio.schema.types import BrokerId, GroupId, ProducerId, TopicName, TransactionalId
from kio.static.primitive import Records, i8, i16, i32, i32Timedelta, i64

from node.config import NodeConfig
from node.coordinator.group_coordinator_config import GroupCoordinatorConfig
from node.kafka_door.topic_ids import topic_id_text, topic_id_uuid
from node.listeners import Listener
from node.security.authorizer import AuthorizerConfig
from node.security.tls import SslConfig
from node.server import Node
from node.transaction.txn_config import TransactionConfig
from odradek.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
    acl_binding_to_wire,
)
from odradek.client.errors import ERROR_CODE_METADATA_KEY
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.certs import CertificateAuthority
from tests.integration.helpers import wait_for
from tests.kafka.conftest import call, call_bytes, fetch_request
from tests.storage_helpers import make_batch

TOPIC = "parity-topic"
MISSING_TOPIC = "parity-no-such-topic"
GROUP = "parity-group"
MISSING_GROUP = "parity-no-such-group"
USER = "parity-user"
MISSING_USER = "parity-no-such-user"
NODE_ID = 1
TIMEOUT_MS = 30_000
SCRAM_SHA_256 = 1  # Kafka's ScramMechanism id
SALT = b"parity-salt"
SALTED_PASSWORD = bytes(32)
GROUP_ID_NOT_FOUND = 69
NOBODY = "User:parity-nobody"  # the principal of the ACLs the ACL APIs create and delete
TXN = "parity-transaction"
MISSING_TXN = "parity-no-such-transaction"

PRINCIPALS = ("none", "group", "topic", "both", "cluster", "deny")
_ALL_ON = {
    "none": (),
    "group": (ResourceType.GROUP,),
    "topic": (ResourceType.TOPIC,),
    "both": (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID),
    "cluster": (ResourceType.CLUSTER,),
    "deny": (
        ResourceType.TOPIC,
        ResourceType.GROUP,
        ResourceType.TRANSACTIONAL_ID,
        ResourceType.CLUSTER,
    ),
}
"""The resource types each principal has ALL on (every resource of the type)."""

T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
X = ResourceType.TRANSACTIONAL_ID
DENIED: dict[str, tuple[tuple[ResourceType, AclOperation], ...]] = {
    "Produce": ((T, AclOperation.WRITE),),
    "Fetch": ((T, AclOperation.READ),),
    "ListOffsets": ((T, AclOperation.DESCRIBE),),
    "Metadata": ((T, AclOperation.DESCRIBE),),
    "DeleteRecords": ((T, AclOperation.DELETE),),
    # KIP-679: IDEMPOTENT_WRITE on the cluster or WRITE on any topic
    "InitProducerId": ((C, AclOperation.IDEMPOTENT_WRITE), (T, AclOperation.WRITE)),
    "FindCoordinator": ((G, AclOperation.DESCRIBE), (X, AclOperation.DESCRIBE)),
    "ConsumerGroupHeartbeat": ((G, AclOperation.READ),),
    "OffsetCommit": ((G, AclOperation.READ),),
    "OffsetFetch": ((G, AclOperation.DESCRIBE),),
    "OffsetDelete": ((G, AclOperation.DELETE),),
    # DESCRIBE on the cluster lists every group, else each group DESCRIBE allows
    "ListGroups": ((C, AclOperation.DESCRIBE), (G, AclOperation.DESCRIBE)),
    "ConsumerGroupDescribe": ((G, AclOperation.DESCRIBE),),
    "DeleteGroups": ((G, AclOperation.DELETE),),
    # share groups (KIP-932): READ on the group, then DESCRIBE on the subscribed topics
    "ShareGroupHeartbeat": ((G, AclOperation.READ),),
    "ShareGroupDescribe": ((G, AclOperation.DESCRIBE),),
    # CREATE on the cluster or on the topic
    "CreateTopics": ((C, AclOperation.CREATE), (T, AclOperation.CREATE)),
    "DeleteTopics": ((T, AclOperation.DELETE),),
    "CreatePartitions": ((T, AclOperation.ALTER),),
    "DescribeConfigs": ((C, AclOperation.DESCRIBE_CONFIGS), (T, AclOperation.DESCRIBE_CONFIGS)),
    "AlterConfigs": ((T, AclOperation.ALTER_CONFIGS),),
    "ElectLeaders": ((C, AclOperation.ALTER),),
    "ListPartitionReassignments": ((C, AclOperation.DESCRIBE),),
    "AlterPartitionReassignments": ((C, AclOperation.ALTER),),
    "CreateAcls": ((C, AclOperation.ALTER),),
    "DescribeAcls": ((C, AclOperation.DESCRIBE),),
    "DeleteAcls": ((C, AclOperation.ALTER),),
    "DescribeUserScramCredentials": ((C, AclOperation.DESCRIBE),),
    "AlterUserScramCredentials": ((C, AclOperation.ALTER),),
    "DescribeLogDirs": ((C, AclOperation.DESCRIBE),),
    "DescribeProducers": ((T, AclOperation.READ),),
    "AddPartitionsToTxn": ((X, AclOperation.WRITE),),
    "AddOffsetsToTxn": ((X, AclOperation.WRITE),),
    "TxnOffsetCommit": ((X, AclOperation.WRITE),),
    "EndTxn": ((X, AclOperation.WRITE),),
    "DescribeTransactions": ((X, AclOperation.DESCRIBE),),
    "ListTransactions": ((X, AclOperation.DESCRIBE),),
    "ShareFetch": ((G, AclOperation.READ),),
    "ShareAcknowledge": ((G, AclOperation.READ),),
    # share groups' offsets (KIP-932): the group, then each topic
    "DescribeShareGroupOffsets": ((G, AclOperation.DESCRIBE), (T, AclOperation.DESCRIBE)),
    "AlterShareGroupOffsets": ((G, AclOperation.READ), (T, AclOperation.READ)),
    "DeleteShareGroupOffsets": ((G, AclOperation.DELETE), (T, AclOperation.READ)),
}
"""Per API, what its ``deny`` principal is denied (on every resource of the type)."""

Codes = tuple[Any, ...] | list[Any]
"""A door's answer reduced to what is compared: Kafka error codes and what they are about, in
tuples (ordered) and lists (unordered: compared sorted, :func:`in_roles`)."""


def _principal_cn(principal: str, api: str) -> str:
    return f"deny-{api}" if principal == "deny" else principal


@dataclass
class Parity:
    """The node, its two doors' addresses, and each principal's credentials for both."""

    node: Node
    kafka_address: str
    grpc_address: str
    contexts: dict[str, ssl.SSLContext]
    channels: dict[str, grpc.Channel]
    admin: grpc.Channel
    fresh: Iterator[int]

    def kafka(self, cn: str, request: Any) -> Any:
        return call(self.kafka_address, request, self.contexts[cn])

    def broker(self, cn: str) -> pb_grpc.BrokerStub:
        return pb_grpc.BrokerStub(self.channels[cn])

    def admin_stub(self, cn: str) -> pb_grpc.AdminStub:
        return pb_grpc.AdminStub(self.channels[cn])

    # -- the super user's set-up -----------------------------------------------------------

    def commit_as_admin(self, group: str) -> None:
        broker = pb_grpc.BrokerStub(self.admin)

        def committed() -> bool:
            # the first FindCoordinator creates the offsets topic; commits wait for it to load
            broker.FindCoordinator(pb.FindCoordinatorRequest(group_ids=[group]))
            answer = broker.OffsetCommit(_grpc_commit(group, TOPIC))
            return [p.error_code for p in answer.partitions] == [0]

        wait_for(committed, f"an offset committed for {group}")

    def fresh_group(self) -> str:
        """A new group with an offset committed (by the super user)."""
        group = f"parity-fresh-group-{next(self.fresh)}"
        self.commit_as_admin(group)
        return group

    def fresh_topic(self) -> str:
        """A new topic, led, known to the node's metadata (made by the super user)."""
        topic = f"parity-fresh-topic-{next(self.fresh)}"
        create_topic(self.admin, topic)
        return topic


def create_topic(admin: grpc.Channel, topic: str) -> None:
    answer = pb_grpc.AdminStub(admin).CreateTopics(
        pb.CreateTopicsRequest(
            topics=[pb.CreatableTopic(name=topic, num_partitions=1, replication_factor=1)],
            timeout_ms=TIMEOUT_MS,
        )
    )
    assert [t.error_code for t in answer.topics] == [0], answer
    broker = pb_grpc.BrokerStub(admin)

    def led() -> bool:
        (found,) = broker.Metadata(pb.MetadataRequest(topics=[topic])).topics
        return found.error_code == 0 and all(p.leader >= 0 for p in found.partitions)

    wait_for(led, f"{topic} led")


def _acls(cn: str, api: str | None) -> list[AclBinding]:
    principal = f"User:CN={cn}"
    kind = "deny" if api is not None else cn
    bindings = [
        AclBinding(
            ResourcePattern(rtype, CLUSTER_NAME if rtype is C else "*"),
            AccessControlEntry(principal, "*", AclOperation.ALL, AclPermissionType.ALLOW),
        )
        for rtype in _ALL_ON[kind]
    ]
    for rtype, operation in DENIED.get(api or "", ()):
        bindings.append(
            AclBinding(
                ResourcePattern(rtype, CLUSTER_NAME if rtype is C else "*"),
                AccessControlEntry(principal, "*", operation, AclPermissionType.DENY),
            )
        )
    return bindings


@pytest.fixture(scope="module")
def parity(tmp_path_factory: pytest.TempPathFactory, zk_connect_module: str) -> Iterator[Parity]:
    tmp_path = tmp_path_factory.mktemp("parity")
    ca = CertificateAuthority("odradek-parity-ca")
    cafile = ca.write(tmp_path / "ca.crt")
    _, _, keystore = ca.issue("CN=node-1", ["localhost", "127.0.0.1"]).write(tmp_path, "node-1")
    names = [p for p in PRINCIPALS if p != "deny"] + [f"deny-{api}" for api in DENIED] + ["admin"]
    leaves = {cn: ca.issue(f"CN={cn}") for cn in names}
    contexts: dict[str, ssl.SSLContext] = {}
    for cn, leaf in leaves.items():
        key, crt, _ = leaf.write(tmp_path, cn)
        context = ssl.create_default_context(cafile=str(cafile))
        context.load_cert_chain(str(crt), str(key))
        contexts[cn] = context
    required = SslConfig(
        keystore_location=str(keystore), truststore_location=str(cafile), client_auth="required"
    )
    listeners = ("GRPC", "KAFKA")
    config = NodeConfig(
        node_id=NODE_ID,
        log_dirs=(tmp_path / "data",),
        zookeeper_connect=zk_connect_module,
        listeners=tuple(Listener(name, "127.0.0.1", 0) for name in listeners),
        advertised_listeners=tuple(Listener(name, "localhost", 0) for name in listeners),
        listener_security_protocol_map=(("GRPC", "SSL"), ("KAFKA", "SSL")),
        inter_broker_listener_name="GRPC",
        kafka_listener_names=("KAFKA",),
        ssl=required,
        listener_ssl=(("GRPC", required), ("KAFKA", required)),
        authorizer=AuthorizerConfig(
            authorizer_class_name="kafka.security.authorizer.AclAuthorizer",
            super_users=("User:CN=node-1", "User:CN=admin"),
        ),
        group_coordinator=GroupCoordinatorConfig(
            offsets_topic_num_partitions=1, offsets_topic_replication_factor=1
        ),
        transaction=TransactionConfig(
            transaction_state_log_num_partitions=1,
            transaction_state_log_replication_factor=1,
            transaction_state_log_min_isr=1,
        ),
        zookeeper_session_timeout_ms=6_000,
    )
    node = Node(config)
    node.start()
    channels: dict[str, grpc.Channel] = {}
    try:
        grpc_address = f"localhost:{node.ports['GRPC']}"
        root = ca.cert_pem
        for cn, leaf in leaves.items():
            credentials = grpc.ssl_channel_credentials(
                root_certificates=root, private_key=leaf.key_pem, certificate_chain=leaf.cert_pem
            )
            channels[cn] = grpc.secure_channel(grpc_address, credentials)
        admin = channels["admin"]
        broker = pb_grpc.BrokerStub(admin)
        wait_for(lambda: broker.Metadata(pb.MetadataRequest()).brokers, "a live broker")
        create_topic(admin, TOPIC)
        produced = broker.Produce(
            pb.ProduceRequest(
                acks=-1,
                timeout_ms=TIMEOUT_MS,
                partitions=[pb.ProducePartitionData(topic=TOPIC, partition=0, records=_batch())],
            )
        )
        assert [p.error_code for p in produced.partitions] == [0], produced
        parity = Parity(
            node,
            f"localhost:{node.ports['KAFKA']}",
            grpc_address,
            contexts,
            channels,
            admin,
            itertools.count(),
        )
        parity.commit_as_admin(GROUP)

        def initialised() -> bool:
            # the first FindCoordinator creates __transaction_state; InitProducerId answers
            # once it is loaded
            broker.FindCoordinator(pb.FindCoordinatorRequest(key_type=1, transactional_ids=[TXN]))
            answer = broker.InitProducerId(
                pb.InitProducerIdRequest(
                    transactional_id=TXN,
                    transaction_timeout_ms=60_000,
                    producer_id=-1,
                    producer_epoch=-1,
                )
            )
            return answer.error_code == 0

        wait_for(initialised, f"transactional id {TXN} initialised")
        scram = pb_grpc.AdminStub(admin).AlterUserScramCredentials(_grpc_upsert_user())
        assert [r.error_code for r in scram.results] == [0], scram
        bindings = [
            *(b for p in PRINCIPALS if p != "deny" for b in _acls(p, None)),
            *(b for api in DENIED for b in _acls(f"deny-{api}", api)),
        ]
        created = pb_grpc.AdminStub(admin).CreateAcls(
            pb.CreateAclsRequest(creations=[acl_binding_to_wire(b) for b in bindings])
        )
        assert {r.error_code for r in created.results} == {0}, created

        def acls_loaded() -> bool:
            return len(node_bindings(node)) >= len(bindings)

        wait_for(acls_loaded, "the ACLs in the node's authorizer")
        yield parity
    finally:
        for channel in channels.values():
            channel.close()
        node.stop(controlled=False)


def node_bindings(node: Node) -> list[AclBinding]:
    authorizer = node.authorizer
    assert authorizer is not None
    return authorizer.bindings()


def _batch() -> bytes:
    return make_batch(1)


# -- helpers ----------------------------------------------------------------------------------


def grpc_answer(method: Callable[[Any], Any], request: Any) -> Any:
    """The answer of a gRPC call, or the Kafka error code of a call refused whole."""
    try:
        return method(request)
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.PERMISSION_DENIED:
            raise
        trailers = e.trailing_metadata() or ()
        codes = [int(m.value) for m in trailers if m.key == ERROR_CODE_METADATA_KEY]
        assert codes, f"PERMISSION_DENIED without {ERROR_CODE_METADATA_KEY}: {e.details()}"
        return codes[0]


def timeout() -> i32Timedelta:
    return i32Timedelta.parse(timedelta(milliseconds=TIMEOUT_MS))


def in_roles(value: Any, roles: dict[str, str]) -> Any:
    """``value`` with the case's resource names replaced by their roles (``topic``, ``group``:
    a fresh resource's name differs between the doors); tuples keep their order, lists
    (collections without one) become sorted tuples."""
    if isinstance(value, str):
        return roles.get(value, value)
    if isinstance(value, tuple):
        return tuple(in_roles(v, roles) for v in value)
    if isinstance(value, list):
        return tuple(sorted(in_roles(v, roles) for v in value))
    return value


def kafka_partitions(
    topics: Any, name: str = "name", partitions: str = "partitions", index: str = "partition_index"
) -> list[tuple[str, int, int]]:
    """A Kafka answer's ``(topic, partition, error code)`` triples."""
    return [
        (str(getattr(t, name)), int(getattr(p, index)), int(p.error_code))
        for t in topics
        for p in getattr(t, partitions)
    ]


def grpc_partitions(answer: Any, case: Case) -> list[tuple[str, int, int]]:
    """A gRPC answer's ``(topic, partition, error code)`` triples; a call refused whole counts
    as its code on the request's one partition (partition 0 of the case's topic)."""
    if isinstance(answer, int):
        return [(case.topic, 0, answer)]
    return [(p.topic, p.partition, p.error_code) for p in answer.partitions]


def _grpc_commit(group: str, topic: str) -> pb.OffsetCommitRequest:
    partition = pb.OffsetCommitPartition(partition=0, committed_offset=1, committed_leader_epoch=-1)
    return pb.OffsetCommitRequest(
        group_id=group,
        member_epoch=-1,
        member_id="",
        topics=[pb.OffsetCommitTopic(name=topic, partitions=[partition])],
    )


def _grpc_upsert_user() -> pb.AlterUserScramCredentialsRequest:
    upsertion = pb.ScramCredentialUpsertion(
        name=USER,
        mechanism="SCRAM-SHA-256",
        iterations=4096,
        salt=SALT,
        salted_password=SALTED_PASSWORD,
    )
    return pb.AlterUserScramCredentialsRequest(upsertions=[upsertion])


@dataclass(frozen=True)
class Case:
    """What one request of an API names (some APIs' other names ride in ``topic``: a
    transactional id, a SCRAM user, a broker id)."""

    topic: str = TOPIC
    group: str = GROUP

    def roles(self) -> dict[str, str]:
        return {self.topic: "topic", self.group: "group"}


Resolver = Callable[[Parity], Case]
Door = Callable[[Parity, str, Case], Codes]


@dataclass(frozen=True)
class Api:
    """An API both doors serve: its cases and one function per door, each returning the
    answer's error codes and what they are about."""

    name: str
    cases: dict[str, Resolver]
    kafka: Door
    grpc: Door


def _fixed(topic: str = TOPIC, group: str = GROUP) -> Resolver:
    return lambda parity: Case(topic, group)


TOPIC_CASES: dict[str, Resolver] = {"existing": _fixed(), "missing": _fixed(MISSING_TOPIC)}
GROUP_CASES: dict[str, Resolver] = {"existing": _fixed(), "missing": _fixed(group=MISSING_GROUP)}


# -- the client APIs --------------------------------------------------------------------------


def kafka_produce(parity: Parity, cn: str, case: Case) -> Codes:
    data = produce.PartitionProduceData(index=i32(0), records=Records(_batch()))
    answer = parity.kafka(
        cn,
        produce.ProduceRequest(
            transactional_id=None,
            acks=i16(1),
            timeout=timeout(),
            topic_data=(
                produce.TopicProduceData(name=TopicName(case.topic), partition_data=(data,)),
            ),
        ),
    )
    return kafka_partitions(answer.responses, partitions="partition_responses", index="index")


def grpc_produce(parity: Parity, cn: str, case: Case) -> Codes:
    data = pb.ProducePartitionData(topic=case.topic, partition=0, records=_batch())
    request = pb.ProduceRequest(acks=1, timeout_ms=TIMEOUT_MS, partitions=[data])
    return grpc_partitions(grpc_answer(parity.broker(cn).Produce, request), case)


# Fetch: the request's error code and each partition's
def kafka_fetch(parity: Parity, cn: str, case: Case) -> Codes:
    answer = parity.kafka(cn, fetch_request(case.topic, 0))
    return (int(answer.error_code), kafka_partitions(answer.responses, name="topic"))


def grpc_fetch(parity: Parity, cn: str, case: Case) -> Codes:
    partition = pb.FetchPartition(
        topic=case.topic, partition=0, fetch_offset=0, partition_max_bytes=1 << 20
    )
    request = pb.FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, partitions=[partition])
    answer = grpc_answer(parity.broker(cn).Fetch, request)
    code = 0 if isinstance(answer, int) else answer.error_code
    return (code, grpc_partitions(answer, case))


def kafka_list_offsets(parity: Parity, cn: str, case: Case) -> Codes:
    partition = list_offsets.ListOffsetsPartition(
        partition_index=i32(0), current_leader_epoch=i32(-1), timestamp=i64(-1)
    )
    topic = list_offsets.ListOffsetsTopic(name=TopicName(case.topic), partitions=(partition,))
    answer = parity.kafka(
        cn,
        list_offsets.ListOffsetsRequest(
            replica_id=BrokerId(-1), isolation_level=i8(0), topics=(topic,)
        ),
    )
    return kafka_partitions(answer.topics)


def grpc_list_offsets(parity: Parity, cn: str, case: Case) -> Codes:
    partition = pb.ListOffsetsPartition(topic=case.topic, partition=0, timestamp=-1)
    request = pb.ListOffsetsRequest(partitions=[partition])
    return grpc_partitions(grpc_answer(parity.broker(cn).ListOffsets, request), case)


# Metadata: a named topic's error code; all topics ("*"): parity-topic's, if it is listed (the
# offsets topic and other cells' fresh topics left out)
def kafka_metadata(parity: Parity, cn: str, case: Case) -> Codes:
    every = case.topic == "*"
    named = (MetadataRequestTopic(topic_id=None, name=TopicName(case.topic)),)
    answer = parity.kafka(
        cn,
        MetadataRequest(
            topics=None if every else named,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
    )
    wanted = TOPIC if every else case.topic
    return [(t.name, int(t.error_code)) for t in answer.topics if t.name == wanted]


def grpc_metadata(parity: Parity, cn: str, case: Case) -> Codes:
    every = case.topic == "*"
    request = pb.MetadataRequest(all_topics=every, topics=[] if every else [case.topic])
    answer = grpc_answer(parity.broker(cn).Metadata, request)
    wanted = TOPIC if every else case.topic
    if isinstance(answer, int):
        return [(wanted, answer)]
    return [(t.name, t.error_code) for t in answer.topics if t.name == wanted]


# DeleteRecords: up to offset 0, the log start offset already (nothing is deleted)
def kafka_delete_records(parity: Parity, cn: str, case: Case) -> Codes:
    partition = delete_records.DeleteRecordsPartition(partition_index=i32(0), offset=i64(0))
    topic = delete_records.DeleteRecordsTopic(name=TopicName(case.topic), partitions=(partition,))
    answer = parity.kafka(
        cn, delete_records.DeleteRecordsRequest(topics=(topic,), timeout=timeout())
    )
    return kafka_partitions(answer.topics)


def grpc_delete_records(parity: Parity, cn: str, case: Case) -> Codes:
    partition = pb.DeleteRecordsPartition(topic=case.topic, partition=0, offset=0)
    request = pb.DeleteRecordsRequest(partitions=[partition], timeout_ms=TIMEOUT_MS)
    return grpc_partitions(grpc_answer(parity.broker(cn).DeleteRecords, request), case)


# InitProducerId: an idempotent producer's (topic "") and a transactional one's (topic: the
# transactional id)
def kafka_init_producer_id(parity: Parity, cn: str, case: Case) -> Codes:
    answer = parity.kafka(
        cn,
        InitProducerIdRequest(
            transactional_id=TransactionalId(case.topic) if case.topic else None,
            transaction_timeout=i32Timedelta.parse(timedelta(seconds=60)),
        ),
    )
    return (int(answer.error_code),)


def grpc_init_producer_id(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.InitProducerIdRequest(
        transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1
    )
    if case.topic:
        request.transactional_id = case.topic
    answer = grpc_answer(parity.broker(cn).InitProducerId, request)
    return (answer if isinstance(answer, int) else answer.error_code,)


# -- the group APIs ---------------------------------------------------------------------------


# FindCoordinator: Kafka's v0-v2 name one group, or one transactional id (key_type 1: the
# case's topic, with no group)
SHARE_KEY = "parity-not-a-share-partition-key"
"""FindCoordinator key type 2 (SHARE): CLUSTER_ACTION, else 31 (Kafka's getCoordinator); a key
that is not group:topicId:partition is INVALID_REQUEST (42) and creates nothing, so that every
cell answers the same whatever ran before it."""
FIND_COORDINATOR_CASES: dict[str, Resolver] = {
    **GROUP_CASES,
    "transactional": _fixed(TXN, ""),
    "share": _fixed(SHARE_KEY, ""),
}


def kafka_find_coordinator(parity: Parity, cn: str, case: Case) -> Codes:
    if case.topic == SHARE_KEY:
        share = FindCoordinatorV6(key_type=i8(2), coordinator_keys=(SHARE_KEY,))
        return [(c.key, int(c.error_code)) for c in parity.kafka(cn, share).coordinators]
    if not case.group:
        answer = parity.kafka(cn, FindCoordinatorRequest(key=case.topic, key_type=i8(1)))
        return [(case.topic, int(answer.error_code))]
    answer = parity.kafka(cn, FindCoordinatorRequest(key=case.group, key_type=i8(0)))
    return [(case.group, int(answer.error_code))]


def grpc_find_coordinator(parity: Parity, cn: str, case: Case) -> Codes:
    if case.topic == SHARE_KEY:
        share = pb.FindCoordinatorRequest(key_type=2, share_partition_keys=[SHARE_KEY])
        return [
            (c.key, c.error_code) for c in parity.broker(cn).FindCoordinator(share).coordinators
        ]
    if not case.group:
        txn = pb.FindCoordinatorRequest(key_type=1, transactional_ids=[case.topic])
        return [(c.key, c.error_code) for c in parity.broker(cn).FindCoordinator(txn).coordinators]
    request = pb.FindCoordinatorRequest(group_ids=[case.group])
    answer = grpc_answer(parity.broker(cn).FindCoordinator, request)
    if isinstance(answer, int):
        return [(case.group, answer)]
    return [(c.key, c.error_code) for c in answer.coordinators]


# ConsumerGroupHeartbeat: an unknown member's heartbeat (epoch 1), which changes nothing (a
# join, epoch 0, would add a member to the group)
def kafka_heartbeat(parity: Parity, cn: str, case: Case) -> Codes:
    answer = parity.kafka(
        cn,
        ConsumerGroupHeartbeatRequest(
            group_id=GroupId(case.group),
            member_id="parity-nobody",
            member_epoch=i32(1),
            instance_id=None,
            rack_id=None,
            rebalance_timeout=i32Timedelta.parse(timedelta(seconds=30)),
            subscribed_topic_names=None,
            server_assignor=None,
            topic_partitions=None,
        ),
    )
    return (int(answer.error_code),)


def grpc_heartbeat(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.ConsumerGroupHeartbeatRequest(
        group_id=case.group, member_id="parity-nobody", member_epoch=1, rebalance_timeout_ms=30_000
    )
    answer = grpc_answer(parity.broker(cn).ConsumerGroupHeartbeat, request)
    return (answer if isinstance(answer, int) else answer.error_code,)


# OffsetCommit: a simple consumer's commit (epoch -1) of offset 1, the offset the super user
# committed; a missing group is a new name for each door's call (a commit makes the group)
OFFSET_COMMIT_CASES: dict[str, Resolver] = {
    "existing": _fixed(),
    "missing-group": lambda parity: Case(group=f"parity-new-group-{next(parity.fresh)}"),
    "missing-topic": _fixed(MISSING_TOPIC),
}


def kafka_offset_commit(parity: Parity, cn: str, case: Case) -> Codes:
    partition = offset_commit.OffsetCommitRequestPartition(
        partition_index=i32(0),
        committed_offset=i64(1),
        committed_leader_epoch=i32(-1),
        committed_metadata="",
    )
    topic = offset_commit.OffsetCommitRequestTopic(
        name=TopicName(case.topic), partitions=(partition,)
    )
    answer = parity.kafka(
        cn,
        offset_commit.OffsetCommitRequest(
            group_id=GroupId(case.group),
            generation_id_or_member_epoch=i32(-1),
            member_id="",
            group_instance_id=None,
            topics=(topic,),
        ),
    )
    return kafka_partitions(answer.topics)


def grpc_offset_commit(parity: Parity, cn: str, case: Case) -> Codes:
    request = _grpc_commit(case.group, case.topic)
    return grpc_partitions(grpc_answer(parity.broker(cn).OffsetCommit, request), case)


# OffsetFetch and OffsetDelete: the group's (the request's) error code, and each partition's
# when it is 0 (Kafka answers a refused or failed group without partitions; gRPC with a
# status or an error code). OffsetFetch of all topics ("*", Kafka's null topics): parity-topic's
OFFSET_FETCH_CASES: dict[str, Resolver] = {
    "existing": _fixed(),
    "missing-group": _fixed(group=MISSING_GROUP),
    "missing-topic": _fixed(MISSING_TOPIC),
    "all": _fixed("*"),
}


def _group_codes(code: int, partitions: list[tuple[str, int, int]], every: bool) -> Codes:
    if every:
        partitions = [p for p in partitions if p[0] == TOPIC]
    return (code, partitions if code == 0 else [])


def kafka_offset_fetch(parity: Parity, cn: str, case: Case) -> Codes:
    every = case.topic == "*"
    topic = offset_fetch.OffsetFetchRequestTopics(
        name=TopicName(case.topic), partition_indexes=(i32(0),)
    )
    group = offset_fetch.OffsetFetchRequestGroup(
        group_id=GroupId(case.group), topics=None if every else (topic,)
    )
    answer = parity.kafka(
        cn, offset_fetch.OffsetFetchRequest(groups=(group,), require_stable=False)
    )
    (fetched,) = answer.groups
    return _group_codes(int(fetched.error_code), kafka_partitions(fetched.topics), every)


def grpc_offset_fetch(parity: Parity, cn: str, case: Case) -> Codes:
    every = case.topic == "*"
    request = pb.OffsetFetchRequest(
        group_id=case.group, member_id="", member_epoch=-1, all_topics=every
    )
    if not every:
        request.topics.append(pb.OffsetFetchTopic(name=case.topic, partitions=[0]))
    answer = grpc_answer(parity.broker(cn).OffsetFetch, request)
    if isinstance(answer, int):
        return (answer, ())
    return _group_codes(answer.error_code, grpc_partitions(answer, case), every)


# OffsetDelete: an existing group is a fresh one for each door's call (its offsets deleted)
OFFSET_DELETE_CASES: dict[str, Resolver] = {
    "existing": lambda parity: Case(group=parity.fresh_group()),
    "missing-group": _fixed(group=MISSING_GROUP),
    "missing-topic": lambda parity: Case(MISSING_TOPIC, parity.fresh_group()),
}


def kafka_offset_delete(parity: Parity, cn: str, case: Case) -> Codes:
    partition = offset_delete.OffsetDeleteRequestPartition(partition_index=i32(0))
    topic = offset_delete.OffsetDeleteRequestTopic(
        name=TopicName(case.topic), partitions=(partition,)
    )
    answer = parity.kafka(
        cn, offset_delete.OffsetDeleteRequest(group_id=GroupId(case.group), topics=(topic,))
    )
    return _group_codes(int(answer.error_code), kafka_partitions(answer.topics), False)


def grpc_offset_delete(parity: Parity, cn: str, case: Case) -> Codes:
    topic = pb.OffsetFetchTopic(name=case.topic, partitions=[0])
    request = pb.OffsetDeleteRequest(group_id=case.group, topics=[topic])
    answer = grpc_answer(parity.broker(cn).OffsetDelete, request)
    if isinstance(answer, int):
        return (answer, ())
    return _group_codes(answer.error_code, grpc_partitions(answer, case), False)


# ListGroups: the error code and whether parity-group is listed (other cells' groups left out)
def kafka_list_groups(parity: Parity, cn: str, case: Case) -> Codes:
    answer = parity.kafka(cn, ListGroupsRequest(states_filter=(), types_filter=()))
    return (int(answer.error_code), any(g.group_id == case.group for g in answer.groups))


def grpc_list_groups(parity: Parity, cn: str, case: Case) -> Codes:
    answer = grpc_answer(parity.broker(cn).ListGroups, pb.ListGroupsRequest())
    if isinstance(answer, int):
        return (answer, False)
    return (answer.error_code, any(g.group_id == case.group for g in answer.groups))


def kafka_describe_groups(parity: Parity, cn: str, case: Case) -> Codes:
    """A group described as librdkafka's ``describe_consumer_groups`` does: ConsumerGroupDescribe,
    and for a group that is not a KIP-848 consumer group (GROUP_ID_NOT_FOUND: a classic group,
    or one known by its committed offsets only) DescribeGroups, whose ``Dead`` state is an
    unknown group."""
    request = ConsumerGroupDescribeRequest(
        group_ids=(GroupId(case.group),), include_authorized_operations=False
    )
    answer = parity.kafka(cn, request)
    out = []
    for g in answer.groups:
        code = int(g.error_code)
        if code == GROUP_ID_NOT_FOUND:
            described = parity.kafka(
                cn, DescribeGroupsRequest(groups=(g.group_id,), include_authorized_operations=False)
            )
            (classic,) = described.groups
            code = int(classic.error_code)
            if code == 0 and classic.group_state == "Dead":
                code = GROUP_ID_NOT_FOUND
        out.append((g.group_id, code))
    return out


def grpc_describe_groups(parity: Parity, cn: str, case: Case) -> Codes:
    """gRPC's ConsumerGroupDescribe describes both kinds of group (Kafka's
    ConsumerGroupDescribe and DescribeGroups in one), as a Kafka client's describe does."""
    request = pb.ConsumerGroupDescribeRequest(group_ids=[case.group])
    answer = grpc_answer(parity.broker(cn).ConsumerGroupDescribe, request)
    if isinstance(answer, int):
        return [(case.group, answer)]
    return [(g.group_id, g.error_code) for g in answer.groups]


# ShareGroupHeartbeat: an unknown member's heartbeat (epoch 1) naming the case's topic, which
# changes nothing (the existing group has committed offsets: not a share group; the missing
# one is unknown)
def kafka_share_heartbeat(parity: Parity, cn: str, case: Case) -> Codes:
    answer = parity.kafka(
        cn,
        ShareGroupHeartbeatRequest(
            group_id=GroupId(case.group),
            member_id="parity-nobody",
            member_epoch=i32(1),
            subscribed_topic_names=(TopicName(case.topic),),
        ),
    )
    return (int(answer.error_code),)


def grpc_share_heartbeat(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.ShareGroupHeartbeatRequest(
        group_id=case.group,
        member_id="parity-nobody",
        member_epoch=1,
        has_subscribed_topic_names=True,
        subscribed_topic_names=[case.topic],
    )
    answer = grpc_answer(parity.broker(cn).ShareGroupHeartbeat, request)
    return (answer if isinstance(answer, int) else answer.error_code,)


def kafka_share_describe(parity: Parity, cn: str, case: Case) -> Codes:
    request = ShareGroupDescribeRequest(
        group_ids=(GroupId(case.group),), include_authorized_operations=False
    )
    return [(g.group_id, int(g.error_code)) for g in parity.kafka(cn, request).groups]


def grpc_share_describe(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.ShareGroupDescribeRequest(group_ids=[case.group])
    answer = grpc_answer(parity.broker(cn).ShareGroupDescribe, request)
    if isinstance(answer, int):
        return [(case.group, answer)]
    return [(g.group_id, g.error_code) for g in answer.groups]


# DeleteGroups: an existing group is a fresh one for each door's call
def kafka_delete_groups(parity: Parity, cn: str, case: Case) -> Codes:
    answer = parity.kafka(cn, DeleteGroupsRequest(groups_names=(GroupId(case.group),)))
    return [(r.group_id, int(r.error_code)) for r in answer.results]


def grpc_delete_groups(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.DeleteGroupsRequest(group_ids=[case.group])
    answer = grpc_answer(parity.broker(cn).DeleteGroups, request)
    if isinstance(answer, int):
        return [(case.group, answer)]
    return [(r.group_id, r.error_code) for r in answer.results]


# -- the admin APIs ---------------------------------------------------------------------------


def grpc_topics(answer: Any, case: Case, results: str = "topics") -> Codes:
    """A gRPC answer's ``(topic, error code)`` pairs (a call refused whole: the case's topic
    with its code)."""
    if isinstance(answer, int):
        return [(case.topic, answer)]
    return [(t.name, t.error_code) for t in getattr(answer, results)]


def kafka_create_topics(parity: Parity, cn: str, case: Case) -> Codes:
    topic = create_topics.CreatableTopic(
        name=TopicName(case.topic),
        num_partitions=i32(1),
        replication_factor=i16(1),
        assignments=(),
        configs=(),
    )
    request = create_topics.CreateTopicsRequest(
        topics=(topic,), timeout=timeout(), validate_only=True
    )
    return [(t.name, int(t.error_code)) for t in parity.kafka(cn, request).topics]


def grpc_create_topics(parity: Parity, cn: str, case: Case) -> Codes:
    topic = pb.CreatableTopic(name=case.topic, num_partitions=1, replication_factor=1)
    request = pb.CreateTopicsRequest(topics=[topic], timeout_ms=TIMEOUT_MS, validate_only=True)
    return grpc_topics(grpc_answer(parity.admin_stub(cn).CreateTopics, request), case)


# DeleteTopics: an existing topic is a fresh one for each door's call
def kafka_delete_topics(parity: Parity, cn: str, case: Case) -> Codes:
    request = DeleteTopicsRequest(topic_names=(TopicName(case.topic),), timeout=timeout())
    return [(t.name, int(t.error_code)) for t in parity.kafka(cn, request).responses]


def grpc_delete_topics(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.DeleteTopicsRequest(names=[case.topic], timeout_ms=TIMEOUT_MS)
    return grpc_topics(grpc_answer(parity.admin_stub(cn).DeleteTopics, request), case)


def kafka_create_partitions(parity: Parity, cn: str, case: Case) -> Codes:
    topic = create_partitions.CreatePartitionsTopic(
        name=TopicName(case.topic), count=i32(2), assignments=None
    )
    request = create_partitions.CreatePartitionsRequest(
        topics=(topic,), timeout=timeout(), validate_only=True
    )
    return [(t.name, int(t.error_code)) for t in parity.kafka(cn, request).results]


def grpc_create_partitions(parity: Parity, cn: str, case: Case) -> Codes:
    topic = pb.CreatePartitionsTopic(name=case.topic, count=2)
    request = pb.CreatePartitionsRequest(topics=[topic], timeout_ms=TIMEOUT_MS, validate_only=True)
    return grpc_topics(grpc_answer(parity.admin_stub(cn).CreatePartitions, request), case)


# DescribeConfigs: a topic (gRPC's `topics`) or this broker (topic: its id; gRPC's typed
# `resources`)
CONFIG_CASES: dict[str, Resolver] = {**TOPIC_CASES, "broker": _fixed(str(NODE_ID))}
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4


def kafka_describe_configs(parity: Parity, cn: str, case: Case) -> Codes:
    broker = case.topic == str(NODE_ID)
    resource = describe_configs.DescribeConfigsResource(
        resource_type=i8(BROKER_RESOURCE if broker else TOPIC_RESOURCE),
        resource_name=case.topic,
        configuration_keys=None,
    )
    request = describe_configs.DescribeConfigsRequest(resources=(resource,), include_synonyms=False)
    return [(r.resource_name, int(r.error_code)) for r in parity.kafka(cn, request).results]


def grpc_describe_configs(parity: Parity, cn: str, case: Case) -> Codes:
    if case.topic == str(NODE_ID):
        broker = pb.ConfigResource(type=pb.CONFIG_RESOURCE_BROKER, name=case.topic)
        request = pb.DescribeConfigsRequest(resources=[broker])
    else:
        request = pb.DescribeConfigsRequest(topics=[case.topic])
    answer = grpc_answer(parity.admin_stub(cn).DescribeConfigs, request)
    if isinstance(answer, int):
        return [(case.topic, answer)]
    return [
        *((t.name, t.error_code) for t in answer.topics),
        *((r.resource.name, r.error_code) for r in answer.resources),
    ]


# AlterConfigs: gRPC's is incremental, so it is compared with Kafka's IncrementalAlterConfigs
# (44); both validate only
RETENTION = ("retention.ms", "604800000")


def kafka_alter_configs(parity: Parity, cn: str, case: Case) -> Codes:
    config = alter_configs.AlterableConfig(
        name=RETENTION[0], config_operation=i8(0), value=RETENTION[1]
    )
    resource = alter_configs.AlterConfigsResource(
        resource_type=i8(TOPIC_RESOURCE), resource_name=case.topic, configs=(config,)
    )
    request = alter_configs.IncrementalAlterConfigsRequest(
        resources=(resource,), validate_only=True
    )
    return [(r.resource_name, int(r.error_code)) for r in parity.kafka(cn, request).responses]


def grpc_alter_configs(parity: Parity, cn: str, case: Case) -> Codes:
    topic = pb.AlterableTopicConfig(name=case.topic, set=dict([RETENTION]))
    request = pb.AlterConfigsRequest(topics=[topic], validate_only=True)
    return grpc_topics(grpc_answer(parity.admin_stub(cn).AlterConfigs, request), case)


# ElectLeaders: a preferred election of partition 0 (led by its preferred leader already)
def kafka_elect_leaders(parity: Parity, cn: str, case: Case) -> Codes:
    partitions = elect_leaders.TopicPartitions(topic=TopicName(case.topic), partitions=(i32(0),))
    request = elect_leaders.ElectLeadersRequest(
        election_type=i8(0), topic_partitions=(partitions,), timeout=timeout()
    )
    answer = parity.kafka(cn, request)
    results = kafka_partitions(
        answer.replica_election_results,
        name="topic",
        partitions="partition_result",
        index="partition_id",
    )
    return (int(answer.error_code), results)


def grpc_elect_leaders(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.ElectLeadersRequest(
        election_type=pb.PREFERRED,
        partitions=[pb.TopicPartition(topic=case.topic, partition=0)],
        timeout_ms=TIMEOUT_MS,
    )
    answer = grpc_answer(parity.admin_stub(cn).ElectLeaders, request)
    code = answer if isinstance(answer, int) else answer.error_code
    return (code, grpc_partitions(answer, case))


# ListPartitionReassignments: its one error code (no partition is being reassigned)
def kafka_list_reassignments(parity: Parity, cn: str, case: Case) -> Codes:
    topic = list_reassign.ListPartitionReassignmentsTopics(
        name=TopicName(case.topic), partition_indexes=(i32(0),)
    )
    request = list_reassign.ListPartitionReassignmentsRequest(timeout=timeout(), topics=(topic,))
    return (int(parity.kafka(cn, request).error_code),)


def grpc_list_reassignments(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.ListPartitionReassignmentsRequest(
        partitions=[pb.TopicPartition(topic=case.topic, partition=0)]
    )
    answer = grpc_answer(parity.admin_stub(cn).ListPartitionReassignments, request)
    return (answer if isinstance(answer, int) else answer.error_code,)


# AlterPartitionReassignments: cancelling partition 0's (none is in progress)
def kafka_alter_reassignments(parity: Parity, cn: str, case: Case) -> Codes:
    partition = alter_reassign.ReassignablePartition(partition_index=i32(0), replicas=None)
    topic = alter_reassign.ReassignableTopic(name=TopicName(case.topic), partitions=(partition,))
    request = alter_reassign.AlterPartitionReassignmentsRequest(timeout=timeout(), topics=(topic,))
    answer = parity.kafka(cn, request)
    return (int(answer.error_code), kafka_partitions(answer.responses))


def grpc_alter_reassignments(parity: Parity, cn: str, case: Case) -> Codes:
    partition = pb.ReassignablePartition(topic=case.topic, partition=0, cancel=True)
    request = pb.AlterPartitionReassignmentsRequest(partitions=[partition], timeout_ms=TIMEOUT_MS)
    answer = grpc_answer(parity.admin_stub(cn).AlterPartitionReassignments, request)
    code = answer if isinstance(answer, int) else answer.error_code
    return (code, grpc_partitions(answer, case))


# The ACL APIs name the case's topic in their binding or filter: an ACL of a principal no test
# uses (the same ACL created again and again), and a filter of one nobody has (deletes nothing)
LITERAL, ANY = 3, 1
TOPIC_TYPE, READ, ALLOW = int(ResourceType.TOPIC), int(AclOperation.READ), 3
NOBODY_ELSE = "User:parity-nobody-else"


def _grpc_codes(answer: Any, results: str) -> Codes:
    if isinstance(answer, int):
        return (answer,)
    return tuple(r.error_code for r in getattr(answer, results))


def kafka_create_acls(parity: Parity, cn: str, case: Case) -> Codes:
    creation = AclCreation(
        resource_type=i8(TOPIC_TYPE),
        resource_name=case.topic,
        resource_pattern_type=i8(LITERAL),
        principal=NOBODY,
        host="*",
        operation=i8(READ),
        permission_type=i8(ALLOW),
    )
    answer = parity.kafka(cn, CreateAclsRequest(creations=(creation,)))
    return tuple(int(r.error_code) for r in answer.results)


def grpc_create_acls(parity: Parity, cn: str, case: Case) -> Codes:
    binding = pb.AclBinding(
        resource_type=TOPIC_TYPE,
        resource_name=case.topic,
        pattern_type=LITERAL,
        principal=NOBODY,
        host="*",
        operation=READ,
        permission_type=ALLOW,
    )
    request = pb.CreateAclsRequest(creations=[binding])
    return _grpc_codes(grpc_answer(parity.admin_stub(cn).CreateAcls, request), "results")


def kafka_describe_acls(parity: Parity, cn: str, case: Case) -> Codes:
    request = DescribeAclsRequest(
        resource_type_filter=i8(TOPIC_TYPE),
        resource_name_filter=case.topic,
        pattern_type_filter=i8(ANY),
        principal_filter=None,
        host_filter=None,
        operation=i8(ANY),
        permission_type=i8(ANY),
    )
    return (int(parity.kafka(cn, request).error_code),)


def grpc_describe_acls(parity: Parity, cn: str, case: Case) -> Codes:
    acl_filter = pb.AclFilter(
        resource_type=TOPIC_TYPE,
        resource_name=case.topic,
        pattern_type=ANY,
        operation=ANY,
        permission_type=ANY,
    )
    request = pb.DescribeAclsRequest(filter=acl_filter)
    answer = grpc_answer(parity.admin_stub(cn).DescribeAcls, request)
    return (answer if isinstance(answer, int) else answer.error_code,)


def kafka_delete_acls(parity: Parity, cn: str, case: Case) -> Codes:
    acl_filter = DeleteAclsFilter(
        resource_type_filter=i8(TOPIC_TYPE),
        resource_name_filter=case.topic,
        pattern_type_filter=i8(LITERAL),
        principal_filter=NOBODY_ELSE,
        host_filter=None,
        operation=i8(ANY),
        permission_type=i8(ANY),
    )
    answer = parity.kafka(cn, DeleteAclsRequest(filters=(acl_filter,)))
    return tuple(int(r.error_code) for r in answer.filter_results)


def grpc_delete_acls(parity: Parity, cn: str, case: Case) -> Codes:
    acl_filter = pb.AclFilter(
        resource_type=TOPIC_TYPE,
        resource_name=case.topic,
        pattern_type=LITERAL,
        principal=NOBODY_ELSE,
        operation=ANY,
        permission_type=ANY,
    )
    request = pb.DeleteAclsRequest(filters=[acl_filter])
    return _grpc_codes(grpc_answer(parity.admin_stub(cn).DeleteAcls, request), "filter_results")


# The SCRAM APIs: the case's topic is the user (one with credentials, or one without)
USER_CASES: dict[str, Resolver] = {"existing": _fixed(USER), "missing": _fixed(MISSING_USER)}


def kafka_describe_scram(parity: Parity, cn: str, case: Case) -> Codes:
    request = describe_scram.DescribeUserScramCredentialsRequest(
        users=(describe_scram.UserName(name=case.topic),)
    )
    answer = parity.kafka(cn, request)
    return (int(answer.error_code), [(r.user, int(r.error_code)) for r in answer.results])


def grpc_describe_scram(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.DescribeUserScramCredentialsRequest(users=[case.topic])
    answer = grpc_answer(parity.admin_stub(cn).DescribeUserScramCredentials, request)
    if isinstance(answer, int):
        return (answer, ())
    return (answer.error_code, [(r.user, r.error_code) for r in answer.results])


# AlterUserScramCredentials: the existing user's credential upserted as it is; the missing
# user's deleted (there is none)
def kafka_alter_scram(parity: Parity, cn: str, case: Case) -> Codes:
    upsertion = alter_scram.ScramCredentialUpsertion(
        name=case.topic,
        mechanism=i8(SCRAM_SHA_256),
        iterations=i32(4096),
        salt=SALT,
        salted_password=SALTED_PASSWORD,
    )
    deletion = alter_scram.ScramCredentialDeletion(name=case.topic, mechanism=i8(SCRAM_SHA_256))
    existing = case.topic == USER
    request = alter_scram.AlterUserScramCredentialsRequest(
        deletions=() if existing else (deletion,), upsertions=(upsertion,) if existing else ()
    )
    return [(r.user, int(r.error_code)) for r in parity.kafka(cn, request).results]


def grpc_alter_scram(parity: Parity, cn: str, case: Case) -> Codes:
    deletion = pb.ScramCredentialDeletion(name=case.topic, mechanism="SCRAM-SHA-256")
    request = (
        _grpc_upsert_user()
        if case.topic == USER
        else pb.AlterUserScramCredentialsRequest(deletions=[deletion])
    )
    answer = grpc_answer(parity.admin_stub(cn).AlterUserScramCredentials, request)
    if isinstance(answer, int):
        return [(case.topic, answer)]
    return [(r.user, r.error_code) for r in answer.results]


# DescribeLogDirs: Kafka's v1-v2 carry no request-level error (v3 added it; a caller without
# DESCRIBE on the cluster is answered no log directory), so what is compared is each log
# directory's error code and the partitions it lists; gRPC's request-level code is left out
def kafka_describe_log_dirs(parity: Parity, cn: str, case: Case) -> Codes:
    topic = describe_log_dirs.DescribableLogDirTopic(
        topic=TopicName(case.topic), partitions=(i32(0),)
    )
    answer = parity.kafka(cn, describe_log_dirs.DescribeLogDirsRequest(topics=(topic,)))
    return [
        (
            int(d.error_code),
            [(t.name, int(p.partition_index)) for t in d.topics for p in t.partitions],
        )
        for d in answer.results
    ]


def grpc_describe_log_dirs(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.DescribeLogDirsRequest(
        partitions=[pb.TopicPartition(topic=case.topic, partition=0)]
    )
    answer = grpc_answer(parity.admin_stub(cn).DescribeLogDirs, request)
    if isinstance(answer, int):
        return []
    return [
        (d.error_code, [(t.name, p.partition) for t in d.topics for p in t.partitions])
        for d in answer.log_dirs
    ]


# DescribeProducers: each partition's error code (the node hosts parity-topic's one replica)
def kafka_describe_producers(parity: Parity, cn: str, case: Case) -> Codes:
    topic = describe_producers.TopicRequest(name=TopicName(case.topic), partition_indexes=(i32(0),))
    answer = parity.kafka(cn, describe_producers.DescribeProducersRequest(topics=(topic,)))
    return kafka_partitions(answer.topics)


def grpc_describe_producers(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.DescribeProducersRequest(
        partitions=[pb.TopicPartition(topic=case.topic, partition=0)]
    )
    return grpc_partitions(grpc_answer(parity.admin_stub(cn).DescribeProducers, request), case)


# -- the transactional APIs -------------------------------------------------------------------


# The producer id and epoch are none the coordinator knows (-1): a caller the checks let through
# gets the coordinator's refusal, the same through both doors, and nothing changes.
def kafka_add_partitions(parity: Parity, cn: str, case: Case) -> Codes:
    topic = add_partitions.AddPartitionsToTxnTopic(name=TopicName(case.topic), partitions=(i32(0),))
    answer = parity.kafka(
        cn,
        add_partitions.AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=TransactionalId(TXN),
            v3_and_below_producer_id=ProducerId(-1),
            v3_and_below_producer_epoch=i16(-1),
            v3_and_below_topics=(topic,),
        ),
    )
    return [
        (str(t.name), int(p.partition_index), int(p.partition_error_code))
        for t in answer.results_by_topic_v3_and_below
        for p in t.results_by_partition
    ]


def grpc_add_partitions(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.AddPartitionsToTxnRequest(
        transactional_id=TXN,
        producer_id=-1,
        producer_epoch=-1,
        partitions=[pb.TopicPartition(topic=case.topic, partition=0)],
    )
    answer = parity.broker(cn).AddPartitionsToTxn(request)
    return [(r.topic, r.partition, r.error_code) for r in answer.results]


def kafka_add_offsets(parity: Parity, cn: str, case: Case) -> Codes:
    answer = parity.kafka(
        cn,
        AddOffsetsToTxnRequest(
            transactional_id=TransactionalId(TXN),
            producer_id=ProducerId(-1),
            producer_epoch=i16(-1),
            group_id=GroupId(case.group),
        ),
    )
    return (int(answer.error_code),)


def grpc_add_offsets(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.AddOffsetsToTxnRequest(
        transactional_id=TXN, producer_id=-1, producer_epoch=-1, group_id=case.group
    )
    return (parity.broker(cn).AddOffsetsToTxn(request).error_code,)


# TxnOffsetCommit: the transactional id's WRITE, the group's READ, then each topic's READ and
# existence (an unknown producer then fails the coordinator's write alike through both doors)
def kafka_txn_offset_commit(parity: Parity, cn: str, case: Case) -> Codes:
    partition = txn_offset_commit.TxnOffsetCommitRequestPartition(
        partition_index=i32(0),
        committed_offset=i64(1),
        committed_leader_epoch=i32(-1),
        committed_metadata="",
    )
    answer = parity.kafka(
        cn,
        txn_offset_commit.TxnOffsetCommitRequest(
            transactional_id=TransactionalId(TXN),
            group_id=GroupId(case.group),
            producer_id=ProducerId(-1),
            producer_epoch=i16(-1),
            generation_id=i32(-1),
            member_id="",
            group_instance_id=None,
            topics=(
                txn_offset_commit.TxnOffsetCommitRequestTopic(
                    name=TopicName(case.topic), partitions=(partition,)
                ),
            ),
        ),
    )
    return kafka_partitions(answer.topics)


def grpc_txn_offset_commit(parity: Parity, cn: str, case: Case) -> Codes:
    partition = pb.OffsetCommitPartition(partition=0, committed_offset=1, committed_leader_epoch=-1)
    request = pb.TxnOffsetCommitRequest(
        transactional_id=TXN,
        group_id=case.group,
        producer_id=-1,
        producer_epoch=-1,
        generation_id=-1,
        topics=[pb.OffsetCommitTopic(name=case.topic, partitions=[partition])],
    )
    return grpc_partitions(grpc_answer(parity.broker(cn).TxnOffsetCommit, request), case)


# EndTxn, DescribeTransactions: the transactional id rides in the case's topic
def kafka_end_txn(parity: Parity, cn: str, case: Case) -> Codes:
    answer = parity.kafka(
        cn,
        EndTxnRequest(
            transactional_id=TransactionalId(case.topic),
            producer_id=ProducerId(-1),
            producer_epoch=i16(-1),
            committed=False,
        ),
    )
    return (int(answer.error_code),)


def grpc_end_txn(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.EndTxnRequest(
        transactional_id=case.topic, producer_id=-1, producer_epoch=-1, committed=False
    )
    return (parity.broker(cn).EndTxn(request).error_code,)


# DescribeTransactions: read by hand, as kio refuses Kafka's -1 start time of an id without an
# open transaction
def kafka_describe_transactions(parity: Parity, cn: str, case: Case) -> Codes:
    answer = call_bytes(
        parity.kafka_address,
        DescribeTransactionsRequest(transactional_ids=(TransactionalId(case.topic),)),
        parity.contexts[cn],
    )
    # correlation id, no tagged fields, throttle time, one state (compact array length 2):
    # its error code and compact transactional id
    assert answer[4:5] == b"\x00" and answer[9:10] == b"\x02", answer
    (code,) = struct.unpack(">h", answer[10:12])
    length = answer[12] - 1
    return [(answer[13 : 13 + length].decode(), code)]


def grpc_describe_transactions(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.DescribeTransactionsRequest(transactional_ids=[case.topic])
    answer = parity.broker(cn).DescribeTransactions(request)
    return [(t.transactional_id, t.error_code) for t in answer.transaction_states]


# ListTransactions: the error code and the ids listed (those the caller may DESCRIBE)
def kafka_list_transactions(parity: Parity, cn: str, case: Case) -> Codes:
    answer = parity.kafka(cn, ListTransactionsRequest(duration_filter=i64(-1)))
    return (int(answer.error_code), [str(t.transactional_id) for t in answer.transaction_states])


def grpc_list_transactions(parity: Parity, cn: str, case: Case) -> Codes:
    answer = parity.broker(cn).ListTransactions(pb.ListTransactionsRequest(duration_filter_ms=-1))
    return (answer.error_code, [t.transactional_id for t in answer.transaction_states])


# -- the table --------------------------------------------------------------------------------


# ShareFetch / ShareAcknowledge (KIP-932): the request's error code and each partition's, by
# topic id (the missing topic's is one no topic has); a new member id each time, opening its
# share session (ShareFetch, epoch 0) or naming none (ShareAcknowledge, epoch 1: after the ACL
# checks, SHARE_SESSION_NOT_FOUND)
_NO_SUCH_TOPIC_ID = topic_id_text(uuid.UUID(int=0x0DD4ADE4))


def _share_topic_id(parity: Parity, case: Case) -> str:
    state = parity.node.metadata.snapshot.partitions.get((case.topic, 0))
    return state.topic_id if state is not None else _NO_SUCH_TOPIC_ID


def _share_kafka_codes(answer: Any) -> Codes:
    return (
        int(answer.error_code),
        [
            (int(p.partition_index), int(p.error_code))
            for t in answer.responses
            for p in t.partitions
        ],
    )


def _share_grpc_codes(answer: Any) -> Codes:
    if isinstance(answer, int):
        return (answer, [])
    return (answer.error_code, [(p.partition, p.error_code) for p in answer.partitions])


def kafka_share_fetch(parity: Parity, cn: str, case: Case) -> Codes:
    partition = share_fetch.FetchPartition(partition_index=i32(0), acknowledgement_batches=())
    topic_id = topic_id_uuid(_share_topic_id(parity, case))
    request = share_fetch.ShareFetchRequest(
        group_id=GroupId(case.group),
        member_id=str(uuid.uuid4()),
        share_session_epoch=i32(0),
        max_wait=i32Timedelta.parse(timedelta(0)),
        min_bytes=i32(1),
        max_bytes=i32(1 << 20),
        max_records=i32(10),
        batch_size=i32(10),
        topics=(share_fetch.FetchTopic(topic_id=topic_id, partitions=(partition,)),),
        forgotten_topics_data=(),
    )
    return _share_kafka_codes(parity.kafka(cn, request))


def grpc_share_fetch(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.ShareFetchRequest(
        group_id=case.group,
        member_id=str(uuid.uuid4()),
        share_session_epoch=0,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=10,
        batch_size=10,
        partitions=[pb.SharePartitionRequest(topic_id=_share_topic_id(parity, case), partition=0)],
    )
    return _share_grpc_codes(grpc_answer(parity.broker(cn).ShareFetch, request))


def kafka_share_acknowledge(parity: Parity, cn: str, case: Case) -> Codes:
    batch = share_acknowledge.AcknowledgementBatch(
        first_offset=i64(0), last_offset=i64(0), acknowledge_types=(i8(1),)
    )
    partition = share_acknowledge.AcknowledgePartition(
        partition_index=i32(0), acknowledgement_batches=(batch,)
    )
    topic_id = topic_id_uuid(_share_topic_id(parity, case))
    request = share_acknowledge.ShareAcknowledgeRequest(
        group_id=GroupId(case.group),
        member_id=str(uuid.uuid4()),
        share_session_epoch=i32(1),
        topics=(share_acknowledge.AcknowledgeTopic(topic_id=topic_id, partitions=(partition,)),),
    )
    return _share_kafka_codes(parity.kafka(cn, request))


def grpc_share_acknowledge(parity: Parity, cn: str, case: Case) -> Codes:
    batch = pb.ShareAcknowledgementBatch(first_offset=0, last_offset=0, acknowledge_types=[1])
    request = pb.ShareAcknowledgeRequest(
        group_id=case.group,
        member_id=str(uuid.uuid4()),
        share_session_epoch=1,
        partitions=[
            pb.SharePartitionRequest(
                topic_id=_share_topic_id(parity, case), partition=0, acknowledgements=[batch]
            )
        ],
    )
    return _share_grpc_codes(grpc_answer(parity.broker(cn).ShareAcknowledge, request))


# the share group offset APIs: the existing group has committed offsets (not a share group:
# GROUP_ID_NOT_FOUND, as the missing one), so nothing is changed
def kafka_describe_share_offsets(parity: Parity, cn: str, case: Case) -> Codes:
    topic = describe_share_offsets.DescribeShareGroupOffsetsRequestTopic(
        topic_name=TopicName(case.topic), partitions=(i32(0),)
    )
    group = describe_share_offsets.DescribeShareGroupOffsetsRequestGroup(
        group_id=GroupId(case.group), topics=(topic,)
    )
    answer = parity.kafka(
        cn, describe_share_offsets.DescribeShareGroupOffsetsRequest(groups=(group,))
    )
    return [
        (
            g.group_id,
            int(g.error_code),
            tuple((t.topic_name, int(p.error_code)) for t in g.topics for p in t.partitions),
        )
        for g in answer.groups
    ]


def grpc_describe_share_offsets(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.DescribeShareGroupOffsetsRequest(
        group_id=case.group, topics=[pb.ShareOffsetsTopic(topic=case.topic, partitions=[0])]
    )
    answer = grpc_answer(parity.broker(cn).DescribeShareGroupOffsets, request)
    if isinstance(answer, int):
        return [(case.group, answer, ())]
    return [
        (
            case.group,
            answer.error_code,
            tuple((p.topic, p.error_code) for p in answer.partitions),
        )
    ]


def kafka_alter_share_offsets(parity: Parity, cn: str, case: Case) -> Codes:
    partition = alter_share_offsets.AlterShareGroupOffsetsRequestPartition(
        partition_index=i32(0), start_offset=i64(0)
    )
    topic = alter_share_offsets.AlterShareGroupOffsetsRequestTopic(
        topic_name=TopicName(case.topic), partitions=(partition,)
    )
    answer = parity.kafka(
        cn,
        alter_share_offsets.AlterShareGroupOffsetsRequest(
            group_id=GroupId(case.group), topics=(topic,)
        ),
    )
    return (
        int(answer.error_code),
        tuple((t.topic_name, int(p.error_code)) for t in answer.responses for p in t.partitions),
    )


def grpc_alter_share_offsets(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.AlterShareGroupOffsetsRequest(
        group_id=case.group,
        offsets=[pb.SharePartitionOffset(topic=case.topic, partition=0, start_offset=0)],
    )
    answer = grpc_answer(parity.broker(cn).AlterShareGroupOffsets, request)
    if isinstance(answer, int):
        return (answer, ())
    return (answer.error_code, tuple((p.topic, p.error_code) for p in answer.partitions))


def kafka_delete_share_offsets(parity: Parity, cn: str, case: Case) -> Codes:
    topic = delete_share_offsets.DeleteShareGroupOffsetsRequestTopic(
        topic_name=TopicName(case.topic)
    )
    answer = parity.kafka(
        cn,
        delete_share_offsets.DeleteShareGroupOffsetsRequest(
            group_id=GroupId(case.group), topics=(topic,)
        ),
    )
    return (
        int(answer.error_code),
        tuple((t.topic_name, int(t.error_code)) for t in answer.responses),
    )


def grpc_delete_share_offsets(parity: Parity, cn: str, case: Case) -> Codes:
    request = pb.DeleteShareGroupOffsetsRequest(group_id=case.group, topics=[case.topic])
    answer = grpc_answer(parity.broker(cn).DeleteShareGroupOffsets, request)
    if isinstance(answer, int):
        return (answer, ())
    return (answer.error_code, tuple((t.topic, t.error_code) for t in answer.topics))


FRESH_GROUP_CASES: dict[str, Resolver] = {
    "existing": lambda parity: Case(group=parity.fresh_group()),
    "missing": _fixed(group=MISSING_GROUP),
}
FRESH_TOPIC_CASES: dict[str, Resolver] = {
    "existing": lambda parity: Case(parity.fresh_topic()),
    "missing": _fixed(MISSING_TOPIC),
}
PRODUCER_CASES: dict[str, Resolver] = {
    "idempotent": _fixed(""),
    "transactional": _fixed("parity-transaction"),
}
METADATA_CASES: dict[str, Resolver] = {**TOPIC_CASES, "all": _fixed("*")}
TXN_CASES: dict[str, Resolver] = {"existing": _fixed(TXN), "missing": _fixed(MISSING_TXN)}

APIS = [
    Api("Produce", TOPIC_CASES, kafka_produce, grpc_produce),
    Api("Fetch", TOPIC_CASES, kafka_fetch, grpc_fetch),
    Api("ListOffsets", TOPIC_CASES, kafka_list_offsets, grpc_list_offsets),
    Api("Metadata", METADATA_CASES, kafka_metadata, grpc_metadata),
    Api("DeleteRecords", TOPIC_CASES, kafka_delete_records, grpc_delete_records),
    Api("InitProducerId", PRODUCER_CASES, kafka_init_producer_id, grpc_init_producer_id),
    Api("FindCoordinator", FIND_COORDINATOR_CASES, kafka_find_coordinator, grpc_find_coordinator),
    Api("ConsumerGroupHeartbeat", GROUP_CASES, kafka_heartbeat, grpc_heartbeat),
    Api("OffsetCommit", OFFSET_COMMIT_CASES, kafka_offset_commit, grpc_offset_commit),
    Api("OffsetFetch", OFFSET_FETCH_CASES, kafka_offset_fetch, grpc_offset_fetch),
    Api("OffsetDelete", OFFSET_DELETE_CASES, kafka_offset_delete, grpc_offset_delete),
    Api("ListGroups", {"existing": _fixed()}, kafka_list_groups, grpc_list_groups),
    Api("ConsumerGroupDescribe", GROUP_CASES, kafka_describe_groups, grpc_describe_groups),
    Api("DeleteGroups", FRESH_GROUP_CASES, kafka_delete_groups, grpc_delete_groups),
    Api("ShareGroupHeartbeat", GROUP_CASES, kafka_share_heartbeat, grpc_share_heartbeat),
    Api("ShareGroupDescribe", GROUP_CASES, kafka_share_describe, grpc_share_describe),
    Api("CreateTopics", TOPIC_CASES, kafka_create_topics, grpc_create_topics),
    Api("DeleteTopics", FRESH_TOPIC_CASES, kafka_delete_topics, grpc_delete_topics),
    Api("CreatePartitions", TOPIC_CASES, kafka_create_partitions, grpc_create_partitions),
    Api("DescribeConfigs", CONFIG_CASES, kafka_describe_configs, grpc_describe_configs),
    Api("AlterConfigs", TOPIC_CASES, kafka_alter_configs, grpc_alter_configs),
    Api("ElectLeaders", TOPIC_CASES, kafka_elect_leaders, grpc_elect_leaders),
    Api(
        "ListPartitionReassignments", TOPIC_CASES, kafka_list_reassignments, grpc_list_reassignments
    ),
    Api(
        "AlterPartitionReassignments",
        TOPIC_CASES,
        kafka_alter_reassignments,
        grpc_alter_reassignments,
    ),
    Api("CreateAcls", TOPIC_CASES, kafka_create_acls, grpc_create_acls),
    Api("DescribeAcls", TOPIC_CASES, kafka_describe_acls, grpc_describe_acls),
    Api("DeleteAcls", TOPIC_CASES, kafka_delete_acls, grpc_delete_acls),
    Api("DescribeUserScramCredentials", USER_CASES, kafka_describe_scram, grpc_describe_scram),
    Api("AlterUserScramCredentials", USER_CASES, kafka_alter_scram, grpc_alter_scram),
    Api("DescribeLogDirs", TOPIC_CASES, kafka_describe_log_dirs, grpc_describe_log_dirs),
    Api("DescribeProducers", TOPIC_CASES, kafka_describe_producers, grpc_describe_producers),
    Api("AddPartitionsToTxn", TOPIC_CASES, kafka_add_partitions, grpc_add_partitions),
    Api("AddOffsetsToTxn", GROUP_CASES, kafka_add_offsets, grpc_add_offsets),
    Api("TxnOffsetCommit", GROUP_CASES, kafka_txn_offset_commit, grpc_txn_offset_commit),
    Api("EndTxn", TXN_CASES, kafka_end_txn, grpc_end_txn),
    Api(
        "DescribeTransactions",
        TXN_CASES,
        kafka_describe_transactions,
        grpc_describe_transactions,
    ),
    Api(
        "ListTransactions", {"existing": _fixed()}, kafka_list_transactions, grpc_list_transactions
    ),
    Api("ShareFetch", TOPIC_CASES, kafka_share_fetch, grpc_share_fetch),
    Api("ShareAcknowledge", TOPIC_CASES, kafka_share_acknowledge, grpc_share_acknowledge),
    Api(
        "DescribeShareGroupOffsets",
        GROUP_CASES,
        kafka_describe_share_offsets,
        grpc_describe_share_offsets,
    ),
    Api("AlterShareGroupOffsets", GROUP_CASES, kafka_alter_share_offsets, grpc_alter_share_offsets),
    Api(
        "DeleteShareGroupOffsets",
        GROUP_CASES,
        kafka_delete_share_offsets,
        grpc_delete_share_offsets,
    ),
]
assert {api.name for api in APIS} == set(DENIED)

CELLS = [
    pytest.param(api, principal, case, id=f"{api.name}-{principal}-{case}")
    for api in APIS
    for principal in PRINCIPALS
    for case in api.cases
]


@pytest.mark.parametrize(("api", "principal", "case"), CELLS)
def test_both_doors_answer_the_same_error_codes(
    parity: Parity, api: Api, principal: str, case: str
) -> None:
    cn = _principal_cn(principal, api.name)
    through_kafka: Any
    request = api.cases[case](parity)
    try:
        through_kafka = in_roles(api.kafka(parity, cn, request), request.roles())
    except (OSError, struct.error) as e:  # the door closed the connection without answering
        through_kafka = ("no answer", repr(e))
    request = api.cases[case](parity)
    through_grpc = in_roles(api.grpc(parity, cn, request), request.roles())
    assert through_kafka == through_grpc, (
        f"{api.name} as {cn} ({case}): Kafka door {through_kafka}, gRPC door {through_grpc}"
    )


GRPC_ONLY = {"AbortTransaction"}
"""Admin RPCs the Kafka door does not serve to clients, so with no row: AbortTransaction (the
operator's abort of kafka-transactions.sh, a WriteTxnMarkers the Kafka door leaves to the
coordinators); its policy is :func:`test_abort_transaction_needs_cluster_action`."""


def test_the_table_covers_every_api_both_doors_serve() -> None:
    """Every Broker and Admin RPC has a row (a new one needs its pair of functions here), but
    the gRPC-only ones of :data:`GRPC_ONLY`."""
    served = {
        m.name for s in ("Broker", "Admin") for m in pb.DESCRIPTOR.services_by_name[s].methods
    }
    assert served - GRPC_ONLY == {api.name for api in APIS}


@pytest.mark.parametrize("principal", [p for p in PRINCIPALS if p != "deny"])
def test_abort_transaction_needs_cluster_action(parity: Parity, principal: str) -> None:
    """gRPC only (:data:`GRPC_ONLY`): CLUSTER_ACTION on the cluster, as Kafka's WriteTxnMarkers,
    else CLUSTER_AUTHORIZATION_FAILED (31); allowed, the marker is refused for the missing
    topic (UNKNOWN_TOPIC_OR_PARTITION, 3): no cell writes a marker."""
    request = pb.AbortTransactionRequest(
        topic=MISSING_TOPIC,
        partition=0,
        producer_id=1,
        producer_epoch=0,
        coordinator_epoch=0,
        timeout_ms=TIMEOUT_MS,
    )
    answer = parity.admin_stub(principal).AbortTransaction(request)
    assert answer.error_code == (3 if principal == "cluster" else 31), answer.error_message


@pytest.mark.parametrize("principal", PRINCIPALS)
def test_find_coordinator_of_a_share_key_needs_cluster_action(
    parity: Parity, principal: str
) -> None:
    """FindCoordinator key type 2 through either door: CLUSTER_ACTION on the cluster (the
    ``cluster`` principal, and ``deny``, which is denied only DESCRIBE on groups and
    transactional ids), else CLUSTER_AUTHORIZATION_FAILED (31) for every key; allowed, the
    malformed key is INVALID_REQUEST (42)."""
    cn = _principal_cn(principal, "FindCoordinator")
    expected = 42 if principal in ("cluster", "deny") else 31
    case = Case(SHARE_KEY, "")
    assert kafka_find_coordinator(parity, cn, case) == [(SHARE_KEY, expected)]
    assert grpc_find_coordinator(parity, cn, case) == [(SHARE_KEY, expected)]
