"""test_faults.py's leader and controller faults with librdkafka's idempotent producer as the
workload: confluent-kafka ``Producer``s (acks=all, enable.idempotence) on the nodes' Kafka
listeners, sending the same unique values at the same rate as the SDK's producers and recording
each delivery report into the same history (``Workload(producer="librdkafka")``). The checker
judges it exactly as the SDK's: nothing acknowledged lost or misplaced, nothing duplicated, each
producer's values in order, every replica the same.

What this adds to the SDK's runs is Kafka's own client on Kafka's wire protocol through a
leader change: librdkafka's retries of a batch whose answer was lost (the door's idempotent
producer state deciding duplicate or not), its producer id and epoch (InitProducerId), its
metadata refresh on NOT_LEADER_OR_FOLLOWER, and a connection refused or silent (a killed or
partitioned node) rather than a gRPC channel's. The consumers that read for the checker stay the
SDK's.

Two scenarios keep the suite's time bounded: the controller SIGKILLed, and the leader cut off
by iptables until its ZooKeeper session expires. librdkafka's leader kills are in
``test_faults.test_leader_killed_repeatedly``: one librdkafka producer beside the SDK's and
kafka-python's through 20 kills on one cluster, with its own stall distribution.
"""

from __future__ import annotations

import pytest

from tests.containers.cluster import Partition
from tests.containers.test_faults import kill_controller, partition_leader, run_scenario

pytestmark = pytest.mark.containers


def test_controller_killed_librdkafka(cluster, verdicts):
    """SIGKILL of the active controller under librdkafka's idempotent producer."""
    run_scenario(
        "kill controller (librdkafka)", cluster, kill_controller, verdicts, producer="librdkafka"
    )


def test_leader_partitioned_librdkafka(cluster, verdicts, partition: Partition):
    """Partition 0's leader cut off by iptables under librdkafka's idempotent producer."""
    run_scenario(
        "partition leader (librdkafka)",
        cluster,
        partition_leader(partition),
        verdicts,
        producer="librdkafka",
    )
