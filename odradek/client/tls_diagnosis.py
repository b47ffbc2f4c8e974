"""Why a connection to a node failed at its TLS handshake, named as Kafka's
``SslAuthenticationException`` names it.

gRPC reports every such failure of a client as ``UNAVAILABLE`` with little to go on: a plaintext
client on a TLS listener, a TLS client without a certificate on a listener that requires one,
and a certificate of a CA the node does not trust all read ``Socket closed``. The client's own
side is clearer (``CERTIFICATE_VERIFY_FAILED``: the node's certificate is not trusted;
``WRONG_VERSION_NUMBER``: the listener does not speak TLS). For ``Socket closed`` at connection
time, :func:`diagnose` asks the listener itself: it opens one TLS connection with the client's
own settings (its certificate, no verification of the node's) and reads the node's verdict —
the handshake fails (not a TLS listener: nothing to say), the node sends an alert
(``certificate required``, ``unknown ca``, ``bad certificate``), or it accepts (then a
plaintext client was on a TLS listener). Verdicts are kept a few seconds per address.

:class:`ConnectionPool` registers how it connects to each address (:func:`register`); an
address several clients of one process reach with different settings is not probed.
Thread-safe. Only loopback or whatever the client itself connects to is ever contacted.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from collections import Counter
from dataclasses import dataclass

from odradek.errors import OdradekError

__all__ = ["ClientTls", "SslAuthenticationError", "diagnose", "register", "unregister"]

log = logging.getLogger("odradek.client")

_PROBE_TIMEOUT_S = 1.0
_VERDICT_TTL_S = 5.0
_ACCEPTED_AFTER_S = 0.5
"""A listener that has neither refused nor closed the probe's TLS connection by then
accepted its certificate."""


class SslAuthenticationError(OdradekError):
    """A node's listener and this client could not agree on TLS: TLS required, the handshake
    failed, the node's certificate is not trusted, or the node requires (or does not trust)
    the client's certificate (Kafka's ``SslAuthenticationException``; client-side, no wire
    code). Not retriable: the settings must change."""

    name = "SSL_AUTHENTICATION_FAILED"


@dataclass(frozen=True, slots=True)
class ClientTls:
    """How a client connects: ``tls`` or plaintext, and its own certificate, if any."""

    tls: bool
    certfile: str | None = None
    keyfile: str | None = None


_lock = threading.Lock()
_clients: dict[str, Counter[ClientTls]] = {}
_verdicts: dict[tuple[str, ClientTls], tuple[float, str | None]] = {}


def register(address: str, client: ClientTls) -> None:
    """Remember that a client of this process connects to ``address`` with ``client`` (until
    :func:`unregister`)."""
    with _lock:
        _clients.setdefault(address, Counter())[client] += 1


def unregister(address: str, client: ClientTls) -> None:
    with _lock:
        known = _clients.get(address)
        if known is not None:
            known[client] -= 1
            if known[client] <= 0:
                del known[client]
            if not known:
                del _clients[address]


def diagnose(address: str, details: str) -> SslAuthenticationError | None:
    """The TLS failure behind a connection failure to ``address`` whose gRPC details are
    ``details``, or ``None`` if it was not one (a node down or going away).

    The failing call does not say which client of the process made it: when clients with
    different settings reach the address, each setting is probed, and the listener's one
    refusal among them is the answer (an accepted setting is not the one that failed)."""
    with _lock:
        known = list(_clients.get(address, ()))
    client = known[0] if len(known) == 1 else None
    if "CERTIFICATE_VERIFY_FAILED" in details:
        return _error(
            address,
            "the node's certificate is not trusted: its CA is not in ssl_cafile "
            "(Kafka's ssl.truststore.location)",
        )
    if "WRONG_VERSION_NUMBER" in details and (client is None or client.tls):
        return _error(
            address,
            "the TLS handshake failed: the listener does not speak TLS "
            "(security_protocol PLAINTEXT?)",
        )
    if "Tls handshake failed" in details or "Ssl handshake failed" in details:
        return _error(address, f"the TLS handshake failed: {details}")
    if "Socket closed" not in details or "Stream removed" in details or not known:
        # "Stream removed": a connection that was up went away (a node stopped or was killed),
        # not a handshake refused: nothing to ask the listener, and no probe to wait for
        return None
    refusals = {v for c in known if (v := _probe_cached(address, c)) is not None}
    return _error(address, refusals.pop()) if len(refusals) == 1 else None


def _error(address: str, reason: str) -> SslAuthenticationError:
    error = SslAuthenticationError(f"node {address}: {reason}")
    log.warning("%s", error)
    return error


def _probe_cached(address: str, client: ClientTls) -> str | None:
    now = time.monotonic()  # noqa: TID251 - a cache's age, not a decision of the protocol
    with _lock:
        cached = _verdicts.get((address, client))
    if cached is not None and now - cached[0] < _VERDICT_TTL_S:
        return cached[1]
    verdict = probe(address, client)
    with _lock:
        _verdicts[(address, client)] = (now, verdict)
    return verdict


def probe(address: str, client: ClientTls) -> str | None:
    """Open one TLS connection to ``address`` as ``client`` would (its certificate; the node's
    not verified) and say what the listener's answer means for ``client``; ``None`` when it
    says nothing about TLS (not a TLS listener, unreachable, or it accepted a TLS client)."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if client.tls and client.certfile:
        try:
            context.load_cert_chain(client.certfile, client.keyfile)
        except (OSError, ssl.SSLError):
            return None
    try:
        raw = socket.create_connection((host, int(port)), timeout=_PROBE_TIMEOUT_S)
    except (OSError, ValueError):
        return None
    with raw:
        try:
            tls = context.wrap_socket(raw, server_hostname=host or None)
        except (OSError, ssl.SSLError):
            return None  # no TLS handshake from the listener
        with tls:
            if not client.tls:
                return (
                    "the listener requires TLS: a plaintext client's connection is closed "
                    "(security_protocol SSL or SASL_SSL)"
                )
            tls.settimeout(_ACCEPTED_AFTER_S)
            try:
                # TLS 1.3: the node judges the client's certificate after the handshake and
                # says so in an alert (or just closes); an accepted client is left waiting
                # for its HTTP/2 preface (the read times out)
                alert = "" if tls.recv(1) else "CLOSED"
            except TimeoutError:
                alert = ""
            except ssl.SSLError as exc:
                alert = str(exc).upper() or "CLOSED"
            except OSError:
                alert = "CLOSED"
    if not alert:
        return None  # accepted: the failure was something else
    if "CERTIFICATE_REQUIRED" in alert or not client.certfile:
        return (
            "the listener requires a client certificate: give ssl_certfile and ssl_keyfile "
            "(Kafka's ssl.keystore.location)"
        )
    if alert == "CLOSED" or any(
        a in alert for a in ("UNKNOWN_CA", "BAD_CERTIFICATE", "CERTIFICATE_UNKNOWN")
    ):
        return (
            "the node does not trust the client's certificate: it is not signed by a CA in "
            "the node's truststore (ssl.truststore.location)"
        )
    return f"the TLS handshake failed: {alert.lower()}"
