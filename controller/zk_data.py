"""ZooKeeper paths and JSON codecs, in Kafka's formats (Kafka's ``kafka.zk.ZkData``).

The layout, as Kafka's ZooKeeper-mode cluster keeps it::

    /controller                                   ephemeral  {"version":2,"brokerid":1,
                                                              "timestamp":"<ms>",
                                                              "kraftControllerEpoch":-1}
    /controller_epoch                             "5" (decimal text); bumped in the same multi
                                                  that creates /controller
    /brokers/ids/<id>                             ephemeral  BrokerIdZNode v5; its czxid is the
                                                  broker epoch
    /brokers/topics/<t>                           TopicZNode v3: assignment, adding/removing
                                                  replicas of reassignments, topic_id
    /brokers/topics/<t>/partitions/<p>/state      TopicPartitionStateZNode: leader, leader_epoch,
                                                  isr, controller_epoch; its zkVersion is the
                                                  partition epoch
    /config/topics/<t>                            {"version":1,"config":{...}} (overrides only)
    /config/brokers/<id>                          {"version":1,"config":{...}}: one broker's
                                                  dynamic configs (Kafka's broker names)
    /config/brokers/<default>                     the same, the cluster-wide dynamic default
    /config/groups/<g>                            {"version":1,"config":{...}}: a group's
                                                  configs (odradek's: Kafka keeps group configs
                                                  only in KRaft's metadata log)
    /config/changes/config_change_<seq>           {"version":2,"entity_path":"topics/<t>"}
                                                  (or "brokers/<id>", "brokers/<default>",
                                                  "groups/<g>", "users/<u>")
    /admin/delete_topics/<t>                      empty: "delete this topic"
    /admin/reassign_partitions                    {"version":1,"partitions":[{"topic":..,
                                                  "partition":..,"replicas":[..]}]}
    /admin/preferred_replica_election             {"version":1,"partitions":[{"topic":..,
                                                  "partition":..}]}
    /admin/unclean_leader_election                odradek's: same shape as the preferred one
    /cluster/id                                   {"version":"1","id":"<cluster id>"}
    /kafka-acl/<Type>/<name>                      AclZNode: {"version":1,"acls":[{"principal":
                                                  "User:alice","permissionType":"Allow",
                                                  "operation":"Read","host":"*"}]} (LITERAL)
    /kafka-acl-extended/prefixed/<Type>/<prefix>  the same, PREFIXED patterns
    /kafka-acl-changes/acl_changes_<seq>          "Topic:orders": a literal pattern changed
    /kafka-acl-extended-changes/acl_changes_<seq> {"version":1,"resourceType":"Topic",
                                                  "name":"orders-","patternType":"PREFIXED"}
    /latest_producer_id_block                     {"version":1,"broker":<id>,
                                                   "block_start":"<first>","block_end":"<last>"}

Two odradek extensions, both readable by Kafka's decoders where Kafka has the znode: a
reassignment entry may carry ``"cancel": true`` (cancel the ongoing reassignment; Kafka's
ZooKeeper path had no cancel), and ``/admin/unclean_leader_election`` asks for unclean elections
(Kafka's AdminClient asked its controller directly, which odradek's Admin service cannot).

Everything here is pure: values in, bytes out and back. Decoders raise ``ValueError`` for
malformed data. Every function and class is thread-safe (immutable values, no shared state).
"""

from __future__ import annotations

import base64
import json
import os
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from odradek.acl import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

__all__ = [
    "NO_LEADER",
    "LEADER_DURING_DELETE",
    "INITIAL_LEADER_EPOCH",
    "INITIAL_PARTITION_EPOCH",
    "INITIAL_CONTROLLER_EPOCH",
    "LEADER_RECOVERY_RECOVERED",
    "LEADER_RECOVERY_RECOVERING",
    "TopicPartition",
    "BrokerRegistrationInfo",
    "EndPoint",
    "split_connection_string",
    "SECURITY_PROTOCOLS",
    "TopicAssignment",
    "LeaderIsrAndControllerEpoch",
    "ControllerZNode",
    "ControllerEpochZNode",
    "BrokersZNode",
    "BrokerIdsZNode",
    "BrokerIdZNode",
    "TopicsZNode",
    "TopicZNode",
    "TopicPartitionsZNode",
    "TopicPartitionZNode",
    "TopicPartitionStateZNode",
    "ConfigZNode",
    "ConfigEntityTypeZNode",
    "ConfigEntityZNode",
    "ConfigEntityChangeNotificationZNode",
    "UserConfigZNode",
    "BrokerConfigZNode",
    "GroupConfigZNode",
    "ConfigEntityChangeNotificationSequenceZNode",
    "AdminZNode",
    "DeleteTopicsZNode",
    "DeleteTopicsTopicZNode",
    "ReassignPartitionsZNode",
    "PreferredReplicaElectionZNode",
    "UncleanLeaderElectionZNode",
    "ClusterZNode",
    "ClusterIdZNode",
    "PERSISTENT_PATHS",
    "AclZNode",
    "AclChangeNotificationZNode",
    "new_topic_id",
    "new_cluster_id",
    "PRODUCER_ID_BLOCK_SIZE",
    "ProducerIdsBlock",
    "ProducerIdBlockZNode",
]

NO_LEADER = -1
"""``leader`` of a partition that has none (Kafka's ``LeaderAndIsr.NO_LEADER``)."""
LEADER_DURING_DELETE = -2
"""StopReplica ``leader_epoch`` meaning "delete whatever the epoch" (``EpochDuringDelete``)."""
INITIAL_LEADER_EPOCH = 0
INITIAL_PARTITION_EPOCH = 0
INITIAL_CONTROLLER_EPOCH = 0
"""``/controller_epoch`` is created holding 0, so the first controller has epoch 1 (Kafka)."""
LEADER_RECOVERY_RECOVERED = 0
LEADER_RECOVERY_RECOVERING = 1


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    """One partition of one topic. Ordered by topic, then partition."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _load(data: bytes | None, what: str) -> dict[str, Any]:
    if not data:
        raise ValueError(f"{what}: no data")
    try:
        value = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{what}: not JSON ({e})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{what}: not a JSON object")
    return value


def _int(obj: Mapping[str, Any], key: str, what: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what}: {key!r} is not an integer: {value!r}")
    return value


def _int_list(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise ValueError(f"{what}: not a list of integers: {value!r}")
    return tuple(value)


# ---------------------------------------------------------------------------------------------
# Controller


class ControllerZNode:
    """``/controller``: the active controller's id (ephemeral)."""

    path = "/controller"

    @staticmethod
    def encode(broker_id: int, timestamp_ms: int) -> bytes:
        return _json(
            {
                "version": 2,
                "brokerid": broker_id,
                "timestamp": str(timestamp_ms),
                "kraftControllerEpoch": -1,
            }
        )

    @staticmethod
    def decode(data: bytes | None) -> int:
        """The controller's broker id. Accepts versions 1 and 2 (and Kafka 0.8's bare int)."""
        if data is not None and data.strip().lstrip(b"-").isdigit():
            return int(data)
        return _int(_load(data, "/controller"), "brokerid", "/controller")


class ControllerEpochZNode:
    """``/controller_epoch``: the controller epoch as decimal text."""

    path = "/controller_epoch"

    @staticmethod
    def encode(epoch: int) -> bytes:
        return str(epoch).encode()

    @staticmethod
    def decode(data: bytes | None) -> int:
        try:
            return int((data or b"").decode())
        except (UnicodeDecodeError, ValueError):
            raise ValueError(f"/controller_epoch: not an integer: {data!r}") from None


# ---------------------------------------------------------------------------------------------
# Brokers


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
"""Kafka's security protocols (``org.apache.kafka.common.security.auth.SecurityProtocol``)."""


@dataclass(frozen=True, slots=True)
class EndPoint:
    """One listener of a broker as registered and advertised: ``NAME://host:port`` and the
    listener's security protocol (Kafka's ``EndPoint``)."""

    listener_name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    @property
    def connection_string(self) -> str:
        """``NAME://host:port`` (an IPv6 host in brackets), as in the znode's ``endpoints``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"

    @staticmethod
    def parse(text: str, protocols: Mapping[str, str], what: str) -> EndPoint:
        """``NAME://host:port`` with the protocol of ``NAME`` in ``protocols``; an empty host
        stays empty. Raises ``ValueError``."""
        name, host, port = split_connection_string(text, what)
        protocol = protocols.get(name)
        if protocol is None:
            raise ValueError(f"{what}: listener {name!r} has no security protocol")
        return EndPoint(name, host, port, protocol)


def split_connection_string(text: str, what: str) -> tuple[str, str, int]:
    """``NAME://host:port`` → ``(NAME, host, port)``; ``[::1]`` loses its brackets, an empty
    host stays empty. Raises ``ValueError`` naming ``what``."""
    name, sep, address = text.strip().partition("://")
    if not sep or not name:
        raise ValueError(f"{what}: {text!r} is not NAME://host:port")
    host, colon, port_text = address.rpartition(":")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"{what}: {text!r} has no port") from None
    if not colon or not 0 <= port <= 65535:
        raise ValueError(f"{what}: {text!r} has no valid port")
    return name, host.strip("[]"), port


@dataclass(frozen=True, slots=True)
class BrokerRegistrationInfo:
    """What a broker registers: its id, where it listens, its rack (``None``: no rack).

    ``host``/``port`` are the address other brokers and the controller use (the inter-broker
    listener's). ``endpoints`` are all advertised listeners; empty means the one PLAINTEXT
    listener at ``host``/``port``, which is how a single-listener registration decodes.
    """

    node_id: int
    host: str
    port: int
    rack: str | None = None
    endpoints: tuple[EndPoint, ...] = ()

    @property
    def target(self) -> str:
        """The gRPC target ``host:port``."""
        return f"{self.host}:{self.port}"

    @property
    def all_endpoints(self) -> tuple[EndPoint, ...]:
        return self.endpoints or (EndPoint("PLAINTEXT", self.host, self.port, "PLAINTEXT"),)

    def endpoint(self, listener_name: str) -> EndPoint | None:
        """The advertised endpoint of ``listener_name``, ``None`` if the broker has none."""
        return next((e for e in self.all_endpoints if e.listener_name == listener_name), None)


class BrokersZNode:
    path = "/brokers"


class BrokerIdsZNode:
    path = "/brokers/ids"


class BrokerIdZNode:
    """``/brokers/ids/<id>``: a live broker (ephemeral), version 5 of Kafka's format.

    ``host``/``port`` hold the PLAINTEXT listener's address, null and -1 when there is none,
    ``endpoints`` every advertised listener (``NAME://host:port``) and
    ``listener_security_protocol_map`` their protocols, as Kafka's ``BrokerIdZNode.encode``.
    The znode's creation zxid (czxid) is the broker epoch (KIP-380).
    """

    @staticmethod
    def path(node_id: int) -> str:
        return f"{BrokerIdsZNode.path}/{node_id}"

    @staticmethod
    def encode(info: BrokerRegistrationInfo, timestamp_ms: int) -> bytes:
        endpoints = info.all_endpoints
        plaintext = next((e for e in endpoints if e.security_protocol == "PLAINTEXT"), None)
        obj: dict[str, Any] = {
            "version": 5,
            "host": plaintext.host if plaintext is not None else None,
            "port": plaintext.port if plaintext is not None else -1,
            "jmx_port": -1,
            "timestamp": str(timestamp_ms),
            "endpoints": [e.connection_string for e in endpoints],
            "listener_security_protocol_map": {
                e.listener_name: e.security_protocol for e in endpoints
            },
            "features": {},
        }
        if info.rack is not None:
            obj["rack"] = info.rack
        return _json(obj)

    @staticmethod
    def decode(
        node_id: int, data: bytes | None, listener_name: str | None = None
    ) -> BrokerRegistrationInfo:
        """The registration, with ``host``/``port`` taken from the endpoint of
        ``listener_name`` when it has one; else ``host``/``port`` of the JSON, else its first
        endpoint (Kafka writes them null when there is no PLAINTEXT listener)."""
        what = f"/brokers/ids/{node_id}"
        obj = _load(data, what)
        raw_map = obj.get("listener_security_protocol_map") or {}
        if not isinstance(raw_map, dict):
            raise ValueError(f"{what}: listener_security_protocol_map is not an object")
        protocols = {str(k): str(v) for k, v in raw_map.items()}
        raw_endpoints = obj.get("endpoints") or []
        if not isinstance(raw_endpoints, list) or not all(
            isinstance(e, str) for e in raw_endpoints
        ):
            raise ValueError(f"{what}: endpoints is not a list of strings")
        # a listener named after a protocol needs no map entry (Kafka's default map)
        protocols = {**{p: p for p in SECURITY_PROTOCOLS}, **protocols}
        endpoints = tuple(EndPoint.parse(e, protocols, what) for e in raw_endpoints)
        host = obj.get("host")
        port = obj.get("port")
        chosen = next((e for e in endpoints if e.listener_name == listener_name), None)
        if chosen is not None:
            host, port = chosen.host, chosen.port
        elif not isinstance(host, str) or not isinstance(port, int) or port < 0:
            if not endpoints:
                raise ValueError(f"{what}: no host and port and no endpoints")
            host, port = endpoints[0].host, endpoints[0].port
        rack = obj.get("rack")
        if rack is not None and not isinstance(rack, str):
            raise ValueError(f"{what}: rack is not a string: {rack!r}")
        if endpoints == (EndPoint("PLAINTEXT", host, port, "PLAINTEXT"),):
            endpoints = ()  # the single default listener: the same as no endpoints
        return BrokerRegistrationInfo(
            node_id=node_id, host=host, port=port, rack=rack, endpoints=endpoints
        )


# ---------------------------------------------------------------------------------------------
# Topics and partitions


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """The content of ``/brokers/topics/<t>``.

    ``partitions`` maps each partition to its full replica list in preference order (the first
    is the preferred leader); during a reassignment it holds the union of the original and the
    target replicas, and ``adding_replicas`` / ``removing_replicas`` say which are which
    (KIP-455). Partitions not being reassigned are absent from those two maps.
    """

    partitions: Mapping[int, tuple[int, ...]]
    adding_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    topic_id: str | None = None


class TopicsZNode:
    path = "/brokers/topics"


class TopicZNode:
    """``/brokers/topics/<t>``: the replica assignment, version 3 of Kafka's format."""

    @staticmethod
    def path(topic: str) -> str:
        return f"{TopicsZNode.path}/{topic}"

    @staticmethod
    def encode(assignment: TopicAssignment) -> bytes:
        def as_json(m: Mapping[int, Sequence[int]], skip_empty: bool) -> dict[str, list[int]]:
            return {
                str(p): list(replicas)
                for p, replicas in sorted(m.items())
                if replicas or not skip_empty
            }

        obj: dict[str, Any] = {
            "version": 3 if assignment.topic_id is not None else 2,
            "partitions": as_json(assignment.partitions, False),
            "adding_replicas": as_json(assignment.adding_replicas, True),
            "removing_replicas": as_json(assignment.removing_replicas, True),
        }
        if assignment.topic_id is not None:
            obj["topic_id"] = assignment.topic_id
        return _json(obj)

    @staticmethod
    def decode(topic: str, data: bytes | None) -> TopicAssignment:
        """Reads versions 1 to 3 (1 has no adding/removing replicas, 1 and 2 no topic id)."""
        what = f"/brokers/topics/{topic}"
        obj = _load(data, what)

        def as_map(value: Any) -> dict[int, tuple[int, ...]]:
            if value is None:
                return {}
            if not isinstance(value, dict):
                raise ValueError(f"{what}: not a partition map: {value!r}")
            try:
                return {int(p): _int_list(r, what) for p, r in value.items()}
            except ValueError as e:
                raise ValueError(f"{what}: {e}") from None

        partitions = as_map(obj.get("partitions"))
        topic_id = obj.get("topic_id")
        if topic_id is not None and not isinstance(topic_id, str):
            raise ValueError(f"{what}: topic_id is not a string")
        return TopicAssignment(
            partitions=partitions,
            adding_replicas={p: r for p, r in as_map(obj.get("adding_replicas")).items() if r},
            removing_replicas={p: r for p, r in as_map(obj.get("removing_replicas")).items() if r},
            topic_id=topic_id,
        )


class TopicPartitionsZNode:
    @staticmethod
    def path(topic: str) -> str:
        return f"{TopicZNode.path(topic)}/partitions"


class TopicPartitionZNode:
    @staticmethod
    def path(tp: TopicPartition) -> str:
        return f"{TopicPartitionsZNode.path(tp.topic)}/{tp.partition}"


@dataclass(frozen=True, slots=True)
class LeaderIsrAndControllerEpoch:
    """A partition's state: ``/brokers/topics/<t>/partitions/<p>/state`` and its version.

    ``partition_epoch`` is the state znode's zkVersion (it is not in the JSON): every write
    of the state is conditional on it, so it counts the writes. ``leader`` is
    :data:`NO_LEADER` (-1) when the partition has none. ``leader_recovery_state`` is 1
    (RECOVERING) after an unclean election until the leader's next ISR change.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    partition_epoch: int = INITIAL_PARTITION_EPOCH
    leader_recovery_state: int = LEADER_RECOVERY_RECOVERED


class TopicPartitionStateZNode:
    """``/brokers/topics/<t>/partitions/<p>/state``, version 1 of Kafka's format."""

    @staticmethod
    def path(tp: TopicPartition) -> str:
        return f"{TopicPartitionZNode.path(tp)}/state"

    @staticmethod
    def encode(state: LeaderIsrAndControllerEpoch) -> bytes:
        obj: dict[str, Any] = {
            "version": 1,
            "leader": state.leader,
            "leader_epoch": state.leader_epoch,
            "controller_epoch": state.controller_epoch,
            "isr": list(state.isr),
        }
        if state.leader_recovery_state != LEADER_RECOVERY_RECOVERED:
            obj["leader_recovery_state"] = state.leader_recovery_state
        return _json(obj)

    @staticmethod
    def decode(data: bytes | None, zk_version: int) -> LeaderIsrAndControllerEpoch:
        what = "partition state"
        obj = _load(data, what)
        recovery = obj.get("leader_recovery_state", LEADER_RECOVERY_RECOVERED)
        if recovery not in (LEADER_RECOVERY_RECOVERED, LEADER_RECOVERY_RECOVERING):
            raise ValueError(f"{what}: bad leader_recovery_state {recovery!r}")
        return LeaderIsrAndControllerEpoch(
            leader=_int(obj, "leader", what),
            leader_epoch=_int(obj, "leader_epoch", what),
            isr=_int_list(obj.get("isr"), what),
            controller_epoch=_int(obj, "controller_epoch", what),
            partition_epoch=zk_version,
            leader_recovery_state=recovery,
        )


# ---------------------------------------------------------------------------------------------
# Configs


class ConfigZNode:
    path = "/config"


class ConfigEntityTypeZNode:
    """``/config/topics``."""

    path = "/config/topics"


class ConfigEntityZNode:
    """``/config/topics/<t>``: the topic's config overrides (Kafka names, string values)."""

    @staticmethod
    def path(topic: str) -> str:
        return f"{ConfigEntityTypeZNode.path}/{topic}"

    @staticmethod
    def encode(config: Mapping[str, str]) -> bytes:
        return _json({"version": 1, "config": dict(sorted(config.items()))})

    @staticmethod
    def decode(data: bytes | None) -> dict[str, str]:
        """The overrides; ``{}`` for an empty znode (Kafka's ``ConfigEntityZNode.decode``)."""
        if not data:
            return {}
        obj = _load(data, "topic config")
        config = obj.get("config") or {}
        if not isinstance(config, dict):
            raise ValueError("topic config: 'config' is not an object")
        return {str(k): str(v) for k, v in config.items()}


class UserConfigZNode:
    """``/config/users/<sanitized user>``: a user's SCRAM credentials (and quotas), as
    ``{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,
    iterations=4096"}}``; the name is URL-encoded (Kafka's ``Sanitizer.sanitize``). Encoded and
    decoded with :class:`ConfigEntityZNode`."""

    path_root = "/config/users"

    @staticmethod
    def path(user: str) -> str:
        return f"{UserConfigZNode.path_root}/{UserConfigZNode.sanitize(user)}"

    @staticmethod
    def sanitize(user: str) -> str:
        """URL-encoding with ``*`` and ``~`` kept and spaces as ``%20`` (Kafka's Sanitizer)."""
        return urllib.parse.quote(user, safe="*~")

    @staticmethod
    def desanitize(name: str) -> str:
        return urllib.parse.unquote(name)


class BrokerConfigZNode:
    """``/config/brokers/<id>`` and ``/config/brokers/<default>``: a broker's dynamic configs
    and the cluster-wide dynamic default (Kafka's ``ConfigEntityZNode`` of the ``brokers``
    entity type, ``ConfigEntityName.DEFAULT``). Encoded and decoded with
    :class:`ConfigEntityZNode`."""

    path_root = "/config/brokers"
    default = "<default>"
    """The entity name of the cluster-wide default (Kafka's ``ConfigEntityName.DEFAULT``)."""

    @staticmethod
    def path(broker: int | None) -> str:
        """The znode of ``broker``'s configs; ``None``: the cluster-wide default's."""
        name = BrokerConfigZNode.default if broker is None else str(broker)
        return f"{BrokerConfigZNode.path_root}/{name}"

    @staticmethod
    def entity(broker: int | None) -> str:
        """The ``entity_path`` of a change notification for ``broker`` (``None``: default)."""
        return BrokerConfigZNode.path(broker)[len(ConfigZNode.path) + 1 :]


class GroupConfigZNode:
    """``/config/groups/<group>``: a consumer or share group's configs (Kafka 4's
    ``GroupConfig`` names: ``consumer.session.timeout.ms``, ...), URL-encoded as a user's
    name is. Encoded and decoded with :class:`ConfigEntityZNode`."""

    path_root = "/config/groups"

    @staticmethod
    def path(group: str) -> str:
        return f"{GroupConfigZNode.path_root}/{urllib.parse.quote(group, safe='*~')}"

    @staticmethod
    def group_of(child: str) -> str:
        """The group id of a child of :attr:`path_root`."""
        return urllib.parse.unquote(child)

    @staticmethod
    def entity(group: str) -> str:
        return GroupConfigZNode.path(group)[len(ConfigZNode.path) + 1 :]


class ConfigEntityChangeNotificationZNode:
    """``/config/changes``: sequential notifications that a config changed."""

    path = "/config/changes"


class ConfigEntityChangeNotificationSequenceZNode:
    """``/config/changes/config_change_<seq>``, version 2: ``entity_path`` names the entity."""

    prefix = "config_change_"

    @staticmethod
    def path_prefix() -> str:
        return f"{ConfigEntityChangeNotificationZNode.path}/config_change_"

    @staticmethod
    def encode(topic: str) -> bytes:
        return _json({"version": 2, "entity_path": f"topics/{topic}"})

    @staticmethod
    def encode_user(user: str) -> bytes:
        """The notice of a change to ``/config/users/<user>``."""
        return _json({"version": 2, "entity_path": f"users/{UserConfigZNode.sanitize(user)}"})

    @staticmethod
    def encode_entity(entity_path: str) -> bytes:
        """The notice of a change to ``/config/<entity_path>`` (``brokers/<default>``,
        ``groups/<g>``: see :meth:`BrokerConfigZNode.entity`, :meth:`GroupConfigZNode.entity`)."""
        return _json({"version": 2, "entity_path": entity_path})

    @staticmethod
    def decode_entity(data: bytes | None) -> str:
        """The ``entity_path`` the notification names (``topics/t``, ``brokers/<default>``,
        ...); ``ValueError`` if it names none."""
        obj = _load(data, "config change")
        entity = obj.get("entity_path")
        if not isinstance(entity, str):
            raise ValueError("config change: no entity_path")
        return entity

    @staticmethod
    def decode(data: bytes | None) -> str | None:
        """The topic the notification names, or ``None`` for another entity type."""
        obj = _load(data, "config change")
        entity = obj.get("entity_path")
        if not isinstance(entity, str):
            raise ValueError("config change: no entity_path")
        kind, _, name = entity.partition("/")
        return name if kind == "topics" and name else None


# ---------------------------------------------------------------------------------------------
# Admin hand-offs


class AdminZNode:
    path = "/admin"


class DeleteTopicsZNode:
    path = "/admin/delete_topics"


class DeleteTopicsTopicZNode:
    """``/admin/delete_topics/<t>``: the topic is to be deleted (no data)."""

    @staticmethod
    def path(topic: str) -> str:
        return f"{DeleteTopicsZNode.path}/{topic}"


def _encode_partitions(partitions: Iterable[TopicPartition]) -> bytes:
    return _json(
        {
            "version": 1,
            "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in partitions],
        }
    )


def _decode_entries(data: bytes | None, what: str) -> list[dict[str, Any]]:
    obj = _load(data, what)
    entries = obj.get("partitions")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ValueError(f"{what}: 'partitions' is not a list of objects")
    for e in entries:
        if not isinstance(e.get("topic"), str):
            raise ValueError(f"{what}: entry without a topic: {e!r}")
        _int(e, "partition", what)
    return entries


class ReassignPartitionsZNode:
    """``/admin/reassign_partitions``: reassignments for the controller to start.

    Maps each partition to its target replicas, or to ``None`` to cancel its ongoing
    reassignment (odradek's ``"cancel": true``).
    """

    path = "/admin/reassign_partitions"

    @staticmethod
    def encode(reassignments: Mapping[TopicPartition, Sequence[int] | None]) -> bytes:
        entries: list[dict[str, Any]] = []
        for tp, replicas in sorted(reassignments.items()):
            entry: dict[str, Any] = {"topic": tp.topic, "partition": tp.partition}
            if replicas is None:
                entry["replicas"] = []
                entry["cancel"] = True
            else:
                entry["replicas"] = list(replicas)
            entries.append(entry)
        return _json({"version": 1, "partitions": entries})

    @staticmethod
    def decode(data: bytes | None) -> dict[TopicPartition, tuple[int, ...] | None]:
        what = ReassignPartitionsZNode.path
        out: dict[TopicPartition, tuple[int, ...] | None] = {}
        for e in _decode_entries(data, what):
            tp = TopicPartition(e["topic"], e["partition"])
            out[tp] = None if e.get("cancel") is True else _int_list(e.get("replicas"), what)
        return out


class PreferredReplicaElectionZNode:
    """``/admin/preferred_replica_election``: partitions to move to their preferred leader."""

    path = "/admin/preferred_replica_election"

    @staticmethod
    def encode(partitions: Iterable[TopicPartition]) -> bytes:
        return _encode_partitions(sorted(set(partitions)))

    @staticmethod
    def decode(data: bytes | None) -> set[TopicPartition]:
        entries = _decode_entries(data, PreferredReplicaElectionZNode.path)
        return {TopicPartition(e["topic"], e["partition"]) for e in entries}


class UncleanLeaderElectionZNode:
    """``/admin/unclean_leader_election`` (odradek): leaderless partitions to elect any live
    replica for, ISR or not. Same format as the preferred replica election znode."""

    path = "/admin/unclean_leader_election"

    @staticmethod
    def encode(partitions: Iterable[TopicPartition]) -> bytes:
        return _encode_partitions(sorted(set(partitions)))

    @staticmethod
    def decode(data: bytes | None) -> set[TopicPartition]:
        entries = _decode_entries(data, UncleanLeaderElectionZNode.path)
        return {TopicPartition(e["topic"], e["partition"]) for e in entries}


# ---------------------------------------------------------------------------------------------
# Cluster id


class ClusterZNode:
    path = "/cluster"


class ClusterIdZNode:
    """``/cluster/id``: ``{"version":"1","id":"<id>"}`` (Kafka writes the version as text)."""

    path = "/cluster/id"

    @staticmethod
    def encode(cluster_id: str) -> bytes:
        return _json({"version": "1", "id": cluster_id})

    @staticmethod
    def decode(data: bytes | None) -> str:
        cluster_id = _load(data, ClusterIdZNode.path).get("id")
        if not isinstance(cluster_id, str) or not cluster_id:
            raise ValueError("/cluster/id: no id")
        return cluster_id


# ---------------------------------------------------------------------------------------------
# ACLs (Kafka's ZkAclStore, ResourceZNode and the ACL change stores)


class AclZNode:
    """The ACLs of one resource pattern: ``/kafka-acl/<Type>/<name>`` (LITERAL) or
    ``/kafka-acl-extended/prefixed/<Type>/<name>`` (PREFIXED), updated conditionally on the
    znode's version; an empty one is deleted."""

    LITERAL_ROOT = "/kafka-acl"
    PREFIXED_ROOT = "/kafka-acl-extended/prefixed"

    @staticmethod
    def root(pattern_type: PatternType) -> str:
        if pattern_type is PatternType.PREFIXED:
            return AclZNode.PREFIXED_ROOT
        return AclZNode.LITERAL_ROOT

    @staticmethod
    def path(pattern: ResourcePattern) -> str:
        if "/" in pattern.name:
            raise ValueError(f"an ACL's resource name cannot hold '/': {pattern.name!r}")
        root = AclZNode.root(pattern.pattern_type)
        return f"{root}/{pattern.resource_type.kafka_name}/{pattern.name}"

    @staticmethod
    def encode(entries: Iterable[AccessControlEntry]) -> bytes:
        return _json(
            {
                "version": 1,
                "acls": [
                    {
                        "principal": e.principal,
                        "permissionType": e.permission_type.kafka_name,
                        "operation": e.operation.kafka_name,
                        "host": e.host,
                    }
                    for e in sorted(entries)
                ],
            }
        )

    @staticmethod
    def decode(data: bytes | None, what: str) -> frozenset[AccessControlEntry]:
        """The entries; an empty znode has none. Raises ``ValueError``."""
        if not data:
            return frozenset()
        entries = []
        for item in _load(data, what).get("acls") or []:
            if not isinstance(item, dict):
                raise ValueError(f"{what}: an ACL is not an object")
            try:
                entries.append(
                    AccessControlEntry(
                        principal=str(item["principal"]),
                        host=str(item["host"]),
                        operation=AclOperation.parse(str(item["operation"])),
                        permission_type=AclPermissionType.parse(str(item["permissionType"])),
                    )
                )
            except KeyError as e:
                raise ValueError(f"{what}: an ACL has no {e}") from None
        return frozenset(entries)


class AclChangeNotificationZNode:
    """Sequential change notices, one per changed resource pattern, that every broker watches:
    ``/kafka-acl-changes/acl_changes_<seq>`` holding ``Topic:orders`` for a literal pattern,
    ``/kafka-acl-extended-changes/acl_changes_<seq>`` holding JSON for a prefixed one."""

    LITERAL_PATH = "/kafka-acl-changes"
    EXTENDED_PATH = "/kafka-acl-extended-changes"
    PREFIX = "acl_changes_"

    @staticmethod
    def path_prefix(pattern: ResourcePattern) -> str:
        if pattern.pattern_type is PatternType.LITERAL:
            return f"{AclChangeNotificationZNode.LITERAL_PATH}/{AclChangeNotificationZNode.PREFIX}"
        return f"{AclChangeNotificationZNode.EXTENDED_PATH}/{AclChangeNotificationZNode.PREFIX}"

    @staticmethod
    def encode(pattern: ResourcePattern) -> bytes:
        if pattern.pattern_type is PatternType.LITERAL:
            return f"{pattern.resource_type.kafka_name}:{pattern.name}".encode()
        return _json(
            {
                "version": 1,
                "resourceType": pattern.resource_type.kafka_name,
                "name": pattern.name,
                "patternType": pattern.pattern_type.name,
            }
        )

    @staticmethod
    def decode(data: bytes | None, extended: bool) -> ResourcePattern:
        """Raises ``ValueError`` for a notice it cannot read."""
        if not data:
            raise ValueError("empty ACL change notification")
        if not extended:
            kind, sep, name = data.decode(errors="replace").partition(":")
            if not sep:
                raise ValueError(f"bad ACL change notification {data!r}")
            return ResourcePattern(ResourceType.parse(kind), name)
        obj = _load(data, "ACL change notification")
        return ResourcePattern(
            ResourceType.parse(str(obj.get("resourceType"))),
            str(obj.get("name")),
            PatternType.parse(str(obj.get("patternType"))),
        )


PERSISTENT_PATHS = (
    BrokerIdsZNode.path,
    TopicsZNode.path,
    ConfigEntityTypeZNode.path,
    ConfigEntityChangeNotificationZNode.path,
    DeleteTopicsZNode.path,
    ClusterZNode.path,
)
"""The persistent parents Kafka creates at startup (``KafkaZkClient.createTopLevelPaths``)."""


def _uuid_text(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def new_topic_id(random_bytes: bytes | None = None) -> str:
    """A topic id as Kafka prints its ``Uuid``: 16 random bytes, URL-safe base64, no padding.

    Like Kafka's ``Uuid.randomUuid`` it never returns the all-zero id, the metadata topic's
    id (1) or an id starting with ``-`` (unreadable on a command line). ``random_bytes`` (16
    bytes) makes it deterministic for tests.
    """
    while True:
        raw = random_bytes if random_bytes is not None else os.urandom(16)
        if len(raw) != 16:
            raise ValueError("a topic id is 16 bytes")
        text = _uuid_text(raw)
        value = int.from_bytes(raw, "big")
        if value > 1 and not text.startswith("-"):
            return text
        if random_bytes is not None:
            raise ValueError(f"reserved or unprintable topic id {text!r}")


def new_cluster_id() -> str:
    """A fresh cluster id, in the same form as a topic id (Kafka's ``CoreUtils.generateUuid``)."""
    return new_topic_id()


# ---------------------------------------------------------------------------------------------
# Producer ids


PRODUCER_ID_BLOCK_SIZE = 1000
"""Producer ids a broker claims at a time (Kafka's ``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``)."""


@dataclass(frozen=True, slots=True)
class ProducerIdsBlock:
    """Producer ids ``first..last`` (inclusive) claimed by broker ``broker_id``."""

    broker_id: int
    first: int
    size: int = PRODUCER_ID_BLOCK_SIZE

    @property
    def last(self) -> int:
        return self.first + self.size - 1

    @property
    def next_block_first_id(self) -> int:
        return self.first + self.size


class ProducerIdBlockZNode:
    """``/latest_producer_id_block``: the last block any broker claimed (Kafka's
    ``ProducerIdBlockZNode``). Start and end are decimal *strings*, end inclusive."""

    path = "/latest_producer_id_block"

    @staticmethod
    def encode(block: ProducerIdsBlock) -> bytes:
        return _json(
            {
                "version": 1,
                "broker": block.broker_id,
                "block_start": str(block.first),
                "block_end": str(block.last),
            }
        )

    @staticmethod
    def decode(data: bytes | None) -> ProducerIdsBlock:
        what = ProducerIdBlockZNode.path
        obj = _load(data, what)
        try:
            first = int(obj["block_start"])
            last = int(obj["block_end"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{what}: block_start/block_end are not integers: {obj!r}") from None
        if last < first:
            raise ValueError(f"{what}: block_end {last} is below block_start {first}")
        return ProducerIdsBlock(_int(obj, "broker", what), first, last - first + 1)
