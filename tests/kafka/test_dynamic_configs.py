"""Dynamic broker configs (KIP-226) and group configs (KIP-848's GROUP resource, type 32)
through confluent-kafka's AdminClient, against a real two-node cluster on a real ZooKeeper:
values applied without a restart (retention deletes segments after a dynamic
``log.retention.ms``; a dynamic ``min.insync.replicas`` refuses acks=all writes; a group's
heartbeat interval reaches its member's heartbeat answer and its session timeout removes a
silent member), kept across a node restart, described with Kafka's sources and synonyms, and
Kafka's errors for read-only, unknown and invalid configs. The cluster-wide default (a BROKER
resource named ``""``, which librdkafka refuses to build) is sent as Kafka's Java AdminClient
sends it, in raw IncrementalAlterConfigs / DescribeConfigs requests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from kio.schema.describe_configs.v1.request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from kio.schema.incremental_alter_configs.v0.request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kio.static.primitive import i8

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from tests.kafka.conftest import (
    call,
    running_cluster,
    wait_for,
    wait_until_metadata_complete,
)
from tests.kafka.test_confluent_kafka import unique
from tests.kafka.test_group_apis import coordinator_of, heartbeat, known_to

NOT_ENOUGH_REPLICAS = KafkaError.NOT_ENOUGH_REPLICAS


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    """Two nodes whose retention runs every 200 ms; a group's members live ten minutes unless
    the group's own config says otherwise (shorter session timeouts allowed down to 1 s)."""
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "dynamic-configs",
        nodes=2,
        overrides={
            "log.retention.check.interval.ms": "200",
            "log.cleaner.threads": "2",
            "log.initial.task.delay.ms": "0",
            "offsets.topic.num.partitions": "2",
            "offsets.topic.replication.factor": "2",
            "group.consumer.session.timeout.ms": "600000",
            "group.consumer.max.session.timeout.ms": "600000",
            "group.consumer.min.session.timeout.ms": "1000",
            "group.consumer.min.heartbeat.interval.ms": "500",
        },
    ) as cluster:
        yield cluster


@pytest.fixture
def admin(cluster: LocalCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.kafka_bootstrap_servers})


def alter(admin: AdminClient, resource: ConfigResource, **ops: str | None) -> None:
    """SET each name to its value (``None``: DELETE), failing on any error."""
    for name, value in ops.items():
        op = AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET
        resource.add_incremental_config(
            ConfigEntry(name.replace("_", "."), value or "", incremental_operation=op)
        )
    futures = admin.incremental_alter_configs([resource])
    for future in futures.values():
        future.result(timeout=60)


def refusal(admin: AdminClient, resource: ConfigResource, name: str, value: str) -> KafkaError:
    resource.add_incremental_config(
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
    )
    (future,) = admin.incremental_alter_configs([resource]).values()
    with pytest.raises(KafkaException) as raised:
        future.result(timeout=60)
    error: KafkaError = raised.value.args[0]
    return error


def alter_default(cluster: LocalCluster, **ops: str | None) -> tuple[int, str | None]:
    """IncrementalAlterConfigs on the cluster-wide default (SET, or DELETE for ``None``):
    the answer's error code and message."""
    configs = tuple(
        AlterableConfig(
            name=name.replace("_", "."),
            config_operation=i8(1 if value is None else 0),
            value=value,
        )
        for name, value in ops.items()
    )
    answer = call(
        cluster.nodes[0].kafka_address,
        IncrementalAlterConfigsRequest(
            resources=(
                AlterConfigsResource(resource_type=i8(4), resource_name="", configs=configs),
            ),
            validate_only=False,
        ),
    )
    (result,) = answer.responses
    return int(result.error_code), result.error_message


def raw_describe(
    cluster: LocalCluster, resource_type: int, name: str, node: int = 0
) -> dict[str, Any]:
    """DescribeConfigs v1 with synonyms, as Kafka's Java AdminClient sends it (confluent-kafka
    keys a config's synonyms by name, so a broker config's synonyms, all of one name, collapse
    to one): name -> (value, source, [(synonym, value, source), ...])."""
    answer = call(
        cluster.nodes[node].kafka_address,
        DescribeConfigsRequest(
            resources=(
                DescribeConfigsResource(
                    resource_type=i8(resource_type), resource_name=name, configuration_keys=None
                ),
            ),
            include_synonyms=True,
        ),
    )
    (result,) = answer.results
    assert int(result.error_code) == 0, result
    return {
        c.name: (
            c.value,
            int(c.config_source),
            [(s.name, s.value, int(s.source)) for s in c.synonyms],
        )
        for c in result.configs
    }


def describe_default(cluster: LocalCluster) -> dict[str, Any]:
    """The cluster-wide default's configs: name -> (value, source)."""
    return {n: (v, source) for n, (v, source, _) in raw_describe(cluster, 4, "").items()}


def described(admin: AdminClient, resource: ConfigResource) -> dict[str, Any]:
    (future,) = admin.describe_configs([resource]).values()
    entries: dict[str, Any] = future.result(timeout=60)
    return entries


def broker(node_id: int | str) -> ConfigResource:
    return ConfigResource(ResourceType.BROKER, str(node_id))


def test_a_dynamic_retention_deletes_segments_without_a_restart(cluster, admin):
    topic = unique("retained")
    created = admin.create_topics(
        [NewTopic(topic, 1, 2, config={"segment.bytes": "1024"})], operation_timeout=30
    )
    created[topic].result(timeout=60)
    producer = Producer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "linger.ms": 0, "acks": "all"}
    )
    for i in range(40):
        producer.produce(topic, value=b"x" * 200, key=str(i).encode())
        producer.flush(30)  # one batch each: many segments of 1 KiB
    consumer = Consumer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "group.id": unique("w")}
    )

    def log_start() -> int:
        low, _ = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(low)

    try:
        assert log_start() == 0  # the built-in 7 days keep every segment
        assert alter_default(cluster, log_retention_ms="1") == (0, None)
        # the cluster-wide default: on the next retention pass, every closed segment goes
        wait_for(lambda: log_start() > 0 or None, "retention to delete the old segments")

        retention = described(admin, ConfigResource(ResourceType.TOPIC, topic))["retention.ms"]
        assert (retention.value, retention.source) == (
            "1",
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
        )
        on_broker = described(admin, broker(0))["log.retention.ms"]
        assert not on_broker.is_read_only
        assert raw_describe(cluster, 4, "0")["log.retention.ms"][2] == [
            ("log.retention.ms", "1", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value),
            ("log.retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG.value),
        ]
        # a per-broker value wins over the cluster-wide one
        alter(admin, broker(0), log_retention_ms="3600000")
        on_broker = described(admin, broker(0))["log.retention.ms"]
        assert (on_broker.value, on_broker.source) == (
            "3600000",
            ConfigSource.DYNAMIC_BROKER_CONFIG.value,
        )
        assert [s[2] for s in raw_describe(cluster, 4, "0")["log.retention.ms"][2]] == [
            ConfigSource.DYNAMIC_BROKER_CONFIG.value,
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
            ConfigSource.DEFAULT_CONFIG.value,
        ]
        # the default resource shows only what is set at the default level
        assert describe_default(cluster) == {
            "log.retention.ms": ("1", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
        }
    finally:
        consumer.close()
        alter(admin, broker(0), log_retention_ms=None)
        alter_default(cluster, log_retention_ms=None)
    assert describe_default(cluster) == {}


def _produce_all(cluster: LocalCluster, topic: str) -> KafkaError | None:
    producer = Producer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "acks": "all",
            "retries": 0,
            "enable.idempotence": False,
            "message.timeout.ms": 20000,
        }
    )
    errors: list[KafkaError | None] = []
    producer.produce(topic, value=b"v", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(60)
    assert len(errors) == 1
    return errors[0]


def test_a_dynamic_min_insync_replicas_applies_at_once_and_after_a_restart(cluster, admin):
    """The static default is 1: with one of its two replicas down, a topic takes acks=all
    writes. A cluster-wide ``min.insync.replicas=2`` makes the leader refuse them at once, and
    again after it restarts (ZooKeeper keeps the value)."""
    topic = unique("isr")
    admin.create_topics([NewTopic(topic, 1, 2)], operation_timeout=30)[topic].result(timeout=60)
    assert _produce_all(cluster, topic) is None
    survivor, victim = cluster.nodes

    def refused() -> KafkaError | None:
        error = _produce_all(cluster, topic)
        return error if error is not None and error.code() == NOT_ENOUGH_REPLICAS else None

    try:
        assert alter_default(cluster, min_insync_replicas="2") == (0, None)
        victim.kill()  # the ISR shrinks to the survivor alone
        wait_for(refused, "acks=all to be refused with one replica in sync")
        survivor.stop()
        survivor.start()
        entry = wait_for(
            lambda: described(admin, broker(survivor.node_id)).get("min.insync.replicas"),
            "the restarted node to describe its configs",
        )
        assert (entry.value, entry.source) == (
            "2",
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
        )
        wait_for(refused, "acks=all to be refused after the restart")
    finally:
        if victim.process is None or victim.process.poll() is not None:
            victim.start()
        alter_default(cluster, min_insync_replicas=None)
    wait_for(lambda: _produce_all(cluster, topic) is None or None, "acks=all to succeed again")
    # the restarted nodes' metadata complete again before the next test's admin client asks
    # (librdkafka waits for a broker its metadata lacks without asking again)
    wait_until_metadata_complete(cluster)


def test_a_dynamic_log_cleaner_threads_is_applied_without_a_restart(cluster, admin):
    node = cluster.nodes[1]

    def applied(change: str) -> bool | None:
        return f"log cleaner threads: {change}" in node.log_path.read_text(errors="replace") or None

    # server.properties says 2: up to double that is allowed (Kafka's half/double rule measures
    # against the value in force, the static one here)
    alter(admin, broker(1), log_cleaner_threads="4")
    try:
        # node 1's cleaner runs four passes at once from now on (LogCleaner.reconfigure)
        wait_for(lambda: applied("2 -> 4"), "node 1 to apply log.cleaner.threads=4")
        threads = described(admin, broker(1))["log.cleaner.threads"]
        assert (threads.value, threads.source) == ("4", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    finally:
        alter(admin, broker(1), log_cleaner_threads=None)
    wait_for(lambda: applied("4 -> 2"), "node 1 to go back to its static two cleaner threads")


def test_read_only_unknown_and_invalid_broker_configs_get_kafkas_errors(cluster, admin):
    error = refusal(admin, broker(0), "log.dirs", "/tmp/elsewhere")
    assert error.code() == KafkaError.INVALID_REQUEST
    assert "Cannot update these configs dynamically: Set(log.dirs)" in error.str()
    assert alter_default(cluster, log_dirs="/tmp/elsewhere") == (
        42,
        "Cannot update these configs dynamically: Set(log.dirs)",
    )
    error = refusal(admin, broker(0), "num.partitions", "5")
    assert "Cannot update these configs dynamically: Set(num.partitions)" in error.str()
    error = refusal(admin, broker(0), "log.retention.mss", "5")
    assert error.code() == KafkaError.INVALID_REQUEST
    assert "log.retention.mss" in error.str()
    error = refusal(admin, broker(0), "log.retention.ms", "soon")
    assert error.code() == KafkaError.INVALID_REQUEST
    assert "log.retention.ms" in error.str()
    assert alter_default(cluster, log_cleaner_threads="5") == (
        42,
        "Log cleaner threads cannot be increased to more than double the current value 2",
    )
    # nothing was written; the static value shows as such
    assert describe_default(cluster) == {}
    threads = described(admin, broker(0))["log.cleaner.threads"]
    assert (threads.value, threads.source) == ("2", ConfigSource.STATIC_BROKER_CONFIG.value)


def group(name: str) -> ConfigResource:
    return ConfigResource(ResourceType.GROUP, name)


def test_a_groups_configs_reach_its_members_heartbeats(cluster, admin):
    topic, group_id = unique("gc"), unique("gcfg")
    admin.create_topics([NewTopic(topic, 1, 2)], operation_timeout=30)[topic].result(timeout=60)
    address = coordinator_of(cluster, group_id)
    known_to(address, topic, 1)
    member = uuid.uuid4().hex

    def join() -> Any:
        # a retriable answer (the group's first write not yet replicated: 15, loading: 14) is
        # retried, as a client does
        answer = heartbeat(address, group_id, member, 0, topic)
        assert int(answer.error_code) in (0, 14, 15), answer
        return answer if int(answer.error_code) == 0 else None

    joined = wait_for(join, "the member's first heartbeat")
    assert joined.heartbeat_interval.total_seconds() == 5  # the broker's default

    alter(admin, group(group_id), consumer_heartbeat_interval_ms="7000")
    entries = described(admin, group(group_id))
    interval = entries["consumer.heartbeat.interval.ms"]
    assert (interval.value, interval.source) == ("7000", ConfigSource.GROUP_CONFIG.value)
    session = entries["consumer.session.timeout.ms"]
    assert (session.value, session.source) == ("600000", ConfigSource.STATIC_BROKER_CONFIG.value)
    assert raw_describe(cluster, 32, group_id)["consumer.session.timeout.ms"][2] == [
        ("group.consumer.session.timeout.ms", "600000", ConfigSource.STATIC_BROKER_CONFIG.value),
        ("group.consumer.session.timeout.ms", "45000", ConfigSource.DEFAULT_CONFIG.value),
    ]
    assert entries["share.isolation.level"].value == "read_uncommitted"

    def interval_is(expected_ms: int) -> bool:
        answer = heartbeat(address, group_id, member, int(joined.member_epoch))
        assert int(answer.error_code) == 0, answer
        return int(answer.heartbeat_interval.total_seconds() * 1000) == expected_ms

    wait_for(lambda: interval_is(7000), "the member's next heartbeat to carry the group's interval")

    # a session timeout of the group's own: a member that stops heartbeating leaves after it
    # (the broker's default would keep it ten minutes)
    alter(
        admin,
        group(group_id),
        consumer_session_timeout_ms="2000",
        consumer_heartbeat_interval_ms="1000",
    )
    # its last heartbeat: the one whose answer shows the new configs applied to it
    wait_for(lambda: interval_is(1000), "the group's new configs to reach the member")

    def gone() -> bool:
        (future,) = admin.describe_consumer_groups([group_id]).values()
        return not future.result(timeout=30).members

    wait_for(gone, "the silent member to be removed")


def test_invalid_group_configs_get_kafkas_errors(admin):
    name = unique("gbad")
    error = refusal(admin, group(name), "consumer.session.timeout", "50000")
    assert error.code() == KafkaError.INVALID_CONFIG
    assert "Unknown group config name: consumer.session.timeout" in error.str()
    error = refusal(admin, group(name), "consumer.heartbeat.interval.ms", "100")
    assert error.code() == KafkaError.INVALID_CONFIG
    assert (
        "consumer.heartbeat.interval.ms must be greater than or equal to "
        "group.consumer.min.heartbeat.interval.ms" in error.str()
    )
    error = refusal(admin, group(name), "consumer.session.timeout.ms", "900000")
    assert "consumer.session.timeout.ms must be less than or equal to" in error.str()
    error = refusal(admin, group(name), "share.isolation.level", "serializable")
    assert error.code() == KafkaError.INVALID_CONFIG
    error = refusal(admin, group(name), "consumer.session.timeout.ms", "ten")
    assert error.code() == KafkaError.INVALID_CONFIG
    # a share group's configs are stored and described
    alter(
        admin,
        group(name),
        share_auto_offset_reset="earliest",
        share_isolation_level="read_committed",
    )
    entries = described(admin, group(name))
    assert entries["share.auto.offset.reset"].value == "earliest"
    assert entries["share.isolation.level"].source == ConfigSource.GROUP_CONFIG.value
