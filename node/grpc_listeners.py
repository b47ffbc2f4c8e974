"""Process wiring of the gRPC door, beside the Kafka door's (:mod:`node.kafka_listeners`): one
gRPC server per gRPC listener, what each serves, and its TLS.

Every listener not named in ``kafka.listener.names`` is a gRPC listener, one server each
(sharing the node's request threads), so that each knows its listener: Metadata and
FindCoordinator answer with that listener's endpoints, and only the inter-broker listener
serves the replication and controller services (the others refuse them by name). A listener's
security protocol decides its credentials: PLAINTEXT, SSL (the node's certificates, reloaded
when they change) or, with ``ssl.client.auth=requested``, TLS terminated by the node itself
(gRPC cannot ask for a certificate without requiring one); SASL_SSL also serves the SASL
service. Every server has, outermost first: the unexpected-error interceptor, authentication,
and the request metrics when configured.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from node.apis import BrokerApis
from node.config import NodeConfig
from node.grpc_door.admin_service import AdminServicer
from node.grpc_door.authentication import AuthenticationInterceptor
from node.grpc_door.listener_refusals import RefuseInterBrokerServices
from node.grpc_door.sasl_service import SaslServicer
from node.grpc_door.service import BrokerServicer
from node.grpc_door.tls_credentials import CertificateReloader, server_credentials
from node.grpc_door.unexpected_errors import UnexpectedErrorInterceptor
from node.security.sasl import SaslSessions
from node.security.tls_terminator import TlsTerminator
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = ["GRPC_OPTIONS", "SERVICE_NAMES", "GrpcListeners", "GrpcServices", "grpc_listeners"]

MAX_MESSAGE_BYTES = 128 * 1024 * 1024
GRPC_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]
SERVICE_NAMES = (
    "odradek.v1.Broker",
    "odradek.v1.Admin",
    "odradek.v1.Replication",
    "odradek.v1.Controller",
)


@dataclass(frozen=True, slots=True)
class GrpcServices:
    """What the gRPC listeners serve: the client APIs' policy layer, and the servicers of the
    admin, SASL, replication and controller services (the last two with their ACL checks
    when there is an authorizer), and the health service."""

    apis: BrokerApis
    admin: AdminServicer
    sasl: SaslServicer
    replication: pb_grpc.ReplicationServicer
    controller: pb_grpc.ControllerServicer
    health: health.HealthServicer
    sasl_sessions: SaslSessions


@dataclass(slots=True)
class GrpcListeners:
    """The gRPC servers of a node, bound and not yet started."""

    servers: list[grpc.Server] = field(default_factory=list)
    terminators: list[TlsTerminator] = field(default_factory=list)
    """TLS of the listeners with ssl.client.auth=requested."""
    certificates: dict[str, CertificateReloader] = field(default_factory=dict)
    """The certificate reloader of each SSL listener."""
    ports: dict[str, int] = field(default_factory=dict)
    """Bound port per listener name."""

    def start(self) -> None:
        for server in self.servers:
            server.start()
        for terminator in self.terminators:
            terminator.start()


def _bind_error(host: str, port: int) -> str:
    """Why ``host:port`` cannot be bound, as the OS says it (gRPC's error does not say)."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((host.strip("[]"), port))
    except OSError as e:
        return (e.strerror or str(e)).lower()
    return "gRPC could not bind it"


def grpc_listeners(
    config: NodeConfig,
    services: GrpcServices,
    executor: ThreadPoolExecutor,
    interceptors: Sequence[grpc.ServerInterceptor[Any, Any]] = (),
    into: GrpcListeners | None = None,
) -> GrpcListeners:
    """One bound gRPC server per gRPC listener of ``config``. Raises ``OSError`` with a
    sentence when a listener's address cannot be bound; what was bound before is in ``into``
    (if given), for the caller to stop."""
    c = config
    out = into if into is not None else GrpcListeners()
    inter_broker = c.inter_broker_listener
    kafka_names = c.effective_kafka_listener_names
    for listener in c.effective_listeners:
        if listener.name in kafka_names:
            continue  # served by the Kafka door
        protocol = c.protocol_map[listener.name]
        ssl_config = c.ssl_for(listener.name)
        terminator = (
            TlsTerminator(ssl_config, listener.name, listener.host or "0.0.0.0", listener.port)
            if protocol == "SSL" and ssl_config.client_auth == "requested"
            else None
        )
        server = grpc.server(
            executor,
            # gRPC sets SO_REUSEPORT by default: a second node on a taken port would bind
            # it too and share its clients; refuse the port instead
            options=[*GRPC_OPTIONS, ("grpc.so_reuseport", 0)],
            interceptors=[
                # outermost: whatever fails below is answered without its text
                UnexpectedErrorInterceptor(),
                AuthenticationInterceptor(
                    listener.name,
                    protocol,
                    ssl_config.principal_mapper,
                    services.sasl_sessions,
                    relayed=terminator.peer if terminator is not None else None,
                ),
                *interceptors,
            ],
        )
        out.servers.append(server)
        pb_grpc.add_BrokerServicer_to_server(BrokerServicer(services.apis, listener.name), server)
        pb_grpc.add_AdminServicer_to_server(services.admin, server)
        if protocol == "SASL_SSL":
            pb_grpc.add_SaslServicer_to_server(services.sasl, server)
        if listener.name == inter_broker:
            pb_grpc.add_ReplicationServicer_to_server(services.replication, server)
            pb_grpc.add_ControllerServicer_to_server(services.controller, server)
        else:
            server.add_generic_rpc_handlers(
                (RefuseInterBrokerServices(listener.name, inter_broker),)
            )
        health_pb2_grpc.add_HealthServicer_to_server(services.health, server)
        reflection.enable_server_reflection(
            (*SERVICE_NAMES, health.SERVICE_NAME, reflection.SERVICE_NAME), server
        )
        host = listener.host or "0.0.0.0"
        bind = f"{host}:{listener.port}"
        try:
            if protocol == "PLAINTEXT":
                port = server.add_insecure_port(bind)
            elif terminator is not None:
                try:
                    port = terminator.bind()
                except OSError:
                    port = 0
                else:
                    out.terminators.append(terminator)
                    terminator.backend_port = server.add_insecure_port("127.0.0.1:0")
            else:
                credentials, reloader = server_credentials(ssl_config, listener.name)
                out.certificates[listener.name] = reloader
                port = server.add_secure_port(bind, credentials)
        except RuntimeError:  # gRPC's "Failed to bind": taken, or not this host's address
            port = 0
        if port == 0:
            raise OSError(
                f"cannot listen on {bind} (listener {listener.name}): "
                f"{_bind_error(host, listener.port)}"
            )
        out.ports[listener.name] = port
    return out
