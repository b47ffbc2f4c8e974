"""Broker registration: the ephemeral znode, its czxid as broker epoch, re-registration."""

from __future__ import annotations

import threading

import pytest

from controller.registration import BrokerRegistration, NodeIdInUseError
from controller.zk_data import BrokerIdZNode, BrokerRegistrationInfo
from tests.integration.controller.cluster import (
    close_client,
    expire_session,
    new_client,
    wait_for,
)


def test_register_writes_kafkas_znode_and_returns_its_czxid(zk_connect):
    zk = new_client(zk_connect)
    try:
        reg = BrokerRegistration(zk, 7, "127.0.0.1", 9092, "rack-a")
        epoch = reg.register()
        data, stat = zk.get("/brokers/ids/7")
        assert epoch == stat.czxid == reg.broker_epoch
        assert stat.ephemeralOwner == zk.client_id[0]
        assert BrokerIdZNode.decode(7, data) == BrokerRegistrationInfo(
            7, "127.0.0.1", 9092, "rack-a"
        )
        assert reg.register() == epoch  # idempotent
        reg.deregister()
        assert zk.exists("/brokers/ids/7") is None
        assert reg.broker_epoch == -1
        assert reg.register() > epoch  # a new registration, a larger epoch
    finally:
        close_client(zk)


def test_a_second_live_process_cannot_take_the_same_id(zk_connect):
    first, second = new_client(zk_connect), new_client(zk_connect)
    try:
        BrokerRegistration(first, 1, "127.0.0.1", 1, None).register()
        with pytest.raises(NodeIdInUseError, match="node id 1"):
            BrokerRegistration(second, 1, "127.0.0.1", 2, None).register()
        close_client(first)  # the holder goes away: the id is free
        first = None
        assert BrokerRegistration(second, 1, "127.0.0.1", 2, None).register() > 0
    finally:
        close_client(first)
        close_client(second)


def test_session_expiry_re_registers_with_a_new_epoch(zk_connect):
    zk = new_client(zk_connect)
    changes: list[int] = []
    changed = threading.Event()

    def on_epoch_change(epoch: int) -> None:
        changes.append(epoch)
        changed.set()

    try:
        reg = BrokerRegistration(zk, 3, "127.0.0.1", 9093, None, on_epoch_change)
        old = reg.register()
        expire_session(zk_connect, zk)  # the server expires the session zk was using
        wait_for(changed.is_set, "the re-registration")
        assert changes == [reg.broker_epoch]
        assert reg.broker_epoch > old
        _, stat = zk.get("/brokers/ids/3")
        assert stat.czxid == reg.broker_epoch
        assert stat.ephemeralOwner == zk.client_id[0]
    finally:
        close_client(zk)
