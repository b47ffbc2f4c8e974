"""The node's APIs, one door-neutral function per API (Kafka's ``KafkaApis`` with
``AuthHelper``): each holds its API's policy — which ACLs it checks on which resources, what a
missing resource answers, which error Kafka chooses, what traffic it counts — and calls the
core and its rooms. The two front doors (:mod:`node.grpc_door`, :mod:`node.kafka_door`) only
decode their wire into these functions' plain values and encode the answers, so an ACL means
the same through either door (``tests/kafka/test_door_parity.py`` keeps it so).

* :class:`~node.apis.records.RecordApis`: Produce, Fetch, ListOffsets, OffsetForLeaderEpoch,
  Metadata, DeleteRecords, InitProducerId;
* :class:`~node.apis.groups.GroupApis`: FindCoordinator, the KIP-848 and classic group
  protocols, the offset APIs, ListGroups, DescribeGroups, DeleteGroups;
* :class:`~node.apis.share_groups.ShareGroupApis`: ShareGroupHeartbeat, ShareGroupDescribe
  (KIP-932's share groups);
* :class:`~node.apis.share_admin.ShareAdminApis`: DescribeShareGroupOffsets,
  AlterShareGroupOffsets, DeleteShareGroupOffsets (KIP-932's share state, for admins);
* :class:`~node.apis.transactions.TransactionApis`: FindCoordinator for transactional ids,
  InitProducerId with one, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
  DescribeTransactions, ListTransactions;
* :class:`~node.apis.share_fetch.ShareFetchApis`: ShareFetch and ShareAcknowledge (KIP-932's
  share partitions on their leaders);
* :class:`~node.apis.share_state.ShareStateApis`: FindCoordinator for share partitions (key
  type 2: the share coordinator, KIP-932);
* :class:`~node.admin.authorization.AuthorizedAdmin`: the admin calls (topics, configs, ACLs,
  SCRAM credentials, elections, reassignments, log dirs), the admin room's own policy layer.

The request count and time per API (Kafka's RequestMetrics) are measured by each door around
its wire request, under the same names; the Kafka door also counts the error codes of its
answers (ErrorsPerSec).
"""

from __future__ import annotations

from dataclasses import dataclass

from node.admin.authorization import AuthorizedAdmin
from node.apis.groups import GroupApis
from node.apis.records import RecordApis
from node.apis.share_admin import ShareAdminApis
from node.apis.share_fetch import ShareFetchApis
from node.apis.share_groups import ShareGroupApis
from node.apis.share_state import ShareStateApis
from node.apis.transactions import TransactionApis

__all__ = [
    "BrokerApis",
    "GroupApis",
    "RecordApis",
    "ShareAdminApis",
    "ShareFetchApis",
    "ShareGroupApis",
    "ShareStateApis",
    "TransactionApis",
]


@dataclass(frozen=True, slots=True)
class BrokerApis:
    """Every API a client may call on this node, for both doors. Built once by the node."""

    records: RecordApis
    groups: GroupApis | None
    """``None``: a node without a group coordinator."""
    admin: AuthorizedAdmin | None
    transactions: TransactionApis | None = None
    """``None``: a node without a transaction coordinator."""
    share: ShareFetchApis | None = None
    """ShareFetch and ShareAcknowledge (``None``: a node without share partitions)."""
    share_groups: ShareGroupApis | None = None
    """``None``: a node without a group coordinator."""
    share_state: ShareStateApis | None = None
    """FindCoordinator key type 2; ``None``: a node without a share coordinator."""
    share_admin: ShareAdminApis | None = None
    """The share group offset APIs (``None``: a node without a group coordinator or share
    partitions)."""
