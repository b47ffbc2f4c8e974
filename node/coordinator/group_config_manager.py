"""The group configs this node knows (Kafka's ``GroupConfigManager``): each group's stored
overrides (``/config/groups/<g>``, kept current by :mod:`node.dynamic_config_manager`), and
the effective :class:`~node.coordinator.group_config.GroupConfig` the coordinator asks for on
every heartbeat (:meth:`GroupConfigManager.group_config`), so that a change reaches a group's
members on their next heartbeat, without a restart.

Thread-safe: one lock over the map; the effective configs are computed once per change.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from node.coordinator.group_config import GroupConfig, group_config
from node.coordinator.group_coordinator_config import GroupCoordinatorConfig

__all__ = ["GroupConfigManager"]


class GroupConfigManager:
    """Per group: its overrides over the broker's defaults (``broker``)."""

    def __init__(self, broker: GroupCoordinatorConfig) -> None:
        self._broker = broker
        self._lock = threading.Lock()
        self._overrides: dict[str, dict[str, str]] = {}
        self._configs: dict[str, GroupConfig] = {}
        self._default = group_config({}, broker)

    def update(self, group_id: str, overrides: Mapping[str, str] | None) -> None:
        """Replace ``group_id``'s overrides (``None`` or empty: it has none any more)."""
        with self._lock:
            if not overrides:
                self._overrides.pop(group_id, None)
                self._configs.pop(group_id, None)
                return
            self._overrides[group_id] = dict(overrides)
            self._configs[group_id] = group_config(overrides, self._broker)

    def retain(self, group_ids: set[str]) -> None:
        """Forget every group not in ``group_ids`` (their znodes were deleted)."""
        with self._lock:
            for gone in set(self._overrides) - group_ids:
                self._overrides.pop(gone, None)
                self._configs.pop(gone, None)

    def overrides(self, group_id: str) -> dict[str, str]:
        with self._lock:
            return dict(self._overrides.get(group_id, {}))

    def group_config(self, group_id: str) -> GroupConfig:
        """``group_id``'s effective configs (the broker's defaults when it has no overrides)."""
        with self._lock:
            return self._configs.get(group_id, self._default)
