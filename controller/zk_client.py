"""The controller's ZooKeeper adapter (Kafka's ``KafkaZkClient``, the parts a controller uses).

Reads decode znodes with :mod:`controller.zk_data`. Every write runs in one multi-operation
that first checks ``/controller_epoch`` against the version this controller wrote when it was
elected (Kafka's ``wrapRequestWithControllerEpochCheck``): if another controller has been
elected since, the check fails, nothing is written and :class:`ControllerMovedError` is raised.
Partition state updates are in addition conditional on the state znode's version (the partition
epoch): a mismatch raises :class:`StateWriteConflictError` and the caller re-reads.

Connection problems surface as kazoo's exceptions (``ConnectionLoss``, ``SessionExpiredError``);
callers decide whether to retry.

Thread-safety: as the underlying ``KazooClient``; every method is safe to call from any thread.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
)

from controller.context import LiveBroker
from controller.errors import ControllerMovedError, StateWriteConflictError
from controller.partition_creation import chunks, op_bytes
from controller.zk_data import (
    INITIAL_CONTROLLER_EPOCH,
    PERSISTENT_PATHS,
    BrokerConfigZNode,
    BrokerIdsZNode,
    BrokerIdZNode,
    ClusterIdZNode,
    ConfigEntityZNode,
    ControllerEpochZNode,
    ControllerZNode,
    DeleteTopicsTopicZNode,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
    TopicPartition,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicPartitionZNode,
    TopicsZNode,
    TopicZNode,
    new_cluster_id,
)

__all__ = ["ControllerZkClient", "get_or_create_cluster_id"]

_log = logging.getLogger(__name__)

Op = Callable[[TransactionRequest], None]


def get_or_create_cluster_id(zk: KazooClient) -> str:
    """The cluster id in ``/cluster/id``, creating it (a fresh id) if absent (Kafka's
    ``KafkaZkClient.getOrCreateClusterId``). Safe to race: the first writer wins."""
    zk.ensure_path("/cluster")
    try:
        data, _ = zk.get(ClusterIdZNode.path)
        return ClusterIdZNode.decode(data)
    except NoNodeError:
        pass
    try:
        zk.create(ClusterIdZNode.path, ClusterIdZNode.encode(new_cluster_id()))
    except NodeExistsError:
        pass
    data, _ = zk.get(ClusterIdZNode.path)
    return ClusterIdZNode.decode(data)


class ControllerZkClient:
    """ZooKeeper reads and fenced writes for the controller."""

    def __init__(self, zk: KazooClient, inter_broker_listener_name: str | None = None) -> None:
        """``inter_broker_listener_name``: brokers are read with that listener's address."""
        self._zk = zk
        self._listener = inter_broker_listener_name

    @property
    def zk(self) -> KazooClient:
        return self._zk

    @property
    def session_id(self) -> int | None:
        """The current ZooKeeper session's id, ``None`` when there is none."""
        client_id = self._zk.client_id
        return int(client_id[0]) if client_id else None

    # -- generic ----------------------------------------------------------------------------

    def get_data(self, path: str) -> tuple[bytes, Any] | None:
        """``(data, stat)`` of ``path``, ``None`` if it does not exist."""
        try:
            data, stat = self._zk.get(path)
        except NoNodeError:
            return None
        return bytes(data or b""), stat

    def get_children(self, path: str) -> list[str]:
        try:
            return sorted(str(c) for c in self._zk.get_children(path))
        except NoNodeError:
            return []

    def ensure_persistent_paths(self) -> None:
        for path in PERSISTENT_PATHS:
            self._zk.ensure_path(path)

    # -- controller election ----------------------------------------------------------------

    def get_controller(self) -> tuple[int, int] | None:
        """``(broker id, owning session id)`` of ``/controller``, ``None`` if absent."""
        found = self.get_data(ControllerZNode.path)
        if found is None:
            return None
        data, stat = found
        return ControllerZNode.decode(data), int(stat.ephemeralOwner)

    def get_controller_epoch(self) -> tuple[int, int] | None:
        """``(epoch, zkVersion)`` of ``/controller_epoch``, ``None`` if absent."""
        found = self.get_data(ControllerEpochZNode.path)
        if found is None:
            return None
        data, stat = found
        return ControllerEpochZNode.decode(data), int(stat.version)

    def register_controller_and_increment_epoch(
        self, node_id: int, timestamp_ms: int
    ) -> tuple[int, int]:
        """Become the controller: create ``/controller`` (ephemeral) and bump
        ``/controller_epoch`` in one multi (Kafka's
        ``registerControllerAndIncrementControllerEpoch``).

        Returns ``(new epoch, its zkVersion)``. Raises :class:`ControllerMovedError` if another
        node got there first.
        """
        current = self.get_controller_epoch()
        if current is None:
            try:
                self._zk.create(
                    ControllerEpochZNode.path,
                    ControllerEpochZNode.encode(INITIAL_CONTROLLER_EPOCH),
                )
                current = (INITIAL_CONTROLLER_EPOCH, 0)
            except NodeExistsError:
                current = self.get_controller_epoch()
                if current is None:
                    raise ControllerMovedError("/controller_epoch vanished") from None
        epoch, version = current
        new_epoch = epoch + 1
        txn = self._zk.transaction()
        txn.create(
            ControllerZNode.path, ControllerZNode.encode(node_id, timestamp_ms), ephemeral=True
        )
        txn.set_data(ControllerEpochZNode.path, ControllerEpochZNode.encode(new_epoch), version)
        results = txn.commit()
        failures = [r for r in results if isinstance(r, Exception)]
        if not failures:
            return new_epoch, int(results[1].version)
        if any(isinstance(r, (NodeExistsError, BadVersionError)) for r in failures):
            # We may have won anyway (a retried request): check who holds /controller.
            holder = self.get_controller()
            now = self.get_controller_epoch()
            if (
                holder is not None
                and holder[0] == node_id
                and holder[1] == self.session_id
                and now is not None
                and now[0] == new_epoch
            ):
                return now
            raise ControllerMovedError(
                f"controller election lost (controller {holder[0] if holder else None})"
            )
        raise _first_error(failures)

    def take_over_controller(
        self, node_id: int, gone: tuple[int, int], timestamp_ms: int
    ) -> tuple[int, int]:
        """Become the controller in place of ``gone_id``, whose process is gone but whose
        ZooKeeper session (and so its ephemeral ``/controller``) has not ended yet
        (:mod:`controller.controller_takeover`): delete its ``/controller``, create ours and bump
        ``/controller_epoch``, in one multi. ``gone`` is ``(broker id, owning session id)`` of
        the ``/controller`` found gone (:meth:`get_controller`): a controller elected since
        (even on the same node, restarted) is never taken over from.

        The multi is conditional on the ``/controller_epoch`` version read *before*
        ``/controller``: every election changes both in one multi, so if anyone was elected
        after that read (or ``/controller`` changed hands at all), the version check fails and
        nothing is written. The controller we replace is fenced like any replaced controller:
        each of its writes checks the epoch version it won, which has moved on. Its session,
        when it ends, takes only its own ephemerals with it: ``/controller`` is ours by then.

        Returns ``(new epoch, its zkVersion)``. Raises :class:`ControllerMovedError` when
        ``/controller`` is not (or no longer) held by ``gone``.
        """
        gone_id = gone[0]
        current = self.get_controller_epoch()
        found = self.get_data(ControllerZNode.path)
        if current is None or found is None:
            raise ControllerMovedError("no controller to take over from")
        data, stat = found
        if (ControllerZNode.decode(data), int(stat.ephemeralOwner)) != gone:
            raise ControllerMovedError(f"controller {gone_id} no longer holds the role")
        epoch, version = current
        txn = self._zk.transaction()
        txn.delete(ControllerZNode.path, stat.version)
        txn.create(
            ControllerZNode.path, ControllerZNode.encode(node_id, timestamp_ms), ephemeral=True
        )
        txn.set_data(ControllerEpochZNode.path, ControllerEpochZNode.encode(epoch + 1), version)
        results = txn.commit()
        failures = [r for r in results if isinstance(r, Exception)]
        if not failures:
            return epoch + 1, int(results[2].version)
        if any(isinstance(r, (NodeExistsError, NoNodeError, BadVersionError)) for r in failures):
            raise ControllerMovedError(f"taking over from controller {gone_id} lost a race")
        raise _first_error(failures)

    def delete_controller(self, epoch_zk_version: int) -> None:
        """Delete ``/controller``, fenced (an active controller resigning). Absent is fine."""
        try:
            self._commit([lambda t: t.delete(ControllerZNode.path)], epoch_zk_version)
        except NoNodeError:
            pass

    def delete_controller_if_owned(self) -> bool:
        """Delete ``/controller`` if this session owns it (a controller that lost its epoch but
        still holds the ephemeral, so that a new election can run)."""
        found = self.get_data(ControllerZNode.path)
        if found is None or int(found[1].ephemeralOwner) != self.session_id:
            return False
        try:
            self._zk.delete(ControllerZNode.path, version=found[1].version)
        except (NoNodeError, BadVersionError):
            return False
        return True

    # -- reads ------------------------------------------------------------------------------

    def get_all_brokers(self) -> dict[int, LiveBroker]:
        """Registered brokers with their epochs; unreadable registrations are skipped."""
        out: dict[int, LiveBroker] = {}
        for child in self.get_children(BrokerIdsZNode.path):
            try:
                node_id = int(child)
            except ValueError:
                continue
            found = self.get_data(BrokerIdZNode.path(node_id))
            if found is None:
                continue
            data, stat = found
            try:
                info = BrokerIdZNode.decode(node_id, data, self._listener)
            except ValueError as e:
                _log.error("ignoring broker registration %s: %s", node_id, e)
                continue
            out[node_id] = LiveBroker(info=info, epoch=int(stat.czxid))
        return out

    def get_all_topics(self) -> list[str]:
        return self.get_children(TopicsZNode.path)

    def get_topic_assignment(self, topic: str) -> TopicAssignment | None:
        found = self.get_data(TopicZNode.path(topic))
        if found is None:
            return None
        return TopicZNode.decode(topic, found[0])

    def get_partition_state(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        found = self.get_data(TopicPartitionStateZNode.path(tp))
        if found is None:
            return None
        data, stat = found
        return TopicPartitionStateZNode.decode(data, int(stat.version))

    def get_partition_states(
        self, partitions: Iterable[TopicPartition], pipeline: int = 1_000
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """The states of ``partitions`` that have one, read with up to ``pipeline`` requests in
        flight (Kafka's controller reads them asynchronously too): one round trip per batch
        instead of one per partition, which made a failover over 50,000 partitions take
        tens of seconds."""
        wanted = list(partitions)
        out: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        for start in range(0, len(wanted), pipeline):
            batch = wanted[start : start + pipeline]
            pending = [(tp, self._zk.get_async(TopicPartitionStateZNode.path(tp))) for tp in batch]
            for tp, result in pending:
                try:
                    data, stat = result.get()
                except NoNodeError:
                    continue
                out[tp] = TopicPartitionStateZNode.decode(bytes(data or b""), int(stat.version))
        return out

    def get_topic_config(self, topic: str) -> dict[str, str]:
        found = self.get_data(ConfigEntityZNode.path(topic))
        if found is None:
            return {}
        try:
            return ConfigEntityZNode.decode(found[0])
        except ValueError as e:
            _log.error("ignoring unreadable config of topic %s: %s", topic, e)
            return {}

    def get_broker_config(self, broker: int | None) -> dict[str, str]:
        """A broker's dynamic configs (``None``: the cluster-wide default's); ``{}`` if none."""
        path = BrokerConfigZNode.path(broker)
        found = self.get_data(path)
        if found is None:
            return {}
        try:
            return ConfigEntityZNode.decode(found[0])
        except ValueError as e:
            _log.error("ignoring unreadable dynamic broker configs in %s: %s", path, e)
            return {}

    # -- fenced writes ----------------------------------------------------------------------

    def create_partition_state(
        self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch, epoch_zk_version: int
    ) -> LeaderIsrAndControllerEpoch:
        """Create the state znode (and its parents). Raises ``NodeExistsError`` if it exists,
        ``NoNodeError`` if the topic znode is gone."""
        for parent in (TopicPartitionsZNode.path(tp.topic), TopicPartitionZNode.path(tp)):
            try:
                self._commit([_create(parent, b"")], epoch_zk_version)
            except NodeExistsError:
                pass
        path = TopicPartitionStateZNode.path(tp)
        self._commit([_create(path, TopicPartitionStateZNode.encode(state))], epoch_zk_version)
        return _with_version(state, 0)

    def create_partition_states(
        self,
        states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
        epoch_zk_version: int,
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch | NodeExistsError | NoNodeError]:
        """Create many partitions' state znodes (and parents) in fenced multis of bounded size
        (:func:`controller.partition_creation.chunks`: one znode per partition-state write,
        whatever the count, stays far under ``jute.maxbuffer``), in partition order. A chunk
        that fails because a znode exists or the topic is gone is redone one partition at a
        time, so each partition gets its own outcome: the state with its version, or the
        ``NodeExistsError`` / ``NoNodeError``. A controller that stops half-way leaves whole
        partitions created or not (never a state without its parents); its successor creates
        the rest. Raises :class:`ControllerMovedError`."""
        for topic in sorted({tp.topic for tp in states}):
            try:
                self._commit([_create(TopicPartitionsZNode.path(topic), b"")], epoch_zk_version)
            except (NodeExistsError, NoNodeError):
                pass  # exists already / the topic is gone: the per-partition path says which
        items = []
        for tp in sorted(states):
            data = TopicPartitionStateZNode.encode(states[tp])
            parent, path = TopicPartitionZNode.path(tp), TopicPartitionStateZNode.path(tp)
            items.append((tp, parent, path, data, op_bytes(parent) + op_bytes(path, len(data))))
        out: dict[TopicPartition, LeaderIsrAndControllerEpoch | NodeExistsError | NoNodeError] = {}
        for chunk in chunks(items, size=lambda item: item[4], ops=lambda _item: 2):
            ops: list[Op] = []
            for _, parent, path, data, _ in chunk:
                ops.extend((_create(parent, b""), _create(path, data)))
            try:
                self._commit(ops, epoch_zk_version)
            except (NodeExistsError, NoNodeError):
                for tp, *_ in chunk:
                    try:
                        out[tp] = self.create_partition_state(tp, states[tp], epoch_zk_version)
                    except (NodeExistsError, NoNodeError) as e:
                        out[tp] = e
                continue
            for tp, *_ in chunk:
                out[tp] = _with_version(states[tp], 0)
        return out

    def update_partition_state(
        self,
        tp: TopicPartition,
        state: LeaderIsrAndControllerEpoch,
        expected_version: int,
        epoch_zk_version: int,
    ) -> LeaderIsrAndControllerEpoch:
        """Write the state if the znode is at ``expected_version``; returns the state with its
        new version (the new partition epoch). Raises :class:`StateWriteConflictError` on a
        version mismatch and ``NoNodeError`` if the znode does not exist."""
        path = TopicPartitionStateZNode.path(tp)
        data = TopicPartitionStateZNode.encode(state)
        try:
            results = self._commit(
                [lambda t: t.set_data(path, data, expected_version)],
                epoch_zk_version,
            )
        except BadVersionError:
            raise StateWriteConflictError(path, expected_version) from None
        return _with_version(state, int(results[0].version))

    def set_topic_assignment(
        self,
        topic: str,
        assignment: TopicAssignment,
        epoch_zk_version: int,
        expected_version: int = -1,
    ) -> None:
        """Write the topic znode (if it is at ``expected_version``; -1: whatever its version).
        Raises ``BadVersionError`` on a mismatch."""
        path = TopicZNode.path(topic)
        data = TopicZNode.encode(assignment)
        self._commit([lambda t: t.set_data(path, data, expected_version)], epoch_zk_version)

    def get_topic_assignment_version(self, topic: str) -> tuple[TopicAssignment, int] | None:
        """The topic znode and its version."""
        found = self.get_data(TopicZNode.path(topic))
        if found is None:
            return None
        return TopicZNode.decode(topic, found[0]), int(found[1].version)

    def delete_path(self, path: str, epoch_zk_version: int, version: int = -1) -> bool:
        """Delete one znode, fenced; ``False`` if it was absent or not at ``version``."""
        try:
            self._commit([lambda t: t.delete(path, version)], epoch_zk_version)
        except (NoNodeError, BadVersionError):
            return False
        return True

    def delete_topic(self, topic: str, epoch_zk_version: int) -> None:
        """Remove a deleted topic's znodes: its partition states (children before parents) in
        fenced multis of bounded size, then, in one last multi, its assignment znode, its config
        and its deletion marker. A controller that stops half-way leaves the topic (and its
        marker) in place with fewer partition znodes; its successor resumes the deletion and
        removes what is left."""
        topic_path = TopicZNode.path(topic)
        below = [path for path in self._subtree(topic_path) if path != topic_path]
        for chunk in chunks(below, size=op_bytes):
            self._commit([_delete(path) for path in chunk], epoch_zk_version)
        ops = [
            _delete(path)
            for path in (
                topic_path,
                ConfigEntityZNode.path(topic),
                DeleteTopicsTopicZNode.path(topic),
            )
            if self._zk.exists(path) is not None
        ]
        if ops:
            self._commit(ops, epoch_zk_version)

    def _subtree(self, root: str) -> list[str]:
        """``root`` and its descendants, children before parents (absent root: [])."""
        if self._zk.exists(root) is None:
            return []
        out: list[str] = []
        for child in self.get_children(root):
            out.extend(self._subtree(f"{root}/{child}"))
        out.append(root)
        return out

    def _commit(self, ops: Iterable[Op], epoch_zk_version: int) -> list[Any]:
        """Run ``ops`` in one multi behind the controller epoch check; returns their results.

        Raises :class:`ControllerMovedError` if the check fails, else the first operation's
        error (``NodeExistsError``, ``NoNodeError``, ``BadVersionError``, ...).
        """
        txn = self._zk.transaction()
        txn.check(ControllerEpochZNode.path, epoch_zk_version)
        for op in ops:
            op(txn)
        results = txn.commit()
        check = results[0]
        if isinstance(check, Exception) and not isinstance(
            check, (RolledBackError, RuntimeInconsistency)
        ):
            raise ControllerMovedError(
                f"/controller_epoch is no longer at version {epoch_zk_version}: "
                f"another controller has been elected ({type(check).__name__})"
            )
        failures = [r for r in results[1:] if isinstance(r, Exception)]
        if failures:
            raise _first_error(failures)
        return list(results[1:])


def _first_error(failures: list[Exception]) -> Exception:
    for f in failures:
        if not isinstance(f, (RolledBackError, RuntimeInconsistency)):
            return f
    return failures[0]


def _create(path: str, data: bytes) -> Op:
    return lambda t: t.create(path, data)


def _delete(path: str) -> Op:
    return lambda t: t.delete(path)


def _with_version(state: LeaderIsrAndControllerEpoch, version: int) -> LeaderIsrAndControllerEpoch:
    return dataclasses.replace(state, partition_epoch=version)
