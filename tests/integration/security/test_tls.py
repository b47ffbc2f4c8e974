"""TLS and mTLS on real gRPC servers over loopback: who is let in, with which principal, and
certificate rotation without a restart; then a node whose listeners are all SSL, with mTLS
between the controller and the node."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from node.config import NodeConfig
from node.grpc_door.authentication import AuthenticationInterceptor, RequestContext, current_request
from node.grpc_door.tls_credentials import CertificateReloader, server_credentials
from node.listeners import Listener
from node.security.tls import SslConfig
from node.server import Node
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.certs import CertificateAuthority, Leaf
from tests.integration.helpers import wait_for


class _Recording(health.HealthServicer):
    """The health service, remembering who called."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[RequestContext | None] = []

    def Check(self, request, context):  # noqa: N802
        self.seen.append(current_request())
        return super().Check(request, context)


class _Server:
    def __init__(self, config: SslConfig) -> None:
        self.servicer = _Recording()
        self.server = grpc.server(
            futures.ThreadPoolExecutor(4),
            interceptors=[AuthenticationInterceptor("CLIENT", "SSL", config.principal_mapper)],
        )
        health_pb2_grpc.add_HealthServicer_to_server(self.servicer, self.server)
        credentials, self.reloader = server_credentials(config, "CLIENT")
        self.port = self.server.add_secure_port("127.0.0.1:0", credentials)
        self.server.start()

    def check(self, trusted: CertificateAuthority, client: Leaf | None) -> RequestContext | None:
        """A health check over a new connection to ``localhost``; returns the server's view
        of the caller, or raises ``grpc.RpcError``."""
        credentials = grpc.ssl_channel_credentials(
            trusted.cert_pem,
            client.key_pem if client else None,
            client.cert_pem if client else None,
        )
        with grpc.secure_channel(f"localhost:{self.port}", credentials) as channel:
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
        return self.servicer.seen[-1]


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, object]:
    ca, other = CertificateAuthority("odradek-test-ca"), CertificateAuthority("another-ca")
    server = ca.issue("CN=node-1,OU=Brokers", ["localhost", "127.0.0.1"])
    _, _, keystore = server.write(tmp_path, "node-1")
    return {
        "ca": ca,
        "other": other,
        "keystore": keystore,
        "truststore": ca.write(tmp_path / "ca.crt"),
        "alice": ca.issue("CN=alice,OU=Users,O=Example"),
        "mallory": other.issue("CN=mallory,OU=Users,O=Example"),
    }


@pytest.fixture
def make_server() -> Iterator[type[_Server]]:
    made: list[_Server] = []

    class Made(_Server):
        def __init__(self, config: SslConfig) -> None:
            super().__init__(config)
            made.append(self)

    yield Made
    for s in made:
        s.server.stop(None)


def test_required_client_auth_lets_in_only_certificates_of_the_trusted_ca(pki, make_server):
    server = make_server(
        SslConfig(
            keystore_location=str(pki["keystore"]),
            truststore_location=str(pki["truststore"]),
            client_auth="required",
            principal_mapping_rules="RULE:^CN=(.*?),OU=Users,.*$/$1/,DEFAULT",
        )
    )
    seen = server.check(pki["ca"], pki["alice"])
    assert seen is not None
    assert str(seen.principal) == "User:alice"
    assert (seen.listener_name, seen.security_protocol, seen.client_host) == (
        "CLIENT",
        "SSL",
        "127.0.0.1",
    )
    for client in (None, pki["mallory"]):  # no certificate; one of another CA
        with pytest.raises(grpc.RpcError) as refused:
            server.check(pki["ca"], client)
        assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
    # a client that does not trust the server's CA does not connect either
    with pytest.raises(grpc.RpcError):
        server.check(pki["other"], pki["alice"])
    assert len(server.servicer.seen) == 1


def test_a_subject_no_rule_maps_is_refused(pki, make_server):
    server = make_server(
        SslConfig(
            keystore_location=str(pki["keystore"]),
            truststore_location=str(pki["truststore"]),
            client_auth="required",
            principal_mapping_rules="RULE:^CN=(.*?),OU=ServiceUsers,.*$/$1/",
        )
    )
    with pytest.raises(grpc.RpcError) as refused:
        server.check(pki["ca"], pki["alice"])
    assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
    assert "no rule" in (refused.value.details() or "")


def test_without_client_auth_every_client_is_anonymous(pki, make_server):
    server = make_server(SslConfig(keystore_location=str(pki["keystore"]), client_auth="none"))
    for client in (None, pki["alice"]):
        seen = server.check(pki["ca"], client)
        assert seen is not None and str(seen.principal) == "User:ANONYMOUS"


def test_a_rotated_certificate_is_served_without_a_restart(pki, make_server, tmp_path):
    server = make_server(
        SslConfig(
            keystore_location=str(pki["keystore"]),
            truststore_location=str(pki["truststore"]),
            client_auth="required",
        )
    )
    assert server.check(pki["ca"], pki["alice"]) is not None
    # the operator moves the node to a new CA: its keystore, and the truststore trusting both
    new_ca: CertificateAuthority = CertificateAuthority("new-ca")
    with pytest.raises(grpc.RpcError):
        server.check(new_ca, pki["alice"])  # the old certificate is not signed by the new CA
    renewed = new_ca.issue("CN=node-1,OU=Brokers", ["localhost", "127.0.0.1"])
    pki["truststore"].write_bytes(pki["ca"].cert_pem + new_ca.cert_pem)
    pki["keystore"].write_bytes(renewed.keystore_pem())
    # new connections get the new certificate, and clients of the new CA are let in
    assert server.check(new_ca, pki["alice"]) is not None
    assert server.check(new_ca, new_ca.issue("CN=bob,OU=Users,O=Example")) is not None
    with pytest.raises(grpc.RpcError):
        server.check(pki["ca"], pki["alice"])  # the old CA no longer vouches for the server
    reloader: CertificateReloader = server.reloader
    assert reloader.reloads == 1


def test_a_node_with_ssl_listeners_and_mtls_between_brokers(tmp_path, zk_connect, pki):
    config = NodeConfig(
        node_id=1,
        log_dirs=(tmp_path / "data",),
        zookeeper_connect=zk_connect,
        listeners=(Listener("CLIENT", "127.0.0.1", 0), Listener("REPLICATION", "127.0.0.1", 0)),
        advertised_listeners=(
            Listener("CLIENT", "localhost", 0),
            Listener("REPLICATION", "localhost", 0),
        ),
        listener_security_protocol_map=(("CLIENT", "SSL"), ("REPLICATION", "SSL")),
        inter_broker_listener_name="REPLICATION",
        ssl=SslConfig(
            keystore_location=str(pki["keystore"]),
            truststore_location=str(pki["truststore"]),
            client_auth="required",
        ),
        zookeeper_session_timeout_ms=6_000,
    )
    node = Node(config)
    try:
        node.start()
        alice: Leaf = pki["alice"]
        credentials = grpc.ssl_channel_credentials(
            pki["ca"].cert_pem, alice.key_pem, alice.cert_pem
        )
        address = f"localhost:{node.ports['CLIENT']}"
        with grpc.secure_channel(address, credentials) as channel:
            broker = pb_grpc.BrokerStub(channel)

            def brokers() -> list[pb.BrokerInfo]:
                answer = broker.Metadata(pb.MetadataRequest(all_topics=True), timeout=10)
                return list(answer.brokers)

            # the controller reached the node's REPLICATION listener over mTLS with the
            # node's own certificate, or the node would know no live broker
            [seen] = wait_for(brokers, "the controller's UpdateMetadata over mTLS")
            assert (seen.host, seen.port) == ("localhost", node.ports["CLIENT"])
        with (
            grpc.secure_channel(address, grpc.ssl_channel_credentials(pki["ca"].cert_pem)) as c,
            pytest.raises(grpc.RpcError) as refused,
        ):
            pb_grpc.BrokerStub(c).Metadata(pb.MetadataRequest(), timeout=10)
        assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
    finally:
        node.stop(controlled=False)
