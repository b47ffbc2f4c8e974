"""The ``__consumer_offsets`` codec against bytes written out by hand from Kafka's JSON schemas
(``group-coordinator/src/main/resources/common/message/*.json``)."""

from __future__ import annotations

import pytest

from odradek.errors import CorruptRecordError
from odradek.group_records import (
    ClassicGroupMetadataKey,
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupClassicMemberMetadata,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    GroupMetadataValue,
    MemberState,
    OffsetCommitKey,
    OffsetCommitValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    TopicMetadata,
    TopicPartitions,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    key_type,
    uuid_from_bytes,
    uuid_to_bytes,
)

# A topic id: bytes 00 01 .. 0f, printed as Kafka's Uuid.toString does.
TOPIC_ID_RAW = bytes(range(16))
TOPIC_ID = uuid_from_bytes(TOPIC_ID_RAW)


def test_topic_id_round_trip() -> None:
    assert TOPIC_ID == "AAECAwQFBgcICQoLDA0ODw"
    assert uuid_to_bytes(TOPIC_ID) == TOPIC_ID_RAW
    with pytest.raises(ValueError):
        uuid_to_bytes("short")


def test_offset_commit_key() -> None:
    # OffsetCommitKey.json: apiKey 1, not flexible: int16 type, string group, string topic,
    # int32 partition; a classic string is an int16 length then UTF-8.
    key = OffsetCommitKey("g", "tp", 7)
    expected = b"\x00\x01" + b"\x00\x01g" + b"\x00\x02tp" + b"\x00\x00\x00\x07"
    assert encode_key(key) == expected
    assert decode_key(expected) == key
    assert key_type(expected) == 1
    # Type 0 (written before group metadata existed) has the same layout.
    assert decode_key(b"\x00\x00" + expected[2:]) == key


def test_offset_commit_value_v3() -> None:
    # v3: int64 offset, int32 leaderEpoch, string metadata, int64 commitTimestamp.
    value = OffsetCommitValue(offset=42, metadata="m", commit_timestamp=1000, leader_epoch=5)
    expected = (
        b"\x00\x03"
        + (42).to_bytes(8, "big")
        + (5).to_bytes(4, "big")
        + b"\x00\x01m"
        + (1000).to_bytes(8, "big")
    )
    assert encode_value(value) == expected
    assert decode_value(1, expected) == value


def test_offset_commit_value_v1_carries_expire_timestamp() -> None:
    # v1: int64 offset, string metadata, int64 commitTimestamp, int64 expireTimestamp.
    value = OffsetCommitValue(offset=1, metadata="", commit_timestamp=2, expire_timestamp=3)
    expected = (
        b"\x00\x01"
        + (1).to_bytes(8, "big")
        + b"\x00\x00"
        + (2).to_bytes(8, "big")
        + (3).to_bytes(8, "big")
    )
    assert encode_value(value) == expected
    assert decode_value(1, expected) == value


def test_offset_commit_value_v0_and_v4_decode() -> None:
    v0 = b"\x00\x00" + (9).to_bytes(8, "big") + b"\x00\x00" + (8).to_bytes(8, "big")
    assert decode_value(1, v0) == OffsetCommitValue(9, "", 8)
    # v4 is flexible: compact string (length + 1 as an unsigned varint) and a tag section.
    v4 = (
        b"\x00\x04"
        + (9).to_bytes(8, "big")
        + (2).to_bytes(4, "big")
        + b"\x03ab"
        + (8).to_bytes(8, "big")
        + b"\x00"
    )
    assert decode_value(1, v4) == OffsetCommitValue(9, "ab", 8, leader_epoch=2)


def test_consumer_group_metadata() -> None:
    key = ConsumerGroupMetadataKey("grp")
    assert encode_key(key) == b"\x00\x03\x00\x03grp"
    assert decode_key(b"\x00\x03\x00\x03grp") == key
    # Flexible v0: int32 Epoch, then tagged fields (MetadataHash is tag 0, only when non-zero).
    assert encode_value(ConsumerGroupMetadataValue(5)) == b"\x00\x00\x00\x00\x00\x05\x00"
    with_hash = b"\x00\x00\x00\x00\x00\x05\x01\x00\x08" + (77).to_bytes(8, "big")
    assert encode_value(ConsumerGroupMetadataValue(5, 77)) == with_hash
    assert decode_value(3, with_hash) == ConsumerGroupMetadataValue(5, 77)
    # An unknown tag (1: CreationTimeMs) is skipped.
    unknown_tag = b"\x00\x00\x00\x00\x00\x05\x01\x01\x08" + (1).to_bytes(8, "big")
    assert decode_value(3, unknown_tag) == ConsumerGroupMetadataValue(5)


def test_share_group_metadata() -> None:
    """KIP-932's ShareGroupMetadata (type 11): flexible v0 with two plain fields, Epoch and
    MetadataHash, then an empty tagged-field section."""
    key = ShareGroupMetadataKey("sg")
    assert encode_key(key) == b"\x00\x0b\x00\x02sg"
    assert decode_key(b"\x00\x0b\x00\x02sg") == key
    raw = b"\x00\x00" + (3).to_bytes(4, "big") + (99).to_bytes(8, "big") + b"\x00"
    assert encode_value(ShareGroupMetadataValue(3, 99)) == raw
    assert decode_value(11, raw) == ShareGroupMetadataValue(3, 99)
    assert decode_value(11, None) is None


def test_member_metadata() -> None:
    key = ConsumerGroupMemberMetadataKey("g", "m1")
    expected_key = b"\x00\x05\x00\x01g\x00\x02m1"
    assert encode_key(key) == expected_key
    assert decode_key(expected_key) == key
    value = ConsumerGroupMemberMetadataValue(
        client_id="c",
        client_host="/h",
        subscribed_topic_names=("t1", "t2"),
        instance_id="i",
        rack_id=None,
        subscribed_topic_regex=None,
        rebalance_timeout_ms=300000,
        server_assignor="uniform",
    )
    expected = (
        b"\x00\x00"
        + b"\x02i"  # InstanceId
        + b"\x00"  # RackId null
        + b"\x02c"  # ClientId
        + b"\x03/h"  # ClientHost
        + b"\x03\x03t1\x03t2"  # SubscribedTopicNames: 2 elements
        + b"\x00"  # SubscribedTopicRegex null
        + (300000).to_bytes(4, "big")
        + b"\x08uniform"
        + b"\x00"  # no tagged fields
    )
    assert encode_value(value) == expected
    assert decode_value(5, expected) == value


# The fields before the tagged section of a classic member's MemberMetadata value.
_CLASSIC_MEMBER_FIELDS = (
    b"\x00\x00"  # version 0
    + b"\x00"  # InstanceId null
    + b"\x00"  # RackId null
    + b"\x02c"  # ClientId
    + b"\x03/h"  # ClientHost
    + b"\x02\x02t"  # SubscribedTopicNames: ["t"]
    + b"\x00"  # SubscribedTopicRegex null
    + (60000).to_bytes(4, "big")  # RebalanceTimeoutMs
    + b"\x00"  # ServerAssignor null
)


def test_member_metadata_with_classic_member_metadata() -> None:
    """Tag 0 (``ClassicMemberMetadata``, a nullable struct): tag, size, varint 1 (present),
    SessionTimeoutMs, SupportedProtocols [{Name, Metadata, tags}], the struct's tags."""
    value = ConsumerGroupMemberMetadataValue(
        client_id="c",
        client_host="/h",
        subscribed_topic_names=("t",),
        rebalance_timeout_ms=60000,
        classic_member_metadata=ConsumerGroupClassicMemberMetadata(
            session_timeout_ms=45000,
            supported_protocols=(
                ClassicProtocol("range", b"\x00\x01"),
                ClassicProtocol("roundrobin", b""),
            ),
        ),
    )
    struct = (
        b"\x01"  # present
        + (45000).to_bytes(4, "big")  # SessionTimeoutMs
        + b"\x03"  # SupportedProtocols: 2 elements
        + b"\x06range"
        + b"\x03\x00\x01"
        + b"\x00"  # Name, Metadata (2 bytes), no tags
        + b"\x0broundrobin"
        + b"\x01"
        + b"\x00"  # Name, Metadata (empty), no tags
        + b"\x00"  # the struct's tagged fields
    )
    assert len(struct) == 30
    expected = _CLASSIC_MEMBER_FIELDS + b"\x01" + b"\x00" + b"\x1e" + struct  # 1 tag: 0, 30 bytes
    assert encode_value(value) == expected
    assert decode_value(5, expected) == value


def test_member_metadata_classic_with_no_protocols_and_other_tags() -> None:
    """An empty protocol list round-trips; an unknown tag beside tag 0 is skipped."""
    value = ConsumerGroupMemberMetadataValue(
        client_id="c",
        client_host="/h",
        subscribed_topic_names=("t",),
        rebalance_timeout_ms=60000,
        classic_member_metadata=ConsumerGroupClassicMemberMetadata(10000, ()),
    )
    struct = b"\x01" + (10000).to_bytes(4, "big") + b"\x01" + b"\x00"
    expected = _CLASSIC_MEMBER_FIELDS + b"\x01\x00\x07" + struct
    assert encode_value(value) == expected
    assert decode_value(5, expected) == value
    with_unknown = _CLASSIC_MEMBER_FIELDS + b"\x02\x00\x07" + struct + b"\x05\x02zz"
    assert decode_value(5, with_unknown) == value


def test_member_metadata_classic_null_and_absent() -> None:
    """A KIP-848 member writes no tag 0; a tag 0 holding varint 0 (null) reads as None."""
    value = ConsumerGroupMemberMetadataValue("c", "/h", ("t",), rebalance_timeout_ms=60000)
    assert encode_value(value) == _CLASSIC_MEMBER_FIELDS + b"\x00"
    assert decode_value(5, _CLASSIC_MEMBER_FIELDS + b"\x01\x00\x01\x00") == value


@pytest.mark.parametrize(
    "payload",
    [
        b"\x01" + (1).to_bytes(4, "big"),  # no protocol array
        b"\x01" + (1).to_bytes(4, "big") + b"\x02\x02a",  # protocol without metadata
        b"\x01" + (1).to_bytes(4, "big") + b"\x01\x00\xff",  # bytes after the struct
        b"\x01" + (1).to_bytes(4, "big") + b"\x02\x00\x01\x00\x00",  # null Name
    ],
)
def test_member_metadata_classic_malformed(payload: bytes) -> None:
    data = _CLASSIC_MEMBER_FIELDS + b"\x01\x00" + bytes([len(payload)]) + payload
    with pytest.raises(CorruptRecordError):
        decode_value(5, data)


def test_partition_metadata() -> None:
    key = ConsumerGroupPartitionMetadataKey("g")
    assert decode_key(encode_key(key)) == key
    assert encode_key(key)[:2] == b"\x00\x04"
    value = ConsumerGroupPartitionMetadataValue((TopicMetadata(TOPIC_ID, "t", 3, ((0, ("r1",)),)),))
    expected = (
        b"\x00\x00"
        + b"\x02"  # one topic
        + TOPIC_ID_RAW
        + b"\x02t"
        + (3).to_bytes(4, "big")
        + b"\x02"  # one PartitionMetadata
        + (0).to_bytes(4, "big")
        + b"\x02\x03r1"
        + b"\x00"  # PartitionMetadata tags
        + b"\x00"  # topic tags
        + b"\x00"  # value tags
    )
    assert encode_value(value) == expected
    assert decode_value(4, expected) == value


def test_target_assignment() -> None:
    meta_key = ConsumerGroupTargetAssignmentMetadataKey("g")
    assert encode_key(meta_key) == b"\x00\x06\x00\x01g"
    assert encode_value(ConsumerGroupTargetAssignmentMetadataValue(4)) == (
        b"\x00\x00\x00\x00\x00\x04\x00"
    )
    assert decode_value(6, b"\x00\x00\x00\x00\x00\x04\x00") == (
        ConsumerGroupTargetAssignmentMetadataValue(4)
    )
    member_key = ConsumerGroupTargetAssignmentMemberKey("g", "m")
    assert encode_key(member_key) == b"\x00\x07\x00\x01g\x00\x01m"
    value = ConsumerGroupTargetAssignmentMemberValue((TopicPartitions(TOPIC_ID, (0, 2)),))
    expected = (
        b"\x00\x00"
        + b"\x02"
        + TOPIC_ID_RAW
        + b"\x03"
        + (0).to_bytes(4, "big")
        + (2).to_bytes(4, "big")
        + b"\x00"  # TopicPartition tags
        + b"\x00"  # value tags
    )
    assert encode_value(value) == expected
    assert decode_value(7, expected) == value


def test_current_member_assignment() -> None:
    key = ConsumerGroupCurrentMemberAssignmentKey("g", "m")
    assert encode_key(key) == b"\x00\x08\x00\x01g\x00\x01m"
    assert decode_key(encode_key(key)) == key
    value = ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=3,
        previous_member_epoch=2,
        state=MemberState.UNREVOKED_PARTITIONS,
        assigned_partitions=(TopicPartitions(TOPIC_ID, (1,)),),
        partitions_pending_revocation=(),
    )
    expected = (
        b"\x00\x00"
        + (3).to_bytes(4, "big")
        + (2).to_bytes(4, "big")
        + b"\x01"
        + b"\x02"
        + TOPIC_ID_RAW
        + b"\x02"
        + (1).to_bytes(4, "big")
        + b"\x00"
        + b"\x01"  # no partitions pending revocation
        + b"\x00"
    )
    assert encode_value(value) == expected
    assert decode_value(8, expected) == value
    # KIP-1251's tagged AssignmentEpochs inside a TopicPartitions is skipped.
    one = (1).to_bytes(4, "big")
    tags = b"\x01\x00\x05\x02\x00\x00\x00\x03"  # tag 0, 5 bytes: [3]
    tagged = expected.replace(one + b"\x00\x01", one + tags + b"\x01")
    assert decode_value(8, tagged) == value


def test_tombstone_and_classic_group() -> None:
    assert decode_value(8, None) is None
    assert decode_key(b"\x00\x02\x00\x01g") == ClassicGroupMetadataKey("g")
    with pytest.raises(CorruptRecordError):
        decode_value(2, b"\x00\x03abc")


def test_group_metadata_value_round_trip_v3() -> None:
    member = ClassicMemberMetadata("m-1", "c", "/127.0.0.1", 10_000, b"sub", b"asg", "i-1", 30_000)
    value = GroupMetadataValue("consumer", 4, "range", "m-1", 1234, (member,))
    data = encode_value(value)
    # Kafka's v3 layout: version, protocolType, generation, protocol, leader, timestamp, members
    expected = (
        b"\x00\x03"
        + b"\x00\x08consumer"
        + b"\x00\x00\x00\x04"
        + b"\x00\x05range"
        + b"\x00\x03m-1"
        + (1234).to_bytes(8, "big")
        + b"\x00\x00\x00\x01"
        + b"\x00\x03m-1\x00\x03i-1\x00\x01c\x00\x0a/127.0.0.1"
        + (30_000).to_bytes(4, "big")
        + (10_000).to_bytes(4, "big")
        + b"\x00\x00\x00\x03sub\x00\x00\x00\x03asg"
    )
    assert data == expected
    assert decode_value(2, data) == value
    empty = GroupMetadataValue("", 5, None, None)
    assert decode_value(2, encode_value(empty)) == empty


def test_group_metadata_value_v0_and_v4() -> None:
    v0 = (
        b"\x00\x00\x00\x08consumer\x00\x00\x00\x02\xff\xff\xff\xff\x00\x00\x00\x01"
        + b"\x00\x01m\x00\x01c\x00\x01h\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00"
    )
    assert decode_value(2, v0) == GroupMetadataValue(
        "consumer", 2, None, None, -1, (ClassicMemberMetadata("m", "c", "h", 5, b"", b""),)
    )
    v4 = (
        b"\x00\x04\x09consumer\x00\x00\x00\x01\x06range\x02m"
        + (7).to_bytes(8, "big")
        + b"\x02\x02m\x00\x02c\x02h\x00\x00\x00\x01\x00\x00\x00\x02\x02s\x02a\x00\x00"
    )
    assert decode_value(2, v4) == GroupMetadataValue(
        "consumer",
        1,
        "range",
        "m",
        7,
        (ClassicMemberMetadata("m", "c", "h", 2, b"s", b"a", None, 1),),
    )


@pytest.mark.parametrize(
    "data",
    [
        b"\x00",  # truncated type
        b"\x00\x63\x00\x01g",  # unknown type 99
        b"\x00\x01\x00\x05g",  # string longer than the bytes left
        b"\x00\x03\x00\x01gX",  # bytes left over
        b"\x00\x03\x00\x01\xff",  # not UTF-8
    ],
)
def test_bad_keys_are_corrupt_record_errors(data: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode_key(data)


@pytest.mark.parametrize(
    ("record_type", "data"),
    [
        (1, b"\x00\x05" + bytes(20)),  # OffsetCommitValue v5 does not exist
        (3, b"\x00\x01\x00\x00\x00\x01\x00"),  # ConsumerGroupMetadataValue v1 does not exist
        (8, b"\x00\x00" + bytes(8) + b"\x05\x01\x01\x00"),  # member state 5
        (7, b"\x00\x00\xff\xff\xff\xff\x0f"),  # an array longer than the bytes
        (3, b"\x00\x00\x00"),  # truncated
    ],
)
def test_bad_values_are_corrupt_record_errors(record_type: int, data: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode_value(record_type, data)
