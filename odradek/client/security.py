"""A client's security settings, with kafka-python's names, and Kafka's client properties.

``Producer``, ``Consumer`` and ``Admin`` take them as keywords::

    Producer("b1.example.com:9092", security_protocol="SSL", ssl_cafile="ca.crt",
             ssl_certfile="alice.crt", ssl_keyfile="alice.key")

- ``security_protocol``: ``PLAINTEXT`` (default), ``SSL`` (TLS; with ``ssl_certfile`` mTLS) or
  ``SASL_SSL`` (TLS, and SCRAM with the ``sasl_*`` settings).
- ``ssl_cafile``: PEM CA certificates to verify the nodes with (default: the system's roots);
- ``ssl_certfile``: the client's PEM certificate chain, and its key when ``ssl_keyfile`` is not
  given (a Kafka PEM keystore: key and chain in one file);
- ``ssl_keyfile``: the client's unencrypted PEM private key;
- ``sasl_mechanism`` (``SCRAM-SHA-256`` or ``SCRAM-SHA-512``), ``sasl_plain_username``,
  ``sasl_plain_password``: for SASL_SSL. The password never leaves the client: the SCRAM
  exchange proves it (:mod:`odradek.client.sasl`), and the client keeps it only until its
  first exchange succeeds: from then on it keeps SCRAM's salted password instead.
- ``sasl_salted_password``: instead of ``sasl_plain_password``, the
  :class:`~odradek.scram.SaltedPassword` another client learned
  (:meth:`odradek.Admin.sasl_salted_password`): a client that never sees the password.

The command line and Spark read Kafka's client properties (``--command-config
client.properties``, ``kafka.security.protocol``): :func:`from_kafka_properties` maps them.
The node's certificate is verified against the host name the client connects to (the name in
the bootstrap list or in the Metadata answer), as Kafka's default
``ssl.endpoint.identification.algorithm=https`` does.

Pure except :meth:`SecurityConfig.channel_credentials`, which reads the files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import grpc

from odradek.scram import SaltedPassword

__all__ = [
    "CLIENT_SECURITY_PROTOCOLS",
    "SASL_MECHANISMS",
    "SecurityConfig",
    "SecurityOptions",
    "from_kafka_properties",
    "parse_properties",
    "split_pem",
]

CLIENT_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_SSL")
SASL_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
_KEY_LABELS = ("PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY")


class SecurityOptions(TypedDict, total=False):
    """The security keywords of ``Producer``, ``Consumer`` and ``Admin`` (kafka-python's)."""

    security_protocol: str
    ssl_cafile: str | None
    ssl_certfile: str | None
    ssl_keyfile: str | None
    sasl_mechanism: str | None
    sasl_plain_username: str | None
    sasl_plain_password: str | None
    sasl_salted_password: SaltedPassword | None


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    """Validated on creation: ``ValueError`` for an unknown protocol or mechanism, or
    settings that do not go together."""

    security_protocol: str = "PLAINTEXT"
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    sasl_mechanism: str | None = None
    sasl_plain_username: str | None = None
    sasl_plain_password: str | None = None
    sasl_salted_password: SaltedPassword | None = None

    def __post_init__(self) -> None:
        protocol = self.security_protocol
        if protocol == "SASL_PLAINTEXT":
            raise ValueError("security_protocol SASL_PLAINTEXT is not supported: use SASL_SSL")
        if protocol not in CLIENT_SECURITY_PROTOCOLS:
            raise ValueError(
                f"security_protocol must be one of {', '.join(CLIENT_SECURITY_PROTOCOLS)}, "
                f"not {protocol!r}"
            )
        if protocol == "PLAINTEXT" and (self.ssl_cafile or self.ssl_certfile or self.ssl_keyfile):
            raise ValueError("ssl_cafile, ssl_certfile and ssl_keyfile need security_protocol SSL")
        if self.ssl_keyfile and not self.ssl_certfile:
            raise ValueError("ssl_keyfile needs ssl_certfile")
        if self.sasl_mechanism is not None and self.sasl_mechanism not in SASL_MECHANISMS:
            raise ValueError(
                f"sasl_mechanism must be one of {', '.join(SASL_MECHANISMS)}, "
                f"not {self.sasl_mechanism!r}"
            )
        salted = self.sasl_salted_password
        if (
            self.sasl_mechanism
            or self.sasl_plain_username
            or self.sasl_plain_password
            or salted is not None
        ) and protocol != "SASL_SSL":
            raise ValueError("sasl_* settings need security_protocol SASL_SSL")
        if protocol == "SASL_SSL" and not (
            self.sasl_mechanism
            and self.sasl_plain_username
            and (self.sasl_plain_password or salted is not None)
        ):
            raise ValueError(
                "SASL_SSL needs sasl_mechanism, sasl_plain_username and sasl_plain_password"
            )
        if self.sasl_plain_password and salted is not None:
            raise ValueError("give sasl_plain_password or sasl_salted_password, not both")
        if salted is not None and salted.mechanism != self.sasl_mechanism:
            raise ValueError(
                f"sasl_salted_password is for {salted.mechanism}, not {self.sasl_mechanism}"
            )

    def __repr__(self) -> str:  # never show the password
        password = "'***'" if self.sasl_plain_password else "None"
        salted = "'***'" if self.sasl_salted_password is not None else "None"
        return (
            f"SecurityConfig(security_protocol={self.security_protocol!r}, "
            f"ssl_cafile={self.ssl_cafile!r}, ssl_certfile={self.ssl_certfile!r}, "
            f"ssl_keyfile={self.ssl_keyfile!r}, sasl_mechanism={self.sasl_mechanism!r}, "
            f"sasl_plain_username={self.sasl_plain_username!r}, "
            f"sasl_plain_password={password}, sasl_salted_password={salted})"
        )

    def options(self) -> SecurityOptions:
        """These settings as the SDK's keywords (``Producer(servers, **config.options())``)."""
        return SecurityOptions(
            security_protocol=self.security_protocol,
            ssl_cafile=self.ssl_cafile,
            ssl_certfile=self.ssl_certfile,
            ssl_keyfile=self.ssl_keyfile,
            sasl_mechanism=self.sasl_mechanism,
            sasl_plain_username=self.sasl_plain_username,
            sasl_plain_password=self.sasl_plain_password,
            sasl_salted_password=self.sasl_salted_password,
        )

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    def channel_credentials(self) -> grpc.ChannelCredentials | None:
        """gRPC's TLS credentials (``None`` for PLAINTEXT). Reads the files; raises
        ``ValueError`` naming a file that cannot be read or holds no key or certificate."""
        if not self.uses_tls:
            return None
        cas = _read(self.ssl_cafile, "ssl_cafile") if self.ssl_cafile else None
        key: bytes | None = None
        chain: bytes | None = None
        if self.ssl_certfile:
            cert_data = _read(self.ssl_certfile, "ssl_certfile")
            if self.ssl_keyfile:
                key = split_pem(_read(self.ssl_keyfile, "ssl_keyfile"), "ssl_keyfile")[0]
                chain = split_pem(cert_data, "ssl_certfile", need_key=False)[1]
            else:
                key, chain = split_pem(cert_data, "ssl_certfile")
        return grpc.ssl_channel_credentials(
            root_certificates=cas, private_key=key, certificate_chain=chain
        )


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise ValueError(f"{what}: cannot read {path}: {e.strerror}") from None


def split_pem(data: bytes, what: str, *, need_key: bool = True) -> tuple[bytes, bytes]:
    """PEM text → ``(private keys, certificates)``, each the concatenated blocks. Raises
    ``ValueError`` when the key (if ``need_key``) or, unless it is a key file, the
    certificate is missing, or the key is encrypted."""
    key: list[bytes] = []
    chain: list[bytes] = []
    block: list[bytes] = []
    label = ""
    for line in data.splitlines(keepends=True):
        text = line.strip()
        if text.startswith(b"-----BEGIN ") and text.endswith(b"-----"):
            label = text[len(b"-----BEGIN ") : -len(b"-----")].decode(errors="replace")
            block = [line if line.endswith(b"\n") else line + b"\n"]
        elif block:
            block.append(line if line.endswith(b"\n") else line + b"\n")
            if text.startswith(b"-----END "):
                if label in _KEY_LABELS:
                    key.extend(block)
                elif label == "CERTIFICATE":
                    chain.extend(block)
                elif label == "ENCRYPTED PRIVATE KEY":
                    raise ValueError(
                        f"{what}: the private key is encrypted; give it unencrypted "
                        "(key passwords are not supported)"
                    )
                block = []
    if need_key and not key:
        raise ValueError(f"{what}: no private key")
    if not chain and not (what.endswith("keyfile") and key):
        raise ValueError(f"{what}: no certificate")
    return b"".join(key), b"".join(chain)


def parse_properties(text: str) -> dict[str, str]:
    """Java's ``.properties`` lines as Kafka's tools read them: ``key=value`` (or
    ``key: value``), ``#`` and ``!`` comments. Raises ``ValueError`` for another line."""
    out: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            key, sep, value = line.partition(":")
        if not sep:
            raise ValueError(f"line {number}: expected key=value")
        out[key.strip()] = value.strip()
    return out


_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def from_kafka_properties(props: Mapping[str, str]) -> dict[str, Any]:
    """Kafka's client properties → the SDK's keywords (kafka-python's names):
    ``security.protocol``, ``ssl.truststore.location`` (PEM) → ``ssl_cafile``,
    ``ssl.keystore.location`` (PEM: key and chain) → ``ssl_certfile``, ``sasl.mechanism``,
    and the ``username``/``password`` of ``sasl.jaas.config``'s ScramLoginModule. Raises
    ``ValueError`` for a setting it does not know or a non-PEM store."""
    out: dict[str, Any] = {}
    for key, raw in props.items():
        value = raw.strip()
        if key == "security.protocol":
            out["security_protocol"] = value.upper()
        elif key in ("ssl.truststore.type", "ssl.keystore.type"):
            if value.upper() != "PEM":
                raise ValueError(f"{key}={value}: only PEM stores are supported")
        elif key == "ssl.truststore.location":
            out["ssl_cafile"] = value
        elif key == "ssl.keystore.location":
            out["ssl_certfile"] = value
        elif key == "sasl.mechanism":
            out["sasl_mechanism"] = value.upper()
        elif key == "sasl.jaas.config":
            options = dict(_JAAS_OPTION.findall(value))
            if "username" in options:
                out["sasl_plain_username"] = options["username"]
            if "password" in options:
                out["sasl_plain_password"] = options["password"]
        elif key == "ssl.endpoint.identification.algorithm" and value.lower() == "https":
            pass  # what the client always does
        else:
            raise ValueError(f"unknown or unsupported client property {key!r}")
    return out
