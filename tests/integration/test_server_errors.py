"""No server exception text ever reaches a client (issue 27, item 4), against a real node (in
process, real ZooKeeper, gRPC on loopback) with a PLAINTEXT client listener, a SASL_SSL one and
a PLAINTEXT inter-broker one.

* The two reported cases answer what Kafka answers: a group id longer than Kafka's string
  limit (32767 bytes: no Kafka client can even send it) is INVALID_GROUP_ID in every group API;
  ListOffsets for an unknown negative timestamp (-99) is a lookup by time, as Kafka's
  ``UnifiedLog.fetchOffsetByTimestamp`` treats any target that is not a special one: the first
  record at or after it; EARLIEST_LOCAL (-4) is the log start offset, LATEST_TIERED (-5) none
  (-1) without tiered storage.
* The whole class: a seeded fuzz over every RPC of the Broker, Admin and Sasl services, with
  random and extreme field values (empty, 40,000-character and non-ASCII strings, int
  extremes, garbage bytes, unset optionals, repeated fields of 0-3 items), asserts that no
  answer (status details, error messages, any text of the response) carries Python exception
  text, and that the node still serves afterwards. Fields named ``*_ms`` are kept within
  [-1000, 1500] ms so that long polls and acks=-1 waits end within the test (how long a
  request may wait is not this test's subject).
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from deploy.local.zookeeper import ZooKeeperServer
from node.config import NodeConfig
from node.listeners import Listener
from node.security.tls import SslConfig
from node.server import Node
from odradek import Admin, NewTopic, Producer
from odradek.errors import InvalidGroupIdError
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.certs import CertificateAuthority
from tests.integration.helpers import wait_for

_chroots = itertools.count()

PYTHON_TEXT = re.compile(
    r"Traceback|Exception calling application|Exception iterating|File \"|"
    r"\b(?:[A-Z][A-Za-z]*Error|[A-Z][A-Za-z]*Exception|struct\.error)\b:?"
)
"""What Python exception text looks like: a traceback, gRPC's wrapping of a handler's
exception, or a Python exception's type name (ValueError, KeyError, UnicodeEncodeError...)."""

LONG_GROUP = "g" * 40_000


class Setup:
    def __init__(self, node: Node, ca: CertificateAuthority, cafile: str) -> None:
        self.node = node
        self.plain = f"127.0.0.1:{node.ports['PLAIN']}"
        self.sasl = f"localhost:{node.ports['SASL']}"
        self.cafile = cafile


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer) -> Iterator[Setup]:
    tmp_path = tmp_path_factory.mktemp("server-errors")
    chroot = f"/server_errors_{next(_chroots)}"
    ca = CertificateAuthority("odradek-test-ca")
    _, _, keystore = ca.issue("CN=node-1", ["localhost", "127.0.0.1"]).write(tmp_path, "node-1")
    cafile = str(ca.write(tmp_path / "ca.crt"))
    config = NodeConfig(
        node_id=1,
        log_dirs=(tmp_path / "data",),
        zookeeper_connect=zookeeper.connect_string + chroot,
        listeners=(
            Listener("PLAIN", "127.0.0.1", 0),
            Listener("SASL", "127.0.0.1", 0),
            Listener("INTERNAL", "127.0.0.1", 0),
        ),
        advertised_listeners=(
            Listener("PLAIN", "127.0.0.1", 0),
            Listener("SASL", "localhost", 0),
            Listener("INTERNAL", "127.0.0.1", 0),
        ),
        listener_security_protocol_map=(
            ("PLAIN", "PLAINTEXT"),
            ("SASL", "SASL_SSL"),
            ("INTERNAL", "PLAINTEXT"),
        ),
        inter_broker_listener_name="INTERNAL",
        ssl=SslConfig(keystore_location=str(keystore), truststore_location=cafile),
        zookeeper_session_timeout_ms=6_000,
    )
    node = Node(config)
    try:
        node.start()
        s = Setup(node, ca, cafile)
        with Admin(s.plain) as admin:
            wait_for(lambda: admin.cluster_metadata().brokers, "a live broker")
            assert admin.create_topics([NewTopic("t", 1, 1)]) == {"t": None}
            wait_for(
                lambda: admin.describe_topics(["t"])["t"].partitions[0].leader >= 0, "a leader"
            )
        with Producer(s.plain, acks=-1) as producer:
            for i in range(3):
                producer.send("t", f"v{i}".encode(), partition=0, timestamp_ms=1000 * (i + 1))
            producer.flush()
        yield s
    finally:
        node.stop(controlled=False)


def _broker(address: str) -> pb_grpc.BrokerStub:
    return pb_grpc.BrokerStub(grpc.insecure_channel(address))


def _assert_no_python_text(where: str, text: str) -> None:
    found = PYTHON_TEXT.search(text)
    assert found is None, f"{where}: Python exception text {found.group(0)!r} in {text[:300]!r}"


# -- the two reported cases ----------------------------------------------------------------------


def _offsets_topic_ready(stub: pb_grpc.BrokerStub) -> None:
    def ready() -> bool:
        [c] = stub.FindCoordinator(
            pb.FindCoordinatorRequest(group_ids=["g"]), timeout=10
        ).coordinators
        return c.error_code == 0

    wait_for(ready, "the group coordinator")


def test_a_group_id_longer_than_kafkas_string_limit_is_invalid_group_id_everywhere(setup):
    stub = _broker(setup.plain)
    _offsets_topic_ready(stub)
    invalid = InvalidGroupIdError.code
    heartbeat = stub.ConsumerGroupHeartbeat(
        pb.ConsumerGroupHeartbeatRequest(
            group_id=LONG_GROUP,
            member_id="m",
            member_epoch=0,
            rebalance_timeout_ms=1000,
            has_subscribed_topic_names=True,
            subscribed_topic_names=["t"],
            has_topic_partitions=True,
        ),
        timeout=30,
    )
    assert heartbeat.error_code == invalid, heartbeat
    commit = stub.OffsetCommit(
        pb.OffsetCommitRequest(
            group_id=LONG_GROUP,
            member_epoch=-1,
            topics=[
                pb.OffsetCommitTopic(
                    name="t", partitions=[pb.OffsetCommitPartition(partition=0, committed_offset=1)]
                )
            ],
        ),
        timeout=30,
    )
    assert commit.error_code == invalid and commit.partitions[0].error_code == invalid
    fetched = stub.OffsetFetch(
        pb.OffsetFetchRequest(group_id=LONG_GROUP, member_epoch=-1), timeout=30
    )
    assert fetched.error_code == invalid
    [found] = stub.FindCoordinator(
        pb.FindCoordinatorRequest(group_ids=[LONG_GROUP]), timeout=30
    ).coordinators
    assert (found.error_code, found.node_id) == (invalid, -1)
    [described] = stub.ConsumerGroupDescribe(
        pb.ConsumerGroupDescribeRequest(group_ids=[LONG_GROUP]), timeout=30
    ).groups
    assert described.error_code == invalid
    [deleted] = stub.DeleteGroups(
        pb.DeleteGroupsRequest(group_ids=[LONG_GROUP]), timeout=30
    ).results
    assert deleted.error_code == invalid
    offset_delete = stub.OffsetDelete(pb.OffsetDeleteRequest(group_id=LONG_GROUP), timeout=30)
    assert offset_delete.error_code == invalid


def _list_offsets(stub: pb_grpc.BrokerStub, timestamp: int) -> pb.ListOffsetsPartitionResponse:
    response = stub.ListOffsets(
        pb.ListOffsetsRequest(
            partitions=[pb.ListOffsetsPartition(topic="t", partition=0, timestamp=timestamp)]
        ),
        timeout=30,
    )
    return response.partitions[0]


def test_list_offsets_answers_kafkas_result_for_every_negative_timestamp(setup):
    stub = _broker(setup.plain)
    # any target that is not a special one is a time: the first record at or after -99 is the
    # first record, with its own timestamp
    r = _list_offsets(stub, -99)
    assert (r.error_code, r.offset, r.timestamp) == (0, 0, 1000), r
    earliest_local = _list_offsets(stub, -4)  # no tiered storage: the log start offset
    assert (earliest_local.error_code, earliest_local.offset, earliest_local.timestamp) == (
        0,
        0,
        -1,
    )
    latest_tiered = _list_offsets(stub, -5)  # nothing tiered: none
    assert (latest_tiered.error_code, latest_tiered.offset) == (0, -1)
    assert _list_offsets(stub, -1).offset == 3
    assert _list_offsets(stub, 2000).offset == 1


# -- the whole class: a fuzz over every RPC ------------------------------------------------------

_STRINGS = ("", "t", "g", LONG_GROUP, "é" * 20_000, "\x00", "../x", "__consumer_offsets", "-1", "*")
_INTS32 = (0, 1, -1, -2, -3, -4, -5, -99, 2**31 - 1, -(2**31), 7, 1000)
_INTS64 = (*_INTS32, 2**63 - 1, -(2**63))
_MS = (-1000, -1, 0, 1, 100, 1500)


def _value(field: Any, rng: random.Random, depth: int) -> Any:
    t = field.type
    if t == FieldDescriptor.TYPE_STRING:
        if rng.random() < 0.3:
            return "".join(chr(rng.randint(32, 0x2FFF)) for _ in range(rng.randint(1, 40)))
        return rng.choice(_STRINGS)
    if t == FieldDescriptor.TYPE_BYTES:
        return rng.choice(
            (b"", b"\x00" * 70, rng.randbytes(rng.randint(1, 300)), rng.randbytes(100_000))
        )
    if t == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if t == FieldDescriptor.TYPE_ENUM:
        return rng.choice([v.number for v in field.enum_type.values] + [99])
    if field.name.endswith("_ms"):
        return rng.choice(_MS)
    if t in (
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_SFIXED64,
    ):
        return rng.choice(_INTS64)
    if t in (
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_SFIXED32,
    ):
        return rng.choice(_INTS32)
    if t in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32):
        return rng.choice((0, 1, 2**32 - 1))
    if t in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
        return rng.choice((0, 1, 2**64 - 1))
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return rng.choice((0.0, -1.0, 1e300))
    raise AssertionError(f"no generator for field {field.full_name} of type {t}")


def _fill(message: Message, rng: random.Random, depth: int = 0) -> Message:
    """``message`` with random values in its fields (nested messages up to depth 3)."""
    for field in message.DESCRIPTOR.fields:
        if field.has_presence and rng.random() < 0.3:
            continue  # an optional left unset
        repeated = field.is_repeated
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            target = getattr(message, field.name)
            key_f, value_f = (
                field.message_type.fields_by_name["key"],
                field.message_type.fields_by_name["value"],
            )
            for _ in range(rng.randint(0, 3)):
                key = _value(key_f, rng, depth)
                if value_f.message_type is not None:
                    _fill(target[key], rng, depth + 1)
                else:
                    target[key] = _value(value_f, rng, depth)
            continue
        if field.message_type is not None:
            if depth >= 3:
                continue
            if repeated:
                for _ in range(rng.randint(0, 3)):
                    _fill(getattr(message, field.name).add(), rng, depth + 1)
            else:
                _fill(getattr(message, field.name), rng, depth + 1)
            continue
        if repeated:
            getattr(message, field.name).extend(
                _value(field, rng, depth) for _ in range(rng.randint(0, 3))
            )
        else:
            setattr(message, field.name, _value(field, rng, depth))
    return message


def _rpcs(service: str) -> list[tuple[str, type[Message]]]:
    descriptor = pb.DESCRIPTOR.services_by_name[service]
    return [
        (m.name, getattr(pb, m.input_type.name))
        for m in descriptor.methods
        if not m.client_streaming and not m.server_streaming
    ]


def _call(channel: grpc.Channel, service: str, method: str, request: Message) -> str:
    """Every text of the answer: a response's text, or the status details and trailers."""
    output_type = pb.DESCRIPTOR.services_by_name[service].methods_by_name[method].output_type
    call = channel.unary_unary(
        f"/odradek.v1.{service}/{method}",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=getattr(pb, output_type.name).FromString,
    )
    try:
        return str(call(request, timeout=20))
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
            return ""  # still waiting (a long poll): no answer, no text
        return f"{e.code()} {e.details()} {e.trailing_metadata()}"


@pytest.mark.parametrize("service", ["Broker", "Admin", "Sasl"])
def test_no_answer_of_any_rpc_carries_python_exception_text(setup, service):
    rng = random.Random(2427 + len(service))  # seeded: a failure names its request
    if service == "Sasl":
        credentials = grpc.ssl_channel_credentials(Path(setup.cafile).read_bytes())
        channel = grpc.secure_channel(setup.sasl, credentials)
    else:
        channel = grpc.insecure_channel(setup.plain)
    rpcs = _rpcs(service)
    assert rpcs, service
    with channel:
        for method, request_type in rpcs:
            for i in range(25):
                request = _fill(request_type(), rng)
                text = _call(channel, service, method, request)
                _assert_no_python_text(f"{service}.{method} #{i} ({str(request)[:200]!r})", text)
    # the node still serves
    metadata = _broker(setup.plain).Metadata(pb.MetadataRequest(all_topics=True), timeout=30)
    assert [b.node_id for b in metadata.brokers] == [1]
