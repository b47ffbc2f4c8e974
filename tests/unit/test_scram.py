"""SCRAM (RFC 5802 / RFC 7677) against the RFC's test vector, Kafka's credential format, and the
``odradek users`` option syntax."""

from __future__ import annotations

import base64

import pytest

from controller.zk_data import ConfigEntityChangeNotificationSequenceZNode, UserConfigZNode
from odradek.cli.common import InputError
from odradek.cli.users import parse_add_config
from odradek.errors import SaslAuthenticationFailedError, UnsupportedSaslMechanismError
from odradek.scram import ScramClient, ScramCredential, ScramServerExchange, new_credential

# RFC 7677 section 3
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"


def test_rfc_7677_exchange():
    credential = new_credential("SCRAM-SHA-256", "pencil", 4096, SALT)
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=CLIENT_NONCE)
    assert client.first_message() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server = ScramServerExchange.start(
        "SCRAM-SHA-256",
        client.first_message(),
        lambda mechanism, user: credential if user == "user" else None,
        server_nonce=SERVER_NONCE,
    )
    assert server.server_first == (
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final = client.final_message(server.server_first.encode())
    assert final == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    server_final = server.finish(final)
    assert server_final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    client.verify_server_final(server_final)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_wrong_password_and_unknown_user_fail_alike(mechanism):
    credential = new_credential(mechanism, "right")
    for user, password in (("alice", "wrong"), ("nobody", "right")):
        client = ScramClient(mechanism, user, password)
        server = ScramServerExchange.start(
            mechanism, client.first_message(), lambda m, u: credential if u == "alice" else None
        )
        with pytest.raises(SaslAuthenticationFailedError, match="invalid credentials"):
            server.finish(client.final_message(server.server_first.encode()))
    # a server that does not hold the credential cannot fool the client
    client = ScramClient(mechanism, "alice", "right")
    server = ScramServerExchange.start(
        mechanism, client.first_message(), lambda m, u: new_credential(mechanism, "other")
    )
    client.final_message(server.server_first.encode())
    with pytest.raises(SaslAuthenticationFailedError):
        client.verify_server_final(b"v=" + base64.b64encode(b"x" * 32))


def test_names_with_commas_and_equals_are_escaped():
    credential = new_credential("SCRAM-SHA-256", "pw")
    client = ScramClient("SCRAM-SHA-256", "a,b=c", "pw")
    assert b"n=a=2Cb=3Dc" in client.first_message()
    seen: list[str] = []

    def lookup(mechanism: str, user: str) -> ScramCredential:
        seen.append(user)
        return credential

    server = ScramServerExchange.start("SCRAM-SHA-256", client.first_message(), lookup)
    assert seen == ["a,b=c"]
    server.finish(client.final_message(server.server_first.encode()))


def test_kafka_credential_format_and_limits():
    credential = new_credential("SCRAM-SHA-512", "pw", 8192, b"salt")
    text = credential.encode()
    assert text.startswith("salt=c2FsdA==,stored_key=") and text.endswith(",iterations=8192")
    assert ScramCredential.decode(text) == credential
    with pytest.raises(ValueError):
        ScramCredential.decode("salt=c2FsdA==,iterations=1")
    with pytest.raises(ValueError, match="iterations"):
        new_credential("SCRAM-SHA-256", "pw", 1000)
    with pytest.raises(UnsupportedSaslMechanismError):
        new_credential("SCRAM-SHA-1", "pw")


def test_user_znodes():
    assert UserConfigZNode.path("alice") == "/config/users/alice"
    assert UserConfigZNode.path("CN=a b,O=x") == "/config/users/CN%3Da%20b%2CO%3Dx"
    assert UserConfigZNode.desanitize("CN%3Da%20b%2CO%3Dx") == "CN=a b,O=x"
    notice = ConfigEntityChangeNotificationSequenceZNode.encode_user("alice")
    assert notice == b'{"version":2,"entity_path":"users/alice"}'
    assert ConfigEntityChangeNotificationSequenceZNode.decode(notice) is None  # not a topic


def test_add_config_syntax():
    [a, b] = parse_add_config(
        "alice", "SCRAM-SHA-256=[iterations=8192,password=p=w],SCRAM-SHA-512=[password=x]"
    )
    assert (a.mechanism, a.password, a.iterations) == ("SCRAM-SHA-256", "p=w", 8192)
    assert (b.mechanism, b.password, b.iterations) == ("SCRAM-SHA-512", "x", 4096)
    for bad in ("SCRAM-SHA-256=secret", "SCRAM-SHA-256=[iterations=5000]", "X=[salt=1,password=p]"):
        with pytest.raises(InputError):
            parse_add_config("alice", bad)
