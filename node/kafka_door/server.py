"""The Kafka door's sockets: Kafka listeners served by one asyncio loop on its own thread.

Each connection's requests are handled one after another and answered in their order, however
many a client pipelines (librdkafka sends up to five), as Kafka's ``SocketServer`` does. Handlers
run on the node's request threads (``request.handler.threads``: they may block, as long polls
do); the loop thread only reads, writes and dispatches. One difference in timing from Kafka,
which mutes a channel until its request is answered: a handler may answer :class:`Later` or
:class:`WhenReady` (an acks=-1 produce, once its batches are appended, waiting for the
replicas), and the connection's next requests are then read and handled while it waits — so a
pipelining producer's batches share the followers' fetches instead of waiting one replication
round each. Appends still happen in request order, and answers still go out in it.

Limits, with Kafka's names:

* ``socket.request.max.bytes`` (100 MiB): a frame larger than that (or negative) closes the
  connection before its body is read (Kafka's ``InvalidReceiveException``).
* ``connections.max.idle.ms`` (10 min): a connection without a request for that long is closed.
* ``max.connections.per.ip`` / ``max.connections.per.ip.overrides``: a connection past its
  host's limit is closed at once (Kafka's ``ConnectionQuotas``), and so is one past
  ``max.connections``.

A frame the door cannot parse, a request for an API or version it does not serve (other than
ApiVersions, which answers UNSUPPORTED_VERSION with its list so that the client can retry lower),
and any request but ApiVersions and the SASL ones on a SASL listener before authentication close
the connection, as Kafka's broker does. A handler that fails unexpectedly is logged with its
traceback and the connection closed: no server exception text reaches a client.

Waiting without a thread: a handler may answer with a ``concurrent.futures.Future`` of its
answer (a JoinGroup waits for its rebalance for up to the rebalance timeout, minutes); the loop
awaits it, so neither the loop nor a request thread is held meanwhile, and the connection's
next request is read once it is answered. A :class:`WhenReady` answer (an acks=-1 produce)
waits on the loop too: the core calls it back when its replicas may have caught up, and the
loop checks and answers it there — a request thread blocked in the wait instead, woken by the
follower's fetch and then handing the answer to the loop, put two thread hand-offs (each a
wait for the GIL) on every acknowledged produce's path.

Zero copy: a handler may answer with :class:`ResponseParts`, whose :class:`FileSlice` parts are
written with ``loop.sendfile`` (``os.sendfile`` on a plaintext socket, Kafka's
``FileRecords.transferTo``; read and written through TLS on an SSL socket).

Shutdown, in Kafka's order (``SocketServer.stopProcessingRequests`` as the node's shutdown
begins, ``SocketServer.shutdown`` at its end), in two steps:

1. :meth:`KafkaDoor.begin_shutdown` closes the listeners and stops reading requests: a
   connection waiting for its next request is closed at once (its bytes of an unread request,
   if any, are dropped: nothing of it was handled); one whose request is being handled, or
   whose answers wait (an acks=-1 produce, a long-polling fetch), reads nothing more, writes
   the answers of every request it had read, in their order, and then closes.
2. :meth:`KafkaDoor.stop`, once the core has stopped (which answers its waiting produces and
   fetches at once), waits up to its grace for those answers to be written and the
   connections closed. A request still waiting on a future of the core (a JoinGroup in its
   rebalance: the stopped coordinator will not complete it) ends then, unanswered, closing its
   connection after the answers before it; a connection still writing when the grace ends (a
   client that does not read) is aborted. Every task of the loop has ended before the loop
   is stopped and closed, so none is destroyed pending and nothing is called back on a closed
   loop.

Thread-safety: :meth:`KafkaDoor.start`, :meth:`KafkaDoor.begin_shutdown` and
:meth:`KafkaDoor.stop` from any one thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import socket
import ssl
import struct
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from node.kafka_door import api_versions
from node.kafka_door.context import Connection, RequestContext
from node.kafka_door.error_counts import add_error_counts, error_name
from node.kafka_door.frames import (
    API_VERSIONS_KEY,
    SIZE,
    FrameError,
    decode_body,
    encode_response,
    peek_api,
    read_header,
    request_class,
    response_header,
)
from node.kafka_door.registry import Registry
from node.metrics.request_metrics import RequestMetrics
from node.security.principal import ANONYMOUS, KafkaPrincipal

__all__ = [
    "SHUTDOWN_GRACE_S",
    "DoorLimits",
    "FileSlice",
    "KafkaDoor",
    "KafkaListenerSpec",
    "CLOSE_CONNECTION",
    "Later",
    "NO_RESPONSE",
    "OnThread",
    "ResponseParts",
    "WhenReady",
]

log = logging.getLogger(__name__)

FETCH_KEY = 1
SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
_BEFORE_AUTHENTICATION = frozenset({API_VERSIONS_KEY, SASL_HANDSHAKE_KEY, SASL_AUTHENTICATE_KEY})

SHUTDOWN_GRACE_S = 5.0
"""How long :meth:`KafkaDoor.stop` waits for the connections to write what they owe (once the
core has stopped, its waiting requests are answered at once: only a client that does not read
its answers takes longer) before it aborts them."""


class _NoResponse:
    """A handler's answer to a request that gets none (Produce with acks=0)."""

    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE = _NoResponse()


class _CloseConnection:
    """A handler's answer that closes the connection instead: Produce with acks=0 that failed
    for any partition (Kafka closes the connection so that the producer notices), or a request
    Kafka would have refused while parsing it (an unknown isolation level)."""

    def __repr__(self) -> str:
        return "CLOSE_CONNECTION"


CLOSE_CONNECTION = _CloseConnection()


@dataclass(frozen=True, slots=True)
class Later:
    """A handler's answer that is not ready yet: ``finish`` (run on a request thread; it may
    block, as an acks=-1 produce waits for its replicas) returns what the handler would have.
    The connection reads and handles its next requests meanwhile, and its answers still go out
    in the order of its requests."""

    finish: Callable[[], Any]


@dataclass(frozen=True, slots=True)
class OnThread:
    """An ``on_loop`` handler's answer that its request is not done: ``run`` (on a request
    thread; it may block) finishes it and returns what the handler would have. Unlike
    :class:`Later`, the connection's next request is read only once ``run`` has returned (a
    produce's appends stay in the order of its requests)."""

    run: Callable[[], Any]


@dataclass(frozen=True, slots=True)
class WhenReady:
    """A handler's answer that waits without a thread (an acks=-1 produce waiting for its
    replicas, a fetch waiting for ``min_bytes``). On the loop, when the connection's turn comes:
    ``subscribe(wake)`` has ``wake`` called (from any thread) whenever the answer may be ready,
    and returns the function that stops it; ``poll()`` returns what the handler would have
    answered, or ``None`` while not ready, or a :class:`Later` whose ``finish`` (run on a request
    thread) does the rest (a fetch that must read its bytes); ``recheck_ms()`` is the most to
    wait before polling again (a timeout). None of the three may block for long. As with
    :class:`Later`, the connection reads and handles its next requests meanwhile, and its
    answers still go out in the order of its requests."""

    poll: Callable[[], Any]
    subscribe: Callable[[Callable[[], None]], Callable[[], None]]
    recheck_ms: Callable[[], int]


@dataclass(slots=True)
class FileSlice:
    """``length`` bytes of an open file descriptor from ``position``: written with sendfile.
    The door closes ``fd`` once written (the handler hands over a descriptor of its own, an
    ``os.dup`` of the segment's: a deleted segment or log keeps its descriptor open for
    ``file.delete.delay.ms``, so the dup, taken right after the read, names the same file)."""

    fd: int
    position: int
    length: int


@dataclass(slots=True)
class ResponseParts:
    """A response body in parts: bytes, and file slices written without copying. The frame's
    size prefix and header are added by the door."""

    flexible: bool
    parts: list[bytes | FileSlice] = field(default_factory=list)
    errors: dict[int, int] = field(default_factory=dict)
    """The answer's nonzero error codes and their occurrences (for the errors metric)."""

    def size(self) -> int:
        return sum(p.length if isinstance(p, FileSlice) else len(p) for p in self.parts)

    def close(self) -> None:
        for part in self.parts:
            if isinstance(part, FileSlice) and part.fd >= 0:
                os.close(part.fd)
                part.fd = -1


@dataclass(frozen=True, slots=True)
class DoorLimits:
    """The connection limits (Kafka's ``SocketServerConfigs``)."""

    socket_request_max_bytes: int = 100 * 1024 * 1024
    connections_max_idle_ms: int = 10 * 60 * 1000
    max_connections_per_ip: int = 2**31 - 1
    max_connections_per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    max_connections: int = 2**31 - 1

    def __post_init__(self) -> None:
        if self.socket_request_max_bytes < 1:
            raise ValueError("socket.request.max.bytes must be at least 1")
        if self.connections_max_idle_ms < 1:
            raise ValueError("connections.max.idle.ms must be at least 1")

    def per_ip(self, host: str) -> int:
        return self.max_connections_per_ip_overrides.get(host, self.max_connections_per_ip)


@dataclass(frozen=True, slots=True)
class KafkaListenerSpec:
    """One Kafka listener to bind."""

    name: str
    security_protocol: str
    host: str
    port: int
    ssl_context: ssl.SSLContext | None = None
    principal_of_certificate: Callable[[dict[str, Any]], KafkaPrincipal] | None = None
    """The SSL principal mapper: a peer certificate (``SSLSocket.getpeercert()``) to
    ``User:<name>``."""


class KafkaDoor:
    """Every Kafka listener of a node, on one loop thread."""

    def __init__(
        self,
        registry: Registry,
        executor: Executor,
        limits: DoorLimits | None = None,
        metrics: RequestMetrics | None = None,
    ) -> None:
        self._registry = registry
        self._executor = executor
        self._metrics = metrics
        """Each request's count and times, under Kafka's request names (``metrics.port``)."""
        self.limits = limits or DoorLimits()
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._servers: list[asyncio.AbstractServer] = []
        self._per_ip: Counter[str] = Counter()
        self._connections = 0
        self._open: set[_Open] = set()
        self._closing = False
        """Set on the loop by :meth:`begin_shutdown`: no connection is accepted, no request read."""
        self._core_stopped: asyncio.Future[None] = self._loop.create_future()
        """Done once :meth:`stop` begins: requests waiting on a future of the core end."""
        self.ports: dict[str, int] = {}
        self._api_versions = api_versions.Responder(registry)

    @property
    def open_connections(self) -> int:
        return self._connections

    def bind(self, listeners: Sequence[KafkaListenerSpec]) -> dict[str, int]:
        """Binds every listener (connections wait in the backlog until :meth:`serve`);
        returns the bound port per listener name. Raises ``OSError`` naming the listener that
        cannot bind (nothing is left bound)."""
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="kafka-door", daemon=True
        )
        self._thread.start()
        try:
            for spec in listeners:
                future = asyncio.run_coroutine_threadsafe(self._bind(spec), self._loop)
                self.ports[spec.name] = future.result()
        except BaseException:
            self.stop()
            raise
        return dict(self.ports)

    def serve(self) -> None:
        """Starts accepting on every bound listener."""

        async def start() -> None:
            for server in self._servers:
                await server.start_serving()

        asyncio.run_coroutine_threadsafe(start(), self._loop).result(timeout=10)

    def start(self, listeners: Sequence[KafkaListenerSpec]) -> dict[str, int]:
        """:meth:`bind`, then :meth:`serve`."""
        ports = self.bind(listeners)
        self.serve()
        return ports

    async def _bind(self, spec: KafkaListenerSpec) -> int:
        host = spec.host or "0.0.0.0"
        try:
            server = await asyncio.start_server(
                lambda r, w: self._serve(spec, r, w),
                host,
                spec.port,
                ssl=spec.ssl_context,
                reuse_address=True,
                limit=256 * 1024,
                start_serving=False,
            )
        except OSError as e:
            raise OSError(
                f"cannot listen on {host}:{spec.port} (Kafka listener {spec.name}): "
                f"{(e.strerror or str(e)).lower()}"
            ) from None
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    def begin_shutdown(self) -> None:
        """Stops accepting connections and reading requests (Kafka's
        ``stopProcessingRequests``); returns once the loop has done so, without waiting for
        answers. The requests already read are still handled and answered, in order, and each
        connection closes once it has answered them (an idle one now). Call :meth:`stop` to
        finish. Does nothing if the door is not running; safe to call twice."""
        if self._thread is None or not self._loop.is_running():
            return

        async def stop_reading() -> None:
            self._stop_reading()

        try:
            asyncio.run_coroutine_threadsafe(stop_reading(), self._loop).result(timeout=10)
        except Exception:
            log.exception("stopping the Kafka listeners' reads failed")

    def stop(self, grace_s: float = SHUTDOWN_GRACE_S) -> None:
        """:meth:`begin_shutdown` if not yet done; ends the requests still waiting on a future
        of the core; waits up to ``grace_s`` for every connection to write the answers it owes
        and close, aborts those that have not; then stops the loop and waits for its thread.
        Safe to call twice, and after a failed :meth:`bind`."""
        if self._thread is None:
            if not self._loop.is_closed():
                self._loop.close()
            return
        if self._loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(self._close(grace_s), self._loop).result(
                    timeout=3 * grace_s + 10
                )
            except Exception:
                log.exception("closing the Kafka listeners failed")
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._thread = None
        if not self._loop.is_running():
            self._loop.close()

    def _stop_reading(self) -> None:
        """On the loop: closes the listeners and interrupts every connection waiting for its
        next request; the others stop before reading another."""
        if self._closing:
            return
        self._closing = True
        for server in self._servers:
            server.close()
        for open_ in self._open:
            if open_.idle:
                open_.interrupted = True
                open_.task.cancel()

    async def _close(self, grace_s: float) -> None:
        """On the loop: the rest of :meth:`stop`, until no task but this one is left."""
        self._stop_reading()
        if not self._core_stopped.done():
            self._core_stopped.set_result(None)
        for server in self._servers:
            await server.wait_closed()
        current = asyncio.current_task()
        # every task of the loop is a connection's (its requests, or its sender)
        tasks = {task for task in asyncio.all_tasks() if task is not current}
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace_s)
        if not pending:
            return
        late = [open_ for open_ in self._open if open_.task in pending]
        log.info("aborting %d Kafka connections still answering after %.1f s", len(late), grace_s)
        owned = {task for open_ in late for task in (open_.task, open_.sender)}
        for task in pending - owned:
            task.cancel()  # a connection's task that no longer writes: nothing to lose
        for open_ in late:
            if open_.writing:
                # not cancelled mid-write: asyncio's sendfile, cancelled or its transport
                # aborted, leaves a waiter that the transport's connection_lost then fails to
                # set (InvalidStateError); its socket shut down, the write fails, and the task
                # ends on that error
                _shut_down(open_.writer)
            else:
                open_.writer.transport.abort()
                open_.task.cancel()
                if open_.sender is not None:
                    open_.sender.cancel()
        _, pending = await asyncio.wait(pending, timeout=grace_s)
        if pending:
            log.warning("%d tasks of the Kafka listeners did not end", len(pending))

    # -- one connection --
    async def _serve(
        self, spec: KafkaListenerSpec, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        peer = writer.get_extra_info("peername") or ("?", 0)
        host, port = str(peer[0]), int(peer[1])
        task = asyncio.current_task()
        assert task is not None
        if self._closing:  # accepted just before the listener closed
            await _close_writer(writer)
            return
        if (
            self._per_ip[host] >= self.limits.per_ip(host)
            or self._connections >= self.limits.max_connections
        ):
            log.info("refused a connection from %s on %s: connection limit", host, spec.name)
            await _close_writer(writer)
            return
        self._per_ip[host] += 1
        self._connections += 1
        open_ = _Open(task, writer)
        self._open.add(open_)
        conn = Connection(spec.name, spec.security_protocol, host, port)
        try:
            self._authenticate_transport(spec, conn, writer)
            await self._requests(conn, open_, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError, ssl.SSLError):
            pass
        except _CloseError as why:
            log.info("closing the connection of %s:%d on %s: %s", host, port, spec.name, why.reason)
        except Exception:
            log.exception("the connection of %s:%d on %s failed", host, port, spec.name)
        except asyncio.CancelledError:
            # only the door's stop cancels a connection; the task ends normally, as
            # asyncio.start_server's done callback cannot take a cancelled one
            pass
        finally:
            self._connections -= 1
            self._per_ip[host] -= 1
            if self._per_ip[host] <= 0:
                del self._per_ip[host]
            try:
                await _close_writer(writer)
            finally:
                self._open.discard(open_)  # until closed: the door's stop aborts it if need be

    @staticmethod
    def _authenticate_transport(
        spec: KafkaListenerSpec, conn: Connection, writer: asyncio.StreamWriter
    ) -> None:
        if spec.security_protocol.startswith("SASL_"):
            conn.authenticated = False
        if spec.security_protocol == "SSL":
            ssl_object = writer.get_extra_info("ssl_object")
            cert = ssl_object.getpeercert() if ssl_object is not None else None
            if cert and spec.principal_of_certificate is not None:
                conn.principal = spec.principal_of_certificate(cert)
            else:
                conn.principal = ANONYMOUS

    async def _requests(
        self,
        conn: Connection,
        open_: _Open,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        """Reads and handles the connection's requests one after another; a task of its own
        writes their answers in order. Only a :class:`Later` or :class:`WhenReady` answer lets the
        next request be read before this one is answered (at most ``_PIPELINE`` of them)."""
        answers: asyncio.Queue[_Pending | None] = asyncio.Queue(_PIPELINE)
        sender = self._loop.create_task(self._send(open_, answers, writer))
        open_.sender = sender
        try:
            await self._read(conn, open_, reader, answers, sender)
        except asyncio.CancelledError:
            sender.cancel()
            await asyncio.wait({sender})  # ended with this task, not left pending
            raise
        except Exception:
            if not sender.done():
                # what was handled before the fault is still answered, then the connection
                # closes (Kafka reads the faulty request only after answering those)
                await self._put(answers, None, sender)
                await asyncio.wait({sender})
            if not sender.cancelled():
                sender.exception()  # retrieved: the reader's error is the one reported
            raise
        if not sender.done():
            await self._put(answers, None, sender)
        await sender

    async def _read(
        self,
        conn: Connection,
        open_: _Open,
        reader: asyncio.StreamReader,
        answers: asyncio.Queue[_Pending | None],
        sender: asyncio.Task[None],
    ) -> None:
        """Reads and dispatches requests until the client closes, the sender ends or the door
        stops reading (:meth:`begin_shutdown`); raises :class:`_CloseError` to close."""
        idle_s = self.limits.connections_max_idle_ms / 1000
        max_bytes = self.limits.socket_request_max_bytes
        while not sender.done() and not self._closing:
            open_.idle = True
            try:
                async with asyncio.timeout(idle_s):
                    prefix = await reader.readexactly(4)
            except asyncio.IncompleteReadError:
                return  # the client closed, or the sender closed the connection
            except TimeoutError:
                raise _CloseError(f"idle for {self.limits.connections_max_idle_ms} ms") from None
            except asyncio.CancelledError:
                if not open_.interrupted:
                    raise
                # the door stopped reading: nothing of a next request was handled
                open_.interrupted = False
                if open_.task.uncancel() > 0:
                    raise  # cancelled for another reason too
                return
            finally:
                open_.idle = False
            (size,) = SIZE.unpack(prefix)
            if size < 0 or size > max_bytes:
                raise _CloseError(
                    f"a request of {size} bytes (socket.request.max.bytes is {max_bytes})"
                )
            async with asyncio.timeout(idle_s):
                frame = await reader.readexactly(size)
            answer = await self._dispatch(conn, frame)
            if answer is not None:
                await self._put(answers, answer, sender)
            if conn.close_after_response:
                await self._put(answers, None, sender)
                await asyncio.wait({sender})
                raise _CloseError("authentication failed")

    @staticmethod
    async def _put(
        answers: asyncio.Queue[_Pending | None], item: _Pending | None, sender: asyncio.Task[None]
    ) -> None:
        if not answers.full():
            answers.put_nowait(item)
            return
        put = asyncio.ensure_future(answers.put(item))
        await asyncio.wait({put, sender}, return_when=asyncio.FIRST_COMPLETED)
        if not put.done():
            put.cancel()  # the sender ended: nothing more is answered

    async def _send(
        self,
        open_: _Open,
        answers: asyncio.Queue[_Pending | None],
        writer: asyncio.StreamWriter,
    ) -> None:
        try:
            while (item := await answers.get()) is not None:
                if isinstance(item, _Deferred):
                    answer = await self._finish(item)
                    if answer is None:
                        continue
                else:
                    answer = item
                open_.writing = True
                try:
                    await self._write(writer, answer)
                finally:
                    open_.writing = False
        except BaseException:
            writer.close()  # ends the reader's wait for the next request
            while not answers.empty():  # answers never written: their files are closed
                if isinstance(pending := answers.get_nowait(), ResponseParts):
                    pending.close()
            raise

    async def _dispatch(self, conn: Connection, frame: bytes) -> _Pending | None:
        started = self._loop.time()
        try:
            key, version = peek_api(frame)
        except FrameError as e:
            raise _CloseError(str(e)) from None
        api = self._registry.get(key)
        if key == API_VERSIONS_KEY and (api is None or not api.supports(version)):
            try:
                header = read_header(frame, flexible=False)
            except FrameError as e:
                raise _CloseError(str(e)) from None
            if self._metrics is not None:
                self._metrics.observe("ApiVersions", int((self._loop.time() - started) * 1000), 0)
                self._metrics.error("ApiVersions", error_name(ErrorCode.unsupported_version), 1)
            return self._api_versions.unsupported(header.correlation_id)
        if api is None or api.broker_only:
            raise _CloseError(f"API key {key} is not served on a Kafka listener")
        if not api.supports(version) or version < api.refused_below:
            lowest = max(api.min_version, api.refused_below)
            raise _CloseError(
                f"{api.name} v{version} is not supported (v{lowest}-v{api.max_version})"
            )
        if not conn.authenticated and key not in _BEFORE_AUTHENTICATION:
            raise _CloseError(f"{api.name} before SASL authentication")
        cls = request_class(key, version)
        try:
            header = read_header(frame, bool(cls.__flexible__))
            body = decode_body(cls, frame, header.body_offset)
        except FrameError as e:
            raise _CloseError(str(e)) from None
        ctx = RequestContext(conn, key, version, header.correlation_id, header.client_id)
        if key == API_VERSIONS_KEY:
            versions = self._api_versions.answer(ctx, body)
            encoded = self._encode(api.name, ctx, versions)
            self._observe(ctx, api.name, started, 0.0, versions)
            return encoded
        try:
            if api.on_loop:
                result = api.handler(ctx, body)
                if isinstance(result, OnThread):
                    result = await self._loop.run_in_executor(self._executor, result.run)
            else:
                result = await self._loop.run_in_executor(self._executor, api.handler, ctx, body)
        except Exception:
            log.exception("%s v%d from %s failed", api.name, version, conn.peer_host)
            raise _CloseError(f"{api.name} failed on the server") from None
        if isinstance(result, Future):
            # a request that waits on the core (a JoinGroup until its rebalance completes):
            # awaited on the loop, holding no request thread, as Kafka's purgatory does; the
            # door's stop ends the wait (the core has stopped, and will not answer it)
            waited = asyncio.wrap_future(result, loop=self._loop)
            await asyncio.wait({waited, self._core_stopped}, return_when=asyncio.FIRST_COMPLETED)
            if not waited.done():
                raise _CloseError(f"{api.name} still waiting when the node stopped")
            try:
                result = waited.result()
            except Exception:
                log.exception("%s v%d from %s failed", api.name, version, conn.peer_host)
                raise _CloseError(f"{api.name} failed on the server") from None
        if isinstance(result, Later | WhenReady):
            return _Deferred(api.name, ctx, result, started)
        answer = self._encode(api.name, ctx, result)
        self._observe(ctx, api.name, started, 0.0, result)
        return answer

    def _observe(
        self, ctx: RequestContext, api: str, started: float, remote_s: float, result: Any = None
    ) -> None:
        """A request answered: its count and times (``remote``: waiting for the core, as an
        acks=-1 produce for its replicas or a fetch for its bytes), and the error codes in its
        answer ``result`` (Kafka's ``ErrorsPerSec``), a Fetch as Kafka names a consumer's
        (``FetchConsumer``; followers fetch over gRPC)."""
        metrics = self._metrics
        if metrics is None:
            return
        total_ms = int((self._loop.time() - started) * 1000)
        name = "FetchConsumer" if ctx.api_key == FETCH_KEY else api
        metrics.observe(name, total_ms, int(remote_s * 1000))
        if isinstance(result, ResponseParts):
            errors = result.errors
        elif dataclasses.is_dataclass(result) and not isinstance(result, type):
            errors = {}
            add_error_counts(result, errors)
        else:
            return
        for code, count in errors.items():
            metrics.error(name, error_name(code), count)

    async def _finish(self, deferred: _Deferred) -> bytes | ResponseParts | None:
        ctx = deferred.ctx
        later = deferred.later
        waited_from = self._loop.time()
        try:
            if isinstance(later, WhenReady):
                result = await self._when_ready(later)
                if isinstance(result, Later):  # ready, and the rest is a request thread's work
                    result = await self._loop.run_in_executor(self._executor, result.finish)
            else:
                result = await self._loop.run_in_executor(self._executor, later.finish)
        except Exception:
            log.exception(
                "%s v%d from %s failed", deferred.api, ctx.api_version, ctx.connection.peer_host
            )
            raise _CloseError(f"{deferred.api} failed on the server") from None
        answer = self._encode(deferred.api, ctx, result)
        self._observe(ctx, deferred.api, deferred.started, self._loop.time() - waited_from, result)
        return answer

    async def _when_ready(self, ready: WhenReady) -> Any:
        loop = self._loop
        woken = asyncio.Event()

        def wake() -> None:  # on the core's notifying thread: only hand over
            try:
                loop.call_soon_threadsafe(woken.set)
            except RuntimeError:
                pass  # the loop closed (the door stopped): nobody waits any more

        stop = ready.subscribe(wake)
        try:
            while True:
                woken.clear()  # before the poll: a change after it wakes the wait below
                result = ready.poll()
                if result is not None:
                    return result
                try:
                    async with asyncio.timeout(max(1, ready.recheck_ms()) / 1000):
                        await woken.wait()
                except TimeoutError:
                    pass
        finally:
            stop()

    @staticmethod
    def _encode(api: str, ctx: RequestContext, result: Any) -> bytes | ResponseParts | None:
        key, version = ctx.api_key, ctx.api_version
        if result is NO_RESPONSE:
            return None
        if result is CLOSE_CONNECTION:
            raise _CloseError(f"{api} v{version} refused without an answer")
        if isinstance(result, ResponseParts):
            head = response_header(key, ctx.correlation_id, result.flexible)
            result.parts.insert(0, SIZE.pack(len(head) + result.size()) + head)
            return result
        try:
            return encode_response(key, ctx.correlation_id, result)
        except Exception:
            log.exception("encoding %s v%d failed", api, version)
            raise _CloseError(f"{api}'s answer could not be encoded") from None

    async def _write(self, writer: asyncio.StreamWriter, answer: bytes | ResponseParts) -> None:
        if isinstance(answer, bytes):
            writer.write(answer)
            await writer.drain()
            return
        try:
            for part in answer.parts:
                if isinstance(part, FileSlice):
                    await writer.drain()
                    with os.fdopen(part.fd, "rb", closefd=False) as file:
                        await self._loop.sendfile(
                            writer.transport, file, part.position, part.length
                        )
                else:
                    writer.write(part)
            await writer.drain()
        finally:
            answer.close()


async def _close_writer(writer: asyncio.StreamWriter) -> None:
    """Closes a connection and waits until its transport is gone (the answers still buffered
    are written first). Raises nothing: cancelled (by the door's stop, which has aborted the
    transport), it returns at once, and the connection's task that called it ends normally (a
    cancelled one would fail ``asyncio.start_server``'s done callback)."""
    writer.close()
    with contextlib.suppress(Exception, asyncio.CancelledError):
        await writer.wait_closed()


@dataclass(eq=False, slots=True)
class _Open:
    """An open connection, as the door's shutdown sees it."""

    task: asyncio.Task[Any]
    """The task serving it (the one ``asyncio.start_server`` made)."""
    writer: asyncio.StreamWriter
    idle: bool = False
    """Waiting for the first bytes of its next request: nothing of it read or handled."""
    interrupted: bool = False
    """Cancelled by :meth:`KafkaDoor.begin_shutdown` while idle (the wait ends quietly)."""
    sender: asyncio.Task[None] | None = None
    """The task writing its answers."""
    writing: bool = False
    """Writing an answer (the door's stop shuts its socket down rather than cancel it)."""


def _shut_down(writer: asyncio.StreamWriter) -> None:
    """Shuts a connection's socket down, to be reset when closed (its unsent bytes dropped):
    what writes to it fails, and its transport closes on that error."""
    sock = writer.get_extra_info("socket")
    if sock is None:
        writer.transport.abort()
        return
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.shutdown(socket.SHUT_RDWR)


class _CloseError(Exception):
    """Ends a connection, with the reason logged."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class _Deferred:
    """A request handled up to a :class:`Later` or :class:`WhenReady`: its answer is made when
    its turn comes."""

    api: str
    ctx: RequestContext
    later: Later | WhenReady
    started: float
    """The loop's time when the request was read."""


_Pending = bytes | ResponseParts | _Deferred
"""What the sender of a connection writes next, in request order."""

_PIPELINE = 16
"""Requests of one connection handled before the oldest of them is answered (only
:class:`Later` and :class:`WhenReady` answers let a connection run ahead; librdkafka keeps at
most five in flight)."""
