"""Broker failure and return: elections from the ISR, ISR shrink keeping the last member,
no unclean election by default, rejoining the ISR through AlterPartition."""

from __future__ import annotations

from functools import partial

from controller.zk_data import TopicPartition
from odradek.v1 import odradek_pb2 as pb
from tests.integration.controller.cluster import CTX, wait_for

TP = TopicPartition("t", 0)


def test_leader_death_elects_the_next_isr_replica(cluster):
    one, two, three = (cluster.add_broker(b) for b in (1, 2, 3))
    controller = cluster.add_controller(9)
    cluster.create_topic("t", {0: [1, 2, 3]})
    assert cluster.state(TP).leader == 1
    one.kill()
    state = cluster.wait_state(TP, lambda s: s.leader == 2, "leader 2")
    assert (state.isr, state.leader_epoch, state.controller_epoch) == ((2, 3), 1, controller.epoch)

    def new_leader_sent(broker):
        return [p for p in broker.leader_and_isr(TP) if p.leader_epoch == 1]

    for broker in (two, three):
        sent = wait_for(partial(new_leader_sent, broker), "LeaderAndIsr with the new leader")
        assert (sent[-1].leader, list(sent[-1].isr)) == (2, [2, 3])
        assert list(sent[-1].offline_replicas) == [1]
    wait_for(
        lambda: (md := two.last_metadata()) and [b.node_id for b in md.live_brokers] == [2, 3],
        "metadata without broker 1",
    )


def test_isr_keeps_its_last_member_and_no_unclean_election_by_default(cluster):
    one, two = cluster.add_broker(1), cluster.add_broker(2)
    cluster.add_controller(9)
    cluster.create_topic("t", {0: [1, 2]})
    two.kill()  # a follower dies: out of the ISR, leader epoch + 1
    state = cluster.wait_state(TP, lambda s: s.isr == (1,), "ISR [1]")
    assert (state.leader, state.leader_epoch) == (1, 1)
    one.kill()  # the last ISR member dies: no leader, the ISR keeps it
    state = cluster.wait_state(TP, lambda s: s.leader == -1, "no leader")
    assert (state.isr, state.leader_epoch) == ((1,), 2)

    two.start()  # not in the ISR: it may not lead (unclean election is disabled)
    wait_for(lambda: two.leader_and_isr(TP), "LeaderAndIsr to the returning broker")
    md = wait_for(
        lambda: (m := two.last_metadata()) and m.broker_epoch == two.epoch and m,
        "metadata for the new broker epoch",
    )
    [p] = [p for p in md.partition_states if p.topic == "t"]
    assert p.leader == -1
    assert cluster.state(TP) == state

    one.start()  # the last ISR member returns and leads again
    one.wait_known()
    state = cluster.wait_state(TP, lambda s: s.leader == 1, "leader 1 back")
    assert (state.isr, state.leader_epoch) == ((1,), 3)
    # Broker 2, a follower now, catches up; the leader adds it to the ISR.
    wait_for(lambda: [p for p in two.leader_and_isr(TP) if p.leader_epoch == 3], "follower LAI")
    result = cluster.alter_isr(TP, [1, 2])
    assert result.error_code == 0
    assert (result.leader_id, result.leader_epoch, list(result.isr)) == (1, 3, [1, 2])
    state = cluster.state(TP)
    assert state.isr == (1, 2) and state.leader_epoch == 3
    assert result.partition_epoch == state.partition_epoch


def test_unclean_election_when_the_topic_allows_it(cluster):
    one, two = cluster.add_broker(1), cluster.add_broker(2)
    cluster.add_controller(9)
    cluster.create_topic("t", {0: [1, 2]}, {"unclean.leader.election.enable": "true"})
    two.kill()
    cluster.wait_state(TP, lambda s: s.isr == (1,), "ISR [1]")
    one.kill()
    cluster.wait_state(TP, lambda s: s.leader == -1, "no leader")
    two.start()
    state = cluster.wait_state(TP, lambda s: s.leader == 2, "unclean leader 2")
    assert state.isr == (2,)
    assert state.leader_recovery_state == 1  # RECOVERING


def test_a_dynamic_cluster_wide_unclean_leader_election_enable_elects_at_once(cluster):
    # KIP-226's dynamic default (/config/brokers/<default>) reaches the controller through
    # its /config/changes notice; turned on, leaderless partitions of topics without an
    # override of their own elect a live out-of-sync replica (Kafka's
    # enableDefaultUncleanLeaderElection)
    one, two = cluster.add_broker(1), cluster.add_broker(2)
    cluster.add_controller(9)
    cluster.create_topic("t", {0: [1, 2]})
    two.kill()
    cluster.wait_state(TP, lambda s: s.isr == (1,), "ISR [1]")
    one.kill()
    cluster.wait_state(TP, lambda s: s.leader == -1, "no leader")
    two.start()
    two.wait_known()
    assert cluster.state(TP).leader == -1  # not in the ISR: the static default refuses it
    default = pb.ConfigResource(type=pb.CONFIG_RESOURCE_BROKER, name="")
    answer = cluster.admin.AlterConfigs(
        pb.AlterConfigsRequest(
            resources=[
                pb.AlterableResourceConfig(
                    resource=default, set={"unclean.leader.election.enable": "true"}
                )
            ]
        ),
        CTX,
    )
    assert [r.error_code for r in answer.resources] == [0]
    state = cluster.wait_state(TP, lambda s: s.leader == 2, "unclean leader 2")
    assert state.isr == (2,)


def test_unclean_election_on_request(cluster):
    one, two = cluster.add_broker(1), cluster.add_broker(2)
    cluster.add_controller(9)
    cluster.create_topic("t", {0: [1, 2]})
    two.kill()
    cluster.wait_state(TP, lambda s: s.isr == (1,), "ISR [1]")
    one.kill()
    cluster.wait_state(TP, lambda s: s.leader == -1, "no leader")
    request = pb.ElectLeadersRequest(
        election_type=pb.UNCLEAN,
        partitions=[pb.TopicPartition(topic="t", partition=0)],
        timeout_ms=10_000,
    )
    [nobody] = cluster.admin.ElectLeaders(request, CTX).partitions
    assert nobody.error_code == 83  # ELIGIBLE_LEADERS_NOT_AVAILABLE: no replica is live
    two.start()
    two.wait_known()
    [result] = cluster.admin.ElectLeaders(request, CTX).partitions
    assert result.error_code == 0
    state = cluster.state(TP)
    assert (state.leader, state.isr) == (2, (2,))
    [again] = cluster.admin.ElectLeaders(request, CTX).partitions
    assert again.error_code == 84  # ELECTION_NOT_NEEDED


def test_quickly_restarted_broker_loses_leadership_and_is_told_everything_again(cluster):
    one, _two = cluster.add_broker(1), cluster.add_broker(2)
    cluster.add_controller(9)
    cluster.create_topic("t", {0: [1, 2]})
    old_epoch = one.epoch
    one.kill()
    one.start()  # quickly back, with a larger broker epoch
    assert one.epoch > old_epoch
    state = cluster.wait_state(TP, lambda s: s.leader == 2, "leader moved to 2")
    lai = wait_for(
        lambda: [
            r
            for r in one.replication.requests(pb.LeaderAndIsrRequest)
            if r.broker_epoch == one.epoch
        ],
        "LeaderAndIsr with the new broker epoch",
    )
    assert lai[-1].partition_states[-1].leader in (1, 2)
    assert state.leader_epoch >= 1


def test_a_new_controller_cleans_up_after_brokers_that_died_without_a_controller(cluster):
    one, two, three = (cluster.add_broker(b) for b in (1, 2, 3))
    first = cluster.add_controller(8)
    cluster.create_topic("t", {0: [1, 2, 3], 1: [3, 1, 2]})
    cluster.kill_controller(first)
    one.kill()  # the leader of t-0 and a follower of t-1 die while nobody is in charge
    second = cluster.add_controller(9)
    s0 = cluster.wait_state(TP, lambda s: s.leader == 2, "t-0 led by 2")
    assert (s0.isr, s0.leader_epoch, s0.controller_epoch) == ((2, 3), 1, second.epoch)
    s1 = cluster.wait_state(TopicPartition("t", 1), lambda s: s.isr == (3, 2), "1 out of the ISR")
    assert (s1.leader, s1.leader_epoch) == (3, 1)
    wait_for(lambda: [p for p in three.leader_and_isr(TP) if p.leader == 2], "LAI to 3")
    assert two.epoch > 0
