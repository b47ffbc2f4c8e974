"""The Kafka door's connection loop on a real loopback socket, with handlers of the test's own:
framing, limits, ordering, refusals and zero-copy parts (the broker core is not involved)."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import socket
import ssl
import struct
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from node.kafka_door.build import make
from node.kafka_door.context import RequestContext
from node.kafka_door.fetch_encoding import encode_fetch_response
from node.kafka_door.frames import response_class
from node.kafka_door.registry import Api, Registry
from node.kafka_door.server import (
    NO_RESPONSE,
    DoorLimits,
    FileSlice,
    KafkaDoor,
    KafkaListenerSpec,
    Later,
    OnThread,
    WhenReady,
)
from tests.certs import CertificateAuthority

METADATA = 3
FETCH = 1
PRODUCE = 0


def _noop(ctx: RequestContext, request: Any) -> Any:
    raise AssertionError("not called")


def request_frame(key: int, version: int, correlation_id: int, body: bytes = b"") -> bytes:
    header = struct.pack(">hhih", key, version, correlation_id, 4) + b"test"
    return struct.pack(">i", len(header) + len(body)) + header + body


def read_frame(sock: socket.socket) -> bytes:
    size = struct.unpack(">i", recv_exactly(sock, 4))[0]
    return recv_exactly(sock, size)


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError(f"closed after {len(out)} of {n} bytes")
        out += chunk
    return out


def closed(sock: socket.socket) -> bool:
    """Whether the server closed the connection (reads end) within the socket's timeout."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


# Metadata v0 with no topics: an int32 array count of 0
EMPTY_METADATA_V0 = struct.pack(">i", 0)


@pytest.fixture
def door_factory() -> Iterator[Callable[..., tuple[KafkaDoor, int]]]:
    doors: list[KafkaDoor] = []
    pool = ThreadPoolExecutor(8)

    def make_door(
        handlers: dict[int, Callable[[RequestContext, Any], Any]] | None = None,
        limits: DoorLimits | None = None,
        produce_from: int = 3,
        on_loop: bool = False,
        ssl_context: ssl.SSLContext | None = None,
    ) -> tuple[KafkaDoor, int]:
        """``on_loop``: the Metadata handler runs on the door's loop; ``ssl_context``: an SSL
        listener."""
        handlers = handlers or {}
        registry = Registry(
            [
                Api(18, "ApiVersions", 0, 3, _noop),
                Api(METADATA, "Metadata", 0, 8, handlers.get(METADATA, _noop), on_loop=on_loop),
                Api(FETCH, "Fetch", 4, 11, handlers.get(FETCH, _noop)),
                Api(
                    PRODUCE,
                    "Produce",
                    0,
                    8,
                    handlers.get(PRODUCE, _noop),
                    refused_below=produce_from,
                ),
            ]
        )
        door = KafkaDoor(registry, pool, limits)
        protocol = "PLAINTEXT" if ssl_context is None else "SSL"
        ports = door.start([KafkaListenerSpec("KAFKA", protocol, "127.0.0.1", 0, ssl_context)])
        doors.append(door)
        return door, ports["KAFKA"]

    yield make_door
    for door in doors:
        door.stop()
    pool.shutdown()


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    return sock


def metadata_answer(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(METADATA, ctx.api_version)
    return make(cls, brokers=(), topics=(), controller_id=ctx.correlation_id, throttle_time=0)


def test_api_versions_lists_the_registry_and_answers_an_unknown_version_in_v0(door_factory):
    _, port = door_factory()
    with connect(port) as sock:
        sock.sendall(request_frame(18, 0, 7))
        frame = read_frame(sock)
        assert struct.unpack_from(">i", frame)[0] == 7
        body, _ = entity_reader(ApiVersionsResponseV0)(frame, 4)
        assert body.error_code == ErrorCode.none
        assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [
            (PRODUCE, 0, 8),
            (FETCH, 4, 11),
            (METADATA, 0, 8),
            (18, 0, 3),
        ]
        # a version above the door's: v0 body, UNSUPPORTED_VERSION, ApiVersions' own range;
        # the connection stays open for the retry
        sock.sendall(request_frame(18, 9, 8))
        frame = read_frame(sock)
        body, _ = entity_reader(ApiVersionsResponseV0)(frame, 4)
        assert body.error_code == ErrorCode.unsupported_version
        assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 3)]
        sock.sendall(request_frame(18, 0, 9))
        assert struct.unpack_from(">i", read_frame(sock))[0] == 9


@pytest.mark.parametrize(
    "frame",
    [
        request_frame(99, 0, 1),  # an unknown API key
        request_frame(METADATA, 9, 1),  # a version above the registry's
        request_frame(FETCH, 3, 1),  # below it
        request_frame(PRODUCE, 2, 1),  # advertised, refused (KAFKA-18659)
        request_frame(METADATA, 0, 1, b"\x00\x00"),  # a truncated body
        struct.pack(">i", 3) + b"abc",  # no room for a header
    ],
)
def test_a_request_the_door_cannot_serve_closes_the_connection(door_factory, frame):
    _, port = door_factory({METADATA: metadata_answer})
    with connect(port) as sock:
        sock.sendall(frame)
        assert closed(sock)
    with connect(port) as other:  # the door goes on serving
        other.sendall(request_frame(METADATA, 0, 5, EMPTY_METADATA_V0))
        assert struct.unpack_from(">i", read_frame(other))[0] == 5


def test_a_frame_over_the_limit_closes_before_its_body_is_read(door_factory):
    _, port = door_factory(limits=DoorLimits(socket_request_max_bytes=1000))
    with connect(port) as sock:
        # only the size is sent: the door must not wait for the 1001 bytes
        sock.sendall(struct.pack(">i", 1001))
        assert closed(sock)
    with connect(port) as sock:
        sock.sendall(struct.pack(">i", -5))
        assert closed(sock)


def test_an_idle_connection_is_closed(door_factory):
    _, port = door_factory(limits=DoorLimits(connections_max_idle_ms=200))
    with connect(port) as sock:
        assert closed(sock)


def test_connections_past_the_per_ip_limit_are_closed(door_factory):
    _, port = door_factory({METADATA: metadata_answer}, limits=DoorLimits(max_connections_per_ip=2))
    first, second = connect(port), connect(port)
    for sock in (first, second):  # both served
        sock.sendall(request_frame(METADATA, 0, 1, EMPTY_METADATA_V0))
        read_frame(sock)
    with connect(port) as third:
        assert closed(third)
    first.close()
    # the count goes down once the door has seen the close
    for _ in range(100):
        with connect(port) as again:
            again.sendall(request_frame(METADATA, 0, 2, EMPTY_METADATA_V0))
            try:
                read_frame(again)
                break
            except ConnectionError:
                continue
    else:
        raise AssertionError("a connection freed by a close was never served again")
    second.close()


def test_pipelined_requests_are_answered_in_order(door_factory):
    release = threading.Event()
    calls: list[int] = []

    def slow_first(ctx: RequestContext, request: Any) -> Any:
        calls.append(ctx.correlation_id)
        if ctx.correlation_id == 1:
            release.wait(5)
        return metadata_answer(ctx, request)

    _, port = door_factory({METADATA: slow_first})
    with connect(port) as sock:
        sock.sendall(b"".join(request_frame(METADATA, 0, c, EMPTY_METADATA_V0) for c in (1, 2, 3)))
        threading.Timer(0.3, release.set).start()
        answered = [struct.unpack_from(">i", read_frame(sock))[0] for _ in range(3)]
    assert answered == [1, 2, 3]
    assert calls == [1, 2, 3]  # one request of a connection at a time, as Kafka


def test_a_later_answer_lets_the_next_requests_run_and_keeps_the_order(door_factory):
    release = threading.Event()
    handled: list[int] = []

    def later_first(ctx: RequestContext, request: Any) -> Any:
        handled.append(ctx.correlation_id)
        if ctx.correlation_id == 1:

            def finish() -> Any:
                # answered only if request 3 was handled while this one waited
                assert release.wait(5), "the next requests were not handled meanwhile"
                return metadata_answer(ctx, request)

            return Later(finish)
        if ctx.correlation_id == 3:
            release.set()  # only reached while request 1 still waits
        return metadata_answer(ctx, request)

    _, port = door_factory({METADATA: later_first})
    with connect(port) as sock:
        sock.sendall(b"".join(request_frame(METADATA, 0, c, EMPTY_METADATA_V0) for c in (1, 2, 3)))
        answered = [struct.unpack_from(">i", read_frame(sock))[0] for _ in range(3)]
    assert answered == [1, 2, 3]
    assert handled == [1, 2, 3]
    assert release.is_set()


def test_a_later_that_fails_closes_the_connection_after_the_answers_before_it(door_factory):
    def second_fails(ctx: RequestContext, request: Any) -> Any:
        if ctx.correlation_id == 2:

            def finish() -> Any:
                raise RuntimeError("secret internal detail")

            return Later(finish)
        return Later(lambda: metadata_answer(ctx, request))

    _, port = door_factory({METADATA: second_fails})
    with connect(port) as sock:
        sock.sendall(b"".join(request_frame(METADATA, 0, c, EMPTY_METADATA_V0) for c in (1, 2, 3)))
        assert struct.unpack_from(">i", read_frame(sock))[0] == 1
        assert closed(sock)


class _Readiness:
    """What a WhenReady waits on: a flag another thread sets, waking the subscribers."""

    def __init__(self) -> None:
        self.ready = False
        self.polls = 0
        self._lock = threading.Lock()
        self._subscribers: list[Callable[[], None]] = []
        self.subscribed = threading.Event()

    def subscribe(self, wake: Callable[[], None]) -> Callable[[], None]:
        with self._lock:
            self._subscribers.append(wake)
        self.subscribed.set()
        return lambda: self._subscribers.remove(wake)

    def set_ready(self) -> None:
        self.ready = True
        with self._lock:
            for wake in list(self._subscribers):
                wake()

    @property
    def subscribers(self) -> int:
        with self._lock:
            return len(self._subscribers)


def test_a_when_ready_answer_waits_on_the_loop_and_keeps_the_order(door_factory):
    readiness = _Readiness()
    handled: list[int] = []

    def first_waits(ctx: RequestContext, request: Any) -> Any:
        handled.append(ctx.correlation_id)
        if ctx.correlation_id != 1:
            return metadata_answer(ctx, request)

        def poll() -> Any:
            readiness.polls += 1
            return metadata_answer(ctx, request) if readiness.ready else None

        # a recheck far off: only the wake-up can answer it within the test's timeouts
        return WhenReady(poll, readiness.subscribe, lambda: 60_000)

    _, port = door_factory({METADATA: first_waits})
    with connect(port) as sock:
        sock.sendall(b"".join(request_frame(METADATA, 0, c, EMPTY_METADATA_V0) for c in (1, 2, 3)))
        assert readiness.subscribed.wait(5)
        sock.settimeout(0.2)
        with pytest.raises(TimeoutError):
            sock.recv(1)  # request 1 is not ready, and 2 and 3 wait behind it
        assert readiness.polls == 1  # polled once, then waited for a wake-up
        sock.settimeout(5)
        threading.Thread(target=readiness.set_ready).start()  # woken from another thread
        answered = [struct.unpack_from(">i", read_frame(sock))[0] for _ in range(3)]
    assert answered == [1, 2, 3]
    assert handled == [1, 2, 3]
    assert readiness.subscribers == 0  # unsubscribed once answered


def test_a_when_ready_never_woken_is_polled_again_after_its_recheck(door_factory):
    # a produce whose replicas never catch up is answered at its timeout (REQUEST_TIMED_OUT)
    # by the poll that its recheck brings, with no wake-up at all
    polls: list[int] = []

    def times_out(ctx: RequestContext, request: Any) -> Any:
        def poll() -> Any:
            polls.append(1)
            return metadata_answer(ctx, request) if len(polls) > 1 else None

        return WhenReady(poll, lambda wake: lambda: None, lambda: 10)

    _, port = door_factory({METADATA: times_out})
    with connect(port) as sock:
        sock.sendall(request_frame(METADATA, 0, 1, EMPTY_METADATA_V0))
        assert struct.unpack_from(">i", read_frame(sock))[0] == 1
    assert len(polls) == 2


def test_a_when_ready_whose_poll_hands_back_a_later_finishes_on_a_request_thread(door_factory):
    # a fetch on a TLS listener: ready once measured on the loop, its bytes read on a thread
    finished_on: list[str] = []

    def ready_then_read(ctx: RequestContext, request: Any) -> Any:
        def finish() -> Any:
            finished_on.append(threading.current_thread().name)
            return metadata_answer(ctx, request)

        return WhenReady(lambda: Later(finish), lambda wake: lambda: None, lambda: 1000)

    _, port = door_factory({METADATA: ready_then_read})
    with connect(port) as sock:
        sock.sendall(b"".join(request_frame(METADATA, 0, c, EMPTY_METADATA_V0) for c in (1, 2)))
        answered = [struct.unpack_from(">i", read_frame(sock))[0] for _ in range(2)]
    assert answered == [1, 2]
    assert len(finished_on) == 2
    # the pool's threads, not the door's loop ("kafka-door")
    assert all(name.startswith("ThreadPoolExecutor") for name in finished_on), finished_on


def test_a_when_ready_whose_poll_fails_closes_the_connection_after_the_answers_before_it(
    door_factory,
):
    def second_fails(ctx: RequestContext, request: Any) -> Any:
        if ctx.correlation_id != 2:
            return metadata_answer(ctx, request)

        def poll() -> Any:
            raise RuntimeError("secret internal detail")

        return WhenReady(poll, lambda wake: lambda: None, lambda: 1000)

    _, port = door_factory({METADATA: second_fails})
    with connect(port) as sock:
        sock.sendall(b"".join(request_frame(METADATA, 0, c, EMPTY_METADATA_V0) for c in (1, 2, 3)))
        assert struct.unpack_from(">i", read_frame(sock))[0] == 1
        assert closed(sock)


def test_answers_handled_before_a_bad_frame_are_written_before_the_close(door_factory):
    release = threading.Event()

    def later(ctx: RequestContext, request: Any) -> Any:
        def finish() -> Any:
            release.wait(5)
            return metadata_answer(ctx, request)

        return Later(finish)

    _, port = door_factory({METADATA: later})
    with connect(port) as sock:
        sock.sendall(request_frame(METADATA, 0, 1, EMPTY_METADATA_V0))
        sock.sendall(request_frame(99, 0, 2))  # an unknown API key: closes the connection
        threading.Timer(0.2, release.set).start()
        assert struct.unpack_from(">i", read_frame(sock))[0] == 1
        assert closed(sock)


def test_a_failing_handler_closes_the_connection_without_its_text(door_factory):
    def broken(ctx: RequestContext, request: Any) -> Any:
        raise RuntimeError("secret internal detail")

    _, port = door_factory({METADATA: broken})
    with connect(port) as sock:
        sock.sendall(request_frame(METADATA, 0, 1, EMPTY_METADATA_V0))
        data = b""
        try:
            while chunk := sock.recv(4096):
                data += chunk
        except ConnectionResetError:
            pass
    assert b"secret" not in data
    assert data == b""


def test_no_response_is_written_for_no_response(door_factory):
    def silent(ctx: RequestContext, request: Any) -> Any:
        return NO_RESPONSE

    _, port = door_factory({PRODUCE: silent, METADATA: metadata_answer})
    # Produce v3, acks=0: transactional id null, acks 0, timeout, no topics
    body = struct.pack(">hhii", -1, 0, 1000, 0)
    with connect(port) as sock:
        sock.sendall(request_frame(PRODUCE, 3, 1, body))
        sock.sendall(request_frame(METADATA, 0, 2, EMPTY_METADATA_V0))
        assert struct.unpack_from(">i", read_frame(sock))[0] == 2


def test_file_slices_are_sent_from_the_file(door_factory, tmp_path: Path):
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(b"0123456789" * 1000)

    def fetch(ctx: RequestContext, request: Any) -> Any:
        fd = os.open(segment, os.O_RDONLY)
        cls = response_class(FETCH, ctx.api_version)
        fields = {
            "partition_index": 0,
            "error_code": 0,
            "high_watermark": 5,
            "aborted_transactions": None,
        }
        return encode_fetch_response(
            cls,
            {"throttle_time": 0, "error_code": 0, "session_id": 0},
            [("t", [(fields, FileSlice(fd, 1005, 3000))])],
        )

    _, port = door_factory({FETCH: fetch})
    # Fetch v4: replica -1, max wait 0, min bytes 0, max bytes 1 MiB, isolation 0, no topics
    body = struct.pack(">iiiib", -1, 0, 0, 1 << 20, 0) + struct.pack(">i", 0)
    with connect(port) as sock:
        sock.sendall(request_frame(FETCH, 4, 11, body))
        frame = read_frame(sock)
    assert struct.unpack_from(">i", frame)[0] == 11
    assert frame.endswith(struct.pack(">i", 3000) + (b"0123456789" * 1000)[1005:4005])


def test_a_future_answer_waits_on_the_loop_without_a_request_thread(door_factory):
    """A handler may answer with a Future (a JoinGroup waiting for its rebalance): the door
    awaits it on its loop, so more waiting requests than request threads (8 here) do not stop
    other connections from being served."""
    waiting: list[tuple[Future[Any], RequestContext, Any]] = []
    lock = threading.Lock()

    def deferred(ctx: RequestContext, request: Any) -> Any:
        if ctx.correlation_id < 100:
            return metadata_answer(ctx, request)
        future: Future[Any] = Future()
        with lock:
            waiting.append((future, ctx, request))
        return future

    _, port = door_factory({METADATA: deferred})
    parked = [connect(port) for _ in range(20)]
    try:
        for i, sock in enumerate(parked):
            sock.sendall(request_frame(METADATA, 0, 100 + i, EMPTY_METADATA_V0))
        with connect(port) as other:
            other.sendall(request_frame(METADATA, 0, 7, EMPTY_METADATA_V0))
            assert struct.unpack_from(">i", read_frame(other))[0] == 7
        deadline = threading.Event()
        for _ in range(500):
            with lock:
                if len(waiting) == 20:
                    break
            deadline.wait(0.01)
        with lock:
            assert len(waiting) == 20
            for future, ctx, request in waiting:
                future.set_result(metadata_answer(ctx, request))
        answered = sorted(struct.unpack_from(">i", read_frame(s))[0] for s in parked)
        assert answered == list(range(100, 120))
    finally:
        for sock in parked:
            sock.close()


def test_an_on_loop_handler_finishes_on_a_thread_before_the_next_request(door_factory):
    """Produce's handler runs on the loop and hands an append that would block to a request
    thread (``OnThread``): the connection's next request is handled only once that is done,
    so a producer's appends keep the order of its requests."""
    events: list[str] = []
    pool_threads: set[str] = set()

    def handler(ctx: RequestContext, request: Any) -> Any:
        events.append(f"handler {ctx.correlation_id}")
        assert not threading.current_thread().name.startswith("ThreadPoolExecutor")
        if ctx.correlation_id == 1:

            def run() -> Any:
                pool_threads.add(threading.current_thread().name)
                threading.Event().wait(0.3)  # request 2 is already sent: it must wait
                events.append("run 1")
                return metadata_answer(ctx, request)

            return OnThread(run)
        return metadata_answer(ctx, request)

    _, port = door_factory({METADATA: handler}, on_loop=True)
    with connect(port) as sock:
        sock.sendall(b"".join(request_frame(METADATA, 0, c, EMPTY_METADATA_V0) for c in (1, 2)))
        answered = [struct.unpack_from(">i", read_frame(sock))[0] for _ in range(2)]
    assert answered == [1, 2]
    assert events == ["handler 1", "run 1", "handler 2"]
    assert len(pool_threads) == 1 and next(iter(pool_threads)).startswith("ThreadPoolExecutor")


def test_an_on_loop_handler_that_fails_closes_the_connection(door_factory):
    def handler(ctx: RequestContext, request: Any) -> Any:
        if ctx.correlation_id == 2:
            return OnThread(lambda: 1 / 0)
        return metadata_answer(ctx, request)

    _, port = door_factory({METADATA: handler}, on_loop=True)
    with connect(port) as sock:
        sock.sendall(b"".join(request_frame(METADATA, 0, c, EMPTY_METADATA_V0) for c in (1, 2, 3)))
        assert struct.unpack_from(">i", read_frame(sock))[0] == 1
        assert closed(sock)


# -- shutdown --


def test_begin_shutdown_answers_what_was_read_and_reads_no_more(door_factory):
    """Kafka's stopProcessingRequests: the listener closes, an idle connection closes at once,
    and a busy one answers every request it had read, in order, reads nothing more (a request
    sent after is dropped unanswered), then closes."""
    release = threading.Event()
    second_handled = threading.Event()
    handled: list[int] = []

    def handler(ctx: RequestContext, request: Any) -> Any:
        handled.append(ctx.correlation_id)
        if ctx.correlation_id == 1:
            return Later(lambda: release.wait(5) and metadata_answer(ctx, request))
        if ctx.correlation_id == 2:
            second_handled.set()
        return metadata_answer(ctx, request)

    door, port = door_factory({METADATA: handler})
    with connect(port) as busy, connect(port) as idle:
        idle.sendall(request_frame(METADATA, 0, 7, EMPTY_METADATA_V0))
        assert struct.unpack_from(">i", read_frame(idle))[0] == 7
        busy.sendall(b"".join(request_frame(METADATA, 0, c, EMPTY_METADATA_V0) for c in (1, 2)))
        assert second_handled.wait(5)  # read and handled while request 1 waits

        door.begin_shutdown()

        assert closed(idle)
        with pytest.raises(ConnectionRefusedError):
            connect(port)
        busy.sendall(request_frame(METADATA, 0, 3, EMPTY_METADATA_V0))  # never read
        release.set()
        answered = [struct.unpack_from(">i", read_frame(busy))[0] for _ in range(2)]
        assert answered == [1, 2]
        assert closed(busy)
    assert handled == [7, 1, 2]
    door.stop()


def test_stop_ends_a_wait_on_the_core_and_answers_what_came_before(door_factory, caplog):
    """A request waiting on a future of the core (a JoinGroup in its rebalance) when the door
    stops is not answered (the stopped core will not complete it): its connection closes after
    the answers before it, without waiting out the grace."""
    caplog.set_level(logging.INFO)
    never: Future[Any] = Future()
    waiting = threading.Event()

    def handler(ctx: RequestContext, request: Any) -> Any:
        if ctx.correlation_id == 1:
            return metadata_answer(ctx, request)
        waiting.set()
        return never

    door, port = door_factory({METADATA: handler})
    with connect(port) as sock:
        sock.sendall(b"".join(request_frame(METADATA, 0, c, EMPTY_METADATA_V0) for c in (1, 2)))
        assert struct.unpack_from(">i", read_frame(sock))[0] == 1
        assert waiting.wait(5)
        door.stop(grace_s=60)  # within the grace: nothing to abort
        assert closed(sock)
    assert not never.cancelled()  # the core's future is left to the core
    assert "aborting" not in caplog.text
    assert "still waiting when the node stopped" in caplog.text


@pytest.fixture
def tls_contexts(tmp_path: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(the listener's, a client's trusting it)."""
    ca = CertificateAuthority("door-test-ca")
    _, _, keystore = ca.issue("CN=door", ["127.0.0.1"]).write(tmp_path / "certs", "door")
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(keystore)
    client = ssl.create_default_context(cafile=str(ca.write(tmp_path / "certs" / "ca.crt")))
    return server, client


def read_to_the_end(sock: socket.socket) -> int:
    """Bytes read until the connection ends (closed, reset, or its TLS cut short)."""
    got = 0
    with contextlib.suppress(ConnectionResetError, ssl.SSLError):
        while chunk := sock.recv(1 << 20):
            got += len(chunk)
    return got


@pytest.mark.parametrize("tls", [False, True], ids=["plaintext", "ssl"])
def test_stop_aborts_what_is_not_answered_within_the_grace(
    door_factory, caplog, tmp_path: Path, tls: bool, request: pytest.FixtureRequest
):
    """A connection still owing an answer when the grace ends (its wait never ready, or a
    client that does not read a large fetch: written with sendfile, or read and written
    through TLS) is aborted, and every task of the door's loop ends before the loop is closed:
    none is destroyed pending, and no callback fails on the closed transport."""
    caplog.set_level(logging.INFO)
    server_tls, client_tls = request.getfixturevalue("tls_contexts") if tls else (None, None)
    segment = tmp_path / "00000000000000000000.log"
    with segment.open("wb") as f:
        f.truncate(64 * 1024 * 1024)  # more than the socket buffers take unread
    subscribed = threading.Event()
    sending = threading.Event()

    def never_ready(ctx: RequestContext, request: Any) -> Any:
        def subscribe(wake: Callable[[], None]) -> Callable[[], None]:
            subscribed.set()
            return lambda: None

        return WhenReady(lambda: None, subscribe, lambda: 60_000)

    def fetch(ctx: RequestContext, request: Any) -> Any:
        sending.set()
        fields = {
            "partition_index": 0,
            "error_code": 0,
            "high_watermark": 5,
            "aborted_transactions": None,
        }
        return encode_fetch_response(
            response_class(FETCH, ctx.api_version),
            {"throttle_time": 0, "error_code": 0, "session_id": 0},
            [("t", [(fields, FileSlice(os.open(segment, os.O_RDONLY), 0, 64 * 1024 * 1024))])],
        )

    def connect_to(port: int) -> socket.socket:
        sock = connect(port)
        return (
            sock
            if client_tls is None
            else client_tls.wrap_socket(sock, server_hostname="127.0.0.1")
        )

    door, port = door_factory({METADATA: never_ready, FETCH: fetch}, ssl_context=server_tls)
    fetch_body = struct.pack(">iiiib", -1, 0, 0, 1 << 30, 0) + struct.pack(">i", 0)
    with connect_to(port) as waiting, connect_to(port) as not_reading:
        waiting.sendall(request_frame(METADATA, 0, 1, EMPTY_METADATA_V0))
        not_reading.sendall(request_frame(FETCH, 4, 2, fetch_body))
        assert subscribed.wait(5) and sending.wait(5)
        door.stop(grace_s=0.5)
        assert read_to_the_end(waiting) == 0
        assert read_to_the_end(not_reading) < 64 * 1024 * 1024  # cut short
    gc.collect()
    assert "aborting 2 Kafka connections" in caplog.text
    assert "Task was destroyed" not in caplog.text
    assert "Exception in callback" not in caplog.text
    assert "Event loop is closed" not in caplog.text
