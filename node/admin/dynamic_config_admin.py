"""The admin calls on BROKER and GROUP config resources: DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs on dynamic broker configs (:mod:`node.admin.broker_configs`) and group
configs (:mod:`node.coordinator.group_config`), stored in ZooKeeper as Kafka's ZooKeeper mode
keeps entity configs::

    /config/brokers/<id>          one broker's dynamic configs
    /config/brokers/<default>     the cluster-wide dynamic default
    /config/groups/<g>            a group's configs (odradek's; Kafka 4 keeps them in KRaft)

each written (unless ``validate_only``) conditionally on the version read, in one multi with a
``/config/changes`` notification naming the entity (``brokers/<default>``, ``groups/<g>``).
Every node watches these znodes (:mod:`node.dynamic_config_manager`) and applies a change at
once, without a restart.

Resource names, as Kafka: a BROKER resource is ``""`` (the cluster-wide default) or this
node's id (a request for another broker is sent to that broker): anything else is
INVALID_REQUEST. A GROUP resource is any non-empty group id; the group need not exist.

Errors (raised, typed; the admin manager puts them in the resource's answer): INVALID_REQUEST
(42) for a bad resource name and every broker config refusal (Kafka wraps them so);
INVALID_CONFIG (40) for a group config refusal and an unknown name in APPEND / SUBTRACT /
DELETE; APPEND / SUBTRACT on a broker config that is no list is INVALID_REQUEST, on a group
config INVALID_CONFIG (Kafka's broker-side and controller-side answers).

Thread-safe: no mutable state (ZooKeeper is the state).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from controller.zk_data import (
    BrokerConfigZNode,
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityChangeNotificationZNode,
    ConfigEntityZNode,
    GroupConfigZNode,
)
from node.admin.broker_configs import (
    CLEANER_CONFIGS,
    DYNAMIC_LOG_CONFIGS,
    cleaner_threads,
    describe_broker_configs,
    dynamic_broker_config_names,
    validate_broker_configs,
)
from node.admin.config_ops import apply_incremental_ops
from node.admin.requests import (
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    DescribedConfig,
)
from node.coordinator.group_config import (
    GROUP_CONFIG_NAMES,
    STRING_GROUP_CONFIGS,
    broker_synonym,
    group_config_defaults,
    validate_group_config,
)
from node.coordinator.group_coordinator_config import GroupCoordinatorConfig
from node.kafka_config import IGNORED_KAFKA_CONFIGS
from odradek.errors import InvalidConfigError, InvalidRequestError, UnknownServerError
from storage.config import LogConfig

__all__ = ["DEFAULT_STATIC_NAMES", "DynamicConfigAdmin"]

DEFAULT_STATIC_NAMES = IGNORED_KAFKA_CONFIGS | {
    "node.id",
    "broker.id",
    "log.dirs",
    "log.dir",
    "zookeeper.connect",
    "listeners",
    "advertised.listeners",
    "num.partitions",
    "default.replication.factor",
}
"""Broker configs known to be read-only when the node gives no list of its own."""

_BROKER_LISTS = frozenset({"log.cleanup.policy"})


class DynamicConfigAdmin:
    """Reads and writes BROKER and GROUP config resources in ZooKeeper for node ``node_id``.

    ``log_defaults``: the node's static topic defaults (``server.properties``);
    ``static_other``: the read-only broker settings DescribeConfigs shows (name → value, type);
    ``static_names``: every broker config that exists (the read-only ones are refused by name);
    ``group_defaults``: the node's group coordinator settings (group configs' defaults and
    bounds); ``static_cleaner``: the log cleaner's settings ``server.properties`` gives other
    than Kafka's defaults (described as STATIC_BROKER_CONFIG; the static ``log.cleaner.threads``
    is the current value Kafka's half/double rule measures a dynamic one against)."""

    def __init__(
        self,
        zk: KazooClient,
        *,
        node_id: int,
        log_defaults: LogConfig,
        static_other: Mapping[str, tuple[str, ConfigType]] | None = None,
        static_names: Collection[str] = DEFAULT_STATIC_NAMES,
        group_defaults: GroupCoordinatorConfig | None = None,
        static_cleaner: Mapping[str, str] | None = None,
    ) -> None:
        self._zk = zk
        self._static_cleaner = dict(static_cleaner or {})
        self.node_id = node_id
        self._log_defaults = log_defaults
        self._static_other = dict(static_other or {})
        self._static_names = frozenset(static_names) | frozenset(self._static_other)
        self._group_defaults = group_defaults or GroupCoordinatorConfig()

    # -- reading -----------------------------------------------------------------------------

    def _read(self, path: str) -> tuple[dict[str, str], int | None]:
        """The entity's configs and the znode's version (``None``: no znode)."""
        try:
            data, stat = self._zk.get(path)
        except NoNodeError:
            return {}, None
        return ConfigEntityZNode.decode(data), int(stat.version)

    def broker_configs(self) -> tuple[dict[str, str], dict[str, str]]:
        """The cluster-wide default's dynamic configs and this node's own."""
        default, _ = self._read(BrokerConfigZNode.path(None))
        own, _ = self._read(BrokerConfigZNode.path(self.node_id))
        return default, own

    # -- names -------------------------------------------------------------------------------

    def _broker_of(self, resource: ConfigResource, *, describing: bool) -> int | None:
        """The broker id a BROKER resource names (``None``: the cluster-wide default)."""
        name = resource.resource_name
        if name == "":
            return None
        try:
            broker = int(name)
        except ValueError:
            word = "Broker" if describing else "Node"
            raise InvalidRequestError(f"{word} id must be an integer, but it is: {name}") from None
        if broker != self.node_id:
            expected = f"{self.node_id} or empty string" if describing else f"{self.node_id}"
            raise InvalidRequestError(
                f"Unexpected broker id, expected {expected}, but received {name}"
            )
        return broker

    @staticmethod
    def _group_of(resource: ConfigResource) -> str:
        if not resource.resource_name:
            raise InvalidRequestError("Group name must not be empty")
        return resource.resource_name

    # -- DescribeConfigs ---------------------------------------------------------------------

    def describe(
        self, resource: ConfigResource, keys: Sequence[str] | None, include_synonyms: bool
    ) -> tuple[DescribedConfig, ...]:
        """A BROKER or GROUP resource's configs (sorted by name, or in ``keys``' order with
        unknown names left out). Raises ``InvalidRequestError`` for a bad name."""
        if resource.resource_type is ConfigResourceType.GROUP:
            group = self._group_of(resource)
            overrides, _ = self._read(GroupConfigZNode.path(group))
            return self._describe_group(overrides, keys, include_synonyms)
        broker = self._broker_of(resource, describing=True)
        default, own = self.broker_configs()
        return describe_broker_configs(
            static_log=self._log_defaults,
            static_other=self._static_other,
            static_cleaner=self._static_cleaner,
            default=default,
            broker=None if broker is None else own,
            keys=keys,
            include_synonyms=include_synonyms,
        )

    def _describe_group(
        self, overrides: Mapping[str, str], keys: Sequence[str] | None, include_synonyms: bool
    ) -> tuple[DescribedConfig, ...]:
        node = group_config_defaults(self._group_defaults)
        builtin = group_config_defaults(GroupCoordinatorConfig())
        wanted = sorted(GROUP_CONFIG_NAMES) if keys is None else list(dict.fromkeys(keys))
        out = []
        for name in wanted:
            if name not in GROUP_CONFIG_NAMES:
                continue
            synonyms = []
            if name in overrides:
                synonyms.append(ConfigSynonym(name, overrides[name], ConfigSource.GROUP_CONFIG))
            synonym = broker_synonym(name) or name
            if node[name] != builtin[name]:
                synonyms.append(
                    ConfigSynonym(synonym, node[name], ConfigSource.STATIC_BROKER_CONFIG)
                )
            synonyms.append(ConfigSynonym(synonym, builtin[name], ConfigSource.DEFAULT_CONFIG))
            first = synonyms[0]
            out.append(
                DescribedConfig(
                    name,
                    first.value,
                    first.source,
                    synonyms=tuple(synonyms) if include_synonyms else (),
                    config_type=ConfigType.STRING
                    if name in STRING_GROUP_CONFIGS
                    else ConfigType.INT,
                )
            )
        return tuple(out)

    # -- AlterConfigs / IncrementalAlterConfigs ----------------------------------------------

    def alter(
        self, resource: ConfigResource, configs: Mapping[str, str], validate_only: bool
    ) -> None:
        """Legacy AlterConfigs: the resource's configs become exactly ``configs``."""
        self._change(resource, lambda _: dict(configs), validate_only)

    def incremental_alter(
        self, resource: ConfigResource, ops: Sequence[AlterConfigOp], validate_only: bool
    ) -> None:
        """IncrementalAlterConfigs: SET / DELETE (/ APPEND / SUBTRACT on a list) over the
        resource's stored configs (:func:`node.admin.config_ops.apply_incremental_ops`)."""
        if resource.resource_type is ConfigResourceType.GROUP:
            defaults = group_config_defaults(self._group_defaults)
            known: Collection[str] = GROUP_CONFIG_NAMES
            lists: Collection[str] = ()
        else:
            # a list's APPEND starts from the value in force: the static default
            static = self._log_defaults.to_kafka()
            defaults = {name: value for name, (_, value, _) in CLEANER_CONFIGS.items()}
            defaults |= {broker: static[topic] for broker, topic in DYNAMIC_LOG_CONFIGS.items()}
            known = dynamic_broker_config_names()
            lists = _BROKER_LISTS
        broker = resource.resource_type is ConfigResourceType.BROKER

        def change(current: dict[str, str]) -> dict[str, str]:
            try:
                return apply_incremental_ops(current, ops, defaults, known, lists)
            except InvalidConfigError as e:
                if broker and e.message.startswith("Config value"):
                    # Kafka's broker-side prepareIncrementalConfigs: InvalidRequestException
                    raise InvalidRequestError(e.message) from None
                raise

        self._change(resource, change, validate_only)

    def _validate(self, resource: ConfigResource, broker: int | None, new: dict[str, str]) -> None:
        if resource.resource_type is ConfigResourceType.GROUP:
            validate_group_config(new, self._group_defaults)
            return
        default, own = self.broker_configs()
        validate_broker_configs(
            new,
            static_names=self._static_names,
            base=self._log_defaults,
            current_cleaner_threads=cleaner_threads({**self._static_cleaner, **default, **own}),
        )

    def _change(
        self,
        resource: ConfigResource,
        change: Callable[[dict[str, str]], dict[str, str]],
        validate_only: bool,
    ) -> None:
        """Read the resource's configs, ``change`` them, validate, and (unless
        ``validate_only``) write them with a ``/config/changes`` notification, conditionally
        on the version read."""
        if resource.resource_type is ConfigResourceType.GROUP:
            group = self._group_of(resource)
            path, entity = GroupConfigZNode.path(group), GroupConfigZNode.entity(group)
            broker = None
        else:
            broker = self._broker_of(resource, describing=False)
            path, entity = BrokerConfigZNode.path(broker), BrokerConfigZNode.entity(broker)
        for _ in range(10):
            current, version = self._read(path)
            new = change(dict(current))
            self._validate(resource, broker, new)
            if validate_only:
                return
            self._zk.ensure_path(ConfigEntityChangeNotificationZNode.path)
            self._zk.ensure_path(path.rsplit("/", 1)[0])
            txn = self._zk.transaction()
            if version is None:
                txn.create(path, ConfigEntityZNode.encode(new))
            else:
                txn.set_data(path, ConfigEntityZNode.encode(new), version)
            txn.create(
                ConfigEntityChangeNotificationSequenceZNode.path_prefix(),
                ConfigEntityChangeNotificationSequenceZNode.encode_entity(entity),
                sequence=True,
            )
            results = txn.commit()
            if not any(isinstance(r, Exception) for r in results):
                return
            if not isinstance(results[0], (BadVersionError, NodeExistsError)):
                raise UnknownServerError(f"could not write the configs of {entity}: {results}")
        raise UnknownServerError(f"could not write the configs of {entity}: too many races")
