"""Server-side TLS of a listener as a Python ``ssl.SSLContext``, reloaded as its files change.

For the sockets the node serves itself (the Kafka door's SSL and SASL_SSL listeners): the
listener's keystore (key + chain) and truststore (``node.security.tls``, PEM), TLS 1.2 or newer,
and the client certificate as ``ssl.client.auth`` asks: ``required`` (CERT_REQUIRED: a client
without one, or with one the truststore does not vouch for, fails the handshake), ``requested``
(CERT_OPTIONAL: a certificate given must verify; none is fine) or ``none``.

Certificates are read again at each ClientHello (the SNI callback) and a new context is put in
place when they changed, as the gRPC listeners' ``CertificateReloader`` does: a renewed
certificate is served without a restart; a broken file keeps the old one (logged).

Thread-safety: the callback runs on the serving loop's thread; ``context`` may be read from any.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
from pathlib import Path
from typing import Any

from node.security.tls import Certificates, SslConfig, load_certificates
from odradek.errors import InvalidConfigError

__all__ = ["ReloadingServerContext", "server_context"]

log = logging.getLogger(__name__)

_VERIFY = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}


def server_context(
    c: Certificates, client_auth: str, alpn: list[str] | None = None
) -> ssl.SSLContext:
    """A server context for these certificates (``ssl.client.auth`` semantics as above)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if alpn:
        context.set_alpn_protocols(alpn)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "keystore.pem"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(c.key + c.chain)
        context.load_cert_chain(path)
    if c.cas is not None:
        context.load_verify_locations(cadata=c.cas.decode())
    context.verify_mode = _VERIFY[client_auth] if c.cas is not None else ssl.CERT_NONE
    return context


class ReloadingServerContext:
    """A listener's server context, swapped for a new one when its PEM files change."""

    def __init__(self, config: SslConfig, listener: str, alpn: list[str] | None = None) -> None:
        """Raises ``InvalidConfigError`` for missing or bad certificates."""
        if config.client_auth in ("required", "requested") and not config.has_truststore:
            raise InvalidConfigError(
                f"listener {listener}: ssl.client.auth={config.client_auth} needs a truststore "
                "(ssl.truststore.location)"
            )
        self._config = config
        self._listener = listener
        self._alpn = alpn
        self._certificates = load_certificates(config, listener)
        self._current = server_context(self._certificates, config.client_auth, alpn)
        self.reloads = 0
        # the context handed to the server: its SNI callback moves each handshake onto the
        # newest context
        self.context = server_context(self._certificates, config.client_auth, alpn)
        self.context.sni_callback = self._on_client_hello

    def _on_client_hello(self, ssl_object: ssl.SSLObject, name: str | None, _: Any) -> None:
        try:
            certificates = load_certificates(self._config, self._listener)
        except InvalidConfigError as e:
            log.warning("listener %s keeps its certificates: %s", self._listener, e)
        except Exception:  # never fail a handshake because of a reload
            log.exception("listener %s: reloading certificates failed", self._listener)
        else:
            if certificates != self._certificates:
                self._current = server_context(certificates, self._config.client_auth, self._alpn)
                self._certificates = certificates
                self.reloads += 1
                log.info("listener %s: certificates reloaded", self._listener)
        ssl_object.context = self._current
