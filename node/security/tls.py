"""TLS for listeners and inter-broker connections, with Kafka's ``ssl.*`` settings in PEM form.

Kafka's PEM keystore (KIP-651)::

    ssl.keystore.type=PEM
    ssl.keystore.location=/etc/odradek/node-1.pem     # private key, then certificate chain
    ssl.truststore.type=PEM
    ssl.truststore.location=/etc/odradek/ca.crt       # CA certificate(s)
    ssl.client.auth=required                          # required | requested | none
    ssl.principal.mapping.rules=DEFAULT

or the PEM text itself in ``ssl.keystore.key`` + ``ssl.keystore.certificate.chain`` and
``ssl.truststore.certificates``. ``listener.name.<listener>.ssl.*`` overrides a setting for one
listener. Keys must be unencrypted (``ssl.key.password`` is not supported).

**Rotation.** gRPC calls :meth:`~node.grpc_door.tls_credentials.CertificateReloader.fetch`
before every TLS handshake; it reads the files and, when one changed, checks and takes them.
A keystore whose key does not match its certificate (a rotation caught half-way) or unreadable
files are logged and the previous certificates kept, so new connections never fail because of
a rotation in progress. Connections already open keep the certificate they were made with.

**Client authentication.** ``required``: a client without a certificate signed by the
truststore's CA is refused during the handshake. ``none``: no certificate is asked for.
``requested`` (ask, and accept clients without one) cannot be expressed with gRPC Python's
server credentials, which either require a verified certificate or ask for none: the node
terminates such a listener's TLS itself (:mod:`node.security.tls_terminator`).

Config values are pure; :func:`load_certificates` reads files. gRPC's credentials are made in
:mod:`node.grpc_door.tls_credentials`. Thread-safe (immutable values).
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from node.security.ssl_principal_mapper import SslPrincipalMapper
from odradek.errors import InvalidConfigError

__all__ = [
    "CLIENT_AUTH_VALUES",
    "Certificates",
    "SslConfig",
    "load_certificates",
    "split_pem",
]

CLIENT_AUTH_VALUES = ("required", "requested", "none")
_KEY_LABELS = ("PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY")


@dataclass(frozen=True, slots=True)
class SslConfig:
    """One listener's TLS settings (Kafka's names, PEM only). Validated on creation."""

    keystore_type: str = "PEM"
    """``ssl.keystore.type``: only PEM."""
    keystore_location: str | None = None
    """``ssl.keystore.location``: a PEM file with the private key and the certificate chain;
    reloaded when it changes."""
    keystore_key: str | None = None
    """``ssl.keystore.key``: the private key as PEM text (with ``keystore_certificate_chain``)."""
    keystore_certificate_chain: str | None = None
    """``ssl.keystore.certificate.chain``: the certificate chain as PEM text."""
    truststore_type: str = "PEM"
    """``ssl.truststore.type``: only PEM."""
    truststore_location: str | None = None
    """``ssl.truststore.location``: the CA certificates (PEM) peers' certificates must chain to;
    reloaded when it changes."""
    truststore_certificates: str | None = None
    """``ssl.truststore.certificates``: the CA certificates as PEM text."""
    client_auth: str = "none"
    """``ssl.client.auth``: required, requested (node/security/tls_terminator.py) or none."""
    principal_mapping_rules: str = "DEFAULT"
    """``ssl.principal.mapping.rules``: certificate subject → principal name."""

    def __post_init__(self) -> None:
        for name in ("keystore_type", "truststore_type"):
            if getattr(self, name).upper() != "PEM":
                raise InvalidConfigError(
                    f"ssl.{name.replace('_', '.')} {getattr(self, name)!r} is not supported "
                    "(only PEM)"
                )
        if self.client_auth not in CLIENT_AUTH_VALUES:
            raise InvalidConfigError(
                f"ssl.client.auth must be one of {', '.join(CLIENT_AUTH_VALUES)}, "
                f"not {self.client_auth!r}"
            )
        if self.keystore_location and (self.keystore_key or self.keystore_certificate_chain):
            raise InvalidConfigError(
                "give either ssl.keystore.location or ssl.keystore.key and "
                "ssl.keystore.certificate.chain, not both"
            )
        if bool(self.keystore_key) != bool(self.keystore_certificate_chain):
            raise InvalidConfigError(
                "ssl.keystore.key and ssl.keystore.certificate.chain go together"
            )
        if self.truststore_location and self.truststore_certificates:
            raise InvalidConfigError(
                "give either ssl.truststore.location or ssl.truststore.certificates, not both"
            )
        if self.client_auth == "required" and not self.has_truststore:
            raise InvalidConfigError(
                "ssl.client.auth=required needs a truststore (ssl.truststore.location)"
            )
        SslPrincipalMapper(self.principal_mapping_rules)  # raises for invalid rules

    @property
    def has_keystore(self) -> bool:
        return bool(self.keystore_location or self.keystore_key)

    @property
    def has_truststore(self) -> bool:
        return bool(self.truststore_location or self.truststore_certificates)

    @property
    def principal_mapper(self) -> SslPrincipalMapper:
        return SslPrincipalMapper(self.principal_mapping_rules)

    @staticmethod
    def from_properties(props: Mapping[str, str], base: SslConfig | None = None) -> SslConfig:
        """``{"ssl.keystore.location": ...}`` (Kafka names without a listener prefix) over
        ``base``. Unknown ``ssl.*`` names raise ``InvalidConfigError``."""
        known = {f"ssl.{f.name.replace('_', '.')}": f.name for f in fields(SslConfig)}
        values = {f.name: getattr(base or SslConfig(), f.name) for f in fields(SslConfig)}
        for key, raw in props.items():
            if key not in known:
                raise InvalidConfigError(f"unknown node config {key!r}")
            values[known[key]] = raw.strip() or None
        values["client_auth"] = (values["client_auth"] or "none").strip().lower()
        values["keystore_type"] = values["keystore_type"] or "PEM"
        values["truststore_type"] = values["truststore_type"] or "PEM"
        values["principal_mapping_rules"] = values["principal_mapping_rules"] or "DEFAULT"
        return SslConfig(**values)


def split_pem(data: bytes, what: str) -> tuple[bytes, bytes]:
    """A PEM keystore → ``(private key, certificate chain)``; raises ``InvalidConfigError``
    when either is missing or the key is encrypted."""
    key: list[bytes] = []
    chain: list[bytes] = []
    lines = data.splitlines(keepends=True)
    block: list[bytes] = []
    label = ""
    for line in lines:
        text = line.strip()
        if text.startswith(b"-----BEGIN ") and text.endswith(b"-----"):
            label = text[len(b"-----BEGIN ") : -len(b"-----")].decode(errors="replace")
            block = [line]
        elif block:
            block.append(line if line.endswith(b"\n") else line + b"\n")
            if text.startswith(b"-----END "):
                if label in _KEY_LABELS:
                    key.extend(block)
                elif label == "CERTIFICATE":
                    chain.extend(block)
                elif label == "ENCRYPTED PRIVATE KEY":
                    raise InvalidConfigError(
                        f"{what}: the private key is encrypted; give it unencrypted "
                        "(ssl.key.password is not supported)"
                    )
                block = []
    if not key:
        raise InvalidConfigError(f"{what}: no private key")
    if not chain:
        raise InvalidConfigError(f"{what}: no certificate")
    return b"".join(key), b"".join(chain)


def _check_pair(key: bytes, chain: bytes, what: str) -> None:
    """Raises ``InvalidConfigError`` unless ``key`` belongs to the first certificate of
    ``chain`` (the stdlib's ``load_cert_chain`` checks it)."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "keystore.pem"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key + chain)
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_cert_chain(path)
        except ssl.SSLError as e:
            raise InvalidConfigError(f"{what}: key and certificate do not match: {e}") from None


def _check_cas(cas: bytes, what: str) -> None:
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=cas.decode())
    except (ssl.SSLError, UnicodeDecodeError, ValueError) as e:
        raise InvalidConfigError(f"{what}: not PEM certificates: {e}") from None


@dataclass(frozen=True, slots=True)
class Certificates:
    """What one TLS setup uses: key, chain, trusted CAs (``None``: none)."""

    key: bytes
    chain: bytes
    cas: bytes | None


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise InvalidConfigError(f"{what}: cannot read {path}: {e.strerror}") from None


def load_certificates(config: SslConfig, listener: str) -> Certificates:
    """Reads and checks the keystore and truststore. Raises ``InvalidConfigError``."""
    what = f"listener {listener}"
    if config.keystore_location:
        key, chain = split_pem(
            _read(config.keystore_location, f"{what} ssl.keystore.location"),
            f"{what} ssl.keystore.location {config.keystore_location}",
        )
    elif config.keystore_key and config.keystore_certificate_chain:
        key, chain = config.keystore_key.encode(), config.keystore_certificate_chain.encode()
    else:
        raise InvalidConfigError(f"{what} is SSL but has no keystore (ssl.keystore.location)")
    _check_pair(key, chain, f"{what} keystore")
    cas: bytes | None = None
    if config.truststore_location:
        cas = _read(config.truststore_location, f"{what} ssl.truststore.location")
    elif config.truststore_certificates:
        cas = config.truststore_certificates.encode()
    if cas is not None:
        _check_cas(cas, f"{what} truststore")
    return Certificates(key, chain, cas)
