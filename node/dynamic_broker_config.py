"""A node's configuration as it is now: the static :class:`~node.config.NodeConfig` with the
dynamic broker configs over it (Kafka's ``DynamicBrokerConfig``, KIP-226).

The dynamic configs come from ZooKeeper (``/config/brokers/<default>`` and
``/config/brokers/<id>``, a per-broker value winning; :mod:`node.dynamic_config_manager` reads
them) through :meth:`DynamicBrokerConfig.update`. What they change, without a restart:

* the topic config defaults (``log.retention.ms``, ``log.retention.bytes``,
  ``log.segment.bytes``, ``min.insync.replicas``, ...: :func:`node.admin.broker_configs.
  effective_log_defaults`): :meth:`DynamicBrokerConfig.topic_config`, which the replica manager
  builds every log's config with, uses them at once, and the listeners (the replica manager's
  ``refresh_log_configs``) re-apply them to every hosted log without an override of its own,
  so the next retention pass deletes by the new limits and the next acks=-1 produce counts the
  new ``min.insync.replicas``;
* ``log.cleaner.threads``: :attr:`DynamicBrokerConfig.cleaner_threads` (the static
  ``log.cleaner.threads`` unless set dynamically), which the node applies to its log manager
  (``LogManager.set_cleaner_threads``, Kafka's ``LogCleaner.reconfigure``) on every update:
  passes running finish, the next ones run with the new count;
* the other cleaner settings: :attr:`DynamicBrokerConfig.dynamic` (see docs/operations.md
  for what odradek's cleaner does with them).

It is what the replica manager reads as its config (:class:`node.core.replica_manager.
ReplicaConfig`): the replica settings are the static ones.

Thread-safe: an update replaces the effective values under a lock; readers see one version.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping

from node.admin.broker_configs import cleaner_threads, effective_log_defaults
from node.config import NodeConfig
from storage.config import LogConfig

__all__ = ["DynamicBrokerConfig"]

log = logging.getLogger(__name__)


class DynamicBrokerConfig:
    """``static`` with the dynamic broker configs over it."""

    def __init__(self, static: NodeConfig) -> None:
        self.static = static
        self._lock = threading.Lock()
        self._default: dict[str, str] = {}
        self._own: dict[str, str] = {}
        self._log = static.log
        self.listeners: list[Callable[[], None]] = []
        """Called (outside the lock) after an update changed the effective values."""

    # -- the replica manager's config (ReplicaConfig) ------------------------------------------

    @property
    def node_id(self) -> int:
        return self.static.node_id

    @property
    def replica_lag_time_max_ms(self) -> int:
        return self.static.replica_lag_time_max_ms

    @property
    def replica_fetch_silence_max_ms(self) -> int:
        return self.static.replica_fetch_silence_max_ms

    @property
    def replica_fetch_wait_max_ms(self) -> int:
        return self.static.replica_fetch_wait_max_ms

    @property
    def replica_fetch_backoff_ms(self) -> int:
        return self.static.replica_fetch_backoff_ms

    def topic_config(self, overrides: Mapping[str, str]) -> LogConfig:
        """The log config of a topic with ``overrides`` (Kafka names) over the current topic
        defaults. Raises ``InvalidConfigError``."""
        return LogConfig.from_kafka(overrides, base=self.log)

    # -- the dynamic values ------------------------------------------------------------------

    @property
    def log(self) -> LogConfig:
        """The topic config defaults now (static, then cluster-wide, then per broker)."""
        with self._lock:
            return self._log

    @property
    def dynamic(self) -> dict[str, str]:
        """The dynamic broker configs in force (the per-broker ones over the cluster-wide)."""
        with self._lock:
            return {**self._default, **self._own}

    @property
    def cleaner_threads(self) -> int:
        """``log.cleaner.threads`` now: the dynamic value over the static one."""
        return cleaner_threads(
            {"log.cleaner.threads": str(self.static.log_cleaner_threads), **self.dynamic}
        )

    def update(
        self,
        *,
        default: Mapping[str, str] | None = None,
        own: Mapping[str, str] | None = None,
    ) -> bool:
        """Replace the cluster-wide (``default``) and/or this broker's (``own``) dynamic
        configs (``None``: unchanged); True, and the listeners called, if anything changed."""
        with self._lock:
            new_default = dict(self._default if default is None else default)
            new_own = dict(self._own if own is None else own)
            if new_default == self._default and new_own == self._own:
                return False
            self._default, self._own = new_default, new_own
            self._log = effective_log_defaults(self.static.log, {**new_default, **new_own})
            effective = {**new_default, **new_own}
        log.info("dynamic broker configs of node %d: %s", self.static.node_id, effective)
        for listener in list(self.listeners):
            try:
                listener()
            except Exception:
                log.exception("applying the dynamic broker configs failed")
        return True
