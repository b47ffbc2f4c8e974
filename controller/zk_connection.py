"""Connecting to ZooKeeper: plaintext or TLS, with Kafka's ``zookeeper.*`` client settings, and
the znode ACLs of ``zookeeper.set.acl``.

Kafka's names (``org.apache.kafka.server.config.ZkConfigs``), PEM stores only::

    zookeeper.ssl.client.enable=true
    zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty
    zookeeper.ssl.keystore.location=/etc/odradek/zk-client.pem   # key, then certificate chain
    zookeeper.ssl.keystore.password=...                          # only for an encrypted key
    zookeeper.ssl.keystore.type=PEM
    zookeeper.ssl.truststore.location=/etc/odradek/ca.crt
    zookeeper.ssl.truststore.type=PEM
    zookeeper.ssl.protocol=TLSv1.2                               # Kafka's default
    zookeeper.ssl.enabled.protocols=TLSv1.2,TLSv1.3              # default: the protocol
    zookeeper.ssl.cipher.suites=...                              # OpenSSL names
    zookeeper.ssl.endpoint.identification.algorithm=HTTPS        # blank: no host name check
    zookeeper.set.acl=true

kazoo speaks TLS itself, so ``zookeeper.clientCnxnSocket`` (which names the Java client's socket
class) is only checked: unset or ``ClientCnxnSocketNetty`` are fine, ``ClientCnxnSocketNIO``
with TLS is refused as the Java client refuses it. CRL and OCSP checks are not supported and
refused when asked for; a PEM truststore has no password (``zookeeper.ssl.truststore.password``
is accepted and unused).

**Secure ACLs** (Kafka's ``ZkData.defaultAcls``). With ``zookeeper.set.acl=true`` every znode
this client creates gets ``CREATOR_ALL_ACL`` (all rights for the identity that created it,
here the x509 subject of ``zookeeper.ssl.keystore.location``) plus world READ, except under the
sensitive roots (``/config/users``, ``/config/brokers``, ``/delegation_token/tokens``:
credentials), which only the creator may read. As in Kafka, ``set.acl`` needs an identity:
TLS with a keystore, else the node refuses to start. Every node must present the same subject
to ZooKeeper (Kafka's rule for mTLS-only ZooKeeper authentication): a znode created by one node
must be writable by the next controller. Paths are relative to the chroot.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient, TransactionRequest
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.security import ACL, CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

from odradek.errors import InvalidConfigError

__all__ = [
    "SENSITIVE_ROOT_PATHS",
    "ZK_CLIENT_PROPERTIES",
    "ZkClientConfig",
    "default_acls",
    "ensure_chroot",
    "new_zk_client",
]

NETTY_SOCKET = "org.apache.zookeeper.ClientCnxnSocketNetty"
NIO_SOCKET = "org.apache.zookeeper.ClientCnxnSocketNIO"
SENSITIVE_ROOT_PATHS = ("/config/users", "/config/brokers", "/delegation_token/tokens")
"""Znodes holding credentials: with secure ACLs, not even world-readable (Kafka's
``ZkData.SensitiveRootPaths``)."""
CONSUMERS_PATH = "/consumers"
"""Kafka's old consumers wrote here themselves: always open (``ZkData.defaultAcls``)."""
_PROTOCOLS = {
    "TLSv1": ssl.OP_NO_TLSv1,
    "TLSv1.1": ssl.OP_NO_TLSv1_1,
    "TLSv1.2": ssl.OP_NO_TLSv1_2,
    "TLSv1.3": ssl.OP_NO_TLSv1_3,
}
_PEM_SUFFIXES = (".pem", ".crt", ".cer", ".key")

ZK_CLIENT_PROPERTIES = {
    "zookeeper.set.acl": "set_acl",
    "zookeeper.ssl.client.enable": "ssl_client_enable",
    "zookeeper.clientcnxnsocket": "client_cnxn_socket",
    "zookeeper.ssl.keystore.location": "ssl_keystore_location",
    "zookeeper.ssl.keystore.password": "ssl_keystore_password",
    "zookeeper.ssl.keystore.type": "ssl_keystore_type",
    "zookeeper.ssl.truststore.location": "ssl_truststore_location",
    "zookeeper.ssl.truststore.password": "ssl_truststore_password",
    "zookeeper.ssl.truststore.type": "ssl_truststore_type",
    "zookeeper.ssl.protocol": "ssl_protocol",
    "zookeeper.ssl.enabled.protocols": "ssl_enabled_protocols",
    "zookeeper.ssl.cipher.suites": "ssl_cipher_suites",
    "zookeeper.ssl.endpoint.identification.algorithm": "ssl_endpoint_identification_algorithm",
    "zookeeper.ssl.crl.enable": "ssl_crl_enable",
    "zookeeper.ssl.ocsp.enable": "ssl_ocsp_enable",
}
"""Kafka's names (lower-cased: ``zookeeper.clientCnxnSocket`` arrives lower-cased from the
environment) → :class:`ZkClientConfig` fields."""


@dataclass(frozen=True, slots=True)
class ZkClientConfig:
    """How a node connects to ZooKeeper (Kafka's ``zookeeper.*`` client settings). Pure and
    validated on creation (``InvalidConfigError``); the files are read by
    :func:`new_zk_client`."""

    set_acl: bool = False
    """``zookeeper.set.acl``: create znodes with secure ACLs (creator + world read)."""
    ssl_client_enable: bool = False
    """``zookeeper.ssl.client.enable``: connect over TLS (to ZooKeeper's secureClientPort)."""
    client_cnxn_socket: str | None = None
    """``zookeeper.clientCnxnSocket``: the Java client's socket class; checked, see module."""
    ssl_keystore_location: str | None = None
    """``zookeeper.ssl.keystore.location``: PEM, private key then certificate chain: the
    client certificate, whose subject is the node's ZooKeeper identity."""
    ssl_keystore_password: str | None = None
    """``zookeeper.ssl.keystore.password``: decrypts an encrypted PEM key."""
    ssl_keystore_type: str | None = None
    """``zookeeper.ssl.keystore.type``: PEM; unset: from the file name (PEM only)."""
    ssl_truststore_location: str | None = None
    """``zookeeper.ssl.truststore.location``: CA certificates (PEM) for ZooKeeper's
    certificate; unset: the system's."""
    ssl_truststore_password: str | None = None
    """``zookeeper.ssl.truststore.password``: unused (PEM truststores have none)."""
    ssl_truststore_type: str | None = None
    """``zookeeper.ssl.truststore.type``: PEM; unset: from the file name (PEM only)."""
    ssl_protocol: str = "TLSv1.2"
    """``zookeeper.ssl.protocol``: the protocol when ``ssl_enabled_protocols`` is empty."""
    ssl_enabled_protocols: tuple[str, ...] = ()
    """``zookeeper.ssl.enabled.protocols`` (comma-separated); empty: ``ssl_protocol``."""
    ssl_cipher_suites: tuple[str, ...] = ()
    """``zookeeper.ssl.cipher.suites`` (comma-separated, OpenSSL names); empty: OpenSSL's."""
    ssl_endpoint_identification_algorithm: str = "HTTPS"
    """``zookeeper.ssl.endpoint.identification.algorithm``: HTTPS checks ZooKeeper's host
    name against its certificate; blank does not."""
    ssl_crl_enable: bool = False
    """``zookeeper.ssl.crl.enable``: not supported (refused when true)."""
    ssl_ocsp_enable: bool = False
    """``zookeeper.ssl.ocsp.enable``: not supported (refused when true)."""

    def __post_init__(self) -> None:
        for kind in ("keystore", "truststore"):
            declared = getattr(self, f"ssl_{kind}_type")
            location = getattr(self, f"ssl_{kind}_location")
            if declared is not None and declared.upper() != "PEM":
                raise InvalidConfigError(
                    f"zookeeper.ssl.{kind}.type {declared!r} is not supported (only PEM)"
                )
            if declared is None and location and not location.lower().endswith(_PEM_SUFFIXES):
                raise InvalidConfigError(
                    f"zookeeper.ssl.{kind}.location {location!r}: only PEM stores are "
                    f"supported; name a .pem file or set zookeeper.ssl.{kind}.type=PEM"
                )
        socket = self.client_cnxn_socket
        if socket not in (None, NETTY_SOCKET, NIO_SOCKET):
            raise InvalidConfigError(
                f"zookeeper.clientCnxnSocket {socket!r} is not a ZooKeeper client socket "
                f"({NETTY_SOCKET} or {NIO_SOCKET})"
            )
        if self.ssl_client_enable and socket == NIO_SOCKET:
            raise InvalidConfigError(
                f"zookeeper.ssl.client.enable=true needs zookeeper.clientCnxnSocket={NETTY_SOCKET}"
                " (ClientCnxnSocketNIO has no TLS)"
            )
        for protocol in (self.ssl_protocol, *self.ssl_enabled_protocols):
            if protocol not in _PROTOCOLS:
                raise InvalidConfigError(
                    f"zookeeper.ssl protocol {protocol!r} is not one of {', '.join(_PROTOCOLS)}"
                )
        if self.ssl_endpoint_identification_algorithm.upper() not in ("HTTPS", ""):
            raise InvalidConfigError(
                "zookeeper.ssl.endpoint.identification.algorithm must be HTTPS or blank, not "
                f"{self.ssl_endpoint_identification_algorithm!r}"
            )
        for name in ("crl", "ocsp"):
            if getattr(self, f"ssl_{name}_enable"):
                raise InvalidConfigError(f"zookeeper.ssl.{name}.enable=true is not supported")
        if self.set_acl and not self.is_secure:
            # Kafka's KafkaServer.createZkClient refuses the same (a SecurityException)
            raise InvalidConfigError(
                "zookeeper.set.acl is true, but ZooKeeper client TLS configuration identifying "
                "at least zookeeper.ssl.client.enable and zookeeper.ssl.keystore.location was "
                "not present (odradek has no SASL to ZooKeeper)"
            )

    @property
    def is_secure(self) -> bool:
        """Whether ZooKeeper knows who this client is (TLS with a client certificate)."""
        return self.ssl_client_enable and bool(self.ssl_keystore_location)

    @property
    def check_hostname(self) -> bool:
        return self.ssl_endpoint_identification_algorithm.upper() == "HTTPS"

    @property
    def protocols(self) -> tuple[str, ...]:
        return self.ssl_enabled_protocols or (self.ssl_protocol,)

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> ZkClientConfig:
        """``{"zookeeper.ssl.client.enable": "true", ...}`` (Kafka's names, any case) → a
        config. Unknown ``zookeeper.*`` names and bad values raise ``InvalidConfigError``."""
        kinds = {f.name: f.type for f in fields(ZkClientConfig)}
        values: dict[str, Any] = {}
        for key, raw in props.items():
            name = ZK_CLIENT_PROPERTIES.get(key.lower())
            if name is None:
                raise InvalidConfigError(f"unknown node config {key!r}")
            text = raw.strip()
            kind = kinds[name]
            if kind in ("bool", bool):
                if text.lower() not in ("true", "false"):
                    raise InvalidConfigError(f"invalid value {raw!r} for {key!r}: true or false")
                values[name] = text.lower() == "true"
            elif name in ("ssl_enabled_protocols", "ssl_cipher_suites"):
                values[name] = tuple(p.strip() for p in text.split(",") if p.strip())
            elif name in ("ssl_protocol", "ssl_endpoint_identification_algorithm"):
                values[name] = text
            else:
                values[name] = text or None
        return ZkClientConfig(**values)


def default_acls(is_secure: bool, path: str) -> list[ACL]:
    """The ACL of a new znode at ``path`` (relative to the chroot), as Kafka's
    ``ZkData.defaultAcls``: open without security; else the creator's, plus world READ
    outside the sensitive roots."""
    if not is_secure or path == CONSUMERS_PATH:
        return list(OPEN_ACL_UNSAFE)
    acls = list(CREATOR_ALL_ACL)
    if not any(path.startswith(root) for root in SENSITIVE_ROOT_PATHS):
        acls.extend(READ_ACL_UNSAFE)
    return acls


class _AclTransaction(TransactionRequest):  # type: ignore[misc]  # kazoo is untyped
    def create(
        self,
        path: str,
        value: bytes = b"",
        acl: list[ACL] | None = None,
        ephemeral: bool = False,
        sequence: bool = False,
    ) -> None:
        client: AclKazooClient = self.client
        super().create(path, value, acl or client.acl_for(path), ephemeral, sequence)


class AclKazooClient(KazooClient):  # type: ignore[misc]  # kazoo is untyped
    """A ``KazooClient`` whose znodes get :func:`default_acls` by path when the caller gives
    no ACL: ``create``, ``ensure_path`` (each level its own) and transactions. Thread-safe as
    ``KazooClient``."""

    def __init__(self, *args: Any, acl_for: Callable[[str], list[ACL]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.acl_for = acl_for

    def create_async(
        self, path: str, value: bytes = b"", acl: list[ACL] | None = None, **kwargs: Any
    ) -> Any:
        # ensure_path (and create's makepath) create each missing level through here with no
        # ACL, so each level gets its own
        if acl is None:
            acl = self.acl_for(path)
        return super().create_async(path, value, acl=acl, **kwargs)

    def transaction(self) -> TransactionRequest:
        return _AclTransaction(self)


class _TlsHandler(SequentialThreadingHandler):  # type: ignore[misc]  # kazoo is untyped
    """kazoo's threading handler, with the protocols and cipher suites of the config (kazoo's
    client does not pass them to its connections itself)."""

    def __init__(self, options: int, ciphers: str | None) -> None:
        super().__init__()
        self._options = options
        self._ciphers = ciphers

    def create_connection(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("use_ssl"):
            kwargs["options"] = self._options
            if self._ciphers:
                kwargs["ciphers"] = self._ciphers
        return super().create_connection(*args, **kwargs)


def _ssl_options(protocols: tuple[str, ...]) -> int:
    options = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).options | ssl.OP_NO_SSLv2 | ssl.OP_NO_SSLv3
    for protocol, flag in _PROTOCOLS.items():
        if protocol not in protocols:
            options |= flag
    return int(options)


def _check_files(config: ZkClientConfig) -> None:
    """Reads the stores once, so that a missing file or a wrong password fails the start with
    one line rather than every connection attempt. Raises ``InvalidConfigError``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    location = config.ssl_keystore_location
    if location:
        if not Path(location).is_file():
            raise InvalidConfigError(f"zookeeper.ssl.keystore.location: no file {location}")
        try:
            context.load_cert_chain(location, location, config.ssl_keystore_password)
        except (ssl.SSLError, OSError) as e:
            raise InvalidConfigError(
                f"zookeeper.ssl.keystore.location {location}: not a PEM key and certificate "
                f"(or a wrong zookeeper.ssl.keystore.password): {e}"
            ) from None
    trust = config.ssl_truststore_location
    if trust:
        try:
            context.load_verify_locations(trust)
        except (ssl.SSLError, OSError) as e:
            raise InvalidConfigError(
                f"zookeeper.ssl.truststore.location {trust}: not PEM certificates: {e}"
            ) from None
    if config.ssl_cipher_suites:
        try:
            context.set_ciphers(":".join(config.ssl_cipher_suites))
        except ssl.SSLError:
            raise InvalidConfigError(
                f"zookeeper.ssl.cipher.suites: none of {', '.join(config.ssl_cipher_suites)} "
                "is known to OpenSSL"
            ) from None


def new_zk_client(connect: str, timeout_s: float, config: ZkClientConfig) -> KazooClient:
    """A (not yet started) kazoo client for ``connect`` (hosts and optional chroot) as
    ``config`` says. Raises ``InvalidConfigError`` for unreadable stores."""
    kwargs: dict[str, Any] = {}
    if config.ssl_client_enable:
        _check_files(config)
        kwargs.update(
            use_ssl=True,
            ca=config.ssl_truststore_location,
            certfile=config.ssl_keystore_location,
            keyfile=config.ssl_keystore_location,
            keyfile_password=config.ssl_keystore_password,
            verify_certs=True,
            check_hostname=config.check_hostname,
            handler=_TlsHandler(
                _ssl_options(config.protocols), ":".join(config.ssl_cipher_suites) or None
            ),
        )
    secure = config.set_acl and config.is_secure
    return AclKazooClient(
        hosts=connect,
        timeout=timeout_s,
        acl_for=lambda path: default_acls(secure, path),
        **kwargs,
    )


def ensure_chroot(connect: str, timeout_s: float, config: ZkClientConfig) -> None:
    """Creates the chroot of ``connect`` (if it has one) with the ACLs of ``config`` (Kafka's
    ``createChrootIfNecessary``). Raises kazoo's errors (e.g. ``NoAuthError``)."""
    hosts, slash, chroot = connect.partition("/")
    if not slash or not chroot.strip("/"):
        return
    client = new_zk_client(hosts, timeout_s, config)
    client.start(timeout=timeout_s)
    try:
        client.ensure_path("/" + chroot.strip("/"))
    finally:
        client.stop()
        client.close()
