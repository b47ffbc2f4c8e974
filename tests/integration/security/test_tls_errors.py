"""A client that cannot agree on TLS with a node's listener is told why, as Kafka's
SslAuthenticationException tells it (issue 27): TLS required (a plaintext client), a client
certificate required, the client's certificate not trusted (another CA), the node's
certificate not trusted. They all read ``NETWORK_EXCEPTION (13): ... Socket closed`` before.
And gRPC's C core does not print its ``Handshake failed`` lines into the application's stderr.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from odradek import Admin
from odradek.client.errors import SslAuthenticationError
from tests.certs import CertificateAuthority
from tests.integration.security.test_acls import Cluster, cluster  # noqa: F401


def _refused(bootstrap: str, **security: object) -> str:
    with (
        Admin(bootstrap, request_timeout_ms=5_000, **security) as admin,  # type: ignore[arg-type]
        pytest.raises(SslAuthenticationError) as refused,
    ):
        admin.list_topics()
    return str(refused.value)


def test_each_tls_failure_names_its_cause(cluster: Cluster, tmp_path: Path) -> None:  # noqa: F811
    assert "the listener requires TLS" in _refused(cluster.bootstrap)
    assert "requires a client certificate" in _refused(
        cluster.bootstrap, security_protocol="SSL", ssl_cafile=cluster.cafile
    )
    other = CertificateAuthority("another-ca")
    _, _, mallory = other.issue("CN=mallory,OU=Users").write(tmp_path, "mallory")
    assert "does not trust the client's certificate" in _refused(
        cluster.bootstrap,
        security_protocol="SSL",
        ssl_cafile=cluster.cafile,
        ssl_certfile=str(mallory),
    )
    assert "the node's certificate is not trusted" in _refused(
        cluster.bootstrap,
        security_protocol="SSL",
        ssl_cafile=str(other.write(tmp_path / "other-ca.crt")),
        ssl_certfile=cluster.pems["alice"],
    )
    # and a client that gets it right is let in
    with Admin(cluster.bootstrap, **cluster.security("admin")) as admin:
        assert "orders" in admin.list_topics()


def test_the_transport_s_logging_stays_out_of_the_application_s_stderr(
    cluster: Cluster,  # noqa: F811
) -> None:
    program = (
        "import logging, sys\n"
        "logging.basicConfig(level=logging.WARNING, format='%(name)s %(message)s')\n"
        "from odradek import Admin\n"
        "from odradek.client.errors import SslAuthenticationError\n"
        f"admin = Admin({cluster.bootstrap!r}, request_timeout_ms=5000)\n"
        "try:\n"
        "    admin.list_topics()\n"
        "except SslAuthenticationError as e:\n"
        "    print('refused:', e)\n"
        "admin.close()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True
    )
    assert "refused: SSL_AUTHENTICATION_FAILED" in done.stdout
    assert "Handshake failed" not in done.stderr
    assert "ssl_transport_security" not in done.stderr
    # what the SDK says, it says through Python's logging
    assert "odradek.client SSL_AUTHENTICATION_FAILED" in done.stderr
    assert "requires TLS" in done.stderr
