"""Process wiring of the Kafka door: which listeners speak Kafka's wire protocol, with what TLS
and limits, over which of the node's objects.

A listener named in ``kafka.listener.names`` (or the KAFKA listener of ``kafka.listen.address``)
is served by :class:`~node.kafka_door.server.KafkaDoor` instead of a gRPC server; its security
protocol (``listener.security.protocol.map``) and TLS settings (``listener.name.<name>.ssl.*``
over ``ssl.*``) are Kafka's, and so are the connection limits (``socket.request.max.bytes``,
``connections.max.idle.ms``, ``max.connections``, ``max.connections.per.ip[.overrides]``). The
door's request threads are the node's request threads (``num.request.handler.threads``).
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Any

from node.config import NodeConfig
from node.kafka_door.apis import build_registry
from node.kafka_door.handlers.sasl import SaslHandlers
from node.kafka_door.server import DoorLimits, KafkaDoor, KafkaListenerSpec
from node.kafka_door.services import DoorServices
from node.security.principal import KafkaPrincipal
from node.security.server_tls import ReloadingServerContext
from node.security.tls_terminator import rfc2253_subject

__all__ = ["kafka_door", "kafka_listener_specs"]


def kafka_listener_specs(config: NodeConfig) -> list[KafkaListenerSpec]:
    """One spec per Kafka listener. Raises ``InvalidConfigError`` for missing or bad
    certificates of an SSL or SASL_SSL listener."""
    specs = []
    kafka_names = config.effective_kafka_listener_names
    for listener in config.effective_listeners:
        if listener.name not in kafka_names:
            continue
        protocol = config.protocol_map[listener.name]
        context = None
        principal_of = None
        if protocol in ("SSL", "SASL_SSL"):
            ssl_config = config.ssl_for(listener.name)
            context = ReloadingServerContext(ssl_config, listener.name).context
            if protocol == "SSL":
                mapper = ssl_config.principal_mapper

                def principal_of(cert: dict[str, Any], mapper: Any = mapper) -> KafkaPrincipal:
                    return KafkaPrincipal("User", mapper.name(rfc2253_subject(cert)))

        specs.append(
            KafkaListenerSpec(
                listener.name,
                protocol,
                listener.host,
                listener.port,
                ssl_context=context,
                principal_of_certificate=principal_of,
            )
        )
    return specs


def kafka_door(
    config: NodeConfig, services: DoorServices, sasl: SaslHandlers, executor: Executor
) -> KafkaDoor:
    """The door of ``config``'s Kafka listeners (not yet bound)."""
    return KafkaDoor(
        build_registry(services, sasl),
        executor,
        DoorLimits(
            socket_request_max_bytes=config.socket_request_max_bytes,
            connections_max_idle_ms=config.connections_max_idle_ms,
            max_connections_per_ip=config.max_connections_per_ip,
            max_connections_per_ip_overrides=dict(config.max_connections_per_ip_overrides),
            max_connections=config.max_connections,
        ),
        services.metrics,
    )
