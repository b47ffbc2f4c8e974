"""Listeners as Kafka's: parsing, validation, what a node advertises."""

from __future__ import annotations

import pytest

from controller.zk_data import EndPoint
from node.config import config_from_properties
from node.listeners import (
    Listener,
    advertised_endpoints,
    parse_listeners,
    parse_protocol_map,
)
from odradek.errors import InvalidConfigError

BASE = {"node.id": "1", "log.dirs": "/d", "zookeeper.connect": "z:1"}


def test_kafka_listener_settings():
    config = config_from_properties(
        {
            **BASE,
            "listeners": "CLIENT://0.0.0.0:9092,REPLICATION://127.0.0.1:9093",
            "advertised.listeners": "CLIENT://b1.example.com:9092",
            "listener.security.protocol.map": "CLIENT:SSL,REPLICATION:PLAINTEXT",
            "inter.broker.listener.name": "REPLICATION",
            "ssl.keystore.location": "/etc/odradek/node.pem",
        }
    )
    assert config.effective_listeners == (
        Listener("CLIENT", "0.0.0.0", 9092),
        Listener("REPLICATION", "127.0.0.1", 9093),
    )
    assert config.protocol_map == {"CLIENT": "SSL", "REPLICATION": "PLAINTEXT"}
    assert config.inter_broker_listener == "REPLICATION"
    endpoints = advertised_endpoints(
        config.effective_listeners,
        config.advertised_listeners,
        config.protocol_map,
        {"CLIENT": 9092, "REPLICATION": 9093},
        "host.example",
    )
    assert endpoints == (
        EndPoint("CLIENT", "b1.example.com", 9092, "SSL"),
        EndPoint("REPLICATION", "127.0.0.1", 9093, "PLAINTEXT"),
    )


def test_single_address_configs_keep_working():
    config = config_from_properties({**BASE, "listen.address": "127.0.0.2:9000"})
    assert config.effective_listeners == (Listener("PLAINTEXT", "127.0.0.2", 9000),)
    assert config.inter_broker_listener == "PLAINTEXT"
    config = config_from_properties({**BASE, "listeners": "PLAINTEXT://:9092"})
    assert config.effective_listeners == (Listener("PLAINTEXT", "", 9092),)
    # one listener of any name is the inter-broker one
    config = config_from_properties(
        {**BASE, "listeners": "SSL://127.0.0.1:9093", "ssl.keystore.location": "/k.pem"}
    )
    assert (config.inter_broker_listener, config.protocol_map["SSL"]) == ("SSL", "SSL")


def test_a_node_bound_to_every_interface_advertises_its_host_name_and_bound_ports():
    listeners = (Listener("PLAINTEXT", "0.0.0.0", 0), Listener("SSL", "", 0))
    endpoints = advertised_endpoints(
        listeners, (), {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}, {"PLAINTEXT": 5, "SSL": 6}, "h"
    )
    assert [e.connection_string for e in endpoints] == ["PLAINTEXT://h:5", "SSL://h:6"]


def test_parsing():
    assert parse_listeners("client://[::1]:1, B://h:2,", "listeners") == (
        Listener("CLIENT", "::1", 1),
        Listener("B", "h", 2),
    )
    assert parse_protocol_map("a:ssl,B:SASL_SSL") == (("A", "SSL"), ("B", "SASL_SSL"))


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"listeners": "CLIENT://h:1"}, "CLIENT has no security protocol"),
        ({"listeners": "A://h:1,A://h:2"}, "given twice"),
        ({"listeners": "h:1"}, "NAME://host:port"),
        ({"listeners": "PLAINTEXT://h:x"}, "no port"),
        ({"listeners": "PLAINTEXT://h:1,SSL://h:1"}, "two listeners on port 1"),
        ({"listeners": "SASL_PLAINTEXT://h:1"}, "not supported"),
        (
            {"listeners": "A://h:1,B://h:2", "listener.security.protocol.map": "A:SSL,B:SSL"},
            "inter.broker.listener.name is required",
        ),
        ({"listeners": "SSL://h:1"}, "SSL but has no keystore"),
        (
            {"listeners": "PLAINTEXT://h:1", "inter.broker.listener.name": "OTHER"},
            "OTHER is not one of the listeners",
        ),
        (
            {"listeners": "PLAINTEXT://h:1", "advertised.listeners": "PLAINTEXT://0.0.0.0:1"},
            "not 0.0.0.0",
        ),
        (
            {"listeners": "PLAINTEXT://h:1", "advertised.listeners": "SSL://h:2"},
            "SSL is not one of the listeners",
        ),
        (
            {"listeners": "A://h:1", "listener.security.protocol.map": "A:TLS"},
            "unknown security protocol",
        ),
        ({"listeners": ""}, "no listener"),
    ],
)
def test_bad_listener_settings(props, message):
    with pytest.raises(InvalidConfigError, match=message):
        config_from_properties({**BASE, **props})
