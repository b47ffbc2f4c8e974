"""The client APIs of the partitions, whatever the front door: Produce, Fetch (a consumer's),
ListOffsets, OffsetForLeaderEpoch (a consumer's), Metadata, DeleteRecords and InitProducerId.
Each API's one function holds its policy in front of the replica manager — the ACL checks, the
existence checks, Kafka's choice of error and the traffic it counts — as Kafka's
``KafkaApis`` handlers with ``AuthHelper``:

======================  ===================================================================
API                     policy
======================  ===================================================================
Produce                 WRITE on each topic (29, never reaching the log); a transactional
                        produce also WRITE on its transactional id (53, every partition) and
                        KIP-890's verification with the coordinator before the producer's
                        first append to a partition in its transaction
                        (:mod:`node.apis.txn_verification`); bytes and records in per topic
                        counted; a NOT_LEADER_OR_FOLLOWER names the current leader and its
                        endpoint (KIP-951, :meth:`RecordApis.with_current_leaders`)
Fetch                   READ on each topic (29); bytes out per topic counted; a
                        NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH names the current
                        leader and its endpoint (KIP-951)
ListOffsets             DESCRIBE on each topic (29)
OffsetForLeaderEpoch    DESCRIBE on each topic (29)
Metadata                DESCRIBE on each topic asked (29, whether it exists or not), all
                        topics: those the caller may DESCRIBE; a missing topic auto-created
                        when the request and ``auto.create.topics.enable`` allow it (the
                        admin room's CREATE check)
DescribeTopic-          as Metadata's (no auto-creation), paged
Partitions              (:mod:`node.apis.topic_partitions`)
DeleteRecords           DELETE on each topic (29)
InitProducerId          IDEMPOTENT_WRITE on the cluster or WRITE on any topic (KIP-679, 31);
                        a transactional id: :class:`~node.apis.transactions.TransactionApis`
======================  ===================================================================

Refused partitions are answered after the allowed ones; a door puts the answer back in request
order. Thread-safe (no state of its own).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from node.admin.authorization import AuthorizedAdmin
from node.apis.current_leader import (
    FETCH_REDIRECTS,
    PRODUCE_REDIRECTS,
    with_current_leaders,
)
from node.apis.topic_partitions import TopicPartitionsPage, describe_topic_partitions
from node.apis.transactions import TransactionApis
from node.apis.txn_verification import TxnVerification
from node.coordinator.producer_id_manager import ProducerIdManager, init_producer_id
from node.core.metadata_cache import MetadataCache
from node.core.pending_append import PendingAppend
from node.core.pending_fetch import PendingFetch
from node.core.replica_manager import ReplicaManager
from node.core.requests import (
    READ_UNCOMMITTED,
    Broker,
    DeleteRecordsPartition,
    DeleteRecordsResult,
    FetchPartition,
    FetchResult,
    InitProducerIdResult,
    ListOffsetsPartition,
    ListOffsetsResult,
    MetadataResult,
    OffsetForLeaderEpochPartition,
    OffsetForLeaderEpochResult,
    ProducePartition,
    ProduceResult,
    TopicMetadata,
)
from node.metrics.request_metrics import RequestMetrics, record_count
from node.security.auth_helper import AuthHelper, Caller
from odradek.acl import AclOperation
from odradek.errors import (
    InvalidRequestError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)

__all__ = ["FETCH_REDIRECTS", "PRODUCE_REDIRECTS", "RecordApis", "StartedProduce"]

TOPIC_DENIED = TopicAuthorizationFailedError.code
TRANSACTIONAL_ID_DENIED = TransactionalIdAuthorizationFailedError.code
UNKNOWN_TOPIC_OR_PARTITION = UnknownTopicOrPartitionError.code
_NO_TRANSACTIONS = "odradek has no transaction coordinator"

R = TypeVar("R", ProduceResult, FetchResult)


@dataclass(slots=True)
class StartedProduce:
    """A produce appended (or refused) and perhaps waiting for its replicas: ``pending`` is
    ``None`` when nothing reached the log. :meth:`finish` turns the core's results into the
    answer and counts the traffic, once."""

    partitions: Sequence[ProducePartition]
    refused: list[ProduceResult]
    pending: PendingAppend | None
    _metrics: RequestMetrics | None = None
    _counted: bool = field(default=False)
    deferred: bool = False
    """Nothing done: the produce must ask the transaction coordinator first (KIP-890), which
    may block; call :meth:`RecordApis.start_produce` again with ``blocking`` on a thread that
    may wait."""

    def finish(self, appended: Sequence[ProduceResult]) -> list[ProduceResult]:
        """The answer: ``appended`` (the core's results for what was appended) and the
        refusals; bytes and records in counted for each partition appended without error."""
        results = [*appended, *self.refused]
        if self._metrics is not None and not self._counted:
            self._counted = True
            failed = {(r.topic, r.partition) for r in results if r.error_code}
            self._metrics.count_produced(
                [
                    (p.topic, len(p.records), record_count(p.records))
                    for p in self.partitions
                    if p.records and (p.topic, p.partition) not in failed
                ]
            )
        return results

    def wait(self) -> list[ProduceResult]:
        """Blocks this thread until the answer is ready (acks=-1: the replicas)."""
        return self.finish([] if self.pending is None else self.pending.wait())


class RecordApis:
    """The partitions' client APIs over one node's core. ``auth`` ``None``: no authorizer,
    everything is allowed; ``metrics`` ``None``: traffic not counted."""

    def __init__(
        self,
        replicas: ReplicaManager,
        metadata: MetadataCache,
        auth: AuthHelper | None,
        producer_ids: ProducerIdManager | None,
        admin: AuthorizedAdmin | None,
        *,
        auto_create_topics: bool,
        metrics: RequestMetrics | None = None,
        transactions: TransactionApis | None = None,
        verification: TxnVerification | None = None,
    ) -> None:
        self.replicas = replicas
        self.metadata_cache = metadata
        self.auth = auth
        self._producer_ids = producer_ids
        self._admin = admin
        self._auto_create_topics = auto_create_topics
        self.metrics = metrics
        self.transactions = transactions
        """The transactional calls (``None``: a node without a transaction coordinator, which
        answers them TRANSACTIONAL_ID_AUTHORIZATION_FAILED)."""
        self.verification = verification
        """KIP-890's verification of a transactional produce (``None``: not verified,
        ``transaction.partition.verification.enable=false``)."""

    # -- Produce -------------------------------------------------------------------------------

    def start_produce(
        self,
        caller: Caller,
        partitions: Sequence[ProducePartition],
        *,
        acks: int,
        timeout_ms: int,
        transactional_id: str | None = None,
        blocking: bool = True,
    ) -> StartedProduce:
        """Checks and appends; the answer's :meth:`StartedProduce.finish` once its
        ``pending`` is done. ``blocking`` False: partitions whose append would wait for a lock,
        roll or flush are left for ``pending.append_blocked()`` (see
        :meth:`ReplicaManager.start_append`)."""
        if transactional_id is not None and (
            self.transactions is None or not self.transactions.may_write(caller, transactional_id)
        ):
            message = (
                _NO_TRANSACTIONS
                if self.transactions is None
                else f"{caller.principal} may not Write transactional id {transactional_id!r}"
            )
            refused = [
                ProduceResult(p.topic, p.partition, TRANSACTIONAL_ID_DENIED, error_message=message)
                for p in partitions
            ]
            return StartedProduce(partitions, refused, None, self.metrics)
        allowed, refused = (
            (list(partitions), []) if self.auth is None else self.auth.produce(caller, partitions)
        )
        if transactional_id is not None and self.verification is not None:
            needed = self.verification.needed(allowed)
            if needed and not blocking:
                return StartedProduce(partitions, [], None, self.metrics, deferred=True)
            if needed:
                codes = self.verification.verify(transactional_id, needed)
                failed = {tp: code for tp, code in codes.items() if code}
                refused += [
                    ProduceResult(
                        p.topic,
                        p.partition,
                        failed[(p.topic, p.partition)],
                        error_message="the partition is not in the producer's open transaction "
                        "(KIP-890 verification)",
                    )
                    for p in allowed
                    if (p.topic, p.partition) in failed
                ]
                allowed = [p for p in allowed if (p.topic, p.partition) not in failed]
        pending = None
        if allowed or not refused:
            pending = self.replicas.start_append(
                allowed, acks=acks, timeout_ms=timeout_ms, blocking=blocking
            )
        return StartedProduce(partitions, refused, pending, self.metrics)

    def with_current_leaders(
        self, results: Sequence[R], errors: frozenset[int], listener_name: str | None
    ) -> tuple[list[R], tuple[Broker, ...]]:
        """KIP-951: ``results`` with the current leader of each partition refused with one of
        ``errors`` (:data:`PRODUCE_REDIRECTS`, :data:`FETCH_REDIRECTS`), and those leaders'
        endpoints on ``listener_name`` (:mod:`node.apis.current_leader`)."""
        return with_current_leaders(
            self.replicas, self.metadata_cache, results, errors, listener_name
        )

    def produce(
        self,
        caller: Caller,
        partitions: Sequence[ProducePartition],
        *,
        acks: int,
        timeout_ms: int,
        transactional_id: str | None = None,
    ) -> list[ProduceResult]:
        """:meth:`start_produce` and wait (this thread) for the answer."""
        return self.start_produce(
            caller, partitions, acks=acks, timeout_ms=timeout_ms, transactional_id=transactional_id
        ).wait()

    # -- Fetch ---------------------------------------------------------------------------------

    def _fetch_screen(
        self, caller: Caller, partitions: Sequence[FetchPartition]
    ) -> tuple[list[FetchPartition], list[FetchResult]]:
        if self.auth is None:
            return list(partitions), []
        return self.auth.fetch(caller, partitions)

    def topic_names_by_id(self) -> dict[str, str]:
        """Every topic this node knows, by its id (Kafka's ``topicIdsToNames``: a Fetch v13+
        names its topics by id; an id not here is UNKNOWN_TOPIC_ID)."""
        return {
            state.topic_id: topic
            for (topic, _), state in self.metadata_cache.snapshot.partitions.items()
            if state.topic_id
        }

    def count_fetched(self, results: Sequence[FetchResult]) -> list[FetchResult]:
        """Bytes out per topic of a consumer's answer; returns ``results``."""
        if self.metrics is not None:
            self.metrics.count_fetched(
                [(r.topic, len(r.records)) for r in results], from_follower=False
            )
        return list(results)

    def start_fetch(
        self,
        caller: Caller,
        partitions: Sequence[FetchPartition],
        *,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        isolation_level: int = READ_UNCOMMITTED,
        as_slices: bool = False,
    ) -> tuple[list[FetchResult], list[FetchResult] | PendingFetch]:
        """A consumer's fetch that holds no thread while it waits: the refusals, and the
        core's results now or a :class:`PendingFetch` to wait on. The door passes the whole
        answer (refusals included) to :meth:`count_fetched`."""
        allowed, refused = self._fetch_screen(caller, partitions)
        started: list[FetchResult] | PendingFetch = []
        if allowed or not refused:
            started = self.replicas.start_fetch(
                allowed,
                max_wait_ms=max_wait_ms,
                min_bytes=min_bytes,
                max_bytes=max_bytes,
                isolation_level=isolation_level,
                as_slices=as_slices,
            )
        return refused, started

    def fetch(
        self,
        caller: Caller,
        partitions: Sequence[FetchPartition],
        *,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        isolation_level: int = READ_UNCOMMITTED,
        replica_id: int = -1,
    ) -> list[FetchResult]:
        """A consumer's fetch, waiting on this thread (long poll); refusals after the
        core's results."""
        allowed, refused = self._fetch_screen(caller, partitions)
        results: list[FetchResult] = []
        if allowed or not refused:
            results = self.replicas.fetch(
                allowed,
                from_follower=False,
                replica_id=replica_id,
                max_wait_ms=max_wait_ms,
                min_bytes=min_bytes,
                max_bytes=max_bytes,
                isolation_level=isolation_level,
            )
        # the gRPC door's answer carries the leader (its endpoints are the SDK's metadata's)
        answer, _ = self.with_current_leaders([*results, *refused], FETCH_REDIRECTS, None)
        return self.count_fetched(answer)

    # -- offsets -------------------------------------------------------------------------------

    def list_offsets(
        self,
        caller: Caller,
        partitions: Sequence[ListOffsetsPartition],
        *,
        replica_id: int = -1,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> list[ListOffsetsResult]:
        allowed, refused = (
            (list(partitions), [])
            if self.auth is None
            else self.auth.list_offsets(caller, partitions)
        )
        results = self.replicas.list_offsets(
            allowed, replica_id=replica_id, isolation_level=isolation_level
        )
        return [*results, *refused]

    def offset_for_leader_epoch(
        self, caller: Caller, partitions: Sequence[OffsetForLeaderEpochPartition]
    ) -> list[OffsetForLeaderEpochResult]:
        """A consumer's OffsetForLeaderEpoch (a follower's is the replication service's)."""
        ok = (
            dict.fromkeys((p.topic for p in partitions), True)
            if self.auth is None
            else self.auth.topics(caller, AclOperation.DESCRIBE, [p.topic for p in partitions])
        )
        refused = [
            OffsetForLeaderEpochResult(p.topic, p.partition, TOPIC_DENIED)
            for p in partitions
            if not ok[p.topic]
        ]
        return [
            *self.replicas.offset_for_leader_epoch([p for p in partitions if ok[p.topic]]),
            *refused,
        ]

    def delete_records(
        self, caller: Caller, partitions: Sequence[DeleteRecordsPartition], *, timeout_ms: int
    ) -> list[DeleteRecordsResult]:
        allowed, refused = (
            (list(partitions), [])
            if self.auth is None
            else self.auth.delete_records(caller, partitions)
        )
        results: list[DeleteRecordsResult] = []
        if allowed or not refused:
            results = self.replicas.delete_records(allowed, timeout_ms=timeout_ms)
        return [*results, *refused]

    # -- Metadata ------------------------------------------------------------------------------

    def metadata(
        self,
        caller: Caller,
        topics: Sequence[str] | None,
        listener_name: str | None,
        *,
        allow_auto_create: bool = False,
        list_departed: bool = False,
    ) -> MetadataResult:
        """Metadata for ``topics`` (``None``: all) as the caller may see it, with the brokers'
        endpoints on ``listener_name`` (``None``: the registered ones). A missing topic asked
        by name is created when ``allow_auto_create`` (the request's) and
        ``auto.create.topics.enable`` both allow it, and the caller may CREATE it: it answers
        what its creation said (LEADER_NOT_AVAILABLE once created). ``list_departed``: brokers
        that just left the live set are still listed (:mod:`node.core.metadata_cache`)."""

        def answer(asked: Sequence[str] | None) -> MetadataResult:
            return self.metadata_cache.metadata(
                list(asked or ()), asked is None, listener_name, list_departed=list_departed
            )

        result = answer(topics) if self.auth is None else self.auth.metadata(caller, topics, answer)
        if topics is not None and allow_auto_create and self._auto_create_topics:
            result = self._auto_create(caller, result)
        return result

    def describe_topic_partitions(
        self,
        caller: Caller,
        topics: Sequence[str],
        cursor: tuple[str, int] | None,
        partition_limit: int,
        listener_name: str | None,
    ) -> TopicPartitionsPage:
        """DescribeTopicPartitions' page (KIP-966; :mod:`node.apis.topic_partitions`)."""
        return describe_topic_partitions(
            self.metadata_cache, self.auth, caller, topics, cursor, partition_limit, listener_name
        )

    def _auto_create(self, caller: Caller, result: MetadataResult) -> MetadataResult:
        missing = [t.name for t in result.topics if t.error_code == UNKNOWN_TOPIC_OR_PARTITION]
        if not missing or self._admin is None:
            return result
        created = self._admin.auto_create_topics(str(caller.principal), caller.host, missing)
        topics = tuple(
            TopicMetadata(name=t.name, error_code=created[t.name]) if t.name in created else t
            for t in result.topics
        )
        return MetadataResult(result.brokers, result.controller_id, result.cluster_id, topics)

    # -- InitProducerId ------------------------------------------------------------------------

    def init_producer_id(
        self,
        caller: Caller,
        transactional_id: str | None,
        timeout_ms: int = 60_000,
        expected: tuple[int, int] | None = None,
    ) -> InitProducerIdResult:
        """A producer id for an idempotent producer (epoch 0), or with a transactional id the
        transaction coordinator's (``timeout_ms``: ``transaction.timeout.ms``; ``expected``:
        KIP-360's producer id and epoch); an empty id INVALID_REQUEST."""
        if transactional_id == "":
            return InitProducerIdResult(
                error_code=InvalidRequestError.code,
                error_message="the transactional id must not be empty",
            )
        if transactional_id is not None and self.transactions is not None:
            return self.transactions.init_producer_id(
                caller, transactional_id, timeout_ms, expected
            )
        if transactional_id is not None:
            return InitProducerIdResult(
                error_code=TRANSACTIONAL_ID_DENIED, error_message=_NO_TRANSACTIONS
            )
        if self.auth is not None:
            refused = self.auth.init_producer_id(caller)
            if refused is not None:
                return refused
        return init_producer_id(self._producer_ids, None)
