"""The channels' connection settings: a connection slow to set up is waited for, not failed.

A loaded machine once took more than 100 ms to finish a loopback handshake, and a client whose
connect timeout was 100 ms (gRPC reads it from ``grpc.min_reconnect_backoff_ms``) failed its
first call with ``UNAVAILABLE: connect() timed out``. The proxy here holds each new connection
back for longer than that before passing it on to a real node.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from odradek.client.connection import ConnectionPool, call
from odradek.clock import SystemClock
from odradek.v1 import odradek_pb2 as pb
from tests.unit.sdk.fake_cluster import FakeCluster, running_cluster

HOLD_MS = 600


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    yield from running_cluster(1)


class SlowProxy:
    """Accepts on 127.0.0.1 and passes each connection on to ``target`` after ``hold_s``."""

    def __init__(self, target: tuple[str, int], hold_s: float) -> None:
        self._target = target
        self._hold_s = hold_s
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = [self._listener]
        self.accepted = 0
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self.accepted += 1
            self._sockets.append(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        if self._closed.wait(self._hold_s):
            return
        try:
            upstream = socket.create_connection(self._target)
        except OSError:  # the node is gone: the test is over
            client.close()
            return
        self._sockets.append(upstream)
        threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()
        self._pipe(client, upstream)

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        self._closed.set()
        for s in self._sockets:
            s.close()


def test_a_connection_slow_to_set_up_is_waited_for(cluster):
    port = cluster.ports[1]
    proxy = SlowProxy(("127.0.0.1", port), HOLD_MS / 1000)
    pool = ConnectionPool()
    clock = SystemClock()
    try:
        started = clock.monotonic_ms()
        answer = call(
            pool.broker(proxy.address).Metadata,
            pb.MetadataRequest(all_topics=True),
            address=proxy.address,
            timeout_ms=5000,
        )
        took = clock.monotonic_ms() - started
    finally:
        pool.close()
        proxy.close()
    assert [b.port for b in answer.brokers] == [port]
    assert took >= HOLD_MS
    assert proxy.accepted == 1  # one attempt, waited for, not abandoned and tried again
