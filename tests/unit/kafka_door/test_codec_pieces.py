"""The Kafka door's pure pieces: request headers, response headers, building responses of any
version from plain values, the zero-copy Fetch layout, and the SCRAM handlers' state machine."""

from __future__ import annotations

import datetime
import io
import os
import struct
import uuid
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.types import BrokerId
from kio.serial import entity_writer
from kio.static.primitive import i16, i32, i64

from node.kafka_door.build import make, nested
from node.kafka_door.context import Connection, RequestContext
from node.kafka_door.error_counts import add_error_counts, error_name
from node.kafka_door.fetch_encoding import encode_fetch_response
from node.kafka_door.frames import (
    FrameError,
    decode_body,
    encode_body,
    encode_response,
    peek_api,
    read_header,
    request_class,
    response_class,
)
from node.kafka_door.handlers.sasl import SaslHandlers
from node.kafka_door.server import FileSlice
from odradek.scram import ScramClient, new_credential


def test_a_flexible_request_header_carries_tagged_fields():
    out = io.BytesIO()
    entity_writer(RequestHeaderV2)(
        out,
        RequestHeaderV2(
            request_api_key=i16(18),
            request_api_version=i16(3),
            correlation_id=i32(9),
            client_id="kcat",
        ),
    )
    frame = out.getvalue() + b"\x05body!"
    assert peek_api(frame) == (18, 3)
    header = read_header(frame, flexible=True)
    assert (header.api_key, header.api_version, header.correlation_id) == (18, 3, 9)
    assert header.client_id == "kcat"
    assert frame[header.body_offset :] == b"\x05body!"
    # read as v1 the tagged-field byte would be left in front of the body
    assert read_header(frame, flexible=False).body_offset == header.body_offset - 1


def test_headers_too_short_are_frame_errors():
    with pytest.raises(FrameError):
        peek_api(b"\x00\x03")
    with pytest.raises(FrameError):
        read_header(b"\x00\x03\x00\x01\x00\x00", flexible=False)


def test_the_response_header_is_v0_for_api_versions_even_when_flexible():
    body = make(response_class(18, 3), error_code=0, api_keys=(), throttle_time=0)
    frame = encode_response(18, 77, body)
    assert frame[4:8] == struct.pack(">i", 77)
    assert frame[8:] == encode_body(body)  # no tagged-field byte after the correlation id
    flexible = make(response_class(3, 9), throttle_time=0, brokers=(), topics=(), controller_id=1)
    frame = encode_response(3, 78, flexible)
    assert frame[4:9] == struct.pack(">i", 78) + b"\x00"  # header v1: an empty tag buffer


def test_make_converts_codes_times_and_drops_fields_a_version_lacks():
    v3 = response_class(0, 3)  # Produce v3
    partition = nested(v3, "PartitionProduceResponse")
    made = make(
        partition,
        index=1,
        error_code=10,
        base_offset=-1,
        log_append_time=-1,
        log_start_offset=7,  # not in v3: dropped
        record_errors=(),  # not in v3: dropped
    )
    assert made.error_code is ErrorCode.message_too_large
    assert made.log_append_time is None
    at = make(partition, index=1, error_code=0, base_offset=0, log_append_time=1_000)
    assert at.log_append_time == datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=datetime.UTC)
    assert make(partition, index=0, error_code=12345, base_offset=0).error_code is (
        ErrorCode.unknown_server_error
    )


def test_decode_body_ignores_trailing_bytes_as_kafka_and_refuses_truncation():
    cls = request_class(3, 1)  # Metadata v1: topics (nullable array)
    assert decode_body(cls, b"\xff\xff\xff\xff", 0).topics is None
    assert decode_body(cls, b"\xff\xff\xff\xff\x00", 0).topics is None
    with pytest.raises(FrameError):
        decode_body(cls, b"\x00\x00\x00\x02\x00", 0)


@pytest.mark.parametrize("version", [4, 5, 7, 11, 12, 13, 15, 16])
def test_the_zero_copy_fetch_layout_equals_kios_encoding(version, tmp_path: Path):
    cls = response_class(1, version)
    top: dict[str, Any] = {"throttle_time": 3, "error_code": 0, "session_id": 0}
    fields: list[dict[str, Any]] = [
        {
            "partition_index": i,
            "error_code": 0 if i else 6,
            "high_watermark": 10 * i,
            "last_stable_offset": 10 * i,
            "log_start_offset": i,
            "aborted_transactions": None,
            "preferred_read_replica": -1,
        }
        for i in range(3)
    ]
    if version >= 12:  # tagged fields after the records, and after the topics (v16)
        fields[0]["current_leader"] = nested(cls, "LeaderIdAndEpoch")(
            leader_id=BrokerId(2), leader_epoch=i32(7)
        )
        fields[2]["diverging_epoch"] = nested(cls, "EpochEndOffset")(
            epoch=i32(3), end_offset=i64(40)
        )
    if version >= 16:
        top["node_endpoints"] = (
            nested(cls, "NodeEndpoint")(
                node_id=BrokerId(2), host="b2.example", port=i32(9092), rack=None
            ),
        )
    key = "topic_id" if version >= 13 else "topic"
    names: list[Any] = ["topic-a", "topic-b", "topic-c"]
    if version >= 13:
        names = [uuid.UUID(int=n + 1) for n in range(3)]
    data = [b"", b"batch-one" * 10, b"batch-two" * 30]
    segment = tmp_path / "segment"
    segment.write_bytes(b"prefix" + data[2] + b"suffix")
    fd = os.open(segment, os.O_RDONLY)
    try:
        parts = encode_fetch_response(
            cls,
            top,
            [
                (names[0], [(fields[0], data[0]), (fields[1], data[1])]),
                (names[1], [(fields[2], FileSlice(fd, 6, len(data[2])))]),
                (names[2], []),
            ],
        )
        assert parts.flexible == (version >= 12)
        assert parts.size() == sum(
            p.length if isinstance(p, FileSlice) else len(p) for p in parts.parts
        )
        sent = b"".join(
            os.pread(p.fd, p.length, p.position) if isinstance(p, FileSlice) else p
            for p in parts.parts
        )
    finally:
        os.close(fd)
    topic_cls, partition_cls = nested(cls, "FetchableTopicResponse"), nested(cls, "PartitionData")
    whole = make(
        cls,
        responses=(
            make(
                topic_cls,
                partitions=tuple(
                    make(partition_cls, records=data[i], **fields[i]) for i in range(2)
                ),
                **{key: names[0]},
            ),
            make(
                topic_cls,
                partitions=(make(partition_cls, records=data[2], **fields[2]),),
                **{key: names[1]},
            ),
            make(topic_cls, partitions=(), **{key: names[2]}),
        ),
        **top,
    )
    assert sent == encode_body(whole)
    # the errors metric counts the same codes either way (one NOT_LEADER_OR_FOLLOWER)
    counted: dict[int, int] = {}
    add_error_counts(whole, counted)
    assert parts.errors == counted == {6: 1}


def test_error_counts_cover_every_nested_error_code_once():
    cls = response_class(0, 8)  # Produce v8
    topic_cls, partition_cls = (
        nested(cls, "TopicProduceResponse"),
        nested(cls, "PartitionProduceResponse"),
    )

    def partition(index: int, code: int) -> Any:
        return make(
            partition_cls,
            index=index,
            error_code=code,
            base_offset=-1,
            log_append_time=-1,
            log_start_offset=-1,
            record_errors=(),
            error_message=None,
        )

    answer = make(
        cls,
        responses=(
            make(topic_cls, name="a", partition_responses=(partition(0, 0), partition(1, 6))),
            make(topic_cls, name="b", partition_responses=(partition(0, 6), partition(1, 3))),
        ),
        throttle_time=0,
    )
    counted: dict[int, int] = {}
    add_error_counts(answer, counted)
    assert counted == {6: 2, 3: 1}
    assert [error_name(c) for c in sorted(counted)] == [
        "UNKNOWN_TOPIC_OR_PARTITION",
        "NOT_LEADER_OR_FOLLOWER",
    ]
    assert error_name(32_000) == "32000"  # a code this codec does not know


def _context(conn: Connection, key: int, version: int = 1) -> RequestContext:
    return RequestContext(conn, key, version, 1, "test")


def _request(cls: type[Any], **fields: object) -> Any:
    return make(cls, **fields)


def test_scram_over_the_sasl_handlers_authenticates_and_refuses():
    credential = new_credential("SCRAM-SHA-512", "s3cret", iterations=4096)
    store = {("SCRAM-SHA-512", "alice"): credential}
    handlers = SaslHandlers(lambda m, u: store.get((m, u)), ("SCRAM-SHA-256", "SCRAM-SHA-512"))

    def login(password: str) -> tuple[Connection, Any]:
        conn = Connection("SECURE", "SASL_PLAINTEXT", "127.0.0.1", 5000, authenticated=False)
        hello = handlers.handshake(
            _context(conn, 17), _request(request_class(17, 1), mechanism="SCRAM-SHA-512")
        )
        assert hello.error_code is ErrorCode.none
        client = ScramClient("SCRAM-SHA-512", "alice", password)
        auth_cls = request_class(36, 1)
        first = handlers.authenticate(
            _context(conn, 36), _request(auth_cls, auth_bytes=client.first_message())
        )
        assert first.error_code is ErrorCode.none
        final = handlers.authenticate(
            _context(conn, 36),
            _request(auth_cls, auth_bytes=client.final_message(first.auth_bytes)),
        )
        return conn, final

    conn, final = login("s3cret")
    assert final.error_code is ErrorCode.none
    assert conn.authenticated and str(conn.principal) == "User:alice"
    assert not conn.close_after_response

    conn, final = login("wrong")
    assert final.error_code is ErrorCode.sasl_authentication_failed
    assert final.error_message == (
        "Authentication failed during authentication due to invalid credentials with "
        "SASL mechanism SCRAM-SHA-512"
    )
    assert not conn.authenticated and conn.close_after_response

    conn = Connection("SECURE", "SASL_PLAINTEXT", "127.0.0.1", 5001, authenticated=False)
    refused = handlers.handshake(
        _context(conn, 17), _request(request_class(17, 1), mechanism="PLAIN")
    )
    assert refused.error_code is ErrorCode.unsupported_sasl_mechanism
    assert refused.mechanisms == ("SCRAM-SHA-256", "SCRAM-SHA-512")
    assert conn.close_after_response


@pytest.mark.parametrize(
    ("session_id", "session_epoch", "error"),
    [(7, 3, ErrorCode.fetch_session_id_not_found), (0, 2, ErrorCode.invalid_fetch_session_epoch)],
)
def test_an_incremental_fetch_is_refused_as_kafka_refuses_an_unknown_session(
    session_id: int, session_epoch: int, error: ErrorCode
) -> None:
    from kio.serial import entity_reader

    from node.kafka_door.handlers.fetch import handle_fetch

    request = make(
        request_class(1, 7),
        max_wait=0,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=session_id,
        session_epoch=session_epoch,
        topics=(),
        forgotten_topics_data=(),
    )
    conn = Connection("KAFKA", "PLAINTEXT", "127.0.0.1", 5000)
    # refused before the core is asked: no services needed
    answer = handle_fetch(None, _context(conn, 1, 7), request)  # type: ignore[arg-type]
    body = b"".join(p for p in answer.parts if isinstance(p, bytes))
    decoded, _ = entity_reader(response_class(1, 7))(body, 0)
    assert decoded.error_code is error and decoded.responses == ()


def test_a_null_in_a_non_nullable_field_is_refused_as_kafkas_parser_does() -> None:
    """The fuzzer's finding (seed 1478626350): OffsetForLeaderEpoch v2 whose topic's partitions
    array is length -1. Kafka's reader refuses it; kio reads None, and the handler raised a
    TypeError. Refused while decoding now (the connection is closed), at any depth; a null where
    Kafka allows one (Metadata's topics: every topic) still reads."""
    from kio.schema.metadata.v12.request import MetadataRequest
    from kio.schema.offset_for_leader_epoch.v2.request import OffsetForLeaderEpochRequest

    # header (key 23, v2, correlation id, client id "fuzz"), then one topic whose partitions
    # array has length -1
    frame = bytes.fromhex(
        "001700025c19004b000466757a7a00000001000c66757a7a0000000100000002ffffffffb5000000"
    )
    with pytest.raises(
        FrameError, match=r"OffsetForLeaderTopic\.partitions was serialized as null"
    ):
        decode_body(OffsetForLeaderEpochRequest, frame, 14)
    # Metadata v12 (flexible): null topics (compact length 0), no auto-creation, no authorized
    # operations, no tagged fields
    body = bytes([0, 0, 0, 0])
    assert decode_body(MetadataRequest, body, 0).topics is None
