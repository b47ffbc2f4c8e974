"""Throwaway certificates for the security tests, made with the ``cryptography`` package.

``CertificateAuthority("test-ca")`` is a self-signed CA; ``ca.issue("CN=node-1,OU=Brokers",
["localhost", "127.0.0.1"])`` a leaf certificate it signs, usable as a TLS server and client
certificate. ``write_pem`` lays a key and its chain out in Kafka's PEM keystore form (key then
certificates in one file). EC P-256 keys keep generation fast.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

# certificates' validity is wall time by nature: a fixed start well in the past, no clock read
_NOT_BEFORE = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
_NOT_AFTER = datetime.datetime(2100, 1, 1, tzinfo=datetime.UTC)


def _name(dn: str) -> x509.Name:
    """``CN=a,OU=b,O=c`` (RFC 4514, most specific first) as an x509 name."""
    return x509.Name.from_rfc4514_string(dn)


@dataclass(frozen=True)
class Leaf:
    """A key and its certificate, PEM-encoded."""

    key_pem: bytes
    cert_pem: bytes

    def keystore_pem(self) -> bytes:
        """Kafka's PEM keystore: the private key, then the certificate."""
        return self.key_pem + self.cert_pem

    def write(self, directory: Path, name: str) -> tuple[Path, Path, Path]:
        """Writes ``<name>.key``, ``<name>.crt`` and ``<name>.pem`` (key + chain); returns
        the three paths."""
        directory.mkdir(parents=True, exist_ok=True)
        key, cert, both = (directory / f"{name}.{ext}" for ext in ("key", "crt", "pem"))
        key.write_bytes(self.key_pem)
        cert.write_bytes(self.cert_pem)
        both.write_bytes(self.keystore_pem())
        return key, cert, both


class CertificateAuthority:
    """A self-signed certificate authority that issues leaf certificates."""

    def __init__(self, common_name: str) -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = _name(f"CN={common_name}")
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(_NOT_BEFORE)
            .not_valid_after(_NOT_AFTER)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )

    @property
    def cert_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.cert_pem)
        return path

    def issue(self, subject: str, hosts: list[str] | None = None) -> Leaf:
        """A certificate for ``subject`` (RFC 4514 DN) with ``hosts`` (names or IP addresses)
        as subject alternative names; valid for TLS servers and clients."""
        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = []
        for host in hosts or ["localhost", "127.0.0.1"]:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(subject))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(_NOT_BEFORE)
            .not_valid_after(_NOT_AFTER)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .sign(self._key, hashes.SHA256())
        )
        return Leaf(
            key_pem=key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
            cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        )
