"""What the controller sends to brokers, batched per event (Kafka's
``ControllerBrokerRequestBatch``).

While it handles one event the controller records *intents* — "tell these brokers about this
partition", "stop this replica", "refresh everyone's metadata" — and at the end builds the
requests from the context as it then is, so each broker gets one request of each kind with the
latest state. Per broker the order is LeaderAndIsr, UpdateMetadata, StopReplica (Kafka's).

- **LeaderAndIsr** carries, for the partitions the broker replicates (full replica set, adding
  replicas included) that changed, the whole partition state, the live leaders' endpoints and
  the topics' config overrides.
- **UpdateMetadata** is a full snapshot for every live broker: live brokers, every partition
  not being deleted (partitions with no state yet appear with leader -1, leader epoch -1 and
  partition epoch -1), config overrides of every such topic, the cluster id.
- **StopReplica** names partitions with their leader epoch (-2 for topic deletion, which
  deletes whatever the epoch) and whether to delete the replica.

Every request carries the controller id and epoch and the receiving broker's epoch as the
controller knows it. Building is pure; a batch is not thread-safe (the event thread owns it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from controller.context import ControllerContext
from controller.zk_data import LEADER_DURING_DELETE, NO_LEADER, TopicPartition
from odradek.v1 import odradek_pb2 as pb

__all__ = [
    "RequestBatch",
    "BrokerRequest",
    "partition_state",
    "broker_info",
    "build_update_metadata",
    "build_leader_and_isr",
    "build_stop_replica",
]

Request = pb.LeaderAndIsrRequest | pb.UpdateMetadataRequest | pb.StopReplicaRequest


@dataclass(frozen=True, slots=True)
class BrokerRequest:
    """One request for one broker. ``deletion`` marks a StopReplica sent for topic deletion,
    whose answer the controller waits for."""

    broker_id: int
    request: Request
    deletion: bool = False


def broker_info(ctx: ControllerContext, broker_id: int) -> pb.BrokerInfo:
    info = ctx.live_brokers[broker_id].info
    return pb.BrokerInfo(
        node_id=info.node_id,
        host=info.host,
        port=info.port,
        rack=info.rack or "",
        endpoints=[
            pb.BrokerEndPoint(
                listener=e.listener_name,
                host=e.host,
                port=e.port,
                security_protocol=e.security_protocol,
            )
            for e in info.all_endpoints
        ],
    )


def partition_state(ctx: ControllerContext, tp: TopicPartition) -> pb.PartitionState:
    """The wire form of a partition's state and assignment."""
    assignment = ctx.assignments[tp]
    state = ctx.states.get(tp)
    out = pb.PartitionState(
        topic=tp.topic,
        partition=tp.partition,
        replicas=assignment.replicas,
        adding_replicas=assignment.adding_replicas,
        removing_replicas=assignment.removing_replicas,
        offline_replicas=ctx.offline_replicas(tp),
        topic_id=ctx.topic_ids.get(tp.topic, ""),
    )
    if state is None:
        out.controller_epoch = -1
        out.leader = NO_LEADER
        out.leader_epoch = -1
        out.partition_epoch = -1
    else:
        out.controller_epoch = state.controller_epoch
        out.leader = state.leader
        out.leader_epoch = state.leader_epoch
        out.isr.extend(state.isr)
        out.partition_epoch = state.partition_epoch
    return out


def _topic_configs(ctx: ControllerContext, topics: Iterable[str]) -> list[pb.TopicConfig]:
    return [
        pb.TopicConfig(name=t, configs=ctx.topic_configs.get(t, {})) for t in sorted(set(topics))
    ]


def build_update_metadata(
    ctx: ControllerContext, controller_id: int, broker_id: int
) -> pb.UpdateMetadataRequest:
    """The full metadata snapshot for ``broker_id``."""
    partitions = [tp for tp in sorted(ctx.assignments) if not ctx.is_deleting(tp.topic)]
    return pb.UpdateMetadataRequest(
        controller_id=controller_id,
        controller_epoch=ctx.epoch,
        broker_epoch=ctx.broker_epoch(broker_id),
        cluster_id=ctx.cluster_id,
        live_brokers=[broker_info(ctx, b) for b in sorted(ctx.live_brokers)],
        partition_states=[partition_state(ctx, tp) for tp in partitions],
        topic_configs=_topic_configs(ctx, (t for t in ctx.topic_ids if not ctx.is_deleting(t))),
    )


def build_leader_and_isr(
    ctx: ControllerContext, controller_id: int, broker_id: int, partitions: Iterable[TopicPartition]
) -> pb.LeaderAndIsrRequest | None:
    """LeaderAndIsr for the given partitions that have a state; ``None`` if there are none."""
    tps = [tp for tp in sorted(set(partitions)) if tp in ctx.states and tp in ctx.assignments]
    if not tps:
        return None
    leaders = sorted({ctx.states[tp].leader for tp in tps} & set(ctx.live_brokers) - {NO_LEADER})
    return pb.LeaderAndIsrRequest(
        controller_id=controller_id,
        controller_epoch=ctx.epoch,
        broker_epoch=ctx.broker_epoch(broker_id),
        partition_states=[partition_state(ctx, tp) for tp in tps],
        live_leaders=[broker_info(ctx, b) for b in leaders],
        topic_configs=_topic_configs(ctx, (tp.topic for tp in tps)),
    )


def build_stop_replica(
    ctx: ControllerContext,
    controller_id: int,
    broker_id: int,
    partitions: dict[TopicPartition, tuple[int, bool]],
) -> pb.StopReplicaRequest:
    """StopReplica for ``partitions``: partition → (leader epoch, delete)."""
    return pb.StopReplicaRequest(
        controller_id=controller_id,
        controller_epoch=ctx.epoch,
        broker_epoch=ctx.broker_epoch(broker_id),
        partitions=[
            pb.StopReplicaPartition(
                topic=tp.topic, partition=tp.partition, leader_epoch=epoch, delete_partition=delete
            )
            for tp, (epoch, delete) in sorted(partitions.items())
        ],
    )


@dataclass
class RequestBatch:
    """Intents collected while handling one event."""

    leader_and_isr: dict[int, set[TopicPartition]] = field(default_factory=dict)
    stop_replica: dict[int, dict[TopicPartition, tuple[int, bool]]] = field(default_factory=dict)
    deletion_stop_replica: dict[int, set[TopicPartition]] = field(default_factory=dict)
    update_metadata: bool = False

    def add_leader_and_isr(self, brokers: Iterable[int], tp: TopicPartition) -> None:
        for b in brokers:
            self.leader_and_isr.setdefault(b, set()).add(tp)
        self.update_metadata = True

    def add_stop_replica(
        self, broker_id: int, tp: TopicPartition, leader_epoch: int, delete: bool
    ) -> None:
        entries = self.stop_replica.setdefault(broker_id, {})
        previous = entries.get(tp)
        entries[tp] = (leader_epoch, delete or (previous is not None and previous[1]))
        self.update_metadata = True

    def add_deletion(self, broker_id: int, tp: TopicPartition) -> None:
        """StopReplica(delete, epoch -2) for topic deletion; its answer is awaited."""
        self.deletion_stop_replica.setdefault(broker_id, set()).add(tp)
        self.update_metadata = True

    def add_update_metadata(self) -> None:
        self.update_metadata = True

    def is_empty(self) -> bool:
        return not (
            self.leader_and_isr
            or self.stop_replica
            or self.deletion_stop_replica
            or self.update_metadata
        )

    def build(self, ctx: ControllerContext, controller_id: int) -> list[BrokerRequest]:
        """The requests, in sending order, for brokers that are registered; then clears the
        batch."""
        out: list[BrokerRequest] = []
        alive = set(ctx.live_brokers)
        for b in sorted(set(self.leader_and_isr) & alive):
            lai = build_leader_and_isr(ctx, controller_id, b, self.leader_and_isr[b])
            if lai is not None:
                out.append(BrokerRequest(b, lai))
        if self.update_metadata:
            out.extend(
                BrokerRequest(b, build_update_metadata(ctx, controller_id, b))
                for b in sorted(alive)
            )
        out.extend(
            BrokerRequest(b, build_stop_replica(ctx, controller_id, b, self.stop_replica[b]))
            for b in sorted(set(self.stop_replica) & alive)
        )
        for b in sorted(set(self.deletion_stop_replica) & alive):
            entries = dict.fromkeys(self.deletion_stop_replica[b], (LEADER_DURING_DELETE, True))
            out.append(
                BrokerRequest(b, build_stop_replica(ctx, controller_id, b, entries), deletion=True)
            )
        self.leader_and_isr.clear()
        self.stop_replica.clear()
        self.deletion_stop_replica.clear()
        self.update_metadata = False
        return out
