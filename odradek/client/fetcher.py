"""Turning the ``records`` bytes of a fetch answer into consumer records.

A fetch answer holds whole batches as the leader stored them, so the first batch may start
before the offset asked for (the leader reads from the batch containing it), and the last one
may be cut short by the byte limits (it is then ignored, as Kafka's consumer ignores a partial
trailing batch). :func:`parse_fetched` keeps the records at or after the fetch offset, skips
control batches, and says where the next fetch starts: after the last complete batch, which
may be beyond the last record returned (compaction leaves gaps; control batches hold no user
records).

A read_committed answer (``aborted_transactions`` given, even empty) also drops the batches of
aborted transactions, as Kafka's ``CompletedFetch``: the answer names each aborted
transaction overlapping it by producer id and first offset; going through the batches in
offset order, a producer becomes aborted at its transaction's first offset, its transactional
batches are skipped while it is, and its ABORT marker ends that. The leader answers a
read_committed fetch only up to the last stable offset, so nothing of an open transaction
comes.

Pure; thread-safe.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain, islice, repeat

from odradek.client.types import ConsumerRecord, TopicPartition
from odradek.errors import MessageTooLargeError
from odradek.records import NO_PARTITION_LEADER_EPOCH, RecordBatch, TimestampType, read_batches
from odradek.records.batch import columns_of
from odradek.records.control import ControlRecordType, end_txn_marker_of

__all__ = ["Fetched", "parse_fetched"]

_new = tuple.__new__


@dataclass(frozen=True, slots=True)
class Fetched:
    """The records of one partition's fetch answer and the offset to fetch next."""

    records: list[ConsumerRecord]
    next_offset: int


def parse_fetched(
    tp: TopicPartition,
    data: bytes,
    fetch_offset: int,
    *,
    check_crcs: bool = True,
    aborted_transactions: Iterable[tuple[int, int]] | None = None,
) -> Fetched:
    """The records of ``data`` at or after ``fetch_offset`` (see the module docstring);
    ``aborted_transactions`` (producer id, first offset): a read_committed answer's.

    Raises :class:`~odradek.errors.CorruptRecordError` for a batch whose CRC does not match
    (with ``check_crcs``) or that cannot be decoded, and
    :class:`~odradek.errors.MessageTooLargeError` when ``data`` is not empty but holds no
    complete batch (the partition's byte limit is smaller than the batch at the fetch offset).
    """
    topic, partition = tp.topic, tp.partition
    next_offset = fetch_offset
    complete = 0
    batches: list[RecordBatch] = []
    # read_committed: the aborted transactions not yet reached, by first offset, and the
    # producers inside one
    upcoming = None if aborted_transactions is None else sorted(aborted_transactions, key=_first)
    aborting: set[int] = set()
    for batch in read_batches(data):
        complete += 1
        if batch.last_offset < fetch_offset:
            continue
        if check_crcs:
            batch.validate()
        next_offset = max(next_offset, batch.next_offset)
        if upcoming is not None and batch.is_transactional:
            while upcoming and upcoming[0][1] <= batch.last_offset:
                aborting.add(upcoming.pop(0)[0])
            if batch.is_control:
                marker = end_txn_marker_of(batch)
                if marker is not None and marker.control_type is ControlRecordType.ABORT:
                    aborting.discard(batch.producer_id)
                continue
            if batch.producer_id in aborting:
                continue
        if not batch.is_control and batch.records_count != 0:  # a negative one is corrupt
            batches.append(batch)
    records: list[ConsumerRecord] = []
    if batches:
        # All the answer's batches decoded at once, then one tuple per record built by C
        # loops (map/zip/repeat) rather than a Python call per record: most of the consumer's
        # cost per record.
        offsets, timestamps, keys, values, headers = columns_of(batches)
        n = len(offsets)
        if len(batches) == 1:
            epoch = batches[0].partition_leader_epoch
            types: Iterable[TimestampType] = repeat(batches[0].timestamp_type, n)
            epochs: Iterable[int | None] = repeat(
                None if epoch == NO_PARTITION_LEADER_EPOCH else epoch, n
            )
        else:
            types = chain.from_iterable(
                repeat(batch.timestamp_type, batch.records_count) for batch in batches
            )
            epochs = chain.from_iterable(
                repeat(
                    None
                    if batch.partition_leader_epoch == NO_PARTITION_LEADER_EPOCH
                    else batch.partition_leader_epoch,
                    batch.records_count,
                )
                for batch in batches
            )
        skip = bisect_left(offsets, fetch_offset) if offsets and offsets[0] < fetch_offset else 0
        if skip:  # the batch holding the fetch offset: its records before it
            offsets, timestamps, keys, values, headers = (
                offsets[skip:],
                timestamps[skip:],
                keys[skip:],
                values[skip:],
                headers[skip:],
            )
            types = islice(types, skip, None)
            epochs = islice(epochs, skip, None)
            n -= skip
        records = list(
            map(
                _new,
                repeat(ConsumerRecord, n),
                zip(
                    repeat(topic, n),
                    repeat(partition, n),
                    offsets,
                    timestamps,
                    types,
                    keys,
                    values,
                    headers,
                    epochs,
                    strict=True,
                ),
            )
        )
    if data and complete == 0:
        raise MessageTooLargeError(
            f"{tp}: the fetch answer at offset {fetch_offset} holds no complete batch "
            f"({len(data)} bytes); raise max_partition_fetch_bytes"
        )
    return Fetched(records, next_offset)


def _first(aborted: tuple[int, int]) -> int:
    return aborted[1]
