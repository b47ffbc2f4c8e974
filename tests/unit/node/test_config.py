"""Node configuration: Kafka-style properties, the environment, validation."""

from pathlib import Path

import pytest

from node.config import config_from_properties, parse_properties, properties_from_env
from odradek.errors import InvalidConfigError


def test_properties_file_with_kafka_names_and_topic_defaults():
    props = parse_properties(
        "# a node\n"
        "node.id=3\n"
        "log.dirs=/a,/b\n"
        "zookeeper.connect=127.0.0.1:2181/odradek\n"
        "listeners=PLAINTEXT://127.0.0.2:9092\n"
        "broker.rack=r1\n"
        "replica.lag.time.max.ms=10000\n"
        "log.segment.bytes=1048576\n"
        "min.insync.replicas=2\n"
    )
    config = config_from_properties(props)
    assert config.node_id == 3
    assert config.log_dirs == (Path("/a"), Path("/b"))
    assert (config.host, config.port, config.rack) == ("127.0.0.2", 9092, "r1")
    assert config.replica_lag_time_max_ms == 10_000
    assert config.log.segment_bytes == 1_048_576
    assert config.log.min_insync_replicas == 2
    assert config.topic_config({"min.insync.replicas": "3"}).min_insync_replicas == 3


def test_environment_names():
    env = {"ODRADEK_NODE_ID": "1", "ODRADEK_LOG_DIRS": "/d", "PATH": "/bin"}
    assert properties_from_env(env) == {"node.id": "1", "log.dirs": "/d"}


def test_variables_of_other_tools_are_not_node_settings_but_misspelt_ones_fail():
    # a shell that exported the image tag for build-images.sh, the compose file's address or
    # the command line's bootstrap servers still starts a node
    env = {
        "ODRADEK_NODE_ID": "1",
        "ODRADEK_LOG_DIRS": "/d",
        "ODRADEK_ZOOKEEPER_CONNECT": "127.0.0.1:2181",
        "ODRADEK_IMAGE_TAG": "dev",
        "ODRADEK_COMPOSE_HOST": "127.0.0.20",
        "ODRADEK_BOOTSTRAP_SERVERS": "127.0.0.1:9092",
    }
    assert config_from_properties(properties_from_env(env)).node_id == 1
    with pytest.raises(InvalidConfigError, match=r"unknown node config 'nod\.id'"):
        config_from_properties(properties_from_env({**env, "ODRADEK_NOD_ID": "2"}))


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"log.dirs": "/d", "zookeeper.connect": "z:1"}, "node.id is required"),
        ({"node.id": "x", "log.dirs": "/d", "zookeeper.connect": "z:1"}, "invalid value"),
        ({"node.id": "1", "log.dirs": "/d", "zookeeper.connect": "z:1", "bogus": "1"}, "bogus"),
        ({"node.id": "1", "log.dirs": "/d", "zookeeper.connect": "z:1", "log.nope": "1"}, "nope"),
        # unknown configs and values out of range are named as the user wrote them
        (
            {"node.id": "1", "log.dirs": "/d", "zookeeper.connect": "z:1", "log.nope": "1"},
            r"unknown node config 'log\.nope'$",
        ),
        (
            {
                "node.id": "1",
                "log.dirs": "/d",
                "zookeeper.connect": "z:1",
                "log.segment.bytes": "5",
            },
            r"invalid value '5' for node config 'log\.segment\.bytes': must be at least 14$",
        ),
        (
            {
                "node.id": "1",
                "log.dirs": "/d",
                "zookeeper.connect": "z:1",
                "min.insync.replicas": "0",
            },
            r"invalid value '0' for node config 'min\.insync\.replicas': must be at least 1$",
        ),
        (
            {
                "node.id": "1",
                "log.dirs": "/d",
                "zookeeper.connect": "z:1",
                "log.retention.check.interval.ms": "0",
            },
            r"'log\.retention\.check\.interval\.ms': must be at least 1$",
        ),
    ],
)
def test_bad_configs_are_typed_errors(props, message):
    with pytest.raises(InvalidConfigError, match=message):
        config_from_properties(props)


_BASE = "broker.id=0\nlog.dirs=/d\nzookeeper.connect=z:2181\n"


def test_the_file_is_read_as_java_reads_properties():
    props = parse_properties(
        "! a Java comment\n"
        "node.id 4\n"  # key value
        "broker.rack : r\\u0031\n"  # key: value with a unicode escape
        "log.dirs=/a,\\\n"  # a continuation line
        "    /b\n"
        "zookeeper.connect=h\\:2181/x\n"  # an escaped separator
    )
    assert props == {
        "node.id": "4",
        "broker.rack": "r1",
        "log.dirs": "/a,/b",
        "zookeeper.connect": "h:2181/x",
    }
    with pytest.raises(InvalidConfigError, match="invalid properties file"):
        parse_properties("node.id=\\uZZZZ\n")


@pytest.mark.parametrize(
    ("lines", "retention_ms"),
    [
        ("log.retention.hours=168\n", 168 * 3_600_000),
        ("log.retention.hours=168\nlog.retention.minutes=5\n", 5 * 60_000),
        ("log.retention.hours=1\nlog.retention.minutes=5\nlog.retention.ms=7\n", 7),
        ("log.retention.hours=-1\n", -1),
        ("log.retention.minutes=-2\n", -1),
    ],
)
def test_retention_in_hours_minutes_or_ms_with_kafkas_precedence(lines, retention_ms):
    config = config_from_properties(parse_properties(_BASE + lines))
    assert config.log.retention_ms == retention_ms
    assert config.node_id == 0  # broker.id is node.id


def test_kafkas_broker_names_for_topic_defaults():
    config = config_from_properties(
        parse_properties(
            _BASE
            + "log.roll.hours=2\nmessage.max.bytes=2000\nlog.flush.interval.ms=50\n"
            + "num.partitions=6\ndefault.replication.factor=3\nlog.dir=/single\n"
        )
    )
    assert config.log.segment_ms == 2 * 3_600_000
    assert config.log.max_message_bytes == 2000
    assert config.log.flush_ms == 50
    assert (config.num_partitions, config.default_replication_factor) == (6, 3)
    assert config.log_dirs == (Path("/single"),)
    # a bad value is named as the user wrote it
    with pytest.raises(InvalidConfigError, match=r"'log\.roll\.hours'"):
        config_from_properties(parse_properties(_BASE + "log.roll.hours=0\n"))
    with pytest.raises(InvalidConfigError, match=r"invalid value 'x' for node config 'log\.re"):
        config_from_properties(parse_properties(_BASE + "log.retention.hours=x\n"))


def test_kafka_settings_odradek_has_no_use_for_are_ignored_and_listed():
    config = config_from_properties(
        parse_properties(_BASE + "num.network.threads=3\nsocket.send.buffer.bytes=102400\n")
    )
    assert config.ignored_kafka_configs == ("num.network.threads", "socket.send.buffer.bytes")


def test_log_cleaner_threads_is_read_not_ignored():
    config = config_from_properties(parse_properties(_BASE + "log.cleaner.threads=3\n"))
    assert config.log_cleaner_threads == 3 and config.ignored_kafka_configs == ()
    assert config_from_properties(parse_properties(_BASE)).log_cleaner_threads == 1
    with pytest.raises(InvalidConfigError, match=r"log\.cleaner\.threads must be at least 1"):
        config_from_properties(parse_properties(_BASE + "log.cleaner.threads=0\n"))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("replica.lag.time.mx.ms=1", r"'replica\.lag\.time\.mx\.ms' \(did you mean 'replica\.lag"),
        ("num.netwrk.threads=1", r"did you mean 'num\.network\.threads'"),
        ("log.retention.hour=1", r"did you mean 'log\.retention\.hours'"),
        ("zookeeper.conect=x", r"did you mean 'zookeeper\.connect'"),
        ("quite.unrelated=1", r"unknown node config 'quite\.unrelated'$"),
    ],
)
def test_a_misspelt_setting_fails_naming_the_nearest_one(line, message):
    with pytest.raises(InvalidConfigError, match=message):
        config_from_properties(parse_properties(_BASE + line + "\n"))


def test_the_files_listeners_are_read_as_kafka_reads_them():
    def listeners(lines):
        config = config_from_properties(parse_properties(_BASE + lines))
        bound = [(x.name, x.host, x.port) for x in config.effective_listeners]
        return bound, [(x.name, x.host, x.port) for x in config.advertised_listeners]

    assert listeners("listeners=PLAINTEXT://127.0.0.3:9095\n") == (
        [("PLAINTEXT", "127.0.0.3", 9095)],
        [],
    )
    # an empty host binds every interface, as in Kafka
    assert listeners("listeners=PLAINTEXT://:9095\n")[0] == [("PLAINTEXT", "", 9095)]
    assert listeners("advertised.listeners=PLAINTEXT://h:9\n")[1] == [("PLAINTEXT", "h", 9)]
    named = (
        "listeners=CLIENT://127.0.0.1:9,REPLICATION://127.0.0.1:10\n"
        "listener.security.protocol.map=CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT\n"
        "inter.broker.listener.name=REPLICATION\n"
    )
    assert listeners(named)[0] == [("CLIENT", "127.0.0.1", 9), ("REPLICATION", "127.0.0.1", 10)]
    with pytest.raises(InvalidConfigError, match="PLAINTEXT is given twice"):
        listeners("listeners=PLAINTEXT://h:9,PLAINTEXT://h:10\n")


def test_metrics_port_and_log_format():
    config = config_from_properties(
        parse_properties(_BASE + "metrics.port=9404\nlog.format=JSON\n")
    )
    assert (config.metrics_port, config.log_format) == (9404, "json")
    assert config_from_properties(parse_properties(_BASE)).metrics_port is None
    with pytest.raises(InvalidConfigError, match=r"invalid log\.format 'xml'"):
        config_from_properties(parse_properties(_BASE + "log.format=xml\n"))


def test_the_brokers_compression_type_is_the_default_of_every_topic():
    # Kafka's broker config compression.type (and the KIP-390 levels) under their own names
    props = parse_properties(
        "node.id=1\nlog.dirs=/d\nzookeeper.connect=z:1\n"
        "compression.type=zstd\ncompression.zstd.level=7\n"
    )
    config = config_from_properties(props)
    assert (config.log.compression_type, config.log.compression_zstd_level) == ("zstd", 7)
    assert config.topic_config({"compression.type": "producer"}).compression_type == "producer"
    with pytest.raises(InvalidConfigError, match=r"configuration compression\.type: String must"):
        config_from_properties({**props, "compression.type": "brotli"})


def test_broker_heartbeat_settings_and_their_bounds():
    config = config_from_properties(parse_properties(_BASE))
    assert (config.broker_heartbeat_interval_ms, config.broker_session_timeout_ms) == (100, 500)
    config = config_from_properties(
        parse_properties(
            _BASE + "broker.heartbeat.interval.ms=2000\nbroker.session.timeout.ms=9000\n"
        )
    )
    assert (config.broker_heartbeat_interval_ms, config.broker_session_timeout_ms) == (2000, 9000)
    off = config_from_properties(parse_properties(_BASE + "broker.session.timeout.ms=0\n"))
    assert off.broker_session_timeout_ms == 0
    with pytest.raises(InvalidConfigError, match="more than twice"):
        config_from_properties(parse_properties(_BASE + "broker.session.timeout.ms=200\n"))
    with pytest.raises(InvalidConfigError, match="must be positive"):
        config_from_properties(parse_properties(_BASE + "broker.heartbeat.interval.ms=0\n"))


def test_share_coordinator_settings_are_kafkas_names():
    config = config_from_properties(
        parse_properties(
            _BASE
            + "share.coordinator.state.topic.num.partitions=7\n"
            + "share.coordinator.state.topic.replication.factor=2\n"
            + "share.coordinator.state.topic.min.isr=1\n"
            + "share.coordinator.write.timeout.ms=900\n"
        )
    )
    c = config.share_coordinator
    assert (
        c.share_coordinator_state_topic_num_partitions,
        c.share_coordinator_state_topic_replication_factor,
        c.share_coordinator_state_topic_min_isr,
        c.share_coordinator_state_topic_segment_bytes,
        c.share_coordinator_write_timeout_ms,
    ) == (7, 2, 1, 104_857_600, 900)
    with pytest.raises(
        InvalidConfigError, match=r"share\.coordinator\.state\.topic\.num\.partitions"
    ):
        config_from_properties(
            parse_properties(_BASE + "share.coordinator.state.topic.num.partitions=0\n")
        )
