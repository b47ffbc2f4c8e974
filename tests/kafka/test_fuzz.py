"""The Kafka door under bad input: a small seeded sample of ``bench.kafka_fuzz``'s frames (lying
size prefixes, truncated and random bodies, unknown keys and versions, corrupt record batches,
huge arrays, lying strings, SASL out of order) against one node of a three-node cluster, while a
well-behaved confluent-kafka producer and consumer use the cluster. Every frame gets what Kafka
gives it (a well-formed answer with its correlation id, or the connection closed), the node
stays up and answers, the well-behaved client loses nothing acknowledged, and no node logs a
traceback. The seed is printed; ``bench.kafka_fuzz.replay`` re-sends a finding's frame."""

from __future__ import annotations

import os
import random
import uuid

import pytest

from bench import kafka_fuzz as fuzz
from deploy.local.cluster import LocalCluster
from odradek import Admin, NewTopic

FRAMES = 2_000
# the frame offset of a Fetch's isolation level: size (4), header v1 with client id "fuzz" (14),
# replica id, max wait, min bytes, max bytes (16)
_FETCH_ISOLATION_AT = 4 + 14 + 16


def _topic(cluster: LocalCluster, name: str) -> str:
    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(name, 3, 3)])
    return name


@pytest.fixture(scope="module")
def fuzzed(kafka_cluster: LocalCluster) -> fuzz.FuzzReport:
    """One fuzz run shared by the module's tests (its seed is printed; ODRADEK_FUZZ_SEED sets
    it)."""
    fuzz.self_check()
    seed = int(os.environ.get("ODRADEK_FUZZ_SEED", random.randrange(1 << 31)))
    print(f"fuzz seed {seed}")
    target = kafka_cluster.nodes[0]
    topic = _topic(kafka_cluster, f"fuzz-{uuid.uuid4().hex[:8]}")
    calm = _topic(kafka_cluster, f"calm-{uuid.uuid4().hex[:8]}")
    partition = fuzz.leader_partition(target.kafka_address, topic)
    well_behaved = fuzz.WellBehaved(kafka_cluster.kafka_bootstrap_servers, calm, 3)
    well_behaved.start()
    report = fuzz.run_fuzz(
        target.kafka_address, topic, partition, FRAMES, seed, log_path=target.log_path
    )
    acked, _ = well_behaved.finish()
    report.extra = {
        "acked": acked,
        "missing": well_behaved.missing[:10],
        "watermarks": well_behaved.watermarks,
        "producer_errors": well_behaved.errors,
    }
    print(report.summary())
    return report


def test_every_fuzzed_frame_gets_what_kafka_gives_it_in_time(fuzzed):
    assert fuzzed.frames == FRAMES
    # every family of bad input was sent
    assert set(fuzzed.kinds) >= {
        "valid",
        "byte_flips",
        "truncated_body",
        "random_body",
        "unknown_key",
        "version_out_of_range",
        "produce_v0_v2",
        "size_too_long",
        "size_too_short",
        "size_negative",
        "size_over_max",
        "corrupt_batch",
        "huge_array",
        "lying_string",
        "sasl_out_of_order",
    }, fuzzed.kinds
    for outcome in (fuzz.ANSWERED, fuzz.REFUSED, fuzz.CLOSED):
        assert fuzzed.outcomes[outcome] > 0, fuzzed.outcomes
    # no hang, no malformed answer, no Python text, no corrupt batch taken, no answer where
    # Kafka closes, no traceback in the node's log
    assert not fuzzed.findings, fuzzed.findings[:5]


def test_the_node_stays_up_and_other_clients_lose_nothing(fuzzed, kafka_cluster):
    assert all(node.running for node in kafka_cluster.nodes)
    apis, brokers = fuzz.probe(kafka_cluster.nodes[0].kafka_address)
    # ApiVersions still lists every API (the fuzzer builds requests of the data-plane ones in
    # fuzz.SERVED; the admin APIs it reaches through the generic mutations)
    assert apis >= len(fuzz.SERVED) and brokers == 3
    extra = fuzzed.extra
    assert extra["acked"] > 0 and not extra["producer_errors"], extra["producer_errors"][:3]
    assert extra["missing"] == [], extra


def test_the_fuzzer_knows_which_api_keys_the_door_serves(kafka_cluster):
    # a served key fuzzed as an unknown one would expect a close where a parsing junk body
    # rightly gets an answer
    assert fuzz.advertised_keys(kafka_cluster.nodes[0].kafka_address) == set(fuzz.DOOR_KEYS)


def _fetch_v4(correlation_id: int, topic: str, isolation_level: int) -> bytes:
    data = bytearray(fuzz.frame(fuzz.header(1, 4, correlation_id) + fuzz.body(1, 4, topic, 0)))
    data[_FETCH_ISOLATION_AT] = isolation_level
    return bytes(data)


def test_a_fetch_with_a_known_isolation_level_is_answered(kafka_cluster):
    answers = fuzz.replay(kafka_cluster.nodes[0].kafka_address, _fetch_v4(5, "absent", 1))
    assert len(answers) == 2 and answers[1] is None
    payload = answers[0]
    assert payload is not None
    assert fuzz.decode_response(1, 4, payload)[0] == 5


def test_a_fetch_with_an_unknown_isolation_level_closes_without_a_traceback(kafka_cluster):
    node = kafka_cluster.nodes[0]
    watch = fuzz.LogWatch(node.log_path)
    assert fuzz.replay(node.kafka_address, _fetch_v4(6, "absent", 0x71)) == [None]
    probe = fuzz.Case("", b"", 6, 1, 4, "")
    assert watch.traceback_of(probe) is None


@pytest.mark.parametrize("corruption", ["record_length_lie", "compressed_garbage"])
def test_a_batch_with_a_right_crc_and_malformed_records_is_refused(kafka_cluster, corruption):
    node = kafka_cluster.nodes[0]
    topic = _topic(kafka_cluster, f"corrupt-{uuid.uuid4().hex[:8]}")
    partition = fuzz.leader_partition(node.kafka_address, topic)
    gen = fuzz.Generator(1, topic, partition)
    name, records = "", b""
    while name != corruption:
        name, records = fuzz.corrupt_batch(gen.rng, gen.batch)
    request = fuzz.frame(fuzz.header(0, 8, 9) + fuzz.body(0, 8, topic, partition, records))
    answers = fuzz.replay(node.kafka_address, request)
    payload = answers[0]
    assert payload is not None
    _, response = fuzz.decode_response(0, 8, payload)
    code = int(response.responses[0].partition_responses[0].error_code)
    assert code in fuzz.CORRUPT_BATCH_CODES
