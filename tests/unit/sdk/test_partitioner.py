"""Kafka's key partitioning, byte for byte: murmur2 against Kafka's own test vectors and against
kafka-python's independent implementation; sticky partitioning for unkeyed records."""

from __future__ import annotations

import random
import warnings
from collections import Counter

import pytest

from odradek.partitioner import DefaultPartitioner, murmur2, partition_for_key, to_positive

# Importing kafka-python 3.x warns (importlib.resources.read_text is deprecated) and the test
# config turns warnings into errors: silence that one warning for this import only.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.partitioner.default import DefaultPartitioner as KafkaPythonPartitioner
    from kafka.partitioner.default import murmur2 as kafka_python_murmur2

# org.apache.kafka.common.utils.UtilsTest#testMurmur2 (the values are Java ints).
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("key", "expected"), KAFKA_VECTORS.items())
def test_murmur2_matches_kafkas_test_vectors(key, expected):
    assert murmur2(key) == expected


def test_murmur2_is_a_java_int():
    rng = random.Random(7)
    for _ in range(500):
        h = murmur2(rng.randbytes(rng.randrange(40)))
        assert -(2**31) <= h < 2**31


def test_murmur2_matches_kafka_python_over_random_keys():
    rng = random.Random(20240601)
    for i in range(3000):
        # Every tail length (0-3 bytes after the 4-byte blocks) and some long keys.
        key = rng.randbytes(i % 67 if i % 50 else 1000 + i)
        assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(key) & 0xFFFFFFFF, key


def test_to_positive_clears_the_sign_bit_rather_than_negating():
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    assert to_positive(5) == 5


def test_partition_for_key_example():
    # toPositive(-790332482) = 1357151166; 1357151166 % 50 = 16.
    assert partition_for_key(b"foobar", 50) == 16


def test_partition_for_key_rejects_no_partitions():
    with pytest.raises(ValueError, match="at least one partition"):
        partition_for_key(b"k", 0)


class _KafkaPythonCluster:
    """The three methods kafka-python's DefaultPartitioner asks of its cluster metadata."""

    def __init__(self, topic: str, num_partitions: int) -> None:
        self.topic = topic
        self.partitions = set(range(num_partitions))

    def topics(self):
        return {self.topic}

    def partitions_for_topic(self, topic):
        return self.partitions

    def available_partitions_for_topic(self, topic):
        return self.partitions


@pytest.mark.parametrize("num_partitions", [1, 2, 3, 7, 12, 100, 1024])
def test_keyed_records_land_where_kafka_python_puts_them(num_partitions):
    ours = DefaultPartitioner()
    theirs = KafkaPythonPartitioner()
    meta = _KafkaPythonCluster("t", num_partitions)
    rng = random.Random(num_partitions)
    everything = list(range(num_partitions))
    for i in range(1500):
        key = rng.randbytes(rng.randrange(1, 64)) if i % 3 else f"user-{i}".encode()
        expected = theirs.partition("t", None, key, None, None, meta)
        assert ours.partition("t", key, num_partitions, everything) == expected


def test_empty_key_is_hashed_not_sticky():
    p = DefaultPartitioner(random.Random(1))
    assert p.partition("t", b"", 10, range(10)) == partition_for_key(b"", 10)


def test_unkeyed_records_stick_to_one_partition_until_a_new_batch():
    p = DefaultPartitioner(random.Random(3))
    available = list(range(6))
    first = p.partition("t", None, 6, available)
    assert {p.partition("t", None, 6, available) for _ in range(50)} == {first}
    p.on_new_batch("t", 6, available, first)
    second = p.partition("t", None, 6, available)
    assert second != first
    assert {p.partition("t", None, 6, available) for _ in range(50)} == {second}


def test_on_new_batch_for_a_stale_partition_keeps_the_current_one():
    p = DefaultPartitioner(random.Random(3))
    current = p.partition("t", None, 6, range(6))
    p.on_new_batch("t", 6, range(6), (current + 1) % 6)
    assert p.partition("t", None, 6, range(6)) == current


def test_sticky_partition_is_chosen_among_partitions_with_a_leader():
    p = DefaultPartitioner(random.Random(11))
    seen: Counter[int] = Counter()
    previous = p.partition("t", None, 8, [2, 5])
    for _ in range(200):
        p.on_new_batch("t", 8, [2, 5], previous)
        previous = p.partition("t", None, 8, [2, 5])
        seen[previous] += 1
    assert set(seen) == {2, 5}


def test_sticky_partition_falls_back_to_every_partition_without_leaders():
    p = DefaultPartitioner(random.Random(5))
    chosen = set()
    for _ in range(100):
        prev = p.partition("t", None, 3, [])
        chosen.add(prev)
        p.on_new_batch("t", 3, [], prev)
    assert chosen == {0, 1, 2}


def test_sticky_partitions_are_per_topic_and_spread_evenly():
    p = DefaultPartitioner(random.Random(9))
    counts: Counter[int] = Counter()
    for _ in range(3000):
        part = p.partition("a", None, 4, range(4))
        counts[part] += 1
        p.on_new_batch("a", 4, range(4), part)
    assert set(counts) == {0, 1, 2, 3}
    assert min(counts.values()) > 600
