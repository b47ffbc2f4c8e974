"""gRPC's TLS credentials for a node's SSL listeners and its own connections to other nodes,
made from the listener's :class:`~node.security.tls.SslConfig`.

**Rotation.** gRPC calls :meth:`CertificateReloader.fetch` before every TLS handshake; it reads
the files and, when one changed, checks and takes them; a rotation caught half-way or an
unreadable file is logged and the previous certificates kept (:mod:`node.security.tls`).

Thread-safety: :class:`CertificateReloader` is thread-safe.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import grpc

from node.security.tls import Certificates, SslConfig, load_certificates
from odradek.errors import InvalidConfigError

__all__ = ["CertificateReloader", "channel_credentials", "server_credentials"]

log = logging.getLogger(__name__)


class CertificateReloader:
    """Gives gRPC the listener's certificates, reading the files again when they change.

    Thread-safe: gRPC calls :meth:`fetch` from its handshake threads."""

    def __init__(self, config: SslConfig, listener: str) -> None:
        self._config = config
        self._listener = listener
        self._lock = threading.Lock()
        self._signature = self._stat()
        self.certificates = load_certificates(config, listener)
        self.reloads = 0
        """How many times new certificates were taken (for tests and logs)."""

    def _paths(self) -> list[str]:
        return [p for p in (self._config.keystore_location, self._config.truststore_location) if p]

    def _stat(self) -> tuple[bytes, ...]:
        # the files' contents, not their modification times: two writes within the file
        # system's timestamp granularity would look like one (the files are a few KiB, read
        # once per new connection, next to a TLS handshake)
        out = []
        for path in self._paths():
            try:
                out.append(Path(path).read_bytes())
            except OSError:
                out.append(b"")
        return tuple(out)

    def initial(self) -> grpc.ServerCertificateConfiguration:
        return self._configuration(self.certificates)

    @staticmethod
    def _configuration(c: Certificates) -> grpc.ServerCertificateConfiguration:
        return grpc.ssl_server_certificate_configuration([(c.key, c.chain)], c.cas)

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """New certificates if the files changed and are valid, else ``None`` (keep)."""
        try:
            return self._fetch()
        except Exception:  # never fail a handshake because of a reload
            log.exception("listener %s: reloading certificates failed", self._listener)
            return None

    def _fetch(self) -> grpc.ServerCertificateConfiguration | None:
        signature = self._stat()
        with self._lock:
            if signature == self._signature:
                return None
            self._signature = signature
            try:
                certificates = load_certificates(self._config, self._listener)
            except InvalidConfigError as e:
                log.warning("listener %s keeps its certificates: %s", self._listener, e)
                return None
            if certificates == self.certificates:
                return None
            self.certificates = certificates
            self.reloads += 1
        log.info("listener %s: certificates reloaded", self._listener)
        return self._configuration(certificates)


def server_credentials(
    config: SslConfig, listener: str
) -> tuple[grpc.ServerCredentials, CertificateReloader]:
    """The credentials of an SSL listener, reloading its files on change. Raises
    ``InvalidConfigError`` for missing or bad certificates."""
    reloader = CertificateReloader(config, listener)
    credentials = grpc.dynamic_ssl_server_credentials(
        reloader.initial(),
        reloader.fetch,  # type: ignore[arg-type]  # None keeps the current certificates
        require_client_authentication=config.client_auth == "required",
    )
    return credentials, reloader


def channel_credentials(config: SslConfig, listener: str) -> grpc.ChannelCredentials:
    """Credentials for a node's own connections to another node's SSL listener: the
    truststore to check the server, the keystore as the client certificate (mTLS). Read
    when called; raises ``InvalidConfigError``."""
    c = load_certificates(config, listener)
    return grpc.ssl_channel_credentials(
        root_certificates=c.cas, private_key=c.key, certificate_chain=c.chain
    )
