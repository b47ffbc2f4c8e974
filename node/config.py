"""A node's configuration: Kafka's broker settings that odradek uses, in snake_case with units.

Sources, later ones winning: defaults, a Kafka-style ``.properties`` file (``--config``), the
environment (``ODRADEK_<NAME>``, e.g. ``ODRADEK_NODE_ID``), and command-line flags. Property
names are Kafka's where Kafka has one (``node.id``, ``log.dirs``, ``zookeeper.connect``,
``broker.rack``, ``replica.lag.time.max.ms``, ...). Default topic configs are given with a
``log.`` prefix on the topic config's name (``log.segment.bytes``, ``log.retention.ms``) or, for
``min.insync.replicas`` and ``unclean.leader.election.enable``, under their own names, as in
Kafka.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.zk_connection import ZK_CLIENT_PROPERTIES, ZkClientConfig
from node.coordinator.group_coordinator_config import (
    GROUP_COORDINATOR_PROPERTIES,
    GroupCoordinatorConfig,
)
from node.coordinator.group_coordinator_config import STRING_PROPERTIES as GROUP_STRING_PROPERTIES
from node.kafka_config import (
    BROKER_TOPIC_NAMES,
    IGNORED_KAFKA_CONFIGS,
    LISTENER_NAMES,
    load_properties,
    translate_kafka_names,
    unknown_config_message,
)
from node.listeners import (
    DEFAULT_PROTOCOL_MAP,
    Listener,
    parse_listeners,
    parse_protocol_map,
    validate_listeners,
)
from node.security.authorizer import AuthorizerConfig
from node.security.tls import SslConfig
from node.share_coordinator.share_coordinator_config import (
    SHARE_COORDINATOR_PROPERTIES,
    ShareCoordinatorConfig,
)
from node.transaction.txn_config import BOOLEAN_PROPERTIES as TXN_BOOLEAN_PROPERTIES
from node.transaction.txn_config import TRANSACTION_PROPERTIES, TransactionConfig
from odradek.errors import InvalidConfigError
from storage import LogConfig, LogManagerConfig
from storage.config import InvalidConfigValueError


@dataclass(frozen=True, slots=True)
class NodeConfig:
    """Everything one node needs to start. Validated on creation (``InvalidConfigError``)."""

    node_id: int
    """This node's id, unique in the cluster (``node.id``, also ``broker.id``)."""
    log_dirs: tuple[Path, ...]
    """Directories holding partition logs (``log.dirs``, comma-separated)."""
    zookeeper_connect: str
    """ZooKeeper connect string with an optional chroot (``zookeeper.connect``)."""
    host: str = "127.0.0.1"
    """Address to listen on and advertise (``listen.address`` host part)."""
    port: int = 9092
    """Port to listen on; 0 picks a free one (``listen.address`` port part)."""
    rack: str | None = None
    """Rack for rack-aware replica assignment (``broker.rack``)."""
    zookeeper_session_timeout_ms: int = 18_000
    """ZooKeeper session timeout: how long a dead node keeps its registration."""
    zookeeper: ZkClientConfig = field(default_factory=ZkClientConfig)
    """TLS to ZooKeeper and secure znode ACLs (``zookeeper.ssl.*``, ``zookeeper.set.acl``;
    controller/zk_connection.py, docs/security.md)."""
    broker_heartbeat_interval_ms: int = 100
    """How often this node heartbeats to the active controller (``broker.heartbeat.interval.ms``,
    KRaft's; Kafka's default is 2 s). See docs/operations.md, Failover."""
    broker_session_timeout_ms: int = 500
    """A node heard from no heartbeat for this long is fenced by the controller and its
    leaderships move (``broker.session.timeout.ms``, KRaft's; Kafka's default is 9 s); a node
    stops taking writes as leader before then. 0: off (liveness by the ZooKeeper session)."""
    replica_lag_time_max_ms: int = 30_000
    """A follower that has not caught up for this long leaves the ISR."""
    replica_fetch_wait_max_ms: int = 500
    """Longest a follower fetch waits at the leader for data."""
    replica_fetch_max_bytes: int = 1024 * 1024
    """Bytes a follower asks for per partition."""
    replica_fetch_response_max_bytes: int = 10 * 1024 * 1024
    """Bytes a follower asks for per request."""
    replica_fetch_backoff_ms: int = 200
    """Pause after a failed follower fetch."""
    request_timeout_ms: int = 30_000
    """Timeout of requests between nodes."""
    controlled_shutdown_enable: bool = True
    """Move leaderships away before stopping (``controlled.shutdown.enable``)."""
    controlled_shutdown_max_retries: int = 3
    controlled_shutdown_retry_backoff_ms: int = 1_000
    default_replication_factor: int = 1
    """Replicas of a topic created without a replication factor (its request gives -1)."""
    num_partitions: int = 1
    """Partitions of a topic created without a partition count."""
    request_handler_threads: int = 64
    """gRPC worker threads: long polls and acks=-1 waits each hold one."""
    log_cleaner_threads: int = 1
    """Cleaning passes that run at once (``log.cleaner.threads``); a dynamic broker config
    may change it (:attr:`node.dynamic_broker_config.DynamicBrokerConfig.cleaner_threads`)."""
    log: LogConfig = field(default_factory=LogConfig)
    """Default topic configs; a topic's overrides apply on top."""
    log_manager: LogManagerConfig = field(default_factory=LogManagerConfig)
    group_coordinator: GroupCoordinatorConfig = field(default_factory=GroupCoordinatorConfig)
    """The group coordinator's settings (``offsets.*``, ``group.consumer.*``)."""
    transaction: TransactionConfig = field(default_factory=TransactionConfig)
    """The transaction coordinator's settings (``transaction.*``,
    ``transaction.state.log.*``)."""
    share_coordinator: ShareCoordinatorConfig = field(default_factory=ShareCoordinatorConfig)
    """The share coordinator's settings (``share.coordinator.*``: ``__share_group_state``)."""
    metrics_port: int | None = None
    """Port of the Prometheus endpoint on the listen host (``metrics.port``); None: no
    endpoint, 0: any free port."""
    log_format: str = "text"
    """``text`` (one line per record) or ``json`` (one JSON object per line) (``log.format``)."""
    replica_fetch_silence_max_ms: int = 800
    """An ISR follower that sends no fetch for this long after its next one was due (at once
    after an answer with data, after ``replica.fetch.wait.max.ms`` after one without), or whose
    fetch sessions broke and did not come back within twice ``replica.fetch.backoff.ms``, leaves
    the ISR at once, not after ``replica.lag.time.max.ms`` (``replica.fetch.silence.max.ms``,
    odradek's; 0: both rules off, Kafka's behaviour). See docs/operations.md, Failover."""
    ignored_kafka_configs: tuple[str, ...] = ()
    """Kafka broker settings given that odradek has no use for; the node logs them once."""
    # -- listeners and security (node/listeners.py, docs/security.md) --------------------------
    listeners: tuple[Listener, ...] = ()
    """Named listeners to bind (``listeners``, ``NAME://host:port,...``); empty: one
    PLAINTEXT listener on ``host``:``port`` (``listen.address``)."""
    advertised_listeners: tuple[Listener, ...] = ()
    """What to register and tell clients, per listener (``advertised.listeners``); a listener
    not named here advertises its bound address (an empty or 0.0.0.0 host: the host name)."""
    listener_security_protocol_map: tuple[tuple[str, str], ...] = ()
    """``listener.security.protocol.map`` (``NAME:PROTOCOL,...``); empty: Kafka's default, each
    of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL names itself."""
    inter_broker_listener_name: str | None = None
    """The listener for replication and controller requests (``inter.broker.listener.name``);
    ``None``: the listener named PLAINTEXT, or the only listener."""
    ssl: SslConfig = field(default_factory=SslConfig)
    """TLS settings of SSL listeners (``ssl.*``, PEM; node/security/tls.py)."""
    listener_ssl: tuple[tuple[str, SslConfig], ...] = ()
    """Per-listener TLS settings (``listener.name.<name>.ssl.*`` over ``ssl.*``)."""
    authorizer: AuthorizerConfig = field(default_factory=AuthorizerConfig)
    """ACLs: ``authorizer.class.name``, ``super.users``, ``allow.everyone.if.no.acl.found``."""
    sasl_enabled_mechanisms: tuple[str, ...] = ("SCRAM-SHA-256", "SCRAM-SHA-512")
    """SASL mechanisms SASL_SSL listeners accept (``sasl.enabled.mechanisms``)."""
    # -- the Kafka door (node/kafka_door, docs/kafka-protocol.md) -------------------------------
    kafka_listener_names: tuple[str, ...] = ()
    """The listeners that speak Kafka's wire protocol (``kafka.listener.names``, odradek's);
    every other listener speaks gRPC. The inter-broker listener is always gRPC."""
    kafka_host: str | None = None
    """``kafka.listen.address``'s host: one PLAINTEXT Kafka listener named KAFKA beside the
    gRPC listener of ``listen.address`` (when ``listeners`` is not given)."""
    kafka_port: int = 0
    socket_request_max_bytes: int = 100 * 1024 * 1024
    """The largest Kafka request a Kafka listener reads (``socket.request.max.bytes``)."""
    connections_max_idle_ms: int = 10 * 60 * 1000
    """A Kafka connection idle this long is closed (``connections.max.idle.ms``)."""
    max_connections: int = 2**31 - 1
    """Kafka connections per node (``max.connections``)."""
    max_connections_per_ip: int = 2**31 - 1
    """Kafka connections per client address (``max.connections.per.ip``)."""
    max_connections_per_ip_overrides: tuple[tuple[str, int], ...] = ()
    """``max.connections.per.ip.overrides`` (``host:count,...``)."""
    auto_create_topics_enable: bool = True
    """A Kafka client's Metadata request for a missing topic creates it
    (``auto.create.topics.enable``, Kafka's default true); the gRPC door never creates one."""

    def __post_init__(self) -> None:
        if self.node_id < 0:
            raise InvalidConfigError(f"node.id must be 0 or more, not {self.node_id}")
        if not self.log_dirs:
            raise InvalidConfigError("log.dirs must name at least one directory")
        if not self.zookeeper_connect:
            raise InvalidConfigError("zookeeper.connect is required")
        if not 0 <= self.port <= 65535:
            raise InvalidConfigError(f"invalid port {self.port}")
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise InvalidConfigError(f"invalid metrics.port {self.metrics_port}")
        if self.broker_heartbeat_interval_ms <= 0:
            raise InvalidConfigError("broker.heartbeat.interval.ms must be positive")
        if self.broker_session_timeout_ms < 0 or 0 < self.broker_session_timeout_ms <= (
            2 * self.broker_heartbeat_interval_ms
        ):
            raise InvalidConfigError(
                "broker.session.timeout.ms must be 0 (off) or more than twice "
                "broker.heartbeat.interval.ms"
            )
        if self.replica_fetch_silence_max_ms < 0:
            raise InvalidConfigError("replica.fetch.silence.max.ms must be 0 (off) or more")
        if self.log_cleaner_threads < 1:
            raise InvalidConfigError("log.cleaner.threads must be at least 1")
        if self.log_format not in LOG_FORMATS:
            raise InvalidConfigError(
                f"invalid log.format {self.log_format!r}: must be {' or '.join(LOG_FORMATS)}"
            )
        for name in (
            "zookeeper_session_timeout_ms",
            "replica_lag_time_max_ms",
            "replica_fetch_wait_max_ms",
            "request_timeout_ms",
        ):
            if getattr(self, name) <= 0:
                raise InvalidConfigError(f"{name.replace('_', '.')} must be positive")
        validate_listeners(
            self.effective_listeners,
            self.advertised_listeners,
            self.protocol_map,
            self.inter_broker_listener_name,
            self.effective_kafka_listener_names,
        )
        for name in ("socket_request_max_bytes", "connections_max_idle_ms", "max_connections"):
            if getattr(self, name) <= 0:
                raise InvalidConfigError(f"{name.replace('_', '.')} must be positive")
        if self.max_connections_per_ip <= 0:
            raise InvalidConfigError("max.connections.per.ip must be positive")
        for listener in self.effective_listeners:
            protocol = self.protocol_map[listener.name]
            if protocol in ("PLAINTEXT", "SASL_PLAINTEXT"):
                continue
            if not self.ssl_for(listener.name).has_keystore:
                raise InvalidConfigError(
                    f"listener {listener.name} is {protocol} but has no keystore "
                    "(ssl.keystore.location)"
                )
        for mechanism in self.sasl_enabled_mechanisms:
            if mechanism not in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                raise InvalidConfigError(
                    f"sasl.enabled.mechanisms: {mechanism!r} is not supported "
                    "(SCRAM-SHA-256, SCRAM-SHA-512)"
                )

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def effective_listeners(self) -> tuple[Listener, ...]:
        """``listeners``, or the PLAINTEXT listener of ``listen.address`` (and the KAFKA one
        of ``kafka.listen.address``)."""
        if self.listeners:
            return self.listeners
        grpc = Listener("PLAINTEXT", self.host, self.port)
        if self.kafka_host is None:
            return (grpc,)
        return (grpc, Listener(KAFKA_LISTENER, self.kafka_host, self.kafka_port))

    @property
    def effective_kafka_listener_names(self) -> tuple[str, ...]:
        """The Kafka listeners' names: ``kafka.listener.names``, or KAFKA with
        ``kafka.listen.address``."""
        if self.kafka_listener_names or self.listeners or self.kafka_host is None:
            return self.kafka_listener_names
        return (KAFKA_LISTENER,)

    @property
    def protocol_map(self) -> dict[str, str]:
        """Listener name → security protocol."""
        given = dict(self.listener_security_protocol_map or DEFAULT_PROTOCOL_MAP.items())
        if not self.listeners and self.kafka_host is not None:
            given.setdefault(KAFKA_LISTENER, "PLAINTEXT")
        return given

    def ssl_for(self, listener_name: str) -> SslConfig:
        """The TLS settings of ``listener_name``."""
        return dict(self.listener_ssl).get(listener_name, self.ssl)

    @property
    def inter_broker_listener(self) -> str:
        """The inter-broker listener's name (validated on creation)."""
        return validate_listeners(
            self.effective_listeners,
            self.advertised_listeners,
            self.protocol_map,
            self.inter_broker_listener_name,
            self.effective_kafka_listener_names,
        )

    def topic_config(self, overrides: Mapping[str, str]) -> LogConfig:
        """The log config of a topic with ``overrides`` (Kafka names). ``InvalidConfigError``."""
        return LogConfig.from_kafka(overrides, base=self.log)


_SCALARS = {
    "node.id": "node_id",
    "broker.id": "node_id",
    "zookeeper.connect": "zookeeper_connect",
    "broker.rack": "rack",
    "zookeeper.session.timeout.ms": "zookeeper_session_timeout_ms",
    "broker.heartbeat.interval.ms": "broker_heartbeat_interval_ms",
    "broker.session.timeout.ms": "broker_session_timeout_ms",
    "replica.lag.time.max.ms": "replica_lag_time_max_ms",
    "replica.fetch.wait.max.ms": "replica_fetch_wait_max_ms",
    "replica.fetch.max.bytes": "replica_fetch_max_bytes",
    "replica.fetch.response.max.bytes": "replica_fetch_response_max_bytes",
    "replica.fetch.backoff.ms": "replica_fetch_backoff_ms",
    "request.timeout.ms": "request_timeout_ms",
    "controlled.shutdown.enable": "controlled_shutdown_enable",
    "controlled.shutdown.max.retries": "controlled_shutdown_max_retries",
    "controlled.shutdown.retry.backoff.ms": "controlled_shutdown_retry_backoff_ms",
    "default.replication.factor": "default_replication_factor",
    "num.partitions": "num_partitions",
    "num.request.handler.threads": "request_handler_threads",
    "log.cleaner.threads": "log_cleaner_threads",
    "metrics.port": "metrics_port",
    "log.format": "log_format",
    "replica.fetch.silence.max.ms": "replica_fetch_silence_max_ms",
    "socket.request.max.bytes": "socket_request_max_bytes",
    "connections.max.idle.ms": "connections_max_idle_ms",
    "max.connections": "max_connections",
    "max.connections.per.ip": "max_connections_per_ip",
    "auto.create.topics.enable": "auto_create_topics_enable",
}
KAFKA_LISTENER = "KAFKA"
"""The name of ``kafka.listen.address``'s listener."""
LOG_FORMATS = ("text", "json")
_LOG_MANAGER = {
    "log.retention.check.interval.ms": "retention_check_interval_ms",
    "log.flush.scheduler.interval.ms": "flush_scheduler_interval_ms",
    "log.flush.offset.checkpoint.interval.ms": "flush_offset_checkpoint_interval_ms",
    "log.flush.start.offset.checkpoint.interval.ms": "flush_start_offset_checkpoint_interval_ms",
    "replica.high.watermark.checkpoint.interval.ms": "high_watermark_checkpoint_interval_ms",
    "log.initial.task.delay.ms": "initial_task_delay_ms",
    "producer.id.expiration.check.interval.ms": "producer_id_expiration_check_interval_ms",
}
_AUTHORIZER = ("authorizer.class.name", "super.users", "allow.everyone.if.no.acl.found")
_UNPREFIXED_TOPIC_CONFIGS = (
    "min.insync.replicas",
    "unclean.leader.election.enable",
    "producer.id.expiration.ms",
)
ENV_PREFIX = "ODRADEK_"


def parse_properties(text: str) -> dict[str, str]:
    """Kafka's ``.properties`` format, a Java properties file (``node.kafka_config``)."""
    return load_properties(text)


def known_config_names() -> list[str]:
    """Every name a node's config accepts (for the nearest-name suggestion)."""
    topic = [
        "log." + f.name.replace("_", ".")
        for f in dataclasses.fields(LogConfig)
        if f.name not in ("min_insync_replicas", "unclean_leader_election_enable")
    ]
    return [
        *_SCALARS,
        *_LOG_MANAGER,
        *_UNPREFIXED_TOPIC_CONFIGS,
        *GROUP_COORDINATOR_PROPERTIES,
        *TRANSACTION_PROPERTIES,
        *SHARE_COORDINATOR_PROPERTIES,
        *topic,
        *BROKER_TOPIC_NAMES,
        *IGNORED_KAFKA_CONFIGS,
        *LISTENER_NAMES,
        *ZK_CLIENT_PROPERTIES,
        "log.dirs",
        "log.dir",
        "listen.address",
        "kafka.listen.address",
        "kafka.listener.names",
        "max.connections.per.ip.overrides",
        "log.retention.hours",
        "log.retention.minutes",
        "log.roll.hours",
        "log.roll.jitter.hours",
    ]


OTHER_TOOLS_VARIABLES = frozenset(
    {
        "ODRADEK_BOOTSTRAP_SERVERS",
        "ODRADEK_IMAGE_TAG",
        "ODRADEK_COMPOSE_HOST",
        "ODRADEK_COMPOSE_CERTS",
    }
)
"""Variables with the node's prefix that other tools read (the command line's bootstrap
servers; the image tag, the compose file's address and its TLS file's certificates in
deploy/): a node ignores them, so a
shell that exported one for its tool still starts nodes. Any other ``ODRADEK_*`` name must be a
node setting, so that a misspelt one fails instead of being ignored."""


def properties_from_env(environ: Mapping[str, str]) -> dict[str, str]:
    """``ODRADEK_NODE_ID=1`` → ``{"node.id": "1"}``: the environment's share of the config
    (without :data:`OTHER_TOOLS_VARIABLES`)."""
    return {
        key[len(ENV_PREFIX) :].lower().replace("_", "."): value
        for key, value in environ.items()
        if key.startswith(ENV_PREFIX) and key not in OTHER_TOOLS_VARIABLES
    }


def config_from_properties(props: Mapping[str, str]) -> NodeConfig:
    """Builds a ``NodeConfig``; unknown names and bad values raise ``InvalidConfigError``."""
    values: dict[str, Any] = {}
    topic_defaults: dict[str, str] = {}
    spelled: dict[str, str] = {}  # a topic config's name -> the node config it came from
    manager: dict[str, int] = {}
    ssl_props: dict[str, str] = {}
    authorizer: dict[str, str] = {}
    listener_ssl_props: dict[str, dict[str, str]] = {}
    groups: dict[str, Any] = {}
    transactions: dict[str, Any] = {}
    share_coordinator: dict[str, int] = {}
    zk_client: dict[str, str] = {}
    types = {f.name: f.type for f in dataclasses.fields(NodeConfig)}
    props, renamed = translate_kafka_names(props)
    ignored: list[str] = []
    log_fields = {f.name for f in dataclasses.fields(LogConfig)}
    for key, raw in props.items():
        try:
            if key in _SCALARS:
                name = _SCALARS[key]
                kind = types[name]
                if kind in ("int", int, "int | None"):
                    values[name] = int(raw)
                elif kind in ("bool", bool):
                    if raw.lower() not in ("true", "false"):
                        raise ValueError(raw)
                    values[name] = raw.lower() == "true"
                elif name == "log_format":
                    values[name] = raw.strip().lower()
                else:
                    values[name] = raw or None if name == "rack" else raw
            elif key in _LOG_MANAGER:
                manager[_LOG_MANAGER[key]] = int(raw)
            elif key == "log.dirs" or key == "log.dir":
                values["log_dirs"] = tuple(Path(p) for p in raw.split(",") if p.strip())
            elif key == "listen.address":
                address = raw.split("://", 1)[-1]
                host, _, port = address.rpartition(":")
                values["host"], values["port"] = host or "127.0.0.1", int(port)
            elif key == "kafka.listen.address":
                address = raw.split("://", 1)[-1]
                host, _, port = address.rpartition(":")
                values["kafka_host"], values["kafka_port"] = host or "127.0.0.1", int(port)
            elif key == "kafka.listener.names":
                values["kafka_listener_names"] = tuple(
                    n.strip().upper() for n in raw.split(",") if n.strip()
                )
            elif key == "max.connections.per.ip.overrides":
                values["max_connections_per_ip_overrides"] = _per_ip_overrides(raw)
            elif key == "listeners":
                values["listeners"] = parse_listeners(raw, key)
                if not values["listeners"]:
                    raise InvalidConfigError("listeners: no listener given")
                first = values["listeners"][0]
                values["host"], values["port"] = first.host or "0.0.0.0", first.port
            elif key == "advertised.listeners":
                values["advertised_listeners"] = parse_listeners(raw, key)
            elif key == "listener.security.protocol.map":
                values["listener_security_protocol_map"] = parse_protocol_map(raw)
            elif key == "inter.broker.listener.name":
                values["inter_broker_listener_name"] = raw.strip().upper() or None
            elif key == "sasl.enabled.mechanisms":
                values["sasl_enabled_mechanisms"] = tuple(
                    m.strip().upper() for m in raw.split(",") if m.strip()
                )
            elif key.lower() in ZK_CLIENT_PROPERTIES:
                zk_client[key] = raw
            elif key in _AUTHORIZER:
                authorizer[key] = raw.strip()
            elif key.startswith("ssl."):
                ssl_props[key] = raw
            elif key.startswith("listener.name.") and ".ssl." in key:
                name, _, setting = key[len("listener.name.") :].partition(".")
                listener_ssl_props.setdefault(name.upper(), {})[setting] = raw
            elif key in GROUP_COORDINATOR_PROPERTIES:
                groups[GROUP_COORDINATOR_PROPERTIES[key]] = (
                    raw.strip() if key in GROUP_STRING_PROPERTIES else int(raw)
                )
            elif key in TRANSACTION_PROPERTIES:
                if key in TXN_BOOLEAN_PROPERTIES:
                    if raw.strip().lower() not in ("true", "false"):
                        raise ValueError(raw)
                    transactions[TRANSACTION_PROPERTIES[key]] = raw.strip().lower() == "true"
                else:
                    transactions[TRANSACTION_PROPERTIES[key]] = int(raw)
            elif key in SHARE_COORDINATOR_PROPERTIES:
                share_coordinator[SHARE_COORDINATOR_PROPERTIES[key]] = int(raw)
            elif key in _UNPREFIXED_TOPIC_CONFIGS:
                topic_defaults[key] = raw
            elif key.startswith("log.") and key[len("log.") :].replace(".", "_") in log_fields:
                topic_defaults[key[len("log.") :]] = raw
                spelled[key[len("log.") :]] = renamed.get(key, key)
            elif key in IGNORED_KAFKA_CONFIGS:
                ignored.append(key)
            else:
                raise InvalidConfigError(unknown_config_message(key, known_config_names()))
        except ValueError:
            written = renamed.get(key, key)
            raise InvalidConfigError(f"invalid value {raw!r} for {written!r}") from None
    for required in ("node_id", "log_dirs", "zookeeper_connect"):
        if required not in values:
            name = {"node_id": "node.id", "log_dirs": "log.dirs"}.get(required, "zookeeper.connect")
            raise InvalidConfigError(f"{name} is required")
    if topic_defaults:
        values["log"] = LogConfig.from_kafka(topic_defaults, spelled=spelled, kind="node config")
    if authorizer:
        everyone = authorizer.get("allow.everyone.if.no.acl.found", "false").lower()
        if everyone not in ("true", "false"):
            raise InvalidConfigError(
                f"invalid value {everyone!r} for 'allow.everyone.if.no.acl.found'"
            )
        values["authorizer"] = AuthorizerConfig(
            authorizer_class_name=authorizer.get("authorizer.class.name", ""),
            super_users=AuthorizerConfig.parse_super_users(authorizer.get("super.users", "")),
            allow_everyone_if_no_acl_found=everyone == "true",
        )
    if ssl_props or listener_ssl_props:
        values["ssl"] = SslConfig.from_properties(ssl_props)
        values["listener_ssl"] = tuple(
            (name, SslConfig.from_properties(overrides, base=values["ssl"]))
            for name, overrides in sorted(listener_ssl_props.items())
        )
    if zk_client:
        values["zookeeper"] = ZkClientConfig.from_properties(zk_client)
    if groups:
        values["group_coordinator"] = GroupCoordinatorConfig(**groups)
    if share_coordinator:
        values["share_coordinator"] = ShareCoordinatorConfig(**share_coordinator)
    if transactions or "request.timeout.ms" in props:
        transactions.setdefault("request_timeout_ms", values.get("request_timeout_ms", 30_000))
        values["transaction"] = TransactionConfig(**transactions)
    if manager:
        try:
            values["log_manager"] = LogManagerConfig(**manager)
        except InvalidConfigValueError as e:
            key = next(k for k, name in _LOG_MANAGER.items() if name == e.config and k in props)
            raise InvalidConfigError(
                f"invalid value {props[key]!r} for node config {key!r}: {e.requirement}"
            ) from None
    values["ignored_kafka_configs"] = tuple(sorted(ignored))
    return NodeConfig(**values)


def _per_ip_overrides(text: str) -> tuple[tuple[str, int], ...]:
    """``host:count,...`` (``max.connections.per.ip.overrides``); ``ValueError`` if malformed."""
    out = []
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        if not sep or not host or int(count) < 0:
            raise ValueError(item)
        out.append((host.strip("[]"), int(count)))
    return tuple(out)
