"""Broker registration: the ephemeral znode, its czxid as broker epoch, re-registration."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from controller.registration import BrokerRegistration, NodeIdInUseError
from controller.zk_data import BrokerIdZNode, BrokerRegistrationInfo
from odradek.clock import SystemClock
from tests.integration.controller.cluster import (
    close_client,
    expire_session,
    new_client,
    wait_for,
)

CLOCK = SystemClock()


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


def _once_waiting(
    caplog: pytest.LogCaptureFixture, hold_s: float, action: Callable[[], Any]
) -> None:
    """Runs ``action`` in a thread once a ``register`` has logged that it waits, ``hold_s``
    later: the action happens during the wait, whatever the machine's load."""

    def run() -> None:
        wait_for(
            lambda: any("waiting up to" in r.getMessage() for r in list(caplog.records)),
            "register to wait",
        )
        time.sleep(hold_s)
        action()

    threading.Thread(target=run, daemon=True).start()


def test_register_waits_for_a_lingering_registration_to_go(zk_connect, caplog):
    """A node restarted right after a crash finds its old session's znode: it waits for it,
    up to ``wait_ms``, instead of failing at once; a live holder still makes it fail."""
    caplog.set_level(logging.INFO, logger="controller.registration")
    first, second = new_client(zk_connect), new_client(zk_connect)
    try:
        BrokerRegistration(first, 4, "127.0.0.1", 1, None).register()
        started = CLOCK.monotonic_ms()
        with pytest.raises(NodeIdInUseError, match="node id 4"):
            BrokerRegistration(second, 4, "127.0.0.1", 2, None).register(wait_ms=600)
        assert CLOCK.monotonic_ms() - started >= 600
        # the holder's session ends half a second into the second's wait: the second registers
        caplog.clear()
        holder = first
        _once_waiting(caplog, 0.5, lambda: close_client(holder))
        first = None
        started = CLOCK.monotonic_ms()
        reg = BrokerRegistration(second, 4, "127.0.0.1", 2, None)
        epoch = reg.register(wait_ms=30_000)
        assert 500 <= CLOCK.monotonic_ms() - started < 30_000
        _, stat = second.get("/brokers/ids/4")
        assert epoch == stat.czxid and stat.ephemeralOwner == second.client_id[0]
    finally:
        close_client(first)
        close_client(second)


def test_deregister_ends_a_waiting_register(zk_connect, caplog):
    caplog.set_level(logging.INFO, logger="controller.registration")
    first, second = new_client(zk_connect), new_client(zk_connect)
    try:
        BrokerRegistration(first, 5, "127.0.0.1", 1, None).register()
        reg = BrokerRegistration(second, 5, "127.0.0.1", 2, None)
        _once_waiting(caplog, 0, reg.deregister)
        started = CLOCK.monotonic_ms()
        with pytest.raises(NodeIdInUseError):
            reg.register(wait_ms=30_000)
        assert CLOCK.monotonic_ms() - started < 10_000
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
