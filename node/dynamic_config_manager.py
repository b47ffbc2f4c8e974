"""Keeps a node's dynamic configs current from ZooKeeper (Kafka's ``ZkConfigManager`` and
``DynamicConfigManager``, the broker side of KIP-226 and of group configs).

Watches, with kazoo's ``DataWatch`` / ``ChildrenWatch`` (each fires once at registration,
then on every change, and re-reads after a lost session)::

    /config/brokers/<default>   -> DynamicBrokerConfig.update(default=...)
    /config/brokers/<id>        -> DynamicBrokerConfig.update(own=...)
    /config/groups/<g>          -> GroupConfigManager.update(g, ...)   (a DataWatch per child)

Kafka's brokers learn of a change from the ``/config/changes`` notifications; odradek's
controller consumes those (for topics) and deletes them, so a node watches the entity znodes
themselves: the same writes, the same outcome, and a node that starts reads the state rather
than a notification history.

A znode that does not decode is logged and read as empty. ``start()`` registers the watches
(the first reads happen before it returns); ``stop()`` makes every later callback a no-op and
ends the watches. Callbacks run on kazoo's event thread.
"""

from __future__ import annotations

import logging
import threading

from kazoo.client import KazooClient
from kazoo.protocol.states import ZnodeStat

from controller.zk_data import BrokerConfigZNode, ConfigEntityZNode, GroupConfigZNode
from node.coordinator.group_config_manager import GroupConfigManager
from node.dynamic_broker_config import DynamicBrokerConfig

__all__ = ["DynamicConfigManager"]

log = logging.getLogger(__name__)


def _decode(path: str, data: bytes | None) -> dict[str, str]:
    try:
        return ConfigEntityZNode.decode(data)
    except ValueError as e:
        log.error("ignoring the configs in %s: %s", path, e)
        return {}


class DynamicConfigManager:
    """Feeds ``broker`` (this node's dynamic broker configs) and ``groups`` (every group's
    configs) from ``zk``."""

    def __init__(
        self,
        zk: KazooClient,
        node_id: int,
        broker: DynamicBrokerConfig,
        groups: GroupConfigManager,
    ) -> None:
        self._zk = zk
        self._node_id = node_id
        self._broker = broker
        self._groups = groups
        self._lock = threading.Lock()
        self._watched: set[str] = set()
        self._stopped = False

    def start(self) -> None:
        """Register the watches; the current configs are applied before this returns."""
        self._zk.ensure_path(BrokerConfigZNode.path_root)
        self._zk.ensure_path(GroupConfigZNode.path_root)
        self._zk.DataWatch(BrokerConfigZNode.path(None), self._on_default)
        self._zk.DataWatch(BrokerConfigZNode.path(self._node_id), self._on_own)
        self._zk.ChildrenWatch(GroupConfigZNode.path_root, self._on_groups)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True

    def _on_default(self, data: bytes | None, stat: ZnodeStat | None) -> bool:
        if self._stopped:
            return False
        self._broker.update(default=_decode(BrokerConfigZNode.path(None), data))
        return True

    def _on_own(self, data: bytes | None, stat: ZnodeStat | None) -> bool:
        if self._stopped:
            return False
        self._broker.update(own=_decode(BrokerConfigZNode.path(self._node_id), data))
        return True

    def _on_groups(self, children: list[str]) -> bool:
        if self._stopped:
            return False
        groups = {GroupConfigZNode.group_of(c) for c in children}
        self._groups.retain(groups)
        with self._lock:
            new = groups - self._watched
            self._watched |= new
        for group in sorted(new):
            self._zk.DataWatch(GroupConfigZNode.path(group), self._group_watcher(group))
        return True

    def _group_watcher(self, group: str) -> object:
        path = GroupConfigZNode.path(group)

        def on_change(data: bytes | None, stat: ZnodeStat | None) -> bool:
            if self._stopped:
                return False
            if stat is None:  # deleted: the children watch adds it again if it comes back
                self._groups.update(group, None)
                with self._lock:
                    self._watched.discard(group)
                return False
            self._groups.update(group, _decode(path, data))
            return True

        return on_change
