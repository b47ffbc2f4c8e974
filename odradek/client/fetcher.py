"""Turning the ``records`` bytes of a fetch answer into consumer records.

A fetch answer holds whole batches as the leader stored them, so the first batch may start
before the offset asked for (the leader reads from the batch containing it), and the last one
may be cut short by the byte limits (it is then ignored, as Kafka's consumer ignores a partial
trailing batch). :func:`parse_fetched` keeps the records at or after the fetch offset, skips
control batches, and says where the next fetch starts: after the last complete batch, which
may be beyond the last record returned (compaction leaves gaps; control batches hold no user
records).

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

__all__ = ["Fetched", "parse_fetched"]

_new = tuple.__new__


@dataclass(frozen=True, slots=True)
class Fetched:
    """The records of one partition's fetch answer and the offset to fetch next."""

    records: list[ConsumerRecord]
    next_offset: int


def parse_fetched(
    tp: TopicPartition, data: bytes, fetch_offset: int, *, check_crcs: bool = True
) -> Fetched:
    """The records of ``data`` at or after ``fetch_offset`` (see the module docstring).

    Raises :class:`~odradek.errors.CorruptRecordError` for a batch whose CRC does not match
    (with ``check_crcs``) or that cannot be decoded, and
    :class:`~odradek.errors.MessageTooLargeError` when ``data`` is not empty but holds no
    complete batch (the partition's byte limit is smaller than the batch at the fetch offset).
    """
    topic, partition = tp.topic, tp.partition
    next_offset = fetch_offset
    complete = 0
    batches: list[RecordBatch] = []
    for batch in read_batches(data):
        complete += 1
        if batch.last_offset < fetch_offset:
            continue
        if check_crcs:
            batch.validate()
        next_offset = max(next_offset, batch.next_offset)
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
