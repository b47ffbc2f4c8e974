"""Transactional offset commits (KIP-98's TxnOffsetCommit, KIP-447's fencing): the offsets a
transactional producer commits for a group inside its transaction, as Kafka's
``OffsetMetadataManager`` keeps them (``pendingTransactionalOffsets``,
``replayEndTransactionMarker``).

A TxnOffsetCommit is written to the group's ``__consumer_offsets`` partition as OffsetCommit
records in a *transactional* batch of the producer's id and epoch (the log checks the epoch:
an older one is INVALID_PRODUCER_EPOCH). Its offsets are then *pending*, per producer id
(:class:`PendingTxnOffsets`): not in the group's committed offsets, so OffsetFetch does not
answer them (with ``require_stable`` it answers UNSTABLE_OFFSET_COMMIT for such a partition).
When the transaction's COMMIT marker is written to the partition the producer's pending
offsets become the group's committed ones; an ABORT marker drops them. A coordinator loading
the partition replays transactional batches into the pending offsets and resolves them at
their control batches, so a transaction decided before a failover is decided the same way
after it.

A tombstone of a partition's offset drops that partition's pending offsets from every open
transaction (Kafka's replay of a tombstone), and DeleteGroups writes one for each pending
partition of the group (:meth:`PendingTxnOffsets.with_pending`, Kafka's ``deleteAllOffsets``):
a group without members is deleted with its pending offsets, and a COMMIT after that does not
bring them back. Offset expiry skips a partition with a pending offset and keeps a group
that has pending offsets (:meth:`PendingTxnOffsets.is_pending`, Kafka's
``cleanupExpiredOffsets``).

At a COMMIT a pending offset becomes the committed one only if the log holds it later than the
partition's committed offset; a plain OffsetCommit written after the TxnOffsetCommit is kept
(Kafka's ``replayEndTransactionMarker`` compares the two records' offsets in
``__consumer_offsets``; so does a load, which sees the records at their offsets).

:func:`check_txn_offset_commit` is KIP-447's check of the request's member, generation and
instance id. Pure values; the caller holds the shard's lock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from node.coordinator.classic_group import ClassicGroup, validate_offset_commit
from node.coordinator.group_state import (
    OFFSET_METADATA_MAX_BYTES,
    ConsumerGroup,
    GroupRecord,
    TopicInfo,
)
from odradek.errors import (
    CorruptRecordError,
    IllegalGenerationError,
    OffsetMetadataTooLargeError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
)
from odradek.group_records import OffsetCommitKey, OffsetCommitValue, decode_key

__all__ = ["PendingTxnOffsets", "check_txn_offset_commit", "txn_offset_commit_records"]

RawRecord = tuple[bytes, bytes | None]
"""An ``__consumer_offsets`` record's key and value bytes."""

_Key = tuple[str, str, int]
"""(group, topic, partition)."""


class PendingTxnOffsets:
    """The offsets written in open transactions on one ``__consumer_offsets`` partition: per
    producer id, the last record of each (group, topic, partition) with its position in the
    partition's log. Kafka's ``pendingTransactionalOffsets`` and ``openTransactionsByGroup``.
    The positions of the plain offset commits replayed on the partition are kept too, so that a
    COMMIT marker keeps whichever offset the log holds later (``replayEndTransactionMarker``).

    A position is a record's offset in ``__consumer_offsets`` when a load reads it back; a
    record this leader writes after its load gets the next position counted from there. The
    marker writer also appends to the partition, so such a position may be lower than the
    record's real offset. That does not matter here: positions are only compared with each
    other, and the coordinator writes its records one write at a time under the shard's lock,
    in log order."""

    def __init__(self) -> None:
        self._by_producer: dict[int, dict[_Key, tuple[int, RawRecord]]] = {}
        self._committed_at: dict[_Key, int] = {}
        """The position of each (group, topic, partition)'s committed offset."""
        self._next_position = 0

    def _positioned(
        self, records: Sequence[RawRecord], positions: Sequence[int] | None
    ) -> list[tuple[int, _Key, RawRecord]]:
        """The offset-commit records of ``records`` with their key and position (``None``:
        this leader's own write, the next positions). Other records, and records that do not
        decode, are skipped."""
        if positions is None:
            positions = range(self._next_position, self._next_position + len(records))
        out: list[tuple[int, _Key, RawRecord]] = []
        for position, (key, value) in zip(positions, records, strict=True):
            self._next_position = max(self._next_position, position + 1)
            try:
                decoded = decode_key(key)
            except CorruptRecordError:
                continue
            if isinstance(decoded, OffsetCommitKey):
                out.append(
                    (position, (decoded.group, decoded.topic, decoded.partition), (key, value))
                )
        return out

    def add(
        self,
        producer_id: int,
        records: Sequence[RawRecord],
        positions: Sequence[int] | None = None,
    ) -> None:
        """Records of ``producer_id``'s transactional batch (offset commits; any other record
        is ignored, as a record that does not decode), at ``positions`` (a load: their offsets;
        ``None``: this leader's write, after everything seen)."""
        for position, key, record in self._positioned(records, positions):
            self._by_producer.setdefault(producer_id, {})[key] = (position, record)

    def replayed(
        self, records: Sequence[RawRecord], positions: Sequence[int] | None = None
    ) -> None:
        """Plain (non-transactional) records replayed on the partition, at ``positions`` (as
        :meth:`add`'s). An offset commit records its position. A tombstone (DeleteGroups,
        OffsetDelete, expiry) also drops that partition's pending offset from every open
        transaction, as Kafka's replay of a tombstone does: a deleted group's offsets do not
        come back when a transaction that wrote them commits."""
        for position, key, (_, value) in self._positioned(records, positions):
            if value is not None:
                self._committed_at[key] = position
                continue
            self._committed_at.pop(key, None)
            for producer_id, pending in list(self._by_producer.items()):
                if pending.pop(key, None) is not None and not pending:
                    del self._by_producer[producer_id]

    def end(self, producer_id: int, commit: bool) -> list[RawRecord]:
        """The producer's transaction ended: its pending records to apply to the committed
        offsets (COMMIT), or none (ABORT); either way no longer pending. A COMMIT keeps a
        partition's committed offset when the log holds it later than the pending one (a plain
        OffsetCommit written after the TxnOffsetCommit), as Kafka's
        ``replayEndTransactionMarker`` compares their record offsets."""
        pending = self._by_producer.pop(producer_id, {})
        if not commit:
            return []
        out: list[RawRecord] = []
        for key, (position, record) in pending.items():
            if position > self._committed_at.get(key, -1):
                self._committed_at[key] = position
                out.append(record)
        return out

    def is_pending(self, group_id: str, topic: str, partition: int) -> bool:
        """Whether an open transaction holds an offset of the group's partition."""
        key = (group_id, topic, partition)
        return any(key in pending for pending in self._by_producer.values())

    def pending_partitions(self, group_id: str) -> set[tuple[str, int]]:
        """The group's (topic, partition)s with an offset in an open transaction."""
        return {
            (topic, partition)
            for pending in self._by_producer.values()
            for group, topic, partition in pending
            if group == group_id
        }

    def with_pending(
        self, group_id: str, committed: Iterable[tuple[str, int]]
    ) -> list[tuple[str, int]]:
        """The partitions whose offsets a DeleteGroups of the group deletes: the ``committed``
        ones, then those only an open transaction holds (Kafka's ``deleteAllOffsets`` writes a
        tombstone for each, which :meth:`replayed` turns into dropping the pending offsets).
        A group is deleted with its pending offsets, not refused: Kafka's
        ``validateDeleteGroup`` looks at the members only."""
        out = list(committed)
        return out + sorted(self.pending_partitions(group_id) - set(out))

    def producers(self) -> list[int]:
        """The producer ids with pending offsets."""
        return sorted(self._by_producer)


def check_txn_offset_commit(
    classic: ClassicGroup | None,
    group: ConsumerGroup | None,
    member_id: str,
    generation_id: int,
    instance_id: str | None,
) -> None:
    """KIP-447's check of a TxnOffsetCommit (Kafka's ``validateOffsetCommit`` with
    ``isTransactional``): a request without member id, generation (-1) and instance id is not
    checked (v0-v2 carry none); otherwise a classic group checks the member (UNKNOWN_MEMBER_ID,
    FENCED_INSTANCE_ID) and the generation (ILLEGAL_GENERATION); a consumer group the member
    (UNKNOWN_MEMBER_ID) and its epoch (a classic member: ILLEGAL_GENERATION; a KIP-848 one:
    STALE_MEMBER_EPOCH). A commit with a negative generation to a group without members is
    accepted. No group: nothing to check (the commit makes a simple group)."""
    if group is not None:
        if generation_id < 0 and not group.members:
            return
        if generation_id < 0 and not member_id and instance_id is None:
            return
        member = group.members.get(member_id)
        if member is None:
            raise UnknownMemberIdError(f"Member {member_id} is not a member of the group.")
        if generation_id != member.member_epoch:
            if member.classic is not None:
                raise IllegalGenerationError(
                    f"The generation {generation_id} is not the member's {member.member_epoch}."
                )
            raise StaleMemberEpochError(
                f"The member's epoch {generation_id} is not its current epoch "
                f"{member.member_epoch}."
            )
        return
    if classic is not None:
        validate_offset_commit(classic, member_id, generation_id, instance_id, transactional=True)


def txn_offset_commit_records(
    group_id: str,
    commits: Sequence[tuple[str, int, int, int, str]],
    topics: Mapping[str, TopicInfo],
    now_ms: int,
) -> tuple[list[GroupRecord], list[tuple[str, int, Exception | None]]]:
    """The OffsetCommit records of ``commits`` (topic, partition, offset, leader epoch,
    metadata) to write in the transaction, and per partition None or its error
    (OFFSET_METADATA_TOO_LARGE, UNKNOWN_TOPIC_OR_PARTITION)."""
    records: list[GroupRecord] = []
    outcome: list[tuple[str, int, Exception | None]] = []
    for topic, partition, offset, leader_epoch, metadata in commits:
        error: Exception | None = None
        info = topics.get(topic)
        if len(metadata.encode()) > OFFSET_METADATA_MAX_BYTES:
            error = OffsetMetadataTooLargeError(
                f"metadata of {len(metadata.encode())} bytes exceeds {OFFSET_METADATA_MAX_BYTES}"
            )
        elif info is None or not 0 <= partition < info.num_partitions:
            error = UnknownTopicOrPartitionError(f"{topic}-{partition} does not exist")
        else:
            records.append(
                (
                    OffsetCommitKey(group_id, topic, partition),
                    OffsetCommitValue(offset, metadata, now_ms, leader_epoch),
                )
            )
        outcome.append((topic, partition, error))
    return records, outcome
