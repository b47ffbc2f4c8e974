"""The ZooKeeper client settings (Kafka's ``zookeeper.*`` names) and the ACLs of
``zookeeper.set.acl`` (Kafka's ``ZkData.defaultAcls``), without a ZooKeeper."""

from __future__ import annotations

import ssl

import pytest
from kazoo.security import CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

from controller.zk_connection import (
    AclKazooClient,
    ZkClientConfig,
    _ssl_options,
    default_acls,
    new_zk_client,
)
from node.config import config_from_properties
from odradek.errors import InvalidConfigError

BASE = {"node.id": "1", "log.dirs": "/tmp/x", "zookeeper.connect": "zk:2182/odradek"}
TLS = {
    "zookeeper.ssl.client.enable": "true",
    "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
    "zookeeper.ssl.keystore.location": "/etc/odradek/zk-client.pem",
    "zookeeper.ssl.truststore.location": "/etc/odradek/ca.crt",
}


def test_kafka_names_reach_the_config() -> None:
    config = config_from_properties(
        {
            **BASE,
            **TLS,
            "zookeeper.set.acl": "true",
            "zookeeper.ssl.keystore.type": "PEM",
            "zookeeper.ssl.truststore.type": "pem",
            "zookeeper.ssl.truststore.password": "unused",
            "zookeeper.ssl.enabled.protocols": "TLSv1.2, TLSv1.3",
            "zookeeper.ssl.endpoint.identification.algorithm": "",
        }
    ).zookeeper
    assert config.ssl_client_enable and config.set_acl and config.is_secure
    assert config.ssl_keystore_location == "/etc/odradek/zk-client.pem"
    assert config.protocols == ("TLSv1.2", "TLSv1.3")
    assert not config.check_hostname


def test_the_environment_spelling_of_client_cnxn_socket_is_accepted() -> None:
    # ODRADEK_ZOOKEEPER_CLIENTCNXNSOCKET arrives lower-cased
    config = config_from_properties(
        {**BASE, "zookeeper.clientcnxnsocket": "org.apache.zookeeper.ClientCnxnSocketNetty"}
    )
    assert config.zookeeper.client_cnxn_socket == "org.apache.zookeeper.ClientCnxnSocketNetty"


def test_defaults_are_kafkas() -> None:
    config = config_from_properties(BASE).zookeeper
    assert not config.ssl_client_enable and not config.set_acl
    assert config.protocols == ("TLSv1.2",)  # zookeeper.ssl.protocol's default
    assert config.check_hostname  # HTTPS


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"zookeeper.set.acl": "true"}, "zookeeper.set.acl is true"),
        (
            {"zookeeper.set.acl": "true", "zookeeper.ssl.client.enable": "true"},
            "zookeeper.ssl.keystore.location",
        ),
        ({**TLS, "zookeeper.ssl.keystore.type": "JKS"}, "only PEM"),
        ({**TLS, "zookeeper.ssl.keystore.location": "/etc/k.jks"}, "only PEM"),
        ({**TLS, "zookeeper.ssl.truststore.location": "/etc/t.p12"}, "only PEM"),
        (
            {**TLS, "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNIO"},
            "has no TLS",
        ),
        ({**TLS, "zookeeper.clientCnxnSocket": "Netty"}, "not a ZooKeeper client socket"),
        ({**TLS, "zookeeper.ssl.protocol": "SSLv3"}, "SSLv3"),
        ({**TLS, "zookeeper.ssl.crl.enable": "true"}, "not supported"),
        ({**TLS, "zookeeper.ssl.ocsp.enable": "true"}, "not supported"),
        ({**TLS, "zookeeper.ssl.endpoint.identification.algorithm": "ldaps"}, "HTTPS or blank"),
        ({"zookeeper.ssl.client.enable": "yes"}, "true or false"),
        ({"zookeeper.ssl.keystore.locaton": "x"}, "zookeeper.ssl.keystore.location"),
    ],
)
def test_bad_settings_are_typed_errors(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message.replace(".", r"\.")):
        config_from_properties({**BASE, **props})


def test_open_acls_without_security() -> None:
    assert default_acls(False, "/brokers/ids/1") == list(OPEN_ACL_UNSAFE)
    assert default_acls(False, "/config/users/alice") == list(OPEN_ACL_UNSAFE)


@pytest.mark.parametrize(
    "path",
    ["/brokers/ids/1", "/brokers/topics/t", "/config/topics/t", "/kafka-acl/Topic/t", "/admin"],
)
def test_secure_acls_are_the_creators_and_world_readable(path: str) -> None:
    assert default_acls(True, path) == [*CREATOR_ALL_ACL, *READ_ACL_UNSAFE]


@pytest.mark.parametrize(
    "path",
    ["/config/users", "/config/users/alice", "/config/brokers/1", "/delegation_token/tokens"],
)
def test_credentials_are_the_creators_only(path: str) -> None:
    assert default_acls(True, path) == list(CREATOR_ALL_ACL)


def test_the_old_consumers_path_stays_open() -> None:
    assert default_acls(True, "/consumers") == list(OPEN_ACL_UNSAFE)


def test_the_client_applies_the_acls_by_path() -> None:
    plain = new_zk_client("127.0.0.1:2181", 5, ZkClientConfig())
    assert isinstance(plain, AclKazooClient)
    assert plain.acl_for("/brokers/ids/1") == list(OPEN_ACL_UNSAFE)
    assert not plain.use_ssl
    txn = plain.transaction()
    txn.create("/brokers/topics/t", b"{}")
    (op,) = txn.operations
    assert list(op.acl) == list(OPEN_ACL_UNSAFE)
    secure = AclKazooClient(hosts="127.0.0.1:2181", acl_for=lambda p: default_acls(True, p))
    txn = secure.transaction()
    txn.create("/brokers/topics/t", b"{}")
    txn.create("/config/users/alice", b"{}")
    topic, user = txn.operations
    assert list(topic.acl) == [*CREATOR_ALL_ACL, *READ_ACL_UNSAFE]
    assert list(user.acl) == list(CREATOR_ALL_ACL)


def test_protocol_options_leave_only_the_enabled_versions() -> None:
    options = _ssl_options(("TLSv1.2",))
    assert options & ssl.OP_NO_TLSv1_3 and options & ssl.OP_NO_TLSv1_1
    assert not options & ssl.OP_NO_TLSv1_2
