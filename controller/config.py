"""The controller's settings (Kafka's ``controller.*`` and related broker configs)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ControllerConfig"]


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """Immutable; validated on construction (``ValueError``)."""

    request_timeout_ms: int = 30_000
    """Deadline of one controller→broker RPC, and how long a broker's AlterPartition or
    ControlledShutdown waits for the controller's event thread
    (``controller.socket.timeout.ms``)."""
    retry_backoff_ms: int = 100
    """Pause before resending a request to a broker that did not answer (Kafka's send thread)."""
    auto_leader_rebalance_enable: bool = False
    """Move leadership back to preferred replicas when a broker's imbalance exceeds the
    threshold (Kafka defaults this to true; odradek elects preferred leaders on request)."""
    leader_imbalance_check_interval_ms: int = 300_000
    """How often the auto rebalance runs (``leader.imbalance.check.interval.seconds``)."""
    leader_imbalance_per_broker_percentage: int = 10
    """Imbalance, in percent of a broker's preferred partitions, that triggers a rebalance."""
    unclean_leader_election_enable: bool = False
    """Elect an out-of-sync replica when no ISR member is alive (losing data). The topic
    config ``unclean.leader.election.enable`` overrides it per topic."""
    max_state_write_retries: int = 10
    """Re-read-and-retry rounds for a partition state write that lost a version race."""
    broker_session_timeout_ms: int = 0
    """A broker heard from no heartbeat for this long is fenced: its leaderships move to other
    ISR members (``broker.session.timeout.ms``, KRaft's; Kafka's default is 9 s). 0: off,
    brokers are gone only when their ZooKeeper session ends (the default here, for brokers
    that do not heartbeat; a node passes its own setting, 750 ms by default). See
    docs/operations.md."""
    broker_heartbeat_interval_ms: int = 0
    """The brokers' ``broker.heartbeat.interval.ms``: a broker silent for two intervals has its
    address probed, and is fenced at once if nothing listens there
    (:mod:`controller.liveness_probe`). 0: no probing."""
    inter_broker_listener_name: str | None = None
    """The listener whose advertised address the controller connects to
    (``inter.broker.listener.name``); ``None``: the registration's host and port."""

    def __post_init__(self) -> None:
        if self.request_timeout_ms <= 0:
            raise ValueError("request_timeout_ms must be positive")
        if self.retry_backoff_ms < 0:
            raise ValueError("retry_backoff_ms must be non-negative")
        if self.leader_imbalance_check_interval_ms <= 0:
            raise ValueError("leader_imbalance_check_interval_ms must be positive")
        if not 0 <= self.leader_imbalance_per_broker_percentage <= 100:
            raise ValueError("leader_imbalance_per_broker_percentage must be in [0, 100]")
        if self.broker_session_timeout_ms < 0:
            raise ValueError("broker_session_timeout_ms must be 0 (off) or more")
        if self.broker_heartbeat_interval_ms < 0:
            raise ValueError("broker_heartbeat_interval_ms must be 0 (off) or more")
        if self.max_state_write_retries < 1:
            raise ValueError("max_state_write_retries must be at least 1")
