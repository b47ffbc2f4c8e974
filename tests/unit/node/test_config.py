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
