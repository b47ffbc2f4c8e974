"""The node process: storage, the gRPC server, ZooKeeper registration and a controller candidate.

Start order: open the logs (recovering them), start the gRPC server, register in ZooKeeper
(``/brokers/ids/<id>``, whose creation version is the broker epoch), then campaign for the
controller and start heartbeating to the active one (:mod:`node.broker_lifecycle`: a node that
misses its heartbeats is fenced, and stops taking writes as leader before it can be). From then
on the active controller tells the node what to host. A clean stop is a
controlled shutdown: the node asks the controller to move its leaderships away (repeating
while any remain), stops serving, flushes and checkpoints every log and writes the
clean-shutdown marker, and only then leaves ZooKeeper.

The Kafka listeners stop in Kafka's order: after the controlled shutdown they accept no
connection and read no request (``KafkaDoor.begin_shutdown``, Kafka's
``stopProcessingRequests``); the controller, the group coordinator and the replica manager
stop (which answers the produces and fetches still waiting); then the door writes every answer
it owes and closes its connections (``KafkaDoor.stop``), before the logs are closed.
"""

from __future__ import annotations

import functools
import logging
import socket
import threading
from collections.abc import Callable, Mapping
from concurrent import futures
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2
from kazoo.client import KazooClient

from controller.controller import Controller, ControllerConfig
from controller.registration import BrokerRegistration
from controller.service import ControllerServicer
from controller.zk_connection import ensure_chroot, new_zk_client
from node.admin.admin_manager import AdminManager
from node.admin.authorization import AuthorizedAdmin
from node.admin.dynamic_config_admin import DynamicConfigAdmin
from node.admin.requests import ConfigType, NewTopicSpec
from node.apis import (
    BrokerApis,
    GroupApis,
    RecordApis,
    ShareAdminApis,
    ShareFetchApis,
    ShareGroupApis,
    ShareStateApis,
    TransactionApis,
)
from node.apis.txn_abort import TxnAbortApi
from node.apis.txn_verification import TxnVerification
from node.broker_lifecycle import BrokerLifecycleManager
from node.config import NodeConfig, known_config_names
from node.coordinator.group_config_manager import GroupConfigManager
from node.coordinator.group_coordinator import GroupCoordinator
from node.coordinator.producer_id_manager import ProducerIdManager
from node.core.metadata_cache import MetadataCache
from node.core.replica_manager import ReplicaManager
from node.dynamic_broker_config import DynamicBrokerConfig
from node.dynamic_config_manager import DynamicConfigManager
from node.grpc_door.admin_service import AdminServicer
from node.grpc_door.authorizing_services import (
    AuthorizingControllerServicer,
    AuthorizingReplicationServicer,
)
from node.grpc_door.metrics_interceptor import RequestMetricsInterceptor
from node.grpc_door.sasl_service import SaslServicer
from node.grpc_door.service import ReplicationServicer
from node.grpc_door.tls_credentials import (
    CertificateReloader,
    channel_credentials,
)
from node.grpc_listeners import (
    GRPC_OPTIONS,
    SERVICE_NAMES,
    GrpcListeners,
    GrpcServices,
    grpc_listeners,
)
from node.kafka_door.handlers.sasl import SaslHandlers
from node.kafka_door.server import KafkaDoor
from node.kafka_door.services import DoorServices
from node.kafka_listeners import kafka_door, kafka_listener_specs
from node.listeners import advertised_endpoints
from node.metrics.endpoint import MetricsEndpoint
from node.replication.alter_partition import AlterPartitionManager
from node.replication.fetcher import ReplicaFetcherManager
from node.replication.share_state_channel import ShareStateChannel
from node.replication.txn_marker_channel import TxnMarkerChannel
from node.replication.txn_verifier import TxnVerifier
from node.security.auth_helper import AuthHelper
from node.security.authorizer import AclAuthorizer
from node.security.sasl import SaslSessions
from node.security.scram_store import ScramCredentialStore
from node.security.tls_terminator import TlsTerminator
from node.share.manager import ShareConfig, SharePartitionManager
from node.share_coordinator.share_coordinator import ShareCoordinator
from node.transaction.txn_coordinator import TransactionCoordinator
from node.transaction.txn_marker_sender import TxnMarkerSender
from odradek.client.connection import RECONNECT_OPTIONS
from odradek.clock import Clock, SystemClock
from odradek.errors import TopicAlreadyExistsError
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from storage import LogManager

log = logging.getLogger(__name__)

# A restarted node must be reachable again at once (see RECONNECT_OPTIONS).
CHANNEL_OPTIONS = [*GRPC_OPTIONS, *RECONNECT_OPTIONS]
TICK_MS = 100


def new_channel(target: str, credentials: grpc.ChannelCredentials | None = None) -> grpc.Channel:
    """A channel to another node: TLS with ``credentials`` (the inter-broker listener is SSL),
    else plaintext."""
    if credentials is None:
        return grpc.insecure_channel(target, options=CHANNEL_OPTIONS)
    return grpc.secure_channel(target, credentials, options=CHANNEL_OPTIONS)


def inter_broker_channel_factory(config: NodeConfig) -> Callable[[str], grpc.Channel]:
    """How this node connects to the others' inter-broker listener: over TLS, with its own
    keystore as client certificate, when that listener is SSL. The certificates are read
    here, once; raises ``InvalidConfigError`` for bad ones."""
    listener = config.inter_broker_listener
    if config.protocol_map[listener] == "PLAINTEXT":
        return new_channel
    credentials = channel_credentials(config.ssl_for(listener), listener)
    return functools.partial(new_channel, credentials=credentials)


class Channels:
    """One gRPC channel per ``host:port``, shared by every sender in the node. Thread-safe."""

    def __init__(self, factory: Callable[[str], grpc.Channel] = new_channel) -> None:
        self._lock = threading.Lock()
        self._factory = factory
        self._channels: dict[str, grpc.Channel] = {}

    def __call__(self, target: str) -> grpc.Channel:
        with self._lock:
            channel = self._channels.get(target)
            if channel is None:
                channel = self._factory(target)
                self._channels[target] = channel
            return channel

    def close(self) -> None:
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            channel.close()


def _topic_creator(
    admin: Callable[[], AdminManager],
) -> Callable[[str, int, int, Mapping[str, str]], None]:
    """Creates an internal topic through the node's admin manager (in-process, as Kafka's
    ``AutoTopicCreationManager`` does in ZooKeeper mode): an existing topic is fine."""

    def create(name: str, partitions: int, replication: int, configs: Mapping[str, str]) -> None:
        topic = NewTopicSpec(
            name=name,
            num_partitions=partitions,
            replication_factor=replication,
            configs=dict(configs),
        )
        try:
            (result,) = admin().create_topics([topic])
        except Exception:
            log.exception("creating %s failed", name)
            return
        if result.error_code not in (0, TopicAlreadyExistsError.code):
            log.warning("creating %s failed: %s", name, result.error_message)
        elif result.error_code == 0:
            log.info("created %s (%d partitions, replication %d)", name, partitions, replication)

    return create


class Node:
    """One broker node. ``start()`` then ``stop()``; not restartable."""

    def __init__(self, config: NodeConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.clock = clock or SystemClock()
        self.port = config.port
        """The bound port of the first listener."""
        self.ports: dict[str, int] = {}
        """Bound port per listener name."""
        self.broker_epoch = -1
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()
        self._stopping = False
        self.channels = Channels()
        self.metadata = MetadataCache(self.clock)
        self.log_manager: LogManager | None = None
        self.replicas: ReplicaManager | None = None
        self.fetchers: ReplicaFetcherManager | None = None
        self.alter_partitions: AlterPartitionManager | None = None
        self.zk: KazooClient | None = None
        self.registration: BrokerRegistration | None = None
        self.controller: Controller | None = None
        self.lifecycle: BrokerLifecycleManager | None = None
        """The heartbeats to the controller and the leadership lease."""
        self._servers: list[grpc.Server] = []
        self._terminators: list[TlsTerminator] = []
        """TLS of the listeners with ssl.client.auth=requested."""
        self.certificates: dict[str, CertificateReloader] = {}
        self.authorizer: AclAuthorizer | None = None
        self.sasl_sessions: SaslSessions | None = None
        """The certificate reloader of each SSL listener."""
        self.groups: GroupCoordinator | None = None
        self.transactions: TransactionCoordinator | None = None
        """The transaction coordinator (``__transaction_state``)."""
        self.txn_markers: TxnMarkerSender | None = None
        self.share_partitions: SharePartitionManager | None = None
        """Share groups' share partitions on this node (KIP-932, :mod:`node.share`)."""
        self.share_coordinator: ShareCoordinator | None = None
        """The share coordinator (``__share_group_state``), served to the other nodes."""
        self.share_state: ShareStateChannel | None = None
        """The share groups' durable state as this node's share partitions reach it (the
        :class:`~node.share.persister.ShareStatePersister`)."""
        self.kafka_door: KafkaDoor | None = None
        """The Kafka listeners (``kafka.listener.names``), when there are any."""
        self.dynamic_config = DynamicBrokerConfig(config)
        """The node's config with the dynamic broker configs over it (KIP-226)."""
        self.group_configs = GroupConfigManager(config.group_coordinator)
        """Every group's configs (``/config/groups/<g>``)."""
        self.dynamic_config_manager: DynamicConfigManager | None = None
        """Keeps the two above current from ZooKeeper."""
        self.admin: AdminManager | None = None
        """The admin room (topics, configs, ACLs, credentials, elections), for either door."""
        self.authorized_admin: AuthorizedAdmin | None = None
        """The admin room behind the ACL checks."""
        self._health = health.HealthServicer()
        self.apis: BrokerApis | None = None
        """The client APIs' policy layer, behind both doors (:mod:`node.apis`)."""
        self._ticker: threading.Thread | None = None
        self.metrics: MetricsEndpoint | None = None
        """The Prometheus endpoint (``metrics.port``), when configured."""

    def _apply_dynamic_log_defaults(self) -> None:
        """The topic defaults changed (a dynamic broker config): new logs and every hosted log
        without an override of its own take them at once."""
        if self.log_manager is not None:
            self.log_manager.default_config = self.dynamic_config.log
        if self.replicas is not None:
            self.replicas.refresh_log_configs()

    def _apply_dynamic_cleaner_threads(self) -> None:
        """``log.cleaner.threads`` may have changed (a dynamic broker config): the next
        cleaning passes run with the new count (Kafka's ``LogCleaner.reconfigure``)."""
        if self.log_manager is not None:
            self.log_manager.set_cleaner_threads(self.dynamic_config.cleaner_threads)

    def _epoch(self) -> int:
        return self.broker_epoch

    def _on_epoch_change(self, epoch: int) -> None:
        log.info("node %d re-registered with broker epoch %d", self.config.node_id, epoch)
        self.broker_epoch = epoch

    def start(self) -> None:
        """Open the logs, serve, register and campaign. Raises on any failure (the caller
        exits with the message); ``stop()`` releases what was started."""
        c = self.config
        channel_factory = inter_broker_channel_factory(c)
        self.channels = Channels(channel_factory)
        self.log_manager = LogManager(
            list(c.log_dirs),
            c.log,
            self.clock,
            c.log_manager,
            cleaner_threads=self.dynamic_config.cleaner_threads,
        )
        self.replicas = ReplicaManager(
            self.dynamic_config, self.log_manager, self.metadata, self.clock, self._epoch
        )
        self.dynamic_config.listeners.append(self._apply_dynamic_log_defaults)
        self.dynamic_config.listeners.append(self._apply_dynamic_cleaner_threads)
        self.fetchers = ReplicaFetcherManager(c, self.clock, self.channels, self._epoch)
        self.replicas.fetchers = self.fetchers
        self.alter_partitions = AlterPartitionManager(
            node_id=c.node_id,
            metadata=self.metadata,
            partition_for=self.replicas.partition,
            channel_for=self.channels,
            broker_epoch=self._epoch,
            request_timeout_ms=c.request_timeout_ms,
        )
        self.replicas.alter_partitions = self.alter_partitions

        session_s = c.zookeeper_session_timeout_ms / 1000
        ensure_chroot(c.zookeeper_connect, session_s, c.zookeeper)
        self.zk = new_zk_client(c.zookeeper_connect, session_s, c.zookeeper)
        self.zk.start(timeout=max(session_s, 10))
        # the dynamic configs before anything hosts a log or a group: the first reads apply now
        self.dynamic_config_manager = DynamicConfigManager(
            self.zk, c.node_id, self.dynamic_config, self.group_configs
        )
        self.dynamic_config_manager.start()
        self.controller = Controller(
            self.zk,
            c.node_id,
            self.clock,
            ControllerConfig(
                request_timeout_ms=c.request_timeout_ms,
                inter_broker_listener_name=c.inter_broker_listener,
                broker_session_timeout_ms=c.broker_session_timeout_ms,
                broker_heartbeat_interval_ms=c.broker_heartbeat_interval_ms,
            ),
            # the controller owns (and closes) its channels: not the node's shared pool
            channel_factory=channel_factory,
        )

        executor = futures.ThreadPoolExecutor(
            max_workers=c.request_handler_threads, thread_name_prefix="request"
        )
        metrics_interceptors: list[grpc.ServerInterceptor[Any, Any]] = []
        if c.metrics_port is not None:
            self.metrics = MetricsEndpoint(self)
            self.zk.add_listener(self.metrics.collector.on_zookeeper_state)
            metrics_interceptors.append(
                RequestMetricsInterceptor(self.metrics.requests, self.clock)
            )
        producer_ids = ProducerIdManager(self.zk, c.node_id)
        if c.authorizer.enabled:
            self.authorizer = AclAuthorizer(self.zk, c.authorizer, self.clock)
            self.authorizer.start()
        authorizer = self.authorizer
        auth = None if authorizer is None else AuthHelper(authorizer)
        scram_store = ScramCredentialStore(self.zk)
        self.sasl_sessions = SaslSessions(
            self.clock, scram_store.credential, c.sasl_enabled_mechanisms
        )
        sasl = SaslServicer(self.sasl_sessions)
        self.admin = AdminManager(
            self.zk,
            self.clock,
            node_id=c.node_id,
            default_num_partitions=c.num_partitions,
            default_replication_factor=c.default_replication_factor,
            log_defaults=c.log,
            acls=authorizer,
            credentials=scram_store,
            metadata=self.metadata,
            logs=self.log_manager,
            dynamic_configs=DynamicConfigAdmin(
                self.zk,
                node_id=c.node_id,
                log_defaults=c.log,
                static_other={
                    "num.partitions": (str(c.num_partitions), ConfigType.INT),
                    "default.replication.factor": (
                        str(c.default_replication_factor),
                        ConfigType.INT,
                    ),
                },
                static_names=known_config_names(),
                group_defaults=c.group_coordinator,
                static_cleaner=(
                    {"log.cleaner.threads": str(c.log_cleaner_threads)}
                    if c.log_cleaner_threads != 1
                    else {}
                ),
            ),
        )
        plain_admin = self.admin
        self.authorized_admin = AuthorizedAdmin(self.admin, authorizer)
        # The group coordinator creates __consumer_offsets itself (in-process, no ACL check).
        self.groups = GroupCoordinator(
            c.group_coordinator,
            self.replicas,
            self.metadata,
            self.clock,
            _topic_creator(lambda: plain_admin),
            group_configs=self.group_configs.group_config,
        )
        self.replicas.leadership_listeners.append(self.groups.on_leadership_change)
        txn_metrics = None if self.metrics is None else self.metrics.transactions
        self.txn_markers = TxnMarkerSender(
            self.metadata,
            TxnMarkerChannel(
                self.replicas,
                self.metadata,
                self.channels,
                timeout_ms=c.request_timeout_ms,
                on_written=self.groups.on_txn_marker,
            ),
            self.clock,
            on_latency=None if txn_metrics is None else txn_metrics.observe_marker_latency,
        )
        self.transactions = TransactionCoordinator(
            c.transaction,
            self.replicas,
            self.metadata,
            self.clock,
            _topic_creator(lambda: plain_admin),
            producer_ids,
            self.txn_markers,
            txn_metrics,
        )
        if txn_metrics is not None:
            txn_metrics.watch(
                self.transactions.open_transactions,
                self.txn_markers.pending,
                self.clock.monotonic_ms,
            )
        self.replicas.leadership_listeners.append(self.transactions.on_leadership_change)
        share_metrics = None if self.metrics is None else self.metrics.share_coordinator
        self.share_coordinator = ShareCoordinator(
            c.share_coordinator,
            self.replicas,
            self.metadata,
            self.clock,
            _topic_creator(lambda: plain_admin),
            share_metrics,
        )
        if share_metrics is not None:
            share_metrics.watch(self.share_coordinator.partition_counts, self.clock.monotonic_ms)
        self.replicas.leadership_listeners.append(self.share_coordinator.on_leadership_change)
        self.share_state = ShareStateChannel(
            c.node_id,
            self.share_coordinator,
            self.metadata,
            self.channels,
            self.clock,
            timeout_ms=c.request_timeout_ms,
            deadline_ms=c.request_timeout_ms,
        )
        # a marker written on a __consumer_offsets partition this node leads ends the
        # transaction's pending offsets there (whoever sent it: this node or another's
        # transaction coordinator)
        replicating = ReplicationServicer(
            self.replicas,
            on_marker_written=self.groups.on_txn_marker,
            verify_txn_partitions=self.transactions.verify_partitions,
            share_coordinator=self.share_coordinator,
        )
        replication: pb_grpc.ReplicationServicer = replicating
        admin = AdminServicer(
            self.authorized_admin,
            TxnAbortApi(self.replicas, auth, on_written=self.groups.on_txn_marker),
        )
        controller: pb_grpc.ControllerServicer = ControllerServicer(self.controller)
        if authorizer is not None:
            replication = AuthorizingReplicationServicer(replicating, authorizer)
            controller = AuthorizingControllerServicer(
                ControllerServicer(self.controller), authorizer
            )
        # share groups' partition-leader side: the share partitions of the partitions this
        # node leads, their durable state through the share coordinators (__share_group_state)
        self.share_partitions = SharePartitionManager(
            self.replicas,
            self.share_state,
            self.clock,
            self.group_configs.group_config,
            ShareConfig(
                delivery_count_limit=c.group_coordinator.group_share_delivery_count_limit,
                partition_max_record_locks=c.group_coordinator.group_share_partition_max_record_locks,
                max_share_sessions=c.group_coordinator.group_share_max_share_sessions,
            ),
        )
        self.replicas.leadership_listeners.append(self.share_partitions.on_leadership_change)
        transaction_apis = TransactionApis(
            self.transactions,
            self.metadata,
            auth,
            c.group_coordinator.offsets_topic_num_partitions,
        )
        self.apis = BrokerApis(
            RecordApis(
                self.replicas,
                self.metadata,
                auth,
                producer_ids,
                self.authorized_admin,
                auto_create_topics=c.auto_create_topics_enable,
                metrics=None if self.metrics is None else self.metrics.requests,
                transactions=transaction_apis,
                verification=TxnVerification(
                    self.replicas,
                    TxnVerifier(
                        c.node_id,
                        self.transactions,
                        self.metadata,
                        self.channels,
                        timeout_ms=c.request_timeout_ms,
                    ),
                )
                if c.transaction.transaction_partition_verification_enable
                else None,
            ),
            GroupApis(self.groups, self.metadata, auth),
            self.authorized_admin,
            transaction_apis,
            share=ShareFetchApis(self.share_partitions, self.metadata, auth),
            share_groups=ShareGroupApis(self.groups, auth),
            share_state=ShareStateApis(self.share_coordinator, auth),
            share_admin=ShareAdminApis(self.groups, self.share_partitions, auth),
        )
        grpc_services = GrpcServices(
            self.apis,
            admin,
            sasl,
            replication,
            controller,
            self._health,
            self.sasl_sessions,
        )
        # the lists are the node's own, so that stop() releases what was bound before a failure
        grpc_listeners(
            c,
            grpc_services,
            executor,
            metrics_interceptors,
            into=GrpcListeners(self._servers, self._terminators, self.certificates, self.ports),
        )
        inter_broker = c.inter_broker_listener
        kafka_names = c.effective_kafka_listener_names
        if kafka_names:
            services = DoorServices(
                node_id=c.node_id,
                replicas=self.replicas,
                metadata=self.metadata,
                auth=auth,
                producer_ids=producer_ids,
                groups=self.groups,
                admin=self.authorized_admin,
                auto_create_topics=c.auto_create_topics_enable,
                metrics=None if self.metrics is None else self.metrics.requests,
                apis=self.apis,
            )
            sasl_handlers = SaslHandlers(scram_store.credential, c.sasl_enabled_mechanisms)
            self.kafka_door = kafka_door(c, services, sasl_handlers, executor)
            self.ports.update(self.kafka_door.bind(kafka_listener_specs(c)))
        self.port = self.ports[c.effective_listeners[0].name]
        if self.metrics is not None and c.metrics_port is not None:
            # on the host of the first listener, as the gRPC port
            self.metrics.start(c.effective_listeners[0].host or "0.0.0.0", c.metrics_port)
        endpoints = advertised_endpoints(
            c.effective_listeners,
            c.advertised_listeners,
            c.protocol_map,
            self.ports,
            socket.getfqdn(),
        )
        advertised = next(e for e in endpoints if e.listener_name == inter_broker)

        # Register before serving, as Kafka enables request processing only after
        # registerBroker: the controller sees the znode and sends LeaderAndIsr at once, and a
        # request handled before this node knows its epoch would be checked against none. Until
        # start() the port is bound but answers nothing; the controller retries (its channel
        # retries UNAVAILABLE), and so do clients.
        self.registration = BrokerRegistration(
            self.zk,
            c.node_id,
            advertised.host,
            advertised.port,
            c.rack,
            on_epoch_change=self._on_epoch_change,
            endpoints=endpoints,
        )
        # a previous process of this node that did not stop cleanly holds the id until its
        # session times out: wait that out (twice the timeout: ZooKeeper expires sessions on
        # its ticks), and fail only if the id is still taken, by another live node
        self.broker_epoch = self.registration.register(wait_ms=2 * c.zookeeper_session_timeout_ms)
        for server in self._servers:
            server.start()
        for terminator in self._terminators:
            terminator.start()
        if self.kafka_door is not None:
            self.kafka_door.serve()
        if self.groups is not None:
            self.groups.start()
        if self.txn_markers is not None:
            self.txn_markers.start()
        self.controller.startup()
        self.lifecycle = BrokerLifecycleManager(
            node_id=c.node_id,
            broker_epoch=self._epoch,
            metadata=self.metadata,
            channel_for=self.channels,
            clock=self.clock,
            heartbeat_interval_ms=c.broker_heartbeat_interval_ms,
            session_timeout_ms=c.broker_session_timeout_ms,
            on_controller_unreachable=self.controller.active_controller_unreachable,
        )
        self.replicas.may_lead = self.lifecycle.may_lead
        if c.broker_session_timeout_ms > 0:  # 0: no heartbeats, liveness by ZooKeeper alone
            self.lifecycle.start()
        self._ticker = threading.Thread(target=self._tick_loop, name="node-ticker", daemon=True)
        self._ticker.start()
        for name in ("", *SERVICE_NAMES):
            self._health.set(name, health_pb2.HealthCheckResponse.SERVING)
        log.info(
            "node %d serving on %s (broker epoch %d)",
            c.node_id,
            ", ".join(f"{e.connection_string} ({e.security_protocol})" for e in endpoints),
            self.broker_epoch,
        )

    def _tick_loop(self) -> None:
        assert self.log_manager is not None and self.replicas is not None
        c = self.config
        isr_interval = max(TICK_MS, c.replica_lag_time_max_ms // 2)
        sessions = self.replicas.follower_sessions
        grace = self.replicas.session_lost_grace_ms
        silence = c.replica_fetch_silence_max_ms
        last_isr_check = last_tick = self.clock.monotonic_ms()
        while not self._stopped.wait(TICK_MS / 1000):
            try:
                self.log_manager.tick()
                if self.transactions is not None:
                    self.transactions.tick()
                now = self.clock.monotonic_ms()
                if silence > 0 and now - last_tick > silence // 2:
                    # this node itself stood still (paused, starved): it cannot tell silent
                    # followers from its own stall until it has read what they sent meanwhile
                    log.info(
                        "node stalled for %d ms; followers' silence counts from now",
                        now - last_tick,
                    )
                    sessions.resumed()
                last_tick = now
                # Every half lag limit, as Kafka; and at once when a follower may have become
                # gone: its lost sessions' grace ended, or its fetches' silence reached the
                # limit (the partitions' rules decide; these cheap checks only say when to ask,
                # so that thousands of partitions are not scanned every tick).
                if (
                    now >= last_isr_check + isr_interval
                    or (grace > 0 and sessions.grace_ends_between(last_isr_check, now, grace))
                    or (
                        silence > 0
                        and sessions.silence_ends_between(
                            last_isr_check, now, silence, c.replica_fetch_wait_max_ms
                        )
                    )
                ):
                    last_isr_check = now
                    self.replicas.maybe_shrink_isrs()
            except Exception:
                if self._stopping:
                    return
                log.exception("periodic task failed")

    def controlled_shutdown(self) -> bool:
        """Ask the controller to move this node's leaderships away; True when none remain."""
        c = self.config
        for attempt in range(c.controlled_shutdown_max_retries + 1):
            controller = self.metadata.controller()
            if controller is not None:
                stub = pb_grpc.ControllerStub(self.channels(f"{controller.host}:{controller.port}"))
                try:
                    response = stub.ControlledShutdown(
                        pb.ControlledShutdownRequest(
                            broker_id=c.node_id, broker_epoch=self.broker_epoch
                        ),
                        timeout=c.request_timeout_ms / 1000,
                    )
                    if response.error_code == 0 and not response.remaining_partitions:
                        log.info("controlled shutdown of node %d complete", c.node_id)
                        return True
                    log.info(
                        "controlled shutdown attempt %d: error %d, %d partitions remain",
                        attempt + 1,
                        response.error_code,
                        len(response.remaining_partitions),
                    )
                except grpc.RpcError as e:
                    log.info("controlled shutdown attempt %d failed: %s", attempt + 1, e)
            self._stopped.wait(c.controlled_shutdown_retry_backoff_ms / 1000)
        return False

    def stop(self, *, controlled: bool | None = None) -> None:
        """Stop the node, by default with a controlled shutdown. Safe to call twice."""
        with self._stop_lock:
            if self._stopping:
                return
            self._stopping = True
        if controlled is None:
            controlled = self.config.controlled_shutdown_enable
        for name in ("", *SERVICE_NAMES):
            self._health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        if controlled and self._servers and self.registration is not None:
            self.controlled_shutdown()
        if self.kafka_door is not None:
            # Kafka's stopProcessingRequests: no new connection or request from here; the
            # requests already read are answered before the door closes (below, once the core
            # has answered those that wait)
            self.kafka_door.begin_shutdown()
        if self.dynamic_config_manager is not None:
            self.dynamic_config_manager.stop()
        if self.lifecycle is not None:
            self.lifecycle.stop()
        if self.controller is not None:
            self.controller.shutdown()
        if self.groups is not None:
            self.groups.shutdown()
        if self.transactions is not None:
            self.transactions.shutdown()
        if self.share_state is not None:
            self.share_state.close()
        if self.share_coordinator is not None:
            self.share_coordinator.shutdown()
        if self.txn_markers is not None:
            self.txn_markers.shutdown()
        if self.replicas is not None:
            self.replicas.shutdown()
        for terminator in self._terminators:
            terminator.stop()
        if self.kafka_door is not None:
            # the replica manager's shutdown answered its waiting produces and fetches: the
            # door writes those answers, closes its connections and stops its loop
            self.kafka_door.stop()
        stopping = [server.stop(grace=1) for server in self._servers]
        for done in stopping:
            done.wait()
        self._stopped.set()
        if self.fetchers is not None:
            self.fetchers.shutdown()
        if self.alter_partitions is not None:
            self.alter_partitions.shutdown()
        if self._ticker is not None:
            self._ticker.join(timeout=5)
        if self.log_manager is not None:
            self.log_manager.shutdown()
        if self.registration is not None:
            self.registration.deregister()
        if self.zk is not None:
            self.zk.stop()
            self.zk.close()
        self.channels.close()
        if self.metrics is not None:
            self.metrics.stop()
        log.info("node %d stopped", self.config.node_id)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the node has stopped; returns whether it has."""
        return self._stopped.wait(timeout_s)
