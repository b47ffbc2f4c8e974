"""The SDK and the console keep no password: after the first SCRAM exchange they hold only
SCRAM's salted password, and with it authenticate again when the node forgets their session
tokens (as after a restart or an expiry). A credential changed on the server (another salt)
ends that: the user must log in again. In-process node with a SASL_SSL listener and an
authorizer (the fixture of ``test_sasl.py``), real ZooKeeper, real clients."""

from __future__ import annotations

import gc
import re
import sys
import threading
import types
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
import pytest
import uvicorn

from node.security.sasl import SaslSessions
from odradek import Admin, Consumer, Producer, TopicPartition
from odradek.admin import ScramUpsertion
from odradek.console.app import ConsoleConfig, create_app
from odradek.console.refusals import ActionError
from odradek.console.server import bind, make_sessions
from odradek.errors import SaslAuthenticationFailedError
from tests.integration.helpers import wait_for
from tests.integration.security.test_sasl import Setup
from tests.integration.security.test_sasl import setup as setup  # the fixture

PASSWORD = "alice-secret"


def _forget_tokens(sessions: SaslSessions | None) -> int:
    """What a node restart or an expiry does to the node's session tokens; how many there
    were."""
    assert sessions is not None
    with sessions._lock:
        n = len(sessions._sessions)
        sessions._sessions.clear()
        return n


T = TypeVar("T")


def _after_refusal(call: Callable[[], T]) -> T:
    """``call``, which may first be refused once for the forgotten token (the SDK drops a
    refused token and authenticates again on the next call, odradek.client.sasl)."""
    try:
        return call()
    except (SaslAuthenticationFailedError, ActionError) as exc:
        assert "unknown or expired" in str(exc)
        return call()


def _tokens(sessions: SaslSessions | None) -> int:
    assert sessions is not None
    with sessions._lock:
        return len(sessions._sessions)


def _holds(root: object, secret: str) -> list[str]:
    """Every object reachable from ``root`` (through Python references: the client objects,
    their dicts, closures, lists ...) that is or contains the password, as str or bytes.
    Modules' namespaces (where this test's own constant lives) are not followed, nor a
    function's globals."""
    raw = secret.encode()
    seen: set[int] = {id(m.__dict__) for m in list(sys.modules.values()) if m is not None}
    found: list[str] = []
    stack: list[Any] = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, str):
            if secret in obj:
                found.append(repr(obj))
            continue
        if isinstance(obj, bytes | bytearray):
            if raw in obj:
                found.append(repr(obj))
            continue
        if isinstance(obj, type | types.ModuleType | types.CodeType):
            continue
        if isinstance(obj, types.FunctionType):
            stack.extend([obj.__closure__, obj.__defaults__, obj.__kwdefaults__])
            continue
        stack.extend(gc.get_referents(obj))
    return found


def test_sdk_clients_reauthenticate_from_the_salted_password(setup: Setup) -> None:
    sessions = setup.node.sasl_sessions
    with (
        Admin(setup.sasl, **setup.user("alice", PASSWORD)) as admin,
        Producer(setup.sasl, **setup.user("alice", PASSWORD)) as producer,
    ):
        # before the first exchange the client needs the password
        assert _holds(admin, PASSWORD)
        assert admin.list_topics() == ["orders"]
        salted = admin.sasl_salted_password()
        assert salted is not None and salted.iterations == 8192
        assert _holds(admin, PASSWORD) == []
        producer.send("orders", b"one").result(timeout=30)
        assert _holds(producer, PASSWORD) == []
        assert _forget_tokens(sessions) >= 2
        # both authenticate again, without the password
        assert _after_refusal(admin.list_topics) == ["orders"]
        _after_refusal(lambda: producer.send("orders", b"two").result(timeout=30))
        assert _tokens(sessions) >= 2
        assert _holds(admin, PASSWORD) == [] and _holds(producer, PASSWORD) == []
    # a client given only the salted password
    options = {**setup.user("alice", PASSWORD), "sasl_plain_password": None}
    with Consumer(setup.sasl, **options, sasl_salted_password=salted) as consumer:
        consumer.assign([TopicPartition("orders", 0)])
        consumer.seek_to_beginning()
        values: list[bytes | None] = []
        while len(values) < 2:
            values += [r.value for r in consumer.poll(timeout_ms=1000)]
        assert values[:2] == [b"one", b"two"]


def test_a_credential_changed_on_the_server_needs_a_new_login(setup: Setup) -> None:
    with Admin(setup.sasl, **setup.user("alice", PASSWORD)) as alice:
        assert alice.list_topics() == ["orders"]
        with Admin(setup.internal, **setup.admin) as admin:
            # the same password, salted anew
            assert admin.alter_user_scram_credentials(
                [ScramUpsertion("alice", "SCRAM-SHA-256", PASSWORD, 8192)]
            ) == {"alice": None}
        _forget_tokens(setup.node.sasl_sessions)
        with pytest.raises(SaslAuthenticationFailedError, match="log in again"):
            _after_refusal(alice.list_topics)
    # a new login with the password works
    with Admin(setup.sasl, **setup.user("alice", PASSWORD)) as alice:
        assert alice.list_topics() == ["orders"]


def test_console_pages_read_on_through_a_forgotten_token(setup: Setup) -> None:
    """Through the console's application (in-process, served by uvicorn on loopback): after login a
    page still loads when the node has forgotten the session's token — the console asks again
    once for a page (a read) — and the session holds no password."""
    security = {
        "security_protocol": "SASL_SSL",
        "ssl_cafile": setup.cafile,
        "sasl_mechanism": "SCRAM-SHA-256",
    }
    sessions = make_sessions(setup.sasl, security)
    app = create_app(sessions, ConsoleConfig(secure_cookie=False))
    sock = bind("127.0.0.1:0")
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started, "the console to serve")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            form = client.get("/login").text
            csrf = re.search(r'name="csrf" value="([^"]+)"', form)
            assert csrf is not None
            answer = client.post(
                "/login",
                data={"csrf": csrf[1], "username": "alice", "password": PASSWORD, "next": "/"},
                follow_redirects=False,
            )
            assert answer.status_code == 303
            assert "orders" in client.get("/topics").text
            assert _holds(sessions, PASSWORD) == []
            assert _forget_tokens(setup.node.sasl_sessions) >= 1
            page = client.get("/topics")
            assert page.status_code == 200 and "orders" in page.text
            assert _tokens(setup.node.sasl_sessions) >= 1
            assert _holds(sessions, PASSWORD) == []
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
        sessions.close()


def test_a_console_session_holds_no_password_and_reauthenticates(setup: Setup) -> None:
    security = {
        "security_protocol": "SASL_SSL",
        "ssl_cafile": setup.cafile,
        "sasl_mechanism": "SCRAM-SHA-256",
    }
    sessions = make_sessions(setup.sasl, security)
    try:
        with pytest.raises(ActionError, match="wrong"):
            sessions.login(sessions.new(), "alice", "not-her-password")
        session = sessions.login(sessions.new(), "alice", PASSWORD)
        view = session.view
        assert view is not None
        assert [t.name for t in view.topics()] == ["orders"]
        assert view.produce("orders", 0, None, b"from the console", ())[0] == 0
        assert _holds(sessions, PASSWORD) == []
        assert _forget_tokens(setup.node.sasl_sessions) >= 1
        # every client of the view (its admin, its producer, a new consumer) authenticates again
        assert [t.name for t in _after_refusal(view.topics)] == ["orders"]
        assert _after_refusal(lambda: view.produce("orders", 0, None, b"again", ()))[0] == 0
        with view.consumer() as consumer:
            consumer.assign([TopicPartition("orders", 0)])
            consumer.seek_to_beginning()
            got: list[bytes | None] = []
            while b"again" not in got:
                got += [r.value for r in consumer.poll(timeout_ms=1000)]
        assert _holds(sessions, PASSWORD) == []
    finally:
        sessions.close()
