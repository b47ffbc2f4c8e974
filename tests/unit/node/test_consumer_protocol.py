"""The consumer protocol's embedded bytes (node.coordinator.consumer_protocol) against bytes
written out by hand from Kafka's ``ConsumerProtocolSubscription.json`` and
``ConsumerProtocolAssignment.json`` (int16 version, then classic-encoded fields)."""

from __future__ import annotations

import pytest

from node.coordinator.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolError,
    ConsumerProtocolSubscription,
    decode_assignment,
    decode_subscription,
    decode_version,
    encode_assignment,
)


def i16(v: int) -> bytes:
    return v.to_bytes(2, "big", signed=True)


def i32(v: int) -> bytes:
    return v.to_bytes(4, "big", signed=True)


def s(v: str) -> bytes:
    return i16(len(v)) + v.encode()


def test_subscription_v0() -> None:
    data = i16(0) + i32(2) + s("a") + s("bb") + i32(-1)  # topics, null user data
    assert decode_subscription(data) == ConsumerProtocolSubscription(0, ("a", "bb"))


def test_subscription_v3_every_field() -> None:
    data = (
        i16(3)
        + i32(1)
        + s("t")  # Topics
        + i32(2)
        + b"ud"  # UserData
        + i32(1)
        + s("t")
        + i32(2)
        + i32(0)
        + i32(2)  # OwnedPartitions: t-0, t-2
        + i32(7)  # GenerationId
        + s("rack-a")  # RackId
    )
    assert decode_subscription(data) == ConsumerProtocolSubscription(
        3, ("t",), b"ud", (("t", (0, 2)),), 7, "rack-a"
    )


def test_subscription_newer_version_is_read_as_3_and_trailing_bytes_ignored() -> None:
    data = i16(9) + i32(0) + i32(-1) + i32(0) + i32(-1) + i16(-1) + b"future fields"
    assert decode_subscription(data) == ConsumerProtocolSubscription(3, (), None, (), -1, None)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        i16(0) + i32(1),  # a topic missing
        i16(0) + i32(1) + s("t"),  # user data missing
        i16(1) + i32(0) + i32(-1),  # owned partitions missing
        i16(-1) + i32(0) + i32(-1),  # negative version
        i16(0) + i32(1) + i16(-1) + i32(-1),  # null topic name
        i16(0) + i32(1) + i16(1) + b"\xff" + i32(-1),  # not UTF-8
    ],
)
def test_subscription_malformed(data: bytes) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(data)


def test_assignment() -> None:
    data = i16(1) + i32(2) + s("a") + i32(2) + i32(1) + i32(0) + s("b") + i32(0) + i32(-1)
    got = decode_assignment(data)
    assert got == ConsumerProtocolAssignment(1, (("a", (1, 0)), ("b", ())), None)
    assert got.partitions() == {"a": frozenset({0, 1}), "b": frozenset()}


def test_assignment_empty_bytes_is_an_empty_assignment() -> None:
    """KAFKA-17733: a member that joined and never synced has no assignment bytes."""
    assert decode_assignment(b"") == ConsumerProtocolAssignment(0, ())


def test_assignment_user_data() -> None:
    data = i16(0) + i32(0) + i32(3) + b"abc"
    assert decode_assignment(data).user_data == b"abc"


@pytest.mark.parametrize("data", [b"\x00", i16(0) + i32(1) + s("a"), i16(0) + i32(0)])
def test_assignment_malformed(data: bytes) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(data)


def test_encode_assignment_bytes() -> None:
    expected = (
        i16(2)
        + i32(2)
        + s("a")
        + i32(2)
        + i32(0)
        + i32(3)
        + s("b")
        + i32(1)
        + i32(5)
        + i32(-1)  # null user data
    )
    got = encode_assignment({"b": frozenset({5}), "a": frozenset({3, 0}), "c": frozenset()}, 2)
    assert got == expected
    assert decode_assignment(got).partitions() == {"a": frozenset({0, 3}), "b": frozenset({5})}


def test_encode_assignment_version_and_user_data() -> None:
    assert encode_assignment({}, 7) == i16(3) + i32(0) + i32(-1)
    assert encode_assignment({}, 0, b"u") == i16(0) + i32(0) + i32(1) + b"u"
    with pytest.raises(ConsumerProtocolError):
        encode_assignment({}, -1)


def test_decode_version() -> None:
    assert decode_version(i16(3) + b"rest") == 3
    with pytest.raises(ConsumerProtocolError):
        decode_version(b"\x00")
