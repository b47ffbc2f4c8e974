"""``odradek dump-log --offsets-decoder``: records of ``__consumer_offsets`` as JSON.

Kafka's ``kafka-dump-log.sh --offsets-decoder`` prints each record of the group coordinator's
topic as ``key: {"type":"1","data":{...}} payload: {"version":"3","data":{...}}``, the data
being the record's JSON form with the schema's field names, and ``payload: <DELETE>`` for a
tombstone. This module does the same with :mod:`odradek.group_records`; a key or value it cannot
decode is shown as an ``error`` object with the raw bytes in hex, so one odd record never stops
a dump.

Pure and thread-safe.
"""

from __future__ import annotations

import json
from typing import Any

from odradek.errors import CorruptRecordError
from odradek.group_records import (
    ClassicGroupMetadataKey,
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
    GroupRecordKey,
    GroupRecordValue,
    OffsetCommitKey,
    OffsetCommitValue,
    RawValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    TopicPartitions,
    decode_key,
    decode_value,
    key_type,
)

__all__ = ["DELETE", "decode_offsets_record", "offsets_record_text"]

DELETE = "<DELETE>"
"""What Kafka's decoder prints for a tombstone's payload."""


def _key_data(key: GroupRecordKey) -> dict[str, Any]:
    match key:
        case OffsetCommitKey(group=group, topic=topic, partition=partition):
            return {"group": group, "topic": topic, "partition": partition}
        case ClassicGroupMetadataKey(group=group):
            return {"group": group}
        case (
            ConsumerGroupMetadataKey(group_id=group_id)
            | ConsumerGroupPartitionMetadataKey(group_id=group_id)
            | ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id)
            | ShareGroupMetadataKey(group_id=group_id)
        ):
            return {"groupId": group_id}
        case (
            ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member_id)
            | ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id)
            | ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id)
        ):
            return {"groupId": group_id, "memberId": member_id}


def _tps(items: tuple[TopicPartitions, ...]) -> list[dict[str, Any]]:
    return [{"topicId": tp.topic_id, "partitions": list(tp.partitions)} for tp in items]


def _value_data(value: GroupRecordValue) -> dict[str, Any]:
    match value:
        case OffsetCommitValue():
            doc: dict[str, Any] = {
                "offset": value.offset,
                "leaderEpoch": value.leader_epoch,
                "metadata": value.metadata,
                "commitTimestamp": value.commit_timestamp,
            }
            if value.expire_timestamp != -1:
                doc["expireTimestamp"] = value.expire_timestamp
            return doc
        case (
            ConsumerGroupMetadataValue(epoch=epoch, metadata_hash=metadata_hash)
            | ShareGroupMetadataValue(epoch=epoch, metadata_hash=metadata_hash)
        ):
            return {"epoch": epoch, "metadataHash": metadata_hash}
        case ConsumerGroupPartitionMetadataValue(topics=topics):
            return {
                "topics": [
                    {
                        "topicId": t.topic_id,
                        "topicName": t.topic_name,
                        "numPartitions": t.num_partitions,
                        "partitionMetadata": [
                            {"partition": p, "racks": list(racks)} for p, racks in t.partition_racks
                        ],
                    }
                    for t in topics
                ]
            }
        case ConsumerGroupMemberMetadataValue():
            doc = {
                "instanceId": value.instance_id,
                "rackId": value.rack_id,
                "clientId": value.client_id,
                "clientHost": value.client_host,
                "subscribedTopicNames": list(value.subscribed_topic_names),
                "subscribedTopicRegex": value.subscribed_topic_regex,
                "rebalanceTimeoutMs": value.rebalance_timeout_ms,
                "serverAssignor": value.server_assignor,
            }
            classic = value.classic_member_metadata
            if classic is not None:  # a tagged field: shown only when set, as Kafka's JSON
                doc["classicMemberMetadata"] = {
                    "sessionTimeoutMs": classic.session_timeout_ms,
                    "supportedProtocols": [
                        {"name": p.name, "metadata": p.metadata.hex()}
                        for p in classic.supported_protocols
                    ],
                }
            return doc
        case ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch):
            return {"assignmentEpoch": epoch}
        case ConsumerGroupTargetAssignmentMemberValue(topic_partitions=tps):
            return {"topicPartitions": _tps(tps)}
        case ConsumerGroupCurrentMemberAssignmentValue():
            return {
                "memberEpoch": value.member_epoch,
                "previousMemberEpoch": value.previous_member_epoch,
                "state": value.state.name,
                "assignedPartitions": _tps(value.assigned_partitions),
                "partitionsPendingRevocation": _tps(value.partitions_pending_revocation),
            }
        case GroupMetadataValue():
            return {
                "protocolType": value.protocol_type,
                "generation": value.generation,
                "protocol": value.protocol,
                "leader": value.leader,
                "currentStateTimestamp": value.current_state_timestamp,
                "members": [
                    {
                        "memberId": m.member_id,
                        "groupInstanceId": m.instance_id,
                        "clientId": m.client_id,
                        "clientHost": m.client_host,
                        "rebalanceTimeout": m.rebalance_timeout_ms,
                        "sessionTimeout": m.session_timeout_ms,
                        "subscription": m.subscription.hex(),
                        "assignment": m.assignment.hex(),
                    }
                    for m in value.members
                ],
            }
        case RawValue(data=data):
            return {"unparsed": data.hex()}


def decode_offsets_record(
    key: bytes | None, value: bytes | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``(key, payload)`` as JSON-ready objects; payload None for a tombstone."""
    if key is None:
        return {"error": "a record of __consumer_offsets without a key"}, None
    try:
        record_type = key_type(key)
        key_doc: dict[str, Any] = {
            "type": str(record_type),
            "data": _key_data(decode_key(key)),
        }
    except CorruptRecordError as exc:
        return {"error": exc.message, "hex": key.hex()}, (
            None if value is None else {"hex": value.hex()}
        )
    if value is None:
        return key_doc, None
    try:
        decoded = decode_value(record_type, value)
    except CorruptRecordError as exc:
        return key_doc, {"error": exc.message, "hex": value.hex()}
    assert decoded is not None  # value is not None
    version = int.from_bytes(value[:2], "big", signed=True)
    return key_doc, {"version": str(version), "data": _value_data(decoded)}


def offsets_record_text(key: bytes | None, value: bytes | None) -> str:
    """Kafka's text form: ``key: {...} payload: {...}`` (``payload: <DELETE>`` for a
    tombstone)."""
    key_doc, payload = decode_offsets_record(key, value)
    shown = DELETE if payload is None else json.dumps(payload, separators=(",", ":"))
    return f"key: {json.dumps(key_doc, separators=(',', ':'))} payload: {shown}"
