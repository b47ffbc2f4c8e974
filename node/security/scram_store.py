"""SCRAM credentials in ZooKeeper (Kafka's ``/config/users/<user>`` and its ``AdminZkClient``
for user configs).

A user's znode holds ``{"version":1,"config":{"SCRAM-SHA-256":"<credential>", ...}}``, the
credential being :meth:`odradek.scram.ScramCredential.encode`'s text; other keys (quotas) are
kept as they are. A change rewrites the znode conditionally on its version, deletes it when it
becomes empty, and adds a ``/config/changes`` notice (``users/<user>``) as Kafka does. The node
reads a credential from ZooKeeper when a client authenticates, so changes apply to the next
authentication on every node without a cache.

Thread-safety: thread-safe (ZooKeeper does the serialising).
"""

from __future__ import annotations

import logging

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from controller.zk_data import (
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityZNode,
    UserConfigZNode,
)
from odradek.scram import MECHANISMS, ScramCredential

__all__ = ["ScramCredentialStore"]

log = logging.getLogger(__name__)


class ScramCredentialStore:
    """Reads and writes users' SCRAM credentials."""

    def __init__(self, zk: KazooClient) -> None:
        self._zk = zk

    def _config(self, user: str) -> tuple[dict[str, str], int]:
        try:
            data, stat = self._zk.get(UserConfigZNode.path(user))
        except NoNodeError:
            return {}, -1
        return ConfigEntityZNode.decode(data), int(stat.version)

    def credential(self, mechanism: str, user: str) -> ScramCredential | None:
        """The user's credential for ``mechanism``; ``None`` if there is none (or it cannot
        be read, which is logged)."""
        text = self._config(user)[0].get(mechanism)
        if text is None:
            return None
        try:
            return ScramCredential.decode(text)
        except ValueError as e:
            log.warning("user %s: %s", user, e)
            return None

    def users(self) -> list[str]:
        """Every user with a znode, sorted."""
        try:
            names = self._zk.get_children(UserConfigZNode.path_root)
        except NoNodeError:
            return []
        return sorted(UserConfigZNode.desanitize(n) for n in names)

    def describe(self, user: str) -> dict[str, int]:
        """Mechanism → iterations of the user's credentials."""
        out: dict[str, int] = {}
        for mechanism in MECHANISMS:
            credential = self.credential(mechanism, user)
            if credential is not None:
                out[mechanism] = credential.iterations
        return out

    def alter(
        self,
        user: str,
        upsert: dict[str, ScramCredential],
        delete: set[str],
    ) -> None:
        """Sets and removes the user's credentials in one conditional write. Raises kazoo's
        errors."""
        path = UserConfigZNode.path(user)
        while True:
            config, version = self._config(user)
            new = {k: v for k, v in config.items() if k not in delete}
            new.update({m: c.encode() for m, c in upsert.items()})
            if new == config:
                return
            try:
                if not new:
                    self._zk.delete(path, version=version)
                elif version < 0:
                    self._zk.create(path, ConfigEntityZNode.encode(new), makepath=True)
                else:
                    self._zk.set(path, ConfigEntityZNode.encode(new), version=version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue  # another writer came first: read again
            break
        self._zk.create(
            ConfigEntityChangeNotificationSequenceZNode.path_prefix(),
            ConfigEntityChangeNotificationSequenceZNode.encode_user(user),
            sequence=True,
            makepath=True,
        )
