"""znode codecs against Kafka's JSON (ZkData.scala and its tests), both ways."""

from __future__ import annotations

import json

import pytest

from controller.zk_data import (
    BrokerConfigZNode,
    BrokerIdZNode,
    BrokerRegistrationInfo,
    ClusterIdZNode,
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityZNode,
    ControllerEpochZNode,
    ControllerZNode,
    EndPoint,
    GroupConfigZNode,
    LeaderIsrAndControllerEpoch,
    PreferredReplicaElectionZNode,
    ReassignPartitionsZNode,
    TopicAssignment,
    TopicPartition,
    TopicPartitionStateZNode,
    TopicZNode,
    new_topic_id,
)


def as_json(data: bytes):
    return json.loads(data)


def test_paths():
    tp = TopicPartition("orders", 3)
    assert BrokerIdZNode.path(7) == "/brokers/ids/7"
    assert TopicZNode.path("orders") == "/brokers/topics/orders"
    assert TopicPartitionStateZNode.path(tp) == "/brokers/topics/orders/partitions/3/state"
    assert ConfigEntityZNode.path("orders") == "/config/topics/orders"
    assert ControllerZNode.path == "/controller"
    assert ControllerEpochZNode.path == "/controller_epoch"
    assert str(tp) == "orders-3"


def test_partition_state_as_kafka_writes_it():
    # Kafka TopicPartitionStateZNodeTest: version 1, no leader_recovery_state when RECOVERED
    state = LeaderIsrAndControllerEpoch(
        leader=1, leader_epoch=6, isr=(1, 2), controller_epoch=10, partition_epoch=4
    )
    data = TopicPartitionStateZNode.encode(state)
    assert as_json(data) == {
        "version": 1,
        "leader": 1,
        "leader_epoch": 6,
        "controller_epoch": 10,
        "isr": [1, 2],
    }
    assert TopicPartitionStateZNode.decode(data, 4) == state


def test_partition_state_recovering_round_trip():
    state = LeaderIsrAndControllerEpoch(
        leader=2,
        leader_epoch=1,
        isr=(2,),
        controller_epoch=3,
        partition_epoch=9,
        leader_recovery_state=1,
    )
    data = TopicPartitionStateZNode.encode(state)
    assert as_json(data)["leader_recovery_state"] == 1
    assert TopicPartitionStateZNode.decode(data, 9) == state


def test_partition_state_from_kafka_text_with_no_leader():
    data = b'{"controller_epoch":2,"leader":-1,"version":1,"leader_epoch":3,"isr":[5]}'
    assert TopicPartitionStateZNode.decode(data, 12) == LeaderIsrAndControllerEpoch(
        leader=-1, leader_epoch=3, isr=(5,), controller_epoch=2, partition_epoch=12
    )


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"nope",
        b"[]",
        b'{"leader":1}',
        b'{"leader":"1","leader_epoch":0,"isr":[],"controller_epoch":1}',
        b'{"leader":1,"leader_epoch":0,"isr":[1],"controller_epoch":1,"leader_recovery_state":7}',
    ],
)
def test_malformed_partition_state(data):
    with pytest.raises(ValueError):
        TopicPartitionStateZNode.decode(data, 0)


def test_broker_registration_version_5():
    info = BrokerRegistrationInfo(node_id=1, host="10.0.0.1", port=9092, rack="r1")
    obj = as_json(BrokerIdZNode.encode(info, 1_700_000_000_123))
    assert obj == {
        "version": 5,
        "host": "10.0.0.1",
        "port": 9092,
        "jmx_port": -1,
        "timestamp": "1700000000123",
        "endpoints": ["PLAINTEXT://10.0.0.1:9092"],
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "features": {},
        "rack": "r1",
    }
    assert BrokerIdZNode.decode(1, BrokerIdZNode.encode(info, 0)) == info
    no_rack = BrokerRegistrationInfo(node_id=2, host="h", port=1)
    assert "rack" not in as_json(BrokerIdZNode.encode(no_rack, 0))
    assert BrokerIdZNode.decode(2, BrokerIdZNode.encode(no_rack, 0)) == no_rack
    assert no_rack.target == "h:1"


def test_broker_registration_written_by_kafka_without_a_plaintext_listener():
    data = (
        b'{"listener_security_protocol_map":{"SSL":"SSL"},"endpoints":["SSL://b3.example:9093"],'
        b'"rack":"dc1","jmx_port":9999,"port":-1,"host":null,"timestamp":"1","version":4}'
    )
    ssl = EndPoint("SSL", "b3.example", 9093, "SSL")
    assert BrokerIdZNode.decode(3, data) == BrokerRegistrationInfo(
        3, "b3.example", 9093, "dc1", (ssl,)
    )


def test_broker_registration_with_several_listeners():
    client = EndPoint("CLIENT", "b1.example", 9092, "SSL")
    replication = EndPoint("REPLICATION", "10.0.0.1", 9093, "PLAINTEXT")
    info = BrokerRegistrationInfo(1, "10.0.0.1", 9093, None, (client, replication))
    data = BrokerIdZNode.encode(info, 0)
    obj = as_json(data)
    assert obj["endpoints"] == ["CLIENT://b1.example:9092", "REPLICATION://10.0.0.1:9093"]
    assert obj["listener_security_protocol_map"] == {"CLIENT": "SSL", "REPLICATION": "PLAINTEXT"}
    # Kafka's host and port: the PLAINTEXT listener's
    assert (obj["host"], obj["port"]) == ("10.0.0.1", 9093)
    # the reader picks the address of the listener it connects through
    assert BrokerIdZNode.decode(1, data, "REPLICATION") == info
    on_client = BrokerIdZNode.decode(1, data, "CLIENT")
    assert on_client.target == "b1.example:9092"
    assert on_client.endpoint("REPLICATION") == replication
    assert on_client.endpoint("OTHER") is None
    only_ssl = BrokerRegistrationInfo(1, "b1.example", 9092, None, (client,))
    obj = as_json(BrokerIdZNode.encode(only_ssl, 0))
    assert (obj["host"], obj["port"]) == (None, -1)
    assert BrokerIdZNode.decode(1, BrokerIdZNode.encode(only_ssl, 0)) == only_ssl
    assert EndPoint("X", "::1", 1).connection_string == "X://[::1]:1"


@pytest.mark.parametrize(
    "endpoint", ["CLIENT://h:1", "nohost", "SSL://h", "SSL://h:x", "SSL://h:70000"]
)
def test_malformed_broker_endpoints(endpoint):
    data = json.dumps({"version": 5, "host": None, "port": -1, "endpoints": [endpoint]}).encode()
    with pytest.raises(ValueError):
        BrokerIdZNode.decode(1, data)


def test_topic_znode_version_3():
    assignment = TopicAssignment(
        partitions={0: (1, 2, 3), 1: (2, 3, 4, 1)},
        adding_replicas={1: (4,)},
        removing_replicas={1: (1,)},
        topic_id="mSoLwGlBTme7mYEJE3MBbQ",
    )
    data = TopicZNode.encode(assignment)
    assert as_json(data) == {
        "version": 3,
        "topic_id": "mSoLwGlBTme7mYEJE3MBbQ",
        "partitions": {"0": [1, 2, 3], "1": [2, 3, 4, 1]},
        "adding_replicas": {"1": [4]},
        "removing_replicas": {"1": [1]},
    }
    assert TopicZNode.decode("t", data) == assignment


def test_topic_znode_older_versions():
    v1 = TopicZNode.decode("t", b'{"version":1,"partitions":{"0":[1,2],"1":[2,1]}}')
    assert v1 == TopicAssignment(partitions={0: (1, 2), 1: (2, 1)})
    v2 = TopicZNode.decode(
        "t",
        b'{"version":2,"partitions":{"0":[1]},"adding_replicas":{"0":[]},"removing_replicas":{}}',
    )
    assert v2 == TopicAssignment(partitions={0: (1,)})  # empty lists mean "not reassigning"
    with pytest.raises(ValueError):
        TopicZNode.decode("t", b'{"version":1,"partitions":{"x":[1]}}')


def test_controller_znode():
    obj = as_json(ControllerZNode.encode(4, 1_700_000_000_000))
    assert obj == {
        "version": 2,
        "brokerid": 4,
        "timestamp": "1700000000000",
        "kraftControllerEpoch": -1,
    }
    assert ControllerZNode.decode(b'{"version":1,"brokerid":2,"timestamp":"1"}') == 2
    assert ControllerZNode.decode(ControllerZNode.encode(4, 0)) == 4


def test_controller_epoch_znode():
    assert ControllerEpochZNode.encode(5) == b"5"
    assert ControllerEpochZNode.decode(b"17") == 17
    with pytest.raises(ValueError):
        ControllerEpochZNode.decode(b"x")


def test_topic_config_znode():
    data = ConfigEntityZNode.encode({"retention.ms": "1000", "cleanup.policy": "compact"})
    assert as_json(data) == {
        "version": 1,
        "config": {"cleanup.policy": "compact", "retention.ms": "1000"},
    }
    assert ConfigEntityZNode.decode(data) == {"retention.ms": "1000", "cleanup.policy": "compact"}
    assert ConfigEntityZNode.decode(b"") == {}


def test_config_change_notification():
    data = ConfigEntityChangeNotificationSequenceZNode.encode("orders")
    assert as_json(data) == {"version": 2, "entity_path": "topics/orders"}
    assert ConfigEntityChangeNotificationSequenceZNode.decode(data) == "orders"
    other = b'{"version":2,"entity_path":"clients/app"}'
    assert ConfigEntityChangeNotificationSequenceZNode.decode(other) is None


def test_reassign_partitions_znode_reads_kafkas_format():
    data = (
        b'{"version":1,"partitions":[{"topic":"foo","partition":1,"replicas":[1,2,3],'
        b'"log_dirs":["any","any","any"]}]}'
    )
    assert ReassignPartitionsZNode.decode(data) == {TopicPartition("foo", 1): (1, 2, 3)}


def test_reassign_partitions_znode_round_trip_with_cancel():
    entries = {TopicPartition("a", 0): (3, 1), TopicPartition("a", 1): None}
    data = ReassignPartitionsZNode.encode(entries)
    assert as_json(data)["partitions"][0] == {"topic": "a", "partition": 0, "replicas": [3, 1]}
    assert ReassignPartitionsZNode.decode(data) == entries


def test_preferred_replica_election_znode():
    data = PreferredReplicaElectionZNode.encode([TopicPartition("b", 2), TopicPartition("a", 0)])
    assert as_json(data) == {
        "version": 1,
        "partitions": [{"topic": "a", "partition": 0}, {"topic": "b", "partition": 2}],
    }
    assert PreferredReplicaElectionZNode.decode(data) == {
        TopicPartition("a", 0),
        TopicPartition("b", 2),
    }
    with pytest.raises(ValueError):
        PreferredReplicaElectionZNode.decode(b'{"version":1,"partitions":[{"partition":0}]}')


def test_cluster_id_znode():
    assert as_json(ClusterIdZNode.encode("abc")) == {"version": "1", "id": "abc"}
    assert ClusterIdZNode.decode(b'{"version":"1","id":"xyz"}') == "xyz"


def test_topic_ids_look_like_kafkas():
    ids = {new_topic_id() for _ in range(200)}
    assert len(ids) == 200
    for topic_id in ids:
        assert len(topic_id) == 22
        assert not topic_id.startswith("-")
        assert "=" not in topic_id
    assert new_topic_id(bytes(range(16))) == "AAECAwQFBgcICQoLDA0ODw"
    with pytest.raises(ValueError):
        new_topic_id(bytes(16))  # the all-zero id is reserved
    with pytest.raises(ValueError):
        new_topic_id(b"\xf8" + bytes(15))  # would print starting with '-'


def test_broker_and_group_config_paths_and_their_change_notices():
    # Kafka's ZooKeeper mode: /config/brokers/<id> and /config/brokers/<default>, the notice's
    # entity_path the part after /config/ (ConfigEntityChangeNotificationSequenceZNode v2)
    assert BrokerConfigZNode.path(1) == "/config/brokers/1"
    assert BrokerConfigZNode.path(None) == "/config/brokers/<default>"
    assert BrokerConfigZNode.entity(None) == "brokers/<default>"
    assert GroupConfigZNode.path("a b/c") == "/config/groups/a%20b%2Fc"
    assert GroupConfigZNode.group_of("a%20b%2Fc") == "a b/c"
    notice = ConfigEntityChangeNotificationSequenceZNode.encode_entity(BrokerConfigZNode.entity(0))
    assert as_json(notice) == {"version": 2, "entity_path": "brokers/0"}
    # the controller acts on topic notices only
    assert ConfigEntityChangeNotificationSequenceZNode.decode(notice) is None
    data = ConfigEntityZNode.encode({"log.retention.ms": "1"})
    assert as_json(data) == {"version": 1, "config": {"log.retention.ms": "1"}}
