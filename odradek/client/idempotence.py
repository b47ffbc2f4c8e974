"""The idempotent producer's bookkeeping: its id and epoch, and sequence numbers per partition.

Kafka's ``TransactionManager`` for a producer without transactions (KIP-98, KIP-360, KIP-679):

* The producer asks any node for an id (``InitProducerId``) before it sends its first batch;
  every batch carries the id, the epoch and the sequence number of its first record.
* Sequence numbers are per partition, from 0, and assigned to a batch when it is first
  drained (in queue order, so a partition's batches get consecutive ranges); they wrap from
  2**31-1 to 0. A retried batch keeps its sequence, so a leader that already stored it
  answers with its original offsets instead of storing it again.
* Up to five batches of a partition may be in flight. A batch that fails and is retried goes
  back into its queue in sequence order, and is sent again only once nothing of its partition
  is in flight: the batches behind it, which the leader refuses with
  ``OUT_OF_ORDER_SEQUENCE_NUMBER`` meanwhile, follow it in order. Order is kept under retries.
* ``OUT_OF_ORDER_SEQUENCE_NUMBER`` or ``UNKNOWN_PRODUCER_ID`` for the first batch in line of a
  partition means the leader lost the producer's state (an unclean election, a truncated or
  deleted log): the producer bumps its epoch on its own (KIP-360) and every partition's
  sequence numbers start again at 0; batches not yet acknowledged are numbered anew as they
  are sent again. Past epoch 32767 it asks for a new id.

Pure: no I/O, no clock. Used by the producer's sender thread only (not thread-safe).
"""

from __future__ import annotations

from odradek.client.producer_id import ProducerIdAndEpoch
from odradek.client.types import TopicPartition
from odradek.errors import (
    InvalidProducerEpochError,
    OdradekError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
)
from odradek.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

__all__ = [
    "BUMP_AND_RETRY",
    "FAIL",
    "MAX_IN_FLIGHT_FOR_IDEMPOTENCE",
    "RETRY",
    "IdempotenceState",
    "increment",
]

MAX_IN_FLIGHT_FOR_IDEMPOTENCE = 5  # Kafka's limit: the broker keeps the last five batches
_SEQUENCE_MODULUS = 2**31
_MAX_EPOCH = 2**15 - 1

RETRY, BUMP_AND_RETRY, FAIL = "retry", "bump-and-retry", "fail"


def increment(sequence: int, by: int) -> int:
    """``sequence + by``, wrapping from 2**31-1 to 0 as Kafka's ``DefaultRecordBatch``."""
    return (sequence + by) % _SEQUENCE_MODULUS


class IdempotenceState:
    """The producer's id and epoch and, per partition, the next sequence to assign and the
    last one acknowledged."""

    def __init__(self) -> None:
        self.producer_id = NO_PRODUCER_ID
        self.epoch = NO_PRODUCER_EPOCH
        self._next_sequence: dict[TopicPartition, int] = {}
        self._last_acked: dict[TopicPartition, int] = {}
        self.needs_new_id = False  # the epoch ran out: ask InitProducerId again

    @property
    def has_id(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID and not self.needs_new_id

    def set_id(self, ids: ProducerIdAndEpoch) -> None:
        """A new id from ``InitProducerId``: every partition starts again at sequence 0."""
        self.producer_id = ids.producer_id
        self.epoch = ids.epoch
        self.needs_new_id = False
        self._next_sequence.clear()
        self._last_acked.clear()

    def is_current(self, producer_id: int, epoch: int) -> bool:
        """Whether a batch numbered with ``producer_id``/``epoch`` keeps its sequence."""
        return producer_id == self.producer_id and epoch == self.epoch

    def assign(self, tp: TopicPartition, record_count: int) -> int:
        """The base sequence of the next batch of ``tp``, holding ``record_count`` records."""
        sequence = self._next_sequence.get(tp, 0)
        self._next_sequence[tp] = increment(sequence, record_count)
        return sequence

    def has_acknowledged(self, tp: TopicPartition) -> bool:
        """Whether a batch of ``tp`` numbered in the current epoch was stored."""
        return tp in self._last_acked

    def acknowledged(self, tp: TopicPartition, base_sequence: int, record_count: int) -> None:
        """A batch of ``tp`` numbered in the current epoch was stored."""
        self._last_acked[tp] = increment(base_sequence, record_count - 1)

    def first_in_line(self, tp: TopicPartition, base_sequence: int) -> bool:
        """Whether the batch at ``base_sequence`` is the next the leader expects: every batch
        of ``tp`` before it was acknowledged."""
        return base_sequence == increment(self._last_acked.get(tp, -1), 1)

    def on_error(
        self,
        tp: TopicPartition,
        producer_id: int,
        epoch: int,
        base_sequence: int,
        error: OdradekError,
        *,
        sent_first_in_line: bool = True,
    ) -> str:
        """What to do with a batch the leader refused with ``error``: ``RETRY`` (keep its
        sequence, or renumber it if it belongs to an earlier epoch), ``BUMP_AND_RETRY`` (the
        leader lost this producer's state: :meth:`bump_epoch`, then retry), or ``FAIL`` (not
        a sequence error: the sender's usual rules apply).

        An out-of-order refusal means lost state only for a batch that was first in line when
        it was sent (``sent_first_in_line``: every batch before it already acknowledged) and
        still is. A batch sent while an earlier one was in flight may reach the leader first
        (a node answers requests concurrently): its refusal is retried once the earlier one
        is stored, even if that one's success is seen first."""
        stale = not self.is_current(producer_id, epoch)
        if isinstance(error, OutOfOrderSequenceError | UnknownProducerIdError):
            if stale or not sent_first_in_line or not self.first_in_line(tp, base_sequence):
                return RETRY
            return BUMP_AND_RETRY
        if isinstance(error, InvalidProducerEpochError) and stale:
            return RETRY  # sent before an epoch bump: it is renumbered in the new epoch
        return FAIL

    def bump_epoch(self) -> None:
        """KIP-360: a new epoch, every partition's sequence from 0 again. Past the largest
        epoch a new producer id is needed (``needs_new_id``)."""
        if self.epoch >= _MAX_EPOCH:
            self.needs_new_id = True
        else:
            self.epoch += 1
        self._next_sequence.clear()
        self._last_acked.clear()
