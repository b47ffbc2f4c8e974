"""Fencing: every controller write checks /controller_epoch's version; state writes check the
partition epoch."""

from __future__ import annotations

import pytest

from controller.errors import ControllerMovedError, StateWriteConflictError
from controller.zk_client import ControllerZkClient
from controller.zk_data import (
    ControllerEpochZNode,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
    TopicPartition,
    TopicZNode,
)
from tests.integration.controller.cluster import close_client, new_client, wait_for

TP = TopicPartition("t", 0)


def test_writes_with_a_stale_controller_epoch_version_are_refused(zk_connect):
    a_zk, b_zk = new_client(zk_connect), new_client(zk_connect)
    try:
        a, b = ControllerZkClient(a_zk), ControllerZkClient(b_zk)
        a.ensure_persistent_paths()
        epoch, version = a.register_controller_and_increment_epoch(1, 0)
        assert (epoch, version) == (1, 1)
        with pytest.raises(ControllerMovedError):
            b.register_controller_and_increment_epoch(2, 0)  # /controller is taken
        a_zk.create(TopicZNode.path("t"), TopicZNode.encode(TopicAssignment({0: (1, 2)})))
        state = LeaderIsrAndControllerEpoch(1, 0, (1, 2), epoch)
        assert a.create_partition_state(TP, state, version).partition_epoch == 0

        moved = LeaderIsrAndControllerEpoch(2, 1, (2,), epoch)
        with pytest.raises(StateWriteConflictError):
            a.update_partition_state(TP, moved, expected_version=5, epoch_zk_version=version)
        assert a.get_partition_state(TP) == state

        # Another controller is elected meanwhile: /controller_epoch moves on.
        close_client(a_zk)
        a_zk = None
        new_epoch, new_version = b.register_controller_and_increment_epoch(2, 0)
        assert (new_epoch, new_version) == (2, 2)
        stale = ControllerZkClient(b_zk)
        with pytest.raises(ControllerMovedError):
            stale.update_partition_state(TP, moved, expected_version=0, epoch_zk_version=version)
        with pytest.raises(ControllerMovedError):
            stale.delete_topic("t", version)
        assert b.get_partition_state(TP) == state
        written = b.update_partition_state(TP, moved, expected_version=0, epoch_zk_version=2)
        assert written.partition_epoch == 1
        assert b.get_partition_state(TP) == written
    finally:
        close_client(a_zk)
        close_client(b_zk)


def test_a_controller_whose_epoch_moved_on_resigns_and_its_write_never_lands(cluster):
    one, _two = cluster.add_broker(1), cluster.add_broker(2)
    a = cluster.add_controller(8)
    assert cluster.active() is a
    cluster.create_topic("t", {0: [1, 2]})
    b = cluster.add_controller(9)
    # Simulate a controller elected behind a's back: /controller_epoch's version moves.
    cluster.observer.set(ControllerEpochZNode.path, ControllerEpochZNode.encode(2))
    one.kill()  # a must write a new leader: the epoch check fails, a resigns
    winner = wait_for(
        lambda: next((c for c in (a, b) if c.is_active and c.epoch == 3), None),
        "a controller with epoch 3",
    )
    assert cluster.active() is winner
    state = cluster.wait_state(TP, lambda s: s.leader == 2, "leader 2")
    # Written by the new controller only: a's fenced write (controller epoch 1) never landed.
    assert (state.controller_epoch, state.leader_epoch, state.isr) == (3, 1, (2,))


def test_a_takeover_fences_the_controller_it_replaces(zk_connect):
    a_zk, b_zk = new_client(zk_connect), new_client(zk_connect)
    try:
        a, b = ControllerZkClient(a_zk), ControllerZkClient(b_zk)
        a.ensure_persistent_paths()
        epoch, version = a.register_controller_and_increment_epoch(1, 0)
        held = a.get_controller()
        assert held == (1, a_zk.client_id[0])
        # a controller elected since (another session) is never taken over from
        with pytest.raises(ControllerMovedError):
            b.take_over_controller(2, (1, held[1] + 1), 0)
        with pytest.raises(ControllerMovedError):
            b.take_over_controller(2, (3, held[1]), 0)
        assert (a.get_controller(), a.get_controller_epoch()) == (held, (epoch, version))

        new_epoch, new_version = b.take_over_controller(2, held, 0)
        assert (new_epoch, new_version) == (epoch + 1, version + 1)
        assert b.get_controller() == (2, b_zk.client_id[0])
        # the replaced controller, its session still alive, can write nothing more
        a_zk.create(TopicZNode.path("t"), TopicZNode.encode(TopicAssignment({0: (1, 2)})))
        with pytest.raises(ControllerMovedError):
            a.create_partition_state(TP, LeaderIsrAndControllerEpoch(1, 0, (1, 2), epoch), version)
        with pytest.raises(ControllerMovedError):
            a.delete_controller(version)
        # its session's end leaves the successor's /controller alone
        close_client(a_zk)
        a_zk = None
        assert b.get_controller() == (2, b_zk.client_id[0])
        # nor can a second standby take over from the same, gone controller
        with pytest.raises(ControllerMovedError):
            b.take_over_controller(3, held, 0)
    finally:
        close_client(a_zk)
        close_client(b_zk)
