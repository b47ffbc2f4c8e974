"""The idempotent producer against in-process gRPC nodes (fake_cluster.py) that check
sequences as Kafka's leaders do: ids and sequence numbers on every batch, a retry after a lost
answer stored once, order kept with five batches in flight while one is retried, the epoch
bumped when a leader lost the producer's state (KIP-360), and the settings Kafka refuses."""

from __future__ import annotations

import logging

import pytest

from odradek import Producer, TopicPartition
from odradek.client.idempotence import BUMP_AND_RETRY, FAIL, RETRY, IdempotenceState
from odradek.client.producer_id import ProducerIdAndEpoch
from odradek.errors import (
    InvalidProducerEpochError,
    NotLeaderOrFollowerError,
    OutOfOrderSequenceError,
    RequestTimedOutError,
    UnknownProducerIdError,
)
from odradek.records import read_batches
from tests.unit.sdk.fake_cluster import FakeCluster
from tests.unit.sdk.test_producer import make_producer

T0 = TopicPartition("t", 0)


def stored(cluster: FakeCluster, tp: TopicPartition = T0) -> list[bytes | None]:
    return [r.value for r in cluster.records(tp)]


def sent_batches(cluster: FakeCluster) -> list[tuple[int, int, int, int]]:
    """(producer id, epoch, base sequence, records) of every batch in every Produce call."""
    return [
        (b.producer_id, b.producer_epoch, b.base_sequence, b.records_count)
        for _, request in cluster.calls_of("Produce")
        for part in request.partitions
        for b in read_batches(part.records)
    ]


def test_idempotence_is_on_by_default_with_acks_all_and_five_in_flight(cluster):
    cluster.create_topic("t", 1)
    with make_producer(cluster) as producer:
        assert producer.config.enable_idempotence
        assert producer.config.acks == -1
        assert producer.config.max_in_flight_per_partition == 5
        for i in range(3):
            producer.send("t", b"%d" % i).result(timeout=10)
    assert len(cluster.calls_of("InitProducerId")) == 1
    batches = sent_batches(cluster)
    pid = batches[0][0]
    assert pid >= 0
    # One id and epoch; each batch's base sequence follows the records before it.
    assert [(b[0], b[1]) for b in batches] == [(pid, 0)] * 3
    assert [b[2] for b in batches] == [0, 1, 2]


def test_a_retry_after_a_lost_answer_is_stored_once_with_its_original_offset(cluster):
    cluster.create_topic("t", 1)
    with make_producer(cluster) as producer:
        assert producer.send("t", b"first").result(timeout=10).offset == 0
        # The leader stores the batch but its answer is an error: the producer retries the
        # same batch (same sequence) and the leader recognises it.
        cluster.fail("Produce", RequestTimedOutError.code, tp=T0, after_append=True)
        metadata = producer.send("t", b"second").result(timeout=10)
    assert metadata.offset == 1
    assert stored(cluster) == [b"first", b"second"]
    assert [b[2] for b in sent_batches(cluster)] == [0, 1, 1]


def test_the_same_retry_without_idempotence_stores_a_duplicate(cluster):
    # The check the test above relies on: without idempotence the retry is stored again.
    cluster.create_topic("t", 1)
    with make_producer(cluster, enable_idempotence=False) as producer:
        producer.send("t", b"first").result(timeout=10)
        cluster.fail("Produce", RequestTimedOutError.code, tp=T0, after_append=True)
        producer.send("t", b"second").result(timeout=10)
    assert stored(cluster) == [b"first", b"second", b"second"]


def test_order_is_kept_with_batches_in_flight_while_one_is_retried(cluster):
    cluster.create_topic("t", 1)
    values = [b"v%03d" % i for i in range(200)]
    # Small batches, five in flight. The first batch after the warm-up is held back by the
    # leader while the ones behind it overtake it (refused: out of order), then refused itself
    # (not stored); all are sent again, in order, once it is stored.
    with make_producer(cluster, batch_size=200, linger_ms=5) as producer:
        producer.send("t", b"warm-up").result(timeout=10)
        cluster.delay_next_produce(0.3, NotLeaderOrFollowerError.code)
        futures = [producer.send("t", v) for v in values]
        producer.flush(timeout=30)
        offsets = [f.result(timeout=0).offset for f in futures]
    assert stored(cluster) == [b"warm-up", *values]
    assert offsets == list(range(1, 201))
    # Batches behind the failed one were in flight and sent again with the same sequences.
    sequences = [b[2] for b in sent_batches(cluster)]
    assert len(sequences) > len(set(sequences)) + 1


def test_a_leader_that_lost_the_producer_state_makes_it_bump_its_epoch(cluster, caplog):
    cluster.create_topic("t", 1)
    caplog.set_level(logging.WARNING, logger="odradek.producer")
    with make_producer(cluster) as producer:
        producer.send("t", b"a").result(timeout=10)
        cluster.fail("Produce", UnknownProducerIdError.code, tp=T0)
        producer.send("t", b"b").result(timeout=10)
        producer.send("t", b"c").result(timeout=10)
    assert stored(cluster) == [b"a", b"b", b"c"]
    (pid, _, _, _) = sent_batches(cluster)[0]
    # b first went at sequence 1 of epoch 0, then again at sequence 0 of epoch 1; c follows.
    assert [(b[1], b[2]) for b in sent_batches(cluster)] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert all(b[0] == pid for b in sent_batches(cluster))
    assert "bumping the producer epoch" in caplog.text


def test_settings_that_conflict_with_idempotence():
    with pytest.raises(ValueError, match=r"needs acks=-1 \(all\), not acks=1"):
        Producer("127.0.0.1:1", acks=1, enable_idempotence=True)
    with pytest.raises(ValueError, match="at most 5"):
        Producer("127.0.0.1:1", max_in_flight_per_partition=6, enable_idempotence=True)
    with pytest.raises(ValueError, match="retries > 0"):
        Producer("127.0.0.1:1", retries=0, enable_idempotence=True)
    # Not asked for: the conflicting setting wins and idempotence is off (Kafka's rule), with
    # one batch in flight per partition so that order still holds under retries.
    with Producer("127.0.0.1:1", acks=1) as producer:
        assert not producer.config.enable_idempotence
        assert producer.config.max_in_flight_per_partition == 1


def test_sequence_rules_of_the_state():
    state = IdempotenceState()
    state.set_id(ProducerIdAndEpoch(7, 0))
    assert [state.assign(T0, 3), state.assign(T0, 2)] == [0, 3]
    assert state.first_in_line(T0, 0) and not state.first_in_line(T0, 3)
    state.acknowledged(T0, 0, 3)
    assert state.first_in_line(T0, 3)
    gap = OutOfOrderSequenceError("gap")
    # Refused behind a batch not yet stored: retry; first in line: the leader lost the state.
    state.assign(T0, 1)
    assert state.on_error(T0, 7, 0, 5, gap) == RETRY
    assert state.on_error(T0, 7, 0, 3, gap) == BUMP_AND_RETRY
    # Sent while the batch before it was in flight: the node may have answered it first, even
    # if the producer saw the earlier batch's success before this refusal. Not lost state.
    assert state.on_error(T0, 7, 0, 3, gap, sent_first_in_line=False) == RETRY
    assert state.on_error(T0, 7, 0, 3, NotLeaderOrFollowerError("x")) == FAIL
    state.bump_epoch()
    assert state.epoch == 1 and state.assign(T0, 1) == 0
    # A batch of the old epoch refused as stale is renumbered, not failed.
    assert state.on_error(T0, 7, 0, 3, InvalidProducerEpochError("old")) == RETRY
    assert state.on_error(T0, 7, 1, 0, InvalidProducerEpochError("new")) == FAIL


def test_sequences_wrap_and_the_epoch_runs_out():
    state = IdempotenceState()
    state.set_id(ProducerIdAndEpoch(7, 32767))
    state._next_sequence[T0] = 2**31 - 2  # the wrap is hours of sending away
    assert state.assign(T0, 3) == 2**31 - 2
    assert state.assign(T0, 1) == 1
    state.acknowledged(T0, 2**31 - 2, 3)
    assert state.first_in_line(T0, 1)
    state.bump_epoch()
    assert state.needs_new_id and not state.has_id
