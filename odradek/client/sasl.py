"""The client side of SASL/SCRAM on a SASL_SSL listener (see ``node/security/sasl.py``).

For each node it talks to, the client runs the SCRAM exchange once (SaslHandshake, then two
SaslAuthenticate calls), checks the node's signature, and keeps the session token the node
gives; every call to that node then carries the token in the ``odradek-sasl-token`` metadata
(:class:`SaslTokenInterceptor`). When the node refuses the token (it restarted, or the session
expired), the token is dropped and the next call authenticates again.

The secret all of a client's nodes are proved with is one :class:`ScramSecret`: the password
until the first exchange succeeds (the node's signature checked), then only SCRAM's salted
password for the node's salt and iterations (:class:`~odradek.scram.SaltedPassword`); the
password is dropped. Later exchanges, to any node, prove the user from the salted password; if
a node answers with another salt or iteration count (the credential was changed) the exchange
fails with :class:`~odradek.errors.SaslAuthenticationFailedError`: log in again.

Thread-safety: thread-safe (one exchange at a time per node, under a lock).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import grpc

from odradek.client.errors import error_from_code, error_from_rpc
from odradek.scram import SaltedPassword, ScramClient
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = ["SASL_TOKEN_METADATA_KEY", "SaslAuthenticator", "SaslTokenInterceptor", "ScramSecret"]

SASL_TOKEN_METADATA_KEY = "odradek-sasl-token"
_TIMEOUT_S = 30.0


class ScramSecret:
    """What a client proves its user with, shared by its nodes' authenticators: the password
    (or a salted password given) until an exchange succeeds, then only the salted password
    (see the module docstring). ``repr`` shows neither. Thread-safe."""

    def __init__(
        self,
        mechanism: str,
        username: str,
        password: str | None = None,
        salted: SaltedPassword | None = None,
    ) -> None:
        if (password is None) == (salted is None):
            raise ValueError("give either the password or the salted password")
        self.mechanism = mechanism
        self.username = username
        self._lock = threading.Lock()
        self._password = password
        self._salted = salted

    def client(self) -> ScramClient:
        """A client for one exchange, from the salted password once there is one."""
        with self._lock:
            if self._salted is not None:
                return ScramClient(self.mechanism, self.username, salted=self._salted)
            return ScramClient(self.mechanism, self.username, self._password)

    def succeeded(self, client: ScramClient) -> None:
        """``client``'s exchange succeeded (the node's signature checked): keep its salted
        password and drop the password."""
        with self._lock:
            if client.salted_password is not None:
                self._salted = client.salted_password
                self._password = None

    @property
    def salted_password(self) -> SaltedPassword | None:
        """The salted password once an exchange succeeded (or given), else ``None``."""
        with self._lock:
            return self._salted

    def holds_password(self) -> bool:
        """Whether the password is still kept (no exchange has succeeded yet)."""
        with self._lock:
            return self._password is not None

    def __repr__(self) -> str:
        return f"ScramSecret(mechanism={self.mechanism!r}, username={self.username!r})"


class SaslAuthenticator:
    """Authenticates to one node over ``channel`` with ``secret`` and keeps the session
    token."""

    def __init__(self, channel: grpc.Channel, address: str, secret: ScramSecret) -> None:
        self._stub = pb_grpc.SaslStub(channel)
        self._address = address
        self._secret = secret
        self._mechanism = secret.mechanism
        self._lock = threading.Lock()
        self._token: str | None = None

    def token(self) -> str:
        """The session token, authenticating first if there is none. Raises
        :class:`~odradek.errors.SaslAuthenticationFailedError` (a wrong password or unknown
        user), :class:`~odradek.errors.UnsupportedSaslMechanismError`, or the transport's
        typed error."""
        with self._lock:
            if self._token is None:
                self._token = self._authenticate()
            return self._token

    def forget(self, token: str) -> None:
        """Drops ``token`` (the node refused it): the next call authenticates again."""
        with self._lock:
            if self._token == token:
                self._token = None

    def _authenticate(self) -> str:
        try:
            handshake = self._stub.SaslHandshake(
                pb.SaslHandshakeRequest(mechanism=self._mechanism), timeout=_TIMEOUT_S
            )
            if handshake.error_code:
                raise error_from_code(
                    handshake.error_code,
                    f"{self._mechanism} (the node offers {', '.join(handshake.mechanisms)})",
                    f"node {self._address}",
                )
            client = self._secret.client()
            first = self._step(handshake.session_id, client.first_message())
            final = self._step(handshake.session_id, client.final_message(first.auth_bytes))
        except grpc.RpcError as exc:
            raise error_from_rpc(exc, self._address) from None
        client.verify_server_final(final.auth_bytes)
        self._secret.succeeded(client)
        return final.token

    def _step(self, session_id: str, auth_bytes: bytes) -> pb.SaslAuthenticateResponse:
        answer: pb.SaslAuthenticateResponse = self._stub.SaslAuthenticate(
            pb.SaslAuthenticateRequest(session_id=session_id, auth_bytes=auth_bytes),
            timeout=_TIMEOUT_S,
        )
        if answer.error_code:
            raise error_from_code(answer.error_code, answer.error_message, f"node {self._address}")
        return answer


if TYPE_CHECKING:
    _CallDetails = grpc.ClientCallDetails
    _UnaryUnary = grpc.UnaryUnaryClientInterceptor[Any, Any]
    _UnaryStream = grpc.UnaryStreamClientInterceptor[Any, Any]
    _StreamUnary = grpc.StreamUnaryClientInterceptor[Any, Any]
    _StreamStream = grpc.StreamStreamClientInterceptor[Any, Any]
else:  # not subscriptable at run time
    _CallDetails = grpc.ClientCallDetails
    _UnaryUnary = grpc.UnaryUnaryClientInterceptor
    _UnaryStream = grpc.UnaryStreamClientInterceptor
    _StreamUnary = grpc.StreamUnaryClientInterceptor
    _StreamStream = grpc.StreamStreamClientInterceptor


class _Details(_CallDetails):
    def __init__(
        self, details: grpc.ClientCallDetails, metadata: tuple[tuple[str, str | bytes], ...]
    ) -> None:
        self.method = details.method
        self.timeout = details.timeout
        self.metadata = metadata
        self.credentials = details.credentials
        self.wait_for_ready = getattr(details, "wait_for_ready", None)
        self.compression = getattr(details, "compression", None)


class SaslTokenInterceptor(_UnaryUnary, _UnaryStream, _StreamUnary, _StreamStream):
    """Adds the session token to every call but the Sasl service's own."""

    def __init__(self, authenticator: SaslAuthenticator) -> None:
        self._auth = authenticator

    def _intercept(
        self, continuation: Callable[[Any, Any], Any], details: Any, request: Any
    ) -> Any:
        if str(details.method).startswith("/odradek.v1.Sasl/"):
            return continuation(details, request)
        token = self._auth.token()
        metadata = (*(details.metadata or ()), (SASL_TOKEN_METADATA_KEY, token))
        call = continuation(_Details(details, metadata), request)

        def on_done(done: Any) -> None:
            try:
                refused = done.code() is grpc.StatusCode.UNAUTHENTICATED
            except Exception:
                return
            if refused:
                self._auth.forget(token)

        if hasattr(call, "add_done_callback"):
            call.add_done_callback(on_done)
        return call

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return self._intercept(continuation, details, request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return self._intercept(continuation, details, request)

    def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
        return self._intercept(continuation, details, requests)

    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return self._intercept(continuation, details, requests)
