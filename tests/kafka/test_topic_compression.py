"""A topic's ``compression.type`` through Kafka clients on a real cluster: confluent-kafka's
admin creates topics with it and describes it, a producer (confluent-kafka or kcat) sends
uncompressed batches and the leader stores them in the topic's codec (a raw Fetch shows the
stored batches), consumers read the records back unchanged, and invalid values are
INVALID_CONFIG in Kafka's words."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)

from bench.kafka import kafka_leader
from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from odradek.records import Compression, RecordBatch, read_batches
from tests.kafka.conftest import call, fetch_request, running_cluster
from tests.kafka.test_confluent_kafka import consume, create_topic, produce, unique
from tests.kafka.test_kcat import kcat

RECORDS = 200


def stored_batches(cluster: LocalCluster, topic: str) -> list[RecordBatch]:
    """The batches of ``topic`` partition 0 as its leader stores them (a raw Fetch v11)."""
    answer = call(kafka_leader(cluster, topic), fetch_request(topic, 0))
    partition = answer.responses[0].partitions[0]
    assert int(partition.error_code) == 0
    return list(read_batches(bytes(partition.records or b"")))


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_confluent_kafkas_uncompressed_batches_are_stored_in_the_topics_codec(
    kafka_cluster: LocalCluster, bootstrap: str, codec: str
) -> None:
    topic = unique(f"stored-{codec}")
    create_topic(bootstrap, topic, partitions=1, **{"compression.type": codec})
    values = [b"value %d " % i * 10 for i in range(RECORDS)]
    produce(
        bootstrap,
        topic,
        [
            {"value": v, "key": b"k%d" % i, "headers": [("h", b"%d" % i)]}
            for i, v in enumerate(values)
        ],
        **{"compression.type": "none", "enable.idempotence": True, "acks": "all"},
    )
    batches = stored_batches(kafka_cluster, topic)
    assert batches and {b.compression for b in batches} == {Compression.from_name(codec)}
    assert all(b.producer_id >= 0 for b in batches)  # the idempotent producer's state kept
    assert sum(b.records_count for b in batches) == RECORDS
    got = consume(bootstrap, [TopicPartition(topic, 0, 0)], RECORDS)
    assert [m.value() for m in got] == values
    assert [m.key() for m in got] == [b"k%d" % i for i in range(RECORDS)]
    assert [m.headers() for m in got] == [[("h", b"%d" % i)] for i in range(RECORDS)]
    assert [m.offset() for m in got] == list(range(RECORDS))


def test_kcats_batches_are_recompressed_to_the_topics_codec(
    kafka_cluster: LocalCluster, bootstrap: str
) -> None:
    topic = unique("kcat-gzip")
    create_topic(bootstrap, topic, partitions=1, **{"compression.type": "gzip"})
    lines = [f"line {i}" for i in range(50)]
    kcat(
        "-b", bootstrap, "-P", "-t", topic, "-p", "0", "-z", "lz4", stdin="\n".join(lines).encode()
    )
    assert {b.compression for b in stored_batches(kafka_cluster, topic)} == {Compression.GZIP}
    out = kcat("-b", bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q")
    assert out.split("\n")[: len(lines)] == lines


def test_producer_is_the_default_and_keeps_the_producers_codec(
    kafka_cluster: LocalCluster, bootstrap: str
) -> None:
    topic = unique("as-sent")
    create_topic(bootstrap, topic, partitions=1)
    produce(bootstrap, topic, [{"value": b"v"}] * 10, **{"compression.type": "snappy"})
    assert {b.compression for b in stored_batches(kafka_cluster, topic)} == {Compression.SNAPPY}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.describe_configs([ConfigResource("TOPIC", topic)]).values()
    entry = future.result(timeout=60)["compression.type"]
    assert (entry.value, entry.source) == ("producer", ConfigSource.DEFAULT_CONFIG.value)


def test_describe_and_alter_compression_configs(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = unique("described")
    create_topic(
        bootstrap,
        topic,
        partitions=1,
        **{"compression.type": "zstd", "compression.zstd.level": "9"},
    )
    (future,) = admin.describe_configs([ConfigResource("TOPIC", topic)]).values()
    configs = future.result(timeout=60)
    entry = configs["compression.type"]
    assert (entry.value, entry.source) == ("zstd", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    # the broker's synonym has the topic config's own name (as in Kafka), so confluent-kafka's
    # synonyms, a dict by name, keep the last of them: the default
    synonym = entry.synonyms["compression.type"]
    assert (synonym.value, synonym.source) == ("producer", ConfigSource.DEFAULT_CONFIG.value)
    assert configs["compression.zstd.level"].value == "9"
    change = ConfigResource(
        "TOPIC",
        topic,
        incremental_configs=[
            ConfigEntry("compression.type", "lz4", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    (altered,) = admin.incremental_alter_configs([change]).values()
    altered.result(timeout=60)
    (future,) = admin.describe_configs([ConfigResource("TOPIC", topic)]).values()
    assert future.result(timeout=60)["compression.type"].value == "lz4"


@pytest.mark.parametrize(
    ("name", "value", "requirement"),
    [
        (
            "compression.type",
            "brotli",
            "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
        ),
        ("compression.gzip.level", "12", "Value must be between 1 and 9 or equal to -1"),
    ],
)
def test_invalid_values_are_invalid_config_in_kafkas_words(
    bootstrap: str, name: str, value: str, requirement: str
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = unique("invalid")
    (created,) = admin.create_topics(
        [NewTopic(topic, num_partitions=1, replication_factor=3, config={name: value})],
        operation_timeout=30,
    ).values()
    with pytest.raises(KafkaException) as caught:
        created.result(timeout=60)
    error: KafkaError = caught.value.args[0]
    assert error.code() == KafkaError.INVALID_CONFIG
    assert error.str() == f"Invalid value {value} for configuration {name}: {requirement}"


def test_the_brokers_compression_type_is_every_topics_default(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> None:
    """``compression.type`` in the nodes' server.properties: a topic without its own is stored
    in that codec, and DescribeConfigs says where the value comes from (STATIC_BROKER_CONFIG,
    under the broker config's name)."""
    with running_cluster(
        tmp_path_factory, zookeeper, "compression-default", overrides={"compression.type": "zstd"}
    ) as cluster:
        bootstrap = cluster.kafka_bootstrap_servers
        topic = unique("node-default")
        create_topic(bootstrap, topic, partitions=1)
        produce(bootstrap, topic, [{"value": b"v %d" % i} for i in range(20)])
        assert {b.compression for b in stored_batches(cluster, topic)} == {Compression.ZSTD}
        admin = AdminClient({"bootstrap.servers": bootstrap})
        (future,) = admin.describe_configs([ConfigResource("TOPIC", topic)]).values()
        entry = future.result(timeout=60)["compression.type"]
        assert (entry.value, entry.source) == ("zstd", ConfigSource.STATIC_BROKER_CONFIG.value)
