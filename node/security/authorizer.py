"""The ACL authorizer (Kafka's ZooKeeper-era ``kafka.security.authorizer.AclAuthorizer``).

Enabled by ``authorizer.class.name=kafka.security.authorizer.AclAuthorizer``. ACLs live in
ZooKeeper in Kafka's layout (:class:`controller.zk_data.AclZNode`); every node keeps all of
them in memory, loaded at start, and reloads one resource pattern when a change notice appears
under ``/kafka-acl-changes`` or ``/kafka-acl-extended-changes`` (and everything after a new
ZooKeeper session). A write changes the resource's znode conditionally on its version
(re-reading on a conflict), deletes it when it becomes empty, then adds a change notice;
notices older than 15 minutes are deleted by the writer, as Kafka purges them.

Decisions follow :func:`odradek.acl.authorize`, with ``super.users`` and
``allow.everyone.if.no.acl.found``.

Thread-safety: every public method is thread-safe; the cache is replaced whole under a lock,
and decisions read an immutable snapshot.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError
from kazoo.recipe.watchers import ChildrenWatch

from controller.zk_data import AclChangeNotificationZNode, AclZNode
from odradek.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    PatternType,
    ResourcePattern,
    ResourceType,
    authorize,
)
from odradek.clock import Clock
from odradek.errors import InvalidConfigError

__all__ = ["ACL_AUTHORIZER_CLASS_NAMES", "AclAuthorizer", "AuthorizerConfig"]

log = logging.getLogger(__name__)

ACL_AUTHORIZER_CLASS_NAMES = (
    "kafka.security.authorizer.AclAuthorizer",
    "kafka.security.auth.SimpleAclAuthorizer",
)
"""``authorizer.class.name`` values that enable the authorizer (Kafka's ZooKeeper-era names)."""

CHANGE_EXPIRATION_MS = 15 * 60 * 1000


@dataclass(frozen=True, slots=True)
class AuthorizerConfig:
    """``authorizer.class.name``, ``super.users``, ``allow.everyone.if.no.acl.found``."""

    authorizer_class_name: str = ""
    """Empty: no authorizer (every request is allowed)."""
    super_users: tuple[str, ...] = ()
    """Principals allowed everything (``super.users=User:admin;User:CN=node-1``)."""
    allow_everyone_if_no_acl_found: bool = False
    """Allow a resource that has no ACL at all (Kafka's default: deny)."""

    def __post_init__(self) -> None:
        if self.authorizer_class_name and (
            self.authorizer_class_name not in ACL_AUTHORIZER_CLASS_NAMES
        ):
            raise InvalidConfigError(
                f"authorizer.class.name {self.authorizer_class_name!r} is not supported "
                f"({' or '.join(ACL_AUTHORIZER_CLASS_NAMES)})"
            )
        for user in self.super_users:
            kind, sep, name = user.partition(":")
            if not sep or not kind or not name:
                raise InvalidConfigError(
                    f"super.users: {user!r} is not a principal (Type:name, e.g. User:admin)"
                )

    @property
    def enabled(self) -> bool:
        return bool(self.authorizer_class_name)

    @staticmethod
    def parse_super_users(text: str) -> tuple[str, ...]:
        """``User:a;User:b`` (semicolon-separated, as Kafka's ``super.users``)."""
        return tuple(u.strip() for u in text.split(";") if u.strip())


class AclAuthorizer:
    """Decides requests and stores ACLs; see the module docstring."""

    def __init__(self, zk: KazooClient, config: AuthorizerConfig, clock: Clock) -> None:
        self._zk = zk
        self._config = config
        self._super_users = frozenset(config.super_users)
        self._clock = clock
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._acls: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        self._seen: dict[str, set[str]] = {}
        self._started = False

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Loads every ACL and starts watching for changes. Raises kazoo's errors."""
        for path in (
            AclZNode.LITERAL_ROOT,
            AclZNode.PREFIXED_ROOT,
            AclChangeNotificationZNode.LITERAL_PATH,
            AclChangeNotificationZNode.EXTENDED_PATH,
        ):
            self._zk.ensure_path(path)
        self._seen = {
            path: set(self._zk.get_children(path))
            for path in (
                AclChangeNotificationZNode.LITERAL_PATH,
                AclChangeNotificationZNode.EXTENDED_PATH,
            )
        }
        self.reload_all()
        self._started = True
        self._zk.add_listener(self._on_state)
        for path in self._seen:
            ChildrenWatch(self._zk, path, self._watcher(path))

    def _on_state(self, state: str) -> None:
        # kazoo's connection thread: no ZooKeeper calls here
        if state == KazooState.CONNECTED and self._started:
            threading.Thread(target=self._safe_reload_all, name="acl-reload", daemon=True).start()

    def _safe_reload_all(self) -> None:
        try:
            self.reload_all()
        except Exception:
            log.exception("reloading ACLs failed")

    def _watcher(self, path: str) -> object:
        extended = path == AclChangeNotificationZNode.EXTENDED_PATH

        def on_children(children: list[str]) -> None:
            new = set(children) - self._seen.get(path, set())
            self._seen[path] = set(children)
            for child in sorted(new):
                try:
                    data, _ = self._zk.get(f"{path}/{child}")
                    self._reload(AclChangeNotificationZNode.decode(data, extended))
                except NoNodeError:
                    continue
                except ValueError as e:
                    log.warning("%s/%s: %s; reloading every ACL", path, child, e)
                    self._safe_reload_all()
                except Exception:
                    log.exception("processing ACL change %s/%s failed", path, child)

        return on_children

    def reload_all(self) -> None:
        """Reads every ACL from ZooKeeper (at start, and after a new session)."""
        acls: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
            root = AclZNode.root(pattern_type)
            for type_name in self._children(root):
                try:
                    resource_type = ResourceType.parse(type_name)
                except ValueError:
                    continue
                for name in self._children(f"{root}/{type_name}"):
                    try:
                        pattern = ResourcePattern(resource_type, name, pattern_type)
                    except ValueError as e:
                        log.warning("ignoring ACLs of %s/%s/%s: %s", root, type_name, name, e)
                        continue
                    entries = self._read(pattern)
                    if entries:
                        acls[pattern] = entries
        with self._lock:
            self._acls = acls

    def _children(self, path: str) -> list[str]:
        try:
            return list(self._zk.get_children(path))
        except NoNodeError:
            return []

    def _read(self, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
        path = AclZNode.path(pattern)
        try:
            data, _ = self._zk.get(path)
        except NoNodeError:
            return frozenset()
        try:
            return AclZNode.decode(data, path)
        except ValueError as e:
            log.warning("ignoring unreadable ACLs: %s", e)
            return frozenset()

    def _reload(self, pattern: ResourcePattern) -> None:
        entries = self._read(pattern)
        with self._lock:
            acls = dict(self._acls)
            if entries:
                acls[pattern] = entries
            else:
                acls.pop(pattern, None)
            self._acls = acls

    # -- decisions ----------------------------------------------------------------------------

    def bindings(self) -> list[AclBinding]:
        """Every ACL this node knows, sorted."""
        acls = self._acls
        return sorted(AclBinding(p, e) for p, entries in acls.items() for e in entries)

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """Whether ``principal`` from ``host`` may do ``operation`` on the resource."""
        if principal in self._super_users:
            return True
        acls = self._acls
        matching = [
            AclBinding(p, e)
            for p, entries in acls.items()
            if p.matches(resource_type, name)
            for e in entries
        ]
        return authorize(
            matching,
            principal,
            host,
            operation,
            self._super_users,
            self._config.allow_everyone_if_no_acl_found,
        )

    # -- changes ------------------------------------------------------------------------------

    def create_acls(self, bindings: Iterable[AclBinding]) -> None:
        """Adds the ACLs (those that exist already are kept). Raises kazoo's errors."""
        by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
        for b in bindings:
            by_pattern.setdefault(b.pattern, set()).add(b.entry)
        with self._write_lock:
            for pattern, entries in by_pattern.items():
                self._update(pattern, lambda old, add=frozenset(entries): old | add)

    def delete_acls(self, filters: Iterable[AclBindingFilter]) -> list[list[AclBinding]]:
        """Deletes the ACLs each filter matches; returns them per filter (an ACL matched by
        two filters is reported under the first). Raises kazoo's errors."""
        with self._write_lock:
            self.reload_all()  # decide on what ZooKeeper holds now
            current = self.bindings()
            out: list[list[AclBinding]] = []
            taken: set[AclBinding] = set()
            for f in filters:
                matched = [b for b in current if f.matches(b) and b not in taken]
                taken.update(matched)
                out.append(matched)
            by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
            for b in taken:
                by_pattern.setdefault(b.pattern, set()).add(b.entry)
            for pattern, entries in by_pattern.items():
                self._update(pattern, lambda old, gone=frozenset(entries): old - gone)
            return out

    def _update(self, pattern: ResourcePattern, change: object) -> None:
        assert callable(change)
        path = AclZNode.path(pattern)
        while True:
            try:
                data, stat = self._zk.get(path)
                old, version = AclZNode.decode(data, path), stat.version
            except NoNodeError:
                old, version = frozenset(), -1
            new: frozenset[AccessControlEntry] = change(old)
            if new == old:
                return
            try:
                if not new:
                    self._zk.delete(path, version=version)
                    self._delete_empty_parent(path)
                elif version < 0:
                    self._zk.create(path, AclZNode.encode(new), makepath=True)
                else:
                    self._zk.set(path, AclZNode.encode(new), version=version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue  # another writer came first: read again
            break
        self._zk.create(
            AclChangeNotificationZNode.path_prefix(pattern),
            AclChangeNotificationZNode.encode(pattern),
            sequence=True,
            makepath=True,
        )
        self._reload(pattern)
        self._purge_old_changes()

    def _delete_empty_parent(self, path: str) -> None:
        parent = path.rpartition("/")[0]
        try:
            self._zk.delete(parent)
        except (NotEmptyError, NoNodeError):
            pass

    def _purge_old_changes(self) -> None:
        horizon = self._clock.wall_ms() - CHANGE_EXPIRATION_MS
        for path in (
            AclChangeNotificationZNode.LITERAL_PATH,
            AclChangeNotificationZNode.EXTENDED_PATH,
        ):
            for child in self._children(path):
                try:
                    _, stat = self._zk.get(f"{path}/{child}")
                    if stat.ctime < horizon:
                        self._zk.delete(f"{path}/{child}")
                except NoNodeError:
                    continue
