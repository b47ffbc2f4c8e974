"""SCRAM from the salted password (RFC 5802 §5.1: SaltedPassword is enough to compute
ClientProof and ServerSignature for the same salt and iterations): the proof equals the one the
password gives, against the RFC 7677 vector; another salt or iteration count is refused; the
client-side secret drops the password after its first successful exchange."""

from __future__ import annotations

import base64

import pytest

from odradek.client.sasl import ScramSecret
from odradek.client.security import SecurityConfig
from odradek.errors import SaslAuthenticationFailedError
from odradek.scram import (
    SaltedPassword,
    ScramClient,
    ScramServerExchange,
    new_credential,
    salted_password,
)

SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_PROOF = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)


def _exchange(client: ScramClient, credential_password: str, salt: bytes, iterations: int):
    credential = new_credential("SCRAM-SHA-256", credential_password, iterations, salt)
    server = ScramServerExchange.start(
        "SCRAM-SHA-256",
        client.first_message(),
        lambda m, u: credential,
        server_nonce=SERVER_NONCE,
    )
    final = client.final_message(server.server_first.encode())
    return final, server


def test_the_proof_from_the_salted_password_equals_the_one_from_the_password():
    by_password = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=CLIENT_NONCE)
    final, server = _exchange(by_password, "pencil", SALT, 4096)
    assert final == RFC_PROOF
    by_password.verify_server_final(server.finish(final))
    salted = by_password.salted_password
    assert salted is not None and (salted.salt, salted.iterations) == (SALT, 4096)
    assert "pencil" not in repr(salted) and salted.value.hex() not in repr(salted)

    by_salted = ScramClient("SCRAM-SHA-256", "user", nonce=CLIENT_NONCE, salted=salted)
    again, server = _exchange(by_salted, "pencil", SALT, 4096)
    assert again == RFC_PROOF
    by_salted.verify_server_final(server.finish(again))  # and the server's signature checks


@pytest.mark.parametrize(("salt", "iterations"), [(b"another salt", 4096), (SALT, 8192)])
def test_a_changed_salt_or_iteration_count_is_refused(salt, iterations):
    value = salted_password("pencil", SALT, 4096, "sha256")
    salted = SaltedPassword("SCRAM-SHA-256", SALT, 4096, value)
    client = ScramClient("SCRAM-SHA-256", "user", salted=salted)
    with pytest.raises(SaslAuthenticationFailedError, match=r"changed on the server.*log in again"):
        _exchange(client, "pencil", salt, iterations)


def test_a_client_needs_exactly_one_secret_of_its_mechanism():
    salted = SaltedPassword("SCRAM-SHA-512", SALT, 4096, b"x" * 64)
    with pytest.raises(ValueError, match="either"):
        ScramClient("SCRAM-SHA-256", "u")
    with pytest.raises(ValueError, match="either"):
        ScramClient("SCRAM-SHA-256", "u", "p", salted=salted)
    with pytest.raises(ValueError, match="SCRAM-SHA-512, not SCRAM-SHA-256"):
        ScramClient("SCRAM-SHA-256", "u", salted=salted)
    with pytest.raises(ValueError, match="not both"):
        SecurityConfig(
            security_protocol="SASL_SSL",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username="u",
            sasl_plain_password="p",
            sasl_salted_password=salted,
        )
    config = SecurityConfig(
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="u",
        sasl_salted_password=salted,
    )
    assert "xxxx" not in repr(config) and "sasl_salted_password='***'" in repr(config)


def test_the_secret_drops_the_password_after_a_successful_exchange():
    secret = ScramSecret("SCRAM-SHA-256", "user", "pencil")
    assert secret.holds_password() and secret.salted_password is None
    failed = secret.client()
    _, server = _exchange(failed, "other", SALT, 4096)  # the server holds another password
    # an exchange that has not succeeded teaches nothing: the password stays
    assert secret.holds_password()
    client = secret.client()
    final, server = _exchange(client, "pencil", SALT, 4096)
    client.verify_server_final(server.finish(final))
    secret.succeeded(client)
    assert not secret.holds_password()
    assert secret.salted_password == client.salted_password
    assert "pencil" not in repr(secret)
    next_client = secret.client()
    assert next_client._password is None
    final, server = _exchange(next_client, "pencil", SALT, 4096)
    next_client.verify_server_final(server.finish(final))
