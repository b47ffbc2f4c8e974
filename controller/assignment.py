"""Replica assignment for new topics (Kafka's ``AdminUtils.assignReplicasToBrokers``).

Three goals, in Kafka's words: spread the replicas evenly over the brokers; for the partitions
that have a replica on a given broker, spread their other replicas over the other brokers; and
when every broker has a rack, put each partition's replicas on different racks where possible.

Without racks: the first replica of partition ``p`` goes to broker ``(p + start) % n`` of the
broker list sorted by id, round robin; the others follow at a shift that grows by one each time
the first replicas wrap around the list, so partition ``n`` does not repeat partition 0's
followers. With racks, the same round robin runs over a *rack-alternated* broker list (one
broker from each rack in turn, racks sorted by name) and a follower is skipped while its rack
(or the broker itself) already holds a replica of the partition and some rack (broker) holds
none.

Pure functions; thread-safe.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from odradek.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
)

__all__ = ["assign_replicas", "rack_alternated_broker_list", "replica_index"]


def assign_replicas(
    num_partitions: int,
    replication_factor: int,
    brokers: Sequence[tuple[int, str | None]],
    start_index: int | None = None,
    rng: random.Random | None = None,
    start_partition_id: int = 0,
) -> dict[int, list[int]]:
    """Partition id → replica list (preference order) for ``num_partitions`` partitions.

    ``brokers`` holds ``(broker id, rack or None)``. ``start_index`` fixes both the position of
    the first leader and the initial follower shift (Kafka's ``fixedStartIndex``); ``None``
    draws them from ``rng``. Raises ``InvalidPartitionsError`` for ``num_partitions <= 0``,
    ``InvalidReplicationFactorError`` for a factor below 1 or above the number of brokers, and
    ``InvalidReplicaAssignmentError`` when only some brokers have a rack (Kafka's "enforced"
    rack-aware mode) or a broker id repeats.
    """
    if num_partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}."
        )
    ids = [b for b, _ in brokers]
    if len(set(ids)) != len(ids):
        raise InvalidReplicaAssignmentError(f"duplicate broker ids in {sorted(ids)}")
    rng = rng or random.Random()
    racks = dict(brokers)
    if all(rack is None for rack in racks.values()):
        arranged = sorted(ids)
        num_racks = 0
    elif any(rack is None for rack in racks.values()):
        raise InvalidReplicaAssignmentError(
            "Not all brokers have rack information for replica rack aware assignment."
        )
    else:
        rack_of = {b: str(rack) for b, rack in racks.items()}
        arranged = rack_alternated_broker_list(rack_of)
        num_racks = len(set(rack_of.values()))
    n = len(arranged)
    start = start_index if start_index is not None and start_index >= 0 else rng.randrange(n)
    shift = start_index if start_index is not None and start_index >= 0 else rng.randrange(n)
    out: dict[int, list[int]] = {}
    partition = max(0, start_partition_id)
    for _ in range(num_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        leader = arranged[first]
        replicas = [leader]
        if num_racks == 0:
            replicas.extend(
                arranged[replica_index(first, shift, j, n)] for j in range(replication_factor - 1)
            )
        else:
            racks_used = {racks[leader]}
            brokers_used = {leader}
            k = 0
            for _ in range(replication_factor - 1):
                while True:
                    broker = arranged[replica_index(first, shift * num_racks, k, n)]
                    k += 1
                    rack = racks[broker]
                    # Skip a broker whose rack already has a replica while some rack has none,
                    # or that already has one while some broker has none.
                    if (rack not in racks_used or len(racks_used) == num_racks) and (
                        broker not in brokers_used or len(brokers_used) == n
                    ):
                        replicas.append(broker)
                        racks_used.add(rack)
                        brokers_used.add(broker)
                        break
        out[partition] = replicas
        partition += 1
    return out


def rack_alternated_broker_list(broker_racks: Mapping[int, str]) -> list[int]:
    """Brokers taken one rack at a time, racks in name order, brokers in id order per rack.

    Kafka's example: racks ``rack1: 0,1,2``, ``rack2: 3,4,5``, ``rack3: 6,7,8`` give
    ``0, 3, 6, 1, 4, 7, 2, 5, 8``; uneven racks are skipped once exhausted.
    """
    by_rack: dict[str, list[int]] = {}
    for broker, rack in broker_racks.items():
        by_rack.setdefault(rack, []).append(broker)
    queues = [sorted(by_rack[rack]) for rack in sorted(by_rack)]
    out: list[int] = []
    depth = 0
    while len(out) < len(broker_racks):
        out.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    return out


def replica_index(first_replica_index: int, second_replica_shift: int, index: int, n: int) -> int:
    """Where the ``index``-th follower goes: never on the first replica's broker."""
    shift = 1 + (second_replica_shift + index) % (n - 1)
    return (first_replica_index + shift) % n
