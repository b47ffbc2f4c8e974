"""The Kafka door's API table: each served API, its advertised versions and its handler.

The ranges are the ones every client we test accepts (``docs/kafka-protocol.md`` has the table
with the client that exercises each): kcat / librdkafka 2.0 and confluent-kafka / librdkafka
2.16 (which enable features by exact-version overlap, ``rdkafka_feature.c``), kafka-python 3
(which infers a Kafka release from the maxima), aiokafka 0.14 (which has almost no flexible
versions and fails when no version it implements is in range) and kafkajs 2.2. Non-flexible
versions throughout, except ApiVersions v3, Metadata v9-v13, the consumer group APIs'
flexible versions (KIP-848's are flexible only), FindCoordinator v3-v6, ListOffsets v6-v10,
Produce v9-v10 and Fetch v12-v16 (Kafka's current versions of the last three: the
max-timestamp offset, topic ids, and KIP-951's new leader in a NOT_LEADER answer). A maximum
is raised only with every field of the new versions implemented and tested by a real client or
raw frames (``tests/kafka/test_protocol_versions.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from node.kafka_door.handlers.acls import (
    handle_create_acls,
    handle_delete_acls,
    handle_describe_acls,
)
from node.kafka_door.handlers.classic_groups import (
    handle_heartbeat,
    handle_join_group,
    handle_leave_group,
    handle_sync_group,
)
from node.kafka_door.handlers.cluster import (
    handle_describe_cluster,
    handle_describe_log_dirs,
    handle_describe_producers,
)
from node.kafka_door.handlers.configs import (
    handle_alter_configs,
    handle_describe_configs,
    handle_incremental_alter_configs,
)
from node.kafka_door.handlers.fetch import handle_fetch
from node.kafka_door.handlers.find_coordinator import handle_find_coordinator
from node.kafka_door.handlers.group_offsets import (
    handle_offset_commit,
    handle_offset_delete,
    handle_offset_fetch,
    handle_txn_offset_commit,
)
from node.kafka_door.handlers.groups import (
    handle_consumer_group_describe,
    handle_consumer_group_heartbeat,
    handle_delete_groups,
    handle_describe_groups,
    handle_list_groups,
)
from node.kafka_door.handlers.metadata import handle_metadata
from node.kafka_door.handlers.offsets import (
    handle_delete_records,
    handle_list_offsets,
    handle_offset_for_leader_epoch,
)
from node.kafka_door.handlers.partitions import (
    handle_alter_partition_reassignments,
    handle_elect_leaders,
    handle_list_partition_reassignments,
)
from node.kafka_door.handlers.produce import handle_produce
from node.kafka_door.handlers.producer_ids import handle_init_producer_id
from node.kafka_door.handlers.sasl import SaslHandlers
from node.kafka_door.handlers.scram import (
    handle_alter_user_scram_credentials,
    handle_describe_user_scram_credentials,
)
from node.kafka_door.handlers.share_admin import (
    handle_alter_share_group_offsets,
    handle_delete_share_group_offsets,
    handle_describe_share_group_offsets,
)
from node.kafka_door.handlers.share_fetch import (
    handle_share_acknowledge,
    handle_share_fetch,
)
from node.kafka_door.handlers.share_groups import (
    handle_share_group_describe,
    handle_share_group_heartbeat,
)
from node.kafka_door.handlers.topic_partitions import handle_describe_topic_partitions
from node.kafka_door.handlers.topics import (
    handle_create_partitions,
    handle_create_topics,
    handle_delete_topics,
)
from node.kafka_door.handlers.transactions import (
    handle_add_offsets_to_txn,
    handle_add_partitions_to_txn,
    handle_describe_transactions,
    handle_end_txn,
    handle_list_transactions,
)
from node.kafka_door.registry import Api, Registry
from node.kafka_door.services import DoorServices

__all__ = ["build_registry"]


def _unreachable(*_: object) -> None:
    raise AssertionError("ApiVersions is answered by the connection loop")


def build_registry(services: DoorServices, sasl: SaslHandlers) -> Registry:
    """The registry of everything the door serves, bound to ``services``."""

    def bound(handler: Callable[..., Any]) -> Callable[..., Any]:
        return functools.partial(handler, services)

    return Registry(
        [
            # Produce v0-v2 are advertised and refused (KAFKA-18659: librdkafka compresses
            # only when Produce v0 is in the broker's range)
            # appended on the loop (no hand-off to a request thread and back for each
            # request), except what would wait for a lock, roll a segment or flush
            # v10 / v16: a NOT_LEADER answer names the new leader and its endpoint (KIP-951),
            # which librdkafka >= 2.4 follows without a metadata request
            Api(0, "Produce", 0, 10, bound(handle_produce), refused_below=3, on_loop=True),
            # v13+ name topics by id; v12+ carry the consumer's last fetched epoch
            Api(1, "Fetch", 4, 16, bound(handle_fetch)),
            # v7: the max-timestamp offset (KIP-734), v8: earliest local, v9: latest tiered
            Api(2, "ListOffsets", 1, 10, bound(handle_list_offsets)),
            # v10+ carry topic ids, which KIP-848 members need to read their assignments
            # v13: a top-level error code (KIP-1102), always NONE here
            Api(3, "Metadata", 0, 13, bound(handle_metadata)),
            # v4+: several keys per request (KIP-699); v6: the share key type (KIP-932)
            Api(10, "FindCoordinator", 0, 6, bound(handle_find_coordinator)),
            # the classic consumer group protocol (classic_groups.py)
            Api(11, "JoinGroup", 0, 5, bound(handle_join_group)),
            Api(12, "Heartbeat", 0, 3, bound(handle_heartbeat)),
            Api(13, "LeaveGroup", 0, 3, bound(handle_leave_group)),
            Api(14, "SyncGroup", 0, 3, bound(handle_sync_group)),
            # v0 is advertised (librdkafka 2.0 requires it in range to use SASL at all) and
            # refused: its raw-token exchange is not served; every client sends v1
            Api(17, "SaslHandshake", 0, 1, sasl.handshake, refused_below=1),
            Api(18, "ApiVersions", 0, 3, _unreachable),
            # v5+: the created topic's configs (KIP-525), v7: its id
            Api(19, "CreateTopics", 2, 7, bound(handle_create_topics)),
            Api(20, "DeleteTopics", 1, 3, bound(handle_delete_topics)),
            Api(21, "DeleteRecords", 0, 1, bound(handle_delete_records)),
            # v2+ flexible, v3+ KIP-360's producer id and epoch (transactional producers)
            Api(22, "InitProducerId", 0, 4, bound(handle_init_producer_id)),
            # transactions (handlers/transactions.py); v4+ of AddPartitionsToTxn is the
            # brokers' own verification, not served to clients
            Api(24, "AddPartitionsToTxn", 0, 3, bound(handle_add_partitions_to_txn)),
            Api(25, "AddOffsetsToTxn", 0, 3, bound(handle_add_offsets_to_txn)),
            Api(26, "EndTxn", 0, 3, bound(handle_end_txn)),
            # the offsets of a transaction (group_offsets.py): pending until its marker
            Api(28, "TxnOffsetCommit", 0, 3, bound(handle_txn_offset_commit)),
            Api(65, "DescribeTransactions", 0, 0, bound(handle_describe_transactions)),
            Api(66, "ListTransactions", 0, 1, bound(handle_list_transactions)),
            Api(
                23,
                "OffsetForLeaderEpoch",
                2,
                3,
                bound(handle_offset_for_leader_epoch),
            ),
            Api(29, "DescribeAcls", 1, 2, bound(handle_describe_acls)),
            Api(30, "CreateAcls", 1, 2, bound(handle_create_acls)),
            Api(31, "DeleteAcls", 1, 2, bound(handle_delete_acls)),
            Api(32, "DescribeConfigs", 1, 2, bound(handle_describe_configs)),
            Api(33, "AlterConfigs", 0, 1, bound(handle_alter_configs)),
            Api(35, "DescribeLogDirs", 1, 2, bound(handle_describe_log_dirs)),
            Api(36, "SaslAuthenticate", 0, 1, sasl.authenticate),
            Api(37, "CreatePartitions", 0, 1, bound(handle_create_partitions)),
            Api(43, "ElectLeaders", 0, 2, bound(handle_elect_leaders)),
            Api(44, "IncrementalAlterConfigs", 0, 1, bound(handle_incremental_alter_configs)),
            Api(
                45,
                "AlterPartitionReassignments",
                0,
                0,
                bound(handle_alter_partition_reassignments),
            ),
            Api(
                46,
                "ListPartitionReassignments",
                0,
                0,
                bound(handle_list_partition_reassignments),
            ),
            Api(
                50,
                "DescribeUserScramCredentials",
                0,
                0,
                bound(handle_describe_user_scram_credentials),
            ),
            Api(
                51,
                "AlterUserScramCredentials",
                0,
                0,
                bound(handle_alter_user_scram_credentials),
            ),
            Api(60, "DescribeCluster", 0, 1, bound(handle_describe_cluster)),
            Api(61, "DescribeProducers", 0, 0, bound(handle_describe_producers)),
            # KIP-966: the topics' partitions page by page (Kafka's admin describeTopics)
            Api(
                75,
                "DescribeTopicPartitions",
                0,
                0,
                bound(handle_describe_topic_partitions),
            ),
            # consumer groups over the group coordinator (node/kafka_door/handlers/groups.py,
            # group_offsets.py). OffsetCommit v9: Kafka takes a KIP-848 member's commit only
            # from v9 on; OffsetFetch v8: several groups, v9: the member's id and epoch;
            # ListGroups v4: the state filter, v5: the type filter
            Api(8, "OffsetCommit", 2, 10, bound(handle_offset_commit)),  # v10: topic ids
            Api(9, "OffsetFetch", 1, 10, bound(handle_offset_fetch)),  # v10: topic ids
            Api(15, "DescribeGroups", 0, 4, bound(handle_describe_groups)),
            Api(16, "ListGroups", 0, 5, bound(handle_list_groups)),
            Api(42, "DeleteGroups", 0, 1, bound(handle_delete_groups)),
            Api(47, "OffsetDelete", 0, 0, bound(handle_offset_delete)),
            Api(68, "ConsumerGroupHeartbeat", 0, 1, bound(handle_consumer_group_heartbeat)),
            Api(69, "ConsumerGroupDescribe", 0, 1, bound(handle_consumer_group_describe)),
            # share groups (KIP-932): membership on the group coordinator
            # (node/kafka_door/handlers/share_groups.py)
            Api(76, "ShareGroupHeartbeat", 1, 1, bound(handle_share_group_heartbeat)),
            Api(77, "ShareGroupDescribe", 1, 1, bound(handle_share_group_describe)),
            # share groups' partition-leader side (KIP-932, handlers/share_fetch.py): v2 adds
            # RENEW acknowledgements (KIP-1222) and the acquire mode
            Api(78, "ShareFetch", 1, 2, bound(handle_share_fetch)),
            Api(79, "ShareAcknowledge", 1, 2, bound(handle_share_acknowledge)),
            # share groups' offsets for admins (KIP-932, handlers/share_admin.py): v1 of
            # DescribeShareGroupOffsets adds the lag
            Api(90, "DescribeShareGroupOffsets", 0, 1, bound(handle_describe_share_group_offsets)),
            Api(91, "AlterShareGroupOffsets", 0, 0, bound(handle_alter_share_group_offsets)),
            Api(92, "DeleteShareGroupOffsets", 0, 0, bound(handle_delete_share_group_offsets)),
        ]
    )
