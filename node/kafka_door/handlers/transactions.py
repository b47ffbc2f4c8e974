"""The transactional APIs over the Kafka door: AddPartitionsToTxn (24) v0-v3, AddOffsetsToTxn
(25) v0-v3, EndTxn (26) v0-v3, DescribeTransactions (65) v0 and ListTransactions (66) v0-v1,
each decoded, handed to its one function in :class:`~node.apis.transactions.TransactionApis`
(the policy: TransactionalId, topic and group ACLs) and encoded. AddPartitionsToTxn v4+ (the
brokers' batched verification, KIP-890) is not served: the brokers verify among themselves over
gRPC. The calls run on the request threads and block while the coordinator's write replicates.

PRODUCER_FENCED (KIP-588) is answered only to the versions that know it: AddPartitionsToTxn,
AddOffsetsToTxn and EndTxn v2+ and InitProducerId v4+ (:func:`fenced_for_version`); older ones
are told INVALID_PRODUCER_EPOCH, as Kafka's ``KafkaApis`` translates it (a client of those
versions, aiokafka's, knows no code 90 and failed a fenced commit with an unknown error).
"""

from __future__ import annotations

import datetime
from typing import Any

from node.apis.transactions import TransactionApis
from node.kafka_door import views
from node.kafka_door.build import make, nested, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.services import DoorServices
from odradek.errors import (
    InvalidProducerEpochError,
    ProducerFencedError,
    TransactionalIdAuthorizationFailedError,
)

__all__ = [
    "handle_add_offsets_to_txn",
    "handle_add_partitions_to_txn",
    "handle_describe_transactions",
    "handle_end_txn",
    "fenced_for_version",
    "handle_list_transactions",
]

ADD_PARTITIONS_TO_TXN = 24
ADD_OFFSETS_TO_TXN = 25
END_TXN = 26
DESCRIBE_TRANSACTIONS = 65
LIST_TRANSACTIONS = 66
_NONE = TransactionalIdAuthorizationFailedError.code
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
FENCED_SINCE = 2
"""The first AddPartitionsToTxn, AddOffsetsToTxn and EndTxn version told PRODUCER_FENCED."""


def fenced_for_version(code: int, version: int, since: int = FENCED_SINCE) -> int:
    """``code`` as a request of ``version`` may be answered: PRODUCER_FENCED, which versions
    before ``since`` do not know (KIP-588), becomes INVALID_PRODUCER_EPOCH."""
    if code == ProducerFencedError.code and version < since:
        return InvalidProducerEpochError.code
    return code


def _apis(services: DoorServices) -> TransactionApis | None:
    return services.api.transactions


def handle_add_partitions_to_txn(
    services: DoorServices, ctx: RequestContext, request: views.AddPartitionsToTxnRequestView
) -> Any:
    tid = str(request.v3_and_below_transactional_id)
    wanted = [(str(t.name), int(p)) for t in request.v3_and_below_topics for p in t.partitions]
    apis = _apis(services)
    codes = (
        dict.fromkeys(wanted, _NONE)
        if apis is None
        else apis.add_partitions_to_txn(
            ctx.caller,
            tid,
            int(request.v3_and_below_producer_id),
            int(request.v3_and_below_producer_epoch),
            wanted,
        )
    )
    cls = response_class_of(ctx)
    topic_cls = nested(cls, "AddPartitionsToTxnTopicResult")
    partition_cls = nested(cls, "AddPartitionsToTxnPartitionResult")
    by_topic: dict[str, list[int]] = {}
    for topic, partition in dict.fromkeys(wanted):
        by_topic.setdefault(topic, []).append(partition)
    return make(
        cls,
        throttle_time=0,
        results_by_topic_v3_and_below=tuple(
            make(
                topic_cls,
                name=topic,
                results_by_partition=tuple(
                    make(
                        partition_cls,
                        partition_index=p,
                        partition_error_code=fenced_for_version(codes[(topic, p)], ctx.api_version),
                    )
                    for p in partitions
                ),
            )
            for topic, partitions in by_topic.items()
        ),
    )


def handle_add_offsets_to_txn(
    services: DoorServices, ctx: RequestContext, request: views.AddOffsetsToTxnRequestView
) -> Any:
    apis = _apis(services)
    code = (
        _NONE
        if apis is None
        else apis.add_offsets_to_txn(
            ctx.caller,
            str(request.transactional_id),
            int(request.producer_id),
            int(request.producer_epoch),
            str(request.group_id),
        )
    )
    cls = response_class_of(ctx)
    return make(cls, throttle_time=0, error_code=fenced_for_version(code, ctx.api_version))


def handle_end_txn(
    services: DoorServices, ctx: RequestContext, request: views.EndTxnRequestView
) -> Any:
    apis = _apis(services)
    code = (
        _NONE
        if apis is None
        else apis.end_txn(
            ctx.caller,
            str(request.transactional_id),
            int(request.producer_id),
            int(request.producer_epoch),
            bool(request.committed),
        )
    )
    cls = response_class_of(ctx)
    return make(cls, throttle_time=0, error_code=fenced_for_version(code, ctx.api_version))


def handle_describe_transactions(
    services: DoorServices, ctx: RequestContext, request: views.DescribeTransactionsRequestView
) -> Any:
    ids = [str(t) for t in request.transactional_ids]
    apis = _apis(services)
    cls = response_class_of(ctx)
    state_cls = nested(cls, "TransactionState")
    topic_cls = nested(cls, "TopicData")
    states = []
    for d in [] if apis is None else apis.describe_transactions(ctx.caller, ids):
        by_topic: dict[str, list[int]] = {}
        for topic, partition in d.partitions:
            by_topic.setdefault(topic, []).append(partition)
        states.append(
            make(
                state_cls,
                error_code=d.error_code,
                transactional_id=d.transactional_id,
                transaction_state=d.state,
                transaction_timeout=d.timeout_ms,
                transaction_start_time=_start_time(d.start_ms),
                producer_id=d.producer_id,
                producer_epoch=d.producer_epoch,
                topics=tuple(
                    make(topic_cls, topic=t, partitions=tuple(ps)) for t, ps in by_topic.items()
                ),
            )
        )
    return make(cls, throttle_time=0, transaction_states=tuple(states))


def _start_time(start_ms: int) -> Any:
    """Kafka's int64 start time as kio writes it: -1 (no transaction open, or an id refused or
    not found) is a time 1 ms before the epoch, since the field is not nullable (``make``'s
    ``None`` for -1 made the answer unwritable and the connection was closed)."""
    return _EPOCH + datetime.timedelta(milliseconds=start_ms)


def handle_list_transactions(
    services: DoorServices, ctx: RequestContext, request: views.ListTransactionsRequestView
) -> Any:
    apis = _apis(services)
    listed, unknown = (
        ([], [])
        if apis is None
        else apis.list_transactions(
            ctx.caller,
            [str(s) for s in request.state_filters or ()],
            [int(p) for p in request.producer_id_filters or ()],
            int(getattr(request, "duration_filter", -1)),  # v1+
        )
    )
    cls = response_class_of(ctx)
    state_cls = nested(cls, "TransactionState")
    return make(
        cls,
        throttle_time=0,
        error_code=0,
        unknown_state_filters=tuple(unknown),
        transaction_states=tuple(
            make(
                state_cls,
                transactional_id=t.transactional_id,
                producer_id=t.producer_id,
                transaction_state=t.state,
            )
            for t in listed
        ),
    )
