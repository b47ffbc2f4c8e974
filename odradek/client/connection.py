"""Connections to nodes: one gRPC channel per ``host:port``, shared by every call to it.

gRPC multiplexes calls over a channel, so one channel per node is enough (as Kafka's
``NetworkClient`` keeps one connection per node). Channels reconnect by themselves; the
reconnect backoff is capped at one second (Kafka's ``reconnect.backoff.max.ms``) so a node that
comes back is used again soon, and a connection may take 10 s to set up (Kafka's
``socket.connection.setup.timeout.ms``). Message size limits are lifted: a fetch answer may carry
``fetch_max_bytes`` (50 MiB by default), above gRPC's default of 4 MiB. With a
:class:`~odradek.client.security.SecurityConfig` of protocol SSL the channels are TLS (mTLS with a
client certificate); with SASL_SSL, also SCRAM-authenticated (:mod:`odradek.client.sasl`).

:func:`call` waits for an answer in short steps, so Ctrl-C interrupts a waiting command line,
and turns gRPC failures into the typed errors of :mod:`odradek.client.errors`.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, TypeVar, cast

import grpc

from odradek.client.addresses import format_address, parse_bootstrap_servers
from odradek.client.errors import NetworkError, error_from_rpc
from odradek.client.sasl import SaslAuthenticator, SaslTokenInterceptor, ScramSecret
from odradek.client.security import SecurityConfig
from odradek.client.tls_diagnosis import ClientTls, register, unregister
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = [
    "RECONNECT_OPTIONS",
    "ConnectionPool",
    "call",
    "cancel",
    "format_address",
    "parse_bootstrap_servers",
    "wait",
]

Req = TypeVar("Req")
Resp = TypeVar("Resp")

log = logging.getLogger("odradek.client")

_CLOSE_TIMEOUT_S = 2.0

#: Kafka's ``socket.connection.setup.timeout.ms``.
CONNECTION_SETUP_TIMEOUT_MS = 10_000

#: How every channel of odradek (clients' and nodes') reconnects. gRPC's default backoff grows to
#: 120 s, during which each call to a restarted node fails without trying; this one starts at
#: 100 ms and stays under 1 s (Kafka's ``reconnect.backoff.ms`` and ``reconnect.backoff.max.ms``).
#: Despite its name, ``grpc.min_reconnect_backoff_ms`` is gRPC's *connect timeout* (the least time
#: a connection attempt gets, handshake included), not a backoff: at 100 ms a loaded machine's
#: loopback handshake timed out and calls failed UNAVAILABLE, so it is the setup timeout.
RECONNECT_OPTIONS: list[tuple[str, int]] = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.min_reconnect_backoff_ms", CONNECTION_SETUP_TIMEOUT_MS),
]

_CHANNEL_OPTIONS: list[tuple[str, int]] = [
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", -1),
    *RECONNECT_OPTIONS,
]


class ConnectionPool:
    """One channel, with its stubs, per node address. Thread-safe."""

    def __init__(self, security: SecurityConfig | None = None) -> None:
        """``security``: how to connect (default PLAINTEXT). Its files are read here: raises
        ``ValueError`` for one that cannot be read or holds no key or certificate. The pool
        does not keep ``security`` itself: its SCRAM secret is a :class:`ScramSecret`, which
        drops the password after the first successful exchange."""
        s = security or SecurityConfig()
        self._credentials = s.channel_credentials()
        # how odradek.client.tls_diagnosis probes a listener that closed a connection of ours
        self._tls = ClientTls(
            tls=self._credentials is not None,
            certfile=s.ssl_certfile,
            keyfile=s.ssl_keyfile,
        )
        self.scram: ScramSecret | None = None
        if s.security_protocol == "SASL_SSL":
            assert s.sasl_mechanism and s.sasl_plain_username
            self.scram = ScramSecret(
                s.sasl_mechanism,
                s.sasl_plain_username,
                s.sasl_plain_password or None,
                s.sasl_salted_password,
            )
        self._lock = threading.Lock()
        self._channels: dict[str, grpc.Channel] = {}
        self._brokers: dict[str, pb_grpc.BrokerStub] = {}
        self._admins: dict[str, pb_grpc.AdminStub] = {}
        self._closed = False

    def _channel(self, address: str) -> grpc.Channel:
        channel = self._channels.get(address)
        if channel is None:
            if self._closed:
                raise RuntimeError("the connection pool is closed")
            register(address, self._tls)
            if self._credentials is None:
                channel = grpc.insecure_channel(address, options=_CHANNEL_OPTIONS)
            else:
                channel = grpc.secure_channel(address, self._credentials, options=_CHANNEL_OPTIONS)
            if self.scram is not None:
                authenticator = SaslAuthenticator(channel, address, self.scram)
                # closing the intercepted channel closes the one it wraps
                channel = grpc.intercept_channel(channel, SaslTokenInterceptor(authenticator))
            self._channels[address] = channel
        return channel

    def broker(self, address: str) -> pb_grpc.BrokerStub:
        """The Broker service stub of the node at ``address``."""
        with self._lock:
            stub = self._brokers.get(address)
            if stub is None:
                stub = pb_grpc.BrokerStub(self._channel(address))
                self._brokers[address] = stub
            return stub

    def admin(self, address: str) -> pb_grpc.AdminStub:
        """The Admin service stub of the node at ``address``."""
        with self._lock:
            stub = self._admins.get(address)
            if stub is None:
                stub = pb_grpc.AdminStub(self._channel(address))
                self._admins[address] = stub
            return stub

    def close(self, timeout: float = _CLOSE_TIMEOUT_S) -> None:
        """Close every channel; calls in progress fail with a :class:`NetworkError`.

        Gives up after ``timeout`` seconds: a channel whose call was interrupted half-way
        (Ctrl-C landing inside gRPC's call set-up) can block ``close`` for ever, and a client
        being closed must not hang its program. Idempotent.
        """
        with self._lock:
            self._closed = True
            channels = list(self._channels.values())
            for address in self._channels:
                unregister(address, self._tls)
            self._channels.clear()
            self._brokers.clear()
            self._admins.clear()
        if not channels:
            return
        closed = threading.Event()

        def close_all() -> None:
            for channel in channels:
                channel.close()
            closed.set()

        threading.Thread(target=close_all, name="odradek-close", daemon=True).start()
        if not closed.wait(timeout):
            log.warning("gave up closing %d gRPC channel(s) after %s s", len(channels), timeout)


def call(
    method: grpc.UnaryUnaryMultiCallable[Req, Resp],
    request: Req,
    *,
    address: str,
    timeout_ms: int,
) -> Resp:
    """Call ``method`` with ``request`` and wait up to ``timeout_ms`` for the answer.

    Raises the :class:`~odradek.errors.OdradekError` for a failed call (see
    :func:`~odradek.client.errors.error_from_rpc`). Interruptible: ``KeyboardInterrupt``
    cancels the call.
    """
    future = method.future(request, timeout=timeout_ms / 1000)
    try:
        return wait(future, address)
    except BaseException:
        cancel(future)
        raise


def cancel(future: grpc.Future[Any]) -> None:
    """Cancel a call (a no-op once it has finished)."""
    cast(Any, future).cancel()  # untyped in grpc-stubs


def wait(future: grpc.Future[Resp], address: str) -> Resp:
    """The answer of a call started with ``.future()``, or its typed error."""
    try:
        return future.result()
    except grpc.RpcError as exc:
        raise error_from_rpc(exc, address) from None
    except grpc.FutureCancelledError:
        raise NetworkError(f"the call to node {address} was cancelled") from None
