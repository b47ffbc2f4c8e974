"""TLS for a listener with ``ssl.client.auth=requested``: ask clients for a certificate, accept
those without one.

gRPC Python's server credentials either require a verified client certificate or ask for none
(``require_client_auth=False`` sends no CertificateRequest, so a client never presents its
certificate and ``auth_context`` has no ``x509_subject``). Kafka's ``requested`` (Java's
``setWantClientAuth``) asks and accepts both, so for such a listener the node terminates TLS
itself, with Python's ``ssl`` (``CERT_OPTIONAL``: a certificate given must chain to the
truststore, else the handshake fails, as in Kafka), and relays the decrypted HTTP/2 bytes to the
listener's gRPC server, which listens in plaintext on a loopback port of its own.

The gRPC server sees every relayed connection coming from the terminator's socket
(``ipv4:127.0.0.1:<port>``); :meth:`TlsTerminator.peer` maps that address back to the client's
certificate subject (RFC 2253, as gRPC's ``x509_subject``) and its real address. The listener's
:class:`~node.grpc_door.authentication.AuthenticationInterceptor` takes the principal from there and
refuses calls from any connection the terminator did not make (a local process connecting to
the loopback port directly).

Rotation as for the other SSL listeners: before every handshake the files are read again, and
new, valid certificates are taken (a bad rotation is logged and the old ones kept).

One asyncio event loop in a thread of its own does the accepting, handshakes and relaying.
Thread-safety: :meth:`TlsTerminator.peer` may be called from any thread.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from node.security.tls import Certificates, SslConfig, load_certificates
from odradek.errors import InvalidConfigError

__all__ = ["RelayedPeer", "TlsTerminator", "rfc2253_subject"]

log = logging.getLogger(__name__)

_BUFFER = 256 * 1024
_HANDSHAKE_TIMEOUT_S = 10.0
# Python's ssl names attributes by their long names; RFC 2253 (and gRPC's x509_subject, printed
# by OpenSSL) by the short ones
_SHORT_NAMES = {
    "commonName": "CN",
    "organizationalUnitName": "OU",
    "organizationName": "O",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "countryName": "C",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def _escape(value: str) -> str:
    """RFC 2253's escaping of an attribute value."""
    out = "".join("\\" + ch if ch in ',+"\\<>;' else ch for ch in value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def rfc2253_subject(peercert: dict[str, Any]) -> str:
    """The subject of ``ssl.SSLSocket.getpeercert()`` in RFC 2253 form, most specific first
    (``CN=alice,OU=Users,O=Example``), as gRPC's ``x509_subject`` gives it."""
    return ",".join(
        "+".join(f"{_SHORT_NAMES.get(k, k)}={_escape(v)}" for k, v in rdn)
        for rdn in reversed(peercert.get("subject", ()))
    )


@dataclass(frozen=True, slots=True)
class RelayedPeer:
    """Who is behind one relayed connection."""

    subject: str | None
    """The client certificate's subject (RFC 2253), ``None`` without a certificate."""
    client_address: str
    """The client's address, as gRPC writes peers (``ipv4:10.0.0.7:50123``)."""


def _grpc_peer(address: tuple[Any, ...]) -> str:
    host, port = address[0], address[1]
    return f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"


def _context(c: Certificates) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["h2"])  # gRPC clients insist on HTTP/2 by ALPN
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "keystore.pem"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(c.key + c.chain)
        context.load_cert_chain(path)
    if c.cas is not None:
        context.load_verify_locations(cadata=c.cas.decode())
    context.verify_mode = ssl.CERT_OPTIONAL
    return context


class TlsTerminator:
    """Terminates TLS on ``host:port`` for one listener and relays to ``127.0.0.1:backend``.

    ``bind()`` (raises ``OSError`` for a taken address), ``start()``, ``stop()``."""

    def __init__(self, config: SslConfig, listener: str, host: str, port: int) -> None:
        """Raises ``InvalidConfigError`` for missing or bad certificates."""
        if not config.has_truststore:
            raise InvalidConfigError(
                f"listener {listener}: ssl.client.auth=requested needs a truststore "
                "(ssl.truststore.location) to check the certificates clients give"
            )
        self._config = config
        self._listener = listener
        self._host = host
        self._port = port
        self._certificates = load_certificates(config, listener)
        self._current = _context(self._certificates)
        self._listening = self._current
        """The context the listener starts TLS with (its SNI callback swaps in _current)."""
        self._lock = threading.Lock()
        self._peers: dict[str, RelayedPeer] = {}
        self._writers: set[asyncio.StreamWriter] = set()
        """The relayed connections' two ends (the loop's thread only)."""
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None
        self.backend_port = 0
        """The gRPC server's loopback port (set before ``start``)."""
        self.reloads = 0

    def bind(self) -> int:
        """Binds the listener's address; returns the bound port."""
        # the first context's SNI callback hands each handshake the current certificates
        self._current.sni_callback = self._on_client_hello
        self._listening = self._current
        # plain TCP, TLS started on each connection (_serve): a connection that never completes
        # its handshake (a liveness probe's connect-and-close) is then closed here, where
        # asyncio's own server-side TLS left its transport unclosed
        self._server = self._loop.run_until_complete(
            asyncio.start_server(
                self._serve,
                self._host,
                self._port,
                reuse_address=True,
                start_serving=False,
            )
        )
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    def start(self) -> None:
        assert self._server is not None and self.backend_port
        self._thread = threading.Thread(
            target=self._run, name=f"tls-{self._listener.lower()}", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        assert self._server is not None
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._server.start_serving())
        self._loop.run_forever()

    def stop(self) -> None:
        """Closes the listening socket and every relayed connection. Safe to call twice."""
        if self._server is None:
            return
        server, self._server = self._server, None

        async def close() -> None:
            server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            # a closed transport lets go of its socket in a callback of the loop's next turn:
            # run it before the loop closes (else the socket is left to the garbage collector,
            # which warns of it unclosed)
            for writer in list(self._writers):
                writer.transport.abort()
            self._writers.clear()
            await asyncio.sleep(0)
            await asyncio.sleep(0)

        if self._thread is not None and self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        else:
            self._loop.run_until_complete(close())
        self._loop.close()

    def peer(self, grpc_peer: str) -> RelayedPeer | None:
        """Who is behind the relayed connection gRPC calls ``grpc_peer``; ``None`` for a
        connection the terminator did not make."""
        with self._lock:
            return self._peers.get(grpc_peer)

    # -- the event loop's thread ------------------------------------------------------------

    def _on_client_hello(self, ssl_object: ssl.SSLObject, name: str | None, _: Any) -> None:
        try:
            self._maybe_reload()
        except Exception:  # never fail a handshake because of a reload
            log.exception("listener %s: reloading certificates failed", self._listener)
        ssl_object.context = self._current

    def _maybe_reload(self) -> None:
        try:
            certificates = load_certificates(self._config, self._listener)
        except InvalidConfigError as e:
            log.warning("listener %s keeps its certificates: %s", self._listener, e)
            return
        if certificates == self._certificates:
            return
        self._current = _context(certificates)
        self._certificates = certificates
        self.reloads += 1
        log.info("listener %s: certificates reloaded", self._listener)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await writer.start_tls(self._listening, ssl_handshake_timeout=_HANDSHAKE_TIMEOUT_S)
        except (OSError, ssl.SSLError, TimeoutError, asyncio.IncompleteReadError) as e:
            log.debug("listener %s: a TLS handshake failed: %s", self._listener, e)
            writer.transport.abort()
            return
        client = _grpc_peer(writer.get_extra_info("peername"))
        peercert = writer.get_extra_info("peercert")
        subject = rfc2253_subject(peercert) if peercert else None
        try:
            backend_reader, backend_writer = await asyncio.open_connection(
                "127.0.0.1", self.backend_port
            )
        except OSError as e:
            log.warning("listener %s: cannot reach its gRPC server: %s", self._listener, e)
            writer.close()
            return
        relayed = _grpc_peer(backend_writer.get_extra_info("sockname"))
        with self._lock:
            self._peers[relayed] = RelayedPeer(subject, client)
        self._writers.update((writer, backend_writer))
        try:
            await asyncio.gather(
                self._pipe(reader, backend_writer), self._pipe(backend_reader, writer)
            )
        finally:
            with self._lock:
                self._peers.pop(relayed, None)
            # both ends closed at once: a TLS close_notify exchange with a client already gone
            # would keep the client's socket open (its transport then collected unclosed);
            # HTTP/2 has ended the stream by then
            for w in (writer, backend_writer):
                w.transport.abort()
                self._writers.discard(w)

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(_BUFFER):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, ssl.SSLError, OSError):
            pass
        finally:
            # the other direction ends when its peer closes too
            try:
                if writer.can_write_eof():
                    writer.write_eof()
                else:
                    writer.close()
            except (OSError, RuntimeError):
                writer.close()
