"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), as Kafka's ``ScramFormatter``,
``ScramCredentialUtils`` and SCRAM client and server do it.

Stored credential (what ZooKeeper keeps under ``/config/users/<name>``; never the password)::

    SaltedPassword = Hi(password, salt, iterations)        PBKDF2-HMAC-H
    StoredKey      = H(HMAC(SaltedPassword, "Client Key"))
    ServerKey      = HMAC(SaltedPassword, "Server Key")
    "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>"

Exchange (the client proves it knows the password without sending it; the server proves it
holds the credential)::

    client-first  n,,n=<user>,r=<client nonce>
    server-first  r=<client nonce + server nonce>,s=<b64 salt>,i=<iterations>
    client-final  c=biws,r=<nonce>,p=<b64 ClientKey XOR HMAC(StoredKey, AuthMessage)>
    server-final  v=<b64 HMAC(ServerKey, AuthMessage)>    or    e=<error>

with AuthMessage = client-first-bare + "," + server-first + "," + client-final-without-proof.

The client needs the password only to compute SaltedPassword for the server's salt and
iterations; ClientProof and ServerSignature follow from SaltedPassword alone (RFC 5802 §5.1 and
§3). So after one exchange a client keeps the :class:`SaltedPassword` (salt, iterations and
Hi's result) instead of the password, and proves itself again from it as long as the server's
salt and iterations stay the same; when they differ the credential changed on the server and
only the password could answer — :class:`ScramClient` then refuses with
:class:`~odradek.errors.SaslAuthenticationFailedError` (log in again).

Pure (random nonces and salts are drawn from :mod:`secrets` unless given); thread-safe.
Failures raise :class:`~odradek.errors.SaslAuthenticationFailedError` (58) or
:class:`~odradek.errors.UnsupportedSaslMechanismError` (33).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from odradek.errors import (
    IllegalSaslStateError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)

__all__ = [
    "MECHANISMS",
    "SaltedPassword",
    "ScramClient",
    "ScramCredential",
    "ScramServerExchange",
    "new_credential",
]

MECHANISMS: dict[str, tuple[str, int, int]] = {
    "SCRAM-SHA-256": ("sha256", 4096, 16384),
    "SCRAM-SHA-512": ("sha512", 4096, 16384),
}
"""Mechanism → (hash, least iterations, most iterations), as Kafka's ``ScramMechanism``."""


def _hash_name(mechanism: str) -> str:
    if mechanism not in MECHANISMS:
        raise UnsupportedSaslMechanismError(
            f"{mechanism!r} is not supported ({', '.join(MECHANISMS)})"
        )
    return MECHANISMS[mechanism][0]


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _unb64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (ValueError, TypeError):
        raise SaslAuthenticationFailedError(f"{what} is not base64") from None


def _hmac(key: bytes, message: bytes, hash_name: str) -> bytes:
    return hmac.new(key, message, hash_name).digest()


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def salted_password(password: str, salt: bytes, iterations: int, hash_name: str) -> bytes:
    """Hi(password, salt, i): PBKDF2 with HMAC-H."""
    return hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)


@dataclass(frozen=True, slots=True)
class SaltedPassword:
    """RFC 5802's SaltedPassword = Hi(password, salt, iterations) for one mechanism: enough to
    answer a server that sends this salt and iteration count, and no way back to the password
    (PBKDF2). A secret all the same (it proves the user to the server): ``repr`` hides it."""

    mechanism: str
    salt: bytes
    iterations: int
    value: bytes

    def __repr__(self) -> str:
        return (
            f"SaltedPassword(mechanism={self.mechanism!r}, salt={_b64(self.salt)!r}, "
            f"iterations={self.iterations}, value='***')"
        )


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """A stored SCRAM credential (Kafka's ``ScramCredential``)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def encode(self) -> str:
        """Kafka's ``ScramCredentialUtils.credentialToString``."""
        return (
            f"salt={_b64(self.salt)},stored_key={_b64(self.stored_key)},"
            f"server_key={_b64(self.server_key)},iterations={self.iterations}"
        )

    @staticmethod
    def decode(text: str) -> ScramCredential:
        """Raises ``ValueError`` unless exactly the four keys are there."""
        fields = dict(item.split("=", 1) for item in text.split(",") if "=" in item)
        if set(fields) != {"salt", "stored_key", "server_key", "iterations"}:
            raise ValueError(f"not a SCRAM credential: {text!r}")
        try:
            return ScramCredential(
                base64.b64decode(fields["salt"], validate=True),
                base64.b64decode(fields["stored_key"], validate=True),
                base64.b64decode(fields["server_key"], validate=True),
                int(fields["iterations"]),
            )
        except (ValueError, TypeError):
            raise ValueError(f"not a SCRAM credential: {text!r}") from None


def credential_from_salted_password(
    mechanism: str, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    h = _hash_name(mechanism)
    client_key = _hmac(salted, b"Client Key", h)
    return ScramCredential(
        salt=salt,
        stored_key=hashlib.new(h, client_key).digest(),
        server_key=_hmac(salted, b"Server Key", h),
        iterations=iterations,
    )


def new_credential(
    mechanism: str, password: str, iterations: int = 4096, salt: bytes | None = None
) -> ScramCredential:
    """A credential for ``password``; raises ``ValueError`` for iterations out of Kafka's
    range, :class:`UnsupportedSaslMechanismError` for an unknown mechanism."""
    h = _hash_name(mechanism)
    _, least, most = MECHANISMS[mechanism]
    if not least <= iterations <= most:
        raise ValueError(f"{mechanism} iterations must be in [{least}, {most}], not {iterations}")
    if not password:
        raise ValueError("the password must not be empty")
    salt = salt if salt is not None else secrets.token_bytes(32)
    return credential_from_salted_password(
        mechanism, salted_password(password, salt, iterations, h), salt, iterations
    )


def _sasl_name(user: str) -> str:
    """RFC 5802's saslname: ``=`` → ``=3D``, ``,`` → ``=2C``."""
    return user.replace("=", "=3D").replace(",", "=2C")


def _user_name(sasl_name: str) -> str:
    return sasl_name.replace("=2C", ",").replace("=3D", "=")


def _attributes(message: str, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in message.split(","):
        key, sep, value = item.partition("=")
        if not sep or len(key) != 1:
            raise SaslAuthenticationFailedError(f"malformed {what}")
        out.setdefault(key, value)
    return out


class ScramClient:
    """The client side of one exchange, from the password or from the
    :class:`SaltedPassword` an earlier exchange left (exactly one of the two; ``ValueError``
    otherwise, or for a salted password of another mechanism). :attr:`salted_password` is
    the one this exchange used, once :meth:`final_message` has run. Not thread-safe (one
    exchange, one thread)."""

    def __init__(
        self,
        mechanism: str,
        username: str,
        password: str | None = None,
        nonce: str | None = None,
        *,
        salted: SaltedPassword | None = None,
    ) -> None:
        self._mechanism = mechanism
        self._hash = _hash_name(mechanism)
        if (password is None) == (salted is None):
            raise ValueError("give either the password or the salted password")
        if salted is not None and salted.mechanism != mechanism:
            raise ValueError(f"the salted password is for {salted.mechanism}, not {mechanism}")
        self._username = username
        self._password = password
        self.salted_password: SaltedPassword | None = salted
        self._nonce = nonce or secrets.token_urlsafe(24)
        self._client_first_bare = f"n={_sasl_name(username)},r={self._nonce}"
        self._server_signature: bytes | None = None

    def first_message(self) -> bytes:
        return f"n,,{self._client_first_bare}".encode()

    def final_message(self, server_first: bytes) -> bytes:
        """Answers the server's first message; raises
        :class:`SaslAuthenticationFailedError` for a malformed one or a nonce that does not
        extend ours."""
        text = server_first.decode(errors="replace")
        attrs = _attributes(text, "server-first message")
        nonce = attrs.get("r", "")
        if not nonce.startswith(self._nonce) or len(nonce) <= len(self._nonce):
            raise SaslAuthenticationFailedError("the server's nonce does not extend ours")
        salt = _unb64(attrs.get("s", ""), "salt")
        try:
            iterations = int(attrs.get("i", ""))
        except ValueError:
            raise SaslAuthenticationFailedError("malformed iteration count") from None
        salted = self._salted(salt, iterations)
        client_key = _hmac(salted, b"Client Key", self._hash)
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        proof = _xor(client_key, _hmac(stored_key, auth_message, self._hash))
        server_key = _hmac(salted, b"Server Key", self._hash)
        self._server_signature = _hmac(server_key, auth_message, self._hash)
        return f"{without_proof},p={_b64(proof)}".encode()

    def _salted(self, salt: bytes, iterations: int) -> bytes:
        """SaltedPassword for the server's salt and iterations: Hi over the password (which
        this exchange then forgets), or the kept one if they match; a mismatch raises
        :class:`SaslAuthenticationFailedError`."""
        if self._password is not None:
            value = salted_password(self._password, salt, iterations, self._hash)
            self._password = None
            self.salted_password = SaltedPassword(self._mechanism, salt, iterations, value)
            return value
        kept = self.salted_password
        assert kept is not None
        if (kept.salt, kept.iterations) != (salt, iterations):
            raise SaslAuthenticationFailedError(
                f"the {self._mechanism} credential of {self._username!r} changed on the server "
                "(another salt or iteration count than at login): log in again with the password"
            )
        return kept.value

    def verify_server_final(self, server_final: bytes) -> None:
        """Checks the server's signature: raises :class:`SaslAuthenticationFailedError` for
        an error answer or a server that does not hold the credential."""
        attrs = _attributes(server_final.decode(errors="replace"), "server-final message")
        if "e" in attrs:
            raise SaslAuthenticationFailedError(attrs["e"])
        if self._server_signature is None:
            raise IllegalSaslStateError("the server's final message came before ours")
        if not hmac.compare_digest(_unb64(attrs.get("v", ""), "signature"), self._server_signature):
            raise SaslAuthenticationFailedError("the server's signature is wrong")


class ScramServerExchange:
    """The server side of one exchange, after the client's first message. Not thread-safe.

    Construct with :meth:`start`; the user's credential is looked up by ``lookup`` (``None``
    for an unknown user, which fails the same way as a wrong password, at the final step, so
    that user names do not leak)."""

    def __init__(
        self,
        mechanism: str,
        username: str,
        credential: ScramCredential | None,
        client_first_bare: str,
        nonce: str,
    ) -> None:
        self.mechanism = mechanism
        self.username = username
        self._hash = _hash_name(mechanism)
        self._credential = credential
        self._client_first_bare = client_first_bare
        self._nonce = nonce
        # an unknown user still gets a plausible salt and iteration count
        self._salt = credential.salt if credential else hashlib.sha256(username.encode()).digest()
        self._iterations = credential.iterations if credential else MECHANISMS[mechanism][1]
        self.server_first = f"r={nonce},s={_b64(self._salt)},i={self._iterations}"

    @staticmethod
    def start(
        mechanism: str,
        client_first: bytes,
        lookup: object,
        server_nonce: str | None = None,
    ) -> ScramServerExchange:
        """Reads the client's first message. Raises :class:`SaslAuthenticationFailedError`
        for a malformed one (or channel binding, which is not supported)."""
        assert callable(lookup)
        _hash_name(mechanism)
        text = client_first.decode(errors="replace")
        if not text.startswith("n,,"):
            raise SaslAuthenticationFailedError("client-first message: only 'n,,' is supported")
        bare = text[3:]
        attrs = _attributes(bare, "client-first message")
        username = _user_name(attrs.get("n", ""))
        client_nonce = attrs.get("r", "")
        if not username or not client_nonce:
            raise SaslAuthenticationFailedError("client-first message: no user or nonce")
        if attrs.get("tokenauth", "false") == "true":
            raise SaslAuthenticationFailedError("delegation tokens are not supported")
        credential = lookup(mechanism, username)
        nonce = client_nonce + (server_nonce or secrets.token_urlsafe(24))
        return ScramServerExchange(mechanism, username, credential, bare, nonce)

    def finish(self, client_final: bytes) -> bytes:
        """Checks the client's proof; returns the server's final message. Raises
        :class:`SaslAuthenticationFailedError` for a wrong password or unknown user."""
        text = client_final.decode(errors="replace")
        without_proof, sep, proof_part = text.rpartition(",p=")
        if not sep:
            raise SaslAuthenticationFailedError("client-final message: no proof")
        attrs = _attributes(without_proof, "client-final message")
        if attrs.get("r") != self._nonce:
            raise SaslAuthenticationFailedError("client-final message: wrong nonce")
        if attrs.get("c") != "biws":
            raise SaslAuthenticationFailedError("channel binding is not supported")
        proof = _unb64(proof_part, "proof")
        auth_message = f"{self._client_first_bare},{self.server_first},{without_proof}".encode()
        failed = SaslAuthenticationFailedError(
            f"authentication failed: invalid credentials with SASL mechanism {self.mechanism}"
        )
        c = self._credential
        if c is None or len(proof) != len(c.stored_key):
            raise failed
        client_key = _xor(proof, _hmac(c.stored_key, auth_message, self._hash))
        if not hmac.compare_digest(hashlib.new(self._hash, client_key).digest(), c.stored_key):
            raise failed
        return f"v={_b64(_hmac(c.server_key, auth_message, self._hash))}".encode()
