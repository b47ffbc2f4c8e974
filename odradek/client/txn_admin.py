"""Transaction administration: the transaction methods of :class:`odradek.Admin`.

Kafka's ``Admin.listTransactions``, ``describeTransactions`` and ``describeProducers``
(KIP-664), over the ``Broker`` service's ListTransactions and DescribeTransactions and the
``Admin`` service's DescribeProducers:

* :meth:`TransactionAdmin.list_transactions` asks every live node, since each coordinates the
  transactional ids of the ``__transaction_state`` partitions it leads (Kafka's admin does the
  same), with the state, producer id and duration filters applied by each coordinator.
* :meth:`TransactionAdmin.describe_transactions` asks each id's coordinator (FindCoordinator
  ``key_type`` 1), found again after NOT_COORDINATOR and retried while it loads
  (COORDINATOR_LOAD_IN_PROGRESS), as the transactional producer does.

Both are questions: they raise the typed error of the first item that could not be answered
(TRANSACTIONAL_ID_NOT_FOUND for an unknown id). Thread-safe as :class:`odradek.Admin` is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import grpc

from odradek.client.connection import ConnectionPool, call
from odradek.client.errors import error_from_code
from odradek.client.leaders import Answer, LeaderTarget, send_to_leaders
from odradek.client.metadata import MetadataCache
from odradek.client.transactions import TransactionCoordinatorClient
from odradek.client.types import TopicPartition
from odradek.clock import Clock
from odradek.errors import OdradekError
from odradek.v1 import odradek_pb2 as pb

__all__ = [
    "TRANSACTION_STATES",
    "PartitionProducerState",
    "ProducerState",
    "TransactionAdmin",
    "TransactionDescription",
    "TransactionListing",
]

TRANSACTION_STATES = (
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
)
"""Kafka's ``TransactionState`` names, as ListTransactions filters on them."""


@dataclass(frozen=True, slots=True)
class TransactionListing:
    """Kafka's ``TransactionListing``, with the node that coordinates it (its
    ``allByBrokerId`` key)."""

    transactional_id: str
    producer_id: int
    state: str
    coordinator_id: int


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    """Kafka's ``TransactionDescription``."""

    transactional_id: str
    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int | None
    """When the open transaction began (ms since the epoch); None with none open."""
    topic_partitions: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True)
class ProducerState:
    """Kafka's ``ProducerState``: one active producer of a partition."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int | None
    """Of its last transaction marker on the partition; None: none written."""
    current_transaction_start_offset: int | None
    """The first offset of its open transaction on the partition; None: none open."""


@dataclass(frozen=True, slots=True)
class PartitionProducerState:
    """Kafka's ``PartitionProducerState``."""

    active_producers: tuple[ProducerState, ...]


def _producer(p: pb.ActiveProducer) -> ProducerState:
    return ProducerState(
        producer_id=p.producer_id,
        producer_epoch=p.producer_epoch,
        last_sequence=p.last_sequence,
        last_timestamp=p.last_timestamp,
        coordinator_epoch=None if p.coordinator_epoch < 0 else p.coordinator_epoch,
        current_transaction_start_offset=(
            None if p.current_txn_start_offset < 0 else p.current_txn_start_offset
        ),
    )


class TransactionAdmin:
    """Mixin of :class:`odradek.Admin` (which provides the attributes below)."""

    _pool: ConnectionPool
    _metadata: MetadataCache
    _clock: Clock
    _request_timeout_ms: int
    _default_api_timeout_ms: int
    _retry_backoff_ms: int

    def list_transactions(
        self,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        duration_ms: int | None = None,
    ) -> list[TransactionListing]:
        """The transactional ids of every node, sorted: only those in ``states`` (Kafka's
        names, :data:`TRANSACTION_STATES`), of ``producer_ids``, and open at least
        ``duration_ms``, if given. Raises ``ValueError`` for an unknown state or a negative
        duration, the typed error of a node that could not be asked."""
        wanted_states = list(states)
        unknown = sorted(set(wanted_states) - set(TRANSACTION_STATES))
        if unknown:
            raise ValueError(
                f"unknown transaction state {', '.join(unknown)} "
                f"(one of {', '.join(TRANSACTION_STATES)})"
            )
        if duration_ms is not None and duration_ms < 0:
            raise ValueError(f"duration_ms must be >= 0, not {duration_ms}")
        request = pb.ListTransactionsRequest(
            state_filters=wanted_states,
            producer_id_filters=list(producer_ids),
            duration_filter_ms=-1 if duration_ms is None else duration_ms,
        )
        cluster = self._metadata.refresh()
        out: list[TransactionListing] = []
        for broker in sorted(cluster.brokers.values(), key=lambda b: b.node_id):
            response = call(
                self._pool.broker(broker.address).ListTransactions,
                request,
                address=broker.address,
                timeout_ms=self._request_timeout_ms,
            )
            if response.error_code:
                raise error_from_code(response.error_code, "", f"node {broker.node_id}")
            out.extend(
                TransactionListing(
                    t.transactional_id, t.producer_id, t.transaction_state, broker.node_id
                )
                for t in response.transaction_states
            )
        return sorted(out, key=lambda t: t.transactional_id)

    def describe_transactions(
        self, transactional_ids: Iterable[str]
    ) -> dict[str, TransactionDescription]:
        """Each id's state, producer id and epoch, timeout, open transaction's start and
        partitions, from its coordinator. Raises the typed error of the first id that cannot
        be described (TRANSACTIONAL_ID_NOT_FOUND, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)."""
        out: dict[str, TransactionDescription] = {}
        for transactional_id in transactional_ids:
            client = TransactionCoordinatorClient(
                transactional_id,
                self._pool,
                self._metadata,
                self._clock,
                request_timeout_ms=self._request_timeout_ms,
                retry_backoff_ms=self._retry_backoff_ms,
            )

            def error_of(
                response: pb.DescribeTransactionsResponse, tid: str = transactional_id
            ) -> OdradekError | None:
                (state,) = response.transaction_states
                if state.error_code:
                    return error_from_code(state.error_code, "", f"transactional id {tid!r}")
                return None

            response: pb.DescribeTransactionsResponse = client.run(
                lambda s: s.DescribeTransactions,
                pb.DescribeTransactionsRequest(transactional_ids=[transactional_id]),
                error_of,
                deadline_ms=self._clock.monotonic_ms() + self._default_api_timeout_ms,
            )
            (t,) = response.transaction_states
            out[transactional_id] = TransactionDescription(
                transactional_id=transactional_id,
                coordinator_id=self._node_id_of(client.coordinator()),
                state=t.transaction_state,
                producer_id=t.producer_id,
                producer_epoch=t.producer_epoch,
                transaction_timeout_ms=t.transaction_timeout_ms,
                transaction_start_time_ms=(
                    None if t.transaction_start_time_ms < 0 else t.transaction_start_time_ms
                ),
                topic_partitions=frozenset(
                    TopicPartition(p.topic, p.partition) for p in t.partitions
                ),
            )
        return out

    def describe_producers(
        self, partitions: Iterable[TopicPartition], *, broker_id: int | None = None
    ) -> dict[TopicPartition, PartitionProducerState]:
        """Each partition's active producers, from its leader (or from node ``broker_id``, any
        of whose replicas answers, as Kafka's ``DescribeProducersOptions.brokerId``). Raises
        the typed error of the first partition that could not be answered
        (TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER from a
        node given that hosts no replica)."""
        wanted = list(dict.fromkeys(partitions))
        if broker_id is not None:
            brokers = self._metadata.refresh().brokers
            if broker_id not in brokers:
                raise ValueError(f"no live broker {broker_id}")
            address = brokers[broker_id].address
            response = call(
                self._pool.admin(address).DescribeProducers,
                pb.DescribeProducersRequest(
                    partitions=[
                        pb.TopicPartition(topic=t.topic, partition=t.partition) for t in wanted
                    ]
                ),
                address=address,
                timeout_ms=self._request_timeout_ms,
            )
            out: dict[TopicPartition, PartitionProducerState] = {}
            for p in response.partitions:
                tp = TopicPartition(p.topic, p.partition)
                if p.error_code:
                    raise error_from_code(p.error_code, p.error_message, str(tp))
                out[tp] = PartitionProducerState(tuple(_producer(a) for a in p.active_producers))
            return out

        def start(
            address: str, targets: list[LeaderTarget[int]]
        ) -> grpc.Future[pb.DescribeProducersResponse]:
            request = pb.DescribeProducersRequest(
                partitions=[
                    pb.TopicPartition(topic=t.tp.topic, partition=t.tp.partition) for t in targets
                ]
            )
            return self._pool.admin(address).DescribeProducers.future(
                request, timeout=self._request_timeout_ms / 1000
            )

        def answers(
            response: pb.DescribeProducersResponse,
        ) -> Iterable[Answer[PartitionProducerState]]:
            for p in response.partitions:
                yield Answer(
                    TopicPartition(p.topic, p.partition),
                    p.error_code,
                    p.error_message,
                    PartitionProducerState(tuple(_producer(a) for a in p.active_producers)),
                )

        found = send_to_leaders(
            self._metadata,
            self._clock,
            dict.fromkeys(wanted, 0),
            start,
            answers,
            timeout_ms=self._default_api_timeout_ms,
            retry_backoff_ms=self._retry_backoff_ms,
        )
        result: dict[TopicPartition, PartitionProducerState] = {}
        for tp in wanted:
            state = found[tp]
            if isinstance(state, OdradekError):
                raise state
            result[tp] = state
        return result

    def abort_transaction(
        self,
        tp: TopicPartition,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        *,
        timeout_ms: int | None = None,
    ) -> None:
        """Kafka's ``abortTransaction``: write an ABORT marker for the producer's open
        transaction on ``tp`` at its leader (the Admin service's AbortTransaction; needs
        CLUSTER_ACTION on the cluster), ending a hanging transaction: the partition's last
        stable offset moves past it. ``producer_epoch`` and ``coordinator_epoch`` are what
        :meth:`describe_producers` answers for the partition. Waits up to ``timeout_ms``
        (default ``request_timeout_ms``) for the marker to replicate; retries a moved leader
        for ``default_api_timeout_ms``. Raises the typed error (ClusterAuthorizationFailedError,
        InvalidProducerEpochError, TransactionCoordinatorFencedError, ...)."""
        wait_ms = self._request_timeout_ms if timeout_ms is None else timeout_ms

        def start(
            address: str, targets: list[LeaderTarget[int]]
        ) -> grpc.Future[pb.AbortTransactionResponse]:
            (target,) = targets
            request = pb.AbortTransactionRequest(
                topic=target.tp.topic,
                partition=target.tp.partition,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                coordinator_epoch=coordinator_epoch,
                timeout_ms=wait_ms,
            )
            return self._pool.admin(address).AbortTransaction.future(
                request, timeout=wait_ms / 1000 + self._request_timeout_ms / 1000
            )

        def answers(response: pb.AbortTransactionResponse) -> Iterable[Answer[int]]:
            yield Answer(tp, response.error_code, response.error_message, 0)

        (outcome,) = send_to_leaders(
            self._metadata,
            self._clock,
            {tp: 0},
            start,
            answers,
            timeout_ms=self._default_api_timeout_ms,
            retry_backoff_ms=self._retry_backoff_ms,
        ).values()
        if isinstance(outcome, OdradekError):
            raise outcome

    def _node_id_of(self, address: str) -> int:
        for broker in self._metadata.refresh().brokers.values():
            if broker.address == address:
                return broker.node_id
        return -1
