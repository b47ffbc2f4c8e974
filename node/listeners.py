"""Listeners, as Kafka's: named ``NAME://host:port`` sockets, each with a security protocol.

Kafka's broker settings (``SocketServerConfigs``, ``KafkaConfig``)::

    listeners=CLIENT://0.0.0.0:9092,REPLICATION://10.0.0.1:9093
    advertised.listeners=CLIENT://b1.example.com:9092,REPLICATION://10.0.0.1:9093
    listener.security.protocol.map=CLIENT:SSL,REPLICATION:SSL
    inter.broker.listener.name=REPLICATION

A node binds one gRPC server per listener. The inter-broker listener serves every service; the
others serve the client services (Broker, Admin, health, reflection) and refuse the
Replication and Controller services with CLUSTER_AUTHORIZATION_FAILED (31): replication and
controller requests come only through the inter-broker listener. Each node registers its
advertised listeners in ZooKeeper (``/brokers/ids/<id>`` ``endpoints``), the controller and
the other nodes connect to the inter-broker one, and a client's Metadata answer gives every
broker's endpoint on the listener the client connected on.

The parsing and validation here are pure (values in, values or ``InvalidConfigError`` out);
the gRPC handler refusing the inter-broker services is
:class:`node.grpc_door.listener_refusals.RefuseInterBrokerServices`. Thread-safe (immutable
values).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from controller.zk_data import SECURITY_PROTOCOLS, EndPoint, split_connection_string
from odradek.errors import InvalidConfigError

__all__ = [
    "DEFAULT_PROTOCOL_MAP",
    "INTER_BROKER_SERVICES",
    "Listener",
    "advertised_endpoints",
    "parse_listeners",
    "parse_protocol_map",
]

DEFAULT_PROTOCOL_MAP: Mapping[str, str] = {p: p for p in SECURITY_PROTOCOLS}
"""``listener.security.protocol.map``'s default: each protocol is a listener name of itself."""

SUPPORTED_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_SSL")
"""What a gRPC listener may use. SASL_PLAINTEXT is refused there: odradek's gRPC SASL hands out
a session token, which must not cross the wire in clear."""

KAFKA_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
"""What a Kafka listener may use: Kafka's four (SCRAM never sends the password itself)."""

INTER_BROKER_SERVICES = ("odradek.v1.Replication", "odradek.v1.Controller")
"""Served only on the inter-broker listener: follower fetches, OffsetForLeaderEpoch and the
controller's LeaderAndIsr / StopReplica / UpdateMetadata (Replication), and the brokers'
AlterPartition / ControlledShutdown to the controller (Controller)."""

UNROUTABLE_HOSTS = ("0.0.0.0", "::", "")


@dataclass(frozen=True, slots=True)
class Listener:
    """One ``NAME://host:port`` of ``listeners`` or ``advertised.listeners``. An empty host
    binds every interface (as ``0.0.0.0``); port 0 binds any free port."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


def parse_listeners(text: str, config: str) -> tuple[Listener, ...]:
    """``NAME://host:port,...`` (Kafka's listener list); ``config`` names the setting in
    errors. Names are upper-cased as Kafka does (``ListenerName.normalised``). Raises
    ``InvalidConfigError`` for a malformed entry or a name given twice."""
    out: list[Listener] = []
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        try:
            name, host, port = split_connection_string(item, config)
        except ValueError as err:
            raise InvalidConfigError(f"{err}") from None
        if not name.replace("_", "").replace("-", "").isalnum():
            raise InvalidConfigError(f"{config}: invalid listener name {name!r}")
        out.append(Listener(name.upper(), host, port))
    names = [listener.name for listener in out]
    for name in names:
        if names.count(name) > 1:
            raise InvalidConfigError(f"{config}: listener {name} is given twice")
    return tuple(out)


def parse_protocol_map(text: str) -> tuple[tuple[str, str], ...]:
    """``NAME:PROTOCOL,...`` (``listener.security.protocol.map``). ``InvalidConfigError``
    for a malformed entry or an unknown protocol."""
    out: dict[str, str] = {}
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name:
            raise InvalidConfigError(
                f"listener.security.protocol.map: {item!r} is not NAME:PROTOCOL"
            )
        if protocol not in SECURITY_PROTOCOLS:
            raise InvalidConfigError(
                f"listener.security.protocol.map: unknown security protocol {protocol!r} "
                f"(one of {', '.join(SECURITY_PROTOCOLS)})"
            )
        out[name] = protocol
    return tuple(out.items())


def validate_listeners(
    listeners: Iterable[Listener],
    advertised: Iterable[Listener],
    protocol_map: Mapping[str, str],
    inter_broker_listener_name: str | None,
    kafka_listener_names: Iterable[str] = (),
) -> str:
    """Checks the listener settings together; returns the inter-broker listener's name.

    The name defaults, as Kafka's ``security.inter.broker.protocol=PLAINTEXT`` does, to the
    gRPC listener named PLAINTEXT; odradek also takes the only gRPC listener if there is one. Raises
    ``InvalidConfigError``: a listener without a (supported) protocol, two listeners on one
    port, an advertised listener that is not bound or is ``0.0.0.0``, an inter-broker
    listener that is not a listener, a Kafka listener (``kafka.listener.names``) that is not
    a listener or is the inter-broker one (brokers replicate over gRPC).
    """
    bound = tuple(listeners)
    names = [listener.name for listener in bound]
    kafka = tuple(kafka_listener_names)
    grpc_names = [name for name in names if name not in kafka]
    for name in kafka:
        if name not in names:
            raise InvalidConfigError(
                f"kafka.listener.names: {name} is not one of the listeners ({', '.join(names)})"
            )
    for listener in bound:
        protocol = protocol_map.get(listener.name)
        if protocol is None:
            raise InvalidConfigError(
                f"listener {listener.name} has no security protocol in "
                "listener.security.protocol.map"
            )
        supported = KAFKA_PROTOCOLS if listener.name in kafka else SUPPORTED_PROTOCOLS
        if protocol not in supported:
            raise InvalidConfigError(
                f"listener {listener.name}: security protocol {protocol} is not supported "
                f"(one of {', '.join(supported)})"
            )
    ports = [listener.port for listener in bound if listener.port != 0]
    for port in ports:
        if ports.count(port) > 1:
            raise InvalidConfigError(f"listeners: two listeners on port {port}")
    for listener in advertised:
        if listener.name not in names:
            raise InvalidConfigError(
                f"advertised.listeners: {listener.name} is not one of the listeners "
                f"({', '.join(names)})"
            )
        if listener.host in UNROUTABLE_HOSTS:
            raise InvalidConfigError(
                f"advertised.listeners: {listener} cannot be reached: advertise a host name "
                "or address, not 0.0.0.0"
            )
    if inter_broker_listener_name is not None:
        if inter_broker_listener_name not in names:
            raise InvalidConfigError(
                f"inter.broker.listener.name {inter_broker_listener_name} is not one of the "
                f"listeners ({', '.join(names)})"
            )
        chosen = inter_broker_listener_name
    elif "PLAINTEXT" in grpc_names:
        chosen = "PLAINTEXT"
    elif len(grpc_names) == 1:
        chosen = grpc_names[0]
    elif not grpc_names:
        raise InvalidConfigError(
            "every listener is a Kafka listener (kafka.listener.names): brokers replicate over "
            "gRPC, so add a gRPC listener for them (e.g. REPLICATION://:9093)"
        )
    else:
        raise InvalidConfigError(
            "inter.broker.listener.name is required when no gRPC listener is named PLAINTEXT"
        )
    if chosen in kafka:
        raise InvalidConfigError(
            f"the inter-broker listener {chosen} is a Kafka listener (kafka.listener.names): "
            "brokers replicate over gRPC, so name a gRPC listener in inter.broker.listener.name"
        )
    if protocol_map.get(chosen) == "SASL_SSL":
        raise InvalidConfigError(
            f"the inter-broker listener {chosen} cannot be SASL_SSL (nodes authenticate to "
            "each other with certificates: use SSL)"
        )
    return chosen


def advertised_endpoints(
    listeners: Iterable[Listener],
    advertised: Iterable[Listener],
    protocol_map: Mapping[str, str],
    bound_ports: Mapping[str, int],
    hostname: str,
) -> tuple[EndPoint, ...]:
    """What the node registers, one endpoint per listener in ``listeners``' order: the
    advertised address of the listener (``advertised.listeners``, defaulting to the bound
    one), with ``hostname`` for a host that cannot be advertised (empty or ``0.0.0.0``, as
    Kafka advertises the canonical host name for an empty one) and the bound port for port 0.
    """
    given = {listener.name: listener for listener in advertised}
    out = []
    for listener in listeners:
        chosen = given.get(listener.name, listener)
        host = hostname if chosen.host in UNROUTABLE_HOSTS else chosen.host
        port = chosen.port or bound_ports[listener.name]
        out.append(EndPoint(listener.name, host, port, protocol_map[listener.name]))
    return tuple(out)
