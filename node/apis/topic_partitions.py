"""DescribeTopicPartitions (KIP-966): the topics' partitions, page by page, in front of the
metadata cache, as Kafka's ``DescribeTopicPartitionsRequestHandler`` with
``getTopicMetadataForDescribeTopicResponse``:

* the topics asked (all of them when none is named), from the cursor's topic on, in name order;
* at most ``min(response_partition_limit, max.request.partition.size.limit)`` partitions (at
  least one) per answer, from the cursor's partition of its topic; an answer that stops early
  names the next topic and partition (``next_cursor``);
* a named topic the caller may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED with no id
  (after the others; left out when all topics are asked), an unknown one
  UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for a name Kafka would refuse);
* a partition's leader is -1 when it has no endpoint on the request's listener (no partition
  error, unlike Metadata); its replicas and ISR unfiltered, the replicas of brokers not live
  offline; no eligible leader replicas (KIP-966's ELR is KRaft's; null here);
* a cursor whose topic is not among those named, or whose partition is negative, is
  INVALID_REQUEST for every topic named (Kafka's ``getErrorResponse``).

Door-neutral; thread-safe (reads one metadata snapshot).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from node.core.metadata_cache import MetadataCache, Snapshot
from node.core.requests import PartitionMetadata
from node.security.auth_helper import AuthHelper, Caller
from odradek.acl import AclOperation
from odradek.errors import (
    InvalidRequestError,
    InvalidTopicError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from storage.log_manager import validate_topic_name

__all__ = [
    "MAX_REQUEST_PARTITION_SIZE_LIMIT",
    "DescribedTopic",
    "TopicPartitionsPage",
    "describe_topic_partitions",
]

MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000
"""Kafka's ``max.request.partition.size.limit`` default: the most partitions in one answer."""


@dataclass(frozen=True, slots=True)
class DescribedTopic:
    """One topic of the answer (``DescribeTopicPartitionsResponseTopic``)."""

    name: str
    error_code: int = 0
    topic_id: str = ""
    is_internal: bool = False
    partitions: tuple[PartitionMetadata, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicPartitionsPage:
    """The answer: the topics, and where the next page starts (``None``: nothing left)."""

    topics: tuple[DescribedTopic, ...]
    next_cursor: tuple[str, int] | None = None


def describe_topic_partitions(
    metadata: MetadataCache,
    auth: AuthHelper | None,
    caller: Caller,
    topics: Sequence[str],
    cursor: tuple[str, int] | None,
    partition_limit: int,
    listener_name: str | None,
) -> TopicPartitionsPage:
    """The page of ``topics`` (empty: all) from ``cursor`` (see the module docstring)."""
    fetch_all = not topics
    snapshot = metadata.snapshot
    by_topic: dict[str, list[int]] = {}
    for topic, partition in snapshot.partitions:
        by_topic.setdefault(topic, []).append(partition)
    start_topic = cursor[0] if cursor is not None else ""
    asked = sorted(by_topic) if fetch_all else sorted(set(topics))
    wanted = [t for t in asked if t >= start_topic]
    if cursor is not None and ((not fetch_all and cursor[0] not in wanted) or cursor[1] < 0):
        invalid = InvalidRequestError.code
        return TopicPartitionsPage(tuple(DescribedTopic(t, invalid) for t in dict.fromkeys(topics)))
    allowed = (
        dict.fromkeys(wanted, True)
        if auth is None
        else auth.topics(caller, AclOperation.DESCRIBE, wanted)
    )
    refused = (
        []
        if fetch_all
        else [
            DescribedTopic(t, TopicAuthorizationFailedError.code) for t in wanted if not allowed[t]
        ]
    )
    remaining = max(1, min(partition_limit, MAX_REQUEST_PARTITION_SIZE_LIMIT))
    out: list[DescribedTopic] = []
    next_cursor: tuple[str, int] | None = None
    for name in (t for t in wanted if allowed[t]):
        if remaining == 0:
            next_cursor = (name, 0)
            break
        indexes = sorted(by_topic.get(name, ()))
        if not indexes:
            if not fetch_all:
                out.append(DescribedTopic(name, _unknown_topic_error(name)))
            continue
        first = cursor[1] if cursor is not None and name == cursor[0] else 0
        upper = min(len(indexes), first + remaining)
        partitions = tuple(
            _partition(snapshot, name, p, listener_name)
            for p in range(first, upper)
            if (name, p) in snapshot.partitions
        )
        state = snapshot.partitions[(name, indexes[0])]
        out.append(
            DescribedTopic(
                name,
                topic_id=state.topic_id,
                is_internal=name.startswith("__"),
                partitions=partitions,
            )
        )
        if upper < len(indexes):
            next_cursor = (name, upper)
            break
        remaining -= len(partitions)
    return TopicPartitionsPage((*out, *refused), next_cursor)


def _unknown_topic_error(name: str) -> int:
    try:
        validate_topic_name(name)
    except InvalidTopicError:
        return InvalidTopicError.code
    return UnknownTopicOrPartitionError.code


def _partition(
    snapshot: Snapshot, topic: str, partition: int, listener_name: str | None
) -> PartitionMetadata:
    state = snapshot.partitions[(topic, partition)]
    leader = snapshot.brokers.get(state.leader)
    reachable = leader is not None and leader.on_listener(listener_name) is not None
    return PartitionMetadata(
        partition=partition,
        leader=state.leader if reachable else -1,
        leader_epoch=state.leader_epoch,
        replicas=tuple(state.replicas),
        isr=tuple(state.isr),
        offline_replicas=tuple(r for r in state.replicas if r not in snapshot.brokers),
    )
